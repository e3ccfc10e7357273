//! Cloning many `Arc`s or keys at once, with their reference counts brought into cache a
//! small group at a time first: what makes the store's list and index reads fast.

use std::sync::Arc;

use super::index::Member;
use crate::key::ObjectKey;

/// How many objects the read paths bring into cache at a time (see [`clone_objects`]).
pub(super) const GROUP: usize = 8;

/// Clones the `Arc`s of `members` into a new `Vec`.
///
/// Each clone is an atomic increment of a reference count that lives beside its object,
/// scattered over memory, so it is usually a cache miss; and on x86 an atomic increment waits
/// for the previous one, so the misses would be paid one after the other. Reading the counts
/// of a small group first (plain loads, which the CPU overlaps) brings the whole group into
/// cache, and the increments that follow hit it.
pub(super) fn clone_objects<K>(members: &[Member<K>]) -> Vec<Arc<K>> {
    let mut out = Vec::with_capacity(members.len());
    for group in members.chunks(GROUP) {
        touch_counts(group.iter().map(|m| &m.obj));
        out.extend(group.iter().map(|m| m.obj.clone()));
    }
    out
}

/// Reads the reference counts of `objs`, so that they are in cache for the clones that follow.
pub(super) fn touch_counts<'a, K: 'a>(objs: impl Iterator<Item = &'a Arc<K>>) {
    std::hint::black_box(objs.fold(0usize, |acc, obj| acc.wrapping_add(Arc::strong_count(obj))));
}

/// Reads the first byte of each string of `keys` (beside their reference counts), so that
/// they are in cache for the clones that follow.
pub(super) fn touch_keys<'a>(keys: impl Iterator<Item = &'a ObjectKey>) {
    let first = |s: &str| usize::from(s.as_bytes().first().copied().unwrap_or(0));
    std::hint::black_box(keys.fold(0usize, |acc, key| {
        acc.wrapping_add(first(key.name()))
            .wrapping_add(key.namespace().map_or(0, first))
    }));
}
