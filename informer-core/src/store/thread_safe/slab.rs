//! [`Inner`]: everything behind the store's lock (client-go's `threadSafeMap`). Objects live
//! in a slab of [`Entry`]s found through a key table; the [`Index`]es file them by value.
//! Every write path is here: insert, update (re-filing only indexes whose values changed),
//! remove, and replace.

use std::mem;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use smallvec::SmallVec;

use super::index::{Index, Link, index_id_u32, normalized};
use crate::error::IndexError;
use crate::key::ObjectKey;
use crate::store::{NAMESPACE_INDEX, ReplaceDiff};

/// Everything behind the lock.
///
/// Layout: objects live in a slab (`entries`) addressed by `u32` slot ids, with a free list.
/// `by_key` maps a key to its slot (the table stores only slot ids; keys are compared in the
/// slab). Each index maps a value to a value id (`lookup`), and each value id to the set of
/// objects filed under it (`sets[id].members`: a `Vec` of `(Arc<K>, slot)`, so a read walks
/// it without touching the slab). Each object records its memberships (`links`), each with
/// its position in the member `Vec`, so removal is a `swap_remove` and a fix-up of the one
/// member that moved.
pub(super) struct Inner<K> {
    pub(super) entries: Vec<Option<Entry<K>>>,
    pub(super) free: Vec<u32>,
    pub(super) len: usize,
    pub(super) by_key: HashTable<u32>,
    /// `indexes[0]` is [`NAMESPACE_INDEX`]; user indexes follow in registration order.
    pub(super) indexes: Vec<Index<K>>,
    pub(super) resource_version: Option<String>,
}

/// One stored object, in its slot of the slab.
pub(super) struct Entry<K> {
    pub(super) key: ObjectKey,
    /// The hash of `key`, so that table growth and deletes do not rehash keys.
    pub(super) hash: u64,
    pub(super) obj: Arc<K>,
    /// Where this object is filed: one link per (index, value).
    pub(super) links: SmallVec<[Link; 2]>,
}

/// An object ready to be written: its key, and its values in each user index (in the order of
/// `Inner::indexes[1..]`), sorted and deduplicated.
pub(super) struct Prepared<K> {
    pub(super) key: ObjectKey,
    pub(super) hash: u64,
    pub(super) obj: Arc<K>,
    pub(super) values: Values,
}

/// An object's values in each user index, in the order of `Inner::indexes[1..]`.
pub(super) type Values = SmallVec<[Vec<String>; 2]>;

/// What `replace` did to a slot so far.
#[derive(Clone, Copy)]
enum Mark {
    /// In the store before the replace and not (yet) in the new list.
    Stale,
    /// Added by the replace, at this position of `ReplaceDiff::added`.
    Added(usize),
    /// Updated by the replace, at this position of `ReplaceDiff::updated`.
    Updated(usize),
}

/// A slab position as a slot id.
pub(super) fn slot_id(n: usize) -> u32 {
    u32::try_from(n).expect("ThreadSafeStore holds at most u32::MAX objects")
}

