//! Workloads Q1, Q2 and X1 of `benches/workloads/WORKLOADS.md`, side by side with client-go
//! and kube-runtime.
//!
//! # Side by side
//! Every run of every workload is a fresh process: this binary re-executed with
//! `CORE_BENCH_JOB=<job>` (it prints one JSON line), or client-go's harness
//! (`../shared/bench/client-go/`, built as its README says) when `INFORMER_BENCH_CLIENT_GO`
//! names its binary; without it, the tables say that client-go was not measured. The
//! implementations take turns run by run (the order rotates each round), `CORE_BENCH_RUNS`
//! rounds (default 5; X1 `CORE_BENCH_X1_RUNS`, default 3, 0 skips X1), and each table prints
//! the medians, the median of the per-round ratios with their range, and the machine's
//! 1-minute load average sampled before each run (the machine is shared: a ratio measured
//! while the load was high is a rough one). Under each queue table, `kernel` lines give what
//! the kernel counted for each contender's processes (`getrusage` of the children, medians):
//! voluntary context switches (a thread blocked: parking workers, waking them), involuntary
//! ones (preempted, or `sched_yield`), and CPU time. Unlike wall time, voluntary switches do
//! not depend on the load.
//!
//! Q2's rate depends on how the kernel places the two runtime threads. With workers truly
//! in parallel on the other core they keep the queue nearly empty, so more of the producer's
//! adds are of new items (slower, and each one shared with the workers' lock traffic); when
//! the load puts both threads on one core, or a worker thread runs little, most adds find
//! their key waiting. Runs of one binary fall in either mode (the `processed` line tells
//! which: a few tens of thousands, or hundreds of thousands), hence the wide ranges.
//!
//! - **Q1, Q2**: [`WorkQueue`] and [`PriorityQueue`] of `String` keys (the producer moves
//!   each key in; a key the queue does not keep is freed by it), and [`WorkQueue`] of
//!   [`ObjectKey`] (the key type this library's controllers queue: one shared string, so the
//!   producer keeps its keys, as client-go's harness keeps its slice, and adds clones). Beside
//!   them a floor: a plain `Mutex<VecDeque> + HashSet` queue with none of the workqueue's
//!   guarantees (no processing set, so it may hand one key to two workers): what "no queue at
//!   all" costs. kube-runtime has no workqueue. The workers run on a tokio runtime with 2
//!   threads (this machine's cores); client-go's run as 4 goroutines.
//! - **X1**: [`ThreadSafeStore`] index look-ups; kube-runtime's closest equivalent is a scan of
//!   its reflector store's `state()` (40 scans, it is slow); client-go's `Indexer.ByIndex`.
//!
//! The global allocator is the system's (what a controller gets unless it picks another);
//! `benches/informer.rs` uses mimalloc.
//!
//! Then criterion measures X1 and Q1 in-process (`cargo bench --bench core -- <filter>` picks
//! some; `CORE_BENCH_RUNS=0` skips the side-by-side pass).
//!
//! # Profiling
//! `CORE_BENCH_JOB=<job>` runs one workload once and exits. Queue jobs are
//! `<q1|q2>-<workqueue|workqueue-key|priorityqueue|floor>`, `q2-workqueue-alone` (Q2's adds
//! with no worker running, also in the Q2 table: the adds without contention) and `handoff`
//! (what two threads popping one shared `Mutex<VecDeque>` with the mutex's own spinning hand
//! out per second here, and one thread alone: the rate of a queue whose lock never moves
//! between cores); X1 jobs are `x1-ours` and `x1-kube`. Queue jobs use `CORE_BENCH_ITEMS`
//! items (default 1,000,000), the producer adding `CORE_BENCH_BATCH` keys per `add_batch` call
//! if that is set (default: one `add` per key), drained by `CORE_BENCH_WORKERS` workers
//! (default 4; with 0, Q2 measures the adds alone and ends with a shutdown, not a drain).
//! System calls and context switches (invisible to callgrind) are counted with perf's
//! software events and tracepoints (`perf stat -e context-switches,syscalls:sys_enter_futex,
//! syscalls:sys_enter_write,syscalls:sys_enter_sched_yield`, as root): they showed tokio
//! unparking the workers' thread (an eventfd `write` from the producer per wake-up, thousands
//! per Q2 run) before workers spun before parking, and the mutex's own `sched_yield`s.
//! The machine is shared and has no hardware counters, so count instructions with callgrind,
//! only for one phase (`adds` or `drain` of Q1, the whole of Q2 with `q2`, `all`) with
//! `CORE_BENCH_CALLGRIND=<phase>`:
//!
//! ```text
//! CORE_BENCH_JOB=q1-workqueue CORE_BENCH_ITEMS=200000 CORE_BENCH_CALLGRIND=drain \
//!   valgrind --tool=callgrind --instr-atstart=no target/release/deps/core-<hash>
//! ```

