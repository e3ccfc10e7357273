//! [`DelayHeap`]: the delayed slots of a queue, an indexed binary min-heap of deadlines.
//!
//! Each entry names a slot of the queue's slab; the slab remembers where its entry sits
//! (through [`HeapPositions`]), so an entry can be removed or moved to an earlier deadline
//! in `O(log n)` without leaving stale entries behind. Entries with the same deadline come
//! out in the order their deadlines were set (a sequence number breaks ties), which keeps
//! the queues' order deterministic under tokio's paused clock.

use tokio::time::Instant;

/// Where the heap tells the slab an entry moved to.
pub(crate) trait HeapPositions {
    /// Records that the entry of `slot` now sits at index `pos` of the heap.
    fn set_heap_pos(&mut self, slot: u32, pos: u32);
}

/// One delayed slot.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DelayEntry {
    /// When the slot becomes ready.
    pub(crate) deadline: Instant,
    /// Breaks ties between equal deadlines: the deadline set first comes out first.
    pub(crate) seq: u64,
    /// The slot of the delayed item.
    pub(crate) slot: u32,
}

impl DelayEntry {
    #[inline]
    fn before(&self, other: &DelayEntry) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

/// An indexed min-heap of [`DelayEntry`] ordered by `(deadline, seq)`.
#[derive(Debug, Default)]
pub(crate) struct DelayHeap {
    entries: Vec<DelayEntry>,
}

impl DelayHeap {
    /// The number of delayed slots.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no slot is delayed.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry with the earliest deadline.
    #[inline]
    pub(crate) fn peek(&self) -> Option<&DelayEntry> {
        self.entries.first()
    }

    /// The deadline of the entry at `pos` (as given to [`HeapPositions::set_heap_pos`]).
    #[inline]
    pub(crate) fn deadline_at(&self, pos: u32) -> Option<Instant> {
        self.entries.get(pos as usize).map(|e| e.deadline)
    }

    /// Adds an entry.
    pub(crate) fn push(&mut self, entry: DelayEntry, slab: &mut impl HeapPositions) {
        let pos = self.entries.len();
        self.entries.push(entry);
        self.sift_up(pos, slab);
    }

    /// Removes and returns the entry with the earliest deadline.
    pub(crate) fn pop(&mut self, slab: &mut impl HeapPositions) -> Option<DelayEntry> {
        if self.entries.is_empty() {
            return None;
        }
        Some(self.remove(0, slab))
    }

    /// Removes the entry at `pos`.
    ///
    /// `pos` must be a position reported through [`HeapPositions`] for a live entry.
    pub(crate) fn remove(&mut self, pos: u32, slab: &mut impl HeapPositions) -> DelayEntry {
        let pos = pos as usize;
        let removed = self.entries.swap_remove(pos);
        if pos < self.entries.len() {
            // The former last entry now sits at `pos`: it may belong above or below.
            slab.set_heap_pos(self.entries[pos].slot, pos as u32);
            let pos = self.sift_up(pos, slab);
            self.sift_down(pos, slab);
        }
        removed
    }

    /// Moves the entry at `pos` to an earlier `deadline` (with a new tie-breaking `seq`).
    ///
    /// Does nothing unless `deadline` is strictly earlier than the entry's current one.
    pub(crate) fn advance(
        &mut self,
        pos: u32,
        deadline: Instant,
        seq: u64,
        slab: &mut impl HeapPositions,
    ) {
        let pos = pos as usize;
        let Some(entry) = self.entries.get_mut(pos) else {
            return;
        };
        if deadline >= entry.deadline {
            return;
        }
        entry.deadline = deadline;
        entry.seq = seq;
        self.sift_up(pos, slab);
    }

    /// Removes and returns every entry, in no particular order.
    pub(crate) fn take_entries(&mut self) -> Vec<DelayEntry> {
        std::mem::take(&mut self.entries)
    }

    /// Releases memory after a burst, keeping room for `min` entries.
    pub(crate) fn shrink_to(&mut self, min: usize) {
        self.entries.shrink_to(min);
    }

    fn sift_up(&mut self, mut pos: usize, slab: &mut impl HeapPositions) -> usize {
        let entry = self.entries[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !entry.before(&self.entries[parent]) {
                break;
            }
            self.entries[pos] = self.entries[parent];
            slab.set_heap_pos(self.entries[pos].slot, pos as u32);
            pos = parent;
        }
        self.entries[pos] = entry;
        slab.set_heap_pos(entry.slot, pos as u32);
        pos
    }

    fn sift_down(&mut self, mut pos: usize, slab: &mut impl HeapPositions) {
        let len = self.entries.len();
        let entry = self.entries[pos];
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.entries[right].before(&self.entries[left]) {
                right
            } else {
                left
            };
            if !self.entries[child].before(&entry) {
                break;
            }
            self.entries[pos] = self.entries[child];
            slab.set_heap_pos(self.entries[pos].slot, pos as u32);
            pos = child;
        }
        self.entries[pos] = entry;
        slab.set_heap_pos(entry.slot, pos as u32);
    }
}

#[cfg(test)]
mod tests;
