//! [`Index`]: one named index of the store (client-go's `storeIndex`, for one name): each
//! value maps to the [`ValueSet`] of objects filed under it, and each object records where
//! it is filed through [`Link`]s, so it can be unfiled in constant time.
//!
//! A value set holds the objects' `Arc`s themselves ([`Member`]), so a read by index walks one
//! contiguous array without touching the store's slab.

use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use smallvec::SmallVec;

use super::slab::{Entry, slot_id};
use crate::store::IndexFn;

/// One membership of an object: it is `sets[value].members[pos]` of `indexes[index]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Link {
    pub(super) index: u32,
    pub(super) value: u32,
    pub(super) pos: u32,
}

/// One named index: from each value to the objects filed under it.
pub(super) struct Index<K> {
    pub(super) name: Box<str>,
    /// `None` for the namespace index, which is computed from the key.
    pub(super) func: Option<IndexFn<K>>,
    /// Value ids, hashed by `sets[id].hash`.
    pub(super) lookup: HashTable<u32>,
    /// Value sets by id. A set in the free list has no members; every other set has at least
    /// one.
    pub(super) sets: Vec<ValueSet<K>>,
    pub(super) free: Vec<u32>,
}

/// The objects filed under one value of an index.
pub(super) struct ValueSet<K> {
    pub(super) value: Box<str>,
    pub(super) hash: u64,
    pub(super) members: Vec<Member<K>>,
}

/// One object filed under a value: its `Arc`, and its slot in the slab.
pub(super) struct Member<K> {
    pub(super) obj: Arc<K>,
    pub(super) slot: u32,
}

/// A position in `Inner::indexes` as an index id.
pub(super) fn index_id_u32(n: usize) -> u32 {
    u32::try_from(n).expect("too many indexes")
}

/// Sorts and deduplicates an index function's output, so that an object is filed once per
/// value and old and new values compare cheaply.
pub(super) fn normalized(mut values: Vec<String>) -> Vec<String> {
    if values.len() > 1 {
        values.sort_unstable();
        values.dedup();
    }
    values
}

impl<K> Index<K> {
    pub(super) fn new(name: Box<str>, func: Option<IndexFn<K>>) -> Self {
        Self {
            name,
            func,
            lookup: HashTable::new(),
            sets: Vec::new(),
            free: Vec::new(),
        }
    }

    pub(super) fn find(&self, value: &str, hash: u64) -> Option<u32> {
        let sets = &self.sets;
        self.lookup
            .find(hash, |&id| {
                let set = &sets[id as usize];
                set.hash == hash && &*set.value == value
            })
            .copied()
    }

    pub(super) fn set(&self, value: &str, hash: u64) -> Option<&ValueSet<K>> {
        self.find(value, hash).map(|id| &self.sets[id as usize])
    }

    /// Files `obj` (in `slot`) under `value`, recording the membership in `links`.
    pub(super) fn link(
        &mut self,
        index: u32,
        hasher: &RandomState,
        links: &mut SmallVec<[Link; 2]>,
        slot: u32,
        obj: &Arc<K>,
        value: &str,
    ) {
        let hash = hasher.hash_one(value);
        let id = match self.find(value, hash) {
            Some(id) => id,
            None => self.new_set(value, hash),
        };
        let members = &mut self.sets[id as usize].members;
        let pos = slot_id(members.len());
        members.push(Member {
            obj: obj.clone(),
            slot,
        });
        links.push(Link {
            index,
            value: id,
            pos,
        });
    }

    fn new_set(&mut self, value: &str, hash: u64) -> u32 {
        let set = ValueSet {
            value: value.into(),
            hash,
            members: Vec::new(),
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.sets[id as usize] = set;
                id
            }
            None => {
                self.sets.push(set);
                u32::try_from(self.sets.len() - 1)
                    .expect("an index holds at most u32::MAX distinct values")
            }
        };
        let sets = &self.sets;
        self.lookup
            .insert_unique(hash, id, |&id| sets[id as usize].hash);
        id
    }

    /// Removes the membership `link` (of an object whose own links are held elsewhere),
    /// fixing the link of the member that moves into its place, and drops the value if no
    /// member is left.
    pub(super) fn unlink(&mut self, entries: &mut [Option<Entry<K>>], link: Link) {
        let set = &mut self.sets[link.value as usize];
        let pos = link.pos as usize;
        set.members.swap_remove(pos);
        if let Some(moved) = set.members.get(pos)
            && let Some(entry) = entries[moved.slot as usize].as_mut()
            && let Some(l) = entry
                .links
                .iter_mut()
                .find(|l| l.index == link.index && l.value == link.value)
        {
            l.pos = link.pos;
        }
        if set.members.is_empty() {
            let hash = set.hash;
            // Release the value's memory; the id is reused by the next new value.
            set.value = Box::default();
            set.members = Vec::new();
            if let Ok(found) = self.lookup.find_entry(hash, |&id| id == link.value) {
                found.remove();
            }
            self.free.push(link.value);
        } else if set.members.capacity() > 16 && set.members.len() < set.members.capacity() / 4 {
            set.members.shrink_to(set.members.len() * 2);
        }
    }
}
