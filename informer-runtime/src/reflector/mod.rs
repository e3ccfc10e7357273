//! The reflector: keeps a [`Fifo`] fed with what a [`ListerWatcher`] lists and watches, with
//! client-go's semantics (`tools/cache/reflector.go`).
//!
//! One [`Reflector::run`] call is one loop of *list, then watch for as long as possible*:
//!
//! ```text
//!        ┌──── backoff ◄──── list failed / error status / 410 on a list's first watch
//!        │◄─────────────────── 410 Gone from a watch that was healthy or resumed (no backoff)
//!        ▼
//!  list (paginated)  ──replace──►  Fifo          (refused if older than the cache:
//!        │                                         listed again from a consistent read)
//!        ▼
//!  watch from the list's resourceVersion ──add/update/delete/bookmark──► Fifo
//!        │  ends normally / times out    → watch again from the last resourceVersion
//!        │  ends within 1 s, no event    → backoff, then watch again (client-go relists)
//!        │  429, connection error        → backoff, then watch again (no relist)
//!        │  500 InternalError            → the same, within the configured window only
//!        │  410 Gone / too old           → relist
//!        │  other error status           → relist after a backoff
//!        │  an event older than the cache → refused: consistent relist after a backoff
//!        └──────────────────────────────────────────────────────────────────────
//! ```
//!
//! The backoff starts again from its first delay once a list succeeds or a watch delivers
//! an event, so it grows only while the server keeps failing.

mod backoff;
mod error;
mod run;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use informer_core::lister_watcher::ListParams;
use informer_core::{Fifo, ListerWatcher};
use kube::Resource;
use parking_lot::Mutex;

pub use self::backoff::{Backoff, BackoffConfig};
pub use self::error::ReflectorError;
/// Stops [`Reflector::run`] (re-exported from `tokio_util`).
pub use tokio_util::sync::CancellationToken;

/// The page size client-go's reflector uses when it paginates (`limit=500`).
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// A function applied to every listed or watched object before it is wrapped in an `Arc`
/// and pushed to the FIFO (client-go's `TransformFunc`), e.g. to drop `managedFields`.
pub type TransformFn<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Decides, every resync period, whether to resync (client-go's `ShouldResyncFunc`).
pub type ShouldResyncFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// Called with every error the reflector meets (client-go's `WatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// How a [`Reflector`] lists and watches.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::reflector::ReflectorConfig;
/// use kube::api::ListParams;
///
/// let config = ReflectorConfig {
///     list_params: ListParams::default().labels("app=web"),
///     resync_period: Some(Duration::from_secs(30)),
///     ..ReflectorConfig::default()
/// };
/// assert!(!config.streaming_list);
/// ```
#[derive(Clone, Debug)]
pub struct ReflectorConfig {
    /// Label and field selectors for every list and watch, and the page size in `limit`:
    ///
    /// - `None` (the default) is client-go's choice: the first list (`resourceVersion="0"`,
    ///   which an API server with its watch cache on answers whole, ignoring the limit) and
    ///   consistent lists (`resourceVersion=""`) ask for pages of [`DEFAULT_PAGE_SIZE`]; a
    ///   relist at a resource version is not paginated, so that the watch cache serves it —
    ///   unless the first list came back paginated (the server's watch cache is off), after
    ///   which every list pages by [`DEFAULT_PAGE_SIZE`] (client-go's `paginatedResult`);
    /// - `Some(n)` pages every list by `n` (`Some(0)`: never paginate).
    ///
    /// `resource_version`, `version_match` and `continue_token` are ignored: the reflector
    /// sets them.
    pub list_params: ListParams,
    /// Use a streaming list (`sendInitialEvents=true`) instead of a list for the initial
    /// state, with fallback to list and watch when the server refuses it or the
    /// initial-events-end bookmark does not arrive within
    /// [`streaming_list_timeout`](Self::streaming_list_timeout). Default `false`.
    pub streaming_list: bool,
    /// How long a streaming list may take to deliver its initial-events-end bookmark before
    /// the reflector gives up on streaming (for the rest of this `run`). Default 60 s.
    pub streaming_list_timeout: Duration,
    /// Backoff between failed attempts (client-go's defaults).
    pub backoff: BackoffConfig,
    /// Each watch asks the server to end it after a random time in this range (client-go:
    /// 5 to 10 minutes), so that watches are spread over API servers. If the server does not
    /// end it 30 s after that, the reflector ends it itself and watches again.
    pub watch_timeout: (Duration, Duration),
    /// How often to ask whether to resync ([`Reflector::with_should_resync`]); `None` (the
    /// default) never resyncs.
    pub resync_period: Option<Duration>,
    /// For how long a watch that keeps failing with `500 InternalError` is watched again
    /// (after a backoff) instead of relisted (client-go's `MaxInternalErrorRetryDuration`).
    /// The window opens at the first such error of a list-and-watch cycle and closes again
    /// after a minute without one. Zero (the default, as client-go's) turns it off: an
    /// internal error relists like any other error status.
    pub max_internal_error_retry_duration: Duration,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            list_params: ListParams::default(),
            streaming_list: false,
            streaming_list_timeout: Duration::from_secs(60),
            backoff: BackoffConfig::default(),
            watch_timeout: (Duration::from_secs(5 * 60), Duration::from_secs(10 * 60)),
            resync_period: None,
            max_internal_error_retry_duration: Duration::ZERO,
        }
    }
}

