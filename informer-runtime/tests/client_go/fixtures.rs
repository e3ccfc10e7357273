//! Fixtures shared by the ports of client-go's `tools/cache` tests (`client_go_informer.rs`,
//! `client_go_watchlist.rs`): Go's `ListWatch` with `ListFunc`/`WatchFunc` ([`ListWatch`]),
//! `watch.FakeWatcher` ([`FakeWatcher`]), the plain `Store` Go's reflector tests hand to a
//! reflector ([`RecordingStore`]), and helpers to build pods, lists, errors and reflectors.
//! Each test file uses a part of them.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use informer_core::fifo::Delta;
use informer_core::lister_watcher::{
    INITIAL_EVENTS_END_ANNOTATION, ListMeta, ListParams, ListWatchError, ListerWatcher, ObjectList,
    Status, WatchEvent, WatchParams, WatchStream,
};
use informer_core::{Fifo, FifoError, ObjectKey};
use informer_runtime::reflector::{BackoffConfig, CancellationToken, Reflector, ReflectorConfig};
use k8s_openapi::api::core::v1::Pod;
use kube::core::TypeMeta;
use kube::core::watch::{Bookmark, BookmarkMeta};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub type Item = Result<WatchEvent<Arc<Pod>>, ListWatchError>;
pub type PodList = ObjectList<Arc<Pod>>;

// ----- fixtures -----

pub fn pod(name: &str, rv: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.to_owned());
    if !rv.is_empty() {
        p.metadata.resource_version = Some(rv.to_owned());
    }
    p
}

pub fn name_of(p: &Pod) -> String {
    p.metadata.name.clone().unwrap_or_default()
}

pub fn rv_of(p: &Pod) -> String {
    p.metadata.resource_version.clone().unwrap_or_default()
}

pub fn key(name: &str) -> ObjectKey {
    ObjectKey::new(None, name)
}

pub fn pod_list(rv: &str, pods: Vec<Pod>) -> PodList {
    pod_page(rv, None, pods)
}

pub fn pod_page(rv: &str, cont: Option<&str>, pods: Vec<Pod>) -> PodList {
    ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "PodList".into(),
        },
        metadata: ListMeta {
            resource_version: Some(rv.to_owned()),
            continue_: cont.map(str::to_owned),
            ..ListMeta::default()
        },
        items: pods.into_iter().map(Arc::new).collect(),
    }
}

pub fn numbered_pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

pub fn status(code: u16, reason: &str, message: &str) -> Box<Status> {
    Box::new(Status::failure(message, reason).with_code(code))
}

pub fn expired() -> ListWatchError {
    ListWatchError::status(
        410,
        "Expired",
        "The resourceVersion for the provided watch is too old.",
    )
}

pub fn conn_refused() -> ListWatchError {
    ListWatchError::Transport("connection refused".into())
}

/// client-go's reflector defaults without jitter, so paused-time delays are exact.
pub fn config() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

/// Waits (in tokio time, paused or not) until `cond` holds; panics after `limit`.
pub async fn eventually(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub const PATIENCE: Duration = Duration::from_secs(60);

// ----- Go's ListWatch and watch.FakeWatcher -----

pub type ListFn = Box<dyn Fn(&ListParams) -> Result<PodList, ListWatchError> + Send + Sync>;
pub type WatchFn =
    Box<dyn Fn(&WatchParams, &str) -> Result<WatchStream<Pod>, ListWatchError> + Send + Sync>;

/// Go's `cache.ListWatch`: a list and a watch function; records every request.
pub struct ListWatch {
    pub list_fn: ListFn,
    pub watch_fn: WatchFn,
    pub lists: Mutex<Vec<ListParams>>,
    pub watches: Mutex<Vec<(WatchParams, String)>>,
}

impl ListWatch {
    pub fn new(
        list: impl Fn(&ListParams) -> Result<PodList, ListWatchError> + Send + Sync + 'static,
        watch: impl Fn(&WatchParams, &str) -> Result<WatchStream<Pod>, ListWatchError>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            list_fn: Box::new(list),
            watch_fn: Box::new(watch),
            lists: Mutex::new(Vec::new()),
            watches: Mutex::new(Vec::new()),
        })
    }

    pub fn list_calls(&self) -> Vec<ListParams> {
        self.lists.lock().unwrap().clone()
    }

    /// The `resourceVersion` of every list request (`""` when unset), as Go's tests record.
    pub fn list_rvs(&self) -> Vec<String> {
        self.list_calls()
            .iter()
            .map(|p| p.resource_version.clone().unwrap_or_default())
            .collect()
    }

    pub fn watch_calls(&self) -> Vec<(WatchParams, String)> {
        self.watches.lock().unwrap().clone()
    }
}

