//! Workloads I1 and M1 of `benches/workloads/WORKLOADS.md` (plus an end-to-end variant of I1),
//! side by side with kube-runtime.
//!
//! Every measurement that reports memory runs in its own child process (this binary
//! re-executed with `INFORMER_BENCH_JOB=<job>`), so that one implementation's peak or
//! leftovers never show in another's figures; the parent prints the table. Then criterion
//! measures a reduced I1 in-process (`cargo bench --bench informer -- <filter>` to pick).
//!
//! # I1: informer pipeline in memory
//! The source is a memory-backed `ListerWatcher` exactly as the workload describes: a list of
//! the first 10,000 pods (resourceVersion 10000), then 200,000 watch events: event `j` is a
//! MODIFIED of pod `j % 10000` with resourceVersion `10000 + j` and label `rev=<j>`, except
//! that every 100th is a DELETED of that pod, followed (as event `j + 1`) by an ADDED of it.
//! The source stream is cooperative (`tokio::task::consume_budget` per item, as every tokio
//! socket and channel is), so it behaves like a watch whose data is always ready.
//!
//! - **informer** (this project): `SharedIndexInformer` with the defaults (`ThreadSafeStore`,
//!   `RealFifo`), two indexes (the built-in namespace index and `spec.nodeName`), three
//!   handlers on their own buffers and tasks: two count, the third puts the object's key on a
//!   `WorkQueue` (rate-limited, client-go's default controller limiter) drained by 2 workers
//!   that look the key up in the cache.
//! - **kube-runtime**, its closest equivalent, which is what `Controller::new` builds:
//!   `reflector(writer, <watcher-shaped stream of the same events>)`, whose items go through
//!   one closure that does the two counting jobs and turns applied objects into
//!   `ReconcileRequest`s (what `applied_objects()` + `trigger_self` do), into
//!   `kube::runtime::applier` with `concurrency(2)`; the applier deduplicates keys in its
//!   scheduler, looks each one up in the reflector's store and runs the reconciler on a
//!   spawned task (exactly as `Controller::run` does; `Controller::for_stream` itself needs an
//!   unstable kube feature). kube-runtime has no secondary indexes and no per-handler
//!   buffers: its counting runs inline in the stream, which flatters it.
//!
//! Timing starts before the informer starts and ends when every handler has seen all
//! 210,000 notifications (10,000 initial adds + 200,000 events) and the queue is drained
//! (for kube-runtime: the applier has finished every reconcile after its input ended).
//! The reported rate is the 200,000 watch events over that whole time (the list is timed,
//! not counted). The prebuilt variant runs 5 times per implementation, each run in a fresh
//! process, the two implementations alternating, and reports the median (the machine is
//! shared; the load average is printed at the start and the end). Fresh processes, because
//! later runs in one process are slower than the first for both (the memory freed by a run
//! comes back split into small pages), and mixing them widens the spread.
//!
//! Variants: "prebuilt" (every object decoded before timing; the events stay alive until
//! timing ends: since a watch event owns its object, the first counting job keeps every
//! object it is given (one `Arc` clone, or for kube-runtime the owned object, pushed on a
//! pre-sized `Vec`) and they are dropped after timing, so freeing replaced versions is not
//! timed) and "on the fly" (the source decodes each `WatchEvent` from its JSON line as it
//! sends it, and the list from its lines when listed; the line itself is assembled from a
//! per-pod template, about 1 µs; replaced versions are freed inside the timing).
//!
//! # I1 end to end
//! The same pipelines over HTTP: the in-process `TestApiServer` holds the 10,000 pods; this
//! project's informer uses `KubeListerWatcher` over a `kube::Api<Pod>`, kube-runtime uses its
//! `watcher` (default config) on the same kind of server. Once every handler has the list,
//! a producer thread applies 20,000 events (the same pattern; 20,000 rather than 200,000 to
//! keep the run short) directly to the server's store, which streams them to the watch.
//! Reported: the list phase, and the watch events per second from the producer's start until
//! every handler has seen every event and the queue is drained (median of 3 runs, each on a
//! fresh server). The server runs in the same process and shares the two cores, for both; its
//! JSON encoding and the client's decoding dominate.
//!
//! # M1: memory per cached object
//! 100,000 pods, list only: the source decodes them from their JSON lines when listed
//! (the lines are in memory before and after, so they cancel out); resident memory after sync
//! minus resident memory before the informer started, over 100,000. With and without dropping
//! `managedFields`, for this project's `ThreadSafeStore` and `CompactStore` (with its
//! per-read cost: a `get` of an object not in its hot cache) and kube-runtime's reflector
//! store.
//!
//! Each source decodes as its implementation's client does: kube-runtime's with
//! `serde_json` (kube's client), this project's with `JsonDecoder` (what `KubeListerWatcher`
//! uses), which skips managed fields while decoding when they are dropped (as
//! `KubeListerWatcher::drop_managed_fields` does; the informer factory turns it on with
//! `drop_managed_fields(true)`), the informer's transform dropping them as well. A third
//! row feeds `ThreadSafeStore` from a `serde_json` source (a `ListerWatcher` of one's own),
//! to show what the decoder saves: `serde_json` grows vectors by doubling and the spare
//! capacity stays in the cache (kube-runtime's store caches a clone of each object, which
//! has none).
//!
//! In I1 "on the fly" too, each side decodes as its client does.
//! These children run with `MIMALLOC_PURGE_DELAY=0`, so that freed pages go back to the OS at
//! once and resident memory is what is live (plus fragmentation).
//!
//! The global allocator is mimalloc for every implementation; every pipeline runs on a
//! multi-threaded tokio runtime with 2 workers (`INFORMER_BENCH_RUNTIME=current_thread` to
//! compare with one thread).
//!
//! # Profiling
//! Run one job under `perf` with only the timed part recorded:
//! `mkfifo /tmp/ctl; INFORMER_BENCH_PERF_CTL=/tmp/ctl INFORMER_BENCH_JOB=i1-ours-prebuilt
//! perf record --control fifo:/tmp/ctl -D -1 -g target/release/deps/informer-<hash>`.
//! Jobs: `i1-{ours,kube}-{prebuilt,onthefly}`, `e2e-{ours,kube}`,
//! `m1-{ours,serde,compact,kube}-{mf,nomf}`, `probe-decode`.
//! On a machine without hardware counters (or a shared one), count instructions of the timed
//! part with callgrind instead, on fewer events and one run:
//! `INFORMER_BENCH_CALLGRIND=1 INFORMER_BENCH_EVENTS=20000 INFORMER_BENCH_RUNS=1
//! INFORMER_BENCH_JOB=i1-ours-prebuilt valgrind --tool=callgrind --collect-atstart=no
//! target/release/deps/informer-<hash>`.

