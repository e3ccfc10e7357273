//! [`MemoryListerWatcher`]: an API server's list and watch semantics over memory.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use informer_core::lister_watcher::{
    ListParams, ListWatchError, ListerWatcher, ObjectList, Status, VersionMatch, WatchEvent,
    WatchParams, WatchStream,
};
use informer_core::{KeyFn, ObjectKey, resource_key};
use kube::Resource;
use kube::core::watch::{Bookmark, BookmarkMeta};
use kube::core::{ListMeta, Selector, SelectorExt, TypeMeta};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::mpsc;

use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
use informer_core::selector::parse_label_selector;

/// How many past events a [`MemoryListerWatcher`] keeps for resuming watches, unless changed
/// with [`MemoryListerWatcher::set_history_limit`].
const DEFAULT_HISTORY_LIMIT: usize = 10_000;

/// How many paginated list snapshots (continue tokens) are kept at once; older ones expire.
const MAX_SNAPSHOTS: usize = 16;

/// How a [`MemoryListerWatcher`] answers a streaming list (a watch with
/// `sendInitialEvents=true`).
///
/// ```
/// use informer_testing::StreamingSupport;
/// assert_eq!(StreamingSupport::default(), StreamingSupport::Supported);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamingSupport {
    /// As Kubernetes 1.32+: synthetic `ADDED` events for the current state, then a bookmark
    /// annotated `k8s.io/initial-events-end`, then changes.
    #[default]
    Supported,
    /// As a server with the `WatchList` feature disabled: the watch is refused with
    /// `422 Invalid`.
    Rejected,
    /// As a server that does not know the parameter: it is ignored and the request is an
    /// ordinary watch (no initial-events-end bookmark is ever sent).
    Ignored,
}

/// A request a [`MemoryListerWatcher`] received, as recorded by
/// [`MemoryListerWatcher::requests`].
///
/// ```
/// use informer_testing::RecordedRequest;
/// use kube::api::ListParams;
/// let r = RecordedRequest::List(ListParams::default());
/// assert_eq!(r.resource_version(), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum RecordedRequest {
    /// A call to [`ListerWatcher::list`].
    List(ListParams),
    /// A call to [`ListerWatcher::watch`].
    Watch {
        /// The watch parameters.
        params: WatchParams,
        /// The resource version the watch started from.
        resource_version: String,
    },
}

impl RecordedRequest {
    /// The resource version the request asked for: the list's `resourceVersion` (`None` when
    /// unset), or the watch's.
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            RecordedRequest::List(p) => p.resource_version.as_deref(),
            RecordedRequest::Watch {
                resource_version, ..
            } => Some(resource_version),
        }
    }

    /// Whether this is a list request.
    pub fn is_list(&self) -> bool {
        matches!(self, RecordedRequest::List(_))
    }
}

