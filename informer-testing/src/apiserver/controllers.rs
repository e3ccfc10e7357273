//! The controllers that run inside the server, as kube-controller-manager's run beside a
//! cluster's API server: the [garbage collector](super::gc), the
//! [namespace controller](super::namespaces) and the
//! [service account controller](super::service_accounts). Each is driven by the store's change
//! subscription: every committed change is shown to it ([`Controller::observe`]), and it
//! works ([`Controller::step`]) until it has nothing left to do, then waits for the next
//! change. A controller reads and writes the store directly, under the writer lock, one
//! small step at a time, so requests go on between its steps.
//!
//! When the subscription ends (the controller fell further behind than a watch may, or the
//! store was reset), the controller subscribes again and reads the whole state
//! ([`Controller::resync`]), as an informer relists.

use std::sync::Arc;

use super::resource::Registry;
use super::server::Shared;
use super::storage::{Change, Snapshot, Store};

/// A controller inside the server.
pub(crate) trait Controller: Send + 'static {
    /// Its name, for logs.
    const NAME: &'static str;

    /// Queues whatever work the whole current state holds.
    fn resync(&mut self, state: &Snapshot);

    /// Queues the work one committed change brings (`store` is the current state, which may
    /// be newer than the change).
    fn observe(&mut self, store: &Store, change: &Change);

    /// Does one small unit of queued work; `false` when none is queued.
    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool;
}

/// How many changes a controller observes, or steps it takes, before it lets the runtime
/// serve others.
const BATCH: usize = 64;

/// Runs a controller until the task is aborted.
pub(crate) async fn run<C: Controller>(shared: Arc<Shared>, controller: C) {
    run_lagging(shared, controller, std::time::Duration::ZERO).await;
}

/// Runs a controller that acts `lag` after the changes it is shown (as a real controller's
/// informers and queue make it act a moment after a change), until the task is aborted.
pub(crate) async fn run_lagging<C: Controller>(
    shared: Arc<Shared>,
    mut controller: C,
    lag: std::time::Duration,
) {
    loop {
        let subscription = match shared.store.subscribe(None) {
            Ok(subscription) => subscription,
            Err(err) => {
                // Subscribing from now cannot fail; should it, try again shortly.
                tracing::warn!(controller = C::NAME, %err, "failed to subscribe to the store");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        controller.resync(&shared.store.snapshot());
        loop {
            // Work until idle, a batch at a time.
            loop {
                let registry = shared.registry.read().clone();
                let mut progressed = 0;
                {
                    let mut store = shared.store.lock();
                    while progressed < BATCH && controller.step(&mut store, &registry) {
                        progressed += 1;
                    }
                }
                if progressed < BATCH {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let Some(change) = subscription.next().await else {
                break;
            };
            if !lag.is_zero() {
                tokio::time::sleep(lag).await;
            }
            let store = shared.store.lock();
            controller.observe(&store, &change);
            for _ in 1..BATCH {
                let Some(change) = subscription.try_next() else {
                    break;
                };
                controller.observe(&store, &change);
            }
        }
        tracing::debug!(
            controller = C::NAME,
            "the store subscription ended; reading the whole state again"
        );
    }
}

#[cfg(test)]
pub(crate) mod test_support;
