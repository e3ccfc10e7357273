//! [`SharedIndexInformer`]: one reflector, one cache, many handlers.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use futures::FutureExt as _;
use informer_core::apply::{apply_keyed_deltas, apply_ordered_deltas};
use informer_core::fifo::{Delta, DeltaFifo, Fifo, RealFifo};
use informer_core::store::ThreadSafeStore;
use informer_core::{Handler, IndexError, Indexer, Indexers, ListerWatcher, ObjectKey, Store};
use kube::Resource;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::handler_options::{HandlerOptions, normalize_resync};
use super::processor::Processor;
use super::registration::HandlerRegistration;
use super::store_version::StoreVersion;
use super::transform::{Transform, chain, strip_managed_fields};
use super::{InformerError, Phase, Reached};
use crate::lister::Lister;
use crate::panic;
use crate::reflector::{
    Reflector, ReflectorConfig, ReflectorError, ReflectorStats, WatchErrorHandler,
};

/// Which FIFO sits between the reflector and the cache.
///
/// ```
/// use informer_runtime::informer::FifoKind;
/// assert_eq!(FifoKind::default(), FifoKind::Real);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FifoKind {
    /// [`RealFifo`]: every event in order, relists applied atomically (the default, as in
    /// client-go since 1.36).
    #[default]
    Real,
    /// [`DeltaFifo`]: events accumulate per key; a relist queues per-object replacements.
    Delta,
}

/// Builds a [`SharedIndexInformer`]: store backend, FIFO, transform, reflector settings.
///
/// ```
/// use std::sync::Arc;
/// use informer_runtime::informer::{FifoKind, SharedIndexInformer};
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let informer = SharedIndexInformer::builder(Arc::new(MemoryListerWatcher::<Pod>::new()))
///     .fifo(FifoKind::Delta)
///     .drop_managed_fields()
///     .build();
/// assert!(!informer.has_synced());
/// ```
#[must_use = "call build() to get the informer"]
pub struct InformerBuilder<K: Clone> {
    lw: Arc<dyn ListerWatcher<K>>,
    store: Option<Arc<dyn Indexer<K>>>,
    fifo: FifoKind,
    transform: Option<Transform<K>>,
    default_resync: Option<Duration>,
    reflector: ReflectorConfig,
    watch_error_handler: Option<WatchErrorHandler>,
}