mod support;

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use informer::ObjectKey;
use informer::prelude::*;
use informer::queue::{Order, OrderedQueue};
use informer::store::{NAMESPACE_INDEX, index_fn};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tokio::sync::Notify;

const QUEUE_ITEMS: usize = 1_000_000;
const WORKERS: usize = 4;
/// Threads of the runtime the workers run on (this machine's cores).
const THREADS: usize = 2;
const PODS: usize = 100_000;
/// X1: look-ups by node, and namespace lists.
const LOOKUPS: usize = 1_000_000;
const LISTS: usize = 100_000;
/// X1: kube-runtime scans (each one walks all 100,000 pods).
const SCANS: usize = 40;

const JOB_VAR: &str = "CORE_BENCH_JOB";
const RUNS_VAR: &str = "CORE_BENCH_RUNS";
const X1_RUNS_VAR: &str = "CORE_BENCH_X1_RUNS";
const ITEMS_VAR: &str = "CORE_BENCH_ITEMS";
const CALLGRIND_VAR: &str = "CORE_BENCH_CALLGRIND";
const BATCH_VAR: &str = "CORE_BENCH_BATCH";
const WORKERS_VAR: &str = "CORE_BENCH_WORKERS";
/// The path of client-go's harness binary (`../shared/bench/client-go/`).
const CLIENT_GO_VAR: &str = "INFORMER_BENCH_CLIENT_GO";

// ---------- keys ----------

/// A key type of the queue workloads: how keys are made, and how the producer hands them over.
trait Key: Clone + Hash + Eq + Send + Sync + 'static {
    fn make(namespace: usize, pod: usize) -> Self;
    /// Whether the producer keeps its keys (alive until timing ends) and adds clones, as
    /// client-go's harness keeps its slice; otherwise it moves each key into the queue.
    const KEEP: bool;
}

impl Key for String {
    fn make(namespace: usize, pod: usize) -> Self {
        format!("ns-{namespace}/pod-{pod}")
    }
    const KEEP: bool = false;
}

impl Key for ObjectKey {
    fn make(namespace: usize, pod: usize) -> Self {
        ObjectKey::new(Some(&format!("ns-{namespace}")), &format!("pod-{pod}"))
    }
    const KEEP: bool = true;
}

fn keys<K: Key>(distinct: usize) -> Vec<K> {
    (0..queue_items())
        .map(|i| K::make(i % 100, i % distinct))
        .collect()
}

// ---------- the floor queue ----------

struct FloorQueue<K> {
    state: parking_lot::Mutex<FloorState<K>>,
    notify: Notify,
}

impl<K> Default for FloorQueue<K> {
    fn default() -> Self {
        Self {
            state: parking_lot::Mutex::new(FloorState {
                items: VecDeque::new(),
                queued: HashSet::new(),
                shut_down: false,
            }),
            notify: Notify::new(),
        }
    }
}

struct FloorState<K> {
    items: VecDeque<K>,
    queued: HashSet<K>,
    shut_down: bool,
}

impl<K: Key> FloorQueue<K> {
    fn add(&self, key: K) {
        let mut s = self.state.lock();
        if !s.shut_down && s.queued.insert(key.clone()) {
            s.items.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }
    async fn get(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock();
                if let Some(k) = s.items.pop_front() {
                    s.queued.remove(&k);
                    return Some(k);
                }
                if s.shut_down {
                    return None;
                }
            }
            notified.await;
        }
    }
    fn shut_down(&self) {
        self.state.lock().shut_down = true;
        self.notify.notify_waiters();
    }
}

