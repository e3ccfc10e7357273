//! [`SlotTable`]: from an item (by its hash tag) to its slab slot. An open-addressing hash
//! table with linear probing over `(tag, slot id)` pairs packed in a `u64`.
//!
//! A tag is 32 bits of the item's hash, computed outside the queue's lock. The table never
//! looks at items itself: a lookup walks the probe sequence of the tag's home position and
//! asks the caller to confirm candidates whose tag matches (by comparing the item in the
//! slot). Because an entry is a single `u64` next to its neighbours, a lookup usually reads one
//! cache line — for a queue holding a million keys that is one cache miss per `add` and per
//! `done`, where a table with separate control bytes costs two. The load factor stays at or
//! below one half, and removal shifts later entries back (no tombstones), so probe sequences
//! stay short however many items come and go.
//!
//! [`SlotTable::prefetch`] lets the queue start loading the line of the item it will hand out
//! next, so that the item's `done` finds it in cache.

/// An empty position.
const EMPTY: u64 = u64::MAX;
/// Smallest table (positions).
const MIN_CAPACITY: usize = 16;

#[inline]
fn pack(tag: u32, id: u32) -> u64 {
    (u64::from(tag) << 32) | u64::from(id)
}

#[inline]
fn tag_of(entry: u64) -> u32 {
    (entry >> 32) as u32
}

#[inline]
fn id_of(entry: u64) -> u32 {
    entry as u32
}

/// A map from `(tag, slot id)` pairs, looked up by tag plus a caller-supplied check.
///
/// Slot ids must be below `u32::MAX` (the pair `(u32::MAX, u32::MAX)` marks empty positions).
#[derive(Debug)]
pub(crate) struct SlotTable {
    entries: Box<[u64]>,
    /// `64 - log2(entries.len())`: the home position is the top bits of a multiplicative hash.
    shift: u32,
    len: usize,
}

/// Where a lookup found its entry; valid until the table is next modified.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub(crate) id: u32,
    pos: usize,
}

impl Default for SlotTable {
    fn default() -> Self {
        Self::with_positions(MIN_CAPACITY)
    }
}

impl SlotTable {
    fn with_positions(positions: usize) -> Self {
        debug_assert!(positions.is_power_of_two() && positions >= MIN_CAPACITY);
        Self {
            entries: vec![EMPTY; positions].into_boxed_slice(),
            shift: 64 - positions.trailing_zeros(),
            len: 0,
        }
    }

    /// The number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn mask(&self) -> usize {
        self.entries.len() - 1
    }

    #[inline]
    fn home(&self, tag: u32) -> usize {
        (u64::from(tag).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The entry with `tag` whose slot id `matches`.
    #[inline]
    pub(crate) fn find(&self, tag: u32, mut matches: impl FnMut(u32) -> bool) -> Option<Found> {
        let mask = self.mask();
        let mut pos = self.home(tag);
        loop {
            let entry = self.entries[pos];
            if entry == EMPTY {
                return None;
            }
            if tag_of(entry) == tag && matches(id_of(entry)) {
                return Some(Found {
                    id: id_of(entry),
                    pos,
                });
            }
            pos = (pos + 1) & mask;
        }
    }

    /// Hints the CPU to fetch the cache line a lookup of `tag` starts at.
    #[inline]
    #[allow(unsafe_code, reason = "a prefetch intrinsic (see SAFETY below)")]
    pub(crate) fn prefetch(&self, tag: u32) {
        let home = self.home(tag);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch never faults and has no effect on program state; SSE is part of
        // the x86_64 baseline.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(self.entries.as_ptr().wrapping_add(home).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = home;
    }

    /// Adds an entry; the caller guarantees no entry for the same item exists.
    pub(crate) fn insert(&mut self, tag: u32, id: u32) {
        debug_assert!(id != u32::MAX);
        if (self.len + 1) * 2 > self.entries.len() {
            self.resize(self.entries.len() * 2);
        }
        self.place(pack(tag, id));
        self.len += 1;
    }

    fn place(&mut self, entry: u64) {
        let mask = self.mask();
        let mut pos = self.home(tag_of(entry));
        while self.entries[pos] != EMPTY {
            pos = (pos + 1) & mask;
        }
        self.entries[pos] = entry;
    }

    /// Removes the entry a lookup found (the table must not have changed since).
    #[inline]
    pub(crate) fn remove(&mut self, found: Found) {
        debug_assert_eq!(id_of(self.entries[found.pos]), found.id);
        let mask = self.mask();
        let mut hole = found.pos;
        let mut pos = hole;
        loop {
            pos = (pos + 1) & mask;
            let entry = self.entries[pos];
            if entry == EMPTY {
                break;
            }
            // The entry may fill the hole if the hole lies on its probe path, that is between
            // its home and its position (cyclically).
            let home = self.home(tag_of(entry));
            if (pos.wrapping_sub(home) & mask) >= (pos.wrapping_sub(hole) & mask) {
                self.entries[hole] = entry;
                hole = pos;
            }
        }
        self.entries[hole] = EMPTY;
        self.len -= 1;
    }

    /// Removes the entry `(tag, id)`, if present.
    pub(crate) fn remove_id(&mut self, tag: u32, id: u32) {
        if let Some(found) = self.find(tag, |i| i == id) {
            self.remove(found);
        }
    }

    /// Empties the table and gives memory back down to about `keep` entries.
    pub(crate) fn clear_and_shrink(&mut self, keep: usize) {
        let positions = (keep * 2).next_power_of_two().max(MIN_CAPACITY);
        if positions < self.entries.len() {
            *self = Self::with_positions(positions);
        } else {
            self.entries.fill(EMPTY);
            self.len = 0;
        }
    }

    fn resize(&mut self, positions: usize) {
        let old = std::mem::replace(self, Self::with_positions(positions));
        self.len = old.len;
        for &entry in old.entries.iter().filter(|&&e| e != EMPTY) {
            self.place(entry);
        }
    }
}

#[cfg(test)]
mod tests;
