//! Property and concurrency tests for `WorkQueue` and `PriorityQueue`.
//!
//! 1. Random operation sequences (add, add with priority, add_after, add_rate_limited,
//!    get, done, forget, time passing, shutdown) run against a small, obviously correct model
//!    under tokio's paused clock; after every operation the queue and the model must agree
//!    on what is handed out (item and priority), the length, the number of delayed and
//!    in-flight items, and the rate limiter's counts.
//! 2. Workers on a multi-threaded runtime, for random producer schedules (proptest: adds,
//!    delayed adds, priorities, batches, yields; random thread and worker counts) and for
//!    long fixed stress runs: no item is ever held by two workers, every item added before
//!    shutdown is processed after its last add, and shutdown with drain finishes everything.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use informer_core::queue::{
    ItemExponentialFailureRateLimiter, PRIORITY_LOW, PRIORITY_NORMAL, PriorityQueue, Queue,
    WorkQueue,
};
use parking_lot::Mutex;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// 1. Sequential model
// ---------------------------------------------------------------------------------------

const BASE_MS: u64 = 1;
const MAX_MS: u64 = 64;

#[derive(Clone, Debug)]
enum Op {
    Add(u8, i32),
    /// `Queue::add_batch` (priority normal).
    AddBatch(Vec<u8>),
    AddAfter(u8, u64, i32),
    AddRateLimited(u8, i32),
    /// `try_get` (or `get` polled once, when the flag is set).
    Get(bool),
    Done(u8),
    Forget(u8),
    Advance(u64),
    ShutDown,
    /// Compare `len`, `stats` and `num_requeues` (these move due items too, so they are an
    /// operation of their own rather than a check after every step).
    Check,
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..6;
    let prio = prop_oneof![Just(PRIORITY_LOW), Just(PRIORITY_NORMAL), Just(5)];
    prop_oneof![
        4 => (key.clone(), prio.clone()).prop_map(|(k, p)| Op::Add(k, p)),
        1 => prop::collection::vec(key.clone(), 0..8).prop_map(Op::AddBatch),
        3 => (key.clone(), 0u64..40, prio.clone()).prop_map(|(k, d, p)| Op::AddAfter(k, d, p)),
        1 => (key.clone(), prio).prop_map(|(k, p)| Op::AddRateLimited(k, p)),
        4 => any::<bool>().prop_map(Op::Get),
        3 => key.clone().prop_map(Op::Done),
        1 => key.prop_map(Op::Forget),
        2 => (0u64..30).prop_map(Op::Advance),
        1 => Just(Op::ShutDown),
        2 => Just(Op::Check),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Ready,
    Delayed,
    Processing,
    ProcessingReady,
    ProcessingDelayed,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    phase: Phase,
    prio: i32,
    /// Position in the ready order (phase `Ready`).
    ready_seq: u64,
    /// Deadline in ms and its tie-breaker (phases `*Delayed`).
    deadline: u64,
    dseq: u64,
}

/// What the queues promise, written as plainly as possible.
struct Model {
    priorities: bool,
    now: u64,
    seq: u64,
    shut_down: bool,
    items: BTreeMap<u8, Entry>,
    failures: BTreeMap<u8, u32>,
}

impl Model {
    fn new(priorities: bool) -> Self {
        Self {
            priorities,
            now: 0,
            seq: 0,
            shut_down: false,
            items: BTreeMap::new(),
            failures: BTreeMap::new(),
        }
    }

    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Due delayed items become ready, in (deadline, order the deadline was set) order.
    fn promote(&mut self) {
        let mut due: Vec<(u64, u64, u8)> = self
            .items
            .iter()
            .filter(|(_, e)| {
                matches!(e.phase, Phase::Delayed | Phase::ProcessingDelayed)
                    && e.deadline <= self.now
            })
            .map(|(&k, e)| (e.deadline, e.dseq, k))
            .collect();
        due.sort();
        for (_, _, k) in due {
            let seq = self.next();
            let e = self.items.get_mut(&k).unwrap();
            if e.phase == Phase::Delayed {
                e.phase = Phase::Ready;
                e.ready_seq = seq;
            } else {
                e.phase = Phase::ProcessingReady;
            }
        }
    }

