//! Workloads Q1, Q2 and X1 of `benches/workloads/WORKLOADS.md`, side by side.
//!
//! - Q1/Q2: [`WorkQueue`] and [`PriorityQueue`] beside a floor: a plain
//!   `Mutex<VecDeque> + HashSet` queue with none of the workqueue's guarantees (no processing
//!   set, so it may hand one key to two workers). The floor is what "no queue at all" costs.
//!   Q1 also prints a ceiling: what two threads popping one shared `Mutex<VecDeque>` (pop and
//!   copy out, nothing else) reach on this machine. With both cores taking items from one
//!   FIFO, each hand-out moves the lock and the head of the FIFO from core to core; that
//!   bounds any queue with one FIFO order, whatever it does per item.
//! - X1: [`ThreadSafeStore`] index look-ups beside kube-runtime's reflector store, whose
//!   closest equivalent is a scan of `Store::state()`.
//!
//! First a side-by-side pass prints rates and ratios; then criterion measures the same
//! operations (`cargo bench --bench core -- <filter>` to pick some).
//!
//! For profiling, `CORE_BENCH_JOB=<q1|q2>-<workqueue|priorityqueue|floor>` runs one workload
//! once and exits, on `CORE_BENCH_ITEMS` items (default 1,000,000), the producer adding
//! `CORE_BENCH_BATCH` keys per `add_batch` call if that is set (default: one `add` per key),
//! drained by `CORE_BENCH_WORKERS` workers (default 4; 1 shows the cost without contention).
//! Under callgrind, count only one phase (`adds` or `drain`, the whole Q2 run for `q2`) with
//! `CORE_BENCH_CALLGRIND=<phase>`:
//!
//! ```text
//! CORE_BENCH_JOB=q1-workqueue CORE_BENCH_ITEMS=100000 CORE_BENCH_CALLGRIND=adds \
//!   valgrind --tool=callgrind --collect-atstart=no target/release/deps/core-<hash>
//! ```

mod support;

use std::collections::{HashSet, VecDeque};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use informer::prelude::*;
use informer::store::{NAMESPACE_INDEX, index_fn};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use tokio::runtime::Runtime;
use tokio::sync::Notify;

const QUEUE_ITEMS: usize = 1_000_000;
/// Keys per `add_batch` call in the batched variants of Q1 and Q2.
const BATCH: usize = 256;
const WORKERS: usize = 4;
/// Threads of the runtime the workers run on (this machine's cores).
const THREADS: usize = 2;
const PODS: usize = 100_000;

// ---------- the floor queue ----------

#[derive(Default)]
struct FloorQueue {
    state: parking_lot::Mutex<FloorState>,
    notify: Notify,
}

#[derive(Default)]
struct FloorState {
    items: VecDeque<String>,
    queued: HashSet<String>,
    shut_down: bool,
}

impl FloorQueue {
    fn add(&self, key: String) {
        let mut s = self.state.lock();
        if !s.shut_down && s.queued.insert(key.clone()) {
            s.items.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }
    async fn get(&self) -> Option<String> {
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
trait BenchQueue: Send + Sync + 'static {
    fn add(&self, key: String);
    fn add_batch(&self, keys: Vec<String>) {
        for k in keys {
            self.add(k);
        }
    }
    fn get(&self) -> impl std::future::Future<Output = Option<String>> + Send;
    // `&String`, not `&str`: the queues' `done` takes `&T` with `T = String`, and turning a
    // `&str` back into one would allocate per completion.
    #[expect(clippy::ptr_arg, reason = "the queues take &T with T = String")]
    fn done(&self, key: &String);
    fn shut_down(&self);
}

impl BenchQueue for FloorQueue {
    fn add(&self, key: String) {
        FloorQueue::add(self, key)
    }
    fn get(&self) -> impl std::future::Future<Output = Option<String>> + Send {
        FloorQueue::get(self)
    }
    fn done(&self, _key: &String) {}
    fn shut_down(&self) {
        FloorQueue::shut_down(self)
    }
}

const JOB_VAR: &str = "CORE_BENCH_JOB";
const ITEMS_VAR: &str = "CORE_BENCH_ITEMS";
const CALLGRIND_VAR: &str = "CORE_BENCH_CALLGRIND";
const BATCH_VAR: &str = "CORE_BENCH_BATCH";
const WORKERS_VAR: &str = "CORE_BENCH_WORKERS";

/// How many workers drain the queue (`CORE_BENCH_WORKERS`, for profiling runs; 4 by default).
fn workers() -> usize {
    std::env::var(WORKERS_VAR).map_or(WORKERS, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{WORKERS_VAR}={v} is not a number"))
    })
}

/// How many items the queue workloads add (`CORE_BENCH_ITEMS`, for profiling runs).
fn queue_items() -> usize {
    std::env::var(ITEMS_VAR).map_or(QUEUE_ITEMS, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{ITEMS_VAR}={v} is not a number"))
    })
}