impl<K> InformerBuilder<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// Uses `store` as the cache instead of a new [`ThreadSafeStore`]. The store must be
    /// empty and used by no other informer.
    pub fn store(mut self, store: Arc<dyn Indexer<K>>) -> Self {
        self.store = Some(store);
        self
    }

    /// Chooses the FIFO ([`FifoKind::Real`] by default).
    pub fn fifo(mut self, fifo: FifoKind) -> Self {
        self.fifo = fifo;
        self
    }

    /// Adds a transform, run on every object before it enters the cache (after any
    /// transform added before).
    pub fn transform(mut self, f: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(chain(self.transform.take(), Arc::new(f)));
        self
    }

    /// Drops `metadata.managedFields` from every object before it enters the cache
    /// ([`strip_managed_fields`]). Objects that were decoded whole first (a list is decoded
    /// before any of its objects is transformed) keep the memory of their managed fields as
    /// holes between the kept pieces; a [`KubeListerWatcher`] told to
    /// [`drop_managed_fields`](crate::lister_watcher::KubeListerWatcher::drop_managed_fields)
    /// never decodes them (the [`InformerFactory`](crate::factory::InformerFactory) does
    /// both).
    ///
    /// [`KubeListerWatcher`]: crate::lister_watcher::KubeListerWatcher
    pub fn drop_managed_fields(self) -> Self {
        self.transform(strip_managed_fields::<K>)
    }

    /// Caches each object shrunk to fit: a clone of the decoded object, whose strings,
    /// vectors and JSON values hold no spare capacity, made after the other transforms (so
    /// after dropping managed fields, nothing of them stays behind). Costs one deep copy per
    /// object and event (about as much as decoding it).
    ///
    /// Only for sources of your own that decode with `serde_json`, whose vectors grow by
    /// doubling and keep the spare capacity (about 6 KB of a typical pod, 15%): objects from a
    /// [`KubeListerWatcher`](crate::lister_watcher::KubeListerWatcher) are decoded without
    /// spare capacity already.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_runtime::informer::SharedIndexInformer;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let source = Arc::new(MemoryListerWatcher::<Pod>::new());
    /// let informer = SharedIndexInformer::builder(source)
    ///     .drop_managed_fields()
    ///     .shrink_objects()
    ///     .build();
    /// # let _ = informer;
    /// ```
    pub fn shrink_objects(self) -> Self
    where
        K: Clone,
    {
        self.transform(|obj: K| obj.clone())
    }

    /// The resync period [`SharedIndexInformer::default_resync`] reports (`None` by default).
    /// Handlers choose their own period when added; this is the period the
    /// [`InformerFactory`](crate::factory::InformerFactory) suggests for them.
    pub fn default_resync(mut self, period: Option<Duration>) -> Self {
        self.default_resync = normalize_resync(period);
        self
    }

    /// The reflector's settings (selectors, page size, backoff, streaming list).
    /// Its `resync_period` is ignored: the informer schedules each handler's resync itself.
    pub fn reflector_config(mut self, config: ReflectorConfig) -> Self {
        self.reflector = config;
        self
    }

    /// Calls `f` with every list and watch error the informer's reflector meets (client-go's
    /// `SetWatchErrorHandler`): to log them your way or count them. The reflector handles
    /// each error itself (backs off, rewatches or relists) whatever `f` does; a panic in `f`
    /// is caught and logged. The last error is also kept for
    /// [`SharedIndexInformer::sync_error`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_runtime::informer::SharedIndexInformer;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let informer = SharedIndexInformer::builder(Arc::new(MemoryListerWatcher::<Pod>::new()))
    ///     .watch_error_handler(|err| eprintln!("pods: {err}"))
    ///     .build();
    /// # let _ = informer;
    /// ```
    pub fn watch_error_handler(
        mut self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }

    /// Builds the informer. It does nothing until [`run`](SharedIndexInformer::run).
    pub fn build(self) -> SharedIndexInformer<K> {
        let store: Arc<dyn Indexer<K>> = self
            .store
            .unwrap_or_else(|| Arc::new(ThreadSafeStore::<K>::new()));
        let known: Arc<dyn Store<K>> = store.clone();
        // Both FIFOs key objects with `resource_key`: the informer loop relies on it.
        let fifo: Arc<dyn Fifo<K>> = match self.fifo {
            FifoKind::Real => Arc::new(RealFifo::new(Some(known))),
            FifoKind::Delta => Arc::new(DeltaFifo::new(Some(known))),
        };
        let mut config = self.reflector;
        config.resync_period = None;
        let mut reflector = Reflector::new(self.lw, fifo.clone(), config);
        if let Some(t) = self.transform {
            reflector = reflector.with_transform(t);
        }
        if let Some(f) = self.watch_error_handler {
            reflector = reflector.with_watch_error_handler(f);
        }
        let (phase, _) = watch::channel(Phase::Listing);
        let store_version = Arc::new(match self.fifo {
            FifoKind::Real => StoreVersion::tracked(),
            FifoKind::Delta => StoreVersion::untracked(),
        });
        let processor = Arc::new(Processor::new(store.clone()));
        // The FIFO, the processor and `Inner` hold the cache (and whoever passed it in).
        let own_store_refs = Arc::strong_count(&store);
        SharedIndexInformer {
            inner: Arc::new(Inner {
                processor,
                store,
                own_store_refs,
                store_version,
                fifo,
                reflector: Arc::new(reflector),
                default_resync: self.default_resync,
                state: AtomicU8::new(NOT_STARTED),
                phase,
            }),
        }
    }
}

const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const STOPPED: u8 = 2;