    fn add(&mut self, k: u8, prio: i32, delay: Option<u64>) {
        let prio = if self.priorities {
            prio
        } else {
            PRIORITY_NORMAL
        };
        if self.shut_down {
            return;
        }
        self.promote();
        let deadline = delay.filter(|&d| d > 0).map(|d| self.now + d);
        let seq = self.next();
        let Some(e) = self.items.get_mut(&k) else {
            let entry = match deadline {
                None => Entry {
                    phase: Phase::Ready,
                    prio,
                    ready_seq: seq,
                    deadline: 0,
                    dseq: 0,
                },
                Some(d) => Entry {
                    phase: Phase::Delayed,
                    prio,
                    ready_seq: 0,
                    deadline: d,
                    dseq: seq,
                },
            };
            self.items.insert(k, entry);
            return;
        };
        match (e.phase, deadline) {
            (Phase::Ready, _) => {
                if prio > e.prio {
                    e.prio = prio;
                    e.ready_seq = seq;
                }
            }
            (Phase::Delayed, None) => {
                e.prio = e.prio.max(prio);
                e.phase = Phase::Ready;
                e.ready_seq = seq;
            }
            (Phase::Delayed | Phase::ProcessingDelayed, Some(d)) => {
                e.prio = e.prio.max(prio);
                if d < e.deadline {
                    e.deadline = d;
                    e.dseq = seq;
                }
            }
            (Phase::Processing, None) => {
                e.prio = prio;
                e.phase = Phase::ProcessingReady;
            }
            (Phase::Processing, Some(d)) => {
                e.prio = prio;
                e.phase = Phase::ProcessingDelayed;
                e.deadline = d;
                e.dseq = seq;
            }
            (Phase::ProcessingReady, _) => e.prio = e.prio.max(prio),
            (Phase::ProcessingDelayed, None) => {
                e.prio = e.prio.max(prio);
                e.phase = Phase::ProcessingReady;
            }
        }
    }

    /// The failure counts even when shut down (client-go's `AddRateLimited` asks `When`
    /// before `AddAfter` drops the item).
    fn add_rate_limited(&mut self, k: u8, prio: i32) {
        let n = self.failures.entry(k).or_insert(0);
        let delay = (BASE_MS << (*n).min(20)).min(MAX_MS);
        *n += 1;
        self.add(k, prio, Some(delay));
    }

    fn get(&mut self) -> Option<(u8, i32)> {
        self.promote();
        let (&k, _) = self
            .items
            .iter()
            .filter(|(_, e)| e.phase == Phase::Ready)
            .min_by_key(|(_, e)| (std::cmp::Reverse(e.prio), e.ready_seq))?;
        let e = self.items.get_mut(&k).unwrap();
        e.phase = Phase::Processing;
        Some((k, e.prio))
    }

    fn done(&mut self, k: u8) {
        self.promote();
        let seq = self.next();
        let Some(e) = self.items.get_mut(&k) else {
            return;
        };
        match e.phase {
            Phase::Processing => {
                self.items.remove(&k);
            }
            Phase::ProcessingReady => {
                e.phase = Phase::Ready;
                e.ready_seq = seq;
            }
            Phase::ProcessingDelayed => e.phase = Phase::Delayed,
            Phase::Ready | Phase::Delayed => {}
        }
    }

    fn shut_down(&mut self) {
        if self.shut_down {
            return;
        }
        self.promote();
        self.shut_down = true;
        self.items.retain(|_, e| e.phase != Phase::Delayed);
        for e in self.items.values_mut() {
            if e.phase == Phase::ProcessingDelayed {
                e.phase = Phase::Processing;
            }
        }
    }

    fn count(&self, phases: &[Phase]) -> usize {
        self.items
            .values()
            .filter(|e| phases.contains(&e.phase))
            .count()
    }
}

/// The operations under test, over both queue types.
trait UnderTest: Send + Sync {
    fn queue(&self) -> &dyn Queue<u8>;
    fn add_p(&self, k: u8, p: i32);
    fn add_after_p(&self, k: u8, d: Duration, p: i32);
    fn add_rate_limited_p(&self, k: u8, p: i32);
    fn try_get_p(&self) -> Option<(u8, i32)>;
    fn get_once_p(&self) -> Option<(u8, i32)>;
    fn stats(&self) -> informer_core::queue::QueueStats;
}

impl UnderTest for WorkQueue<u8> {
    fn queue(&self) -> &dyn Queue<u8> {
        self
    }
    fn add_p(&self, k: u8, p: i32) {
        Queue::add_with_priority(self, k, p)
    }
    fn add_after_p(&self, k: u8, d: Duration, _: i32) {
        self.add_after(k, d)
    }
    fn add_rate_limited_p(&self, k: u8, _: i32) {
        self.add_rate_limited(k)
    }
    fn try_get_p(&self) -> Option<(u8, i32)> {
        self.try_get().map(|k| (k, PRIORITY_NORMAL))
    }
    fn get_once_p(&self) -> Option<(u8, i32)> {
        // Through the object-safe trait; a pending future is dropped (cancelled).
        let q: &dyn Queue<u8> = self;
        q.get()
            .now_or_never()
            .flatten()
            .map(|k| (k, PRIORITY_NORMAL))
    }
    fn stats(&self) -> informer_core::queue::QueueStats {
        WorkQueue::stats(self)
    }
}

impl UnderTest for PriorityQueue<u8> {
    fn queue(&self) -> &dyn Queue<u8> {
        self
    }
    fn add_p(&self, k: u8, p: i32) {
        self.add_with_priority(k, p)
    }
    fn add_after_p(&self, k: u8, d: Duration, p: i32) {
        self.add_after_with_priority(k, d, p)
    }
    fn add_rate_limited_p(&self, k: u8, p: i32) {
        self.add_rate_limited_with_priority(k, p)
    }
    fn try_get_p(&self) -> Option<(u8, i32)> {
        self.try_get_with_priority()
    }
    fn get_once_p(&self) -> Option<(u8, i32)> {
        self.get_with_priority().now_or_never().flatten()
    }
    fn stats(&self) -> informer_core::queue::QueueStats {
        PriorityQueue::stats(self)
    }
}

fn limiter() -> Arc<ItemExponentialFailureRateLimiter<u8>> {
    Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(BASE_MS),
        Duration::from_millis(MAX_MS),
    ))
}

