//! [`State`]: everything behind the queue's lock, and the moves of an item between phases
//! (add, take, done, delays coming due, shutdown) and the counters.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::After;
use super::delay_heap::{DelayEntry, DelayHeap};
use super::ready_lists::{List, ReadyLists};
use super::slot_table::{Found, SlotTable};
use super::slots::{NIL, Phase, Slot};
use super::waiters::Parked;
use super::waiters::Signals;
use crate::queue::metrics::QueueStats;

/// Time tracking for metrics (only when hooks are installed).
pub(super) struct Timing {
    pub(super) epoch: Instant,
    /// Per slot: when the item became ready.
    pub(super) queued_at: Vec<Instant>,
    /// Per slot: when the item was handed out.
    pub(super) started_at: Vec<Instant>,
    /// In-flight slots in the order they were handed out (oldest first).
    processing: List,
    /// Sum over in-flight slots of `started_at - epoch`, in nanoseconds.
    started_sum: u128,
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

/// Everything behind the queue's lock. See the engine's module docs.
///
/// Laid out (`repr(C)`) so that the fields the hot operations use sit in the three cache
/// lines after the lock's own (the mutex is aligned to a line, its data 16 bytes in): with
/// workers on another core every line an operation touches moves between the cores, and the
/// compiler's order spread them over six.
#[repr(C)]
pub(super) struct State<T> {
    // Line 0, with the lock: what every operation reads.
    pub(super) slots: Vec<Slot<T>>,
    pub(super) heap: DelayHeap,
    // Line 1: looking items up, and the counts.
    pub(super) table: SlotTable,
    pub(super) ready_count: usize,
    pub(super) in_flight: usize,
    /// Workers spinning before they park: each takes the lock again before it returns, and
    /// takes a ready item then, so an item need not wake a parked worker while there are no
    /// more ready items than spinners.
    pub(super) spinners: usize,
    pub(super) shutting_down: bool,
    /// Whether `shut_down_with_drain` was called (only then is "drained" signalled).
    pub(super) drain_requested: bool,
    /// Whether workers spin before parking: set when an item had to wake a parked worker
    /// (items come while workers wait, so spinning would have caught it), cleared when a
    /// spin ends with nothing (the queue is idle: park at once).
    pub(super) spin: bool,
    /// Whether `timing` is set (read by every operation; `timing` itself lies further).
    timed: bool,
    // Line 2: freeing slots, readying items.
    pub(super) free: Vec<u32>,
    ready: ReadyLists,
    /// What workers read without the lock (shared with the engine).
    pub(super) signals: Arc<Signals>,
    adds_total: u64,
    // Then what fewer operations use.
    pub(super) waiters: VecDeque<Parked>,
    pub(super) next_waiter_id: u64,
    /// The parked `get` sleeping until the earliest deadline, and that deadline.
    pub(super) timer: Option<(u64, Instant)>,
    /// Tie-breaker for equal deadlines.
    seq: u64,
    retries_total: u64,
    pub(super) timing: Option<Timing>,
    /// Forgotten items whose allocations the next handed-out copies reuse (`String` only;
    /// see `State::copy_out`).
    pub(super) spares: Vec<T>,
}

/// The slot table's 32-bit tag of an item whose hash is `hash`.
#[inline]
pub(super) fn tag_of(hash: u64) -> u32 {
    (hash ^ (hash >> 32)) as u32
}

impl<T> State<T> {
    pub(super) fn new(timing: bool, signals: Arc<Signals>) -> Self {
        Self {
            signals,
            slots: Vec::new(),
            free: Vec::new(),
            table: SlotTable::default(),
            ready: ReadyLists::default(),
            ready_count: 0,
            heap: DelayHeap::default(),
            in_flight: 0,
            seq: 0,
            shutting_down: false,
            drain_requested: false,
            waiters: VecDeque::new(),
            spinners: 0,
            spin: true,
            timed: timing,
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
            spares: Vec::new(),
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
        if self.ready_count == 1 {
            self.signals.set_ready(true);
        }
        self.wake_for_item(out);
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

    /// Moves every delayed slot whose deadline is not after `now` to the ready state.
    pub(super) fn promote_due(&mut self, now: Instant, out: &mut After<T>) {
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

    /// Adds `item` (whose hash is `hash`); returns it back if the queue already holds it or
    /// is shutting down.
    #[inline]
    pub(super) fn add(
        &mut self,
        hash: u64,
        item: T,
        priority: i32,
        delay: Option<Duration>,
        out: &mut After<T>,
    ) -> Option<T>
    where
        T: Eq,
    {
        if delay.is_none() && self.heap.is_empty() {
            let found = self.find(tag_of(hash), &item);
            if found.is_some_and(|f| self.waits(f.id, priority)) {
                return Some(item);
            }
            self.add_now(hash, item, priority, found, out)
        } else {
            self.add_any(hash, item, priority, delay, out)
        }
    }

    /// The slot table entry of `item`, if the queue holds it.
    #[inline]
    pub(super) fn find(&self, tag: u32, item: &T) -> Option<Found>
    where
        T: Eq,
    {
        let slots = &self.slots;
        self.table
            .find(tag, |id| slots[id as usize].item.as_ref() == Some(item))
    }

    /// Whether an `add` of slot `id`'s item at `priority` changes nothing: the item is
    /// waiting (ready, or re-added while processing) at that priority or a higher one.
    #[inline]
    pub(super) fn waits(&self, id: u32, priority: i32) -> bool {
        let slot = &self.slots[id as usize];
        matches!(slot.phase, Phase::Ready | Phase::ProcessingReady) && priority <= slot.priority
    }

    /// `add` without a delay while no item is delayed (so none can be due), `found` being
    /// the item's lookup, when the add changes something: a new item, or one being processed
    /// (the rest go through [`add_any`](Self::add_any)). No clock read without metrics hooks.
    #[inline]
    pub(super) fn add_now(
        &mut self,
        hash: u64,
        item: T,
        priority: i32,
        found: Option<Found>,
        out: &mut After<T>,
    ) -> Option<T>
    where
        T: Eq,
    {
        if self.shutting_down {
            return Some(item);
        }
        let Some(found) = found else {
            let id = self.alloc(tag_of(hash), item, priority);
            self.enter_new(id, None, &mut Now::default(), out);
            return None;
        };
        let slot = &mut self.slots[found.id as usize];
        match slot.phase {
            Phase::Processing => {
                slot.priority = priority;
                slot.phase = Phase::ProcessingReady;
                self.mark_queued(found.id, None, &mut Now::default(), out);
                Some(item)
            }
            _ => self.add_any(hash, item, priority, None, out),
        }
    }

    /// `add` in every case (see the module docs for the phases).
    #[inline(never)]
    fn add_any(
        &mut self,
        hash: u64,
        item: T,
        priority: i32,
        delay: Option<Duration>,
        out: &mut After<T>,
    ) -> Option<T>
    where
        T: Eq,
    {
        let tag = tag_of(hash);
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
            (Phase::Free, _) => debug_assert!(false, "free slot {id} is in the slot table"),
        }
        Some(item)
    }

    /// Hands out the next ready item, if any.
    pub(super) fn take(&mut self, out: &mut After<T>) -> Option<(T, i32)>
    where
        T: Clone,
    {
        let mut now = Now::default();
        if !self.heap.is_empty() {
            self.promote_due(now.get(), out);
        }
        let (id, taken) = self.pop_ready()?;
        if let Some(t) = &mut self.timing {
            let now = now.get();
            t.started_at[id as usize] = now;
            t.started_sum += now.saturating_duration_since(t.epoch).as_nanos();
            t.processing.push_back(&mut self.slots, id);
            out.taken = Some(now.saturating_duration_since(t.queued_at[id as usize]));
        }
        Some(taken)
    }

    /// Whether [`take`](Self::take) can be [`pop_ready`](Self::pop_ready): no delayed item
    /// to promote, no time tracking.
    #[inline]
    pub(super) fn plain(&self) -> bool {
        self.heap.is_empty() && !self.timed
    }

    /// Hands out the next ready item (and its slot), if any, without promoting due items or
    /// tracking time (see [`take`](Self::take)).
    #[inline]
    pub(super) fn pop_ready(&mut self) -> Option<(u32, (T, i32))>
    where
        T: Clone,
    {
        if self.ready_count == 0 {
            return None;
        }
        let (id, next) = self.ready.pop_front(&mut self.slots)?;
        // The next item handed out will come back through `done`, which looks it up in the
        // slot table: start fetching that cache line now.
        if next != NIL {
            self.table.prefetch(self.slots[next as usize].tag);
        }
        self.ready_count -= 1;
        if self.ready_count == 0 {
            self.signals.set_ready(false);
        }
        self.in_flight += 1;
        let slot = &mut self.slots[id as usize];
        slot.phase = Phase::Processing;
        let priority = slot.priority;
        Some((id, (self.copy_out(id)?, priority)))
    }

    /// `done` in its common case: `item` was processed and not added since, no item is
    /// delayed and no metrics hooks are installed. Then (or if the queue does not hold `item`)
    /// returns the item the queue forgot, to drop after the lock, and whether a drain waits
    /// for this; in every other case returns `None` and changes nothing (use
    /// [`done`](Self::done)).
    #[inline]
    pub(super) fn try_forget(&mut self, tag: u32, item: &T) -> Option<(Option<T>, bool)>
    where
        T: Eq + 'static,
    {
        if !self.plain() {
            return None;
        }
        let Some(found) = self.find(tag, item) else {
            return Some((None, false));
        };
        if self.slots[found.id as usize].phase != Phase::Processing {
            return None;
        }
        self.table.remove(found);
        self.in_flight -= 1;
        let drained = self.drain_requested && self.in_flight == 0;
        let item = self.free_slot(found.id);
        let item = self.keep_spare(item);
        self.maybe_shrink();
        Some((item, drained))
    }

    /// Marks `item` done; returns the item to drop if the queue forgot it.
    pub(super) fn done(&mut self, tag: u32, item: &T, out: &mut After<T>) -> Option<T>
    where
        T: Eq + 'static,
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
                let item = self.keep_spare(item);
                self.maybe_shrink();
                item
            }
        }
    }

    /// Stops accepting items; drops delayed ones; wakes every parked worker.
    pub(super) fn shut_down(&mut self, out: &mut After<T>) -> Vec<T>
    where
        T: Eq,
    {
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

    pub(super) fn stats(&mut self, out: &mut After<T>) -> QueueStats {
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

#[cfg(test)]
mod tests;
