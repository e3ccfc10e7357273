//! The slab every item of a queue lives in: one [`Slot`] per item the queue knows about
//! (waiting, delayed or being processed), addressed by a `u32` id, with a free list so that
//! ids and memory are reused. A slot holds the item, its [`Phase`], its priority, its
//! position in the delay heap and its links in a ready list.
//!
//! A queue of `String`s also reuses the allocations of the items it forgets: it keeps up to
//! [`SPARES`] of them and copies the next items it hands out into them (see
//! [`State::copy_out`]).

use std::any::TypeId;

use super::delay_heap::HeapPositions;
use super::state::State;

/// "No slot" in the intrusive links and heap positions.
pub(super) const NIL: u32 = u32::MAX;
/// An idle queue with more slots than [`SHRINK_ABOVE`] gives memory back down to this many.
const SHRINK_THRESHOLD: usize = 1024;
/// Above this many slots (about 2.5 MB of slab, 1 MB of slot table), an idle queue gives
/// memory back. Below it a queue keeps its slots: one whose workers keep up empties many
/// times a second, and rebuilding its slot table each time costs more
/// than the memory is worth.
const SHRINK_ABOVE: usize = 65_536;
/// How many forgotten items a queue that reuses their allocations keeps (see
/// [`State::copy_out`]): enough for the items that workers finish between two `get`s.
const SPARES: usize = 8;

/// Whether copies of `T` handed out by `get` are made into forgotten items: true for
/// `String`, whose `clone_from` copies into the buffer it has.
///
/// A `get` copies the item under the lock, and for a `String` that copy is a `malloc`; a
/// `done` forgets the item, whose buffer was freed after the lock. Copying into a forgotten
/// buffer (the right size: keys of one kind have about one length) takes the `malloc` out
/// of the lock and frees one buffer per item instead of two. Measured side by side on 2
/// shared cores (`benches/core.rs`, Q1 with `String` keys): 5% more completions per second.
///
/// Only for `String`: for other types `clone_from` is usually the default, which drops the
/// old value where it stands (under the lock, and with it perhaps the last reference of an
/// `Arc`), and nothing is reused.
#[inline]
fn reuses_allocations<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<String>()
}

/// Where an item is in its life in the queue (see the engine's module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
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

/// One item the queue knows about, and where it is.
pub(super) struct Slot<T> {
    pub(super) item: Option<T>,
    pub(super) tag: u32,
    pub(super) phase: Phase,
    /// The priority of the current waiting period (the highest one it was added with).
    pub(super) priority: i32,
    pub(super) heap_pos: u32,
    /// Links in a ready list (phase `Ready`) or in the processing list (time tracking).
    pub(super) prev: u32,
    pub(super) next: u32,
}

impl<T> HeapPositions for Vec<Slot<T>> {
    #[inline]
    fn set_heap_pos(&mut self, slot: u32, pos: u32) {
        self[slot as usize].heap_pos = pos;
    }
}

impl<T> State<T> {
    /// Puts `item` in a free slot (phase `Free`; the caller sets it) and enters it in the slot
    /// table.
    #[inline]
    pub(super) fn alloc(&mut self, tag: u32, item: T, priority: i32) -> u32 {
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

    /// Removes slot `id` from the slot table, then frees it.
    pub(super) fn release(&mut self, id: u32) -> Option<T> {
        let tag = self.slots[id as usize].tag;
        self.table.remove_id(tag, id);
        self.free_slot(id)
    }

    /// Frees slot `id` (already removed from the slot table) and returns its item.
    #[inline]
    pub(super) fn free_slot(&mut self, id: u32) -> Option<T> {
        let slot = &mut self.slots[id as usize];
        slot.phase = Phase::Free;
        let item = slot.item.take();
        self.free.push(id);
        item
    }

    /// A copy of the item of slot `id` to hand out: made into a spare (a forgotten item kept
    /// by [`keep_spare`](Self::keep_spare)) if there is one, else a clone.
    #[inline]
    pub(super) fn copy_out(&mut self, id: u32) -> Option<T>
    where
        T: Clone,
    {
        let item = self.slots[id as usize].item.as_ref()?;
        Some(match self.spares.pop() {
            Some(mut spare) => {
                spare.clone_from(item);
                spare
            }
            None => item.clone(),
        })
    }

    /// Keeps a forgotten item as a spare for [`copy_out`](Self::copy_out) if `T` reuses
    /// allocations and fewer than [`SPARES`] are kept; returns what to drop after the lock.
    #[inline]
    pub(super) fn keep_spare(&mut self, forgotten: Option<T>) -> Option<T>
    where
        T: 'static,
    {
        match forgotten {
            Some(item) if reuses_allocations::<T>() && self.spares.len() < SPARES => {
                self.spares.push(item);
                None
            }
            other => other,
        }
    }

    /// Gives memory back when the queue holds no item at all after a burst.
    #[inline]
    pub(super) fn maybe_shrink(&mut self) {
        if self.free.len() == self.slots.len() && self.slots.len() > SHRINK_ABOVE {
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
}
