//! The informers a controller watches (primary, owned, watched), each with the controller's
//! handler on it: started, waited for, reported in metrics, and released together.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use kube::Resource;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::consistency::{Cache, CacheScope, ResourceId};
use crate::factory::{InformerFactory, InformerHandle, InformerParams};
use crate::informer::{HandlerRegistration, HandlerStats, SharedIndexInformer};
use crate::reflector::{ReflectorError, ReflectorStats};

/// How often a controller waiting for its caches logs which have not synced, and why.
const SYNC_WARN_INTERVAL: Duration = Duration::from_secs(30);

/// How soon an informer that fails to list (a 404 for a CustomResourceDefinition that is not
/// installed, a 403 for missing RBAC) is first reported, rather than after
/// [`SYNC_WARN_INTERVAL`]: the failure is then known, and a user watching the start-up should
/// not wait half a minute to read it.
const SYNC_ERROR_WARN_AFTER: Duration = Duration::from_secs(5);

/// One informer with the controller's handler on it, type-erased.
pub(crate) trait Source: Send + Sync {
    /// The informer, for metrics labels and logs.
    fn informer_label(&self) -> &str;
    /// The controller's handler on it.
    fn handler_name(&self) -> &str;
    /// Whether the informer synced and the handler handled every initial add.
    fn has_synced(&self) -> bool;
    /// Waits until [`has_synced`](Self::has_synced) (`true`), or the informer stopped or the
    /// handler was removed first (`false`).
    fn wait_synced(&self) -> BoxFuture<'static, bool>;
    /// Why the informer has not synced, if it knows.
    fn sync_error(&self) -> Option<Arc<ReflectorError>>;
    /// Whether the informer has stopped (at shutdown, or on a panic of its reflector or
    /// cache): its cache no longer changes.
    fn is_stopped(&self) -> bool;
    fn reflector_stats(&self) -> ReflectorStats;
    /// `None` once the handler is removed.
    fn handler_stats(&self) -> Option<HandlerStats>;
    /// The informer's resource and how far its cache has got (for read-your-own-writes and
    /// the `store_resource_version` metric).
    fn cache(&self) -> Cache;
    /// Starts the informer (idempotent).
    fn start(&self);
    /// Removes the handler and releases the informer; a private informer is stopped.
    fn stop(&self) -> BoxFuture<'static, ()>;
}

/// Who runs the informer.
enum Holder<C: Clone> {
    /// A shared informer of the factory; the handle keeps it alive.
    Shared {
        factory: InformerFactory,
        handle: Option<InformerHandle<C>>,
    },
    /// The controller's own informer (a custom store): run on its own task.
    Private {
        cancel: CancellationToken,
        task: Option<JoinHandle<()>>,
    },
}

pub(crate) struct InformerSource<C: Clone> {
    label: String,
    resource: ResourceId,
    /// The namespace and selectors of the informer.
    params: InformerParams,
    handler: String,
    informer: SharedIndexInformer<C>,
    registration: Mutex<Option<Arc<HandlerRegistration<C>>>>,
    /// Removes the handler if the controller is dropped without being stopped.
    detach_on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
    holder: Mutex<Holder<C>>,
}

impl<C> InformerSource<C>
where
    C: Resource<DynamicType: Default> + Clone + Send + Sync + 'static,
{
    pub(crate) fn shared(
        factory: &InformerFactory,
        handle: InformerHandle<C>,
        handler: String,
        registration: HandlerRegistration<C>,
    ) -> Self {
        // The controller's handler goes with its handle: dropping both is not a mistake.
        let handle = handle.quiet();
        Self {
            label: handle.id().to_string(),
            resource: ResourceId::of::<C>(),
            params: handle.id().params().clone(),
            handler,
            informer: handle.informer().clone(),
            detach_on_drop: Some(registration.detacher()),
            registration: Mutex::new(Some(Arc::new(registration))),
            holder: Mutex::new(Holder::Shared {
                factory: factory.clone(),
                handle: Some(handle),
            }),
        }
    }

    pub(crate) fn private(
        label: String,
        params: InformerParams,
        informer: SharedIndexInformer<C>,
        handler: String,
        registration: HandlerRegistration<C>,
    ) -> Self {
        Self {
            label,
            resource: ResourceId::of::<C>(),
            params,
            handler,
            informer,
            detach_on_drop: Some(registration.detacher()),
            registration: Mutex::new(Some(Arc::new(registration))),
            holder: Mutex::new(Holder::Private {
                cancel: CancellationToken::new(),
                task: None,
            }),
        }
    }

    fn registration(&self) -> Option<Arc<HandlerRegistration<C>>> {
        self.registration.lock().clone()
    }
}

