//! [`Published`]: the items whose `add` is answered without the queue's lock.
//!
//! Under load most adds are of an item already waiting, and such an add changes nothing. The
//! engine answers it from a concurrent map instead of taking its lock, so that the producer
//! neither waits for the lock nor pulls the lock's cache line away from the workers.
//!
//! # What is published
//!
//! An item is published when an `add` under the lock finds it already waiting (it is a key
//! that is added again and again: exactly the adds worth answering without the lock). From
//! then on its slot is *published*: [`Published::map`] holds `item -> (slot id, generation)`
//! and the slot's status word ([`Statuses`]) says, as long as the slot keeps that
//! generation, whether the item is waiting (ready, or added again while processing) and at
//! which priority. Only the queue's lock holder writes either. A slot is unpublished when it
//! is freed; when the item comes back (a new slot, possibly another id) it is published
//! again at once if the map still knows it. Items added once (a list's keys, Q1) are never
//! published and cost nothing here. Stale entries (items no longer held) are swept when they
//! outnumber the held items (see [`Published::should_sweep`]).
//!
//! # Why an `add` answered here is correct (linearizability)
//!
//! The fast path reads the map's value `(id, g)` for the item (acquire), then the status
//! word of slot `id` (acquire), and returns only if that word has generation `g`, says
//! *waiting*, and a priority at least the one asked for. Then, at the instant of that second
//! load, the queue held the item, waiting at that priority or a higher one, so an `add` at
//! that instant changes nothing (no phase, priority, counter, hook or wake-up changes for an
//! item already waiting) and the fast path's return is that `add`, linearized there:
//!
//! - the generation of a slot's status word increases each time the slot is published, and
//!   the map's value for an item is written (release) after the status word it names; so a
//!   load that sees generation `g` sees the status of the same publication the map's value
//!   came from, or a later store of that same publication; never one of another item;
//! - while published, a slot's status is stored under the lock at every change of phase or
//!   priority. The one change that ends *waiting* for an item the queue keeps is a `get`
//!   handing it out, which clears the flag before it returns the item (that store is the
//!   `get`'s linearization point for this item); an item is freed only after being handed
//!   out, so a freed slot's status never says waiting, and a new item in that slot is not
//!   published until the generation moves on. The other stores only turn *waiting* on, or
//!   change the priority: missing one makes the fast path fall back to the lock (never
//!   wrong, only slower).
//!
//! An `add` that finds anything else (no entry, another generation, not waiting, a lower
//! priority, a delay) takes the lock as before. Generations have 40 bits: the map's value
//! could only name the wrong publication if one reader stopped between its two loads for
//! 2^40 publications of the same slot. Slots above 2^24 are not published.
//!
//! The map is [`papaya`]'s: lock-free reads with epoch-based reclamation (`seize`), so a
//! reader holds no lock and writes no shared cache line; keeping this path free of
//! hand-written `unsafe` is why a crate holds the items rather than the slab. `dashmap`
//! takes a shard lock per read (a write to a shared line, what this path avoids); `scc`'s
//! `HashIndex` reads lock-free too, but measured slower per look-up here.

use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use papaya::{Equivalent, Guard};

/// Slots at or above this id are never published (the map's value keeps 24 bits of id).
pub(super) const MAX_PUBLISHED_ID: u32 = 1 << ID_BITS;
const ID_BITS: u32 = 24;
/// Generations are this wide (in the map's value and in status words).
const GEN_BITS: u32 = 40;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
/// Status word: bits 0..16 the priority (clamped, see [`status`]), bit 16 waiting, bits
/// 24..64 the generation.
const WAITING: u64 = 1 << 16;
const GEN_SHIFT: u32 = 24;
/// Stale entries are swept once the map holds more than twice the held items plus this.
const SWEEP_SLACK: usize = 16_384;

/// The first chunk of [`Statuses`] holds this many slots; chunk `k` holds `BASE << k`.
const BASE: usize = 64;
/// Enough chunks for every publishable id.
const CHUNKS: usize = (ID_BITS as usize) - 5;