/// Counters of what a [`Reflector`] did, for metrics. Monotonic over the reflector's life.
///
/// ```
/// use informer_runtime::reflector::ReflectorStats;
/// let s = ReflectorStats::default();
/// assert_eq!(s.relists(), 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReflectorStats {
    /// Successful lists (including streaming lists) pushed to the FIFO.
    pub lists: u64,
    /// Failed lists.
    pub list_errors: u64,
    /// Watches the server accepted.
    pub watches: u64,
    /// Failed watch requests and errors delivered inside watch streams.
    pub watch_errors: u64,
    /// Added, modified and deleted events pushed to the FIFO.
    pub events: u64,
    /// Bookmarks received.
    pub bookmarks: u64,
    /// Malformed objects or events in watch streams (each restarts the watch).
    pub decode_errors: u64,
    /// Objects skipped because they have no name (and so no key).
    pub invalid_objects: u64,
    /// Resyncs pushed to the FIFO.
    pub resyncs: u64,
    /// Streaming lists that fell back to list and watch.
    pub streaming_fallbacks: u64,
    /// Lists, watch events and bookmarks refused because they were older than the cache (a
    /// lagging API server): each was followed by a consistent list.
    pub stale_refusals: u64,
    /// Consistent lists (`resourceVersion=""`) older than the cache, taken all the same: the
    /// server's storage went back in time (an etcd restore).
    pub consistent_rewinds: u64,
}

impl ReflectorStats {
    /// Lists after the first one.
    pub fn relists(&self) -> u64 {
        self.lists.saturating_sub(1)
    }
}

#[derive(Default)]
struct Counters {
    lists: AtomicU64,
    list_errors: AtomicU64,
    watches: AtomicU64,
    watch_errors: AtomicU64,
    events: AtomicU64,
    bookmarks: AtomicU64,
    decode_errors: AtomicU64,
    invalid_objects: AtomicU64,
    resyncs: AtomicU64,
    streaming_fallbacks: AtomicU64,
    stale_refusals: AtomicU64,
    consistent_rewinds: AtomicU64,
}

fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[derive(Default)]
struct Shared {
    last_sync_rv: Mutex<Option<String>>,
    last_error: Mutex<Option<Arc<ReflectorError>>>,
    counters: Counters,
    running: AtomicBool,
    /// client-go's `paginatedResult`: the first list came back in pages, so the server's
    /// watch cache is off and every later list pages too.
    paginated_result: AtomicBool,
}