/// The queue operations the workloads use, over the floor and over any `Queue`.
trait BenchQueue<K>: Send + Sync + 'static {
    fn add(&self, key: K);
    fn add_batch(&self, keys: Vec<K>) {
        for k in keys {
            self.add(k);
        }
    }
    fn get(&self) -> impl std::future::Future<Output = Option<K>> + Send;
    fn done(&self, key: &K);
    fn shut_down(&self);
    /// Shuts down and waits until every queued item is handed out and done.
    fn shut_down_with_drain(&self) -> impl std::future::Future<Output = ()> + Send;
}

impl<K: Key> BenchQueue<K> for FloorQueue<K> {
    fn add(&self, key: K) {
        FloorQueue::add(self, key)
    }
    fn get(&self) -> impl std::future::Future<Output = Option<K>> + Send {
        FloorQueue::get(self)
    }
    fn done(&self, _key: &K) {}
    fn shut_down(&self) {
        FloorQueue::shut_down(self)
    }
    // The floor has no drain: its workers finish what is queued after the shutdown anyway.
    async fn shut_down_with_drain(&self) {
        FloorQueue::shut_down(self)
    }
}

impl<K: Key, O: Order + 'static> BenchQueue<K> for OrderedQueue<K, O> {
    fn add(&self, key: K) {
        Queue::add(self, key)
    }
    fn add_batch(&self, keys: Vec<K>) {
        Queue::add_batch(self, keys)
    }
    // The queue's own `get` (an `async fn`); `Queue::get`, through `dyn Queue`, boxes its future.
    fn get(&self) -> impl std::future::Future<Output = Option<K>> + Send {
        OrderedQueue::get(self)
    }
    fn done(&self, key: &K) {
        OrderedQueue::done(self, key)
    }
    fn shut_down(&self) {
        Queue::shut_down(self)
    }
    async fn shut_down_with_drain(&self) {
        Queue::shut_down_with_drain(self, true).await
    }
}

// ---------- the queue workloads ----------

fn env_number(var: &str, default: usize) -> usize {
    std::env::var(var).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{var}={v} is not a number"))
    })
}

/// How many workers drain the queue (`CORE_BENCH_WORKERS`, for profiling runs; 4 by default).
fn workers() -> usize {
    env_number(WORKERS_VAR, WORKERS)
}

/// How many items the queue workloads add (`CORE_BENCH_ITEMS`, for profiling runs).
fn queue_items() -> usize {
    env_number(ITEMS_VAR, QUEUE_ITEMS)
}

/// Under `valgrind --tool=callgrind --instr-atstart=no` with `CORE_BENCH_CALLGRIND=phase`,
/// switches instrumentation on (`on`) or off around that phase.
fn callgrind(phase: &str, on: bool) {
    if std::env::var(CALLGRIND_VAR).is_ok_and(|p| p == phase || p == "all") {
        let status = Command::new("callgrind_control")
            .args(["-i", if on { "on" } else { "off" }])
            .arg(std::process::id().to_string())
            .stdout(Stdio::null())
            .status()
            .expect("run callgrind_control");
        assert!(status.success(), "callgrind_control failed");
    }
}

struct QueueRun {
    adding: Duration,
    draining: Duration,
    total: Duration,
    processed: usize,
}