mod support;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use criterion::Criterion;
use futures::stream::{self, BoxStream};
use futures::{FutureExt, Stream, StreamExt};
use informer::lister_watcher::{
    ListParams, ListWatchError, ListerWatcher, ObjectList, WatchEvent, WatchParams, WatchStream,
};
use informer::prelude::*;
use informer::store::index_fn;
use informer_runtime::compact_store::CompactStore;
use informer_runtime::informer::{CancellationToken, SharedIndexInformer};
use informer_runtime::lister_watcher::{JsonDecoder, KubeListerWatcher};
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::core::{ListMeta, TypeMeta};
use kube::runtime::controller::{Action, ReconcileRequest};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt, applier, watcher};
use serde_json::Value;
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Pods in the I1 list.
const LISTED: usize = 10_000;
/// Watch events in I1.
const EVENTS: usize = 200_000;
/// Watch events in the end-to-end variant.
const E2E_EVENTS: usize = 20_000;
/// Pods in M1.
const M1_PODS: usize = 100_000;
/// Events in the reduced I1 criterion measures.
const CRITERION_EVENTS: usize = 20_000;
/// Runs of the prebuilt I1 variant per implementation, each in a fresh process (the median
/// is reported).
const PREBUILT_RUNS: usize = 5;
/// Runs of the end-to-end variant per implementation (the median is reported).
const E2E_RUNS: usize = 3;
/// Workers draining the queue.
const WORKERS: usize = 2;
/// The child process's job, when set.
const JOB_VAR: &str = "INFORMER_BENCH_JOB";
/// For profiling a child job: the number of I1 watch events (instead of [`EVENTS`]).
const EVENTS_VAR: &str = "INFORMER_BENCH_EVENTS";
/// For profiling a child job: the number of prebuilt I1 runs (instead of [`PREBUILT_RUNS`]).
const RUNS_VAR: &str = "INFORMER_BENCH_RUNS";
/// For profiling: the control FIFO of `perf record --control fifo:<path> -D -1`; the timed
/// part of each pipeline run enables the profiler and disables it at the end.
const PERF_CTL_VAR: &str = "INFORMER_BENCH_PERF_CTL";
/// For profiling: set when the job runs under callgrind (see [`perf_control`]).
const CALLGRIND_VAR: &str = "INFORMER_BENCH_CALLGRIND";
/// client-go's informer on I1, measured on this machine (from the issue).
const CLIENT_GO_I1: f64 = 146_000.0;
/// client-go's live heap per cached pod, measured on this machine (from the issue).
const CLIENT_GO_M1: f64 = 11_800.0;

// ---------- the workload ----------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Modified,
    Deleted,
    Added,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Modified => "MODIFIED",
            Kind::Deleted => "DELETED",
            Kind::Added => "ADDED",
        }
    }
}

/// Event `j` of I1: what happens to which pod.
fn event(j: usize) -> (Kind, usize) {
    if j.is_multiple_of(100) {
        (Kind::Deleted, j % LISTED)
    } else if j % 100 == 1 && j > 0 {
        (Kind::Added, (j - 1) % LISTED)
    } else {
        (Kind::Modified, j % LISTED)
    }
}

fn resource_version(j: usize) -> String {
    (LISTED + j).to_string()
}

/// Pod `base` as event `j` sends it.
fn event_pod(base: &Pod, j: usize) -> Pod {
    let mut pod = base.clone();
    pod.metadata.resource_version = Some(resource_version(j));
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("rev".to_owned(), j.to_string());
    pod
}

/// A pod's JSON line cut around its resourceVersion value and its labels' opening brace, so
/// that event `j`'s line is assembled without parsing.
struct Template {
    head: String,
    middle: String,
    tail: String,
}

impl Template {
    fn new(line: &str) -> Self {
        let rv_key = "\"resourceVersion\":\"";
        let rv_start = line.find(rv_key).expect("pods have a resourceVersion") + rv_key.len();
        let rv_end = rv_start + line[rv_start..].find('"').expect("closing quote");
        let labels_key = "\"labels\":{";
        let labels = line.find(labels_key).expect("pods have labels") + labels_key.len();
        assert!(
            labels > rv_end,
            "gen_pods.py writes labels after resourceVersion"
        );
        Self {
            head: line[..rv_start].to_owned(),
            middle: line[rv_end..labels].to_owned(),
            tail: line[labels..].to_owned(),
        }
    }

    /// Event `j` as a watch event line.
    fn render(&self, kind: Kind, j: usize) -> String {
        let mut out =
            String::with_capacity(self.head.len() + self.middle.len() + self.tail.len() + 64);
        out.push_str("{\"type\":\"");
        out.push_str(kind.as_str());
        out.push_str("\",\"object\":");
        out.push_str(&self.head);
        out.push_str(&resource_version(j));
        out.push_str(&self.middle);
        out.push_str("\"rev\":\"");
        out.push_str(&j.to_string());
        out.push_str("\",");
        out.push_str(&self.tail);
        out.push('}');
        out
    }
}

/// How a source decodes JSON: as each implementation's own client does.
#[derive(Clone, Copy, Debug)]
enum Decoding {
    /// `serde_json`, as kube's client decodes lists and watch events.
    SerdeJson,
    /// This project's `JsonDecoder`, as `KubeListerWatcher` decodes them; with
    /// `skip_managed_fields` as it does when managed fields are dropped
    /// (`KubeListerWatcher::drop_managed_fields`, set by the informer factory).
    Library { skip_managed_fields: bool },
}

