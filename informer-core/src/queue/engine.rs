//! The state machine both queues share: deduplication, processing/dirty tracking, delays,
//! priorities, waking workers, shutdown and drain, counters.
//!
//! [`WorkQueue`](super::WorkQueue) is this engine with every priority equal;
//! [`PriorityQueue`](super::PriorityQueue) is this engine with priorities honoured.
//!
//! # Layout
//!
//! Every item the queue knows about (waiting, delayed or being processed) lives once in a
//! slab slot, found through an [`Index`] of (32-bit hash tag, slot id) pairs: the item's hash
//! is computed before taking the lock, the index never rehashes items nor looks at a slot
//! whose tag differs, and a lookup usually reads one cache line. Ready items are chained
//! through their slots into one intrusive FIFO list per priority; delayed items sit in an
//! indexed min-heap ([`DelayHeap`]). So an item is hashed once per `add` and once per `done`,
//! cloned once per `get`, and in steady state nothing is allocated per operation beyond the
//! item itself. Everything is behind one `parking_lot` mutex, held for a few dozen
//! nanoseconds per operation; wake-ups, metrics hooks and drops of items happen after it is
//! released.
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
//! A worker that finds nothing parks its waker in a short list (under the same lock). Each
//! item that becomes ready wakes one parked worker, and only if one is parked, so an add with
//! no worker waiting costs no wake-up. One parked worker (the "timer owner") also sleeps
//! until the earliest deadline; when it leaves, or an earlier deadline arrives, another
//! worker is woken to take the duty over. A worker woken for an item whose `get` future is
//! dropped passes the wake-up on. No task is spawned.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::marker::PhantomData;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep, sleep_until};

use super::PRIORITY_NORMAL;
use super::delay::{DelayEntry, DelayHeap, HeapPositions};
use super::index::Index;
use super::metrics::{QueueMetrics, QueueStats};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// "No slot" in the intrusive links.
const NIL: u32 = u32::MAX;
/// Above this many slots, an idle queue gives memory back.
const SHRINK_THRESHOLD: usize = 1024;
/// At most this many empty priority lists are kept around for reuse.
const MAX_IDLE_BUCKETS: usize = 8;
/// `add_batch` takes the lock once per this many items (so workers wait at most that long).
const BATCH_CHUNK: usize = 64;
/// How many items ahead `add_batch` prefetches index lines.
const BATCH_PREFETCH: usize = 4;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// The slot holds no item.
    Free,
    /// Waiting in a ready list.
    Ready,
    /// Waiting in the delay heap.
    Delayed,
    /// Handed out, not done, not added since.
    Processing,
    /// Handed out and added again: queued at the back once done.
    ProcessingReady,
    /// Handed out and added again with a delay (in the delay heap).
    ProcessingDelayed,
}

struct Slot<T> {
    item: Option<T>,
    tag: u32,
    phase: Phase,
    /// The priority of the current waiting period (the highest one it was added with).
    priority: i32,
    heap_pos: u32,
    /// Links in a ready list (phase `Ready`) or in the processing list (time tracking).
    prev: u32,
    next: u32,
}

impl<T> HeapPositions for Vec<Slot<T>> {
    #[inline]
    fn set_heap_pos(&mut self, slot: u32, pos: u32) {
        self[slot as usize].heap_pos = pos;
    }
}

/// An intrusive doubly linked list through the slots' `prev`/`next`.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    fn is_empty(&self) -> bool {
        self.head == NIL
    }

    fn push_back<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        slots[id as usize].prev = self.tail;
        slots[id as usize].next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            slots[self.tail as usize].next = id;
        }
        self.tail = id;
    }

    fn unlink<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let (prev, next) = (slots[id as usize].prev, slots[id as usize].next);
        if prev == NIL {
            self.head = next;
        } else {
            slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slots[next as usize].prev = prev;
        }
        slots[id as usize].prev = NIL;
        slots[id as usize].next = NIL;
    }

    fn pop_front<T>(&mut self, slots: &mut [Slot<T>]) -> Option<u32> {
        let id = self.head;
        if id == NIL {
            return None;
        }
        self.unlink(slots, id);
        Some(id)
    }
}

/// One FIFO list per priority, highest priority first.
#[derive(Debug)]
struct ReadyLists {
    /// Sorted by priority, descending. Usually one or two entries.
    buckets: Vec<(i32, List)>,
}

