//! The state machine both queues share: deduplication, processing/dirty tracking, delays,
//! priorities, waking workers, shutdown and drain, counters.
//!
//! [`WorkQueue`](super::WorkQueue) is this engine with every priority equal;
//! [`PriorityQueue`](super::PriorityQueue) is this engine with priorities honoured.
//!
//! # Layout
//!
//! Every item the queue knows about (waiting, delayed or being processed) lives once in a
//! slab slot, found through a [`SlotTable`] of (32-bit hash tag, slot id) pairs: the item's hash
//! is computed before taking the lock, the table never rehashes items nor looks at a slot
//! whose tag differs, and a lookup usually reads one cache line. Ready items are chained
//! through their slots into one intrusive FIFO list per priority; delayed items sit in an
//! indexed min-heap ([`DelayHeap`]). So an item is hashed once per `add` and once per `done`,
//! cloned once per `get` (a `String` into the buffer of an item the queue forgot: see
//! [`State::copy_out`]), and in steady state nothing is allocated per operation beyond the
//! item itself. Everything is behind one `parking_lot` mutex, held for a few dozen
//! nanoseconds per operation; wake-ups, metrics hooks and drops of items happen after it is
//! released. A thread that finds the lock taken backs off before it looks again, a worker
//! longer than an adder (see [`Backoff`]), so that the holder keeps the hot cache lines.
//!
//! While no item is delayed and no metrics hooks are installed (so no due item can need
//! promoting and no clock needs reading), the three hot operations take shortcuts that change
//! nothing observable: an `add` of an item already waiting (most adds under load) is one
//! lookup under the lock; a `get` that finds an item ready pops it without touching the
//! parked-worker list (and `get` does so before it makes its waiting future); a `done` of an
//! item not re-added forgets it. Every other case goes the general way (`State::add`,
//! `State::take`, `State::done`).
//!
//! An `add` of an item already waiting is not answered without the lock: that was measured
//! (a `papaya` map of the waiting items, with per-slot status words) and lost. It costs more
//! instructions than the lock it saves (274 against 164 per add of Q2 with no worker), and
//! with workers running it let them drain the queue faster, so that more of the producer's
//! adds were of new items, which take the lock anyway (Q2, 5,000,000 adds: 17-19 M adds/s
//! against 21-23 M/s without it at load 5; 2.7-3.2 M/s against 3.5-4.1 M/s at load 1.5,
//! when the workers ran truly in parallel).
//!
//! # Item phases
//!
//! ```text
//!            add            get               done
//!   (none) ------> Ready ---------> Processing ------> (none)
//!      |  add_after  ^  deadline     |  add / add_after   ^
//!      +-------> Delayed             v                    |  done: back of the queue
//!                                ProcessingReady ---------+--> Ready
//!                                ProcessingDelayed -------+--> Delayed
//! ```
//!
//! A waiting item has one ready time (now, or a deadline): an earlier one replaces a later
//! one, a later one is ignored. Due delayed items are moved to the back of their ready list,
//! in deadline order, at the start of every operation (so, under a paused clock, exactly
//! when time passed them).
//!
//! # Waking workers
//!
//! A worker that finds nothing first spins for up to 20 µs (on a multi-threaded runtime),
//! watching a hint the lock holder keeps of whether any item is ready, then takes the lock
//! again; only then does it park its waker in a short list (under the same lock). It spins
//! in slices of about a microsecond, yielding its thread between them (tokio's `yield_now`:
//! polled again once the thread has nothing else to run), so a spin never holds up the
//! tasks queued behind it on its thread, such as the one that would add its item. Parking
//! costs its thread a context switch when it has nothing else to run, and whoever wakes it a
//! system call (tokio unparks the thread), so under a busy producer spinning catches the next
//! item instead: in Q2 it cut context switches about fivefold. Spinning turns itself off when
//! a spin finds nothing (an idle queue parks at once) and back on when an item has to wake a
//! parked worker. Each item that becomes ready wakes one parked worker, only if one is
//! parked and only if there are more ready items than spinning workers (each spinner takes
//! the lock and an item before it stops), so an add with no worker waiting costs no wake-up.
//! One parked worker (the "timer owner") also sleeps
//! until the earliest deadline; when it leaves, or an earlier deadline arrives, another
//! worker is woken to take the duty over. A worker woken for an item whose `get` future is
//! dropped passes the wake-up on. No task is spawned.
//!
//! # Parts
//!
//! | file | holds |
//! | --- | --- |
//! | `mod.rs` | [`Engine`]: the lock, hashing outside it, [`After`]: what runs after it |
//! | `state.rs` | [`State`]: everything behind the lock, and the moves between phases |
//! | `slots.rs` | the slab: one [`Slot`] per item, with its [`Phase`]; allocation and reuse |
//! | `slot_table.rs` | [`SlotTable`]: from an item's hash tag to its slot |
//! | `ready_lists.rs` | [`ReadyLists`]: one intrusive FIFO list of ready slots per priority |
//! | `delay_heap.rs` | [`DelayHeap`]: the delayed slots, an indexed min-heap of deadlines |
//! | `waiters.rs` | parked workers, spinning before parking, the timer duty, and the [`Get`] future |