/// A status word: generation `generation`, and if `waiting`, the priority (clamped into 16 bits, or
/// not waiting at all when it does not fit below: see the module docs).
#[inline]
pub(super) fn status(generation: u64, waiting: bool, priority: i32) -> u64 {
    let generation = (generation & GEN_MASK) << GEN_SHIFT;
    // A priority above i16::MAX is stored as i16::MAX (adds up to that are still answered
    // here); one below i16::MIN is not stored as waiting (every add of it takes the lock).
    match i16::try_from(priority) {
        _ if !waiting => generation,
        Ok(p) => generation | WAITING | u64::from(p as u16),
        Err(_) if priority > 0 => generation | WAITING | u64::from(i16::MAX as u16),
        Err(_) => generation,
    }
}

#[inline]
fn generation_of(status: u64) -> u64 {
    status >> GEN_SHIFT
}

#[inline]
fn pack(id: u32, generation: u64) -> u64 {
    ((generation & GEN_MASK) << ID_BITS) | u64::from(id)
}

#[inline]
fn unpack(value: u64) -> (u32, u64) {
    ((value & ((1 << ID_BITS) - 1)) as u32, value >> ID_BITS)
}

/// Whether a status word read for generation `generation` answers an `add` at `priority`.
#[inline]
fn answers(status: u64, generation: u64, priority: i32) -> bool {
    generation_of(status) == generation
        && status & WAITING != 0
        && priority <= i32::from(status as u16 as i16)
}

/// One status word per publishable slot id, in chunks that never move or shrink (so a
/// reader without the lock can index them, and generations survive the slab's shrinking).
pub(super) struct Statuses {
    chunks: [OnceLock<Box<[AtomicU64]>>; CHUNKS],
}

impl Default for Statuses {
    fn default() -> Self {
        Self {
            chunks: std::array::from_fn(|_| OnceLock::new()),
        }
    }
}

impl Statuses {
    /// The chunk and offset of slot `id`.
    #[inline]
    fn locate(id: u32) -> (usize, usize) {
        let x = id as usize / BASE + 1;
        let chunk = (usize::BITS - 1 - x.leading_zeros()) as usize;
        (chunk, id as usize - BASE * ((1 << chunk) - 1))
    }

    /// The status word of `id`, if its chunk exists.
    #[inline]
    pub(super) fn get(&self, id: u32) -> Option<&AtomicU64> {
        let (chunk, at) = Self::locate(id);
        self.chunks.get(chunk)?.get()?.get(at)
    }

    /// The status word of `id` (below [`MAX_PUBLISHED_ID`]), its chunk made if need be.
    pub(super) fn get_or_make(&self, id: u32) -> &AtomicU64 {
        let (chunk, at) = Self::locate(id);
        &self.chunks[chunk].get_or_init(|| (0..BASE << chunk).map(|_| AtomicU64::new(0)).collect())
            [at]
    }
}

/// A key of the map: the item and its hash (computed once, by the engine's hasher).
pub(super) struct Hashed<T> {
    hash: u64,
    item: T,
}

impl<T> Hash for Hashed<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<T: PartialEq> PartialEq for Hashed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.item == other.item
    }
}

impl<T: Eq> Eq for Hashed<T> {}

/// A look-up of an item by reference, with its hash.
struct Probe<'a, T> {
    hash: u64,
    item: &'a T,
}

impl<T> Hash for Probe<'_, T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl<T: Eq> Equivalent<Hashed<T>> for Probe<'_, T> {
    fn equivalent(&self, key: &Hashed<T>) -> bool {
        self.hash == key.hash && *self.item == key.item
    }
}

/// The map's hasher: the keys carry their hash already.
#[derive(Default)]
pub(super) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        // Keys write one u64; anything else is still hashed deterministically.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Map<T> = papaya::HashMap<Hashed<T>, AtomicU64, BuildHasherDefault<PassThrough>>;

/// What the lock holder publishes for those who do not take the lock: the published items
/// and their slots' status words (read by [`Published::waiting`]), and whether any item is
/// ready (read by spinning workers, [`Published::has_ready`]). Written under the queue's lock
/// only.
pub(super) struct Published<T> {
    map: Map<T>,
    /// Whether any item is ready: a hint for workers spinning before they park (they take
    /// the lock to take an item, and before parking).
    ready: AtomicBool,
    statuses: Statuses,
    /// Whether the map may hold anything (so an `add` on a queue that never published skips
    /// the map).
    any: AtomicBool,
    /// Entries in the map (kept here: papaya's count is costlier to read).
    len: AtomicUsize,
}