async fn drain_with_workers<K: Key, Q: BenchQueue<K>>(queue: &Arc<Q>, workers: usize) -> usize {
    let processed = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..workers)
        .map(|_| {
            let (q, n) = (queue.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    q.done(&k);
                    n.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.await.expect("worker");
    }
    processed.load(Ordering::Relaxed)
}

/// The producer's loop: `add` of each key (a clone if the keys are kept), or (`batch` > 1)
/// `add_batch` of `batch` keys. Returns the kept keys, to be dropped after timing.
fn produce<K: Key, Q: BenchQueue<K>>(queue: &Q, items: Vec<K>, batch: usize) -> Vec<K> {
    if batch <= 1 {
        if K::KEEP {
            for k in &items {
                queue.add(k.clone());
            }
            return items;
        }
        for k in items {
            queue.add(k);
        }
        return Vec::new();
    }
    if K::KEEP {
        for chunk in items.chunks(batch) {
            queue.add_batch(chunk.to_vec());
        }
        return items;
    }
    let mut iter = items.into_iter();
    while iter.len() > 0 {
        queue.add_batch(iter.by_ref().take(batch).collect());
    }
    Vec::new()
}

/// Q1: add every distinct key, then drain with the workers.
fn q1<K: Key, Q: BenchQueue<K>>(rt: &Runtime, queue: Q, batch: usize) -> QueueRun {
    let queue = Arc::new(queue);
    let items = keys::<K>(queue_items());
    rt.block_on(async {
        callgrind("adds", true);
        let start = Instant::now();
        let kept = produce(&*queue, items, batch);
        let adding = start.elapsed();
        callgrind("adds", false);
        queue.shut_down();
        callgrind("drain", true);
        let drain_start = Instant::now();
        let processed = drain_with_workers(&queue, workers()).await;
        callgrind("drain", false);
        let run = QueueRun {
            adding,
            draining: drain_start.elapsed(),
            total: start.elapsed(),
            processed,
        };
        drop(kept);
        run
    })
}

/// Q2: one producer adds keys drawn from 10,000 distinct ones while the workers run, then
/// shuts the queue down with drain.
fn q2<K: Key, Q: BenchQueue<K>>(rt: &Runtime, queue: Q, batch: usize, workers: usize) -> QueueRun {
    let queue = Arc::new(queue);
    let items = keys::<K>(10_000);
    rt.block_on(async {
        callgrind("q2", true);
        let start = Instant::now();
        let draining = {
            let q = queue.clone();
            tokio::spawn(async move { drain_with_workers(&q, workers).await })
        };
        let producer = {
            let q = queue.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                let kept = produce(&*q, items, batch);
                (start.elapsed(), kept)
            })
        };
        let (adding, kept) = producer.await.expect("producer");
        let drain_start = Instant::now();
        if workers == 0 {
            queue.shut_down();
        } else {
            queue.shut_down_with_drain().await;
        }
        let processed = draining.await.expect("workers");
        callgrind("q2", false);
        let run = QueueRun {
            adding,
            draining: drain_start.elapsed(),
            total: start.elapsed(),
            processed,
        };
        drop(kept);
        run
    })
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// What a plain locked FIFO hands out per second on this machine: `threads` threads popping a
/// pre-filled `parking_lot::Mutex<VecDeque<String>>` (with the mutex's own policy when
/// contended) and copying each item out (what a workqueue's `get` must do at the least), with
/// no deduplication, no `done`, no wake-ups. With one thread, the rate of a queue whose lock
/// and head never move between cores; with two, what taking turns at the lock costs when
/// waiters do not back off (the workqueue's engine does; see its `Backoff`).
fn plain_handoff(threads: usize) -> f64 {
    let items = keys::<String>(queue_items());
    let n = items.len();
    let deque = Arc::new(parking_lot::Mutex::new(VecDeque::from(items)));
    let start = Arc::new(std::sync::Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (deque, start) = (deque.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                loop {
                    let item = deque.lock().pop_front();
                    match item {
                        Some(item) => drop(std::hint::black_box(item.clone())),
                        None => break,
                    }
                }
            })
        })
        .collect();
    let t = Instant::now();
    start.wait();
    for h in handles {
        h.join().expect("handoff thread");
    }
    support::rate(n, t.elapsed())
}

// ---------- X1 ----------

fn our_store(pods: &[Arc<Pod>]) -> ThreadSafeStore<Pod> {
    let store = ThreadSafeStore::new();
    store
        .add_indexers([("node".to_owned(), index_fn(support::node_of))].into())
        .expect("fresh index name");
    for pod in pods {
        store.add(pod.clone()).expect("generated pods have names");
    }
    store
}

fn kube_runtime_store(pods: &[Arc<Pod>]) -> kube::runtime::reflector::Store<Pod> {
    let mut writer = Writer::<Pod>::default();
    for pod in pods {
        writer.apply_watcher_event(&watcher::Event::Apply((**pod).clone()));
    }
    writer.as_reader()
}

fn kube_runtime_by_node(store: &kube::runtime::reflector::Store<Pod>, node: &str) -> Vec<Arc<Pod>> {
    store
        .state()
        .into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
        .collect()
}

