//! State outside the cluster that a controller keeps (a fake of the external system it
//! manages: a DNS zone, a registry cache, a cloud API), one value per type per run: what the
//! start closure takes with [`outside`] and the checks read with
//! [`Cluster::outside`](super::Cluster::outside). Runs go on at once (one per seed), and a
//! crashed controller's outside state survives it, as an external system would: so it
//! belongs to the run, not to the test. [`run_context`] lets such a fake take part in the
//! run: lines in its trace, its seed, whether faults are still on.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::report::Trace;

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

/// What a run shares with the controllers it starts.
pub(crate) struct RunShared {
    pub(crate) outside: Arc<Outside>,
    trace: Arc<Trace>,
    seed: Option<u64>,
    /// Set once the schedule is over: every fault ended, the run waits for convergence.
    schedule_over: AtomicBool,
}

impl RunShared {
    pub(crate) fn new(trace: Arc<Trace>, seed: Option<u64>) -> Self {
        Self {
            outside: Arc::default(),
            trace,
            seed,
            schedule_over: AtomicBool::new(false),
        }
    }

    /// The schedule is over: faults of outside fakes should end too.
    pub(crate) fn end_schedule(&self) {
        self.schedule_over.store(true, Ordering::Release);
    }
}

tokio::task_local! {
    /// The run whose controller is being started or is running.
    static CURRENT: Arc<RunShared>;
}

/// Runs `start` (the test's start closure) inside the run `shared`.
pub(crate) fn starting<R>(shared: &Arc<RunShared>, start: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(shared.clone(), start)
}

/// Runs `future` (a controller's) inside the run `shared`.
pub(crate) async fn running<F: Future>(shared: Arc<RunShared>, future: F) -> F::Output {
    CURRENT.scope(shared, future).await
}

/// The run a controller was started in, for a fake of an outside system to take part in it
/// ([`run_context`]): a line of its own in the run's trace (so that a failing run's report
/// shows the calls the controller made outside the cluster beside its API requests), the
/// seed to draw its own failures from, and whether the schedule's faults are still on.
/// Cheap to clone.
#[derive(Clone)]
pub struct RunContext(Arc<RunShared>);

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("seed", &self.0.seed)
            .field("in_schedule", &self.in_schedule())
            .finish()
    }
}

impl RunContext {
    /// Writes `what` into the run's trace as said by `who` (`provider`, say): a report of a
    /// failing run prints it in order with the controller's requests and the faults.
    pub fn note(&self, who: &str, what: impl fmt::Display) {
        self.0.trace.record(who, what.to_string());
    }

    /// The seed whose schedule the run follows (`None` for a written scenario): draw a
    /// fake's own failures from it, so that a seed replays them too.
    pub fn seed(&self) -> Option<u64> {
        self.0.seed
    }

    /// Whether the run is still in its schedule, where faults happen; `false` once every
    /// fault ended and the run waits for the world to converge. A fake that fails on its
    /// own (unavailable, rate limited) should stop failing then, as the harness's faults
    /// stop, or the run can never converge.
    pub fn in_schedule(&self) -> bool {
        !self.0.schedule_over.load(Ordering::Acquire)
    }
}

/// The run a controller was started in ([`RunContext`]): take it in the closure given to
/// [`Chaos::new`](super::Chaos::new) (or the future it returns) and hand it to your fake of
/// an outside system.
///
/// # Panics
/// Outside a controller started by a [`Chaos`](super::Chaos) run.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use informer_testing::chaos::{self, Chaos, RunContext};
///
/// /// A fake provider: fails one call in five while the schedule's faults are on.
/// #[derive(Default)]
/// struct Provider { calls: AtomicU64 }
///
/// impl Provider {
///     fn upsert(&self, run: &RunContext, name: &str) -> Result<(), String> {
///         let call = self.calls.fetch_add(1, Ordering::Relaxed);
///         let unlucky = (call + run.seed().unwrap_or(0)) % 5 == 0;
///         if run.in_schedule() && unlucky {
///             run.note("provider", format!("upsert {name}: unavailable (injected)"));
///             return Err("unavailable".into());
///         }
///         run.note("provider", format!("upsert {name}"));
///         Ok(())
///     }
/// }
///
/// async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken, p: Arc<Provider>, run: RunContext) {
///     let _ = p.upsert(&run, "www");
/// }
///
/// # async fn demo() {
/// Chaos::new(|client, stop| {
///     my_controller(client, stop, chaos::outside::<Provider>(), chaos::run_context())
/// })
/// .run()
/// .await;
/// # }
/// ```
pub fn run_context() -> RunContext {
    CURRENT
        .try_with(|shared| RunContext(shared.clone()))
        .unwrap_or_else(|_| {
            panic!(
                "chaos::run_context() is for the closure given to Chaos::new (or the future it returns), while a run starts its controller"
            )
        })
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
        .try_with(|shared| shared.outside.get::<T>())
        .unwrap_or_else(|_| {
            panic!(
                "chaos::outside::<{}>() is for the closure given to Chaos::new (or the future it returns), while a run starts its controller; in a check, read Cluster::outside",
                std::any::type_name::<T>()
            )
        })
}