impl<T> Default for Published<T> {
    fn default() -> Self {
        Self {
            map: papaya::HashMap::builder()
                .hasher(BuildHasherDefault::default())
                .build(),
            statuses: Statuses::default(),
            ready: AtomicBool::new(false),
            any: AtomicBool::new(false),
            len: AtomicUsize::new(0),
        }
    }
}

impl<T> Published<T> {
    /// Says whether any item is ready (under the lock, when that changes).
    #[inline]
    pub(super) fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether an item was ready when last looked at (without the lock: a hint).
    #[inline]
    pub(super) fn has_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Stores the status of published slot `id` (under the lock).
    #[inline]
    pub(super) fn set_status(&self, id: u32, waiting: bool, priority: i32) {
        if let Some(word) = self.statuses.get(id) {
            let generation = generation_of(word.load(Ordering::Relaxed));
            word.store(status(generation, waiting, priority), Ordering::Release);
        }
    }

    /// Whether stale entries outnumber the `held` items enough to sweep them.
    #[inline]
    pub(super) fn should_sweep(&self, held: usize) -> bool {
        self.len.load(Ordering::Relaxed) > 2 * held + SWEEP_SLACK
    }
}

impl<T: Eq> Published<T> {
    /// Removes every entry whose slot is no longer that publication (under the lock):
    /// `current(id)` says whether slot `id` is published now.
    #[cold]
    pub(super) fn sweep(&self, mut current: impl FnMut(u32) -> bool) {
        let guard = self.map.guard();
        self.map.retain(
            |_, value| {
                let (id, generation) = unpack(value.load(Ordering::Relaxed));
                current(id)
                    && self
                        .statuses
                        .get(id)
                        .is_some_and(|s| generation_of(s.load(Ordering::Relaxed)) == generation)
            },
            &guard,
        );
        self.recount(&guard);
    }

    /// Forgets every entry (under the lock, when the queue holds no item).
    pub(super) fn clear(&self) {
        if self.any.load(Ordering::Relaxed) {
            let guard = self.map.guard();
            self.map.clear(&guard);
            self.recount(&guard);
        }
    }

    fn recount(&self, guard: &impl Guard) {
        let len = self.map.iter(guard).count();
        self.len.store(len, Ordering::Relaxed);
        self.any.store(len > 0, Ordering::Relaxed);
    }
}

impl<T> Published<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    /// Whether `item` (hashed to `hash`) is waiting at `priority` or higher: then an `add` of
    /// it changes nothing. Without the lock; `false` when unsure. See the module docs.
    #[inline]
    pub(super) fn waiting(&self, hash: u64, item: &T, priority: i32) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return false;
        }
        let guard = self.map.guard();
        let Some(value) = self.map.get(&Probe { hash, item }, &guard) else {
            return false;
        };
        let (id, generation) = unpack(value.load(Ordering::Acquire));
        self.statuses
            .get(id)
            .is_some_and(|s| answers(s.load(Ordering::Acquire), generation, priority))
    }

    /// Publishes slot `id` holding `item` (under the lock; `id` below
    /// [`MAX_PUBLISHED_ID`]): moves its generation on, stores `status` with it, then maps
    /// the item to the slot. Returns the generation.
    pub(super) fn publish(
        &self,
        id: u32,
        hash: u64,
        item: &T,
        waiting: bool,
        priority: i32,
    ) -> u64 {
        let word = self.statuses.get_or_make(id);
        let generation = (generation_of(word.load(Ordering::Relaxed)) + 1) & GEN_MASK;
        word.store(status(generation, waiting, priority), Ordering::Release);
        let guard = self.map.guard();
        let value = pack(id, generation);
        match self.map.get(&Probe { hash, item }, &guard) {
            Some(v) => v.store(value, Ordering::Release),
            None => {
                self.map.insert(
                    Hashed {
                        hash,
                        item: item.clone(),
                    },
                    AtomicU64::new(value),
                    &guard,
                );
                self.len.fetch_add(1, Ordering::Relaxed);
                self.any.store(true, Ordering::Relaxed);
            }
        }
        generation
    }

    /// Whether the map knows `item` (under the lock, for an item coming back).
    #[inline]
    pub(super) fn knows(&self, hash: u64, item: &T) -> bool {
        self.any.load(Ordering::Relaxed) && {
            let guard = self.map.guard();
            self.map.get(&Probe { hash, item }, &guard).is_some()
        }
    }

    /// The number of entries (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests;