impl Decoding {
    fn decoder(self) -> Decoder {
        match self {
            Decoding::SerdeJson => Decoder::SerdeJson,
            Decoding::Library {
                skip_managed_fields,
            } => Decoder::Library(
                JsonDecoder::new().skip_managed_fields(skip_managed_fields),
                Vec::new(),
            ),
        }
    }
}

/// A [`Decoding`] with its state (the library decoder's buffers, and the byte buffer a
/// line is copied into, since it decodes in place as it does from a response body).
enum Decoder {
    SerdeJson,
    Library(JsonDecoder, Vec<u8>),
}

impl Decoder {
    fn decode<T: serde::de::DeserializeOwned>(&mut self, line: &str) -> T {
        match self {
            Decoder::SerdeJson => serde_json::from_str(line).expect("valid JSON"),
            Decoder::Library(decoder, buffer) => {
                buffer.clear();
                buffer.extend_from_slice(line.as_bytes());
                decoder.decode(buffer).expect("valid JSON")
            }
        }
    }
}

/// Where the I1 events come from.
enum Events {
    /// Decoded before timing.
    Prebuilt(Vec<(Kind, Pod)>),
    /// Decoded from their lines as they are sent.
    OnTheFly(Arc<Vec<Template>>, usize, Decoding),
}

impl Events {
    /// Builds the events on two threads (building is not timed; this only shortens the run).
    fn prebuilt(base: &[Pod], count: usize) -> Self {
        let build = |range: std::ops::Range<usize>| -> Vec<(Kind, Pod)> {
            range
                .map(|j| {
                    let (kind, p) = event(j);
                    (kind, event_pod(&base[p], j))
                })
                .collect()
        };
        let half = count / 2;
        let (mut first, second) = std::thread::scope(|s| {
            let second = s.spawn(|| build(half..count));
            (build(0..half), second.join().expect("builder thread"))
        });
        first.extend(second);
        Events::Prebuilt(first)
    }

    fn templates(lines: &[String]) -> Arc<Vec<Template>> {
        Arc::new(lines.iter().map(|l| Template::new(l)).collect())
    }

    /// The events as `(kind, pod)`, cooperatively (one unit of tokio's budget per event).
    fn into_stream(self) -> BoxStream<'static, (Kind, Pod)> {
        match self {
            Events::Prebuilt(events) => cooperative(events.into_iter()).boxed(),
            Events::OnTheFly(templates, count, decoding) => {
                let mut decoder = decoding.decoder();
                cooperative((0..count).map(move |j| {
                    let (kind, p) = event(j);
                    let line = templates[p].render(kind, j);
                    match decoder.decode::<WatchEvent<Pod>>(&line) {
                        WatchEvent::Added(pod)
                        | WatchEvent::Modified(pod)
                        | WatchEvent::Deleted(pod) => (kind, pod),
                        _ => unreachable!("the templates render objects"),
                    }
                }))
                .boxed()
            }
        }
    }
}

/// Where the listed pods come from.
enum Listed {
    Prebuilt(Vec<Pod>),
    /// Decoded when listed.
    Lines(Arc<Vec<String>>, Decoding),
}

impl Listed {
    fn into_pods(self) -> Vec<Pod> {
        match self {
            Listed::Prebuilt(pods) => pods,
            Listed::Lines(lines, decoding) => {
                let mut decoder = decoding.decoder();
                lines.iter().map(|l| decoder.decode(l)).collect()
            }
        }
    }

    /// The pods one by one, decoded as they are sent.
    fn into_stream(self) -> BoxStream<'static, Pod> {
        match self {
            Listed::Prebuilt(pods) => cooperative(pods.into_iter()).boxed(),
            Listed::Lines(lines, decoding) => {
                let n = lines.len();
                let mut decoder = decoding.decoder();
                cooperative((0..n).map(move |i| decoder.decode(&lines[i]))).boxed()
            }
        }
    }
}

/// Yields the items of `iter`, spending one unit of tokio's cooperative budget on each.
fn cooperative<T: Send + 'static>(
    iter: impl Iterator<Item = T> + Send + 'static,
) -> impl Stream<Item = T> + Send + 'static {
    stream::unfold(iter, |mut iter| async move {
        tokio::task::consume_budget().await;
        iter.next().map(|item| (item, iter))
    })
}

// ---------- this project's side ----------

/// The memory-backed `ListerWatcher` of I1 and M1: one list, then one watch that sends the
/// events and then stays open.
struct MemorySource {
    list: Mutex<Option<Listed>>,
    events: Mutex<Option<Events>>,
}

impl MemorySource {
    fn new(list: Listed, events: Option<Events>) -> Self {
        Self {
            list: Mutex::new(Some(list)),
            events: Mutex::new(events),
        }
    }
}

/// What `#[async_trait]` makes of an `async fn` (the macro crate is not a dependency here).
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl ListerWatcher<Pod> for MemorySource {
    fn list<'s, 'p, 'f>(
        &'s self,
        _params: &'p ListParams,
    ) -> BoxFuture<'f, Result<ObjectList<Pod>, ListWatchError>>
    where
        's: 'f,
        'p: 'f,
        Self: 'f,
    {
        let listed = take(&self.list).expect("the benchmark source is listed once (no relist)");
        Box::pin(std::future::ready(Ok(ObjectList {
            types: TypeMeta {
                api_version: "v1".into(),
                kind: "PodList".into(),
            },
            metadata: ListMeta {
                resource_version: Some(LISTED.to_string()),
                ..ListMeta::default()
            },
            items: listed.into_pods(),
        })))
    }

    fn watch<'s, 'p, 'r, 'f>(
        &'s self,
        _params: &'p WatchParams,
        _resource_version: &'r str,
    ) -> BoxFuture<'f, Result<WatchStream<Pod>, ListWatchError>>
    where
        's: 'f,
        'p: 'f,
        'r: 'f,
        Self: 'f,
    {
        let events: WatchStream<Pod> = match take(&self.events) {
            Some(events) => events
                .into_stream()
                .map(|(kind, pod)| {
                    Ok(match kind {
                        Kind::Modified => WatchEvent::Modified(pod),
                        Kind::Deleted => WatchEvent::Deleted(pod),
                        Kind::Added => WatchEvent::Added(pod),
                    })
                })
                .chain(stream::pending())
                .boxed(),
            None => stream::pending().boxed(),
        };
        Box::pin(std::future::ready(Ok(events)))
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// Counts notifications; releases one permit of `done` when it has seen `target`.
struct Counter {
    seen: AtomicUsize,
    target: usize,
    done: Arc<Semaphore>,
}

impl Counter {
    fn new(target: usize, done: &Arc<Semaphore>) -> Self {
        Self {
            seen: AtomicUsize::new(0),
            target,
            done: done.clone(),
        }
    }

    fn tick(&self) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target {
            self.done.add_permits(1);
        }
    }
}