struct Inner<K: Clone> {
    store: Arc<dyn Indexer<K>>,
    /// How many references to `store` the informer held when built: more now means a
    /// lister (or a `store()`) is out.
    own_store_refs: usize,
    /// The resource version the cache has reached (tracked with a `RealFifo` only).
    store_version: Arc<StoreVersion>,
    fifo: Arc<dyn Fifo<K>>,
    reflector: Arc<Reflector<K>>,
    processor: Arc<Processor<K>>,
    default_resync: Option<Duration>,
    state: AtomicU8,
    phase: watch::Sender<Phase>,
}

/// A shared, indexed, always-current cache of one kind of object, feeding any number of
/// handlers (client-go's `sharedIndexInformer`).
///
/// One reflector lists and watches through a [`ListerWatcher`]; what it sees goes through a
/// FIFO into the cache (an [`Indexer`]); every change of the cache becomes a
/// [`Notification`](informer_core::Notification) for each handler.
///
/// # Guarantees
/// - **The cache changes first.** A handler is notified of a change after the cache holds
///   it, and readers never see half of a batch.
/// - **Per handler, in order.** Each handler receives the notifications in the order the
///   cache changed; `Update { old, new }` always carries the previously cached object as
///   `old`.
/// - **Isolation.** Each handler has its own buffer and task: a slow handler holds up
///   neither the cache nor the other handlers (unless it chose [`Overflow::Block`]).
///   A handler that panics is logged with the object's key, counted, and keeps receiving.
/// - **Late handlers.** A handler added while running first receives every cached object as
///   `Add { is_initial_list: true }`, then every later change, with nothing missed and
///   nothing twice (the cache is read under the distribution lock).
/// - **Resync.** Each handler may ask for a resync period (at least one second): every cached
///   object is then re-delivered to it as `Update { old, new }` with `old` and `new` the
///   same object, and only to the handlers whose period is due. A resync never contacts the
///   server. Unchanged objects of a relist (same resource version, after a watch gap) are
///   resync updates too, delivered as in client-go: to every handler until the first resync
///   check (so always, when no handler has a resync period: a relist then re-delivers
///   everything, `Update { old, new }` with equal versions), then only to the handlers whose
///   resync was due at the last check.
/// - **Sync.** [`has_synced`](Self::has_synced) turns true once the first complete list is
///   in the cache; each registration has its own
///   [`has_synced`](HandlerRegistration::has_synced).
///
/// # Handlers
/// Each handler is called on its own Tokio task, spawned on the runtime that runs
/// [`run`](Self::run). Handlers should be quick and must not block for long (typically they
/// compute a key and put it on a workqueue): a handler that blocks its thread occupies one
/// runtime worker while it does (other handlers and the cache keep going on the other
/// workers of a multi-threaded runtime).
///
/// # Does not
/// - restart: [`run`](Self::run) works once; build a new informer to start again;
/// - deep-copy objects: the cache, notifications and listers share one `Arc<K>` per version.
///
/// `SharedIndexInformer` is a cheap handle: clones share the same informer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use informer_core::{Notification, ObjectKey};
/// use informer_runtime::informer::SharedIndexInformer;
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use informer_runtime::CancellationToken;
///
/// let source = MemoryListerWatcher::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.namespace = Some("default".into());
/// source.create(cm);
///
/// let informer = SharedIndexInformer::new(Arc::new(source));
/// informer.add_handler(|n: &Notification<ConfigMap>| println!("{n:?}"), None);
/// let cancel = CancellationToken::new();
/// let run = tokio::spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// assert!(informer.wait_for_sync().await);
/// assert!(informer.lister().get(&ObjectKey::new(Some("default"), "settings")).is_some());
/// cancel.cancel();
/// run.await.unwrap().unwrap();
/// # }
/// ```
///
/// [`Overflow::Block`]: crate::informer::Overflow::Block
pub struct SharedIndexInformer<K: Clone> {
    inner: Arc<Inner<K>>,
}