impl<C> Source for InformerSource<C>
where
    C: Resource<DynamicType: Default> + Clone + Send + Sync + 'static,
{
    fn informer_label(&self) -> &str {
        &self.label
    }

    fn handler_name(&self) -> &str {
        &self.handler
    }

    fn has_synced(&self) -> bool {
        self.registration().is_some_and(|r| r.has_synced())
    }

    fn wait_synced(&self) -> BoxFuture<'static, bool> {
        let registration = self.registration();
        async move {
            match registration {
                Some(r) => r.wait_synced().await,
                None => false,
            }
        }
        .boxed()
    }

    fn sync_error(&self) -> Option<Arc<ReflectorError>> {
        self.informer.sync_error()
    }

    fn is_stopped(&self) -> bool {
        self.informer.is_stopped()
    }

    fn reflector_stats(&self) -> ReflectorStats {
        self.informer.reflector_stats()
    }

    fn handler_stats(&self) -> Option<HandlerStats> {
        self.registration().map(|r| r.stats())
    }

    fn cache(&self) -> Cache {
        let store = self.informer.store();
        Cache {
            resource: self.resource.clone(),
            version: self.informer.store_version(),
            holds: Arc::new({
                let store = store.clone();
                move |key, uid| {
                    store
                        .get(key)
                        .is_some_and(|o| o.meta().uid.as_deref() == Some(uid))
                }
            }),
            scope: CacheScope::new(&self.params, Arc::new(move |key| store.get(key).is_some())),
        }
    }

    fn start(&self) {
        match &mut *self.holder.lock() {
            Holder::Shared { factory, .. } => factory.start(),
            Holder::Private { cancel, task } => {
                if task.is_none() && !cancel.is_cancelled() {
                    let informer = self.informer.clone();
                    let cancel = cancel.clone();
                    let label = self.label.clone();
                    *task = Some(tokio::spawn(async move {
                        if let Err(e) = informer.run(cancel).await {
                            tracing::error!(informer = %label, error = %e, "informer stopped");
                        }
                    }));
                }
            }
        }
    }

    fn stop(&self) -> BoxFuture<'static, ()> {
        let registration = self.registration.lock().take();
        let (handle, task) = match &mut *self.holder.lock() {
            Holder::Shared { handle, .. } => (handle.take(), None),
            Holder::Private { cancel, task } => {
                cancel.cancel();
                (None, task.take())
            }
        };
        async move {
            if let Some(registration) = registration.and_then(Arc::into_inner) {
                registration.remove().await;
            }
            drop(handle);
            if let Some(task) = task {
                let _ = task.await;
            }
        }
        .boxed()
    }
}

impl<C: Clone> Drop for InformerSource<C> {
    fn drop(&mut self) {
        // A controller dropped without being stopped: its handler goes with it (a shared
        // informer outlives it), and a private informer must not outlive it.
        if let Some(detach) = self.detach_on_drop.take() {
            detach();
        }
        if let Holder::Private { cancel, .. } = &*self.holder.lock() {
            cancel.cancel();
        }
    }
}

/// Every informer of one controller.
#[derive(Default)]
pub(crate) struct Sources {
    list: Vec<Arc<dyn Source>>,
}

impl Sources {
    pub(crate) fn new(list: Vec<Arc<dyn Source>>) -> Self {
        Self { list }
    }

    pub(crate) fn list(&self) -> &[Arc<dyn Source>] {
        &self.list
    }

    pub(crate) fn start(&self) {
        for source in &self.list {
            source.start();
        }
    }

    pub(crate) fn has_synced(&self) -> bool {
        self.list.iter().all(|s| s.has_synced())
    }

    /// Labels of the informers not synced yet, with the reason when known.
    /// The informers that have not synced, or have stopped (a readiness probe fails for
    /// either: a stopped informer's cache no longer changes).
    pub(crate) fn unsynced(&self) -> Vec<String> {
        self.list
            .iter()
            .filter(|s| !s.has_synced() || s.is_stopped())
            .map(|s| match s.sync_error() {
                _ if s.is_stopped() => format!("{}: stopped", s.informer_label()),
                Some(e) => format!("{}: {e}", s.informer_label()),
                None => s.informer_label().to_owned(),
            })
            .collect()
    }

    /// Waits until every source has synced (`true`), until one stops without syncing
    /// (`false`) or until `cancel` (`false`). Logs the unsynced informers every 30 s, the
    /// first time after 5 s already if one of them has failed to list.
    pub(crate) async fn wait_synced(&self, controller: &str, cancel: &CancellationToken) -> bool {
        let all = join_all(self.list.iter().map(|s| s.wait_synced()));
        tokio::pin!(all);
        let mut warn = tokio::time::interval(SYNC_WARN_INTERVAL);
        warn.tick().await;
        let early = tokio::time::sleep(SYNC_ERROR_WARN_AFTER);
        tokio::pin!(early);
        let mut early_done = false;
        loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return false,
                synced = &mut all => {
                    let synced = synced.into_iter().all(|s| s);
                    if !synced {
                        let unsynced = self.unsynced();
                        tracing::error!(
                            controller,
                            ?unsynced,
                            "an informer stopped before its cache synced; the controller will not run",
                        );
                        crate::fallback::report(format_args!(
                            "controller {controller}: an informer stopped before its cache synced, so the controller does not run: {}",
                            unsynced.join("; ")
                        ));
                    }
                    return synced;
                }
                _ = &mut early, if !early_done => {
                    early_done = true;
                    let failing = self.list.iter().any(|s| !s.has_synced() && s.sync_error().is_some());
                    if failing {
                        self.warn_unsynced(controller);
                    }
                }
                _ = warn.tick() => self.warn_unsynced(controller),
            }
        }
    }

    /// Logs (and, without a tracing subscriber, prints) the informers not synced yet.
    fn warn_unsynced(&self, controller: &str) {
        let unsynced = self.unsynced();
        tracing::warn!(controller, ?unsynced, "still waiting for caches to sync");
        crate::fallback::report(format_args!(
            "controller {controller}: still waiting for caches to sync: {}",
            unsynced.join("; ")
        ));
    }

    pub(crate) async fn stop(&self) {
        join_all(self.list.iter().map(|s| s.stop())).await;
    }
}