/// An in-memory source of objects with an API server's list and watch semantics, for tests
/// and benchmarks.
///
/// A cloneable handle (an `Arc` inside): mutate through one clone, list and watch through
/// another. It keeps:
///
/// - the current objects, keyed by [`ObjectKey`] and listed in key order;
/// - a global resource version (a `u64` counter like etcd's revision, starting at 1), set on
///   every created, updated or deleted object as `metadata.resourceVersion`;
/// - a bounded history of events (10,000 by default) so that a watch can resume from an
///   older resource version; older versions get a `410 Gone` (`Expired`) error event.
///
/// What it guarantees, as a real API server:
/// - [`list`](ListerWatcher::list) honours label selectors (`=`, `==`, `!=`, `in`, `notin`,
///   exists, `!` not exists), field selectors on `metadata.name` and `metadata.namespace`
///   (any other field is refused with a 400, as the API server refuses a field it does not
///   index, so an informer with one never syncs: test `spec.nodeName` and the like against
///   [`TestApiServer`](crate::TestApiServer), which knows each type's fields; client-go's
///   fake `ListWatch` ignores selectors),
///   `limit`/`continue` pagination over a consistent snapshot (a `continue` token expires on
///   [`compact`](Self::compact) or [`expire_continue_tokens`](Self::expire_continue_tokens)
///   with `410 Expired`), and `resourceVersion`: unset or `""` is the current state, `"0"` is
///   "any" (the current state), a version with `NotOlderThan` or without a limit is the
///   current state (`504 Too large resource version` if it is in the future), and a version
///   with `Exact` or with a limit is exactly that version's state (`410 Expired` if compacted).
/// - [`watch`](ListerWatcher::watch) from `""` or `"0"` starts with synthetic `ADDED` events
///   for the current state; from a version `v` it replays every event after `v`, then
///   streams live changes. Objects entering or leaving a selector arrive as `ADDED` /
///   `DELETED`. Bookmarks are sent by [`bookmark`](Self::bookmark) to watches that asked for
///   them. A streaming list (`sendInitialEvents=true`) follows [`StreamingSupport`]. A
///   watch's `timeout` (seconds) ends its stream, as a server's `timeoutSeconds`.
///
/// What it does not do: admission, validation, `generation`, `uid`, optimistic concurrency
/// (an update always wins), or HTTP. Use `informer_testing::TestApiServer` for those.
///
/// Fault injection: [`fail_next_list`](Self::fail_next_list),
/// [`fail_next_watch`](Self::fail_next_watch), [`close_watches`](Self::close_watches),
/// [`send_error_event`](Self::send_error_event),
/// [`send_stream_error`](Self::send_stream_error), [`compact`](Self::compact). Every request is
/// recorded ([`requests`](Self::requests)).
///
/// ```
/// # tokio_test_block_on(async {
/// use futures::StreamExt;
/// use informer_core::ListerWatcher;
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::api::{ListParams, WatchEvent, WatchParams};
///
/// let lw = MemoryListerWatcher::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("a".into());
/// cm.metadata.namespace = Some("default".into());
/// let rv = lw.create(cm.clone());
///
/// let list = lw.list(&ListParams::default()).await.unwrap();
/// assert_eq!(list.items.len(), 1);
/// assert_eq!(list.metadata.resource_version.as_deref(), Some(rv.as_str()));
///
/// let mut watch = lw.watch(&WatchParams::default(), &rv).await.unwrap();
/// cm.data = Some([("k".to_string(), "v".to_string())].into());
/// lw.update(cm);
/// assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Modified(_)))));
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
pub struct MemoryListerWatcher<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for MemoryListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<K> {
    key_fn: KeyFn<K>,
    state: Mutex<State<K>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

struct Event<K> {
    rv: u64,
    kind: Kind,
    key: ObjectKey,
    /// The new state (for a delete: the last state, with the deletion's resource version).
    obj: Arc<K>,
    /// The state before (`None` for an add).
    prev: Option<Arc<K>>,
}

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<Arc<K>>, ListWatchError>>;

struct Watcher<K> {
    tx: Sender<K>,
    filter: Filter,
    bookmarks: bool,
}

struct Snapshot<K> {
    rv: u64,
    items: Arc<Vec<Arc<K>>>,
}

struct State<K> {
    rv: u64,
    objects: BTreeMap<ObjectKey, Arc<K>>,
    history: VecDeque<Event<K>>,
    history_limit: usize,
    /// A watch from resource version `r` can be served from history iff `r >= oldest_servable`.
    oldest_servable: u64,
    watchers: Vec<Watcher<K>>,
    snapshots: HashMap<u64, Snapshot<K>>,
    snapshot_order: VecDeque<u64>,
    next_snapshot: u64,
    list_failures: VecDeque<ListWatchError>,
    watch_failures: VecDeque<ListWatchError>,
    streaming: StreamingSupport,
    requests: Vec<RecordedRequest>,
    list_calls: usize,
    watch_calls: usize,
}

impl<K: Resource + Clone + Send + Sync + 'static> Default for MemoryListerWatcher<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> MemoryListerWatcher<K> {
    /// An empty source at resource version `"1"`, keyed by [`resource_key`]
    /// (`namespace/name`).
    pub fn new() -> Self {
        Self::with_key_fn(resource_key::<K>)
    }