/// Keeps what it is given until dropped (the prebuilt variant's "events stay alive").
struct Keeper<T>(Option<Mutex<Vec<T>>>);

impl<T> Keeper<T> {
    fn new(keep: bool, capacity: usize) -> Self {
        Self(keep.then(|| Mutex::new(Vec::with_capacity(capacity))))
    }

    fn keep(&self, item: impl FnOnce() -> T) {
        if let Some(kept) = &self.0 {
            kept.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(item());
        }
    }
}

/// Handler 1 and 2: count (handler 1 also counts initial adds apart, and keeps objects alive
/// in the prebuilt variant).
struct CountingHandler {
    counter: Counter,
    initial: Option<Counter>,
    keeper: Keeper<Arc<Pod>>,
}

impl Handler<Pod> for CountingHandler {
    fn on_add(&self, obj: &Arc<Pod>, initial: bool) {
        self.keeper.keep(|| obj.clone());
        if initial && let Some(c) = &self.initial {
            c.tick();
        }
        self.counter.tick();
    }
    fn on_update(&self, _old: &Arc<Pod>, new: &Arc<Pod>) {
        self.keeper.keep(|| new.clone());
        self.counter.tick();
    }
    fn on_delete(&self, _deleted: &Deleted<Pod>) {
        self.counter.tick();
    }
}

/// Handler 3: the library's `EnqueueKeys` (the object's key onto the workqueue; keys are
/// collected during a run of notifications and queued with one `add_batch` when the informer
/// flushes the handler), counted: a notification counts as seen once its key is queued.
struct EnqueueingHandler {
    counter: Counter,
    unflushed: AtomicUsize,
    enqueue: EnqueueKeys<Pod>,
}

impl Handler<Pod> for EnqueueingHandler {
    fn on_add(&self, obj: &Arc<Pod>, initial: bool) {
        self.enqueue.on_add(obj, initial);
        self.unflushed.fetch_add(1, Ordering::Relaxed);
    }
    fn on_update(&self, old: &Arc<Pod>, new: &Arc<Pod>) {
        self.enqueue.on_update(old, new);
        self.unflushed.fetch_add(1, Ordering::Relaxed);
    }
    fn on_delete(&self, deleted: &Deleted<Pod>) {
        self.enqueue.on_delete(deleted);
        self.unflushed.fetch_add(1, Ordering::Relaxed);
    }
    fn flush(&self) {
        self.enqueue.flush();
        for _ in 0..self.unflushed.swap(0, Ordering::Relaxed) {
            self.counter.tick();
        }
    }
}

/// Timings of one run of the pipeline.
#[derive(Default)]
struct PipelineRun {
    /// From start until every handler has the list (end to end only).
    listed: Duration,
    /// From start until everything was handled and the queue drained.
    total: Duration,
}

/// Runs this project's I1 pipeline over `lw` until every handler has seen `listed + events`
/// notifications and the queue is drained. `produce` is called once every handler has the
/// list (the end-to-end variant starts its producer there).
async fn ours_pipeline(
    lw: Arc<dyn ListerWatcher<Pod>>,
    listed: usize,
    events: usize,
    keep: bool,
    produce: impl FnOnce(),
) -> PipelineRun {
    let total = listed + events;
    let informer = SharedIndexInformer::builder(lw).build();
    informer
        .add_indexers([("node".to_owned(), index_fn(support::node_of))].into())
        .expect("a fresh index name");
    let queue = Arc::new(WorkQueue::<ObjectKey>::new());
    let listed_done = Arc::new(Semaphore::new(0));
    let all_done = Arc::new(Semaphore::new(0));
    for i in 0..2 {
        informer.add_handler(
            CountingHandler {
                counter: Counter::new(total, &all_done),
                // "The list is through" is judged by handler 1.
                initial: (i == 0).then(|| Counter::new(listed, &listed_done)),
                keeper: Keeper::new(keep && i == 0, total),
            },
            None,
        );
    }
    informer.add_handler(
        EnqueueingHandler {
            counter: Counter::new(total, &all_done),
            unflushed: AtomicUsize::new(0),
            enqueue: EnqueueKeys::new(queue.clone()),
        },
        None,
    );

    let start = Instant::now();
    perf_control("enable");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, cache) = (queue.clone(), informer.indexer());
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    std::hint::black_box(cache.get(&key));
                    queue.done(&key);
                }
            })
        })
        .collect();
    let _ = listed_done.acquire().await.expect("open");
    let listed_at = start.elapsed();
    produce();
    let _ = all_done.acquire_many(3).await.expect("open");
    queue.shut_down_with_drain(true).await;
    for w in workers {
        w.await.expect("worker");
    }
    let elapsed = start.elapsed();
    perf_control("disable");
    cancel.cancel();
    run.await
        .expect("informer task")
        .expect("informer runs once");
    PipelineRun {
        listed: listed_at,
        total: elapsed,
    }
}

// ---------- kube-runtime's side ----------

type KubeEvent = Result<watcher::Event<Pod>, watcher::Error>;

/// The I1 source as kube-runtime's watcher would emit it: `Init`, one `InitApply` per listed
/// pod, `InitDone`, then `Apply`/`Delete` per event.
fn kube_source(listed: Listed, events: Events) -> BoxStream<'static, KubeEvent> {
    stream::once(async { Ok(watcher::Event::Init) })
        .chain(
            listed
                .into_stream()
                .map(|p| Ok(watcher::Event::InitApply(p))),
        )
        .chain(stream::once(async { Ok(watcher::Event::InitDone) }))
        .chain(events.into_stream().map(|(kind, pod)| {
            Ok(match kind {
                Kind::Deleted => watcher::Event::Delete(pod),
                Kind::Added | Kind::Modified => watcher::Event::Apply(pod),
            })
        }))
        .boxed()
}

