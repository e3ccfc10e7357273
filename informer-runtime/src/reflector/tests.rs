//! Unit tests of the reflector, one per rule, against a scripted lister-watcher (exact
//! control of every answer and of time) or the in-memory one, and a FIFO that records calls.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use informer_core::lister_watcher::{
    ListParams, ListWatchError, ListerWatcher, ObjectList, Status, WatchEvent, WatchParams,
    WatchStream, shared,
};
use informer_core::{Delta, Fifo, FifoError, ObjectKey};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::watch::{Bookmark, BookmarkMeta};
use kube::core::{ListMeta, TypeMeta};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
use crate::test_support::eventually_within;
use informer_testing::MemoryListerWatcher;

type Item = Result<WatchEvent<ConfigMap>, ListWatchError>;

// ----- fixtures -----

fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.namespace = Some("ns".to_owned());
    if !rv.is_empty() {
        cm.metadata.resource_version = Some(rv.to_owned());
    }
    cm
}

fn list_of(rv: &str, names: &[&str], cont: Option<&str>) -> ObjectList<ConfigMap> {
    ObjectList {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "List".into(),
        },
        metadata: ListMeta {
            resource_version: Some(rv.to_owned()),
            continue_: cont.map(str::to_owned),
            ..ListMeta::default()
        },
        items: names.iter().map(|n| cm(n, rv)).collect(),
    }
}

fn added(name: &str, rv: &str) -> Item {
    Ok(WatchEvent::Added(cm(name, rv)))
}

fn modified(name: &str, rv: &str) -> Item {
    Ok(WatchEvent::Modified(cm(name, rv)))
}

fn deleted(name: &str, rv: &str) -> Item {
    Ok(WatchEvent::Deleted(cm(name, rv)))
}

fn bookmark(rv: &str, initial_events_end: bool) -> Item {
    let mut annotations = std::collections::BTreeMap::new();
    if initial_events_end {
        annotations.insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
    }
    Ok(WatchEvent::Bookmark(Bookmark {
        types: TypeMeta {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        },
        metadata: BookmarkMeta {
            resource_version: rv.to_owned(),
            annotations,
        },
    }))
}

fn status(code: u16, reason: &str, message: &str) -> Box<Status> {
    Box::new(Status::failure(message, reason).with_code(code))
}

fn error_event(code: u16, reason: &str, message: &str) -> Item {
    Ok(WatchEvent::Error(status(code, reason, message)))
}

fn err(code: u16, reason: &str, message: &str) -> ListWatchError {
    ListWatchError::status(code, reason, message)
}

fn gone() -> ListWatchError {
    err(410, "Expired", "too old resource version: 1 (5)")
}

fn too_large() -> ListWatchError {
    err(
        504,
        "Timeout",
        "Too large resource version: 99, current: 10",
    )
}

fn transport() -> ListWatchError {
    ListWatchError::Transport("connection refused".into())
}

fn config() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

const MS: Duration = Duration::from_millis(1);

/// How long a test under paused time waits for a condition (paused time skips backoffs).
const PAUSED_PATIENCE: Duration = Duration::from_secs(100);

// ----- a scripted lister-watcher -----

/// One answer of the script.
enum Reply {
    List(Result<ObjectList<ConfigMap>, ListWatchError>),
    /// A watch: its items, then the end of the stream after `Some(d)`, or an open stream.
    Watch(Result<(Vec<Item>, Option<Duration>), ListWatchError>),
}

fn watch_open(items: Vec<Item>) -> Reply {
    Reply::Watch(Ok((items, None)))
}

fn watch_ending(items: Vec<Item>, after: Duration) -> Reply {
    Reply::Watch(Ok((items, Some(after))))
}

#[derive(Clone, Debug, PartialEq)]
enum Req {
    List {
        rv: Option<String>,
        limit: Option<u32>,
        cont: Option<String>,
    },
    Watch {
        rv: String,
        streaming: bool,
    },
}

fn l(rv: Option<&str>, limit: Option<u32>) -> Req {
    Req::List {
        rv: rv.map(str::to_owned),
        limit,
        cont: None,
    }
}

fn w(rv: &str) -> Req {
    Req::Watch {
        rv: rv.to_owned(),
        streaming: false,
    }
}

fn ws(rv: &str) -> Req {
    Req::Watch {
        rv: rv.to_owned(),
        streaming: true,
    }
}

struct Logged {
    at: Duration,
    req: Req,
    watch_timeout: Option<u32>,
}

/// Answers requests from a script, in order; once the script is used up (or a request does
/// not match the next answer's kind) the request never completes. Logs every request with
/// the (paused) time it arrived.
struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
    log: Mutex<Vec<Logged>>,
    notify: Notify,
    start: Instant,
}