    /// An empty source keyed by `key_fn` (two objects with the same key are the same object).
    pub fn with_key_fn(key_fn: KeyFn<K>) -> Self {
        Self {
            inner: Arc::new(Inner {
                key_fn,
                state: Mutex::new(State {
                    rv: 1,
                    objects: BTreeMap::new(),
                    history: VecDeque::new(),
                    history_limit: DEFAULT_HISTORY_LIMIT,
                    oldest_servable: 1,
                    watchers: Vec::new(),
                    snapshots: HashMap::new(),
                    snapshot_order: VecDeque::new(),
                    next_snapshot: 1,
                    list_failures: VecDeque::new(),
                    watch_failures: VecDeque::new(),
                    streaming: StreamingSupport::Supported,
                    requests: Vec::new(),
                    list_calls: 0,
                    watch_calls: 0,
                }),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.inner.state.lock()
    }

    fn key(&self, obj: &K) -> Result<ObjectKey, ListWatchError> {
        (self.inner.key_fn)(obj)
            .map_err(|e| ListWatchError::status(400, "BadRequest", e.to_string()))
    }

    /// Creates `obj`, sets its `metadata.resourceVersion` and emits `ADDED`; returns the new
    /// resource version.
    ///
    /// # Panics
    /// If `obj` has no key or an object with its key exists (a mistake in the test; use
    /// [`try_create`](Self::try_create) to get the server's error instead).
    ///
    /// ```
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// assert_eq!(lw.create(cm.clone()), "2");
    /// assert_eq!(lw.try_create(cm).unwrap_err().code(), Some(409));
    /// ```
    pub fn create(&self, obj: K) -> String {
        match self.try_create(obj) {
            Ok(rv) => rv,
            Err(e) => panic!("MemoryListerWatcher::create: {e}"),
        }
    }

    /// Creates `obj` as [`create`](Self::create) does.
    ///
    /// # Errors
    /// `400 BadRequest` if `obj` has no key, `409 AlreadyExists` if its key exists.
    pub fn try_create(&self, obj: K) -> Result<String, ListWatchError> {
        self.create_as(obj, Broadcast::Yes)
    }

    /// Creates `obj` as [`create`](Self::create) does, but the open watches are not told:
    /// the change is in lists, and in watches started later from an earlier version
    /// (client-go's `FakeControllerSource.AddDropWatch`, a watch that missed an event). A
    /// relist or a new watch is how an informer learns of it.
    ///
    /// # Panics
    /// As [`create`](Self::create).
    pub fn create_dropping_watch(&self, obj: K) -> String {
        match self.create_as(obj, Broadcast::No) {
            Ok(rv) => rv,
            Err(e) => panic!("MemoryListerWatcher::create_dropping_watch: {e}"),
        }
    }

    fn create_as(&self, mut obj: K, broadcast: Broadcast) -> Result<String, ListWatchError> {
        let key = self.key(&obj)?;
        let mut st = self.lock();
        if st.objects.contains_key(&key) {
            return Err(ListWatchError::status(
                409,
                "AlreadyExists",
                format!("{key} already exists"),
            ));
        }
        st.rv += 1;
        let rv = st.rv;
        set_rv(&mut obj, rv);
        let obj = Arc::new(obj);
        st.objects.insert(key.clone(), obj.clone());
        st.emit(
            Event {
                rv,
                kind: Kind::Added,
                key,
                obj,
                prev: None,
            },
            broadcast,
        );
        Ok(rv.to_string())
    }

    /// Replaces the object with `obj`'s key, sets its `metadata.resourceVersion` and emits
    /// `MODIFIED`; returns the new resource version. Any resource version on `obj` is
    /// overwritten (no optimistic concurrency).
    ///
    /// # Panics
    /// If `obj` has no key or no object with its key exists (use
    /// [`try_update`](Self::try_update) to get the server's error instead).
    ///
    /// ```
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// lw.create(cm.clone());
    /// cm.data = Some([("k".to_string(), "v".to_string())].into());
    /// assert_eq!(lw.update(cm), "3");
    /// ```
    pub fn update(&self, obj: K) -> String {
        match self.try_update(obj) {
            Ok(rv) => rv,
            Err(e) => panic!("MemoryListerWatcher::update: {e}"),
        }
    }

    /// Updates as [`update`](Self::update) does.
    ///
    /// # Errors
    /// `400 BadRequest` if `obj` has no key, `404 NotFound` if no object has its key.
    pub fn try_update(&self, obj: K) -> Result<String, ListWatchError> {
        self.update_as(obj, Broadcast::Yes)
    }

    /// Updates as [`update`](Self::update) does, but the open watches are not told
    /// (client-go's `FakeControllerSource.ModifyDropWatch`; see
    /// [`create_dropping_watch`](Self::create_dropping_watch)).
    ///
    /// # Panics
    /// As [`update`](Self::update).
    pub fn update_dropping_watch(&self, obj: K) -> String {
        match self.update_as(obj, Broadcast::No) {
            Ok(rv) => rv,
            Err(e) => panic!("MemoryListerWatcher::update_dropping_watch: {e}"),
        }
    }

    fn update_as(&self, mut obj: K, broadcast: Broadcast) -> Result<String, ListWatchError> {
        let key = self.key(&obj)?;
        let mut st = self.lock();
        let Some(prev) = st.objects.get(&key).cloned() else {
            return Err(ListWatchError::status(
                404,
                "NotFound",
                format!("{key} not found"),
            ));
        };
        st.rv += 1;
        let rv = st.rv;
        set_rv(&mut obj, rv);
        let obj = Arc::new(obj);
        st.objects.insert(key.clone(), obj.clone());
        st.emit(
            Event {
                rv,
                kind: Kind::Modified,
                key,
                obj,
                prev: Some(prev),
            },
            broadcast,
        );
        Ok(rv.to_string())
    }

    /// Deletes the object with `key` and emits `DELETED` with its last state (carrying the
    /// deletion's resource version); returns that resource version, or `None` if there was
    /// no such object (nothing happens then).
    ///
    /// ```
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// lw.create(cm);
    /// let key = informer_core::ObjectKey::cluster("a");
    /// assert_eq!(lw.delete(&key).as_deref(), Some("3"));
    /// assert_eq!(lw.delete(&key), None);
    /// ```
    pub fn delete(&self, key: &ObjectKey) -> Option<String> {
        self.delete_as(key, Broadcast::Yes)
    }

    /// Deletes as [`delete`](Self::delete) does, but the open watches are not told
    /// (client-go's `FakeControllerSource.DeleteDropWatch`; see
    /// [`create_dropping_watch`](Self::create_dropping_watch)): an informer learns of it
    /// at its next relist, as a delete whose final state is unknown.
    ///
    /// ```
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// lw.create(cm);
    /// assert_eq!(lw.delete_dropping_watch(&informer_core::ObjectKey::cluster("a")).as_deref(), Some("3"));
    /// assert!(lw.is_empty());
    /// ```
    pub fn delete_dropping_watch(&self, key: &ObjectKey) -> Option<String> {
        self.delete_as(key, Broadcast::No)
    }

    fn delete_as(&self, key: &ObjectKey, broadcast: Broadcast) -> Option<String> {
        let mut st = self.lock();
        let prev = st.objects.remove(key)?;
        st.rv += 1;
        let rv = st.rv;
        let mut last = (*prev).clone();
        set_rv(&mut last, rv);
        st.emit(
            Event {
                rv,
                kind: Kind::Deleted,
                key: key.clone(),
                obj: Arc::new(last),
                prev: Some(prev),
            },
            broadcast,
        );
        Some(rv.to_string())
    }

    /// The current resource version (of the last change, or `"1"` before any).
    pub fn resource_version(&self) -> String {
        self.lock().rv.to_string()
    }

    /// The current object with `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.lock().objects.get(key).cloned()
    }

    /// Every current object, in key order.
    pub fn objects(&self) -> Vec<Arc<K>> {
        self.lock().objects.values().cloned().collect()
    }

    /// The number of current objects.
    pub fn len(&self) -> usize {
        self.lock().objects.len()
    }

    /// Whether there is no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sends a bookmark at the current resource version to every open watch that asked for
    /// bookmarks.
    pub fn bookmark(&self) {
        let mut st = self.lock();
        let rv = st.rv;
        st.watchers.retain(|w| {
            if w.bookmarks {
                w.tx.send(Ok(WatchEvent::Bookmark(bookmark(rv, false))))
                    .is_ok()
            } else {
                !w.tx.is_closed()
            }
        });
    }

    /// Drops the event history and every continue token: a watch from an older resource
    /// version then gets a `410 Expired` error event, a continue gets `410 Expired`, and an
    /// exact list of an older version gets `410 Expired`. Open watches are not affected.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// let old = lw.resource_version();
    /// lw.create(cm);
    /// lw.compact();
    /// let mut watch = lw.watch(&Default::default(), &old).await.unwrap();
    /// use futures::StreamExt;
    /// match watch.next().await {
    ///     Some(Ok(kube::api::WatchEvent::Error(status))) => assert_eq!(status.code, 410),
    ///     other => panic!("{other:?}"),
    /// }
    /// # });
    /// ```
    pub fn compact(&self) {
        let mut st = self.lock();
        st.history.clear();
        st.oldest_servable = st.rv;
        st.snapshots.clear();
        st.snapshot_order.clear();
    }

    /// Expires every continue token (the next page of a paginated list gets `410 Expired`),
    /// leaving the watch history alone.
    pub fn expire_continue_tokens(&self) {
        let mut st = self.lock();
        st.snapshots.clear();
        st.snapshot_order.clear();
    }

    /// Keeps at most `limit` past events (older ones are compacted away).
    pub fn set_history_limit(&self, limit: usize) {
        let mut st = self.lock();
        st.history_limit = limit;
        st.trim_history();
    }

    /// Sets how a streaming list (`sendInitialEvents=true`) is answered.
    pub fn set_streaming_support(&self, support: StreamingSupport) {
        self.lock().streaming = support;
    }

    /// Ends every open watch stream, as a server's watch timeout does (events already sent
    /// are still delivered first).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// # let _ = cm;
    /// use futures::StreamExt;
    /// let mut watch = lw.watch(&Default::default(), "1").await.unwrap();
    /// lw.close_watches();
    /// assert!(watch.next().await.is_none());
    /// # });
    /// ```
    pub fn close_watches(&self) {
        self.lock().watchers.clear();
    }

    /// Sends an `ERROR` event carrying `status` to every open watch, then ends them (a server
    /// always closes a watch after an error event). For example a `410 Expired` status.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// # let _ = cm;
    /// use futures::StreamExt;
    /// let mut watch = lw.watch(&Default::default(), "1").await.unwrap();
    /// lw.send_error_event(kube::core::Status::failure("too old", "Expired").with_code(410));
    /// assert!(matches!(watch.next().await, Some(Ok(kube::api::WatchEvent::Error(_)))));
    /// assert!(watch.next().await.is_none());
    /// # });
    /// ```
    pub fn send_error_event(&self, status: Status) {
        let mut st = self.lock();
        for w in st.watchers.drain(..) {
            let _ = w.tx.send(Ok(WatchEvent::Error(Box::new(status.clone()))));
        }
    }

    /// Puts an `Err(make())` item into every open watch stream; the streams stay open (as a
    /// kube watch stream yields a decoding error for a malformed line and goes on).
    pub fn send_stream_error(&self, make: impl Fn() -> ListWatchError) {
        let mut st = self.lock();
        st.watchers.retain(|w| w.tx.send(Err(make())).is_ok());
    }

    /// Makes the next call to `list` fail with `err` (errors queue up, one per call).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// # let _ = cm;
    /// use informer_core::ListWatchError;
    /// lw.fail_next_list(ListWatchError::status(500, "InternalError", "boom"));
    /// assert_eq!(lw.list(&Default::default()).await.unwrap_err().code(), Some(500));
    /// assert!(lw.list(&Default::default()).await.is_ok());
    /// assert_eq!(lw.list_calls(), 2);
    /// # });
    /// ```
    pub fn fail_next_list(&self, err: ListWatchError) {
        self.lock().list_failures.push_back(err);
    }

    /// Makes the next call to `watch` fail with `err` (errors queue up, one per call).
    pub fn fail_next_watch(&self, err: ListWatchError) {
        self.lock().watch_failures.push_back(err);
    }

    /// How many times `list` was called (including failed calls and every page).
    pub fn list_calls(&self) -> usize {
        self.lock().list_calls
    }

    /// How many times `watch` was called (including failed calls).
    pub fn watch_calls(&self) -> usize {
        self.lock().watch_calls
    }

    /// The number of watch streams still open (not ended and not dropped by the client).
    pub fn open_watches(&self) -> usize {
        let mut st = self.lock();
        st.watchers.retain(|w| !w.tx.is_closed());
        st.watchers.len()
    }

    /// Every request received so far, oldest first.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use informer_core::ListerWatcher;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let lw = MemoryListerWatcher::<ConfigMap>::new();
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("a".into());
    /// # let _ = cm;
    /// lw.list(&kube::api::ListParams::default().labels("app=web")).await.unwrap();
    /// let _watch = lw.watch(&Default::default(), "1").await.unwrap();
    /// let requests = lw.requests();
    /// assert!(requests[0].is_list());
    /// assert_eq!(requests[1].resource_version(), Some("1"));
    /// # });
    /// ```
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    fn list_now(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, ListWatchError> {
        let mut st = self.lock();
        st.list_calls += 1;
        st.requests.push(RecordedRequest::List(params.clone()));
        if let Some(err) = st.list_failures.pop_front() {
            return Err(err);
        }
        let filter = Filter::parse(
            params.label_selector.as_deref(),
            params.field_selector.as_deref(),
        )?;
        let limit = params.limit.filter(|l| *l > 0).map(|l| l as usize);
        if let Some(token) = params.continue_token.as_deref() {
            if params
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty())
            {
                return Err(bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let (id, offset) =
                parse_continue(token).ok_or_else(|| bad_request("continue key is not valid"))?;
            let snapshot = st.snapshots.get(&id).ok_or_else(|| {
                ListWatchError::status(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list \
                     result. You can start a new list without the continue parameter.",
                )
            })?;
            return Ok(page(&snapshot.items, snapshot.rv, offset, limit, id));
        }
        let current = st.rv;
        let (at, objects) = match params.resource_version.as_deref() {
            None | Some("") | Some("0") => (current, None),
            Some(s) => {
                let r = parse_rv(s)?;
                if r > current {
                    return Err(too_large(r, current));
                }
                let exact = params.version_match == Some(VersionMatch::Exact)
                    || (params.version_match.is_none() && limit.is_some());
                if exact && r < current {
                    if r < st.oldest_servable {
                        return Err(too_old(r, st.oldest_servable));
                    }
                    (r, Some(st.state_at(r)))
                } else if exact {
                    (r, None)
                } else {
                    (current, None)
                }
            }
        };
        let source = objects.as_ref().unwrap_or(&st.objects);
        let items: Vec<Arc<K>> = source
            .values()
            .filter(|o| filter.matches(&***o))
            .cloned()
            .collect();
        match limit {
            Some(limit) if items.len() > limit => {
                let id = st.next_snapshot;
                st.next_snapshot += 1;
                let items = Arc::new(items);
                let out = page(&items, at, 0, Some(limit), id);
                st.snapshots.insert(id, Snapshot { rv: at, items });
                st.snapshot_order.push_back(id);
                while st.snapshot_order.len() > MAX_SNAPSHOTS {
                    if let Some(old) = st.snapshot_order.pop_front() {
                        st.snapshots.remove(&old);
                    }
                }
                Ok(out)
            }
            _ => Ok(page(&items, at, 0, None, 0)),
        }
    }

    fn watch_now(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        let mut st = self.lock();
        st.watch_calls += 1;
        st.requests.push(RecordedRequest::Watch {
            params: params.clone(),
            resource_version: resource_version.to_owned(),
        });
        if let Some(err) = st.watch_failures.pop_front() {
            return Err(err);
        }
        let filter = Filter::parse(
            params.label_selector.as_deref(),
            params.field_selector.as_deref(),
        )?;
        let current = st.rv;
        let (tx, rx) = mpsc::unbounded_channel();
        let streaming = params.send_initial_events && st.streaming != StreamingSupport::Ignored;
        if params.send_initial_events && st.streaming == StreamingSupport::Rejected {
            return Err(ListWatchError::status(
                422,
                "Invalid",
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless \
                 the WatchList feature gate is enabled",
            ));
        }
        if streaming {
            if !params.bookmarks {
                return Err(ListWatchError::status(
                    422,
                    "Invalid",
                    "allowWatchBookmarks: Required value: allowWatchBookmarks must be set to true \
                     when sendInitialEvents is set",
                ));
            }
            if !matches!(resource_version, "" | "0") {
                let r = parse_rv(resource_version)?;
                if r > current {
                    return Err(too_large(r, current));
                }
            }
            for obj in st.objects.values().filter(|o| filter.matches(&***o)) {
                let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
            }
            let _ = tx.send(Ok(WatchEvent::Bookmark(bookmark(current, true))));
        } else if matches!(resource_version, "" | "0") {
            for obj in st.objects.values().filter(|o| filter.matches(&***o)) {
                let _ = tx.send(Ok(WatchEvent::Added(obj.clone())));
            }
        } else {
            let r = parse_rv(resource_version)?;
            if r > current {
                return Err(too_large(r, current));
            }
            if r < st.oldest_servable {
                let gone = too_old(r, st.oldest_servable);
                let status = match gone {
                    ListWatchError::Api(status) => status,
                    _ => Box::new(Status::failure("too old resource version", "Expired")),
                };
                return Ok(futures::stream::iter([Ok(WatchEvent::Error(status))]).boxed());
            }
            for ev in st.history.iter().filter(|e| e.rv > r) {
                if let Some(event) = translate(ev, &filter) {
                    let _ = tx.send(Ok(event));
                }
            }
        }
        st.watchers.push(Watcher {
            tx,
            filter,
            bookmarks: params.bookmarks,
        });
        drop(st);
        let mut rx = rx;
        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        Ok(match params.timeout {
            Some(secs) => stream
                .take_until(tokio::time::sleep(Duration::from_secs(u64::from(secs))))
                .boxed(),
            None => stream.boxed(),
        })
    }
}

#[async_trait]
impl<K: Resource + Clone + Send + Sync + 'static> ListerWatcher<K> for MemoryListerWatcher<K> {
    async fn list(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, ListWatchError> {
        self.list_now(params)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        self.watch_now(params, resource_version)
    }
}

impl<K: Resource + Clone> State<K> {
    fn emit(&mut self, ev: Event<K>, broadcast: Broadcast) {
        if broadcast == Broadcast::Yes {
            self.watchers.retain(|w| match translate(&ev, &w.filter) {
                Some(event) => w.tx.send(Ok(event)).is_ok(),
                None => !w.tx.is_closed(),
            });
        }
        self.history.push_back(ev);
        self.trim_history();
    }

    fn trim_history(&mut self) {
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.oldest_servable = old.rv;
            }
        }
        if self.history_limit == 0 {
            self.oldest_servable = self.rv;
        }
    }

    /// The objects at resource version `r` (`oldest_servable <= r <= rv`), by undoing the
    /// events after `r`.
    fn state_at(&self, r: u64) -> BTreeMap<ObjectKey, Arc<K>> {
        let mut objects = self.objects.clone();
        for ev in self.history.iter().rev().take_while(|e| e.rv > r) {
            match (&ev.kind, &ev.prev) {
                (Kind::Added, _) | (_, None) => {
                    objects.remove(&ev.key);
                }
                (Kind::Modified | Kind::Deleted, Some(prev)) => {
                    objects.insert(ev.key.clone(), prev.clone());
                }
            }
        }
        objects
    }
}

/// Whether a change is sent to the open watches (`No`: a watch that missed it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Broadcast {
    Yes,
    No,
}

/// What a watcher with `filter` sees of `ev`: objects entering the selection are added,
/// objects leaving it are deleted (with their previous state at the event's version).
fn translate<K: Resource + Clone>(ev: &Event<K>, filter: &Filter) -> Option<WatchEvent<Arc<K>>> {
    match ev.kind {
        Kind::Added => filter
            .matches(&*ev.obj)
            .then(|| WatchEvent::Added(ev.obj.clone())),
        Kind::Deleted => filter
            .matches(&*ev.obj)
            .then(|| WatchEvent::Deleted(ev.obj.clone())),
        Kind::Modified => {
            let now = filter.matches(&*ev.obj);
            let before = ev.prev.as_deref().is_some_and(|p| filter.matches(p));
            match (before, now) {
                (true, true) => Some(WatchEvent::Modified(ev.obj.clone())),
                (false, true) => Some(WatchEvent::Added(ev.obj.clone())),
                (true, false) => {
                    let mut old = ev.prev.as_deref().cloned()?;
                    set_rv(&mut old, ev.rv);
                    Some(WatchEvent::Deleted(Arc::new(old)))
                }
                (false, false) => None,
            }
        }
    }
}

fn page<K: Clone>(
    items: &[Arc<K>],
    rv: u64,
    offset: usize,
    limit: Option<usize>,
    snapshot: u64,
) -> ObjectList<Arc<K>> {
    let start = offset.min(items.len());
    let end = match limit {
        Some(limit) => start.saturating_add(limit).min(items.len()),
        None => items.len(),
    };
    let continue_ = (end < items.len()).then(|| format!("{snapshot}:{end}"));
    ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "List".into(),
        },
        metadata: ListMeta {
            continue_,
            resource_version: Some(rv.to_string()),
            ..ListMeta::default()
        },
        items: items[start..end].to_vec(),
    }
}