impl ReadyLists {
    #[inline]
    fn bucket(&mut self, priority: i32) -> &mut List {
        // Fast path: the highest priority (for a `WorkQueue`, the only one).
        if self.buckets.first().is_some_and(|&(p, _)| p == priority) {
            return &mut self.buckets[0].1;
        }
        self.bucket_slow(priority)
    }

    #[inline(never)]
    fn bucket_slow(&mut self, priority: i32) -> &mut List {
        let at = self
            .buckets
            .iter()
            .position(|&(p, _)| p <= priority)
            .unwrap_or(self.buckets.len());
        if self.buckets.get(at).is_none_or(|&(p, _)| p != priority) {
            self.buckets.insert(at, (priority, List::EMPTY));
        }
        &mut self.buckets[at].1
    }

    fn push_back<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let priority = slots[id as usize].priority;
        self.bucket(priority).push_back(slots, id);
    }

    fn unlink<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let priority = slots[id as usize].priority;
        self.bucket(priority).unlink(slots, id);
    }

    fn peek_front(&self) -> Option<u32> {
        self.buckets
            .iter()
            .find(|(_, list)| !list.is_empty())
            .map(|(_, list)| list.head)
    }

    fn pop_front<T>(&mut self, slots: &mut [Slot<T>]) -> Option<u32> {
        let id = self
            .buckets
            .iter_mut()
            .find(|(_, list)| !list.is_empty())
            .and_then(|(_, list)| list.pop_front(slots));
        if self.buckets.len() > MAX_IDLE_BUCKETS {
            self.buckets.retain(|(_, list)| !list.is_empty());
        }
        id
    }
}

/// A parked `get`.
struct Parked {
    id: u64,
    waker: Waker,
}

/// Time tracking for metrics (only when hooks are installed).
struct Timing {
    epoch: Instant,
    /// Per slot: when the item became ready.
    queued_at: Vec<Instant>,
    /// Per slot: when the item was handed out.
    started_at: Vec<Instant>,
    /// In-flight slots in the order they were handed out (oldest first).
    processing: List,
    /// Sum over in-flight slots of `started_at - epoch`, in nanoseconds.
    started_sum: u128,
}

/// Work to do once the lock is released.
struct After<T> {
    wake_first: Option<Waker>,
    wake_rest: Vec<Waker>,
    added: u32,
    taken: Option<Duration>,
    done: Option<Duration>,
    retried: bool,
    drained: bool,
    dropped: Option<T>,
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
    fn wake(&mut self, waker: Waker) {
        if self.wake_first.is_none() {
            self.wake_first = Some(waker);
        } else {
            self.wake_rest.push(waker);
        }
    }
}

/// Reads the clock at most once per operation, and only when needed.
#[derive(Default)]
struct Now(Option<Instant>);

impl Now {
    #[inline]
    fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

/// `now + delay`, or about 30 years from now if that does not fit (tokio's "far future").
fn deadline_after(now: Instant, delay: Duration) -> Instant {
    now.checked_add(delay)
        .or_else(|| now.checked_add(Duration::from_secs(86_400 * 365 * 30)))
        .unwrap_or(now)
}

fn duration_from_nanos(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / 1_000_000_000).unwrap_or(u64::MAX);
    Duration::new(secs, (nanos % 1_000_000_000) as u32)
}

struct State<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    table: Index,
    ready: ReadyLists,
    ready_count: usize,
    heap: DelayHeap,
    in_flight: usize,
    /// Tie-breaker for equal deadlines.
    seq: u64,
    shutting_down: bool,
    /// Whether `shut_down_with_drain` was called (only then is "drained" signalled).
    drain_requested: bool,
    waiters: VecDeque<Parked>,
    next_waiter_id: u64,
    /// The parked `get` sleeping until the earliest deadline, and that deadline.
    timer: Option<(u64, Instant)>,
    adds_total: u64,
    retries_total: u64,
    timing: Option<Timing>,
}