impl Scripted {
    fn new(replies: Vec<Reply>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            log: Mutex::new(Vec::new()),
            notify: Notify::new(),
            start: Instant::now(),
        })
    }

    fn record(&self, req: Req, watch_timeout: Option<u32>) {
        self.log.lock().unwrap().push(Logged {
            at: self.start.elapsed(),
            req,
            watch_timeout,
        });
        self.notify.notify_waiters();
    }

    fn requests(&self) -> Vec<Req> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|e| e.req.clone())
            .collect()
    }

    fn times(&self) -> Vec<Duration> {
        self.log.lock().unwrap().iter().map(|e| e.at).collect()
    }

    fn gaps(&self) -> Vec<Duration> {
        self.times().windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Waits (in paused time) until `n` requests arrived, then lets the reflector settle.
    async fn wait_requests(&self, n: usize) {
        tokio::time::timeout(Duration::from_secs(24 * 3600), async {
            loop {
                let notified = self.notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.log.lock().unwrap().len() >= n {
                    return;
                }
                notified.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("expected {n} requests, got {:?}", self.requests()));
        settle().await;
    }
}

/// Lets every task run until all wait on something (with paused time, 1 ms passes).
async fn settle() {
    tokio::time::sleep(MS).await;
}

#[async_trait]
impl ListerWatcher<ConfigMap> for Scripted {
    async fn list(
        &self,
        params: &ListParams,
    ) -> Result<ObjectList<Arc<ConfigMap>>, ListWatchError> {
        self.record(
            Req::List {
                rv: params.resource_version.clone(),
                limit: params.limit,
                cont: params.continue_token.clone(),
            },
            None,
        );
        let next = {
            let mut replies = self.replies.lock().unwrap();
            match replies.front() {
                Some(Reply::List(_)) => replies.pop_front(),
                _ => None,
            }
        };
        match next {
            Some(Reply::List(result)) => result.map(|list| ObjectList {
                types: list.types,
                metadata: list.metadata,
                items: list.items.into_iter().map(Arc::new).collect(),
            }),
            _ => std::future::pending().await,
        }
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        self.record(
            Req::Watch {
                rv: resource_version.to_owned(),
                streaming: params.send_initial_events,
            },
            params.timeout,
        );
        let next = {
            let mut replies = self.replies.lock().unwrap();
            match replies.front() {
                Some(Reply::Watch(_)) => replies.pop_front(),
                _ => None,
            }
        };
        match next {
            Some(Reply::Watch(Ok((items, end)))) => {
                let items = futures::stream::iter(items.into_iter().map(|i| i.map(shared)));
                Ok(match end {
                    Some(after) => items
                        .chain(
                            futures::stream::once(tokio::time::sleep(after))
                                .filter_map(|_| async { None }),
                        )
                        .boxed(),
                    None => items.chain(futures::stream::pending()).boxed(),
                })
            }
            Some(Reply::Watch(Err(e))) => Err(e),
            _ => std::future::pending().await,
        }
    }
}

// ----- a recording FIFO -----

#[derive(Clone, Debug, PartialEq)]
enum Call {
    Replace(Vec<String>, String),
    /// A list part: its objects, and whether it starts the list.
    Part(Vec<String>, bool),
    Add(String),
    Update(String),
    Delete(String),
    Bookmark(String),
    Resync,
}

fn name_rv(o: &ConfigMap) -> String {
    format!(
        "{}@{}",
        o.metadata.name.as_deref().unwrap_or(""),
        o.metadata.resource_version.as_deref().unwrap_or("")
    )
}

fn replace(names: &[&str], rv: &str) -> Call {
    Call::Replace(
        names.iter().map(|n| (*n).to_owned()).collect(),
        rv.to_owned(),
    )
}

fn add(s: &str) -> Call {
    Call::Add(s.to_owned())
}

#[derive(Default)]
struct RecordingFifo {
    calls: Mutex<Vec<Call>>,
    pushed: Mutex<Vec<Arc<ConfigMap>>>,
    closed: AtomicBool,
    /// Takes lists in parts, and reports synced once a list ended.
    parts: bool,
    synced: AtomicBool,
}

impl RecordingFifo {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn push(&self, call: Call) -> Result<(), FifoError> {
        if self.is_closed() {
            return Err(FifoError::Closed);
        }
        self.calls.lock().unwrap().push(call);
        Ok(())
    }

    fn keep(&self, obj: &Arc<ConfigMap>) -> Result<(), FifoError> {
        ObjectKey::from_resource(&**obj)?;
        self.pushed.lock().unwrap().push(obj.clone());
        Ok(())
    }
}

#[async_trait]
impl Fifo<ConfigMap> for RecordingFifo {
    fn add(&self, obj: Arc<ConfigMap>) -> Result<(), FifoError> {
        self.keep(&obj)?;
        self.push(Call::Add(name_rv(&obj)))
    }

    fn update(&self, obj: Arc<ConfigMap>) -> Result<(), FifoError> {
        self.keep(&obj)?;
        self.push(Call::Update(name_rv(&obj)))
    }

    fn delete(&self, obj: Arc<ConfigMap>) -> Result<(), FifoError> {
        self.keep(&obj)?;
        self.push(Call::Delete(name_rv(&obj)))
    }

    fn replace(&self, objects: Vec<Arc<ConfigMap>>, rv: String) -> Result<(), FifoError> {
        for o in &objects {
            self.keep(o)?;
        }
        let names = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        self.push(Call::Replace(names, rv))?;
        self.synced
            .store(self.parts, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    fn takes_list_parts(&self) -> bool {
        self.parts
    }

    fn list_part(&self, objects: Vec<Arc<ConfigMap>>, first: bool) -> Result<(), FifoError> {
        if !self.parts {
            return Err(FifoError::Unsupported("lists in parts"));
        }
        for o in &objects {
            self.keep(o)?;
        }
        let names = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap_or_default())
            .collect();
        self.push(Call::Part(names, first))
    }

    fn resync(&self) -> Result<(), FifoError> {
        self.push(Call::Resync)
    }

    fn bookmark(&self, rv: String) -> Result<(), FifoError> {
        self.push(Call::Bookmark(rv))
    }

    async fn pop(
        &self,
        _process: &mut (dyn FnMut(Vec<Delta<ConfigMap>>) + Send),
    ) -> Result<(), FifoError> {
        std::future::pending().await
    }

    fn has_synced(&self) -> bool {
        self.synced.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn len(&self) -> usize {
        0
    }

    fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

// ----- running a reflector -----

struct Running {
    reflector: Arc<Reflector<ConfigMap>>,
    fifo: Arc<RecordingFifo>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn run_with(
    lw: Arc<dyn ListerWatcher<ConfigMap>>,
    config: ReflectorConfig,
    build: impl FnOnce(Reflector<ConfigMap>) -> Reflector<ConfigMap>,
) -> Running {
    run_into(lw, config, build, RecordingFifo::default())
}

fn run_into(
    lw: Arc<dyn ListerWatcher<ConfigMap>>,
    config: ReflectorConfig,
    build: impl FnOnce(Reflector<ConfigMap>) -> Reflector<ConfigMap>,
    fifo: RecordingFifo,
) -> Running {
    let fifo = Arc::new(fifo);
    let reflector = Arc::new(build(Reflector::new(lw, fifo.clone(), config)));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    Running {
        reflector,
        fifo,
        cancel,
        task,
    }
}

fn run(lw: Arc<dyn ListerWatcher<ConfigMap>>, config: ReflectorConfig) -> Running {
    run_with(lw, config, |r| r)
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(1), self.task)
            .await
            .expect("run did not stop promptly")
            .expect("run panicked");
    }
}

// ----- list, then watch -----

/// Hands each list over in parts of `chunk` objects (as a source decoding a response does);
/// fails after the first part of the first list if `fail_first`.
struct InChunks {
    inner: Arc<Scripted>,
    chunk: usize,
    fail_first: AtomicBool,
}

#[async_trait]
impl ListerWatcher<ConfigMap> for InChunks {
    async fn list(
        &self,
        params: &ListParams,
    ) -> Result<ObjectList<Arc<ConfigMap>>, ListWatchError> {
        self.inner.list(params).await
    }

    async fn list_in_parts(
        &self,
        params: &ListParams,
        part: &mut (dyn FnMut(Vec<Arc<ConfigMap>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let list = self.inner.list(params).await?;
        for (i, chunk) in list.items.chunks(self.chunk).enumerate() {
            if i == 1
                && self
                    .fail_first
                    .swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                return Err(transport());
            }
            part(chunk.to_vec());
        }
        Ok(list.metadata)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        self.inner.watch(params, resource_version).await
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:04}")).collect()
}

/// A reflector listing `lw` in parts of `chunk` objects into a FIFO that takes parts.
fn run_in_chunks(lw: &Arc<Scripted>, chunk: usize, fail_first: bool) -> Running {
    let chunks = Arc::new(InChunks {
        inner: lw.clone(),
        chunk,
        fail_first: AtomicBool::new(fail_first),
    });
    let fifo = RecordingFifo {
        parts: true,
        ..RecordingFifo::default()
    };
    run_into(chunks, config(), |r| r, fifo)
}

fn part(names: &[String], first: bool) -> Call {
    Call::Part(names.to_vec(), first)
}

#[tokio::test(start_paused = true)]
async fn the_first_list_of_an_empty_cache_goes_to_the_fifo_in_parts_and_later_lists_whole() {
    let first: Vec<String> = names("a", 2 * run::LIST_PART + 10);
    let first_refs: Vec<&str> = first.iter().map(String::as_str).collect();
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &first_refs, None))),
        Reply::Watch(Err(gone())),
        Reply::List(Ok(list_of("20", &["b"], None))),
        watch_open(vec![]),
    ]);
    let r = run_in_chunks(&lw, 100, false);
    lw.wait_requests(4).await;
    let lp = run::LIST_PART;
    assert_eq!(
        r.fifo.calls(),
        [
            // Parts of at least LIST_PART objects as they come, the rest at the end, then the
            // replace that ends the list; the relist after the 410 is one atomic replace.
            part(&first[..300], true),
            part(&first[300..], false),
            replace(&[], "10"),
            replace(&["b"], "20"),
        ],
        "parts of at least {lp}"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_first_list_that_fails_half_way_starts_over_with_a_first_part() {
    let first: Vec<String> = names("a", run::LIST_PART + 50);
    let refs: Vec<&str> = first.iter().map(String::as_str).collect();
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &refs, None))),
        Reply::List(Ok(list_of("11", &refs[..3], None))),
        watch_open(vec![]),
    ]);
    let r = run_in_chunks(&lw, run::LIST_PART, true);
    lw.wait_requests(3).await;
    assert_eq!(
        r.fifo.calls(),
        [
            part(&first[..run::LIST_PART], true),
            // The second attempt starts a new list: the FIFO drops what the first gave.
            part(&first[..3], true),
            replace(&[], "11"),
        ]
    );
    assert_eq!(r.reflector.stats().list_errors, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn first_list_is_at_rv_0_in_pages_of_500_then_watch_starts_at_the_lists_rv() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a", "b"], None))),
        watch_open(vec![added("c", "11")]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    assert_eq!(lw.requests(), [l(Some("0"), Some(500)), w("10")]);
    assert_eq!(r.fifo.calls(), [replace(&["a", "b"], "10"), add("c@11")]);
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("11")
    );
    let stats = r.reflector.stats();
    assert_eq!((stats.lists, stats.watches, stats.events), (1, 1, 1));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_events_go_to_add_update_delete_in_order() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![
            added("a", "11"),
            modified("a", "12"),
            deleted("a", "13"),
        ]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&[], "10"),
            add("a@11"),
            Call::Update("a@12".into()),
            Call::Delete("a@13".into())
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn every_event_of_a_long_ready_stream_is_pushed_once_in_order() {
    // More events than one batch of the watch loop, all ready at once.
    let n = 3 * super::run::MAX_BATCH + 7;
    let events: Vec<Item> = (0..n)
        .map(|i| modified(&format!("o{i}"), &(11 + i).to_string()))
        .collect();
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_ending(events, Duration::from_secs(5)),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    let calls = r.fifo.calls();
    assert_eq!(calls.len(), n + 1);
    for (i, call) in calls[1..].iter().enumerate() {
        assert_eq!(*call, Call::Update(format!("o{i}@{}", 11 + i)));
    }
    assert_eq!(lw.requests()[2], w(&(10 + n).to_string()));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_that_ends_normally_is_resumed_from_the_last_rv_without_relist() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_ending(vec![added("c", "11")], Duration::from_secs(120)),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [l(Some("0"), Some(500)), w("10"), w("11")]);
    // Resumed at once when the server ended it, no backoff.
    assert_eq!(lw.gaps()[1], Duration::from_secs(120));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_asks_for_bookmarks_and_a_timeout_between_5_and_10_minutes() {
    let mut replies = vec![Reply::List(Ok(list_of("10", &[], None)))];
    for i in 0..20 {
        replies.push(watch_ending(
            vec![bookmark(&(11 + i).to_string(), false)],
            Duration::ZERO,
        ));
    }
    let lw = Scripted::new(replies);
    let r = run(lw.clone(), config());
    lw.wait_requests(22).await;
    let timeouts: Vec<u32> = lw
        .log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| e.watch_timeout)
        .collect();
    assert_eq!(timeouts.len(), 21);
    assert!(
        timeouts.iter().all(|t| (300..=600).contains(t)),
        "{timeouts:?}"
    );
    assert!(
        timeouts.iter().any(|t| *t != timeouts[0]),
        "not randomised: {timeouts:?}"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_the_server_never_ends_is_ended_30s_after_its_timeout_and_resumed() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![added("a", "11")]),
    ]);
    let cfg = ReflectorConfig {
        watch_timeout: (Duration::from_secs(60), Duration::from_secs(60)),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [l(Some("0"), Some(500)), w("10"), w("11")]);
    assert_eq!(lw.gaps()[1], Duration::from_secs(90));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmark_is_pushed_and_advances_the_resource_version() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_ending(vec![bookmark("15", false)], Duration::from_secs(2)),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests()[2], w("15"));
    assert_eq!(
        r.fifo.calls(),
        [replace(&[], "10"), Call::Bookmark("15".into())]
    );
    assert_eq!(r.reflector.stats().bookmarks, 1);
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("15")
    );
    r.stop().await;
}