fn parse_continue(token: &str) -> Option<(u64, usize)> {
    let (id, offset) = token.split_once(':')?;
    Some((id.parse().ok()?, offset.parse().ok()?))
}

fn set_rv<K: Resource>(obj: &mut K, rv: u64) {
    obj.meta_mut().resource_version = Some(rv.to_string());
}

fn bookmark(rv: u64, initial_events_end: bool) -> Bookmark {
    let mut annotations = BTreeMap::new();
    if initial_events_end {
        annotations.insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
    }
    Bookmark {
        types: TypeMeta {
            api_version: String::new(),
            kind: String::new(),
        },
        metadata: BookmarkMeta {
            resource_version: rv.to_string(),
            annotations,
        },
    }
}

fn bad_request(message: &str) -> ListWatchError {
    ListWatchError::status(400, "BadRequest", message)
}

fn parse_rv(s: &str) -> Result<u64, ListWatchError> {
    s.parse()
        .map_err(|_| bad_request(&format!("invalid resource version {s:?}")))
}

fn too_large(requested: u64, current: u64) -> ListWatchError {
    ListWatchError::status(
        504,
        "Timeout",
        format!("Too large resource version: {requested}, current: {current}"),
    )
}

fn too_old(requested: u64, oldest: u64) -> ListWatchError {
    ListWatchError::status(
        410,
        "Expired",
        format!("too old resource version: {requested} ({oldest})"),
    )
}