#[async_trait]
impl ListerWatcher<Pod> for ListWatch {
    async fn list(&self, params: &ListParams) -> Result<PodList, ListWatchError> {
        self.lists.lock().unwrap().push(params.clone());
        (self.list_fn)(params)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<Pod>, ListWatchError> {
        self.watches
            .lock()
            .unwrap()
            .push((params.clone(), resource_version.to_owned()));
        (self.watch_fn)(params, resource_version)
    }
}

/// Go's `watch.FakeWatcher`: the producer side of a watch stream.
#[derive(Clone)]
pub struct FakeWatcher {
    pub tx: Arc<Mutex<Option<mpsc::UnboundedSender<Item>>>>,
    /// How many items the consumer took from the stream.
    pub consumed: Arc<AtomicUsize>,
}

pub fn fake_watcher() -> (FakeWatcher, WatchStream<Pod>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<Item>();
    let consumed = Arc::new(AtomicUsize::new(0));
    let stream = futures::stream::poll_fn({
        let consumed = consumed.clone();
        move |cx| {
            let polled = rx.poll_recv(cx);
            if let std::task::Poll::Ready(Some(_)) = &polled {
                consumed.fetch_add(1, Ordering::AcqRel);
            }
            polled
        }
    })
    .boxed();
    (
        FakeWatcher {
            tx: Arc::new(Mutex::new(Some(tx))),
            consumed,
        },
        stream,
    )
}

impl FakeWatcher {
    pub fn send(&self, item: Item) {
        if let Some(tx) = self.tx.lock().unwrap().as_ref() {
            let _ = tx.send(item);
        }
    }

    pub fn add(&self, p: Pod) {
        self.send(Ok(WatchEvent::Added(Arc::new(p))));
    }

    pub fn modify(&self, p: Pod) {
        self.send(Ok(WatchEvent::Modified(Arc::new(p))));
    }

    pub fn delete(&self, p: Pod) {
        self.send(Ok(WatchEvent::Deleted(Arc::new(p))));
    }

    pub fn bookmark(&self, rv: &str, initial_events_end: bool) {
        let mut annotations = BTreeMap::new();
        if initial_events_end {
            annotations.insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
        }
        self.send(Ok(WatchEvent::Bookmark(Bookmark {
            types: TypeMeta {
                api_version: "v1".into(),
                kind: "Pod".into(),
            },
            metadata: BookmarkMeta {
                resource_version: rv.to_owned(),
                annotations,
            },
        })));
    }

    pub fn error(&self, status: Box<Status>) {
        self.send(Ok(WatchEvent::Error(status)));
    }

    /// Ends the stream from the server's side (Go's `Stop`).
    pub fn stop(&self) {
        self.tx.lock().unwrap().take();
    }

    /// How many items the consumer has taken from the stream so far.
    pub fn consumed(&self) -> usize {
        self.consumed.load(Ordering::Acquire)
    }