impl<K> Inner<K> {
    pub(super) fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
            by_key: HashTable::new(),
            indexes: vec![Index::new(NAMESPACE_INDEX.into(), None)],
            resource_version: None,
        }
    }

    pub(super) fn index_id(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|ix| &*ix.name == name)
    }

    pub(super) fn index_id_or_err(&self, name: &str) -> Result<usize, IndexError> {
        self.index_id(name)
            .ok_or_else(|| IndexError::UnknownIndex(name.to_owned()))
    }

    pub(super) fn slot_of(&self, key: &ObjectKey, hash: u64) -> Option<u32> {
        let entries = &self.entries;
        self.by_key
            .find(hash, |&slot| {
                entries[slot as usize]
                    .as_ref()
                    .is_some_and(|e| e.hash == hash && e.key == *key)
            })
            .copied()
    }

    /// Calls every user index function on `obj`. Changes nothing.
    pub(super) fn values_for(&self, obj: &K) -> Values {
        self.indexes[1..]
            .iter()
            .map(|ix| match &ix.func {
                Some(func) => normalized(func(obj)),
                None => Vec::new(),
            })
            .collect()
    }

    /// Inserts or updates; returns the object that was replaced.
    pub(super) fn upsert(&mut self, hasher: &RandomState, p: Prepared<K>) -> Option<Arc<K>> {
        match self.slot_of(&p.key, p.hash) {
            Some(slot) => self.update_slot(hasher, slot, p.obj, &p.values),
            None => {
                self.insert_new(hasher, p);
                None
            }
        }
    }

    fn insert_new(&mut self, hasher: &RandomState, p: Prepared<K>) -> u32 {
        let Prepared {
            key,
            hash,
            obj,
            values,
        } = p;
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.entries.push(None);
                slot_id(self.entries.len() - 1)
            }
        };
        let mut links = SmallVec::new();
        let (namespace_index, user_indexes) = self
            .indexes
            .split_first_mut()
            .expect("the namespace index always exists");
        namespace_index.link(
            0,
            hasher,
            &mut links,
            slot,
            &obj,
            key.namespace().unwrap_or(""),
        );
        for (i, (index, values)) in user_indexes.iter_mut().zip(&values).enumerate() {
            for value in values {
                index.link(index_id_u32(i + 1), hasher, &mut links, slot, &obj, value);
            }
        }
        self.entries[slot as usize] = Some(Entry {
            key,
            hash,
            obj,
            links,
        });
        let entries = &self.entries;
        self.by_key.insert_unique(hash, slot, |&s| {
            entries[s as usize].as_ref().map_or(0, |e| e.hash)
        });
        self.len += 1;
        slot
    }

    /// Stores `obj` in the occupied `slot`; re-files it only in the indexes whose values
    /// changed. Returns the previous object.
    fn update_slot(
        &mut self,
        hasher: &RandomState,
        slot: u32,
        obj: Arc<K>,
        values: &Values,
    ) -> Option<Arc<K>> {
        let Inner {
            entries, indexes, ..
        } = self;
        let entry = entries[slot as usize].as_mut()?;
        let old = mem::replace(&mut entry.obj, obj.clone());
        let links = mem::take(&mut entry.links);

        // Which user indexes change? (index ids 1.., so `changed[id - 1]`)
        let changed: SmallVec<[bool; 4]> = values
            .iter()
            .enumerate()
            .map(|(i, new)| {
                let id = index_id_u32(i + 1);
                let index = &indexes[i + 1];
                let mut old_count = 0;
                let all_old_kept = links.iter().filter(|l| l.index == id).all(|l| {
                    old_count += 1;
                    let old_value = &*index.sets[l.value as usize].value;
                    new.binary_search_by(|v| v.as_str().cmp(old_value)).is_ok()
                });
                !(all_old_kept && old_count == new.len())
            })
            .collect();
        let is_changed = |id: u32| id != 0 && changed[id as usize - 1];

        let mut kept = SmallVec::with_capacity(links.len());
        for link in links {
            let index = &mut indexes[link.index as usize];
            if is_changed(link.index) {
                index.unlink(entries, link);
            } else {
                index.sets[link.value as usize].members[link.pos as usize].obj = obj.clone();
                kept.push(link);
            }
        }
        for (i, new) in values.iter().enumerate() {
            let id = index_id_u32(i + 1);
            if is_changed(id) {
                for value in new {
                    indexes[i + 1].link(id, hasher, &mut kept, slot, &obj, value);
                }
            }
        }
        if let Some(entry) = entries[slot as usize].as_mut() {
            entry.links = kept;
        }
        Some(old)
    }

    /// Removes the object in `slot` from the table and every index.
    pub(super) fn remove_slot(&mut self, slot: u32) -> Option<Entry<K>> {
        let mut entry = self.entries[slot as usize].take()?;
        if let Ok(found) = self.by_key.find_entry(entry.hash, |&s| s == slot) {
            found.remove();
        }
        for link in mem::take(&mut entry.links) {
            self.indexes[link.index as usize].unlink(&mut self.entries, link);
        }
        self.free.push(slot);
        self.len -= 1;
        Some(entry)
    }

    pub(super) fn replace(
        &mut self,
        hasher: &RandomState,
        prepared: Vec<Prepared<K>>,
        resource_version: &str,
    ) -> ReplaceDiff<K> {
        let mut diff = ReplaceDiff::default();
        let mut marks = vec![Mark::Stale; self.entries.len()];
        for p in prepared {
            let obj = p.obj.clone();
            match self.slot_of(&p.key, p.hash) {
                Some(slot) => {
                    let Some(prev) = self.update_slot(hasher, slot, p.obj, &p.values) else {
                        continue;
                    };
                    match marks[slot as usize] {
                        Mark::Stale => {
                            marks[slot as usize] = Mark::Updated(diff.updated.len());
                            diff.updated.push((prev, obj));
                        }
                        Mark::Updated(i) => diff.updated[i].1 = obj,
                        Mark::Added(i) => diff.added[i] = obj,
                    }
                }
                None => {
                    let slot = self.insert_new(hasher, p) as usize;
                    if marks.len() <= slot {
                        marks.resize(slot + 1, Mark::Stale);
                    }
                    marks[slot] = Mark::Added(diff.added.len());
                    diff.added.push(obj);
                }
            }
        }
        for (slot, mark) in marks.into_iter().enumerate() {
            if matches!(mark, Mark::Stale)
                && let Some(entry) = self.remove_slot(slot_id(slot))
            {
                diff.deleted.push((entry.key, entry.obj));
            }
        }
        self.resource_version = Some(resource_version.to_owned());
        diff
    }
}