impl<T> State<T> {
    fn new(timing: bool) -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            table: Index::default(),
            ready: ReadyLists {
                buckets: Vec::new(),
            },
            ready_count: 0,
            heap: DelayHeap::default(),
            in_flight: 0,
            seq: 0,
            shutting_down: false,
            drain_requested: false,
            waiters: VecDeque::new(),
            next_waiter_id: 0,
            timer: None,
            adds_total: 0,
            retries_total: 0,
            timing: timing.then(|| Timing {
                epoch: Instant::now(),
                queued_at: Vec::new(),
                started_at: Vec::new(),
                processing: List::EMPTY,
                started_sum: 0,
            }),
        }
    }

    /// A new item's first phase: ready now, or delayed until `deadline`.
    fn enter_new(&mut self, id: u32, deadline: Option<Instant>, now: &mut Now, out: &mut After<T>) {
        match deadline {
            None => {
                self.slots[id as usize].phase = Phase::Ready;
                self.mark_queued(id, None, now, out);
                self.push_ready(id, out);
            }
            Some(deadline) => {
                self.slots[id as usize].phase = Phase::Delayed;
                self.schedule(id, deadline, out);
            }
        }
    }

    /// Puts `item` in a free slot (phase `Free`; the caller sets it) and indexes it.
    fn alloc(&mut self, tag: u32, item: T, priority: i32) -> u32 {
        let slot = Slot {
            item: Some(item),
            tag,
            phase: Phase::Free,
            priority,
            heap_pos: NIL,
            prev: NIL,
            next: NIL,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                let id = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|&id| id != NIL)
                    .expect("a queue holds at most u32::MAX - 1 distinct items");
                self.slots.push(slot);
                if let Some(t) = &mut self.timing {
                    t.queued_at.push(t.epoch);
                    t.started_at.push(t.epoch);
                }
                id
            }
        };
        self.table.insert(tag, id);
        id
    }

    /// Removes slot `id` from the index, then frees it.
    fn release(&mut self, id: u32) -> Option<T> {
        let tag = self.slots[id as usize].tag;
        self.table.remove_id(tag, id);
        self.free_slot(id)
    }

    /// Frees slot `id` (already removed from the index) and returns its item.
    fn free_slot(&mut self, id: u32) -> Option<T> {
        let slot = &mut self.slots[id as usize];
        slot.phase = Phase::Free;
        let item = slot.item.take();
        self.free.push(id);
        item
    }

    /// Gives memory back when the queue holds no item at all after a burst.
    #[inline]
    fn maybe_shrink(&mut self) {
        if self.free.len() == self.slots.len() && self.slots.len() > SHRINK_THRESHOLD {
            self.shrink();
        }
    }

    #[cold]
    fn shrink(&mut self) {
        self.slots.clear();
        self.slots.shrink_to(SHRINK_THRESHOLD);
        self.free.clear();
        self.free.shrink_to(SHRINK_THRESHOLD);
        self.table.clear_and_shrink(SHRINK_THRESHOLD);
        self.heap.shrink_to(SHRINK_THRESHOLD);
        if let Some(t) = &mut self.timing {
            t.queued_at.clear();
            t.queued_at.shrink_to(SHRINK_THRESHOLD);
            t.started_at.clear();
            t.started_at.shrink_to(SHRINK_THRESHOLD);
        }
    }

    /// Counts slot `id` as having become ready: at `at` if given, else now.
    fn mark_queued(&mut self, id: u32, at: Option<Instant>, now: &mut Now, out: &mut After<T>) {
        self.adds_total += 1;
        if let Some(t) = &mut self.timing {
            t.queued_at[id as usize] = at.unwrap_or_else(|| now.get());
            out.added += 1;
        }
    }

    /// Appends slot `id` (phase already `Ready`) to its ready list and wakes a worker.
    fn push_ready(&mut self, id: u32, out: &mut After<T>) {
        self.ready.push_back(&mut self.slots, id);
        self.ready_count += 1;
        self.wake_one(out);
    }

    /// Puts slot `id` in the delay heap.
    fn schedule(&mut self, id: u32, deadline: Instant, out: &mut After<T>) {
        let seq = self.next_seq();
        self.heap.push(
            DelayEntry {
                deadline,
                seq,
                slot: id,
            },
            &mut self.slots,
        );
        self.rearm_if_earliest(id, deadline, out);
    }

    /// Moves slot `id`'s deadline earlier (if `deadline` is earlier).
    fn advance(&mut self, id: u32, deadline: Instant, out: &mut After<T>) {
        let pos = self.slots[id as usize].heap_pos;
        if self.heap.deadline_at(pos).is_some_and(|d| deadline < d) {
            let seq = self.next_seq();
            self.heap.advance(pos, deadline, seq, &mut self.slots);
            self.rearm_if_earliest(id, deadline, out);
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// If slot `id` now has the earliest deadline, makes sure a parked worker sleeps until it.
    fn rearm_if_earliest(&mut self, id: u32, deadline: Instant, out: &mut After<T>) {
        if self.heap.peek().is_none_or(|e| e.slot != id) {
            return;
        }
        match self.timer {
            None => self.wake_one(out),
            Some((owner, armed)) if deadline < armed => {
                if let Some(waker) = self.take_waiter(owner) {
                    out.wake(waker);
                }
                // A non-parked owner is running and re-reads the heap before parking.
            }
            Some(_) => {}
        }
    }

    /// Wakes one parked worker, preferring one that is not the timer owner.
    #[inline]
    fn wake_one(&mut self, out: &mut After<T>) {
        if self.waiters.is_empty() {
            return;
        }
        self.wake_one_parked(out);
    }

    #[inline(never)]
    fn wake_one_parked(&mut self, out: &mut After<T>) {
        let skip_owner = self.waiters.len() > 1
            && matches!((self.timer, self.waiters.front()), (Some((owner, _)), Some(p)) if p.id == owner);
        if let Some(p) = self.waiters.remove(usize::from(skip_owner)) {
            out.wake(p.waker);
        }
    }

    /// Moves every delayed slot whose deadline is not after `now` to the ready state.
    fn promote_due(&mut self, now: Instant, out: &mut After<T>) {
        while self.heap.peek().is_some_and(|e| e.deadline <= now) {
            let Some(entry) = self.heap.pop(&mut self.slots) else {
                break;
            };
            let id = entry.slot;
            self.slots[id as usize].heap_pos = NIL;
            match self.slots[id as usize].phase {
                Phase::Delayed => {
                    self.slots[id as usize].phase = Phase::Ready;
                    self.mark_queued(id, Some(entry.deadline), &mut Now(Some(now)), out);
                    self.push_ready(id, out);
                }
                Phase::ProcessingDelayed => {
                    self.slots[id as usize].phase = Phase::ProcessingReady;
                    self.mark_queued(id, Some(entry.deadline), &mut Now(Some(now)), out);
                }
                phase => debug_assert!(false, "slot {id} in the delay heap is {phase:?}"),
            }
        }
    }

    /// Adds `item`; returns it back if the queue already holds it or is shutting down.
    fn add(
        &mut self,
        tag: u32,
        item: T,
        priority: i32,
        delay: Option<Duration>,
        out: &mut After<T>,
    ) -> Option<T>
    where
        T: Eq,
    {
        if self.shutting_down {
            return Some(item);
        }
        let mut now = Now::default();
        if delay.is_some() {
            self.retries_total += 1;
            out.retried = self.timing.is_some();
        }
        if !self.heap.is_empty() {
            self.promote_due(now.get(), out);
        }
        let deadline = match delay {
            Some(d) if !d.is_zero() => Some(deadline_after(now.get(), d)),
            _ => None,
        };
        let slots = &self.slots;
        let found = self
            .table
            .find(tag, |id| slots[id as usize].item.as_ref() == Some(&item));
        let Some(found) = found else {
            let id = self.alloc(tag, item, priority);
            self.enter_new(id, deadline, &mut now, out);
            return None;
        };
        let id = found.id;
        let slot = &mut self.slots[id as usize];
        let raised = priority.max(slot.priority);
        match (slot.phase, deadline) {
            (Phase::Ready, _) => {
                if priority > slot.priority {
                    // Move it to the back of its new, higher, priority.
                    self.ready.unlink(&mut self.slots, id);
                    self.slots[id as usize].priority = priority;
                    self.ready.push_back(&mut self.slots, id);
                }
            }
            (Phase::Delayed, None) => {
                slot.priority = raised;
                let pos = slot.heap_pos;
                self.heap.remove(pos, &mut self.slots);
                self.slots[id as usize].heap_pos = NIL;
                self.slots[id as usize].phase = Phase::Ready;
                self.mark_queued(id, None, &mut now, out);
                self.push_ready(id, out);
            }
            (Phase::Delayed | Phase::ProcessingDelayed, Some(deadline)) => {
                slot.priority = raised;
                self.advance(id, deadline, out);
            }
            (Phase::Processing, None) => {
                slot.priority = priority;
                slot.phase = Phase::ProcessingReady;
                self.mark_queued(id, None, &mut now, out);
            }
            (Phase::Processing, Some(deadline)) => {
                slot.priority = priority;
                slot.phase = Phase::ProcessingDelayed;
                self.schedule(id, deadline, out);
            }
            (Phase::ProcessingReady, _) => slot.priority = raised,
            (Phase::ProcessingDelayed, None) => {
                slot.priority = raised;
                let pos = slot.heap_pos;
                self.heap.remove(pos, &mut self.slots);
                self.slots[id as usize].heap_pos = NIL;
                self.slots[id as usize].phase = Phase::ProcessingReady;
                self.mark_queued(id, None, &mut now, out);
            }
            (Phase::Free, _) => debug_assert!(false, "free slot {id} is indexed"),
        }
        Some(item)
    }
}

impl<T> State<T> {
    /// Hands out the next ready item, if any.
    fn take(&mut self, out: &mut After<T>) -> Option<(T, i32)>
    where
        T: Clone,
    {
        let mut now = Now::default();
        if !self.heap.is_empty() {
            self.promote_due(now.get(), out);
        }
        if self.ready_count == 0 {
            return None;
        }
        let id = self.ready.pop_front(&mut self.slots)?;
        // The next item handed out will come back through `done`, which looks it up in the
        // index: start fetching that cache line now.
        if let Some(next) = self.ready.peek_front() {
            self.table.prefetch(self.slots[next as usize].tag);
        }
        self.ready_count -= 1;
        self.in_flight += 1;
        let slot = &mut self.slots[id as usize];
        slot.phase = Phase::Processing;
        let taken = (slot.item.clone()?, slot.priority);
        if let Some(t) = &mut self.timing {
            let now = now.get();
            t.started_at[id as usize] = now;
            t.started_sum += now.saturating_duration_since(t.epoch).as_nanos();
            t.processing.push_back(&mut self.slots, id);
            out.taken = Some(now.saturating_duration_since(t.queued_at[id as usize]));
        }
        Some(taken)
    }

    /// Marks `item` done; returns the item to drop if the queue forgot it.
    fn done(&mut self, tag: u32, item: &T, out: &mut After<T>) -> Option<T>
    where
        T: Eq,
    {
        let mut now = Now::default();
        if !self.heap.is_empty() {
            self.promote_due(now.get(), out);
        }
        let slots = &self.slots;
        let found = self
            .table
            .find(tag, |id| slots[id as usize].item.as_ref() == Some(item))?;
        let id = found.id;
        let phase = slots[id as usize].phase;
        match phase {
            Phase::Processing => {
                // Done and not added since: forget it.
                self.table.remove(found);
            }
            Phase::ProcessingReady | Phase::ProcessingDelayed => {}
            Phase::Free | Phase::Ready | Phase::Delayed => return None,
        }
        self.in_flight -= 1;
        if let Some(t) = &mut self.timing {
            let now = now.get();
            let started = t.started_at[id as usize];
            t.started_sum -= started.saturating_duration_since(t.epoch).as_nanos();
            t.processing.unlink(&mut self.slots, id);
            out.done = Some(now.saturating_duration_since(started));
        }
        if self.drain_requested && self.in_flight == 0 {
            out.drained = true;
        }
        match phase {
            Phase::ProcessingReady => {
                self.slots[id as usize].phase = Phase::Ready;
                self.push_ready(id, out);
                None
            }
            Phase::ProcessingDelayed => {
                self.slots[id as usize].phase = Phase::Delayed;
                None
            }
            _ => {
                let item = self.free_slot(id);
                self.maybe_shrink();
                item
            }
        }
    }

    /// Stops accepting items; drops delayed ones; wakes every parked worker.
    fn shut_down(&mut self, out: &mut After<T>) -> Vec<T> {
        if self.shutting_down {
            return Vec::new();
        }
        self.shutting_down = true;
        let mut dropped = Vec::new();
        if !self.heap.is_empty() {
            self.promote_due(Instant::now(), out);
            for entry in self.heap.take_entries() {
                let id = entry.slot;
                self.slots[id as usize].heap_pos = NIL;
                match self.slots[id as usize].phase {
                    Phase::Delayed => dropped.extend(self.release(id)),
                    Phase::ProcessingDelayed => self.slots[id as usize].phase = Phase::Processing,
                    phase => debug_assert!(false, "slot {id} in the delay heap is {phase:?}"),
                }
            }
        }
        self.timer = None;
        for p in self.waiters.drain(..) {
            out.wake(p.waker);
        }
        if self.drain_requested && self.in_flight == 0 {
            out.drained = true;
        }
        self.maybe_shrink();
        dropped
    }

    /// Removes parked worker `id` and returns its waker, if it is still parked (not woken).
    fn take_waiter(&mut self, id: u64) -> Option<Waker> {
        let at = self.waiters.iter().position(|p| p.id == id)?;
        self.waiters.remove(at).map(|p| p.waker)
    }

    /// Removes parked worker `id`; whether it was still parked (not woken).
    fn unpark(&mut self, id: u64) -> bool {
        self.take_waiter(id).is_some()
    }

    /// Worker `id` stops waiting: hands its timer duty over, if it had it.
    fn leave(&mut self, id: u64, out: &mut After<T>) {
        if matches!(self.timer, Some((owner, _)) if owner == id) {
            self.timer = None;
            if !self.heap.is_empty() {
                self.wake_one(out);
            }
        }
    }

    /// Whether parked worker `id` must sleep until the earliest deadline, and which.
    fn timer_duty(&mut self, id: u64) -> Option<Instant> {
        let earliest = self.heap.peek().map(|e| e.deadline);
        match (earliest, self.timer) {
            (None, Some((owner, _))) if owner == id => {
                self.timer = None;
                None
            }
            (None, _) => None,
            (Some(d), None) => {
                self.timer = Some((id, d));
                Some(d)
            }
            (Some(d), Some((owner, armed))) if owner == id || d < armed => {
                self.timer = Some((id, d));
                Some(d)
            }
            (Some(_), Some(_)) => None,
        }
    }

    fn stats(&mut self, out: &mut After<T>) -> QueueStats {
        let mut now = Now::default();
        if !self.heap.is_empty() {
            self.promote_due(now.get(), out);
        }
        let (unfinished_work, longest_running) = match &self.timing {
            Some(t) => {
                let now = now.get();
                let elapsed = now.saturating_duration_since(t.epoch).as_nanos();
                let unfinished = (elapsed * self.in_flight as u128).saturating_sub(t.started_sum);
                let longest = match t.processing.head {
                    NIL => Duration::ZERO,
                    head => now.saturating_duration_since(t.started_at[head as usize]),
                };
                (Some(duration_from_nanos(unfinished)), Some(longest))
            }
            None => (None, None),
        };
        QueueStats {
            depth: self.ready_count,
            delayed: self.heap.len(),
            in_flight: self.in_flight,
            adds_total: self.adds_total,
            retries_total: self.retries_total,
            unfinished_work,
            longest_running,
        }
    }
}

/// The shared queue engine. See the module docs.
pub(crate) struct Engine<T> {
    state: Mutex<State<T>>,
    hasher: foldhash::fast::RandomState,
    shutting_down: AtomicBool,
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
            _queue,
        } = builder;
        Self {
            state: Mutex::new(State::new(metrics.is_some())),
            hasher: foldhash::fast::RandomState::default(),
            shutting_down: AtomicBool::new(false),
            drained: Notify::new(),
            limiter: limiter.unwrap_or_else(|| Arc::new(default_controller_rate_limiter())),
            metrics,
            name: name.map(String::into_boxed_str),
            priorities,
        }
    }

    /// The 32-bit tag the index uses for `item` (computed before taking the lock).
    #[inline]
    fn tag(&self, item: &T) -> u32 {
        let h = self.hasher.hash_one(item);
        (h ^ (h >> 32)) as u32
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

    pub(crate) fn add(&self, item: T, priority: i32, delay: Option<Duration>) {
        let tag = self.tag(&item);
        let priority = self.priority(priority);
        let mut after = After::default();
        let rest = self
            .state
            .lock()
            .add(tag, item, priority, delay, &mut after);
        after.dropped = rest;
        self.finish(after);
    }

    /// `add` of every item, in order, taking the lock once per [`BATCH_CHUNK`] items.
    pub(crate) fn add_batch(&self, items: Vec<T>, priority: i32) {
        let priority = self.priority(priority);
        let mut rejected: Vec<T> = Vec::new();
        let mut tags = [0u32; BATCH_CHUNK];
        let mut items = items.into_iter();
        loop {
            let chunk = items.as_slice();
            let n = chunk.len().min(BATCH_CHUNK);
            if n == 0 {
                break;
            }
            for (tag, item) in tags.iter_mut().zip(&chunk[..n]) {
                *tag = self.tag(item);
            }
            let mut after = After::default();
            {
                let mut st = self.state.lock();
                // Start fetching the index lines of the first few items.
                for &tag in tags[..n].iter().take(BATCH_PREFETCH) {
                    st.table.prefetch(tag);
                }
                for (i, item) in items.by_ref().take(n).enumerate() {
                    if let Some(&ahead) = tags[..n].get(i + BATCH_PREFETCH) {
                        st.table.prefetch(ahead);
                    }
                    if let Some(item) = st.add(tags[i], item, priority, None, &mut after) {
                        rejected.push(item);
                    }
                }
            }
            self.finish(after);
            // Items the queue did not keep are dropped outside the lock.
            rejected.clear();
        }
    }

    pub(crate) fn add_rate_limited(&self, item: T, priority: i32) {
        if self.is_shutting_down() {
            return;
        }
        let delay = self.limiter.when(&item);
        self.add(item, priority, Some(delay));
    }

    pub(crate) fn get(&self) -> Get<'_, T> {
        Get {
            engine: self,
            waiter: None,
            sleep: None,
            spins: 0,
        }
    }

    pub(crate) fn try_get(&self) -> Option<(T, i32)> {
        let mut after = After::default();
        let taken = self.state.lock().take(&mut after);
        self.finish(after);
        taken
    }

    pub(crate) fn done(&self, item: &T) {
        let tag = self.tag(item);
        let mut after = After::default();
        let rest = self.state.lock().done(tag, item, &mut after);
        after.dropped = rest;
        self.finish(after);
    }

    pub(crate) fn len(&self) -> usize {
        let mut after = After::default();
        let len = {
            let mut st = self.state.lock();
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
        let stats = self.state.lock().stats(&mut after);
        self.finish(after);
        stats
    }

    pub(crate) fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    pub(crate) fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    pub(crate) fn shut_down(&self) {
        let mut after = After::default();
        let dropped = {
            let mut st = self.state.lock();
            self.shutting_down.store(true, Ordering::Release);
            st.shut_down(&mut after)
        };
        self.finish(after);
        drop(dropped);
    }

    pub(crate) async fn shut_down_with_drain(&self, drain_queued: bool) {
        self.state.lock().drain_requested = true;
        self.shut_down();
        loop {
            let mut notified = pin!(self.drained.notified());
            notified.as_mut().enable();
            {
                let st = self.state.lock();
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

impl<T> fmt::Debug for Engine<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("Queue")
            .field("name", &self.name)
            .field("ready", &st.ready_count)
            .field("delayed", &st.heap.len())
            .field("in_flight", &st.in_flight)
            .field("shutting_down", &st.shutting_down)
            .finish_non_exhaustive()
    }
}

/// The future of `get`: an item and its priority, or `None` once shut down and empty.
///
/// Cancel safe: dropping it before it completes loses no item (a wake-up it received is
/// passed on to another waiting worker).
pub(crate) struct Get<'a, T> {
    engine: &'a Engine<T>,
    /// Set once parked.
    waiter: Option<u64>,
    /// The timer, while this worker owns the timer duty (kept for reuse).
    sleep: Option<Pin<Box<Sleep>>>,
    /// Consecutive timer firings without progress (guards against a busy loop).
    spins: u8,
}

impl<T> Future for Get<'_, T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    type Output = Option<(T, i32)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            let mut after = After::default();
            let mut st = this.engine.state.lock();
            if let Some(id) = this.waiter {
                st.unpark(id);
            }
            let taken = st.take(&mut after);
            if taken.is_some() || st.shutting_down {
                if let Some(id) = this.waiter.take() {
                    st.leave(id, &mut after);
                }
                drop(st);
                this.engine.finish(after);
                return Poll::Ready(taken);
            }
            let id = match this.waiter {
                Some(id) => id,
                None => {
                    let id = st.next_waiter_id;
                    st.next_waiter_id += 1;
                    this.waiter = Some(id);
                    id
                }
            };
            st.waiters.push_back(Parked {
                id,
                waker: cx.waker().clone(),
            });
            let arm = st.timer_duty(id);
            drop(st);
            this.engine.finish(after);
            let Some(deadline) = arm else {
                return Poll::Pending;
            };
            let sleep = match &mut this.sleep {
                Some(sleep) => {
                    if sleep.deadline() != deadline {
                        sleep.as_mut().reset(deadline);
                    }
                    sleep
                }
                None => this.sleep.insert(Box::pin(sleep_until(deadline))),
            };
            if sleep.as_mut().poll(cx).is_pending() {
                this.spins = 0;
                return Poll::Pending;
            }
            // The deadline passed: loop to move the due items. Should the clock disagree
            // with the timer, yield instead of spinning.
            this.spins += 1;
            if this.spins > 2 {
                this.spins = 0;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }
}

