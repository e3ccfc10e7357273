//! The controllers that run inside the server, as kube-controller-manager's run beside a
//! cluster's API server: the [garbage collector](super::gc), the
//! [namespace controller](super::namespaces), the
//! [service account controller](super::service_accounts) and the
//! [root CA publisher](super::root_ca). Each is driven by the store's change
//! subscription: every committed change is shown to it ([`Controller::observe`]), and it
//! works ([`Controller::step`]) until it has nothing left to do, then waits for the next
//! change. A controller reads and writes the store directly, under the writer lock, one
//! small step at a time, so requests go on between its steps.
//!
//! When the subscription ends (the controller fell further behind than a watch may, or the
//! store was reset), the controller subscribes again and reads the whole state
//! ([`Controller::resync`]), as an informer relists.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use super::namespaces::is_terminating;
use super::resource::{Registry, ResourceKey};
use super::server::Shared;
use super::storage::{Change, EventType, Snapshot, Store};

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

/// The namespaces a per-namespace controller (the service account controller, the root CA
/// publisher) is to look at, in order, each once however often it was queued.
pub(crate) struct NamespaceQueue {
    namespaces: Option<ResourceKey>,
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl NamespaceQueue {
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            namespaces: registry.by_path("", "v1", "namespaces").map(|t| t.key()),
            queue: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    /// Queues `namespace` unless it is queued already.
    pub(crate) fn push(&mut self, namespace: &str) {
        if self.queued.insert(namespace.to_string()) {
            self.queue.push_back(namespace.to_string());
        }
    }

    /// The next namespace to look at.
    pub(crate) fn pop(&mut self) -> Option<String> {
        let namespace = self.queue.pop_front()?;
        self.queued.remove(&namespace);
        Some(namespace)
    }

    /// Queues every namespace of `state` (a resync).
    pub(crate) fn push_all(&mut self, state: &Snapshot) {
        let namespaces: Vec<String> = state
            .every_object()
            .filter(|(at, _)| Some(&at.resource) == self.namespaces.as_ref())
            .map(|(at, _)| at.key.to_string())
            .collect();
        for namespace in namespaces {
            self.push(&namespace);
        }
    }

    /// Whether `change` is a namespace's; one made, or changed while it is not terminating,
    /// is queued.
    pub(crate) fn observe_namespace(&mut self, change: &Change) -> bool {
        if Some(&change.resource) != self.namespaces.as_ref() {
            return false;
        }
        if change.event != EventType::Deleted && !is_terminating(&change.object) {
            self.push(&change.key);
        }
        true
    }
}

#[cfg(test)]
pub(crate) mod test_support;