// ----- relist resource versions -----

#[tokio::test(start_paused = true)]
async fn relist_resource_versions_are_0_then_last_synced_then_consistent_after_410() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![
            modified("a", "12"),
            error_event(410, "Expired", "too old"),
        ]),
        Reply::List(Err(gone())),
        Reply::List(Ok(list_of("30", &["a"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            // Watch 410: relist at the last synced version, not paginated (watch cache).
            l(Some("12"), None),
            // That list 410: retried at once as a consistent, paginated read.
            l(None, Some(500)),
            w("30"),
        ]
    );
    let gaps = lw.gaps();
    assert_eq!(
        gaps[1],
        Duration::ZERO,
        "a 410 from a watch that delivered events relists at once"
    );
    assert_eq!(gaps[2], Duration::ZERO, "the consistent read is immediate");
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&["a"], "10"),
            Call::Update("a@12".into()),
            replace(&["a"], "30")
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_on_list_retries_with_a_consistent_read() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(410, "Gone", "gone")]),
        Reply::List(Err(too_large())),
        Reply::List(Ok(list_of("30", &[], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(
        lw.requests()[2..4],
        [l(Some("10"), None), l(None, Some(500))]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn consistent_read_is_kept_until_a_list_succeeds() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Err(gone())),
        Reply::List(Err(err(500, "InternalError", "etcd down"))),
        Reply::List(Ok(list_of("30", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(6).await;
    assert_eq!(
        lw.requests()[2..],
        [
            l(Some("10"), None),
            l(None, Some(500)),
            l(None, Some(500)),
            w("30")
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_request_answered_with_410_relists_at_the_last_synced_rv() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(gone())),
        Reply::List(Ok(list_of("20", &[], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("10"), None),
            w("20")
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_410_after_an_outage_of_a_healthy_watch_relists_at_once() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        // Healthy: an event, then the server goes away.
        watch_open(vec![added("a", "11"), Err(transport())]),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        // Back, with its history gone.
        watch_open(vec![error_event(
            410,
            "Expired",
            "too old resource version",
        )]),
        Reply::List(Ok(list_of("30", &["a"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(7).await;
    assert_eq!(
        lw.requests()[4..],
        [w("11"), l(Some("11"), None), w("30")],
        "relisted at the last synced version"
    );
    assert_eq!(
        lw.gaps()[1..5],
        [800 * MS, 1600 * MS, 3200 * MS, Duration::ZERO],
        "backs off while the server is down, relists the moment it answers 410"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_410_without_events_since_the_list_waits_for_the_backoff() {
    // A watch that never delivered anything proves nothing: no immediate relist (a server
    // answering 410 to every fresh version would otherwise be relisted in a loop).
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &[], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("30", &[], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(lw.gaps()[1..4], [800 * MS, Duration::ZERO, 800 * MS]);
    r.stop().await;
}

// ----- never back in time -----

#[tokio::test(start_paused = true)]
async fn list_older_than_the_cache_is_refused_and_listed_again_consistently() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![
            modified("a", "15"),
            error_event(410, "Expired", "too old"),
        ]),
        // A lagging server answers the relist at 15 with its older state.
        Reply::List(Ok(list_of("12", &["a", "old"], None))),
        Reply::List(Ok(list_of("16", &["a"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(
        lw.requests()[2..],
        [l(Some("15"), None), l(None, Some(500)), w("16")]
    );
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&["a"], "10"),
            Call::Update("a@15".into()),
            replace(&["a"], "16")
        ],
        "the older list never reached the FIFO"
    );
    assert_eq!(r.reflector.stats().stale_refusals, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_event_older_than_the_cache_is_refused_and_the_cache_relists_consistently() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![modified("a", "12")]),
        // The watch is resumed at 12 from a lagging server, which replays older events.
        watch_open(vec![modified("a", "11"), modified("a", "12")]),
        Reply::List(Ok(list_of("13", &["a"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    // End the first watch cleanly (its stream is open): the Scripted source cannot, so the
    // second watch is reached through the watch timeout.
    tokio::time::sleep(Duration::from_secs(11 * 60)).await;
    lw.wait_requests(5).await;
    assert_eq!(lw.requests()[2..], [w("12"), l(None, Some(500)), w("13")]);
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&["a"], "10"),
            Call::Update("a@12".into()),
            replace(&["a"], "13")
        ],
        "a@11 never reached the FIFO"
    );
    assert_eq!(r.reflector.stats().stale_refusals, 1);
    let last = r.reflector.last_error();
    assert!(
        matches!(
            last.as_deref(),
            None | Some(ReflectorError::WentBack { .. })
        ),
        "{last:?}"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmark_older_than_the_cache_is_refused() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![added("a", "12"), bookmark("11", false)]),
        Reply::List(Ok(list_of("13", &["a"], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests()[2], l(None, Some(500)));
    assert!(!r.fifo.calls().contains(&Call::Bookmark("11".into())));
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("13")
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn refusals_from_a_lagging_server_back_off_with_growing_delays() {
    let lagging = || watch_open(vec![modified("a", "5")]);
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        lagging(),
        Reply::List(Ok(list_of("10", &["a"], None))),
        lagging(),
        Reply::List(Ok(list_of("10", &["a"], None))),
        lagging(),
        Reply::List(Ok(list_of("10", &["a"], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(7).await;
    assert_eq!(
        lw.gaps()[1..6],
        [
            800 * MS,
            Duration::ZERO,
            1600 * MS,
            Duration::ZERO,
            3200 * MS
        ],
        "a consistent list does not reset the backoff while the server lags"
    );
    assert_eq!(r.reflector.stats().stale_refusals, 3);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn consistent_list_older_than_the_cache_is_taken_and_counted() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![
            modified("a", "12"),
            error_event(410, "Expired", "gone"),
        ]),
        Reply::List(Err(gone())),
        // etcd restored from a backup: the consistent read is the truth.
        Reply::List(Ok(list_of("8", &["b"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(r.fifo.calls()[2], replace(&["b"], "8"));
    let stats = r.reflector.stats();
    assert_eq!((stats.consistent_rewinds, stats.stale_refusals), (1, 0));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn opaque_resource_versions_are_never_refused() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("zz", &["a"], None))),
        watch_open(vec![modified("a", "aa"), modified("a", "b9")]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&["a"], "zz"),
            Call::Update("a@aa".into()),
            Call::Update("a@b9".into())
        ]
    );
    assert_eq!(r.reflector.stats().stale_refusals, 0);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_older_than_the_cache_is_refused_and_streamed_again_consistently() {
    let lw = Scripted::new(vec![
        watch_open(vec![
            added("a", "9"),
            bookmark("10", true),
            modified("a", "20"),
            error_event(410, "Expired", "too old"),
        ]),
        // A lagging server streams an older state.
        watch_open(vec![added("a", "12"), bookmark("15", true)]),
        watch_open(vec![added("a", "20"), bookmark("21", true)]),
    ]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [ws(""), ws("20"), ws("")]);
    assert_eq!(r.reflector.stats().stale_refusals, 1);
    assert!(
        !r.fifo.calls().contains(&replace(&["a"], "15")),
        "the older state never reached the FIFO"
    );
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("21")
    );
    r.stop().await;
}

// ----- pagination -----

#[tokio::test(start_paused = true)]
async fn paginated_list_collects_every_page_at_the_first_pages_rv() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &["a", "b"], Some("t1")))),
        Reply::List(Ok(list_of("21", &["c", "d"], Some("t2")))),
        Reply::List(Ok(list_of("22", &["e"], None))),
    ]);
    let cfg = ReflectorConfig {
        list_params: ListParams::default().limit(2),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    lw.wait_requests(6).await;
    let cont = |t: &str| Req::List {
        rv: None,
        limit: Some(2),
        cont: Some(t.to_owned()),
    };
    assert_eq!(
        lw.requests()[2..],
        [l(Some("10"), Some(2)), cont("t1"), cont("t2"), w("20")]
    );
    assert_eq!(r.fifo.calls()[1], replace(&["a", "b", "c", "d", "e"], "20"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_one_full_list_without_limit() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &["a", "b"], Some("t1")))),
        Reply::List(Err(err(410, "Expired", "continue token too old"))),
        Reply::List(Ok(list_of("25", &["a", "b", "c"], None))),
    ]);
    let cfg = ReflectorConfig {
        list_params: ListParams::default().limit(2),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    lw.wait_requests(6).await;
    assert_eq!(
        lw.requests()[2..],
        [
            l(Some("10"), Some(2)),
            Req::List {
                rv: None,
                limit: Some(2),
                cont: Some("t1".into())
            },
            l(Some("10"), None),
            w("25"),
        ]
    );
    assert_eq!(r.fifo.calls()[1], replace(&["a", "b", "c"], "25"));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn once_the_first_list_came_back_paginated_later_relists_page_too() {
    let lw = Scripted::new(vec![
        // The first list at "0" comes in pages: the server's watch cache is off.
        Reply::List(Ok(list_of("10", &["a"], Some("t1")))),
        Reply::List(Ok(list_of("10", &["b"], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &["a", "b"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(
        lw.requests()[3],
        l(Some("10"), Some(500)),
        "the relist at a version pages too"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_whole_first_list_keeps_relists_at_a_version_unpaginated() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &["a"], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests()[2], l(Some("10"), None));
    r.stop().await;
}

// ----- watch errors -----

#[tokio::test(start_paused = true)]
async fn watch_429_backs_off_and_rewatches_without_relist() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(err(429, "TooManyRequests", "slow down"))),
        Reply::Watch(Err(err(429, "TooManyRequests", "slow down"))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [l(Some("0"), Some(500)), w("10"), w("10"), w("10")]
    );
    assert_eq!(lw.gaps()[1..], [800 * MS, 1600 * MS]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn connection_errors_back_off_and_rewatch_from_the_last_rv_without_relist() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(transport())),
        watch_open(vec![added("a", "11"), Err(transport()), added("b", "12")]),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [l(Some("0"), Some(500)), w("10"), w("10"), w("11")]
    );
    // The second failure follows an event, which started the backoff over.
    assert_eq!(lw.gaps()[1..], [800 * MS, 800 * MS]);
    assert_eq!(r.fifo.calls(), [replace(&[], "10"), add("a@11")]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn error_event_that_is_not_gone_nor_a_throttle_relists_after_backoff() {
    // A 500 StorageReadError (sent after an unsafe delete of a corrupt object): the watch
    // cycle ends and the cache is rebuilt from a list, as client-go's ListAndWatch does.
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["phantom"], None))),
        watch_open(vec![
            added("a", "11"),
            error_event(500, "StorageReadError", "corrupt object"),
        ]),
        Reply::List(Ok(list_of("12", &["a"], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("11"), None),
            w("12")
        ]
    );
    assert_eq!(lw.gaps()[1], 800 * MS, "after a backoff");
    assert_eq!(
        r.fifo.calls()[2],
        replace(&["a"], "12"),
        "the phantom is gone"
    );
    assert_eq!(r.reflector.stats().watch_errors, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn error_status_answering_a_watch_request_relists_after_backoff() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(err(503, "ServiceUnavailable", "try later"))),
        Reply::List(Ok(list_of("12", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("10"), None),
            w("12")
        ]
    );
    assert_eq!(lw.gaps()[1], 800 * MS);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn internal_error_event_relists_when_the_retry_window_is_off() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![error_event(500, "InternalError", "boom")]),
        Reply::List(Ok(list_of("12", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("10"), None),
            w("12")
        ]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn internal_error_event_rewatches_within_the_retry_window_then_relists() {
    let boom = || watch_open(vec![error_event(500, "InternalError", "boom")]);
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        boom(), // t = 0: the window opens
        boom(), // t = 0.8 s
        boom(), // t = 2.4 s
        boom(), // t = 5.6 s: past the 5 s window
        Reply::List(Ok(list_of("20", &[], None))),
        watch_open(vec![]),
    ]);
    let cfg = ReflectorConfig {
        max_internal_error_retry_duration: Duration::from_secs(5),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    lw.wait_requests(7).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            w("10"),
            w("10"),
            w("10"),
            l(Some("10"), None),
            w("20")
        ]
    );
    assert_eq!(lw.gaps()[1..5], [800 * MS, 1600 * MS, 3200 * MS, 6400 * MS]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn malformed_event_is_counted_and_the_watch_restarts_from_the_last_good_rv() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![
            added("a", "11"),
            Err(ListWatchError::Decode("expected a ConfigMap".into())),
            added("b", "12"),
        ]),
        watch_open(vec![added("b", "12")]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [l(Some("0"), Some(500)), w("10"), w("11")]);
    assert_eq!(
        r.fifo.calls(),
        [replace(&[], "10"), add("a@11"), add("b@12")]
    );
    assert_eq!(r.reflector.stats().decode_errors, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn forbidden_watch_ends_the_cycle_and_the_relist_reports_it() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(err(403, "Forbidden", "configmaps is forbidden"))),
        Reply::List(Err(err(403, "Forbidden", "configmaps is forbidden"))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(
        lw.requests(),
        [
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("10"), None),
            l(Some("10"), None)
        ]
    );
    let last = r.reflector.last_error().expect("an error is kept");
    assert!(matches!(*last, ReflectorError::List(_)));
    assert!(last.is_forbidden());
    assert!(last.to_string().contains("RBAC"), "{last}");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn very_short_watch_without_events_backs_off_instead_of_spinning() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_ending(vec![], Duration::ZERO),
        watch_ending(vec![], Duration::ZERO),
        watch_ending(vec![], Duration::ZERO),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(lw.requests()[1..], [w("10"), w("10"), w("10"), w("10")]);
    assert_eq!(lw.gaps()[1..], [800 * MS, 1600 * MS, 3200 * MS]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn gone_on_a_watch_resumed_after_a_very_short_one_relists_at_once() {
    // The history was compacted while no watch was open: the backoff was already taken
    // before the resumed watch, so the relist does not wait for another.
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_ending(vec![], Duration::ZERO),
        Reply::Watch(Err(gone())),
        Reply::List(Ok(list_of("20", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(5).await;
    assert_eq!(
        lw.requests()[1..],
        [w("10"), w("10"), l(Some("10"), None), w("20")]
    );
    assert_eq!(lw.gaps()[1..], [800 * MS, Duration::ZERO, Duration::ZERO]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn gone_on_the_first_watch_after_a_list_relists_after_a_backoff() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(gone())),
        Reply::List(Ok(list_of("20", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(4).await;
    assert_eq!(lw.requests()[1..], [w("10"), l(Some("10"), None), w("20")]);
    assert_eq!(lw.gaps()[1..], [800 * MS, Duration::ZERO]);
    r.stop().await;
}

// ----- backoff -----

#[tokio::test(start_paused = true)]
async fn backoff_doubles_from_800ms_and_caps_at_30s() {
    let mut replies = vec![Reply::List(Ok(list_of("10", &[], None)))];
    for _ in 0..9 {
        replies.push(Reply::Watch(Err(transport())));
    }
    let lw = Scripted::new(replies);
    let r = run(lw.clone(), config());
    lw.wait_requests(11).await;
    let ms: Vec<u128> = lw.gaps()[1..].iter().map(Duration::as_millis).collect();
    assert_eq!(
        ms,
        [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_with_jitter_stays_between_the_delay_and_twice_it() {
    let mut replies = vec![Reply::List(Ok(list_of("10", &[], None)))];
    for _ in 0..8 {
        replies.push(Reply::Watch(Err(transport())));
    }
    let lw = Scripted::new(replies);
    let r = run(lw.clone(), ReflectorConfig::default());
    lw.wait_requests(10).await;
    let mut base = 800 * MS;
    for gap in &lw.gaps()[1..] {
        // The delay lies in [base, 2 * base); tokio's timer fires on whole milliseconds, so
        // the gap observed may be rounded up by up to one.
        assert!(*gap >= base && *gap <= base * 2, "{gap:?} vs {base:?}");
        base = (base * 2).min(Duration::from_secs(30));
    }
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_resets_once_a_watch_delivers_events() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        // Back: an event, then the connection breaks again within seconds.
        watch_open(vec![added("a", "11"), Err(transport())]),
        Reply::Watch(Err(transport())),
        // And once more.
        watch_open(vec![added("b", "12"), Err(transport())]),
        Reply::Watch(Err(transport())),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(9).await;
    assert_eq!(
        lw.gaps()[1..8],
        [
            800 * MS,
            1600 * MS,
            3200 * MS,
            800 * MS,
            1600 * MS,
            800 * MS,
            1600 * MS
        ],
        "the delay grows while the server fails, and starts over once it delivers an event"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_resets_once_a_list_succeeds() {
    let lw = Scripted::new(vec![
        Reply::List(Err(transport())),
        Reply::List(Err(transport())),
        Reply::List(Err(transport())),
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(transport())),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(6).await;
    assert_eq!(
        lw.gaps(),
        [800 * MS, 1600 * MS, 3200 * MS, Duration::ZERO, 800 * MS],
        "the failed watch after the list waits the first delay, not 6.4 s"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn backoff_still_resets_after_two_quiet_minutes() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        // A watch that delivers nothing and lasts three minutes: no event, yet quiet.
        watch_ending(vec![], Duration::from_secs(180)),
        Reply::Watch(Err(transport())),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(6).await;
    assert_eq!(
        lw.gaps()[1..],
        [800 * MS, 1600 * MS, Duration::from_secs(180), 800 * MS]
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn never_spins_when_every_request_fails_at_once() {
    let mut replies = Vec::new();
    for _ in 0..200 {
        replies.push(Reply::List(Err(err(500, "InternalError", "boom"))));
    }
    let lw = Scripted::new(replies);
    let r = run(lw.clone(), ReflectorConfig::default());
    tokio::time::sleep(Duration::from_secs(600)).await;
    let n = lw.requests().len();
    // 0.8 + 1.6 + ... + 25.6 s, then at least 30 s each (jitter makes it up to 60 s).
    assert!((10..=25).contains(&n), "{n} lists in 10 minutes");
    assert!(lw.gaps().iter().all(|g| *g >= 800 * MS));
    r.stop().await;
}

// ----- streaming list -----

fn streaming() -> ReflectorConfig {
    ReflectorConfig {
        streaming_list: true,
        ..config()
    }
}

#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_at_the_initial_events_end_bookmark_and_keeps_watching() {
    let lw = Scripted::new(vec![watch_open(vec![
        added("a", "5"),
        added("b", "6"),
        modified("a", "7"),
        added("x", "8"),
        deleted("x", "9"),
        bookmark("9", false),
        bookmark("10", true),
        added("c", "11"),
    ])]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(1).await;
    assert_eq!(lw.requests(), [ws("")]);
    assert_eq!(r.fifo.calls(), [replace(&["a", "b"], "10"), add("c@11")]);
    let pushed = r.fifo.pushed.lock().unwrap().clone();
    assert_eq!(pushed[0].metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("11")
    );
    assert_eq!(r.reflector.stats().lists, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_falls_back_to_list_and_watch_when_the_server_rejects_it() {
    let lw = Scripted::new(vec![
        Reply::Watch(Err(err(422, "Invalid", "sendInitialEvents is forbidden"))),
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![error_event(410, "Expired", "too old")]),
        Reply::List(Ok(list_of("20", &["a"], None))),
    ]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(5).await;
    // Refused once: list and watch for the rest of the run.
    assert_eq!(
        lw.requests(),
        [
            ws(""),
            l(Some("0"), Some(500)),
            w("10"),
            l(Some("10"), None),
            w("20")
        ]
    );
    assert_eq!(lw.gaps()[0], Duration::ZERO);
    assert_eq!(r.reflector.stats().streaming_fallbacks, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_falls_back_when_the_bookmark_does_not_arrive_in_time() {
    let lw = Scripted::new(vec![
        watch_open(vec![added("a", "5")]),
        Reply::List(Ok(list_of("10", &["a"], None))),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = run_with(lw.clone(), streaming(), |r| {
        let seen = seen.clone();
        r.with_watch_error_handler(Arc::new(move |e: &ReflectorError| {
            seen.lock().unwrap().push(e.to_string());
        }))
    });
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [ws(""), l(Some("0"), Some(500)), w("10")]);
    assert_eq!(lw.gaps()[0], Duration::from_secs(60));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains("initial-events-end"), "{seen:?}");
    assert!(r.reflector.last_error().is_none(), "cleared by the list");
    assert_eq!(r.reflector.stats().streaming_fallbacks, 1);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_that_ends_without_the_bookmark_falls_back_to_list() {
    let lw = Scripted::new(vec![
        watch_ending(vec![added("a", "5")], Duration::from_secs(3)),
        Reply::List(Ok(list_of("10", &["a"], None))),
    ]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [ws(""), l(Some("0"), Some(500)), w("10")]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_relist_after_410_retries_with_a_consistent_read() {
    let lw = Scripted::new(vec![
        watch_open(vec![
            bookmark("10", true),
            error_event(410, "Expired", "too old"),
        ]),
        Reply::Watch(Err(gone())),
        watch_open(vec![added("a", "25"), bookmark("30", true)]),
    ]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(3).await;
    assert_eq!(lw.requests(), [ws(""), ws("10"), ws("")]);
    assert_eq!(lw.gaps(), [800 * MS, 1600 * MS]);
    assert_eq!(r.fifo.calls(), [replace(&[], "10"), replace(&["a"], "30")]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn streaming_list_retries_429_after_a_backoff() {
    let lw = Scripted::new(vec![
        Reply::Watch(Err(err(429, "TooManyRequests", "slow down"))),
        watch_open(vec![bookmark("10", true)]),
    ]);
    let r = run(lw.clone(), streaming());
    lw.wait_requests(2).await;
    assert_eq!(lw.requests(), [ws(""), ws("")]);
    assert_eq!(lw.gaps(), [800 * MS]);
    assert_eq!(r.fifo.calls(), [replace(&[], "10")]);
    r.stop().await;
}

// ----- resync -----

#[tokio::test(start_paused = true)]
async fn resync_calls_fifo_resync_every_period_without_contacting_the_server() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![]),
    ]);
    let cfg = ReflectorConfig {
        resync_period: Some(Duration::from_secs(10)),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    lw.wait_requests(2).await;
    tokio::time::sleep(Duration::from_secs(35)).await;
    let resyncs = r
        .fifo
        .calls()
        .iter()
        .filter(|c| **c == Call::Resync)
        .count();
    assert_eq!(resyncs, 3);
    assert_eq!(r.reflector.stats().resyncs, 3);
    assert_eq!(lw.requests().len(), 2);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_is_skipped_when_should_resync_says_no() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![]),
    ]);
    let cfg = ReflectorConfig {
        resync_period: Some(Duration::from_secs(10)),
        ..config()
    };
    let asked = Arc::new(AtomicUsize::new(0));
    let r = run_with(lw.clone(), cfg, |r| {
        let asked = asked.clone();
        r.with_should_resync(Arc::new(move || {
            // Yes every other time.
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 2 == 1
        }))
    });
    lw.wait_requests(2).await;
    tokio::time::sleep(Duration::from_secs(45)).await;
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 4);
    let resyncs = r
        .fifo
        .calls()
        .iter()
        .filter(|c| **c == Call::Resync)
        .count();
    assert_eq!(resyncs, 2);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_continues_while_the_watch_is_backing_off() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
        Reply::Watch(Err(transport())),
    ]);
    let cfg = ReflectorConfig {
        resync_period: Some(Duration::from_secs(5)),
        ..config()
    };
    let r = run(lw.clone(), cfg);
    // Watch failures at 0, 0.8, 2.4, 5.6, 12, 24.8 s; the next watch at 50.4 s.
    lw.wait_requests(8).await;
    let resyncs = r
        .fifo
        .calls()
        .iter()
        .filter(|c| **c == Call::Resync)
        .count();
    assert_eq!(resyncs, 10);
    r.stop().await;
}

// ----- transform, invalid objects -----

#[tokio::test(start_paused = true)]
async fn transform_is_applied_before_objects_reach_the_fifo() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &["a"], None))),
        watch_open(vec![added("b", "11"), modified("a", "12")]),
    ]);
    let r = run_with(lw.clone(), config(), |r| {
        r.with_transform(Arc::new(|mut o: ConfigMap| {
            o.metadata.managed_fields = None;
            o.data = Some([("transformed".to_owned(), "yes".to_owned())].into());
            o
        }))
    });
    lw.wait_requests(2).await;
    let pushed = r.fifo.pushed.lock().unwrap().clone();
    assert_eq!(pushed.len(), 3);
    assert!(
        pushed
            .iter()
            .all(|o| o.data.as_ref().is_some_and(|d| d["transformed"] == "yes"))
    );
    // The resource version is read before the transform.
    assert_eq!(
        r.reflector.last_sync_resource_version().as_deref(),
        Some("12")
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn objects_without_a_name_are_skipped_and_counted() {
    let mut list = list_of("10", &["a"], None);
    list.items.push(ConfigMap::default());
    let lw = Scripted::new(vec![
        Reply::List(Ok(list)),
        watch_open(vec![
            Ok(WatchEvent::Added(ConfigMap::default())),
            added("b", "11"),
        ]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    assert_eq!(r.fifo.calls(), [replace(&["a"], "10"), add("b@11")]);
    assert_eq!(r.reflector.stats().invalid_objects, 2);
    r.stop().await;
}

// ----- errors kept and reported -----

#[tokio::test(start_paused = true)]
async fn last_error_is_kept_until_a_list_succeeds_and_says_why() {
    let lw = Scripted::new(vec![
        Reply::List(Err(err(403, "Forbidden", "configmaps is forbidden"))),
        Reply::List(Err(err(
            404,
            "NotFound",
            "the server could not find the resource",
        ))),
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(1).await;
    assert!(r.reflector.last_error().unwrap().is_forbidden());
    assert_eq!(r.reflector.last_sync_resource_version(), None);
    lw.wait_requests(2).await;
    let last = r.reflector.last_error().unwrap();
    assert!(last.is_not_found());
    assert!(
        last.to_string().contains("CustomResourceDefinition"),
        "{last}"
    );
    lw.wait_requests(4).await;
    assert!(r.reflector.last_error().is_none());
    assert_eq!(r.reflector.stats().list_errors, 2);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_error_handler_sees_every_error_and_may_panic() {
    let lw = Scripted::new(vec![
        Reply::List(Err(err(500, "InternalError", "a"))),
        Reply::List(Ok(list_of("10", &[], None))),
        Reply::Watch(Err(err(429, "TooManyRequests", "b"))),
        watch_open(vec![error_event(410, "Expired", "c")]),
        Reply::List(Ok(list_of("20", &[], None))),
        watch_open(vec![]),
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = run_with(lw.clone(), config(), |r| {
        let seen = seen.clone();
        r.with_watch_error_handler(Arc::new(move |e: &ReflectorError| {
            seen.lock().unwrap().push(e.code());
            panic!("handler bug");
        }))
    });
    lw.wait_requests(6).await;
    assert_eq!(*seen.lock().unwrap(), [Some(500), Some(429), Some(410)]);
    assert_eq!(lw.requests()[5], w("20"));
    r.stop().await;
}

// ----- lifecycle -----

#[tokio::test(start_paused = true)]
async fn cancel_stops_run_promptly_even_during_a_backoff() {
    let lw = Scripted::new(vec![Reply::List(Err(err(500, "InternalError", "a")))]);
    let r = run(lw.clone(), config());
    lw.wait_requests(1).await;
    let before = Instant::now();
    r.stop().await;
    assert!(before.elapsed() < 800 * MS);
}

#[tokio::test(start_paused = true)]
async fn run_stops_when_the_fifo_is_closed() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_ending(vec![added("a", "11")], Duration::from_secs(5)),
        watch_open(vec![added("b", "12")]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    r.fifo.close();
    // Noticed before the next request, when the watch ends at 5 s.
    tokio::time::timeout(Duration::from_secs(6), r.task)
        .await
        .expect("run did not stop")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_second_concurrent_run_returns_at_once() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![]),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    tokio::time::timeout(
        Duration::from_secs(1),
        r.reflector.run(CancellationToken::new()),
    )
    .await
    .expect("second run returns at once");
    assert_eq!(lw.requests().len(), 2);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn run_again_resumes_from_the_last_synced_rv() {
    let lw = Scripted::new(vec![
        Reply::List(Ok(list_of("10", &[], None))),
        watch_open(vec![added("a", "11")]),
        Reply::List(Ok(list_of("12", &["a"], None))),
    ]);
    let r = run(lw.clone(), config());
    lw.wait_requests(2).await;
    let reflector = r.reflector.clone();
    r.stop().await;
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        async move { reflector.run(cancel).await }
    });
    lw.wait_requests(4).await;
    assert_eq!(lw.requests()[2..], [l(Some("11"), None), w("12")]);
    cancel.cancel();
    task.await.unwrap();
}

// ----- with the in-memory lister-watcher -----

fn mcm(name: &str, value: &str) -> ConfigMap {
    let mut o = cm(name, "");
    o.data = Some([("v".to_owned(), value.to_owned())].into());
    o
}

#[tokio::test(start_paused = true)]
async fn memory_source_changes_reach_the_fifo_in_order() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(mcm("a", "1"));
    let r = run(Arc::new(lw.clone()), config());
    eventually_within(PAUSED_PATIENCE, "the list", || !r.fifo.calls().is_empty()).await;
    lw.create(mcm("b", "1"));
    lw.update(mcm("a", "2"));
    let rv = lw.delete(&ObjectKey::new(Some("ns"), "b")).unwrap();
    eventually_within(PAUSED_PATIENCE, "the delete", || r.fifo.calls().len() == 4).await;
    assert_eq!(
        r.fifo.calls(),
        [
            replace(&["a"], "2"),
            add("b@3"),
            Call::Update("a@4".into()),
            Call::Delete("b@5".into())
        ]
    );
    assert_eq!(r.reflector.last_sync_resource_version(), Some(rv));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn memory_source_changes_while_the_watch_was_down_are_replayed_without_relist() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(mcm("a", "1"));
    let r = run(Arc::new(lw.clone()), config());
    eventually_within(PAUSED_PATIENCE, "the watch", || lw.open_watches() == 1).await;
    lw.fail_next_watch(transport());
    lw.close_watches();
    lw.create(mcm("b", "1"));
    eventually_within(PAUSED_PATIENCE, "the replay", || r.fifo.calls().len() == 2).await;
    assert_eq!(r.fifo.calls()[1], add("b@3"));
    assert_eq!(lw.list_calls(), 1);
    assert_eq!(lw.watch_calls(), 3);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn memory_source_compacted_while_the_watch_was_down_relists_the_current_state() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(mcm("a", "1"));
    lw.create(mcm("b", "1"));
    let r = run(Arc::new(lw.clone()), config());
    eventually_within(PAUSED_PATIENCE, "the watch", || lw.open_watches() == 1).await;
    lw.fail_next_watch(transport());
    lw.close_watches();
    lw.delete(&ObjectKey::new(Some("ns"), "b"));
    lw.create(mcm("c", "1"));
    lw.compact();
    eventually_within(PAUSED_PATIENCE, "the relist", || r.fifo.calls().len() == 2).await;
    assert_eq!(r.fifo.calls()[1], replace(&["a", "c"], "5"));
    let lists: Vec<_> = lw
        .requests()
        .into_iter()
        .filter(|q| q.is_list())
        .map(|q| q.resource_version().map(str::to_owned))
        .collect();
    assert_eq!(lists, [Some("0".to_owned()), Some("3".to_owned())]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn memory_source_streaming_list_syncs_then_follows_changes() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.create(mcm("a", "1"));
    let r = run(Arc::new(lw.clone()), streaming());
    eventually_within(PAUSED_PATIENCE, "the streaming list", || {
        !r.fifo.calls().is_empty()
    })
    .await;
    lw.create(mcm("b", "1"));
    eventually_within(PAUSED_PATIENCE, "the add", || r.fifo.calls().len() == 2).await;
    assert_eq!(r.fifo.calls(), [replace(&["a"], "2"), add("b@3")]);
    assert_eq!((lw.list_calls(), lw.watch_calls()), (0, 1));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn memory_source_without_streaming_support_falls_back_to_list() {
    let lw = MemoryListerWatcher::<ConfigMap>::new();
    lw.set_streaming_support(informer_testing::StreamingSupport::Ignored);
    lw.create(mcm("a", "1"));
    let r = run(Arc::new(lw.clone()), streaming());
    eventually_within(PAUSED_PATIENCE, "the fallback list", || {
        !r.fifo.calls().is_empty()
    })
    .await;
    assert_eq!(r.fifo.calls(), [replace(&["a"], "2")]);
    assert_eq!(lw.list_calls(), 1);
    assert_eq!(r.reflector.stats().streaming_fallbacks, 1);
    r.stop().await;
}

// ----- a model test: random changes and faults, the cache ends equal to the source -----

mod model {
    use std::collections::BTreeMap;

    use informer_core::{DeltaFifo, RealFifo, Store, ThreadSafeStore};
    use proptest::prelude::*;

    use super::*;

    #[derive(Clone, Copy, Debug)]
    enum Fault {
        Internal,
        TooManyRequests,
        Transport,
        Gone,
        TooLarge,
        Malformed,
    }

    impl Fault {
        fn error(self) -> ListWatchError {
            match self {
                Fault::Internal => err(500, "InternalError", "injected"),
                Fault::TooManyRequests => err(429, "TooManyRequests", "injected"),
                Fault::Transport => transport(),
                Fault::Gone => gone(),
                Fault::TooLarge => too_large(),
                Fault::Malformed => ListWatchError::Decode("injected".into()),
            }
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Create(u8),
        Update(u8),
        Delete(u8),
        CloseWatches,
        Compact,
        FailList(Fault),
        FailWatch(Fault),
        StreamError(Fault),
        GoneEvent,
        Bookmark,
        Wait(u16),
    }

    fn fault() -> impl Strategy<Value = Fault> {
        prop_oneof![
            Just(Fault::Internal),
            Just(Fault::TooManyRequests),
            Just(Fault::Transport),
            Just(Fault::Gone),
            Just(Fault::TooLarge),
            Just(Fault::Malformed),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u8..6).prop_map(Op::Create),
            4 => (0u8..6).prop_map(Op::Update),
            3 => (0u8..6).prop_map(Op::Delete),
            1 => Just(Op::CloseWatches),
            1 => Just(Op::Compact),
            1 => fault().prop_map(Op::FailList),
            1 => fault().prop_map(Op::FailWatch),
            1 => fault().prop_map(Op::StreamError),
            1 => Just(Op::GoneEvent),
            1 => Just(Op::Bookmark),
            3 => (0u16..2000).prop_map(Op::Wait),
        ]
    }

    fn state(objects: impl IntoIterator<Item = Arc<ConfigMap>>) -> BTreeMap<String, String> {
        objects
            .into_iter()
            .map(|o| {
                let (name, rv) = name_rv(&o)
                    .split_once('@')
                    .map(|(n, r)| (n.to_owned(), r.to_owned()))
                    .unwrap();
                (name, rv)
            })
            .collect()
    }

    /// Applies what the FIFO pops to `store`, as an informer does.
    fn apply(store: &ThreadSafeStore<ConfigMap>, batch: Vec<Delta<ConfigMap>>) {
        informer_core::apply::apply_deltas(store, batch, false, &mut |_| {}).unwrap();
    }

    async fn scenario(ops: Vec<Op>, streaming: bool, delta_fifo: bool) {
        let lw = MemoryListerWatcher::<ConfigMap>::new();
        lw.set_history_limit(8);
        let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
        let known = Some(store.clone() as Arc<dyn Store<ConfigMap>>);
        let fifo: Arc<dyn Fifo<ConfigMap>> = if delta_fifo {
            Arc::new(DeltaFifo::new(known))
        } else {
            Arc::new(RealFifo::new(known))
        };
        let consumer = tokio::spawn({
            let (fifo, store) = (fifo.clone(), store.clone());
            async move { while fifo.pop(&mut |batch| apply(&store, batch)).await.is_ok() {} }
        });
        let config = ReflectorConfig {
            streaming_list: streaming,
            resync_period: Some(Duration::from_secs(7)),
            ..ReflectorConfig::default()
        };
        let reflector = Arc::new(Reflector::new(Arc::new(lw.clone()), fifo.clone(), config));
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (reflector, cancel) = (reflector.clone(), cancel.clone());
            async move { reflector.run(cancel).await }
        });
        let name = |i: u8| format!("o{i}");
        let mut version = 0;
        for op in ops {
            match op {
                Op::Create(i) => {
                    let _ = lw.try_create(mcm(&name(i), "0"));
                }
                Op::Update(i) => {
                    version += 1;
                    let _ = lw.try_update(mcm(&name(i), &version.to_string()));
                }
                Op::Delete(i) => {
                    lw.delete(&ObjectKey::new(Some("ns"), &name(i)));
                }
                Op::CloseWatches => lw.close_watches(),
                Op::Compact => lw.compact(),
                Op::FailList(f) => lw.fail_next_list(f.error()),
                Op::FailWatch(f) => lw.fail_next_watch(f.error()),
                Op::StreamError(f) => lw.send_stream_error(|| f.error()),
                Op::GoneEvent => lw.send_error_event(*status(410, "Expired", "too old")),
                Op::Bookmark => lw.bookmark(),
                Op::Wait(ms) => tokio::time::sleep(Duration::from_millis(u64::from(ms))).await,
            }
            tokio::task::yield_now().await;
        }
        // Quiet: every queued failure is used up and every backoff has passed.
        tokio::time::sleep(Duration::from_secs(15 * 60)).await;
        let want = state(lw.objects());
        let got = state(store.list());
        assert_eq!(got, want, "the cache differs from the source");
        assert_eq!(
            reflector.last_sync_resource_version(),
            Some(lw.resource_version()),
            "the reflector is not at the source's latest version"
        );
        cancel.cancel();
        run.await.unwrap();
        fifo.close();
        consumer.await.unwrap();
    }

    proptest! {
        // PROPTEST_CASES=10000 runs many more.
        #![proptest_config(ProptestConfig {
            cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(96),
            ..ProptestConfig::default()
        })]

        #[test]
        fn cache_fed_by_the_reflector_converges_to_the_source_despite_faults(
            ops in proptest::collection::vec(op(), 0..40),
            streaming in any::<bool>(),
            delta_fifo in any::<bool>(),
        ) {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .start_paused(true)
                .build()
                .unwrap()
                .block_on(scenario(ops, streaming, delta_fifo));
        }
    }
}

/// Watches that are always ready: each yields one new object at once, then ends.
struct EverReady {
    watches: AtomicUsize,
}

#[async_trait]
impl ListerWatcher<ConfigMap> for EverReady {
    async fn list(
        &self,
        _params: &ListParams,
    ) -> Result<ObjectList<Arc<ConfigMap>>, ListWatchError> {
        let list = list_of("1", &[], None);
        Ok(ObjectList {
            types: list.types,
            metadata: list.metadata,
            items: Vec::new(),
        })
    }

    async fn watch(
        &self,
        _params: &WatchParams,
        _resource_version: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        let n = self
            .watches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 2;
        let event = added(&format!("o{n}"), &n.to_string()).map(shared);
        Ok(futures::stream::iter([event]).boxed())
    }
}

#[test]
fn a_source_that_is_always_ready_leaves_the_thread_to_other_tasks() {
    // Every watch is ready at once and ends after one event, so the reflector re-watches
    // without ever waiting: it must still yield, or on a one-thread runtime nothing else
    // runs again.
    let stopped = crate::test_support::on_one_thread(
        "the test's task ran again while the reflector re-watched",
        || async {
            let lw = Arc::new(EverReady {
                watches: AtomicUsize::new(0),
            });
            let running = run(lw.clone(), config());
            // This task gets the thread back while the reflector re-watches.
            while lw.watches.load(std::sync::atomic::Ordering::Relaxed) < 10_000 {
                tokio::time::sleep(MS).await;
            }
            running.cancel.cancel();
            tokio::time::timeout(Duration::from_secs(10), running.task)
                .await
                .is_ok()
        },
    );
    assert!(stopped, "the reflector stopped once cancelled");
}