impl<T> Drop for Get<'_, T> {
    fn drop(&mut self) {
        let Some(id) = self.waiter.take() else {
            return;
        };
        let mut after = After::<T>::default();
        {
            let mut st = self.engine.state.lock();
            if !st.unpark(id) && st.ready_count > 0 {
                // Woken for an item it will not take: pass the wake-up on.
                st.wake_one(&mut after);
            }
            st.leave(id, &mut after);
        }
        for w in after.wake_first.into_iter().chain(after.wake_rest) {
            w.wake();
        }
    }
}

/// Configures a [`WorkQueue`](super::WorkQueue) or a [`PriorityQueue`](super::PriorityQueue).
///
/// Created by `WorkQueue::builder()` or `PriorityQueue::builder()`; every setting is
/// optional.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_core::queue::{ItemExponentialFailureRateLimiter, WorkQueue};
///
/// let queue: WorkQueue<String> = WorkQueue::builder()
///     .name("pods")
///     .rate_limiter(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(10),
///         Duration::from_secs(60),
///     ))
///     .build();
/// assert_eq!(queue.name(), Some("pods"));
/// ```
pub struct QueueBuilder<T, Q> {
    limiter: Option<Arc<dyn RateLimiter<T>>>,
    name: Option<String>,
    metrics: Option<Arc<dyn QueueMetrics>>,
    _queue: PhantomData<fn() -> Q>,
}