/// Lists and watches one kind of object and pushes what it sees into a [`Fifo`].
///
/// Guarantees (client-go's reflector semantics, with the differences marked):
///
/// - **List, then watch.** The list is paginated (see [`ReflectorConfig::list_params`]); a
///   continue token that expires (`410`) falls back to one full list without a limit. The
///   listed objects go to the FIFO in one [`Fifo::replace`] at the list's resource version,
///   then the watch starts from that version. Each watched object goes to
///   [`Fifo::add`]/[`update`](Fifo::update)/[`delete`](Fifo::delete) (after the transform);
///   bookmarks go to [`Fifo::bookmark`]. Every event's resource version becomes the
///   [`last_sync_resource_version`](Self::last_sync_resource_version).
/// - **Which resource version a list asks for**: `"0"` before anything was synced (served
///   from the API server's cache), then the last synced version, then `""` (a consistent
///   read) after a list failed with `410 Gone` or "Too large resource version" (recognised
///   by status cause as well as by message; that list is retried at once with `""`).
/// - **Never back in time** (not in client-go): where resource versions are comparable
///   (see [`ResourceVersion`](informer_core::ResourceVersion)), a list, watch event or
///   bookmark older than the cache's version — what a lagging API server behind a load
///   balancer sends — is refused before it reaches the FIFO, counted
///   ([`ReflectorStats::stale_refusals`]) and followed by a consistent list (at once for a
///   list, after a backoff for a watch). A consistent list is the server's current state
///   and is taken even when older (counted as [`ReflectorStats::consistent_rewinds`]: the
///   server's storage went back). Opaque versions are never compared.
/// - **Watch ends**: a watch that ends normally or times out is resumed from the last
///   resource version without a relist; `429`, connection errors and malformed events
///   back off and watch again from the last good resource version without a relist (nothing
///   is lost: the server replays what came after it); `410 Gone` / too old relists; every
///   other error status — in the watch response or as an `ERROR` event in the stream, such
///   as a `500 StorageReadError` after an unsafe delete — ends the watch and relists after
///   a backoff, as client-go does, so that the cache is rebuilt from the server's state. A
///   `500 InternalError` is watched again instead, after a backoff, only within
///   [`ReflectorConfig::max_internal_error_retry_duration`] (off by default).
/// - **Backoff** ([`Backoff`], client-go's defaults) between failed attempts, growing only
///   while the server keeps failing: it starts again from its first delay as soon as a list
///   succeeds or a watch delivers an event (client-go waits for two quiet minutes), and a
///   `410 Gone` relists at once (client-go backs off first) when a watch had delivered
///   events, or when it came from a watch resumed after another ended (the history was
///   compacted while none was open), so a cache is current again within moments of the
///   server coming back. Only a `410` on the first watch after a list waits for a backoff,
///   so a server that cannot watch from the versions it lists is not listed in a loop. A
///   watch that ends within a second without any event backs off and resumes from the last
///   resource version (client-go relists after its backoff; the resumed watch replays what
///   was missed, or answers `410` and the reflector relists at once): the reflector never
///   spins.
/// - **Streaming list** ([`ReflectorConfig::streaming_list`]): one watch with
///   `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan` and bookmarks; the
///   objects it streams are collected and pushed with one [`Fifo::replace`] at the resource
///   version of the bookmark annotated `k8s.io/initial-events-end`, then the same watch goes
///   on. Falls back to list and watch if the server refuses it (for this `run`, if it
///   answers `400`/`422`), if the stream ends without the bookmark, or if the bookmark does
///   not come within [`ReflectorConfig::streaming_list_timeout`] (for this `run`).
/// - **Resync**: every [`ReflectorConfig::resync_period`] while watching, if the
///   [`should_resync`](Self::with_should_resync) function (default: always) says so, it
///   calls [`Fifo::resync`]; this never contacts the server.
/// - **Errors** are kept ([`last_error`](Self::last_error)), counted
///   ([`stats`](Self::stats)), logged through `tracing` and passed to the
///   [watch-error handler](Self::with_watch_error_handler).
///
/// What it does not do: it never closes the FIFO, and it stops when the FIFO is closed.
/// Objects without a name are skipped (logged and counted), never given a made-up key.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use informer_core::{Fifo, RealFifo};
/// use informer_testing::MemoryListerWatcher;
/// use informer_runtime::reflector::{CancellationToken, Reflector, ReflectorConfig};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let lw = MemoryListerWatcher::<Pod>::new();
/// let fifo: Arc<dyn Fifo<Pod>> = Arc::new(RealFifo::<Pod>::new(None));
/// let reflector = Arc::new(Reflector::new(Arc::new(lw.clone()), fifo.clone(), ReflectorConfig::default()));
/// let cancel = CancellationToken::new();
/// let task = tokio::spawn({
///     let (reflector, cancel) = (reflector.clone(), cancel.clone());
///     async move { reflector.run(cancel).await }
/// });
/// while reflector.last_sync_resource_version().is_none() {
///     tokio::task::yield_now().await;
/// }
/// cancel.cancel();
/// task.await.unwrap();
/// # });
/// ```
pub struct Reflector<K> {
    lw: Arc<dyn ListerWatcher<K>>,
    fifo: Arc<dyn Fifo<K>>,
    config: ReflectorConfig,
    name: String,
    transform: Option<TransformFn<K>>,
    should_resync: Option<ShouldResyncFn>,
    watch_error_handler: Option<WatchErrorHandler>,
    /// Set after the reflector was built, before it runs
    /// ([`SharedIndexInformer::set_transform`](crate::informer::SharedIndexInformer::set_transform)):
    /// runs after `transform`.
    late_transform: std::sync::OnceLock<TransformFn<K>>,
    /// As `late_transform`, for the watch-error handler; replaces `watch_error_handler`.
    late_watch_error_handler: std::sync::OnceLock<WatchErrorHandler>,
    shared: Shared,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// A reflector from `lw` into `fifo`. It does nothing until [`run`](Self::run).
    pub fn new(
        lw: Arc<dyn ListerWatcher<K>>,
        fifo: Arc<dyn Fifo<K>>,
        config: ReflectorConfig,
    ) -> Self {
        let full = std::any::type_name::<K>();
        let base = full.split('<').next().unwrap_or(full);
        let name = base.rsplit("::").next().unwrap_or(base).to_owned();
        Self {
            lw,
            fifo,
            config,
            name,
            transform: None,
            should_resync: None,
            watch_error_handler: None,
            late_transform: std::sync::OnceLock::new(),
            late_watch_error_handler: std::sync::OnceLock::new(),
            shared: Shared::default(),
        }
    }