/// Under `valgrind --tool=callgrind --collect-atstart=no` with `CORE_BENCH_CALLGRIND=phase`,
/// switches collection on (`on`) or off around that phase.
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

fn keys(distinct: usize) -> Vec<String> {
    (0..queue_items())
        .map(|i| format!("ns-{}/pod-{}", i % 100, i % distinct))
        .collect()
}

struct QueueRun {
    adding: Duration,
    draining: Duration,
    total: Duration,
    processed: usize,
}

async fn drain_with_workers<Q: BenchQueue>(queue: &Arc<Q>) -> usize {
    let processed = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..workers())
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

/// The producer's loop: `add` of each key, or (`batch` > 1) `add_batch` of `batch` keys.
fn produce<Q: BenchQueue>(queue: &Q, items: Vec<String>, batch: usize) {
    if batch <= 1 {
        for k in items {
            queue.add(k);
        }
        return;
    }
    let mut items = items.into_iter();
    while items.len() > 0 {
        queue.add_batch(items.by_ref().take(batch).collect());
    }
}

/// Q1: add every distinct key, then drain with 4 workers.
fn q1<Q: BenchQueue>(rt: &Runtime, queue: Q) -> QueueRun {
    q1_batched(rt, queue, 1)
}

/// Q1 with the producer adding `batch` keys per `add_batch` call.
fn q1_batched<Q: BenchQueue>(rt: &Runtime, queue: Q, batch: usize) -> QueueRun {
    let queue = Arc::new(queue);
    let items = keys(queue_items());
    rt.block_on(async {
        callgrind("adds", true);
        let start = Instant::now();
        produce(&*queue, items, batch);
        let adding = start.elapsed();
        callgrind("adds", false);
        queue.shut_down();
        callgrind("drain", true);
        let drain_start = Instant::now();
        let processed = drain_with_workers(&queue).await;
        callgrind("drain", false);
        QueueRun {
            adding,
            draining: drain_start.elapsed(),
            total: start.elapsed(),
            processed,
        }
    })
}

/// Q2: one producer adds keys from 10,000 distinct ones while 4 workers run.
fn q2<Q: BenchQueue>(rt: &Runtime, queue: Q, drain: impl AsyncFnOnce(&Q)) -> QueueRun {
    q2_batched(rt, queue, 1, drain)
}

/// Q2 with the producer adding `batch` keys per `add_batch` call.
fn q2_batched<Q: BenchQueue>(
    rt: &Runtime,
    queue: Q,
    batch: usize,
    drain: impl AsyncFnOnce(&Q),
) -> QueueRun {
    let queue = Arc::new(queue);
    let items = keys(10_000);
    rt.block_on(async {
        callgrind("q2", true);
        let start = Instant::now();
        let workers = {
            let q = queue.clone();
            tokio::spawn(async move { drain_with_workers(&q).await })
        };
        let producer = {
            let q = queue.clone();
            tokio::spawn(async move {
                let start = Instant::now();
                produce(&*q, items, batch);
                start.elapsed()
            })
        };
        let adding = producer.await.expect("producer");
        let drain_start = Instant::now();
        drain(&queue).await;
        let processed = workers.await.expect("workers");
        callgrind("q2", false);
        QueueRun {
            adding,
            draining: drain_start.elapsed(),
            total: start.elapsed(),
            processed,
        }
    })
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(THREADS)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// What any queue with one shared FIFO can hand out per second on this machine: `threads`
/// threads popping a pre-filled `Mutex<VecDeque<String>>` and copying each item out (what a
/// workqueue's `get` must do at the least), with no deduplication, no `done`, no wake-ups.
/// With two threads this is bound by moving the lock and the deque's head between cores.
fn handoff_ceiling(threads: usize) -> f64 {
    let items = keys(queue_items());
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
        h.join().expect("ceiling thread");
    }
    support::rate(n, t.elapsed())
}