impl<K: Clone> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K: Clone> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("cached", &self.inner.store.len())
            .field("phase", &*self.inner.phase.borrow())
            .finish_non_exhaustive()
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An informer with the defaults: a [`ThreadSafeStore`], a [`RealFifo`], no transform,
    /// [`ReflectorConfig::default`].
    pub fn new(lw: Arc<dyn ListerWatcher<K>>) -> Self {
        Self::builder(lw).build()
    }

    /// A builder to choose the store, FIFO, transform and reflector settings.
    pub fn builder(lw: Arc<dyn ListerWatcher<K>>) -> InformerBuilder<K> {
        InformerBuilder {
            lw,
            store: None,
            fifo: FifoKind::default(),
            transform: None,
            default_resync: None,
            reflector: ReflectorConfig::default(),
            watch_error_handler: None,
        }
    }

    /// Adds a transform, run on every object before it enters the cache (after the ones the
    /// builder was given): client-go's `informer.SetTransform(f)`, for an informer you did
    /// not build yourself, a factory's. Call it before the informer starts (before the
    /// factory's `start`, or `run`), once.
    ///
    /// # Errors
    /// [`InformerError::NotSettable`] once the informer started, or for a second transform.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// # let pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// // `pods` from `factory.informer::<Pod>(..)`: cache Pods without their annotations.
    /// pods.set_transform(|mut pod: Pod| {
    ///     pod.metadata.annotations = None;
    ///     pod
    /// })
    /// .unwrap();
    /// assert!(pods.set_transform(|pod: Pod| pod).is_err(), "once");
    /// ```
    pub fn set_transform(
        &self,
        f: impl Fn(K) -> K + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        self.set_before_start("transform", "set_transform was called before", || {
            self.inner.reflector.add_late_transform(Arc::new(f))
        })
    }

    /// Calls `f` with every list and watch error of the informer's reflector (which retries
    /// regardless), replacing the builder's handler: client-go's
    /// `informer.SetWatchErrorHandler(f)`, for a factory's informer. Call it before the
    /// informer starts, once.
    ///
    /// # Errors
    /// [`InformerError::NotSettable`] once the informer started, or for a second handler.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// # let pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// pods.set_watch_error_handler(|error| eprintln!("pods: {error}")).unwrap();
    /// ```
    pub fn set_watch_error_handler(
        &self,
        f: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        self.set_before_start(
            "watch error handler",
            "set_watch_error_handler was called before",
            || {
                self.inner
                    .reflector
                    .set_late_watch_error_handler(Arc::new(f))
            },
        )
    }

    /// Sets the informer's `what` with `set` (`false`: set before, refused as `again`) while
    /// the informer has not started.
    fn set_before_start(
        &self,
        what: &'static str,
        again: &'static str,
        set: impl FnOnce() -> bool,
    ) -> Result<(), InformerError> {
        if self.inner.state.load(Ordering::Acquire) != NOT_STARTED {
            return Err(InformerError::NotSettable(
                what,
                "the informer has already started",
            ));
        }
        if !set() {
            return Err(InformerError::NotSettable(what, again));
        }
        Ok(())
    }

    /// Runs the informer until `cancel` is cancelled: lists and watches, fills the cache,
    /// notifies handlers, resyncs them. When it returns, the reflector, the informer loop and
    /// every handler task have finished; notifications still buffered are discarded.
    ///
    /// If the future is dropped instead, the reflector is cancelled and every handler task
    /// ends on its own shortly after.
    ///
    /// # Errors
    /// - [`InformerError::AlreadyStarted`] if `run` was called before on this informer (or a
    ///   clone of it);
    /// - [`InformerError::ReflectorPanicked`] if the reflector panicked (for example in a
    ///   transform); the informer stopped then, as if cancelled.
    pub async fn run(&self, cancel: CancellationToken) -> Result<(), InformerError> {
        let inner = &self.inner;
        if inner
            .state
            .compare_exchange(NOT_STARTED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(InformerError::AlreadyStarted);
        }
        let stop = cancel.child_token();
        let guard = RunGuard {
            inner: inner.clone(),
            stop: stop.clone(),
        };
        inner.processor.start(tokio::runtime::Handle::current());
        let reflector = inner.reflector.clone();
        let reflector_stop = stop.clone();
        let mut reflector_task = tokio::spawn(async move { reflector.run(reflector_stop).await });
        // Set before the loop stops the informer, so that whichever branch below ends
        // first (the reflector stops with the informer), the panic is reported.
        let cache_panic = parking_lot::Mutex::new(None);
        let early_end = tokio::select! {
            // The reflector only ends by itself if it panicked (say, in a transform).
            ended = &mut reflector_task => Some(ended),
            _ = async {
                let process = async {
                    if let Some(message) = self.process_loop(&stop).await {
                        *cache_panic.lock() = Some(message);
                        // A loop that ended on a panic stops the informer.
                        stop.cancel();
                    }
                };
                tokio::join!(process, self.resync_loop(&stop))
            } => None,
        };
        stop.cancel();
        let ended = match early_end {
            Some(ended) => ended,
            None => reflector_task.await,
        };
        inner.fifo.close();
        inner.processor.stop(inner.fifo.has_synced()).await;
        drop(guard);
        if let Some(message) = cache_panic.into_inner() {
            return Err(InformerError::CachePanicked(message));
        }
        match ended {
            Err(e) if e.is_panic() => {
                let message = panic::message(&*e.into_panic());
                tracing::error!(panic = %message, "the reflector panicked; the informer stopped");
                Err(InformerError::ReflectorPanicked(message))
            }
            _ => Ok(()),
        }
    }

    /// The informer loop: pop a batch, apply it to the cache and distribute its
    /// notifications under the distribution lock, then wait for room in blocking buffers.
    /// Returns the message of a panic that stopped it (the cache's, or a notification's
    /// before it reaches a handler), logged and, with no `tracing` subscriber, printed.
    async fn process_loop(&self, stop: &CancellationToken) -> Option<String> {
        let inner = &*self.inner;
        let fifo = &inner.fifo;
        let store: &dyn Store<K> = &*inner.store;
        let processor = &inner.processor;
        let in_order = matches!(inner.store_version.get(), Reached::Nothing);
        loop {
            let mut process = |batch: Vec<Delta<K>>, keys: Vec<Option<ObjectKey>>| {
                // RealFifo and DeltaFifo never mix initial and later items in one batch.
                let is_initial = !fifo.has_synced();
                let mut distributor = processor.distributor();
                let mut notify = |n| distributor.distribute(n);
                // The FIFO keys objects with `resource_key` (see `build`), so the store may
                // reuse its keys. A keyless object is logged by apply_keyed_deltas and
                // skipped; nothing else is lost.
                if in_order {
                    // A RealFifo's batches are in the server's order: the store's resource
                    // version advances with each, before any handler hears of it.
                    let rv = match apply_ordered_deltas(store, batch, keys, is_initial, &mut notify)
                    {
                        Ok(rv) => rv,
                        // Logged; the version advanced all the same.
                        Err(_) => store.resource_version(),
                    };
                    if let Some(rv) = rv {
                        inner.store_version.set(&rv);
                    }
                } else {
                    let _ = apply_keyed_deltas(store, batch, keys, is_initial, &mut notify);
                }
            };
            let popped = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                popped = AssertUnwindSafe(fifo.pop_keyed(&mut process)).catch_unwind() => popped,
            };
            let popped = match popped {
                Ok(popped) => popped,
                Err(payload) => {
                    let message = panic::message(&*payload);
                    tracing::error!(panic = %message, "applying a change to the cache panicked; the informer stopped");
                    crate::fallback::report(format_args!(
                        "an informer stopped: applying a change to its cache panicked ({message}); its cache no longer changes"
                    ));
                    return Some(message);
                }
            };
            if popped.is_err() {
                break; // closed
            }
            if *inner.phase.borrow() == Phase::Listing && fifo.has_synced() {
                inner.phase.send_replace(Phase::Synced);
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = processor.wait_for_room() => {}
            }
        }
        None
    }

    /// Resyncs handlers when due: wakes at the earliest due time, marks the due handlers and
    /// asks the FIFO to replay the cache.
    async fn resync_loop(&self, stop: &CancellationToken) {
        let inner = &*self.inner;
        loop {
            let changed = inner.processor.resync_changed.notified();
            let next = inner.processor.next_resync();
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = changed => continue,
                _ = sleep_until_opt(next) => {}
            }
            if inner.processor.should_resync(Instant::now())
                && let Err(e) = inner.fifo.resync()
            {
                tracing::debug!(error = %e, "resync stopped: the FIFO is closed");
                return;
            }
        }
    }

    /// Registers a handler with a resync period (`None` or zero: no resync; at least one
    /// second). See [`add_handler_with`](Self::add_handler_with).
    ///
    /// client-go's `AddEventHandler(h)` gives the handler the informer's default resync
    /// period; here that is `add_handler(h, informer.default_resync())`
    /// ([`default_resync`](Self::default_resync), set by the factory's or the builder's
    /// `default_resync`): `None` is no resync, whatever the default.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::HandlerFns;
    /// use informer_runtime::informer::SharedIndexInformer;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let informer = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// let handler = HandlerFns::<Pod>::new().on_add(|pod, _initial| println!("{:?}", pod.metadata.name));
    /// let registration = informer.add_handler(handler, Some(Duration::from_secs(600)));
    /// assert!(!registration.has_synced());
    /// ```
    pub fn add_handler(
        &self,
        handler: impl Handler<K> + 'static,
        resync_period: Option<Duration>,
    ) -> HandlerRegistration<K> {
        self.add_handler_with(handler, HandlerOptions::new().resync_period(resync_period))
    }

    /// Registers a handler with options (resync period, buffer policy, name).
    ///
    /// - Before [`run`](Self::run): the handler receives the initial list as
    ///   `Add { is_initial_list: true }`, then every change.
    /// - While running: it first receives the current cache as `Add { is_initial_list: true }`,
    ///   atomically with respect to new changes, then every later change.
    /// - After the informer stopped: it is registered but never called, and never synced.
    pub fn add_handler_with(
        &self,
        handler: impl Handler<K> + 'static,
        options: HandlerOptions,
    ) -> HandlerRegistration<K> {
        let resync = normalize_resync(options.resync);
        let listener = self
            .inner
            .processor
            .add(Arc::new(handler), &options, resync);
        HandlerRegistration {
            listener,
            processor: self.inner.processor.clone(),
            fifo: self.inner.fifo.clone(),
            phase: self.inner.phase.subscribe(),
        }
    }

    /// The number of registered handlers.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.len()
    }

    /// Whether something besides the informer holds its cache (a [`Lister`] or the
    /// [`store`](Self::store)): someone expects it to fill.
    pub(crate) fn cache_is_read(&self) -> bool {
        Arc::strong_count(&self.inner.store) > self.inner.own_store_refs
    }

    /// Whether the first complete list has been applied to the cache (and handed to every
    /// handler's buffer; see [`HandlerRegistration::has_synced`] for a handler's own state).
    pub fn has_synced(&self) -> bool {
        self.inner.fifo.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced) (returns `true`) or until the informer
    /// stops without having synced (returns `false`).
    ///
    /// Never returns if the informer is never run; while it cannot list (say, RBAC forbids
    /// it), it keeps waiting: combine with a timeout and report
    /// [`sync_error`](Self::sync_error).
    ///
    /// The future is boxed, so that the waits of informers of different types (and of
    /// [`HandlerRegistration::wait_synced`]) go in one array, as client-go's
    /// `WaitForCacheSync(stop, a.HasSynced, b.HasSynced)` takes them:
    /// `wait_for_cache_sync(&cancel, [pods.wait_for_sync(), config_maps.wait_for_sync()])`
    /// (see [`wait_for_cache_sync`](super::wait_for_cache_sync)).
    pub fn wait_for_sync(&self) -> futures::future::BoxFuture<'_, bool> {
        Box::pin(wait_for_fifo_sync(
            self.inner.phase.subscribe(),
            &*self.inner.fifo,
            || false,
        ))
    }

    /// Why the informer has not synced (yet): the reflector's last list or watch error, such
    /// as 403 Forbidden (RBAC) or 404 Not Found (the resource is not served). `None` when
    /// the last list succeeded.
    pub fn sync_error(&self) -> Option<Arc<ReflectorError>> {
        self.inner.reflector.last_error()
    }

    /// The resource version of the last list, watch event or bookmark the reflector pushed
    /// to the FIFO (it may not be in the cache yet: see
    /// [`last_store_sync_resource_version`](Self::last_store_sync_resource_version)).
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.inner.reflector.last_sync_resource_version()
    }

    /// The resource version the cache has reached (client-go's
    /// `LastStoreSyncResourceVersion`): every change up to it is in the cache, and no
    /// handler has been told of a change the cache does not hold yet. It advances with every
    /// applied object, delete, bookmark and list. `None` before the first list is applied,
    /// and with a [`FifoKind::Delta`] FIFO, which applies events grouped by key (out of the
    /// server's order), except for what a list set.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_runtime::informer::SharedIndexInformer;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let informer = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// assert_eq!(informer.last_store_sync_resource_version(), None); // not run yet
    /// ```
    pub fn last_store_sync_resource_version(&self) -> Option<String> {
        self.inner.store.resource_version()
    }

    /// The cache's resource version, shared with the read-your-own-writes gate.
    pub(crate) fn store_version(&self) -> Arc<StoreVersion> {
        self.inner.store_version.clone()
    }

    /// The reflector's counters (relists, watch restarts), for metrics.
    pub fn reflector_stats(&self) -> ReflectorStats {
        self.inner.reflector.stats()
    }

    /// The cache, as a [`Store`].
    pub fn store(&self) -> Arc<dyn Store<K>> {
        self.inner.store.clone()
    }

    /// The cache, as an [`Indexer`].
    pub fn indexer(&self) -> Arc<dyn Indexer<K>> {
        self.inner.store.clone()
    }

    /// A typed [`Lister`] over the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.store.clone())
    }

    /// Adds indexes to the cache, before or while running; objects already cached are
    /// indexed at once.
    ///
    /// # Errors
    /// [`IndexError::Conflict`] if a name is already registered (then nothing is added).
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        self.inner.store.add_indexers(indexers)
    }

    /// The resync period configured with [`InformerBuilder::default_resync`].
    pub fn default_resync(&self) -> Option<Duration> {
        self.inner.default_resync
    }

    /// Whether [`run`](Self::run) has been called and has not returned.
    pub fn is_running(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == RUNNING
    }

    /// Whether the informer has run and stopped.
    pub fn is_stopped(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == STOPPED
    }
}