impl<T, Q> QueueBuilder<T, Q> {
    pub(crate) fn new() -> Self {
        Self {
            limiter: None,
            name: None,
            metrics: None,
            _queue: PhantomData,
        }
    }

    /// The limiter `add_rate_limited` asks for delays. Default:
    /// [`default_controller_rate_limiter`]. An `Arc<dyn RateLimiter<T>>` is a limiter too.
    ///
    /// ```
    /// use informer_core::queue::{BucketRateLimiter, WorkQueue};
    ///
    /// let queue: WorkQueue<u32> = WorkQueue::builder()
    ///     .rate_limiter(BucketRateLimiter::new(50.0, 300))
    ///     .build();
    /// # let _ = queue;
    /// ```
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiter = Some(Arc::new(limiter));
        self
    }

    /// A name for the queue, for metrics labels and logs. Default: none.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u32> = WorkQueue::builder().name("nodes").build();
    /// assert_eq!(queue.name(), Some("nodes"));
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Hooks called as items move through the queue; also turns on time tracking for
    /// `stats()`. Default: none (and the queue never reads the clock for metrics). See
    /// [`QueueMetrics`].
    pub fn metrics(mut self, metrics: Arc<dyn QueueMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

impl<T, Q> fmt::Debug for QueueBuilder<T, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("name", &self.name)
            .field("rate_limiter", &self.limiter.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// Implements [`Queue`](super::Queue) for a type with an `engine: Engine<T>` field.
macro_rules! impl_queue_for {
    ($queue:ident) => {
        #[async_trait::async_trait]
        impl<T> $crate::queue::Queue<T> for $queue<T>
        where
            T: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
        {
            fn add(&self, item: T) {
                self.engine.add(item, $crate::queue::PRIORITY_NORMAL, None)
            }

            fn add_with_priority(&self, item: T, priority: i32) {
                self.engine.add(item, priority, None)
            }

            fn add_batch(&self, items: Vec<T>) {
                self.engine.add_batch(items, $crate::queue::PRIORITY_NORMAL)
            }

            fn add_batch_with_priority(&self, items: Vec<T>, priority: i32) {
                self.engine.add_batch(items, priority)
            }

            async fn get(&self) -> Option<T> {
                self.engine.get().await.map(|(item, _)| item)
            }

            fn done(&self, item: &T) {
                self.engine.done(item)
            }

            fn len(&self) -> usize {
                self.engine.len()
            }

            fn add_after(&self, item: T, delay: std::time::Duration) {
                self.engine
                    .add(item, $crate::queue::PRIORITY_NORMAL, Some(delay))
            }

            fn add_rate_limited(&self, item: T) {
                self.engine
                    .add_rate_limited(item, $crate::queue::PRIORITY_NORMAL)
            }

            fn forget(&self, item: &T) {
                self.engine.forget(item)
            }

            fn num_requeues(&self, item: &T) -> u32 {
                self.engine.num_requeues(item)
            }

            fn shut_down(&self) {
                self.engine.shut_down()
            }

            async fn shut_down_with_drain(&self, drain_queued: bool) {
                self.engine.shut_down_with_drain(drain_queued).await
            }

            fn is_shutting_down(&self) -> bool {
                self.engine.is_shutting_down()
            }
        }
    };
}

pub(crate) use impl_queue_for;