/// Runs kube-runtime's closest equivalent of the pipeline over `source` until the source ends
/// (or, if it never ends, until both counters reached `listed + events`), the applier has
/// run every reconcile and stopped. `produce` is called once the counters have the list.
async fn kube_pipeline(
    source: BoxStream<'static, KubeEvent>,
    listed: usize,
    events: usize,
    keep: bool,
    produce: impl FnOnce() + Send + 'static,
) -> PipelineRun {
    let total = listed + events;
    let (reader, writer) = reflector::store::<Pod>();
    let all_done = Arc::new(Semaphore::new(0));
    let listed_done = Arc::new(Semaphore::new(0));
    let counters = [
        Counter::new(total, &all_done),
        Counter::new(total, &all_done),
    ];
    let list_counter = Counter::new(listed, &listed_done);
    // Dropped after timing (the stream that uses it is dropped inside).
    let keeper = Arc::new(Keeper::<Pod>::new(keep, total));
    let kept = keeper.clone();
    let requests = reflector::reflector(writer, source).filter_map(move |event| {
        let keeper = &kept;
        let request = match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => {
                counters.iter().for_each(Counter::tick);
                list_counter.tick();
                let obj_ref = ObjectRef::from_obj(&pod);
                keeper.keep(|| pod);
                Some(Ok(ReconcileRequest::from(obj_ref)))
            }
            Ok(watcher::Event::Delete(pod)) => {
                counters.iter().for_each(Counter::tick);
                keeper.keep(|| pod);
                None
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => None,
            Err(e) => Some(Err(e)),
        };
        std::future::ready(request)
    });
    // Ends the input once both counters are done (the end-to-end stream never ends itself).
    let finished = {
        let all_done = all_done.clone();
        async move {
            let _ = all_done.acquire_many(2).await;
        }
    };
    let requests = requests.take_until(finished);
    let start = Instant::now();
    perf_control("enable");
    let listed_at = Arc::new(Mutex::new(None));
    let producer = {
        let listed_at = listed_at.clone();
        tokio::spawn(async move {
            let _ = listed_done.acquire().await;
            *listed_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(start.elapsed());
            produce();
        })
    };
    let config = kube::runtime::Config::default().concurrency(WORKERS as u16);
    applier(
        |pod: Arc<Pod>, _ctx: Arc<()>| {
            // As `Controller::run`: each reconcile on its own task.
            tokio::spawn(async move {
                std::hint::black_box(&pod);
                Ok::<_, std::convert::Infallible>(Action::await_change())
            })
            .map(|r| r.expect("reconcile task"))
        },
        |_pod, _err: &std::convert::Infallible, _ctx| Action::await_change(),
        Arc::new(()),
        reader,
        requests,
        config,
    )
    .for_each(|r| {
        if let Err(e) = r {
            // Deleted objects are "not found" when their reconcile comes: expected.
            if !matches!(e, kube::runtime::controller::Error::ObjectNotFound(_)) {
                panic!("kube-runtime applier failed: {e}");
            }
        }
        std::future::ready(())
    })
    .await;
    let total_time = start.elapsed();
    perf_control("disable");
    producer.await.expect("producer");
    let listed = listed_at
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .unwrap_or_default();
    drop(keeper);
    PipelineRun {
        listed,
        total: total_time,
    }
}

// ---------- child jobs ----------