fn kube_runtime_by_namespace(
    store: &kube::runtime::reflector::Store<Pod>,
    ns: &str,
) -> Vec<Arc<Pod>> {
    store
        .state()
        .into_iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
        .collect()
}

fn nodes() -> Vec<String> {
    (0..1000).map(|k| format!("node-{k}")).collect()
}

fn namespaces() -> Vec<String> {
    (0..100).map(|k| format!("ns-{k}")).collect()
}

fn decoded_pods() -> Vec<Arc<Pod>> {
    support::pods(PODS).into_iter().map(Arc::new).collect()
}

/// X1 on this project's store: look-ups by node, then namespace lists.
fn x1_ours() -> Value {
    let pods = decoded_pods();
    let store = our_store(&pods);
    let (nodes, namespaces) = (nodes(), namespaces());
    let mut found = 0;
    let start = Instant::now();
    for k in 0..LOOKUPS {
        found += store
            .by_index("node", &nodes[k % 1000])
            .expect("index")
            .len();
    }
    let by_node = start.elapsed();
    assert_eq!(found, LOOKUPS * 100);
    found = 0;
    let start = Instant::now();
    for k in 0..LISTS {
        found += store
            .by_index(NAMESPACE_INDEX, &namespaces[k % 100])
            .expect("index")
            .len();
    }
    let by_ns = start.elapsed();
    assert_eq!(found, LISTS * 1000);
    json!({
        "by_node_per_s": support::rate(LOOKUPS, by_node),
        "ns_lists_per_s": support::rate(LISTS, by_ns),
    })
}

/// X1 on kube-runtime's reflector store: scans of `state()`.
fn x1_kube() -> Value {
    let pods = decoded_pods();
    let store = kube_runtime_store(&pods);
    let (nodes, namespaces) = (nodes(), namespaces());
    let start = Instant::now();
    for k in 0..SCANS {
        assert_eq!(kube_runtime_by_node(&store, &nodes[k % 1000]).len(), 100);
    }
    let by_node = start.elapsed();
    let start = Instant::now();
    for k in 0..SCANS {
        assert_eq!(
            kube_runtime_by_namespace(&store, &namespaces[k % 100]).len(),
            1000
        );
    }
    let by_ns = start.elapsed();
    json!({
        "by_node_per_s": support::rate(SCANS, by_node),
        "ns_lists_per_s": support::rate(SCANS, by_ns),
    })
}

// ---------- one job: one run of one workload ----------

fn queue_job<K: Key, Q: BenchQueue<K>>(workload: &str, queue: Q, batch: usize) -> Value {
    let rt = runtime();
    let items = queue_items();
    let run = match workload {
        "q1" => q1::<K, Q>(&rt, queue, batch),
        _ => q2::<K, Q>(&rt, queue, batch, workers()),
    };
    if workload == "q1" {
        assert_eq!(run.processed, items, "Q1 hands out every key once");
    }
    json!({
        "adds_per_s": support::rate(items, run.adding),
        "completions_per_s": support::rate(items, run.draining),
        "processed": run.processed,
        "add_s": run.adding.as_secs_f64(),
        "drain_s": run.draining.as_secs_f64(),
        "wall_s": run.total.as_secs_f64(),
    })
}

/// Runs one job (see the module docs) and returns its figures.
fn job(name: &str) -> Value {
    let batch = env_number(BATCH_VAR, 1);
    let (workload, queue) = name.split_once('-').unwrap_or((name, ""));
    match (workload, queue) {
        ("q1" | "q2", "workqueue") => {
            queue_job::<String, _>(workload, WorkQueue::<String>::new(), batch)
        }
        // Q2's adds with no worker running: what the adds cost without contention.
        ("q2", "workqueue-alone") => {
            let run = q2::<String, _>(&runtime(), WorkQueue::<String>::new(), batch, 0);
            json!({ "adds_per_s": support::rate(queue_items(), run.adding), "processed": 0 })
        }
        ("q1" | "q2", "workqueue-key") => {
            queue_job::<ObjectKey, _>(workload, WorkQueue::<ObjectKey>::new(), batch)
        }
        ("q1" | "q2", "priorityqueue") => {
            queue_job::<String, _>(workload, PriorityQueue::<String>::new(), batch)
        }
        ("q1" | "q2", "floor") => {
            queue_job::<String, _>(workload, FloorQueue::<String>::default(), batch)
        }
        ("handoff", "") => json!({
            "shared_per_s": plain_handoff(THREADS),
            "alone_per_s": plain_handoff(1),
        }),
        ("x1", "ours") => x1_ours(),
        ("x1", "kube") => x1_kube(),
        _ => panic!("unknown {JOB_VAR} {name:?}"),
    }
}