mod delay_heap;
mod ready_lists;
mod slot_table;
mod slots;
mod state;
mod waiters;

use std::fmt;
use std::hash::{BuildHasher, Hash};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Waker;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio::time::Instant;

use self::slot_table::Found;
use self::state::{State, tag_of};
pub(crate) use self::waiters::Get;
use self::waiters::Signals;
#[cfg(doc)]
use self::{
    delay_heap::DelayHeap,
    ready_lists::ReadyLists,
    slot_table::SlotTable,
    slots::{Phase, Slot},
};
use super::PRIORITY_NORMAL;
use super::builder::QueueBuilder;
use super::metrics::{QueueMetrics, QueueStats};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// How long a waiter for the contended lock backs off before the mutex parks its thread.
const LOCK_SPIN: Duration = Duration::from_micros(20);

/// How a waiter for the contended lock waits between two looks at the lock word: `first`
/// spin-loop hints, twice as many after each look, up to `max` (a hint is about 24 ns on
/// the AMD EPYC the queue benches ran on), for up to [`LOCK_SPIN`] in all.
///
/// A waiter that reads the lock word at every turn pulls the lock's cache line to its core,
/// and the holder's next lock or unlock has to fetch it back; with two threads taking turns
/// at operations of tens of nanoseconds, most of each operation's time went in moving the
/// lock's and the state's lines between the cores. Backing off lets the holder run several
/// operations in a row on hot lines. Workers back off longer than adders ([`PATIENT`]
/// against [`EAGER`]): an add is on the path of whoever delivers events (an informer's
/// handlers), while a worker's `get` or `done` a few microseconds late is invisible next to
/// a reconcile, and a queue that lets adds run finds more of them already waiting. Measured
/// side by side on 2 shared cores (`benches/core.rs`, `WorkQueue<ObjectKey>`): Q1's drain
/// went from 4.2-4.6 M to 9.6 M completions/s (both threads pinned to one core give
/// 10-11 M/s), Q2's adds from 7.5 M to 25-30 M/s, and I1 prebuilt (whose handlers add and
/// whose workers drain) from 565 k to 775 k events/s.
#[derive(Clone, Copy)]
struct Backoff {
    first: u32,
    max: u32,
}

/// Adds, and every operation that is not a worker's `get` or `done`.
const EAGER: Backoff = Backoff { first: 4, max: 256 };
/// A worker's `get` and `done`.
const PATIENT: Backoff = Backoff {
    first: 256,
    max: 1024,
};
/// `add_batch` takes the lock once per this many items (so workers wait at most that long).
const BATCH_CHUNK: usize = 64;
/// How many items ahead `add_batch` prefetches slot table lines.
const BATCH_PREFETCH: usize = 4;

/// Work to do once the lock is released.
pub(super) struct After<T> {
    pub(super) wake_first: Option<Waker>,
    pub(super) wake_rest: Vec<Waker>,
    pub(super) added: u32,
    pub(super) taken: Option<Duration>,
    pub(super) done: Option<Duration>,
    pub(super) retried: bool,
    pub(super) drained: bool,
    pub(super) dropped: Option<T>,
}