fn run_against_model(q: &dyn UnderTest, priorities: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async {
        let mut m = Model::new(priorities);
        for (step, op) in ops.iter().enumerate() {
            match *op {
                Op::Add(k, p) => {
                    m.add(k, p, None);
                    q.add_p(k, p);
                }
                Op::AddBatch(ref keys) => {
                    for &k in keys {
                        m.add(k, PRIORITY_NORMAL, None);
                    }
                    q.queue().add_batch(keys.clone());
                }
                Op::AddAfter(k, d, p) => {
                    m.add(k, p, Some(d));
                    q.add_after_p(k, Duration::from_millis(d), p);
                }
                Op::AddRateLimited(k, p) => {
                    m.add_rate_limited(k, p);
                    q.add_rate_limited_p(k, p);
                }
                Op::Get(through_get) => {
                    let want = m.get();
                    let got = if through_get {
                        q.get_once_p()
                    } else {
                        q.try_get_p()
                    };
                    prop_assert_eq!(got, want, "step {}: {:?}", step, op);
                }
                Op::Done(k) => {
                    m.done(k);
                    q.queue().done(&k);
                }
                Op::Forget(k) => {
                    m.failures.remove(&k);
                    q.queue().forget(&k);
                }
                Op::Advance(ms) => {
                    m.now += ms;
                    tokio::time::advance(Duration::from_millis(ms)).await;
                }
                Op::ShutDown => {
                    m.shut_down();
                    q.queue().shut_down();
                }
                Op::Check => check(q, &mut m, step)?,
            }
            prop_assert_eq!(q.queue().is_shutting_down(), m.shut_down);
        }
        // Finally, everything the model still has ready comes out in the model's order.
        loop {
            let want = m.get();
            let got = q.try_get_p();
            prop_assert_eq!(got, want, "final drain");
            let Some((k, _)) = got else { break };
            m.done(k);
            q.queue().done(&k);
        }
        Ok(())
    })
}