// ---------- side by side ----------

/// An implementation in a side-by-side table and how to run it once.
struct Contender {
    name: &'static str,
    /// `Some(job)`: this binary with `CORE_BENCH_JOB=job`; `None`: client-go's harness.
    job: Option<&'static str>,
}

/// One run's figures, the load average just before it, and what the kernel counted for the
/// process (the whole process, set-up included, for every contender alike).
struct Sample {
    figures: Value,
    load: f64,
    counts: ChildCounts,
}

/// What the kernel counted for one child process: context switches (voluntary: it blocked,
/// e.g. a parked thread; involuntary: preempted, or a `sched_yield` that let another run)
/// and CPU time. Unlike wall time, the voluntary switches do not depend on the machine's
/// load.
#[derive(Clone, Copy, Default)]
struct ChildCounts {
    voluntary: f64,
    involuntary: f64,
    cpu_s: f64,
}

/// `getrusage(RUSAGE_CHILDREN)`: the totals of every child waited for so far.
#[allow(
    unsafe_code,
    reason = "libc::getrusage, the only way to a child's counts"
)]
fn children_usage() -> ChildCounts {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage only writes the struct it is given; zeroed is a valid `rusage`.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ChildCounts {
        voluntary: usage.ru_nvcsw as f64,
        involuntary: usage.ru_nivcsw as f64,
        cpu_s: secs(usage.ru_utime) + secs(usage.ru_stime),
    }
}

fn run_child(
    contender: &Contender,
    workload: &str,
    client_go: Option<&PathBuf>,
) -> Option<(Value, ChildCounts)> {
    let mut command = match (contender.job, client_go) {
        (Some(job), _) => {
            let mut c = Command::new(std::env::current_exe().expect("own path"));
            c.env(JOB_VAR, job).env_remove(CALLGRIND_VAR);
            c
        }
        (None, Some(binary)) => {
            let mut c = Command::new(binary);
            c.arg(workload);
            if workload == "x1" {
                c.arg("--pods").arg(support::pods_file(PODS));
            }
            c
        }
        (None, None) => return None,
    };
    let before = children_usage();
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", contender.name));
    let after = children_usage();
    let counts = ChildCounts {
        voluntary: after.voluntary - before.voluntary,
        involuntary: after.involuntary - before.involuntary,
        cpu_s: after.cpu_s - before.cpu_s,
    };
    assert!(
        output.status.success(),
        "{} {workload} failed: {}",
        contender.name,
        output.status
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!(
                "{} {workload} printed no JSON line: {stdout}",
                contender.name
            )
        });
    Some((serde_json::from_str(line).expect("a JSON line"), counts))
}

/// Runs every contender `runs` times, taking turns (the order rotates each round).
fn interleaved(
    workload: &str,
    contenders: &[Contender],
    runs: usize,
    client_go: Option<&PathBuf>,
) -> Vec<Vec<Sample>> {
    let mut samples: Vec<Vec<Sample>> = contenders.iter().map(|_| Vec::new()).collect();
    for round in 0..runs {
        for turn in 0..contenders.len() {
            let i = (turn + round) % contenders.len();
            let load = support::load_average();
            if let Some((figures, counts)) = run_child(&contenders[i], workload, client_go) {
                samples[i].push(Sample {
                    figures,
                    load,
                    counts,
                });
            }
        }
    }
    samples
}

fn figure(sample: &Sample, field: &str) -> f64 {
    sample.figures[field]
        .as_f64()
        .unwrap_or_else(|| panic!("no {field} in {}", sample.figures))
}