impl<T> Default for After<T> {
    fn default() -> Self {
        Self {
            wake_first: None,
            wake_rest: Vec::new(),
            added: 0,
            taken: None,
            done: None,
            retried: false,
            drained: false,
            dropped: None,
        }
    }
}

impl<T> After<T> {
    pub(super) fn wake(&mut self, waker: Waker) {
        if self.wake_first.is_none() {
            self.wake_first = Some(waker);
        } else {
            self.wake_rest.push(waker);
        }
    }
}

/// A value that starts a cache line and has it to itself (the lock and the state's hot
/// fields; see [`State`]'s layout).
#[repr(align(64))]
struct LineAligned<T>(T);

impl<T> std::ops::Deref for LineAligned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// The shared queue engine. See the module docs.
pub(crate) struct Engine<T> {
    state: LineAligned<Mutex<State<T>>>,
    /// What workers read without the lock; the state holds it too.
    signals: Arc<Signals>,
    hasher: foldhash::fast::RandomState,
    shutting_down: AtomicBool,
    /// How many times [`shut_down`](Engine::shut_down) was called: a drain that sees it
    /// change returns at once (client-go: `ShutDown` during `ShutDownWithDrain`).
    forced: AtomicU64,
    drained: Notify,
    limiter: Arc<dyn RateLimiter<T>>,
    metrics: Option<Arc<dyn QueueMetrics>>,
    name: Option<Box<str>>,
    /// Whether priorities are honoured (otherwise every item has `PRIORITY_NORMAL`).
    priorities: bool,
}