/// Sends `command` to `perf record`'s control FIFO if [`PERF_CTL_VAR`] names one; under
/// `valgrind --tool=callgrind --collect-atstart=no` with [`CALLGRIND_VAR`] set, switches
/// callgrind's collection on or off instead.
fn perf_control(command: &str) {
    if let Some(path) = std::env::var_os(PERF_CTL_VAR) {
        std::fs::write(path, format!("{command}\n")).expect("write to perf's control FIFO");
    }
    if std::env::var_os(CALLGRIND_VAR).is_some() {
        let on = if command == "enable" { "on" } else { "off" };
        let status = Command::new("callgrind_control")
            .args(["-i", on, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .expect("run callgrind_control");
        assert!(status.success(), "callgrind_control -i {on} failed");
    }
}

/// A whole number from the environment variable `var`, if set.
fn env_usize(var: &str) -> Option<usize> {
    let value = std::env::var(var).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{var}={value} is not a number")),
    )
}

/// The runtime every pipeline runs on: multi-threaded with 2 workers (the machine's cores),
/// or, with `INFORMER_BENCH_RUNTIME=current_thread`, one thread (for comparison).
fn runtime() -> Runtime {
    if std::env::var("INFORMER_BENCH_RUNTIME").is_ok_and(|v| v == "current_thread") {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
fn proc_status_bytes(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| kib * 1024.0)
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// A result line for the parent.
fn emit(name: &str, value: f64) {
    println!("@ {name} {value}");
}

/// The median of several runs as `name`, and their range as `name_min`/`name_max`.
fn emit_runs(name: &str, mut values: Vec<f64>) {
    values.sort_by(f64::total_cmp);
    emit(name, values[values.len() / 2]);
    emit(&format!("{name}_min"), values[0]);
    emit(&format!("{name}_max"), values[values.len() - 1]);
}

fn job(name: &str) {
    let rt = runtime();
    match name {
        "i1-ours-prebuilt" | "i1-kube-prebuilt" | "i1-ours-onthefly" | "i1-kube-onthefly" => {
            let prebuilt = name.ends_with("prebuilt");
            let ours = name.starts_with("i1-ours");
            let decoding = if ours {
                Decoding::Library {
                    skip_managed_fields: false,
                }
            } else {
                Decoding::SerdeJson
            };
            let lines = support::pod_lines(LISTED);
            let base = support::pods(LISTED);
            let templates = Events::templates(&lines);
            let lines = Arc::new(lines);
            let events_n = env_usize(EVENTS_VAR).unwrap_or(EVENTS);
            let mut runs = Vec::new();
            for _ in 0..if prebuilt {
                env_usize(RUNS_VAR).unwrap_or(PREBUILT_RUNS)
            } else {
                1
            } {
                let (listed, events) = if prebuilt {
                    (
                        Listed::Prebuilt(base.clone()),
                        Events::prebuilt(&base, events_n),
                    )
                } else {
                    (
                        Listed::Lines(lines.clone(), decoding),
                        Events::OnTheFly(templates.clone(), events_n, decoding),
                    )
                };
                emit("data_rss", proc_status_bytes("VmRSS"));
                let run = if ours {
                    let lw = Arc::new(MemorySource::new(listed, Some(events)));
                    rt.block_on(ours_pipeline(lw, LISTED, events_n, prebuilt, || {}))
                } else {
                    let source = kube_source(listed, events);
                    rt.block_on(kube_pipeline(source, LISTED, events_n, prebuilt, || {}))
                };
                runs.push(support::rate(events_n, run.total));
            }
            emit_runs("rate", runs);
            emit("peak_rss", proc_status_bytes("VmHWM"));
        }
        "e2e-ours" | "e2e-kube" => {
            let mut rates = Vec::new();
            for _ in 0..E2E_RUNS {
                let (server, events) = rt.block_on(e2e_server());
                let server = Arc::new(server);
                let produce = {
                    let server = server.clone();
                    move || {
                        std::thread::spawn(move || e2e_produce(&server, events));
                    }
                };
                let client = {
                    let _runtime = rt.enter(); // kube's client spawns its buffer task
                    server.client()
                };
                let run = if name == "e2e-ours" {
                    let lw = Arc::new(KubeListerWatcher::new(Api::<Pod>::all(client)));
                    rt.block_on(ours_pipeline(lw, LISTED, E2E_EVENTS, false, produce))
                } else {
                    let source = watcher(Api::<Pod>::all(client), watcher::Config::default())
                        .default_backoff()
                        .boxed();
                    rt.block_on(kube_pipeline(source, LISTED, E2E_EVENTS, false, produce))
                };
                emit("listed_seconds", run.listed.as_secs_f64());
                rates.push(support::rate(E2E_EVENTS, run.total - run.listed));
                // The server's connections end with it (inside the runtime).
                let _runtime = rt.enter();
                drop(server);
            }
            emit_runs("rate", rates);
            emit("peak_rss", proc_status_bytes("VmHWM"));
        }
        "probe-decode" => {
            // What decoding costs, for reading the "on the fly" figures.
            let lines = support::pod_lines(LISTED);
            let n = 2_000;
            for (label, decoding) in [
                ("serde_json", Decoding::SerdeJson),
                (
                    "library",
                    Decoding::Library {
                        skip_managed_fields: false,
                    },
                ),
            ] {
                let mut decoder = decoding.decoder();
                let start = Instant::now();
                for line in lines.iter().take(n) {
                    std::hint::black_box(decoder.decode::<Pod>(line));
                }
                emit(
                    &format!("pod_decode_us_{label}"),
                    start.elapsed().as_secs_f64() * 1e6 / n as f64,
                );
            }
            emit("size_of_pod", std::mem::size_of::<Pod>() as f64);
        }
        _ if name.starts_with("m1-") => m1_job(&rt, name),
        _ => panic!("unknown {JOB_VAR} {name:?}"),
    }
}

/// A server holding the 10,000 pods, and the end-to-end events as server writes. Its garbage
/// collector is off: the generated pods name ReplicaSets that do not exist as their owners.
async fn e2e_server() -> (TestApiServer, Vec<(Kind, Value)>) {
    let server = TestApiServer::builder()
        .garbage_collector(false)
        .history_limit(4 * E2E_EVENTS)
        .bookmark_interval(Duration::from_secs(60))
        .start()
        .await
        .expect("the test API server starts");
    let base: Vec<Value> = support::pod_lines(LISTED)
        .iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("valid JSON");
            let meta = v["metadata"].as_object_mut().expect("metadata");
            meta.remove("resourceVersion");
            meta.remove("uid");
            v
        })
        .collect();
    for pod in &base {
        server.create_json(pod.clone()).expect("create a pod");
    }
    let events = (0..E2E_EVENTS)
        .map(|j| {
            let (kind, p) = event(j);
            let mut v = base[p].clone();
            v["metadata"]["labels"]["rev"] = Value::String(j.to_string());
            (kind, v)
        })
        .collect();
    (server, events)
}

fn e2e_produce(server: &TestApiServer, events: Vec<(Kind, Value)>) {
    for (kind, pod) in events {
        match kind {
            Kind::Modified => {
                server.update_json(pod).expect("update");
            }
            Kind::Added => {
                server.create_json(pod).expect("create");
            }
            Kind::Deleted => {
                let ns = pod["metadata"]["namespace"].as_str().expect("namespace");
                let name = pod["metadata"]["name"].as_str().expect("name");
                server
                    .delete_json("v1", "Pod", Some(ns), name)
                    .expect("delete");
            }
        }
    }
}

/// `m1-<store>-<mf|nomf>`: bytes per cached pod after a list of 100,000.
fn m1_job(rt: &Runtime, name: &str) {
    let drop_mf = name.ends_with("-nomf");
    let lines = Arc::new(support::pod_lines(M1_PODS));
    if name.starts_with("m1-kube") {
        let (reader, writer) = reflector::store::<Pod>();
        let source = stream::once(async { Ok(watcher::Event::Init) })
            .chain(
                Listed::Lines(lines.clone(), Decoding::SerdeJson)
                    .into_stream()
                    .map(|p| Ok(watcher::Event::InitApply(p))),
            )
            .chain(stream::once(async { Ok(watcher::Event::InitDone) }))
            .boxed();
        settle();
        let before = proc_status_bytes("VmRSS");
        rt.block_on(async {
            // `modify` is kube-runtime's way to change objects before they are stored.
            let stream = source.modify(move |pod: &mut Pod| {
                if drop_mf {
                    pod.metadata.managed_fields = None;
                }
            });
            reflector::reflector(writer, stream)
                .for_each(|_| std::future::ready(()))
                .await;
            reader.wait_until_ready().await.expect("synced");
        });
        assert_eq!(reader.len(), M1_PODS);
        settle();
        let after = proc_status_bytes("VmRSS");
        emit("bytes_per_object", (after - before) / M1_PODS as f64);
        std::hint::black_box(&reader);
        return;
    }
    let compact = name.starts_with("m1-compact");
    // As `KubeListerWatcher` decodes (skipping managed fields when they are dropped, as the
    // informer factory has it do), or, for `m1-serde`, a source of one's own that decodes
    // with `serde_json`.
    let decoding = if name.starts_with("m1-serde") {
        Decoding::SerdeJson
    } else {
        Decoding::Library {
            skip_managed_fields: drop_mf,
        }
    };
    let lw = Arc::new(MemorySource::new(
        Listed::Lines(lines.clone(), decoding),
        None,
    ));
    let mut builder = SharedIndexInformer::builder(lw);
    let compact_store = compact.then(|| Arc::new(CompactStore::<Pod>::new()));
    if let Some(store) = &compact_store {
        builder = builder.store(store.clone());
    }
    if drop_mf {
        builder = builder.drop_managed_fields();
    }
    let informer = builder.build();
    settle();
    let before = proc_status_bytes("VmRSS");
    let cancel = CancellationToken::new();
    let run = rt.spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    rt.block_on(informer.wait_for_sync());
    assert_eq!(informer.store().len(), M1_PODS);
    let sample = informer.store().list_keys()[0].clone();
    let sample = informer.store().get(&sample).expect("cached");
    assert_eq!(
        sample.metadata.managed_fields.is_none(),
        drop_mf,
        "managedFields as configured"
    );
    settle();
    let after = proc_status_bytes("VmRSS");
    emit("bytes_per_object", (after - before) / M1_PODS as f64);
    if let Some(store) = &compact_store {
        let stats = store.stats();
        emit(
            "encoded_bytes_per_object",
            stats.encoded_bytes as f64 / stats.objects as f64,
        );
        // A get of an object not in the hot cache: keys far apart, each read once.
        let keys = store.list_keys();
        let reads = 20_000;
        let start = Instant::now();
        for i in 0..reads {
            let key = &keys[(i * 7_919) % keys.len()];
            std::hint::black_box(store.get(key).expect("cached"));
        }
        emit(
            "cold_get_ns",
            start.elapsed().as_nanos() as f64 / reads as f64,
        );
    }
    cancel.cancel();
    rt.block_on(run).expect("informer task").expect("runs once");
}

/// Lets the allocator return what was just freed before memory is read.
fn settle() {
    std::thread::sleep(Duration::from_millis(300));
}

/// Runs `job` in a child process and returns its results.
/// Runs jobs `a` and `b` `runs` times each, alternating (so that a busy moment of the
/// machine falls on both), each run in a fresh process: a process's first run is the only
/// one that starts from fresh memory, for both. Returns each job's results, with `rate` the
/// median run, `rate_min`/`rate_max` the range, other values the largest seen.
fn child_runs(a: &str, b: &str, runs: usize) -> (HashMap<String, f64>, HashMap<String, f64>) {
    let (mut a_runs, mut b_runs) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        a_runs.push(child_with(a, &[(RUNS_VAR, "1")]));
        b_runs.push(child_with(b, &[(RUNS_VAR, "1")]));
    }
    (combine(a_runs), combine(b_runs))
}