/// Prints one row: each contender's median of `field`, and its ratio to the reference (the
/// median of the per-round ratios, with their range), and the load during its runs.
fn print_row(
    metric: &str,
    name: &str,
    ours: &[Sample],
    field: &str,
    references: &[(&str, &[Sample], &str)],
) {
    let values: Vec<f64> = ours.iter().map(|s| figure(s, field)).collect();
    let loads: Vec<f64> = ours.iter().map(|s| s.load).collect();
    let mut line = format!(
        "{metric:<14} {name:<26} {:>11}",
        support::human(support::median(&values))
    );
    for (reference_name, reference, reference_field) in references {
        if reference.is_empty() {
            line += &format!("   {reference_name}: not measured");
            continue;
        }
        let theirs: Vec<f64> = reference
            .iter()
            .map(|s| figure(s, reference_field))
            .collect();
        let ratios: Vec<f64> = values.iter().zip(&theirs).map(|(a, b)| a / b).collect();
        let (lo, hi) = support::range(&ratios);
        line += &format!(
            "   {reference_name} {:>11}  ratio {:>5.2}x ({lo:.2}-{hi:.2})",
            support::human(support::median(&theirs)),
            support::median(&ratios),
        );
    }
    let (lo, hi) = support::range(&loads);
    line += &format!("   load {lo:.1}-{hi:.1}");
    println!("{line}");
}

/// Prints the kernel's counts for a contender's runs: medians of voluntary and involuntary
/// context switches and of CPU time (user + system), per process.
fn print_counts(name: &str, samples: &[Sample]) {
    if samples.is_empty() {
        return;
    }
    let median = |f: fn(&ChildCounts) -> f64| {
        support::median(&samples.iter().map(|s| f(&s.counts)).collect::<Vec<_>>())
    };
    println!(
        "{:<14} {name:<26} {:>8.0} voluntary {:>8.0} involuntary context switches, {:.3} s CPU",
        "kernel",
        median(|c| c.voluntary),
        median(|c| c.involuntary),
        median(|c| c.cpu_s),
    );
}

fn queue_contenders(workload: &str) -> Vec<Contender> {
    let job = |queue: &str| -> &'static str { format!("{workload}-{queue}").leak() };
    let mut contenders = vec![
        Contender {
            name: "WorkQueue<String>",
            job: Some(job("workqueue")),
        },
        Contender {
            name: "WorkQueue<ObjectKey>",
            job: Some(job("workqueue-key")),
        },
        Contender {
            name: "PriorityQueue<String>",
            job: Some(job("priorityqueue")),
        },
        Contender {
            name: "floor (no guarantees)",
            job: Some(job("floor")),
        },
    ];
    if workload == "q2" {
        contenders.push(Contender {
            name: "WorkQueue<String> 0 workers",
            job: Some(job("workqueue-alone")),
        });
    }
    // Last: the tables take the last contender as the reference.
    contenders.push(Contender {
        name: "client-go",
        job: None,
    });
    contenders
}