    /// Whether the consumer dropped the stream (Go's `IsStopped`, from the client's side).
    pub fn is_stopped(&self) -> bool {
        self.tx
            .lock()
            .unwrap()
            .as_ref()
            .is_none_or(|tx| tx.is_closed())
    }
}

// ----- a reflector's store -----

/// The `Store` Go's reflector tests hand to the reflector: what the reflector pushes is
/// applied to a map at once (nothing pops). Records every call.
#[derive(Default)]
pub struct RecordingStore {
    pub items: Mutex<BTreeMap<String, Arc<Pod>>>,
    pub log: Mutex<Vec<String>>,
    /// Every resource version the store was told of (objects, bookmarks, lists).
    pub rvs: Mutex<Vec<String>>,
    pub resyncs: AtomicUsize,
    /// `resync` fails on this call (1-based).
    pub fail_resync_at: Option<usize>,
    pub closed: AtomicBool,
}

impl RecordingStore {
    pub fn names(&self) -> BTreeMap<String, String> {
        self.items
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), rv_of(v)))
            .collect()
    }

    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    pub fn record(&self, op: &str, p: &Pod) {
        self.log
            .lock()
            .unwrap()
            .push(format!("{op} {} {}", name_of(p), rv_of(p)));
        self.rvs.lock().unwrap().push(rv_of(p));
    }

    pub fn check_open(&self) -> Result<(), FifoError> {
        if self.closed.load(Ordering::Acquire) {
            Err(FifoError::Closed)
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl Fifo<Pod> for RecordingStore {
    fn add(&self, obj: Arc<Pod>) -> Result<(), FifoError> {
        self.check_open()?;
        self.record("add", &obj);
        self.items.lock().unwrap().insert(name_of(&obj), obj);
        Ok(())
    }

    fn update(&self, obj: Arc<Pod>) -> Result<(), FifoError> {
        self.check_open()?;
        self.record("update", &obj);
        self.items.lock().unwrap().insert(name_of(&obj), obj);
        Ok(())
    }

    fn delete(&self, obj: Arc<Pod>) -> Result<(), FifoError> {
        self.check_open()?;
        self.record("delete", &obj);
        self.items.lock().unwrap().remove(&name_of(&obj));
        Ok(())
    }

    fn replace(&self, objects: Vec<Arc<Pod>>, resource_version: String) -> Result<(), FifoError> {
        self.check_open()?;
        let names: Vec<String> = objects.iter().map(|o| name_of(o)).collect();
        self.log
            .lock()
            .unwrap()
            .push(format!("replace {names:?} {resource_version}"));
        self.rvs.lock().unwrap().push(resource_version);
        *self.items.lock().unwrap() = objects.into_iter().map(|o| (name_of(&o), o)).collect();
        Ok(())
    }

    fn resync(&self) -> Result<(), FifoError> {
        self.check_open()?;
        let n = self.resyncs.fetch_add(1, Ordering::AcqRel) + 1;
        if self.fail_resync_at == Some(n) {
            return Err(FifoError::Unsupported("expected resync reached"));
        }
        Ok(())
    }

    fn bookmark(&self, resource_version: String) -> Result<(), FifoError> {
        self.check_open()?;
        self.log
            .lock()
            .unwrap()
            .push(format!("bookmark {resource_version}"));
        self.rvs.lock().unwrap().push(resource_version);
        Ok(())
    }

    async fn pop(
        &self,
        _process: &mut (dyn FnMut(Vec<Delta<Pod>>) + Send),
    ) -> Result<(), FifoError> {
        std::future::pending().await
    }

    fn has_synced(&self) -> bool {
        false
    }

    fn len(&self) -> usize {
        0
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

/// A reflector running on its own task.
pub struct Running {
    pub reflector: Arc<Reflector<Pod>>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<()>,
}

pub fn run_reflector(reflector: Reflector<Pod>) -> Running {
    let reflector = Arc::new(reflector);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    Running {
        reflector,
        cancel,
        task,
    }
}

impl Running {
    pub async fn stop(self) -> Arc<Reflector<Pod>> {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("run returns promptly once cancelled")
            .unwrap();
        self.reflector
    }
}

pub fn reflector(
    lw: Arc<ListWatch>,
    store: Arc<RecordingStore>,
    config: ReflectorConfig,
) -> Reflector<Pod> {
    Reflector::new(lw, store, config)
}

/// A list function answering every list with `list` and a watch function handing out fake
/// watchers (sent on the returned channel, as Go's tests do).
pub fn list_then_fake_watches(
    list: PodList,
) -> (Arc<ListWatch>, mpsc::UnboundedReceiver<FakeWatcher>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let lw = ListWatch::new(
        move |_| Ok(list.clone()),
        move |_, _| {
            let (w, stream) = fake_watcher();
            let _ = tx.send(w);
            Ok(stream)
        },
    );
    (lw, rx)
}