    /// Names the reflector in its logs (default: the object type's name).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Applies `f` to every listed and watched object before it is wrapped in an `Arc` and
    /// pushed to the FIFO. `f` must not panic (a panic ends [`run`](Self::run)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// .with_transform(Arc::new(|mut pod: Pod| {
    ///     pod.metadata.managed_fields = None;
    ///     pod
    /// }));
    /// ```
    #[must_use]
    pub fn with_transform(mut self, f: TransformFn<K>) -> Self {
        self.transform = Some(f);
        self
    }

    /// Every [`ReflectorConfig::resync_period`], calls `f`; if it returns `true` the FIFO
    /// is resynced. Without it, every period resyncs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// .with_should_resync(Arc::new(|| true));
    /// ```
    #[must_use]
    pub fn with_should_resync(mut self, f: ShouldResyncFn) -> Self {
        self.should_resync = Some(f);
        self
    }

    /// Adds `f` after the transform given when built, before the reflector runs; `false`
    /// if one was added so already.
    pub(crate) fn add_late_transform(&self, f: TransformFn<K>) -> bool {
        self.late_transform.set(f).is_ok()
    }

    /// Sets the watch-error handler, replacing the one given when built, before the
    /// reflector runs; `false` if one was set so already.
    pub(crate) fn set_late_watch_error_handler(&self, f: WatchErrorHandler) -> bool {
        self.late_watch_error_handler.set(f).is_ok()
    }

    /// Calls `f` with every list, watch and FIFO error (the reflector retries regardless).
    /// A panic in `f` is caught and logged.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// .with_watch_error_handler(Arc::new(|err| eprintln!("pods: {err}")));
    /// ```
    #[must_use]
    pub fn with_watch_error_handler(mut self, f: WatchErrorHandler) -> Self {
        self.watch_error_handler = Some(f);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &ReflectorConfig {
        &self.config
    }

    /// The name used in logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Lists and watches until `cancel` is cancelled or the FIFO is closed; retries every
    /// failure with backoff. Cancellation is prompt: any pending request or wait is dropped.
    ///
    /// One `run` at a time: a second concurrent call logs a warning and returns at once. A
    /// later `run` resumes from the last synced resource version.
    pub async fn run(&self, cancel: CancellationToken) {
        if self.shared.running.swap(true, Ordering::AcqRel) {
            tracing::warn!(reflector = %self.name, "Reflector::run called while already running; ignoring");
            return;
        }
        struct Running<'a>(&'a AtomicBool);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _running = Running(&self.shared.running);
        run::Run::new(self, &cancel).main().await;
    }

    /// The resource version of the last list, event or bookmark pushed to the FIFO; `None`
    /// until the first list succeeded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// ;
    /// assert_eq!(reflector.last_sync_resource_version(), None); // nothing listed yet
    /// ```
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.shared.last_sync_rv.lock().clone()
    }

    /// The last error, until a list or watch request succeeds after it. Lets a caller that
    /// waits for the first sync say why it has not happened (see
    /// [`ReflectorError::hint`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// ;
    /// if let Some(err) = reflector.last_error() {
    ///     eprintln!("not synced: {err}"); // says what to fix for 401, 403 and 404
    /// }
    /// assert!(reflector.last_error().is_none()); // nothing ran yet
    /// ```
    pub fn last_error(&self) -> Option<Arc<ReflectorError>> {
        self.shared.last_error.lock().clone()
    }

    /// Counters for metrics.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::RealFifo;
    /// use informer_testing::MemoryListerWatcher;
    /// use informer_runtime::reflector::{Reflector, ReflectorConfig};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let reflector = Reflector::new(
    ///     Arc::new(MemoryListerWatcher::<Pod>::new()),
    ///     Arc::new(RealFifo::<Pod>::new(None)),
    ///     ReflectorConfig::default(),
    /// )
    /// ;
    /// assert_eq!(reflector.stats().lists, 0);
    /// ```
    pub fn stats(&self) -> ReflectorStats {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ReflectorStats {
            lists: get(&c.lists),
            list_errors: get(&c.list_errors),
            watches: get(&c.watches),
            watch_errors: get(&c.watch_errors),
            events: get(&c.events),
            bookmarks: get(&c.bookmarks),
            decode_errors: get(&c.decode_errors),
            invalid_objects: get(&c.invalid_objects),
            resyncs: get(&c.resyncs),
            streaming_fallbacks: get(&c.streaming_fallbacks),
            stale_refusals: get(&c.stale_refusals),
            consistent_rewinds: get(&c.consistent_rewinds),
        }
    }
}

#[cfg(test)]
mod tests;