fn combine(runs: Vec<HashMap<String, f64>>) -> HashMap<String, f64> {
    let mut rates: Vec<f64> = runs.iter().map(|r| r["rate"]).collect();
    rates.sort_by(f64::total_cmp);
    let mut out = HashMap::new();
    for run in &runs {
        for (k, v) in run {
            let e = out.entry(k.clone()).or_insert(*v);
            *e = e.max(*v);
        }
    }
    out.insert("rate".to_owned(), rates[rates.len() / 2]);
    out.insert("rate_min".to_owned(), rates[0]);
    out.insert("rate_max".to_owned(), rates[rates.len() - 1]);
    out
}

fn child(job: &str) -> HashMap<String, f64> {
    child_with(job, &[])
}

fn child_with(job: &str, env: &[(&str, &str)]) -> HashMap<String, f64> {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut command = Command::new(exe);
    command.env(JOB_VAR, job);
    command.envs(env.iter().copied());
    if job.starts_with("m1-") {
        // Return freed pages to the OS at once, so that resident memory after sync is what
        // is live (plus fragmentation), not what was freed but not yet purged.
        command.env("MIMALLOC_PURGE_DELAY", "0");
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run the bench binary as a child");
    assert!(
        output.status.success(),
        "child job {job} failed: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| {
            let mut parts = l.strip_prefix("@ ")?.split_whitespace();
            Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
        })
        .collect()
}

// ---------- the side-by-side pass ----------

fn gib(bytes: f64) -> String {
    format!("{:.2} GiB", bytes / (1u64 << 30) as f64)
}

fn kb(bytes: f64) -> String {
    format!("{:.1} KB", bytes / 1000.0)
}

fn k_per_s(rate: f64) -> String {
    format!("{:.0}k", rate / 1000.0)
}

/// A memory line: bytes per object for each implementation and their ratio.
fn memory_line(workload: &str, what: &str, ours: f64, theirs_name: &str, theirs: f64) {
    println!(
        "{workload:<4} {what:<40} informer {:>14}   {theirs_name} {:>14}   ratio {:>8.3}x (smaller is better)",
        kb(ours),
        kb(theirs),
        ours / theirs
    );
}

/// The machine is shared: print its load so that a reader can judge the figures.
fn print_load(when: &str) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "(load average {when}: {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
}

