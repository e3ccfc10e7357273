//! State outside the cluster that a controller keeps (a fake of the external system it
//! manages: a DNS zone, a registry cache, a cloud API), one value per type per run: what the
//! start closure takes with [`outside`] and the checks read with
//! [`Cluster::outside`](super::Cluster::outside). Runs go on at once (one per seed), and a
//! crashed controller's outside state survives it, as an external system would: so it
//! belongs to the run, not to the test.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

/// One run's outside values, by type.
#[derive(Default)]
pub(crate) struct Outside(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Outside {
    /// This run's `T`, made with `T::default()` on first use.
    pub(crate) fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let value = self
            .0
            .lock()
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        value
            .downcast::<T>()
            .unwrap_or_else(|_| unreachable!("values are filed under their own type"))
    }
}

tokio::task_local! {
    /// The outside state of the run whose controller is being started or is running.
    static CURRENT: Arc<Outside>;
}

/// Runs `start` (the test's start closure) with `outside` as the run's outside state.
pub(crate) fn starting<R>(outside: &Arc<Outside>, start: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(outside.clone(), start)
}

/// Runs `future` (a controller's) with `outside` as the run's outside state.
pub(crate) async fn running<F: Future>(outside: Arc<Outside>, future: F) -> F::Output {
    CURRENT.scope(outside, future).await
}

/// The run's value of `T`, state kept outside the cluster (made with `T::default()` the
/// first time the run asks for it): take it in the closure given to
/// [`Chaos::new`](super::Chaos::new) (or in the future it returns) and hand it to the
/// controller; read it in a check with [`Cluster::outside`](super::Cluster::outside). Every
/// incarnation of the controller in a run, and every replica, gets the same value (a crash
/// does not reset an external system); each run (each seed, each replay) gets its own, so
/// runs going on at once never share it.
///
/// # Panics
/// Outside a controller started by a [`Chaos`](super::Chaos) run: in a task the controller
/// spawned (take the value before), or in a test's own code.
///
/// ```no_run
/// use std::collections::BTreeSet;
/// use std::sync::{Arc, Mutex};
/// use informer_testing::chaos::{self, Chaos, Cluster};
///
/// /// The external system's fake: the names it holds.
/// type Zone = Mutex<BTreeSet<String>>;
///
/// async fn my_controller(_client: kube::Client, _stop: tokio_util::sync::CancellationToken, zone: Arc<Zone>) {
///     zone.lock().unwrap().insert("www".into());
/// }
///
/// # async fn demo() {
/// Chaos::new(|client, stop| my_controller(client, stop, chaos::outside::<Zone>()))
///     .converges(|cluster: &Cluster| {
///         let zone = cluster.outside::<Zone>();
///         match zone.lock().unwrap().contains("www") {
///             true => Ok(()),
///             false => Err("www is not in the zone".into()),
///         }
///     })
///     .run()
///     .await;
/// # }
/// ```
pub fn outside<T: Default + Send + Sync + 'static>() -> Arc<T> {
    CURRENT
        .try_with(|outside| outside.get::<T>())
        .unwrap_or_else(|_| {
            panic!(
                "chaos::outside::<{}>() is for the closure given to Chaos::new (or the future it returns), while a run starts its controller; in a check, read Cluster::outside",
                std::any::type_name::<T>()
            )
        })
}