fn check(q: &dyn UnderTest, m: &mut Model, step: usize) -> Result<(), TestCaseError> {
    m.promote();
    let stats = q.stats();
    prop_assert_eq!(
        q.queue().len(),
        m.count(&[Phase::Ready]),
        "len, step {}",
        step
    );
    prop_assert_eq!(q.queue().is_empty(), m.count(&[Phase::Ready]) == 0);
    prop_assert_eq!(
        stats.depth,
        m.count(&[Phase::Ready]),
        "depth, step {}",
        step
    );
    prop_assert_eq!(
        stats.delayed,
        m.count(&[Phase::Delayed, Phase::ProcessingDelayed]),
        "delayed, step {}",
        step
    );
    prop_assert_eq!(
        stats.in_flight,
        m.count(&[
            Phase::Processing,
            Phase::ProcessingReady,
            Phase::ProcessingDelayed
        ]),
        "in flight, step {}",
        step
    );
    for k in 0..6u8 {
        let want = m.failures.get(&k).copied().unwrap_or(0);
        prop_assert_eq!(q.queue().num_requeues(&k), want, "requeues of {}", k);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn work_queue_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        let q: WorkQueue<u8> = WorkQueue::builder().rate_limiter(limiter()).build();
        run_against_model(&q, false, &ops)?;
    }

    #[test]
    fn priority_queue_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        let q: PriorityQueue<u8> = PriorityQueue::builder().rate_limiter(limiter()).build();
        run_against_model(&q, true, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------
// 2. Concurrency
// ---------------------------------------------------------------------------------------

const KEYS: usize = 200;

/// Shared bookkeeping of a concurrent run.
struct Tracker {
    /// Items currently held by some worker.
    held: Mutex<HashSet<u32>>,
    /// A global logical clock.
    clock: AtomicU64,
    /// Per key: clock value just before its last add (0 = never added).
    last_add: Vec<AtomicU64>,
    /// Per key: the largest clock value just after a get returned it.
    last_got: Vec<AtomicU64>,
}

impl Tracker {
    fn new() -> Self {
        Self {
            held: Mutex::new(HashSet::new()),
            clock: AtomicU64::new(1),
            last_add: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
            last_got: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
}

/// One producer step of a concurrent run.
#[derive(Clone, Debug)]
enum Produce {
    Add(u32),
    AddAfter(u32, u64),
    AddWithPriority(u32, i32),
    AddBatch(Vec<u32>),
    /// Let the workers run for a moment.
    Yield,
}

fn produce() -> impl Strategy<Value = Produce> {
    let key = 0..KEYS as u32;
    prop_oneof![
        6 => key.clone().prop_map(Produce::Add),
        2 => (key.clone(), 0u64..500).prop_map(|(k, us)| Produce::AddAfter(k, us)),
        2 => (key.clone(), prop_oneof![Just(PRIORITY_LOW), Just(3)])
            .prop_map(|(k, p)| Produce::AddWithPriority(k, p)),
        1 => prop::collection::vec(key, 1..40).prop_map(Produce::AddBatch),
        1 => Just(Produce::Yield),
    ]
}

/// The producer steps of the fixed stress runs: a cheap deterministic pseudo-random
/// sequence of `n` steps.
fn stress(seed: u64, n: usize) -> Vec<Produce> {
    let mut x = seed | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % KEYS as u64) as u32;
            if i % 1024 == 1023 {
                return Produce::Yield;
            }
            match x % 16 {
                0 => Produce::AddAfter(k, 0),
                1 => Produce::AddAfter(k, x % 500),
                2 => Produce::AddWithPriority(k, PRIORITY_LOW),
                3 => Produce::AddWithPriority(k, 3),
                _ => Produce::Add(k),
            }
        })
        .collect()
}

/// A worker: checks that nobody else holds what it got; requeues every `requeue_every`th
/// item from inside its work, as a failing reconcile would.
async fn worker(q: Arc<dyn Queue<u32>>, t: Arc<Tracker>, id: usize, requeue_every: usize) {
    let mut n = 0usize;
    while let Some(k) = q.get().await {
        let now = t.tick();
        t.last_got[k as usize].fetch_max(now, Ordering::SeqCst);
        assert!(
            t.held.lock().insert(k),
            "item {k} handed to two workers at once"
        );
        n += 1;
        if (n + id).is_multiple_of(7) {
            tokio::task::yield_now().await;
        }
        if (n + id).is_multiple_of(requeue_every) {
            q.add_after(k, Duration::from_micros(200));
        }
        assert!(t.held.lock().remove(&k));
        q.done(&k);
    }
}

/// Runs `steps` from one producer while `workers` workers drain `q` on `threads` threads,
/// then shuts down with drain. Panics if any guarantee is broken: an item held by two
/// workers, a key whose last add was not followed by a hand-out, a drain that returned with
/// items in flight or queued, a worker that did not exit.
fn run_concurrently(
    q: Arc<dyn Queue<u32>>,
    threads: usize,
    workers: usize,
    requeue_every: usize,
    steps: &[Produce],
) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async move {
        let t = Arc::new(Tracker::new());
        let handles: Vec<_> = (0..workers)
            .map(|id| tokio::spawn(worker(q.clone(), t.clone(), id, requeue_every)))
            .collect();
        let stamp = |k: u32| {
            let at = t.tick();
            t.last_add[k as usize].store(at, Ordering::SeqCst);
        };
        for step in steps {
            match step {
                Produce::Add(k) => {
                    stamp(*k);
                    q.add(*k)
                }
                Produce::AddAfter(k, us) => {
                    stamp(*k);
                    q.add_after(*k, Duration::from_micros(*us))
                }
                Produce::AddWithPriority(k, p) => {
                    stamp(*k);
                    q.add_with_priority(*k, *p)
                }
                Produce::AddBatch(keys) => {
                    keys.iter().for_each(|k| stamp(*k));
                    q.add_batch(keys.clone())
                }
                Produce::Yield => tokio::task::yield_now().await,
            }
        }
        // Let every delay pass, then drain everything.
        tokio::time::sleep(Duration::from_millis(20)).await;
        tokio::time::timeout(Duration::from_secs(20), q.shut_down_with_drain(true))
            .await
            .expect("shutdown with drain finished");
        assert!(
            t.held.lock().is_empty(),
            "drain returned with items in flight"
        );
        assert!(q.is_empty());
        for h in handles {
            tokio::time::timeout(Duration::from_secs(20), h)
                .await
                .expect("worker exited")
                .expect("worker did not panic");
        }
        for k in 0..KEYS {
            let added = t.last_add[k].load(Ordering::SeqCst);
            if added != 0 {
                let got = t.last_got[k].load(Ordering::SeqCst);
                assert!(
                    got > added,
                    "key {k} added at {added} but last processed at {got}"
                );
            }
        }
    });
}

