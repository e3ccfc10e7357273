//! [`HandlerRegistration`]: what [`add_handler`](crate::informer::SharedIndexInformer::add_handler)
//! returns.

use std::fmt;
use std::sync::Arc;

use informer_core::Fifo;
use kube::Resource;
use tokio::sync::watch;

use super::Phase;
use super::handler_options::HandlerStats;
use super::listener::Listener;
use super::processor::Processor;
use super::shared::wait_for_fifo_sync;

/// A handler registered with a [`SharedIndexInformer`](crate::informer::SharedIndexInformer):
/// its sync state, its counters, and the way to remove it.
///
/// Dropping the registration does **not** remove the handler (as in client-go, where the
/// registration is only a handle): call [`remove`](HandlerRegistration::remove).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use informer_core::Notification;
/// use informer_runtime::informer::SharedIndexInformer;
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use informer_runtime::CancellationToken;
///
/// let source = MemoryListerWatcher::<ConfigMap>::new();
/// let informer = SharedIndexInformer::new(Arc::new(source));
/// let registration = informer.add_handler(|_: &Notification<ConfigMap>| {}, None);
/// assert!(!registration.has_synced()); // the informer has not listed yet
///
/// let cancel = CancellationToken::new();
/// let run = tokio::spawn({
///     let informer = informer.clone();
///     let cancel = cancel.clone();
///     async move { informer.run(cancel).await }
/// });
/// assert!(registration.wait_synced().await);
/// assert_eq!(registration.stats().pending, 0);
/// registration.remove().await; // the handler will not be called again
/// cancel.cancel();
/// run.await.unwrap().unwrap();
/// # }
/// ```
pub struct HandlerRegistration<K> {
    pub(crate) listener: Arc<Listener<K>>,
    pub(crate) processor: Arc<Processor<K>>,
    pub(crate) fifo: Arc<dyn Fifo<K>>,
    pub(crate) phase: watch::Receiver<Phase>,
}

impl<K> fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> HandlerRegistration<K> {
    /// Whether this handler has handled every initial add: the informer has synced (its
    /// first list is in the cache) and the handler has returned from every `Add` with
    /// `is_initial_list == true` it was given (for a handler added after start: every
    /// object of the cache replayed to it). Once true it stays true, through the handler's
    /// removal and the informer's stop, as client-go's `ResourceEventHandlerRegistration.
    /// HasSynced` does (a stopped informer's cache keeps what it had;
    /// [`SharedIndexInformer::is_running`](super::SharedIndexInformer::is_running) tells it
    /// stopped). A handler removed or stopped before it synced never does.
    ///
    /// A handler that panicked on an initial add has still handled it.
    pub fn has_synced(&self) -> bool {
        self.listener.synced(self.fifo.has_synced())
    }

    /// Waits until [`has_synced`](Self::has_synced) is true (returns `true`), or until the
    /// informer stops or the handler is removed first (returns `false`).
    ///
    /// Never returns if the informer is never run: combine with a timeout. Boxed, as
    /// [`SharedIndexInformer::wait_for_sync`](super::SharedIndexInformer::wait_for_sync) is,
    /// so that waits of several types go in one array.
    pub fn wait_synced(&self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(async move {
            let removed = || self.listener.is_closed();
            if !wait_for_fifo_sync(self.phase.clone(), &*self.fifo, removed).await {
                return false;
            }
            self.listener.wait_initial().await;
            self.has_synced()
        })
    }

    /// The handler's counters: pending notifications, deliveries, panics, merges.
    pub fn stats(&self) -> HandlerStats {
        self.listener.stats()
    }

    /// The handler's name, as used in logs.
    pub fn name(&self) -> &str {
        self.listener.name()
    }

    /// The handler's resync period, as the informer uses it: the one it was added with,
    /// raised to [`MIN_RESYNC_PERIOD`](super::MIN_RESYNC_PERIOD) if shorter; `None` for a
    /// handler without resync, or once removed. (client-go keeps a listener's
    /// `resyncPeriod`; each handler's resync runs on its own schedule here, so there is no
    /// informer-wide `resyncCheckPeriod`.)
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::HandlerFns;
    /// use informer_runtime::SharedIndexInformer;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let informer = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// let fast = informer.add_handler(HandlerFns::new(), Some(Duration::from_millis(10)));
    /// let none = informer.add_handler(HandlerFns::new(), None);
    /// assert_eq!(fast.resync_period(), Some(Duration::from_secs(1)), "raised to the minimum");
    /// assert_eq!(none.resync_period(), None);
    /// # }
    /// ```
    pub fn resync_period(&self) -> Option<std::time::Duration> {
        self.processor.resync_of(&self.listener)
    }

    /// Removes the handler and waits until its task has finished: when this returns, the
    /// handler is not running and will never be called again. A call in progress completes
    /// first; buffered notifications are discarded. Other handlers are not affected.
    pub async fn remove(self) {
        let synced = self.fifo.has_synced();
        self.processor.remove(&self.listener, synced).await;
    }

    /// A function that removes the handler without waiting for its task (which ends after
    /// the call in progress): for owners dropped without being stopped (a `Drop` cannot
    /// await, nor always name this type's bounds).
    pub(crate) fn detacher(&self) -> Box<dyn FnOnce() + Send + Sync> {
        let (processor, listener) = (self.processor.clone(), self.listener.clone());
        let fifo = self.fifo.clone();
        Box::new(move || drop(processor.detach(&listener, fifo.has_synced())))
    }
}