fn side_by_side() {
    print_load("at start");
    let probe = child("probe-decode");
    for (variant, tag) in [("prebuilt", "prebuilt"), ("on the fly", "onthefly")] {
        println!(
            "\n== I1 ({variant}): 10,000 listed pods + 200,000 watch events, 2 indexes, 3 handlers, queue + 2 workers =="
        );
        let runs = if tag == "prebuilt" { PREBUILT_RUNS } else { 1 };
        let (ours, theirs) = child_runs(&format!("i1-ours-{tag}"), &format!("i1-kube-{tag}"), runs);
        let what = format!("events/s ({variant})");
        support::report("I1", &what, ours["rate"], "kube-runtime", theirs["rate"]);
        if tag == "prebuilt" {
            // The client-go figure isolates the pipeline (no decoding): compare it
            // with the prebuilt variant only.
            support::quote("I1", &what, ours["rate"], "client-go", CLIENT_GO_I1);
        }
        if tag == "prebuilt" {
            println!(
                "I1   median of {PREBUILT_RUNS} runs, each in a fresh process, the two alternating; range informer {}-{}/s, kube-runtime {}-{}/s",
                k_per_s(ours["rate_min"]),
                k_per_s(ours["rate_max"]),
                k_per_s(theirs["rate_min"]),
                k_per_s(theirs["rate_max"]),
            );
        } else {
            println!(
                "I1   (decoding one pod costs {:.1} µs with this project's JsonDecoder, {:.1} µs with serde_json as kube decodes: one decoding thread caps this at about {}/s and {}/s)",
                probe["pod_decode_us_library"],
                probe["pod_decode_us_serde_json"],
                k_per_s(1e6 / probe["pod_decode_us_library"]),
                k_per_s(1e6 / probe["pod_decode_us_serde_json"]),
            );
        }
        println!(
            "I1   peak RSS informer {}, kube-runtime {} (the data alone, before start: {} / {})",
            gib(ours["peak_rss"]),
            gib(theirs["peak_rss"]),
            gib(ours["data_rss"]),
            gib(theirs["data_rss"]),
        );
    }

    println!(
        "\n== I1 end to end: TestApiServer over HTTP, 10,000 listed pods, then 20,000 watch events =="
    );
    let ours = child("e2e-ours");
    let theirs = child("e2e-kube");
    support::report(
        "I1e",
        "watch events/s through kube::Client",
        ours["rate"],
        "kube-runtime",
        theirs["rate"],
    );
    println!(
        "I1e  median of {E2E_RUNS} runs; range informer {}-{}/s, kube-runtime {}-{}/s",
        k_per_s(ours["rate_min"]),
        k_per_s(ours["rate_max"]),
        k_per_s(theirs["rate_min"]),
        k_per_s(theirs["rate_max"]),
    );
    println!(
        "I1e  list phase (last run): {:.2} s (kube-runtime {:.2} s); peak RSS, server and its data included: {} ({})",
        ours["listed_seconds"],
        theirs["listed_seconds"],
        gib(ours["peak_rss"]),
        gib(theirs["peak_rss"]),
    );

    println!(
        "\n== M1: resident bytes per cached pod after listing 100,000 (size_of::<Pod>() = {}) ==",
        probe["size_of_pod"]
    );
    for (label, suffix) in [
        ("with managedFields", "mf"),
        ("managedFields dropped", "nomf"),
    ] {
        let kube = child(&format!("m1-kube-{suffix}"))["bytes_per_object"];
        let ours = child(&format!("m1-ours-{suffix}"))["bytes_per_object"];
        let compact = child(&format!("m1-compact-{suffix}"));
        memory_line(
            "M1",
            &format!("ThreadSafeStore, {label}"),
            ours,
            "kube-runtime",
            kube,
        );
        // The same store fed by a source that decodes with serde_json, whose vectors keep
        // the spare capacity of growing by doubling (and which decodes managed fields before
        // the transform drops them): what the library's decoder saves.
        let serde = child(&format!("m1-serde-{suffix}"))["bytes_per_object"];
        memory_line(
            "M1",
            &format!("ThreadSafeStore, serde_json source, {label}"),
            serde,
            "kube-runtime",
            kube,
        );
        memory_line(
            "M1",
            &format!("CompactStore, {label}"),
            compact["bytes_per_object"],
            "kube-runtime",
            kube,
        );
        println!(
            "M1   CompactStore, {label}: {:.0} encoded bytes per pod; a get of a cold object costs {:.1} µs",
            compact["encoded_bytes_per_object"],
            compact["cold_get_ns"] / 1000.0
        );
        if suffix == "mf" {
            memory_line(
                "M1",
                &format!("ThreadSafeStore, {label}"),
                ours,
                "client-go",
                CLIENT_GO_M1,
            );
            memory_line(
                "M1",
                &format!("CompactStore, {label}"),
                compact["bytes_per_object"],
                "client-go",
                CLIENT_GO_M1,
            );
            println!(
                "M1   (client-go's figure is live heap measured outside this run: a reference, not measured here)"
            );
        }
    }
    print_load("at the end");
}

// ---------- criterion ----------

fn criterion_benches(c: &mut Criterion) {
    let rt = runtime();
    let base = support::pods(LISTED);
    let mut group = c.benchmark_group("I1-reduced");
    // Each iteration is one whole pipeline run (plus an untimed setup): few, flat samples.
    group.sample_size(10);
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.bench_function(
        format!("informer/{CRITERION_EVENTS}-events-prebuilt"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let events = Events::prebuilt(&base, CRITERION_EVENTS);
                    let lw = Arc::new(MemorySource::new(
                        Listed::Prebuilt(base.clone()),
                        Some(events),
                    ));
                    total += rt
                        .block_on(ours_pipeline(lw, LISTED, CRITERION_EVENTS, true, || {}))
                        .total;
                }
                total
            })
        },
    );
    group.measurement_time(Duration::from_secs(15));
    group.bench_function(
        format!("kube-runtime/{CRITERION_EVENTS}-events-prebuilt"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let events = Events::prebuilt(&base, CRITERION_EVENTS);
                    let source = kube_source(Listed::Prebuilt(base.clone()), events);
                    total += rt
                        .block_on(kube_pipeline(source, LISTED, CRITERION_EVENTS, true, || {}))
                        .total;
                }
                total
            })
        },
    );
    group.finish();
}

fn main() {
    if let Ok(name) = std::env::var(JOB_VAR) {
        job(&name);
        return;
    }
    side_by_side();
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
}