fn side_by_side(runs: usize) {
    let client_go = std::env::var_os(CLIENT_GO_VAR).map(PathBuf::from);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "\nSide by side: {runs} runs per implementation, each a fresh process, implementations \
         taking turns; medians; ratio = ours / theirs (median of per-run ratios, range); \
         load = 1-minute load average before each run ({cores} cores)."
    );
    match &client_go {
        Some(path) => println!("client-go: {}", path.display()),
        None => println!(
            "client-go: NOT MEASURED ({CLIENT_GO_VAR} is not set; build \
             ../shared/bench/client-go/ as its README says and set it to the binary)"
        ),
    }
    let handoff = job("handoff");
    println!(
        "handoff: one thread popping a Mutex<VecDeque> hands out {} items (the rate of a \
         queue whose lock never moves between cores); {THREADS} threads taking turns, the \
         mutex spinning as it does, {}",
        support::human(handoff["alone_per_s"].as_f64().unwrap_or(0.0)),
        support::human(handoff["shared_per_s"].as_f64().unwrap_or(0.0)),
    );

    for (workload, title) in [
        (
            "q1",
            "Q1: 1,000,000 distinct keys added, then 4 workers drain",
        ),
        (
            "q2",
            "Q2: 1,000,000 adds over 10,000 keys while 4 workers run, then drain",
        ),
    ] {
        println!("\n== {title} (kube-runtime has no workqueue) ==");
        let contenders = queue_contenders(workload);
        let samples = interleaved(workload, &contenders, runs, client_go.as_ref());
        let (ours, client) = samples.split_at(contenders.len() - 1);
        let references = [("client-go", client[0].as_slice(), "adds_per_s")];
        let completions = [("client-go", client[0].as_slice(), "completions_per_s")];
        for (contender, samples) in contenders.iter().zip(ours) {
            print_row("adds/s", contender.name, samples, "adds_per_s", &references);
            if workload == "q1" {
                print_row(
                    "completions/s",
                    contender.name,
                    samples,
                    "completions_per_s",
                    &completions,
                );
            } else {
                let processed: Vec<f64> = samples.iter().map(|s| figure(s, "processed")).collect();
                println!(
                    "{:<14} {:<26} {:>11}",
                    "processed",
                    contender.name,
                    support::median(&processed)
                );
            }
        }
        if !client[0].is_empty() {
            let processed: Vec<f64> = client[0].iter().map(|s| figure(s, "processed")).collect();
            println!(
                "(client-go processed {} items, median)",
                support::median(&processed)
            );
        }
        for (contender, samples) in contenders.iter().zip(&samples) {
            print_counts(contender.name, samples);
        }
    }

    // Each X1 run decodes the 100,000 pods first (a minute or two on a loaded machine).
    let x1_runs = env_number(X1_RUNS_VAR, runs.min(3));
    if x1_runs == 0 {
        return;
    }
    println!("\n== X1: index look-ups over 100,000 pods ({x1_runs} runs each) ==");
    let contenders = [
        Contender {
            name: "ThreadSafeStore",
            job: Some("x1-ours"),
        },
        Contender {
            name: "kube-runtime",
            job: Some("x1-kube"),
        },
        Contender {
            name: "client-go",
            job: None,
        },
    ];
    let samples = interleaved("x1", &contenders, x1_runs, client_go.as_ref());
    for (metric, field) in [
        ("by node/s", "by_node_per_s"),
        ("ns lists/s", "ns_lists_per_s"),
    ] {
        print_row(
            metric,
            "ThreadSafeStore",
            &samples[0],
            field,
            &[
                ("client-go", samples[2].as_slice(), field),
                ("kube-runtime", samples[1].as_slice(), field),
            ],
        );
    }
}

// ---------- criterion ----------

fn criterion_benches(c: &mut Criterion) {
    let pods = decoded_pods();
    let ours = our_store(&pods);
    let theirs = kube_runtime_store(&pods);
    let mut group = c.benchmark_group("X1");
    let mut k = 0usize;
    group.bench_function("informer/by_index_node", |b| {
        b.iter(|| {
            k += 1;
            ours.by_index("node", &format!("node-{}", k % 1000))
                .expect("index")
                .len()
        })
    });
    group.bench_function("informer/by_index_namespace", |b| {
        b.iter(|| {
            k += 1;
            ours.by_index(NAMESPACE_INDEX, &format!("ns-{}", k % 100))
                .expect("index")
                .len()
        })
    });
    group.sample_size(10);
    group.bench_function("kube-runtime/scan_by_node", |b| {
        b.iter(|| {
            k += 1;
            kube_runtime_by_node(&theirs, &format!("node-{}", k % 1000)).len()
        })
    });
    group.finish();

    let rt = runtime();
    let mut group = c.benchmark_group("Q1");
    group.sample_size(10);
    group.bench_function("informer/WorkQueue", |b| {
        b.iter(|| q1::<String, _>(&rt, WorkQueue::<String>::new(), 1).processed)
    });
    group.bench_function("informer/PriorityQueue", |b| {
        b.iter(|| q1::<String, _>(&rt, PriorityQueue::<String>::new(), 1).processed)
    });
    group.bench_function("floor/MutexVecDeque", |b| {
        b.iter(|| q1::<String, _>(&rt, FloorQueue::<String>::default(), 1).processed)
    });
    group.finish();
}

fn main() {
    if let Ok(name) = std::env::var(JOB_VAR) {
        println!("{}", job(&name));
        return;
    }
    let runs = env_number(RUNS_VAR, 5);
    if runs > 0 {
        side_by_side(runs);
    }
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
}