/// How often a sync wait re-checks the FIFO (a FIFO may report synced without a pop, as a
/// `DeltaFifo` does after an empty first list).
const SYNC_POLL: Duration = Duration::from_millis(50);

/// Waits until `fifo` has synced (`true`) or the informer stopped without, or `give_up`
/// says so (`false`).
pub(crate) async fn wait_for_fifo_sync<K>(
    mut phase: watch::Receiver<Phase>,
    fifo: &dyn Fifo<K>,
    give_up: impl Fn() -> bool,
) -> bool {
    loop {
        if fifo.has_synced() {
            return true;
        }
        if give_up() {
            return false;
        }
        if *phase.borrow_and_update() == Phase::Stopped {
            return fifo.has_synced();
        }
        tokio::select! {
            changed = phase.changed() => {
                if changed.is_err() {
                    return fifo.has_synced();
                }
            }
            _ = tokio::time::sleep(SYNC_POLL) => {}
        }
    }
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Ends everything `run` started, also when its future is dropped.
struct RunGuard<K: Resource + Clone + Send + Sync + 'static> {
    inner: Arc<Inner<K>>,
    stop: CancellationToken,
}

impl<K: Resource + Clone + Send + Sync + 'static> Drop for RunGuard<K> {
    fn drop(&mut self) {
        self.stop.cancel();
        self.inner.fifo.close();
        let _ = self.inner.processor.close_all(self.inner.fifo.has_synced());
        self.inner.state.store(STOPPED, Ordering::Release);
        self.inner.phase.send_replace(Phase::Stopped);
    }
}