fn side_by_side_queues() {
    let rt = runtime();
    println!("\n== Q1: 1,000,000 distinct keys, then 4 workers drain ==");
    let (shared, alone) = (handoff_ceiling(THREADS), handoff_ceiling(1));
    println!(
        "Q1   ceiling: {THREADS} threads popping one shared Mutex<VecDeque> hand out {:.2} M items/s \
         (one thread alone: {:.2} M/s); no shared-FIFO queue completes faster here",
        shared / 1e6,
        alone / 1e6
    );
    let floor = q1(&rt, FloorQueue::default());
    for (name, run) in [
        ("WorkQueue", q1(&rt, WorkQueue::<String>::new())),
        ("PriorityQueue", q1(&rt, PriorityQueue::<String>::new())),
    ] {
        assert_eq!(run.processed, QUEUE_ITEMS);
        let what = format!("{name} adds");
        support::report(
            "Q1",
            &what,
            support::rate(QUEUE_ITEMS, run.adding),
            "floor",
            support::rate(QUEUE_ITEMS, floor.adding),
        );
        let what = format!("{name} completions");
        support::report(
            "Q1",
            &what,
            support::rate(QUEUE_ITEMS, run.draining),
            "floor",
            support::rate(QUEUE_ITEMS, floor.draining),
        );
        support::report(
            "Q1",
            &what,
            support::rate(QUEUE_ITEMS, run.draining),
            "ceiling",
            shared,
        );
        support::quote(
            "Q1",
            &format!("{name} adds"),
            support::rate(QUEUE_ITEMS, run.adding),
            "client-go",
            1.2e6,
        );
        support::quote(
            "Q1",
            &format!("{name} completions"),
            support::rate(QUEUE_ITEMS, run.draining),
            "client-go",
            1.2e6,
        );
        println!(
            "Q1   {name} wall time {:?} (floor {:?})",
            run.total, floor.total
        );
    }

    // Not the workload as written (one `add` per key): the same producer handing the queue
    // `BATCH` keys per `add_batch` call, for callers that have several keys at once.
    let run = q1_batched(&rt, WorkQueue::<String>::new(), BATCH);
    assert_eq!(run.processed, QUEUE_ITEMS);
    support::quote(
        "Q1",
        &format!("WorkQueue adds, add_batch({BATCH})"),
        support::rate(QUEUE_ITEMS, run.adding),
        "client-go",
        1.2e6,
    );

    println!("\n== Q2: 1,000,000 adds over 10,000 keys while 4 workers run, then drain ==");
    let floor = q2(&rt, FloorQueue::default(), async |q: &FloorQueue| {
        q.shut_down()
    });
    for (name, run) in [
        (
            "WorkQueue",
            q2(
                &rt,
                WorkQueue::<String>::new(),
                async |q: &WorkQueue<String>| q.shut_down_with_drain(true).await,
            ),
        ),
        (
            "PriorityQueue",
            q2(
                &rt,
                PriorityQueue::<String>::new(),
                async |q: &PriorityQueue<String>| q.shut_down_with_drain(true).await,
            ),
        ),
    ] {
        let what = format!("{name} adds");
        support::report(
            "Q2",
            &what,
            support::rate(QUEUE_ITEMS, run.adding),
            "floor",
            support::rate(QUEUE_ITEMS, floor.adding),
        );
        support::quote(
            "Q2",
            &what,
            support::rate(QUEUE_ITEMS, run.adding),
            "client-go",
            2.7e6,
        );
        println!(
            "Q2   {name} processed {} items (floor {}), wall time {:?} (floor {:?}), drain {:?}",
            run.processed, floor.processed, run.total, floor.total, run.draining
        );
    }
    // As for Q1: not the workload as written, the producer using `add_batch`.
    let run = q2_batched(
        &rt,
        WorkQueue::<String>::new(),
        BATCH,
        async |q: &WorkQueue<String>| q.shut_down_with_drain(true).await,
    );
    support::quote(
        "Q2",
        &format!("WorkQueue adds, add_batch({BATCH})"),
        support::rate(QUEUE_ITEMS, run.adding),
        "client-go",
        2.7e6,
    );
    println!(
        "Q2   WorkQueue add_batch({BATCH}) processed {} items",
        run.processed
    );
}

impl<Q: Queue<String> + 'static> BenchQueue for Q {
    fn add(&self, key: String) {
        Queue::add(self, key)
    }
    fn add_batch(&self, keys: Vec<String>) {
        Queue::add_batch(self, keys)
    }
    fn get(&self) -> impl std::future::Future<Output = Option<String>> + Send {
        Queue::get(self)
    }
    fn done(&self, key: &String) {
        Queue::done(self, key)
    }
    fn shut_down(&self) {
        Queue::shut_down(self)
    }
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