impl<T> Engine<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    pub(crate) fn new<Q>(builder: QueueBuilder<T, Q>, priorities: bool) -> Self {
        let QueueBuilder {
            limiter,
            name,
            metrics,
            ..
        } = builder;
        let signals = Arc::new(Signals::default());
        Self {
            state: LineAligned(Mutex::new(State::new(metrics.is_some(), signals.clone()))),
            signals,
            hasher: foldhash::fast::RandomState::default(),
            shutting_down: AtomicBool::new(false),
            forced: AtomicU64::new(0),
            drained: Notify::new(),
            limiter: limiter.unwrap_or_else(|| Arc::new(default_controller_rate_limiter())),
            metrics,
            name: name.map(String::into_boxed_str),
            priorities,
        }
    }

    /// The 32-bit tag the slot table uses for `item` (computed before taking the lock).
    #[inline]
    fn tag(&self, item: &T) -> u32 {
        tag_of(self.hasher.hash_one(item))
    }

    #[inline]
    fn priority(&self, priority: i32) -> i32 {
        if self.priorities {
            priority
        } else {
            PRIORITY_NORMAL
        }
    }

    /// Runs what had to wait for the lock to be released.
    #[inline(always)]
    fn finish(&self, after: After<T>) {
        // Fast path: nothing to wake, no hooks, nobody draining; at most an item to drop.
        if after.wake_first.is_none()
            && after.wake_rest.capacity() == 0
            && !after.drained
            && self.metrics.is_none()
        {
            drop(after.dropped);
            return;
        }
        self.finish_slow(after);
    }

    #[inline(never)]
    fn finish_slow(&self, after: After<T>) {
        let After {
            wake_first,
            wake_rest,
            added,
            taken,
            done,
            retried,
            drained,
            dropped,
        } = after;
        if let Some(w) = wake_first {
            w.wake();
        }
        if !wake_rest.is_empty() {
            wake_rest.into_iter().for_each(Waker::wake);
        }
        if let Some(m) = &self.metrics {
            Self::call_hooks(&**m, added, taken, done, retried);
        }
        if drained {
            self.drained.notify_waiters();
        }
        // `dropped` (an item the queue let go of) is dropped here, outside the lock.
        drop(dropped);
    }

    #[inline(never)]
    fn call_hooks(
        m: &dyn QueueMetrics,
        added: u32,
        taken: Option<Duration>,
        done: Option<Duration>,
        retried: bool,
    ) {
        if retried {
            m.retried();
        }
        for _ in 0..added {
            m.added();
        }
        if let Some(d) = taken {
            m.taken(d);
        }
        if let Some(d) = done {
            m.done(d);
        }
    }

    #[inline]
    pub(crate) fn add(&self, item: T, priority: i32, delay: Option<Duration>) {
        let hash = self.hasher.hash_one(&item);
        let priority = self.priority(priority);
        let st = self.lock();
        if delay.is_none() && st.heap.is_empty() {
            // Most adds under load are of an item already waiting: one lookup under the lock,
            // nothing else to do (the item is dropped after the lock is released).
            let found = st.find(tag_of(hash), &item);
            if found.is_some_and(|f| st.waits(f.id, priority)) {
                drop(st);
                drop(item);
                return;
            }
            self.add_changing(st, hash, item, priority, found);
        } else {
            self.add_delayed(st, hash, item, priority, delay);
        }
    }

    /// `add` now of an item that is new or being processed (see [`State::add_now`]).
    #[inline]
    fn add_changing(
        &self,
        mut st: MutexGuard<'_, State<T>>,
        hash: u64,
        item: T,
        priority: i32,
        found: Option<Found>,
    ) {
        let mut after = After::default();
        after.dropped = st.add_now(hash, item, priority, found, &mut after);
        drop(st);
        self.finish(after);
    }

    /// `add` with a delay, or while items are delayed.
    #[inline(never)]
    fn add_delayed(
        &self,
        mut st: MutexGuard<'_, State<T>>,
        hash: u64,
        item: T,
        priority: i32,
        delay: Option<Duration>,
    ) {
        let mut after = After::default();
        after.dropped = st.add(hash, item, priority, delay, &mut after);
        drop(st);
        self.finish(after);
    }

    /// `add` of every item, in order, taking the lock once per [`BATCH_CHUNK`] items.
    pub(crate) fn add_batch(&self, items: Vec<T>, priority: i32) {
        let priority = self.priority(priority);
        let mut rejected: Vec<T> = Vec::new();
        let mut hashes = [0u64; BATCH_CHUNK];
        let mut items = items.into_iter();
        loop {
            let chunk = items.as_slice();
            let n = chunk.len().min(BATCH_CHUNK);
            if n == 0 {
                break;
            }
            for (hash, item) in hashes.iter_mut().zip(&chunk[..n]) {
                *hash = self.hasher.hash_one(item);
            }
            let mut after = After::default();
            {
                let mut st = self.lock();
                // Start fetching the slot table lines of the first few items.
                for &hash in hashes[..n].iter().take(BATCH_PREFETCH) {
                    st.table.prefetch(tag_of(hash));
                }
                for (i, item) in items.by_ref().take(n).enumerate() {
                    if let Some(&ahead) = hashes[..n].get(i + BATCH_PREFETCH) {
                        st.table.prefetch(tag_of(ahead));
                    }
                    if let Some(item) = st.add(hashes[i], item, priority, None, &mut after) {
                        rejected.push(item);
                    }
                }
            }
            self.finish(after);
            // Items the queue did not keep are dropped outside the lock.
            rejected.clear();
        }
    }

    /// Asks the limiter even when the queue is shutting down (the add is then dropped), as
    /// client-go's `AddRateLimited` does: the failure is counted either way.
    pub(crate) fn add_rate_limited(&self, item: T, priority: i32) {
        let delay = self.limiter.when(&item);
        self.add(item, priority, Some(delay));
    }

    pub(crate) fn get(&self) -> Get<'_, T> {
        Get::new(self)
    }

    pub(crate) fn try_get(&self) -> Option<(T, i32)> {
        let mut st = self.lock_for_worker();
        if st.plain() {
            // No delayed item to promote, no time to track: pop the next ready one.
            return st.pop_ready().map(|(_, taken)| taken);
        }
        self.try_get_any(st)
    }

    #[inline(never)]
    fn try_get_any(&self, mut st: MutexGuard<'_, State<T>>) -> Option<(T, i32)> {
        let mut after = After::default();
        let taken = st.take(&mut after);
        drop(st);
        self.finish(after);
        taken
    }

    #[inline]
    pub(crate) fn done(&self, item: &T) {
        let tag = self.tag(item);
        let mut st = self.lock_for_worker();
        if let Some((forgotten, drained)) = st.try_forget(tag, item) {
            drop(st);
            if drained {
                self.drained.notify_waiters();
            }
            drop(forgotten);
            return;
        }
        self.done_any(st, tag, item);
    }

    /// `done` in every case (see [`State::done`]).
    #[inline(never)]
    fn done_any(&self, mut st: MutexGuard<'_, State<T>>, tag: u32, item: &T) {
        let mut after = After::default();
        after.dropped = st.done(tag, item, &mut after);
        drop(st);
        self.finish(after);
    }

    pub(crate) fn len(&self) -> usize {
        let mut after = After::default();
        let len = {
            let mut st = self.lock();
            if !st.heap.is_empty() {
                st.promote_due(Instant::now(), &mut after);
            }
            st.ready_count
        };
        self.finish(after);
        len
    }

    pub(crate) fn stats(&self) -> QueueStats {
        let mut after = After::default();
        let stats = self.lock().stats(&mut after);
        self.finish(after);
        stats
    }

    pub(crate) fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    pub(crate) fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// Shuts down; a drain waiting in [`shut_down_with_drain`](Self::shut_down_with_drain)
    /// returns at once (the second Ctrl-C).
    pub(crate) fn shut_down(&self) {
        self.forced.fetch_add(1, Ordering::AcqRel);
        self.stop_accepting();
        self.drained.notify_waiters();
    }

    fn stop_accepting(&self) {
        let mut after = After::default();
        let dropped = {
            let mut st = self.lock();
            self.shutting_down.store(true, Ordering::Release);
            st.shut_down(&mut after)
        };
        self.finish(after);
        drop(dropped);
    }

    pub(crate) async fn shut_down_with_drain(&self, drain_queued: bool) {
        // Only a `shut_down` from now on cuts this drain short, not one made before it.
        let forced = self.forced.load(Ordering::Acquire);
        self.lock().drain_requested = true;
        self.stop_accepting();
        loop {
            let mut notified = pin!(self.drained.notified());
            notified.as_mut().enable();
            if self.forced.load(Ordering::Acquire) != forced {
                return;
            }
            {
                let st = self.lock();
                if st.in_flight == 0 && (!drain_queued || st.ready_count == 0) {
                    return;
                }
            }
            notified.await;
        }
    }

    #[inline]
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Acquire)
    }

    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl<T> Engine<T> {
    /// Takes the lock for an `add` (or any operation but a worker's): uncontended, one
    /// compare-and-swap; contended, see [`Backoff`]. Critical sections here last tens of
    /// nanoseconds, and the mutex's own policy (a few short spins, then `sched_yield`, then a
    /// futex) measured 680,000 `sched_yield` and 81,000 `futex` calls in one Q2 run of
    /// 5,000,000 adds with workers on the other core.
    #[inline]
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        match self.state.try_lock() {
            Some(guard) => guard,
            None => self.lock_contended(EAGER),
        }
    }

    /// Takes the lock for a worker's `get` or `done`: as [`lock`](Self::lock), but backing
    /// off longer when contended ([`PATIENT`]).
    #[inline]
    fn lock_for_worker(&self) -> MutexGuard<'_, State<T>> {
        match self.state.try_lock() {
            Some(guard) => guard,
            None => self.lock_contended(PATIENT),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self, backoff: Backoff) -> MutexGuard<'_, State<T>> {
        let until = std::time::Instant::now() + LOCK_SPIN;
        let mut pause = backoff.first;
        loop {
            for _ in 0..pause {
                std::hint::spin_loop();
            }
            if !self.state.is_locked()
                && let Some(guard) = self.state.try_lock()
            {
                return guard;
            }
            pause = (pause * 2).min(backoff.max);
            if std::time::Instant::now() >= until {
                return self.state.lock();
            }
        }
    }
}

impl<T> fmt::Debug for Engine<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.lock();
        f.debug_struct("Queue")
            .field("name", &self.name)
            .field("ready", &st.ready_count)
            .field("delayed", &st.heap.len())
            .field("in_flight", &st.in_flight)
            .field("shutting_down", &st.shutting_down)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