/// Label and field selectors, parsed once per request. Label selectors use the listers'
/// parser ([`parse_label_selector`]), so both accept exactly the same syntax.
#[derive(Debug, Default)]
struct Filter {
    labels: Option<Selector>,
    fields: Vec<FieldReq>,
}

#[derive(Debug)]
struct FieldReq {
    field: Field,
    value: String,
    equal: bool,
}

#[derive(Debug)]
enum Field {
    Name,
    Namespace,
}

impl Filter {
    fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, ListWatchError> {
        let mut filter = Filter::default();
        if let Some(labels) = labels {
            let selector = parse_label_selector(labels).map_err(|e| {
                bad_request(&format!("unable to parse requirement: {labels:?}: {e}"))
            })?;
            filter.labels = (!selector.selects_all()).then_some(selector);
        }
        if let Some(fields) = fields {
            for term in fields.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                filter.fields.push(parse_field_term(term)?);
            }
        }
        Ok(filter)
    }

    fn matches<K: Resource>(&self, obj: &K) -> bool {
        if self.labels.is_none() && self.fields.is_empty() {
            return true;
        }
        let meta = obj.meta();
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
        let label_ok = self.labels.as_ref().is_none_or(|s| s.matches(labels));
        label_ok
            && self.fields.iter().all(|req| {
                let actual = match req.field {
                    Field::Name => meta.name.as_deref().unwrap_or(""),
                    Field::Namespace => meta.namespace.as_deref().unwrap_or(""),
                };
                (actual == req.value) == req.equal
            })
    }
}

fn parse_field_term(term: &str) -> Result<FieldReq, ListWatchError> {
    let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
        (f, v, false)
    } else if let Some((f, v)) = term.split_once("==") {
        (f, v, true)
    } else if let Some((f, v)) = term.split_once('=') {
        (f, v, true)
    } else {
        return Err(bad_request(&format!("invalid field selector: {term:?}")));
    };
    let field = match field.trim() {
        "metadata.name" => Field::Name,
        "metadata.namespace" => Field::Namespace,
        other => {
            return Err(bad_request(&format!("field label not supported: {other}")));
        }
    };
    Ok(FieldReq {
        field,
        value: value.trim().to_owned(),
        equal,
    })
}

#[cfg(test)]
mod tests;