fn side_by_side_lookups(pods: &[Arc<Pod>]) {
    println!("\n== X1: index look-ups over 100,000 pods ==");
    let ours = our_store(pods);
    let theirs = kube_runtime_store(pods);
    let nodes: Vec<String> = (0..1000).map(|k| format!("node-{k}")).collect();
    let namespaces: Vec<String> = (0..100).map(|k| format!("ns-{k}")).collect();

    let (lookups, scans) = (1_000_000, 40);
    let mut found = 0;
    let start = Instant::now();
    for k in 0..lookups {
        found += ours
            .by_index("node", &nodes[k % 1000])
            .expect("index")
            .len();
    }
    let our_rate = support::rate(lookups, start.elapsed());
    assert_eq!(found, lookups * 100);
    let start = Instant::now();
    for k in 0..scans {
        assert_eq!(kube_runtime_by_node(&theirs, &nodes[k % 1000]).len(), 100);
    }
    let their_rate = support::rate(scans, start.elapsed());
    support::report(
        "X1",
        "look-ups by node (100 pods each)",
        our_rate,
        "kube-runtime",
        their_rate,
    );
    support::quote(
        "X1",
        "look-ups by node (100 pods each)",
        our_rate,
        "client-go",
        75_000.0,
    );

    let lists = 100_000;
    let start = Instant::now();
    for k in 0..lists {
        found += ours
            .by_index(NAMESPACE_INDEX, &namespaces[k % 100])
            .expect("index")
            .len();
    }
    let our_rate = support::rate(lists, start.elapsed());
    let start = Instant::now();
    for k in 0..scans {
        assert_eq!(
            kube_runtime_by_namespace(&theirs, &namespaces[k % 100]).len(),
            1000
        );
    }
    let their_rate = support::rate(scans, start.elapsed());
    support::report(
        "X1",
        "namespace lists (1,000 pods each)",
        our_rate,
        "kube-runtime",
        their_rate,
    );
    support::quote(
        "X1",
        "namespace lists (1,000 pods each)",
        our_rate,
        "client-go",
        8_000.0,
    );
    std::hint::black_box(found);
}

// ---------- criterion ----------

fn criterion_benches(c: &mut Criterion, pods: &[Arc<Pod>]) {
    let ours = our_store(pods);
    let theirs = kube_runtime_store(pods);
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
        b.iter(|| q1(&rt, WorkQueue::<String>::new()).processed)
    });
    group.bench_function("informer/PriorityQueue", |b| {
        b.iter(|| q1(&rt, PriorityQueue::<String>::new()).processed)
    });
    group.bench_function("floor/MutexVecDeque", |b| {
        b.iter(|| q1(&rt, FloorQueue::default()).processed)
    });
    group.finish();
}

fn benches(c: &mut Criterion) {
    let pods: Vec<Arc<Pod>> = support::pods(PODS).into_iter().map(Arc::new).collect();
    side_by_side_queues();
    side_by_side_lookups(&pods);
    criterion_benches(c, &pods);
}

/// Runs one queue workload once (see the module docs).
fn job(name: &str) {
    let rt = runtime();
    let batch = std::env::var(BATCH_VAR).map_or(1, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{BATCH_VAR}={v} is not a number"))
    });
    let run = match name {
        "q1-workqueue" => q1_batched(&rt, WorkQueue::<String>::new(), batch),
        "q1-priorityqueue" => q1_batched(&rt, PriorityQueue::<String>::new(), batch),
        "q1-floor" => q1_batched(&rt, FloorQueue::default(), batch),
        "q2-workqueue" => q2_batched(
            &rt,
            WorkQueue::new(),
            batch,
            async |q: &WorkQueue<String>| q.shut_down_with_drain(true).await,
        ),
        "q2-priorityqueue" => q2_batched(
            &rt,
            PriorityQueue::new(),
            batch,
            async |q: &PriorityQueue<String>| q.shut_down_with_drain(true).await,
        ),
        "q2-floor" => q2_batched(&rt, FloorQueue::default(), batch, async |q: &FloorQueue| {
            q.shut_down()
        }),
        _ => panic!("unknown {JOB_VAR} {name:?}"),
    };
    let items = queue_items();
    println!(
        "{name}: {items} adds in {:?} ({:.2} M/s), {} processed, drain {:?}, wall time {:?}",
        run.adding,
        items as f64 / run.adding.as_secs_f64() / 1e6,
        run.processed,
        run.draining,
        run.total
    );
}

fn main() {
    if let Ok(name) = std::env::var(JOB_VAR) {
        job(&name);
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
}