proptest! {
    // Each case runs a multi-threaded runtime: fewer cases than the sequential model.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn work_queue_workers_keep_the_guarantees_for_any_schedule(
        threads in 2usize..=4,
        workers in 1usize..=8,
        requeue_every in 5usize..200,
        steps in prop::collection::vec(produce(), 1..1500),
    ) {
        run_concurrently(Arc::new(WorkQueue::new()), threads, workers, requeue_every, &steps);
    }

    #[test]
    fn priority_queue_workers_keep_the_guarantees_for_any_schedule(
        threads in 2usize..=4,
        workers in 1usize..=8,
        requeue_every in 5usize..200,
        steps in prop::collection::vec(produce(), 1..1500),
    ) {
        run_concurrently(Arc::new(PriorityQueue::new()), threads, workers, requeue_every, &steps);
    }
}

#[test]
fn work_queue_concurrent_workers_keep_the_guarantees_under_a_long_stress_run() {
    for (threads, workers, seed) in [(2, 4, 1), (3, 6, 2), (4, 8, 3)] {
        run_concurrently(
            Arc::new(WorkQueue::new()),
            threads,
            workers,
            97,
            &stress(seed, 60_000),
        );
    }
}

#[test]
fn priority_queue_concurrent_workers_keep_the_guarantees_under_a_long_stress_run() {
    for (threads, workers, seed) in [(2, 4, 4), (3, 6, 5), (4, 8, 6)] {
        run_concurrently(
            Arc::new(PriorityQueue::new()),
            threads,
            workers,
            97,
            &stress(seed, 60_000),
        );
    }
}

/// Plain adds over a few hot keys, no delays: most adds find their key waiting, racing with
/// workers that hand the same keys out, spin when the queue is empty and park when the
/// producer yields. No add may be lost: each key is processed after its last add.
#[test]
fn hot_keys_added_while_workers_spin_and_park_lose_nothing() {
    let steps: Vec<Produce> = (0..200_000u32)
        .map(|i| match i % 4096 {
            4095 => Produce::Yield,
            _ => Produce::Add(i.wrapping_mul(2_654_435_761) % 16),
        })
        .collect();
    let batches: Vec<Produce> = (0..20_000u32)
        .map(|i| Produce::AddBatch((0..8).map(|j| (i + j * 3) % 16).collect()))
        .collect();
    for (threads, workers) in [(2, 4), (4, 8)] {
        run_concurrently(
            Arc::new(WorkQueue::new()),
            threads,
            workers,
            usize::MAX,
            &steps,
        );
        run_concurrently(
            Arc::new(PriorityQueue::new()),
            threads,
            workers,
            usize::MAX,
            &steps,
        );
        run_concurrently(
            Arc::new(WorkQueue::new()),
            threads,
            workers,
            usize::MAX,
            &batches,
        );
    }
}

/// Workers waiting on an empty queue are woken by delayed items only; many short delays
/// racing with the timer hand-over must not strand any item.
#[test]
fn delayed_items_reach_idle_workers_on_a_multi_threaded_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let q = Arc::new(WorkQueue::<u32>::new());
        let got = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                let got = got.clone();
                tokio::spawn(async move {
                    while let Some(k) = q.get().await {
                        got.fetch_add(1, Ordering::SeqCst);
                        q.done(&k);
                    }
                })
            })
            .collect();
        for k in 0..500u32 {
            q.add_after(k, Duration::from_micros(u64::from(k % 50) * 100));
        }
        tokio::time::timeout(Duration::from_secs(20), async {
            while got.load(Ordering::SeqCst) < 500 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("every delayed item was handed out without further adds");
        q.shut_down();
        for h in handles {
            h.await.unwrap();
        }
    });
}
