//! Unit tests of [`ThreadSafeStore`], one per rule of its docs, with a check of every
//! internal invariant of the layout ([`check_invariants`]) after each change. The shared
//! helpers are here; the tests are grouped by topic in the sibling files.

mod basics;
mod concurrency;
mod indexes;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::mem;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::index::{Link, Member, ValueSet};
use super::slab::Entry;
use super::*;
use crate::store::{NAMESPACE_INDEX, index_fn};

fn pod(ns: Option<&str>, name: &str, node: Option<&str>) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.to_owned());
    pod.metadata.namespace = ns.map(str::to_owned);
    pod.spec = Some(PodSpec {
        node_name: node.map(str::to_owned),
        ..PodSpec::default()
    });
    Arc::new(pod)
}

fn labelled(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.to_owned());
    pod.metadata.namespace = Some(ns.to_owned());
    pod.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    Arc::new(pod)
}

fn node_of(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

fn label_values(pod: &Pod) -> Vec<String> {
    pod.metadata
        .labels
        .iter()
        .flatten()
        .map(|(_, v)| v.clone())
        .collect()
}

type PodIndexFn = fn(&Pod) -> Vec<String>;

fn indexers(list: &[(&str, PodIndexFn)]) -> Indexers<Pod> {
    list.iter()
        .map(|(name, f)| ((*name).to_owned(), index_fn(*f)))
        .collect()
}

fn node_store() -> ThreadSafeStore<Pod> {
    ThreadSafeStore::new()
        .with_indexers(indexers(&[("node", node_of)]))
        .expect("fresh name")
}

fn names(objs: &[Arc<Pod>]) -> Vec<String> {
    let mut names: Vec<String> = objs
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Some(ns), name)
}

/// Checks every internal invariant of the layout.
fn check_invariants<K>(store: &ThreadSafeStore<K>) {
    let inner = store.inner.read();
    let live = inner.entries.iter().flatten().count();
    assert_eq!(inner.len, live, "len counts live slots");
    assert_eq!(inner.by_key.len(), live, "one table entry per object");
    for &slot in inner.by_key.iter() {
        let e = inner.entries[slot as usize]
            .as_ref()
            .expect("table points at a live slot");
        assert_eq!(e.hash, store.hash_key(&e.key));
        assert_eq!(inner.slot_of(&e.key, e.hash), Some(slot));
    }
    let free: BTreeSet<u32> = inner.free.iter().copied().collect();
    assert_eq!(free.len(), inner.free.len(), "free list has no duplicates");
    for (slot, e) in inner.entries.iter().enumerate() {
        assert_eq!(
            e.is_none(),
            free.contains(&slot_id(slot)),
            "free list = empty slots"
        );
        let Some(e) = e else { continue };
        let mut seen = BTreeSet::new();
        for l in &e.links {
            assert!(
                seen.insert((l.index, l.value)),
                "one link per (index, value)"
            );
            let m = &inner.indexes[l.index as usize].sets[l.value as usize].members[l.pos as usize];
            assert_eq!(m.slot, slot_id(slot));
            assert!(
                Arc::ptr_eq(&m.obj, &e.obj),
                "index points at the stored Arc"
            );
        }
        // The links are exactly the object's values.
        for (id, index) in inner.indexes.iter().enumerate() {
            let mut linked: Vec<&str> = e
                .links
                .iter()
                .filter(|l| l.index as usize == id)
                .map(|l| &*index.sets[l.value as usize].value)
                .collect();
            linked.sort_unstable();
            let expected: Vec<String> = match &index.func {
                Some(f) => normalized(f(&e.obj)),
                None => vec![e.key.namespace().unwrap_or("").to_owned()],
            };
            assert_eq!(linked, expected, "links of index {}", index.name);
        }
    }
    for (id, index) in inner.indexes.iter().enumerate() {
        let free: BTreeSet<u32> = index.free.iter().copied().collect();
        assert_eq!(free.len(), index.free.len());
        assert_eq!(index.lookup.len() + free.len(), index.sets.len());
        for (vid, set) in index.sets.iter().enumerate() {
            let vid = u32::try_from(vid).unwrap();
            if free.contains(&vid) {
                assert!(
                    set.members.is_empty() && set.value.is_empty(),
                    "freed set is empty"
                );
                continue;
            }
            assert!(!set.members.is_empty(), "a live value has members");
            assert_eq!(set.hash, store.hasher.hash_one(&*set.value));
            assert_eq!(index.find(&set.value, set.hash), Some(vid));
            for (pos, m) in set.members.iter().enumerate() {
                let e = inner.entries[m.slot as usize]
                    .as_ref()
                    .expect("member is live");
                let link = Link {
                    index: index_id_u32(id),
                    value: vid,
                    pos: slot_id(pos),
                };
                assert!(e.links.contains(&link), "member has its link");
            }
        }
    }
}

#[derive(Debug)]
struct Item {
    ns: &'static str,
    name: &'static str,
    tags: Vec<&'static str>,
}

fn item(ns: &'static str, name: &'static str, tags: &[&'static str]) -> Arc<Item> {
    Arc::new(Item {
        ns,
        name,
        tags: tags.to_vec(),
    })
}

fn item_key(item: &Item) -> Result<ObjectKey, KeyError> {
    if item.name.is_empty() {
        return Err(KeyError::MissingName { kind: "Item" });
    }
    Ok(ObjectKey::new(Some(item.ns), item.name))
}

fn item_store() -> ThreadSafeStore<Item> {
    ThreadSafeStore::with_key_fn(item_key)
        .with_indexers(
            [(
                "tag".to_owned(),
                index_fn(|i: &Item| i.tags.iter().map(|t| (*t).to_owned()).collect()),
            )]
            .into(),
        )
        .expect("fresh name")
}
