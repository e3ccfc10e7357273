//! [`ThreadSafeStore`]: the default [`Store`] and [`Indexer`], client-go's
//! `threadSafeMap` + `storeIndex` laid out for fast index reads.

use std::fmt;
use std::hash::BuildHasher;
use std::mem;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use kube_core::Resource;
use parking_lot::{RwLock, RwLockUpgradableReadGuard};
use smallvec::SmallVec;

use super::{IndexFn, Indexer, Indexers, NAMESPACE_INDEX, ReplaceDiff, Store, StoreOp};
use crate::error::{IndexError, KeyError, StoreError};
use crate::key::{KeyFn, ObjectKey, resource_key};

/// The default cache: a thread-safe map from [`ObjectKey`] to `Arc<K>` with named secondary
/// indexes, the Rust counterpart of client-go's `cache.NewIndexer` (`threadSafeMap`).
///
/// # Guarantees
/// - **No copies.** Objects are stored as the `Arc<K>` given to [`add`](Store::add),
///   [`replace`](Store::replace) or [`apply`](Store::apply); every read returns clones of
///   that same `Arc` (`Arc::ptr_eq` holds), never a copy of the object.
/// - **Atomic operations.** Every method takes one lock for its whole effect, so a reader sees
///   all or nothing of a write, including a whole [`replace`](Store::replace) or
///   [`apply`](Store::apply) batch.
/// - **Readers do not block one another.** Reads take a shared lock
///   ([`parking_lot::RwLock`]). Writers exclude readers only while they change the
///   structure: index functions of an [`add`](Store::add), [`replace`](Store::replace),
///   [`apply`](Store::apply) or [`add_indexers`](Indexer::add_indexers) run under an
///   upgradable lock that readers share, before any change is made. Index functions of
///   [`index`](Indexer::index) run with no lock held.
/// - **Failed writes change nothing.** A write that fails (an object without a key, an index
///   name that is already taken) leaves the store as it was. An index function that panics
///   also leaves the store as it was (the panic propagates to the caller), because every index
///   value of a write is computed before the first change.
/// - **Indexes are always current.** Every write updates every index in the same locked step.
///   Each index function is called once per written object; an update re-files the object
///   in an index only if that index's values for it changed, and otherwise just points the
///   index at the new `Arc`.
/// - **No leaks for short-lived values.** An index value with no object left is removed
///   from the index (and from [`list_index_values`](Indexer::list_index_values)); storage of
///   removed objects and values is reused by later inserts.
/// - **The namespace index is built in.** [`NAMESPACE_INDEX`] exists from construction and
///   files every object under its key's namespace (cluster-scoped objects under `""`). It is
///   computed from the key, so it costs no user function call.
///
/// It does not guarantee any order: [`list`](Store::list), [`list_keys`](Store::list_keys),
/// [`by_index`](Indexer::by_index) and friends return their results in an unspecified order
/// that may change after any write.
///
/// # Cost
/// - [`get`](Store::get), [`add`](Store::add), [`delete`](Store::delete): one hash of the key,
///   plus one hash per index value that changes.
/// - [`by_index`](Indexer::by_index): one hash of the value, then a walk over a contiguous
///   array that holds the objects' `Arc`s, one `Arc` clone per object; nothing is hashed or
///   looked up per object. [`index_keys`](Indexer::index_keys) is the same walk plus a key
///   clone per object; [`list_index_values`](Indexer::list_index_values) walks the index's
///   values. With 100,000 pods in 100 namespaces on 1,000 nodes, a look-up by node (100
///   pods) takes about 2 µs and a look-up by namespace (1,000 pods) about 20 µs on one core
///   of a 2-core Xeon VM (about 500,000 and 50,000 look-ups per second).
/// - Memory beyond the objects themselves, per object: an 80-byte slot (key, key hash, the
///   `Arc`, and room for two index links inline); 5 to 10 bytes in the key table; the two
///   heap strings of its [`ObjectKey`]; and 16 bytes for each index value it is filed under,
///   namespace included (a third and further links move the object's links to a heap array
///   of 12 bytes each). Each distinct index value costs its string plus about 60 bytes. Add
///   the slack of `Vec` growth. Measured with the allocator: 204 bytes per pod for 100,000
///   pods indexed by namespace and node, key strings and slack included.
///
/// # Caveats
/// - Index functions must not call back into the same store (that deadlocks), and should
///   be quick: writes wait for them.
/// - Storage freed by deletes is kept for reuse rather than returned to the allocator.
/// - The store holds at most `u32::MAX` objects, and each index at most `u32::MAX`
///   distinct values; going beyond panics.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use informer_core::store::{index_fn, Indexer, Store, ThreadSafeStore, NAMESPACE_INDEX};
/// use k8s_openapi::api::core::v1::{Pod, PodSpec};
///
/// let store = ThreadSafeStore::<Pod>::new();
/// store.add_indexers(
///     [(
///         "node".to_owned(),
///         index_fn(|pod: &Pod| pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()),
///     )]
///     .into(),
/// )?;
///
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.namespace = Some("shop".into());
/// pod.spec = Some(PodSpec { node_name: Some("node-1".into()), ..PodSpec::default() });
/// let pod = Arc::new(pod);
/// store.add(pod.clone())?;
///
/// let on_node = store.by_index("node", "node-1")?;
/// assert!(Arc::ptr_eq(&on_node[0], &pod)); // the same allocation, not a copy
/// assert_eq!(store.index_keys(NAMESPACE_INDEX, "shop")?[0].to_string(), "shop/web-0");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ThreadSafeStore<K> {
    key_fn: KeyFn<K>,
    /// Whether `key_fn` is `resource_key` (set by [`ThreadSafeStore::new`]).
    resource_keyed: bool,
    hasher: RandomState,
    inner: RwLock<Inner<K>>,
}

impl<K: Resource> ThreadSafeStore<K> {
    /// An empty store of Kubernetes objects, keyed by [`resource_key`] (`namespace/name`),
    /// with only the built-in [`NAMESPACE_INDEX`].
    ///
    /// ```
    /// use informer_core::store::{Indexer, Store, ThreadSafeStore, NAMESPACE_INDEX};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let store = ThreadSafeStore::<ConfigMap>::new();
    /// assert!(store.is_empty());
    /// assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
    /// ```
    pub fn new() -> Self {
        Self {
            resource_keyed: true,
            ..Self::with_key_fn(resource_key::<K>)
        }
    }
}

impl<K: Resource> Default for ThreadSafeStore<K> {
    /// Same as [`ThreadSafeStore::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl<K> ThreadSafeStore<K> {
    /// An empty store of any object type, keyed by `key_fn`, with only the built-in
    /// [`NAMESPACE_INDEX`] (which files each object under its key's namespace).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{KeyError, ObjectKey};
    /// use informer_core::store::{Store, ThreadSafeStore};
    ///
    /// struct Job { id: String }
    /// fn job_key(job: &Job) -> Result<ObjectKey, KeyError> {
    ///     if job.id.is_empty() {
    ///         return Err(KeyError::MissingName { kind: "Job" });
    ///     }
    ///     Ok(ObjectKey::cluster(&job.id))
    /// }
    ///
    /// let store = ThreadSafeStore::with_key_fn(job_key);
    /// store.add(Arc::new(Job { id: "j1".into() }))?;
    /// assert!(store.add(Arc::new(Job { id: String::new() })).is_err());
    /// assert_eq!(store.get(&ObjectKey::cluster("j1")).map(|j| j.id.clone()), Some("j1".into()));
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>) -> Self {
        Self {
            key_fn,
            resource_keyed: false,
            hasher: RandomState::default(),
            inner: RwLock::new(Inner::new()),
        }
    }

    /// Adds `indexers` to a store being built, as [`add_indexers`](Indexer::add_indexers).
    ///
    /// # Errors
    /// [`IndexError::Conflict`] if a name is already registered (for a new store, only
    /// [`NAMESPACE_INDEX`] is).
    ///
    /// ```
    /// use informer_core::store::{index_fn, Indexer, ThreadSafeStore};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let store = ThreadSafeStore::<Pod>::new().with_indexers(
    ///     [("phase".to_owned(), index_fn(|p: &Pod| {
    ///         p.status.as_ref().and_then(|s| s.phase.clone()).into_iter().collect()
    ///     }))]
    ///     .into(),
    /// )?;
    /// assert_eq!(store.index_names(), ["namespace", "phase"]);
    /// # Ok::<(), informer_core::IndexError>(())
    /// ```
    pub fn with_indexers(self, indexers: Indexers<K>) -> Result<Self, IndexError> {
        self.add_indexers_inner(indexers)?;
        Ok(self)
    }

    fn hash_key(&self, key: &ObjectKey) -> u64 {
        self.hasher.hash_one(key)
    }

    fn prepare_key(&self, obj: &K) -> Result<(ObjectKey, u64), KeyError> {
        let key = (self.key_fn)(obj)?;
        let hash = self.hash_key(&key);
        Ok((key, hash))
    }

    /// Inserts or replaces `obj` under `key` (whose hash is `hash`).
    fn upsert_keyed(&self, key: ObjectKey, hash: u64, obj: Arc<K>) -> Option<Arc<K>> {
        let guard = self.inner.upgradable_read();
        let values = guard.values_for(&obj);
        let mut inner = RwLockUpgradableReadGuard::upgrade(guard);
        inner.upsert(
            &self.hasher,
            Prepared {
                key,
                hash,
                obj,
                values,
            },
        )
    }

    fn add_indexers_inner(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        let guard = self.inner.upgradable_read();
        if let Some(taken) = indexers
            .keys()
            .filter(|name| guard.index_id(name).is_some())
            .min()
        {
            return Err(IndexError::Conflict(taken.clone()));
        }
        let mut added: Vec<(String, IndexFn<K>)> = indexers.into_iter().collect();
        added.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Every user function runs before anything changes.
        let filed: Vec<Vec<(u32, Vec<String>)>> = added
            .iter()
            .map(|(_, func)| {
                guard
                    .entries
                    .iter()
                    .enumerate()
                    .filter_map(|(slot, e)| {
                        e.as_ref()
                            .map(|e| (slot_id(slot), normalized(func(&e.obj))))
                    })
                    .collect()
            })
            .collect();
        let mut inner = RwLockUpgradableReadGuard::upgrade(guard);
        let Inner {
            entries, indexes, ..
        } = &mut *inner;
        for ((name, func), filed) in added.into_iter().zip(filed) {
            let id = index_id_u32(indexes.len());
            let mut index = Index::new(name.into_boxed_str(), Some(func));
            for (slot, values) in filed {
                if let Some(entry) = entries[slot as usize].as_mut() {
                    for value in &values {
                        index.link(id, &self.hasher, &mut entry.links, slot, &entry.obj, value);
                    }
                }
            }
            indexes.push(index);
        }
        Ok(())
    }

    /// The objects of one index value, while `inner` is locked.
    fn objects_of(&self, inner: &Inner<K>, index: usize, value: &str) -> Vec<Arc<K>> {
        match inner.indexes[index].set(value, self.hasher.hash_one(value)) {
            Some(set) => clone_objects(&set.members),
            None => Vec::new(),
        }
    }

    #[cfg(test)]
    fn read_guard(&self) -> parking_lot::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read()
    }
}

impl<K> fmt::Debug for ThreadSafeStore<K> {
    /// Shows the size, the index names and the resource version, not the objects.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        let indexes: Vec<&str> = inner.indexes.iter().map(|ix| &*ix.name).collect();
        f.debug_struct("ThreadSafeStore")
            .field("len", &inner.len)
            .field("indexes", &indexes)
            .field("resource_version", &inner.resource_version)
            .finish_non_exhaustive()
    }
}

impl<K: Send + Sync> Store<K> for ThreadSafeStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let (key, hash) = self.prepare_key(&obj)?;
        Ok(self.upsert_keyed(key, hash, obj))
    }

    /// As [`add`](Store::add), with the key given: `key` must be `key_of(&obj)` (checked in
    /// debug builds only).
    fn update_with_key(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        debug_assert_eq!(
            (self.key_fn)(&obj).ok().as_ref(),
            Some(&key),
            "update_with_key was given another key than key_of"
        );
        let hash = self.hash_key(&key);
        Ok(self.upsert_keyed(key, hash, obj))
    }

    /// `true` for a store made by [`ThreadSafeStore::new`].
    fn keys_by_resource_key(&self) -> bool {
        self.resource_keyed
    }

    fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        (self.key_fn)(obj)
    }

    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let hash = self.hash_key(key);
        let mut inner = self.inner.write();
        let slot = inner.slot_of(key, hash)?;
        inner.remove_slot(slot).map(|e| e.obj)
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let hash = self.hash_key(key);
        let inner = self.inner.read();
        let slot = inner.slot_of(key, hash)?;
        inner.entries[slot as usize].as_ref().map(|e| e.obj.clone())
    }

    fn list(&self) -> Vec<Arc<K>> {
        let inner = self.inner.read();
        let mut out = Vec::with_capacity(inner.len);
        for group in inner.entries.chunks(GROUP) {
            touch_counts(group.iter().flatten().map(|e| &e.obj));
            out.extend(group.iter().flatten().map(|e| e.obj.clone()));
        }
        out
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        let inner = self.inner.read();
        let mut out = Vec::with_capacity(inner.len);
        for group in inner.entries.chunks(GROUP) {
            touch_keys(group.iter().flatten().map(|e| &e.key));
            out.extend(group.iter().flatten().map(|e| e.key.clone()));
        }
        out
    }

    fn len(&self) -> usize {
        self.inner.read().len
    }

    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError> {
        let keys = objects
            .iter()
            .map(|obj| self.prepare_key(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let guard = self.inner.upgradable_read();
        let prepared: Vec<Prepared<K>> = objects
            .into_iter()
            .zip(keys)
            .map(|(obj, (key, hash))| Prepared {
                values: guard.values_for(&obj),
                key,
                hash,
                obj,
            })
            .collect();
        let mut inner = RwLockUpgradableReadGuard::upgrade(guard);
        Ok(inner.replace(&self.hasher, prepared, resource_version))
    }

    fn resource_version(&self) -> Option<String> {
        self.inner.read().resource_version.clone()
    }

    fn set_resource_version(&self, resource_version: &str) {
        self.inner.write().resource_version = Some(resource_version.to_owned());
    }

    fn apply(&self, batch: Vec<StoreOp<K>>) -> Result<Vec<Option<Arc<K>>>, StoreError> {
        enum Keyed<K> {
            Upsert(ObjectKey, u64, Arc<K>),
            Delete(ObjectKey, u64),
        }
        let keyed = batch
            .into_iter()
            .map(|op| match op {
                StoreOp::Upsert(obj) => {
                    let (key, hash) = self.prepare_key(&obj)?;
                    Ok(Keyed::Upsert(key, hash, obj))
                }
                StoreOp::Delete(key) => {
                    let hash = self.hash_key(&key);
                    Ok(Keyed::Delete(key, hash))
                }
            })
            .collect::<Result<Vec<_>, KeyError>>()?;
        let guard = self.inner.upgradable_read();
        let prepared: Vec<Result<Prepared<K>, (ObjectKey, u64)>> = keyed
            .into_iter()
            .map(|op| match op {
                Keyed::Upsert(key, hash, obj) => Ok(Prepared {
                    values: guard.values_for(&obj),
                    key,
                    hash,
                    obj,
                }),
                Keyed::Delete(key, hash) => Err((key, hash)),
            })
            .collect();
        let mut inner = RwLockUpgradableReadGuard::upgrade(guard);
        Ok(prepared
            .into_iter()
            .map(|op| match op {
                Ok(p) => inner.upsert(&self.hasher, p),
                Err((key, hash)) => {
                    let slot = inner.slot_of(&key, hash)?;
                    inner.remove_slot(slot).map(|e| e.obj)
                }
            })
            .collect())
    }
}

impl<K: Send + Sync> Indexer<K> for ThreadSafeStore<K> {
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        self.add_indexers_inner(indexers)
    }

    /// [`NAMESPACE_INDEX`] first, then the other indexes in the order they were added (the
    /// names given to one [`add_indexers`](Indexer::add_indexers) call in sorted order).
    fn index_names(&self) -> Vec<String> {
        let inner = self.inner.read();
        inner.indexes.iter().map(|ix| ix.name.to_string()).collect()
    }

    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let inner = self.inner.read();
        let id = inner.index_id_or_err(index)?;
        Ok(self.objects_of(&inner, id, value))
    }

    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let inner = self.inner.read();
        let id = inner.index_id_or_err(index)?;
        let Some(set) = inner.indexes[id].set(value, self.hasher.hash_one(value)) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(set.members.len());
        for group in set.members.chunks(GROUP) {
            let keys = || {
                group
                    .iter()
                    .filter_map(|m| inner.entries[m.slot as usize].as_ref())
                    .map(|e| &e.key)
            };
            touch_keys(keys());
            out.extend(keys().cloned());
        }
        Ok(out)
    }

    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        let inner = self.inner.read();
        let id = inner.index_id_or_err(index)?;
        Ok(inner.indexes[id]
            .sets
            .iter()
            .filter(|set| !set.members.is_empty())
            .map(|set| set.value.to_string())
            .collect())
    }

    /// The objects that share at least one value of the index `index` with `obj`, each
    /// once. `obj` itself need not be stored. The index function runs with no lock held. For
    /// [`NAMESPACE_INDEX`], an `obj` without a key has no namespace value, so the result is
    /// empty.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    fn index(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        // Run the user's function with no lock held. Indexes are never removed, so `id`
        // stays valid.
        let (id, func) = {
            let inner = self.inner.read();
            let id = inner.index_id_or_err(index)?;
            (id, inner.indexes[id].func.clone())
        };
        let values = match func {
            Some(func) => normalized(func(obj)),
            None => match (self.key_fn)(obj) {
                Ok(key) => vec![key.namespace().unwrap_or("").to_owned()],
                Err(_) => Vec::new(),
            },
        };
        let inner = self.inner.read();
        match values.as_slice() {
            [] => Ok(Vec::new()),
            [value] => Ok(self.objects_of(&inner, id, value)),
            values => {
                let index = &inner.indexes[id];
                let mut found: Vec<&Member<K>> = values
                    .iter()
                    .filter_map(|v| index.set(v, self.hasher.hash_one(v.as_str())))
                    .flat_map(|set| set.members.iter())
                    .collect();
                found.sort_unstable_by_key(|m| m.slot);
                found.dedup_by_key(|m| m.slot);
                Ok(found.into_iter().map(|m| m.obj.clone()).collect())
            }
        }
    }
}

// ---------- internals ----------

/// Everything behind the lock.
///
/// Layout: objects live in a slab (`entries`) addressed by `u32` slot ids, with a free list.
/// `by_key` maps a key to its slot (the table stores only slot ids; keys are compared in the
/// slab). Each index maps a value to a value id (`lookup`), and each value id to the set of
/// objects filed under it (`sets[id].members`: a `Vec` of `(Arc<K>, slot)`, so a read walks
/// it without touching the slab). Each object records its memberships (`links`), each with
/// its position in the member `Vec`, so removal is a `swap_remove` and a fix-up of the one
/// member that moved.
struct Inner<K> {
    entries: Vec<Option<Entry<K>>>,
    free: Vec<u32>,
    len: usize,
    by_key: HashTable<u32>,
    /// `indexes[0]` is [`NAMESPACE_INDEX`]; user indexes follow in registration order.
    indexes: Vec<Index<K>>,
    resource_version: Option<String>,
}

struct Entry<K> {
    key: ObjectKey,
    /// The hash of `key`, so that table growth and deletes do not rehash keys.
    hash: u64,
    obj: Arc<K>,
    /// Where this object is filed: one link per (index, value).
    links: SmallVec<[Link; 2]>,
}

/// One membership of an object: it is `sets[value].members[pos]` of `indexes[index]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link {
    index: u32,
    value: u32,
    pos: u32,
}

struct Index<K> {
    name: Box<str>,
    /// `None` for the namespace index, which is computed from the key.
    func: Option<IndexFn<K>>,
    /// Value ids, hashed by `sets[id].hash`.
    lookup: HashTable<u32>,
    /// Value sets by id. A set in the free list has no members; every other set has at least
    /// one.
    sets: Vec<ValueSet<K>>,
    free: Vec<u32>,
}

struct ValueSet<K> {
    value: Box<str>,
    hash: u64,
    members: Vec<Member<K>>,
}

struct Member<K> {
    obj: Arc<K>,
    slot: u32,
}

/// An object ready to be written: its key, and its values in each user index (in the order of
/// `Inner::indexes[1..]`), sorted and deduplicated.
struct Prepared<K> {
    key: ObjectKey,
    hash: u64,
    obj: Arc<K>,
    values: Values,
}

type Values = SmallVec<[Vec<String>; 2]>;

#[derive(Clone, Copy)]
enum Mark {
    /// In the store before the replace and not (yet) in the new list.
    Stale,
    /// Added by the replace, at this position of `ReplaceDiff::added`.
    Added(usize),
    /// Updated by the replace, at this position of `ReplaceDiff::updated`.
    Updated(usize),
}

fn slot_id(n: usize) -> u32 {
    u32::try_from(n).expect("ThreadSafeStore holds at most u32::MAX objects")
}

fn index_id_u32(n: usize) -> u32 {
    u32::try_from(n).expect("too many indexes")
}

/// Sorts and deduplicates an index function's output, so that an object is filed once per
/// value and old and new values compare cheaply.
fn normalized(mut values: Vec<String>) -> Vec<String> {
    if values.len() > 1 {
        values.sort_unstable();
        values.dedup();
    }
    values
}

/// How many objects the read paths bring into cache at a time (see [`clone_objects`]).
const GROUP: usize = 8;

/// Clones the `Arc`s of `members` into a new `Vec`.
///
/// Each clone is an atomic increment of a reference count that lives beside its object,
/// scattered over memory, so it is usually a cache miss; and on x86 an atomic increment waits
/// for the previous one, so the misses would be paid one after the other. Reading the counts
/// of a small group first (plain loads, which the CPU overlaps) brings the whole group into
/// cache, and the increments that follow hit it.
fn clone_objects<K>(members: &[Member<K>]) -> Vec<Arc<K>> {
    let mut out = Vec::with_capacity(members.len());
    for group in members.chunks(GROUP) {
        touch_counts(group.iter().map(|m| &m.obj));
        out.extend(group.iter().map(|m| m.obj.clone()));
    }
    out
}

/// Reads the reference counts of `objs`, so that they are in cache for the clones that follow.
fn touch_counts<'a, K: 'a>(objs: impl Iterator<Item = &'a Arc<K>>) {
    std::hint::black_box(objs.fold(0usize, |acc, obj| acc.wrapping_add(Arc::strong_count(obj))));
}

/// Reads the first byte of each string of `keys` (beside their reference counts), so that
/// they are in cache for the clones that follow.
fn touch_keys<'a>(keys: impl Iterator<Item = &'a ObjectKey>) {
    let first = |s: &str| usize::from(s.as_bytes().first().copied().unwrap_or(0));
    std::hint::black_box(keys.fold(0usize, |acc, key| {
        acc.wrapping_add(first(key.name()))
            .wrapping_add(key.namespace().map_or(0, first))
    }));
}

impl<K> Index<K> {
    fn new(name: Box<str>, func: Option<IndexFn<K>>) -> Self {
        Self {
            name,
            func,
            lookup: HashTable::new(),
            sets: Vec::new(),
            free: Vec::new(),
        }
    }

    fn find(&self, value: &str, hash: u64) -> Option<u32> {
        let sets = &self.sets;
        self.lookup
            .find(hash, |&id| {
                let set = &sets[id as usize];
                set.hash == hash && &*set.value == value
            })
            .copied()
    }

    fn set(&self, value: &str, hash: u64) -> Option<&ValueSet<K>> {
        self.find(value, hash).map(|id| &self.sets[id as usize])
    }

    /// Files `obj` (in `slot`) under `value`, recording the membership in `links`.
    fn link(
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
    fn unlink(&mut self, entries: &mut [Option<Entry<K>>], link: Link) {
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

impl<K> Inner<K> {
    fn new() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
            by_key: HashTable::new(),
            indexes: vec![Index::new(NAMESPACE_INDEX.into(), None)],
            resource_version: None,
        }
    }

    fn index_id(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|ix| &*ix.name == name)
    }

    fn index_id_or_err(&self, name: &str) -> Result<usize, IndexError> {
        self.index_id(name)
            .ok_or_else(|| IndexError::UnknownIndex(name.to_owned()))
    }

    fn slot_of(&self, key: &ObjectKey, hash: u64) -> Option<u32> {
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
    fn values_for(&self, obj: &K) -> Values {
        self.indexes[1..]
            .iter()
            .map(|ix| match &ix.func {
                Some(func) => normalized(func(obj)),
                None => Vec::new(),
            })
            .collect()
    }

    /// Inserts or updates; returns the object that was replaced.
    fn upsert(&mut self, hasher: &RandomState, p: Prepared<K>) -> Option<Arc<K>> {
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
    fn remove_slot(&mut self, slot: u32) -> Option<Entry<K>> {
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

    fn replace(
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use k8s_openapi::api::core::v1::{Pod, PodSpec};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::store::index_fn;

    // ---------- helpers ----------

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
        let inner = store.read_guard();
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
                let m =
                    &inner.indexes[l.index as usize].sets[l.value as usize].members[l.pos as usize];
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

    // ---------- basic store rules ----------

    #[test]
    fn add_then_get_returns_the_stored_object() {
        let store = node_store();
        let p = pod(Some("ns"), "a", Some("n1"));
        assert!(store.add(p.clone()).unwrap().is_none());
        assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &p));
        assert!(store.get(&key("ns", "b")).is_none());
        assert!(store.get(&ObjectKey::cluster("a")).is_none());
        assert_eq!(store.len(), 1);
        assert!(!store.is_empty());
        check_invariants(&store);
    }

    #[test]
    fn add_returns_the_replaced_object_and_update_is_add() {
        let store = node_store();
        let v1 = pod(Some("ns"), "a", Some("n1"));
        let v2 = pod(Some("ns"), "a", Some("n1"));
        let v3 = pod(Some("ns"), "a", Some("n1"));
        store.add(v1.clone()).unwrap();
        assert!(Arc::ptr_eq(&store.add(v2.clone()).unwrap().unwrap(), &v1));
        assert!(Arc::ptr_eq(
            &store.update(v3.clone()).unwrap().unwrap(),
            &v2
        ));
        assert_eq!(store.len(), 1);
        assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &v3));
        check_invariants(&store);
    }

    #[test]
    fn update_of_an_absent_key_inserts_it() {
        let store = node_store();
        assert!(store.update(pod(Some("ns"), "a", None)).unwrap().is_none());
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn delete_returns_the_removed_object_and_unindexes_it() {
        let store = node_store();
        let a = pod(Some("ns"), "a", Some("n1"));
        store.add(a.clone()).unwrap();
        store.add(pod(Some("ns"), "b", Some("n1"))).unwrap();
        assert!(Arc::ptr_eq(&store.delete(&key("ns", "a")).unwrap(), &a));
        assert!(store.get(&key("ns", "a")).is_none());
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
        assert_eq!(
            names(&store.by_index(NAMESPACE_INDEX, "ns").unwrap()),
            ["b"]
        );
        assert_eq!(store.len(), 1);
        check_invariants(&store);
    }

    #[test]
    fn delete_of_an_absent_key_returns_none_and_changes_nothing() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        assert!(store.delete(&key("ns", "zz")).is_none());
        assert!(store.delete(&key("other", "a")).is_none());
        assert_eq!(store.len(), 1);
        check_invariants(&store);
    }

    #[test]
    fn object_without_name_is_refused() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let mut nameless = Pod::default();
        nameless.metadata.namespace = Some("ns".into());
        let nameless = Arc::new(nameless);
        for result in [store.add(nameless.clone()), store.update(nameless.clone())] {
            assert!(matches!(
                result,
                Err(StoreError::Key(KeyError::MissingName { kind: "Pod" }))
            ));
        }
        let mut empty_name = (*nameless).clone();
        empty_name.metadata.name = Some(String::new());
        assert!(store.add(Arc::new(empty_name)).is_err());
        assert_eq!(store.len(), 1);
        assert_eq!(store.list_keys(), [key("ns", "a")]);
        check_invariants(&store);
    }

    #[test]
    fn list_and_list_keys_hold_every_object_once() {
        let store = node_store();
        for i in 0..50 {
            store.add(pod(Some("ns"), &format!("p{i}"), None)).unwrap();
        }
        for i in 0..50 {
            store.add(pod(Some("ns"), &format!("p{i}"), None)).unwrap();
        }
        for i in (0..50).step_by(3) {
            store.delete(&key("ns", &format!("p{i}")));
        }
        let expected: Vec<String> = sorted(
            (0..50)
                .filter(|i| i % 3 != 0)
                .map(|i| format!("p{i}"))
                .collect(),
        );
        assert_eq!(names(&store.list()), expected);
        let keys: Vec<String> = sorted(
            store
                .list_keys()
                .iter()
                .map(|k| k.name().to_owned())
                .collect(),
        );
        assert_eq!(keys, expected);
        assert_eq!(store.len(), expected.len());
        check_invariants(&store);
    }

    #[test]
    fn reads_return_the_same_arc_no_copy() {
        let store = node_store();
        let p = pod(Some("ns"), "a", Some("n1"));
        store.add(p.clone()).unwrap();
        assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &p));
        assert!(Arc::ptr_eq(&store.list()[0], &p));
        assert!(Arc::ptr_eq(&store.by_index("node", "n1").unwrap()[0], &p));
        assert!(Arc::ptr_eq(
            &store.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
            &p
        ));
        assert!(Arc::ptr_eq(&store.index("node", &p).unwrap()[0], &p));
        let p2 = pod(Some("ns"), "a", Some("n1"));
        let diff = store.replace(vec![p2.clone()], "1").unwrap();
        assert!(Arc::ptr_eq(&diff.updated[0].0, &p));
        assert!(Arc::ptr_eq(&diff.updated[0].1, &p2));
        drop(diff);
        let prev = store.apply(vec![StoreOp::Delete(key("ns", "a"))]).unwrap();
        assert!(Arc::ptr_eq(prev[0].as_ref().unwrap(), &p2));
        // Nothing else holds the object: the store kept no copy or stray clone.
        assert_eq!(Arc::strong_count(&p2), 2); // `p2` and `prev`
    }

    #[test]
    fn per_object_overhead_is_as_documented() {
        // The type's doc comment states these sizes.
        assert!(mem::size_of::<Option<Entry<Pod>>>() <= 80);
        assert!(mem::size_of::<Member<Pod>>() <= 16);
        assert!(mem::size_of::<ValueSet<Pod>>() <= 48);
    }

    #[test]
    fn key_of_uses_the_key_fn() {
        let store = ThreadSafeStore::with_key_fn(item_key);
        assert_eq!(store.key_of(&item("ns", "x", &[])).unwrap(), key("ns", "x"));
        assert!(store.key_of(&item("ns", "", &[])).is_err());
    }

    #[test]
    fn default_is_new() {
        let store = ThreadSafeStore::<Pod>::default();
        assert!(store.is_empty());
        assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
        assert_eq!(store.resource_version(), None);
    }

    #[test]
    fn debug_shows_size_indexes_and_resource_version() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", None)).unwrap();
        store.set_resource_version("42");
        let text = format!("{store:?}");
        assert_eq!(
            text,
            r#"ThreadSafeStore { len: 1, indexes: ["namespace", "node"], resource_version: Some("42"), .. }"#
        );
    }

    #[test]
    fn store_is_object_safe() {
        let indexer: Arc<dyn Indexer<Pod>> = Arc::new(node_store());
        indexer.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let store: Arc<dyn Store<Pod>> = Arc::new(ThreadSafeStore::<Pod>::new());
        store.add(pod(Some("ns"), "a", None)).unwrap();
        assert_eq!(indexer.by_index("node", "n1").unwrap().len(), 1);
        assert_eq!(store.len(), 1);
        fn takes_indexer(_: &dyn Indexer<Pod>) {}
        takes_indexer(&indexer); // Arc<dyn Indexer<K>> is an Indexer<K> too
    }

    // ---------- the namespace index ----------

    #[test]
    fn namespace_index_is_built_in_and_cluster_scoped_objects_are_under_empty_string() {
        let store = ThreadSafeStore::<Pod>::new();
        assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
        store.add(pod(Some("a"), "x", None)).unwrap();
        store.add(pod(Some("b"), "y", None)).unwrap();
        store.add(pod(None, "z", None)).unwrap();
        store.add(pod(Some(""), "w", None)).unwrap();
        assert_eq!(names(&store.by_index(NAMESPACE_INDEX, "a").unwrap()), ["x"]);
        assert_eq!(
            names(&store.by_index(NAMESPACE_INDEX, "").unwrap()),
            ["w", "z"]
        );
        assert_eq!(
            sorted(store.list_index_values(NAMESPACE_INDEX).unwrap()),
            ["", "a", "b"]
        );
        check_invariants(&store);
    }

    #[test]
    fn namespace_index_is_computed_from_the_key() {
        // The key function, not the object, decides the namespace.
        fn upper_key(item: &Item) -> Result<ObjectKey, KeyError> {
            Ok(ObjectKey::new(Some(&item.ns.to_uppercase()), item.name))
        }
        let store = ThreadSafeStore::with_key_fn(upper_key);
        store.add(item("shop", "a", &[])).unwrap();
        assert_eq!(
            store.index_keys(NAMESPACE_INDEX, "SHOP").unwrap(),
            [key("SHOP", "a")]
        );
        assert!(store.by_index(NAMESPACE_INDEX, "shop").unwrap().is_empty());
    }

    // ---------- registering indexes ----------

    #[test]
    fn add_indexers_indexes_existing_objects() {
        let store = ThreadSafeStore::<Pod>::new();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        store.add(pod(Some("ns"), "b", Some("n2"))).unwrap();
        store.add(labelled("ns", "c", &[("app", "web")])).unwrap();
        store
            .add_indexers(indexers(&[("node", node_of), ("label", label_values)]))
            .unwrap();
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
        assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["b"]);
        assert_eq!(names(&store.by_index("label", "web").unwrap()), ["c"]);
        assert_eq!(
            sorted(store.list_index_values("node").unwrap()),
            ["n1", "n2"]
        );
        check_invariants(&store);
        // Later writes keep the new indexes current.
        store.add(pod(Some("ns"), "d", Some("n1"))).unwrap();
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a", "d"]);
        check_invariants(&store);
    }

    #[test]
    fn index_names_lists_namespace_then_added_names_in_order() {
        let store = ThreadSafeStore::<Pod>::new();
        store
            .add_indexers(indexers(&[("zeta", node_of), ("alpha", node_of)]))
            .unwrap();
        store.add_indexers(indexers(&[("mid", node_of)])).unwrap();
        assert_eq!(store.index_names(), ["namespace", "alpha", "zeta", "mid"]);
    }

    #[test]
    fn index_name_clash_is_an_error_and_adds_nothing() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let err = store
            .add_indexers(indexers(&[("fresh", node_of), ("node", node_of)]))
            .unwrap_err();
        assert_eq!(err, IndexError::Conflict("node".into()));
        let err = store
            .add_indexers(indexers(&[(NAMESPACE_INDEX, node_of)]))
            .unwrap_err();
        assert_eq!(err, IndexError::Conflict(NAMESPACE_INDEX.into()));
        // With several clashes, the smallest name is reported (deterministic).
        let err = store
            .add_indexers(indexers(&[("node", node_of), (NAMESPACE_INDEX, node_of)]))
            .unwrap_err();
        assert_eq!(err, IndexError::Conflict(NAMESPACE_INDEX.into()));
        assert_eq!(store.index_names(), ["namespace", "node"]);
        assert!(matches!(
            store.by_index("fresh", "n1"),
            Err(IndexError::UnknownIndex(_))
        ));
        // The clashing index was not replaced either.
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
        check_invariants(&store);
    }

    #[test]
    fn with_indexers_refuses_a_taken_name() {
        let result =
            ThreadSafeStore::<Pod>::new().with_indexers(indexers(&[(NAMESPACE_INDEX, node_of)]));
        assert_eq!(
            result.unwrap_err(),
            IndexError::Conflict(NAMESPACE_INDEX.into())
        );
    }

    #[test]
    fn add_indexers_with_nothing_is_a_no_op() {
        let store = node_store();
        store.add_indexers(Indexers::new()).unwrap();
        assert_eq!(store.index_names(), ["namespace", "node"]);
    }

    // ---------- reading indexes ----------

    #[test]
    fn unknown_index_is_an_error() {
        let store = node_store();
        let p = pod(Some("ns"), "a", Some("n1"));
        store.add(p.clone()).unwrap();
        let unknown = || IndexError::UnknownIndex("nope".into());
        assert_eq!(store.by_index("nope", "n1").unwrap_err(), unknown());
        assert_eq!(store.index_keys("nope", "n1").unwrap_err(), unknown());
        assert_eq!(store.list_index_values("nope").unwrap_err(), unknown());
        assert_eq!(store.index("nope", &p).unwrap_err(), unknown());
    }

    #[test]
    fn unknown_value_of_a_known_index_is_empty() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        assert!(store.by_index("node", "n9").unwrap().is_empty());
        assert!(store.index_keys("node", "n9").unwrap().is_empty());
        assert!(store.by_index(NAMESPACE_INDEX, "other").unwrap().is_empty());
    }

    #[test]
    fn index_keys_match_by_index() {
        let store = node_store();
        for i in 0..20 {
            store
                .add(pod(
                    Some(&format!("ns{}", i % 3)),
                    &format!("p{i}"),
                    Some(&format!("n{}", i % 4)),
                ))
                .unwrap();
        }
        for (index, value, count) in [
            ("node", "n1", 5),
            ("node", "n3", 5),
            (NAMESPACE_INDEX, "ns2", 6),
        ] {
            let objs = store.by_index(index, value).unwrap();
            let from_objs: Vec<ObjectKey> = sorted(
                objs.iter()
                    .map(|o| ObjectKey::from_resource(&**o).unwrap())
                    .collect(),
            );
            assert_eq!(sorted(store.index_keys(index, value).unwrap()), from_objs);
            assert_eq!(from_objs.len(), count);
        }
    }

    #[test]
    fn list_index_values_lists_each_value_once() {
        let store = node_store();
        for i in 0..10 {
            store
                .add(pod(
                    Some("ns"),
                    &format!("p{i}"),
                    Some(&format!("n{}", i % 3)),
                ))
                .unwrap();
        }
        store.add(pod(Some("ns"), "nodeless", None)).unwrap();
        assert_eq!(
            sorted(store.list_index_values("node").unwrap()),
            ["n0", "n1", "n2"]
        );
    }

    #[test]
    fn multi_valued_index_files_the_object_under_every_value_once() {
        let store = item_store();
        store.add(item("ns", "a", &["red", "blue", "red"])).unwrap();
        store.add(item("ns", "b", &["blue"])).unwrap();
        assert_eq!(store.by_index("tag", "red").unwrap().len(), 1);
        assert_eq!(store.index_keys("tag", "blue").unwrap().len(), 2);
        assert_eq!(
            sorted(store.list_index_values("tag").unwrap()),
            ["blue", "red"]
        );
        check_invariants(&store);
    }

    #[test]
    fn object_with_no_value_is_in_no_set_of_that_index() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", None)).unwrap();
        assert!(store.list_index_values("node").unwrap().is_empty());
        assert_eq!(store.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 1);
        check_invariants(&store);
    }

    #[test]
    fn index_returns_objects_sharing_any_value_once() {
        let store = item_store();
        store.add(item("ns", "a", &["red", "blue"])).unwrap();
        store.add(item("ns", "b", &["blue"])).unwrap();
        store.add(item("ns", "c", &["green"])).unwrap();
        let probe = item("elsewhere", "probe", &["red", "blue", "blue", "black"]);
        let found = store.index("tag", &probe).unwrap();
        let mut found: Vec<&str> = found.iter().map(|i| i.name).collect();
        found.sort_unstable();
        assert_eq!(found, ["a", "b"]);
        assert_eq!(
            store
                .index("tag", &item("x", "y", &["green"]))
                .unwrap()
                .len(),
            1
        );
        assert!(store.index("tag", &item("x", "y", &[])).unwrap().is_empty());
    }

    #[test]
    fn index_on_the_namespace_index_uses_the_key() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", None)).unwrap();
        store.add(pod(Some("ns"), "b", None)).unwrap();
        store.add(pod(None, "c", None)).unwrap();
        let probe = pod(Some("ns"), "not-stored", None);
        assert_eq!(
            names(&store.index(NAMESPACE_INDEX, &probe).unwrap()),
            ["a", "b"]
        );
        assert_eq!(
            names(&store.index(NAMESPACE_INDEX, &pod(None, "x", None)).unwrap()),
            ["c"]
        );
        // A keyless object has no namespace value.
        let nameless = Arc::new(Pod::default());
        assert!(store.index(NAMESPACE_INDEX, &nameless).unwrap().is_empty());
    }

    // ---------- keeping indexes current ----------

    #[test]
    fn update_moves_object_between_index_values() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        store.add(pod(Some("ns"), "b", Some("n1"))).unwrap();
        store.add(pod(Some("ns"), "a", Some("n2"))).unwrap();
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
        assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
        store.add(pod(Some("ns"), "a", None)).unwrap();
        assert!(store.by_index("node", "n2").unwrap().is_empty());
        check_invariants(&store);
    }

    #[test]
    fn update_with_unchanged_index_values_serves_the_new_object() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let v2 = pod(Some("ns"), "a", Some("n1"));
        store.add(v2.clone()).unwrap();
        assert!(Arc::ptr_eq(&store.by_index("node", "n1").unwrap()[0], &v2));
        assert!(Arc::ptr_eq(
            &store.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
            &v2
        ));
        assert!(Arc::ptr_eq(&store.index("node", &v2).unwrap()[0], &v2));
        check_invariants(&store);
    }

    #[test]
    fn update_with_unchanged_index_values_does_not_refile() {
        let store = item_store();
        for name in ["a", "b", "c"] {
            store.add(item("ns", name, &["red", "blue"])).unwrap();
        }
        let links_of_a = |store: &ThreadSafeStore<Item>| {
            let inner = store.read_guard();
            let slot = inner
                .slot_of(&key("ns", "a"), store.hash_key(&key("ns", "a")))
                .unwrap();
            inner.entries[slot as usize].as_ref().unwrap().links.clone()
        };
        let before = links_of_a(&store);
        // Same values in another order and with a duplicate: the same set of values.
        store
            .add(item("ns", "a", &["blue", "red", "blue"]))
            .unwrap();
        assert_eq!(
            links_of_a(&store),
            before,
            "same values: same places in the index"
        );
        store.add(item("ns", "a", &["blue", "green"])).unwrap();
        assert_ne!(links_of_a(&store), before);
        check_invariants(&store);
    }

    #[test]
    fn index_fn_is_called_once_per_written_object() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let store = ThreadSafeStore::<Pod>::new()
            .with_indexers(
                [(
                    "node".to_owned(),
                    index_fn(|p: &Pod| {
                        CALLS.fetch_add(1, Ordering::SeqCst);
                        node_of(p)
                    }),
                )]
                .into(),
            )
            .unwrap();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        store.add(pod(Some("ns"), "a", Some("n2"))).unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 3);
        store.delete(&key("ns", "a"));
        assert_eq!(
            CALLS.load(Ordering::SeqCst),
            3,
            "delete calls no index function"
        );
    }

    #[test]
    fn empty_index_value_set_is_removed() {
        let store = node_store();
        store
            .add(pod(Some("ns"), "a", Some("ip-10-0-0-1")))
            .unwrap();
        store
            .add(pod(Some("ns"), "b", Some("ip-10-0-0-2")))
            .unwrap();
        store
            .add(pod(Some("ns"), "a", Some("ip-10-0-0-3")))
            .unwrap();
        assert_eq!(
            sorted(store.list_index_values("node").unwrap()),
            ["ip-10-0-0-2", "ip-10-0-0-3"]
        );
        store.delete(&key("ns", "b"));
        assert_eq!(store.list_index_values("node").unwrap(), ["ip-10-0-0-3"]);
        store.delete(&key("ns", "a"));
        assert!(store.list_index_values("node").unwrap().is_empty());
        assert!(store.list_index_values(NAMESPACE_INDEX).unwrap().is_empty());
        check_invariants(&store);
    }

    #[test]
    fn freed_storage_is_reused() {
        let store = node_store();
        store.add(pod(Some("ns"), "stable", Some("n0"))).unwrap();
        for i in 0..1000 {
            let name = format!("short-lived-{i}");
            store
                .add(pod(
                    Some(&format!("ns-{i}")),
                    &name,
                    Some(&format!("ip-{i}")),
                ))
                .unwrap();
            store.delete(&key(&format!("ns-{i}"), &name)).unwrap();
        }
        let inner = store.read_guard();
        assert!(inner.entries.len() <= 2, "slots are reused");
        assert!(inner.by_key.len() == 1);
        for index in &inner.indexes {
            assert!(
                index.sets.len() <= 2,
                "value ids are reused in {}",
                index.name
            );
            assert_eq!(index.lookup.len(), 1);
        }
    }

    #[test]
    fn deleting_members_keeps_the_others_filed() {
        // Exercises the swap-remove fix-up: delete from the front, the middle and the end.
        let store = node_store();
        for i in 0..10 {
            store
                .add(pod(Some("ns"), &format!("p{i}"), Some("n")))
                .unwrap();
        }
        for i in [0, 5, 9, 1] {
            store.delete(&key("ns", &format!("p{i}")));
            check_invariants(&store);
        }
        assert_eq!(
            names(&store.by_index("node", "n").unwrap()),
            ["p2", "p3", "p4", "p6", "p7", "p8"]
        );
    }

    #[test]
    fn internal_layout_stays_consistent_under_random_churn() {
        let store = item_store();
        store
            .add_indexers(
                [(
                    "first".to_owned(),
                    index_fn(|i: &Item| {
                        i.tags
                            .first()
                            .map(|t| (*t).to_owned())
                            .into_iter()
                            .collect()
                    }),
                )]
                .into(),
            )
            .unwrap();
        const NAMES: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
        const NSS: [&str; 3] = ["x", "y", ""];
        const TAGS: [&str; 5] = ["t0", "t1", "t2", "t3", "t4"];
        let mut rng = StdRng::seed_from_u64(7);
        let random_item = |rng: &mut StdRng| {
            let tags: Vec<&'static str> = (0..rng.random_range(0..4))
                .map(|_| TAGS[rng.random_range(0..5)])
                .collect();
            item(
                NSS[rng.random_range(0..3)],
                NAMES[rng.random_range(0..12)],
                &tags,
            )
        };
        for round in 0..400 {
            match rng.random_range(0..10) {
                0..=5 => {
                    store.add(random_item(&mut rng)).unwrap();
                }
                6..=7 => {
                    let k = key(NSS[rng.random_range(0..3)], NAMES[rng.random_range(0..12)]);
                    store.delete(&k);
                }
                8 => {
                    let objs = (0..rng.random_range(0..15))
                        .map(|_| random_item(&mut rng))
                        .collect();
                    store.replace(objs, &round.to_string()).unwrap();
                }
                _ => {
                    let batch = (0..rng.random_range(0..6))
                        .map(|_| {
                            if rng.random_bool(0.7) {
                                StoreOp::Upsert(random_item(&mut rng))
                            } else {
                                StoreOp::Delete(key(
                                    NSS[rng.random_range(0..3)],
                                    NAMES[rng.random_range(0..12)],
                                ))
                            }
                        })
                        .collect();
                    store.apply(batch).unwrap();
                }
            }
            check_invariants(&store);
        }
    }

    // ---------- replace ----------

    #[test]
    fn replace_reports_added_updated_deleted() {
        let store = node_store();
        let a1 = pod(Some("ns"), "a", Some("n1"));
        let b1 = pod(Some("ns"), "b", Some("n1"));
        store.add(a1.clone()).unwrap();
        store.add(b1.clone()).unwrap();
        let a2 = pod(Some("ns"), "a", Some("n2"));
        let c1 = pod(Some("ns"), "c", Some("n1"));
        let diff = store.replace(vec![a2.clone(), c1.clone()], "10").unwrap();
        assert_eq!(diff.added.len(), 1);
        assert!(Arc::ptr_eq(&diff.added[0], &c1));
        assert_eq!(diff.updated.len(), 1);
        assert!(Arc::ptr_eq(&diff.updated[0].0, &a1) && Arc::ptr_eq(&diff.updated[0].1, &a2));
        assert_eq!(diff.deleted.len(), 1);
        assert_eq!(diff.deleted[0].0, key("ns", "b"));
        assert!(Arc::ptr_eq(&diff.deleted[0].1, &b1));
        assert_eq!(names(&store.list()), ["a", "c"]);
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["c"]);
        assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
        check_invariants(&store);
    }

    #[test]
    fn replace_with_nothing_empties_the_store() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let diff = store.replace(Vec::new(), "3").unwrap();
        assert_eq!(diff.deleted.len(), 1);
        assert!(store.is_empty());
        assert!(store.list_index_values("node").unwrap().is_empty());
        check_invariants(&store);
    }

    #[test]
    fn replace_with_duplicate_keys_keeps_the_last() {
        let store = node_store();
        let old = pod(Some("ns"), "u", Some("n0"));
        store.add(old.clone()).unwrap();
        let a1 = pod(Some("ns"), "a", Some("n1"));
        let a2 = pod(Some("ns"), "a", Some("n2"));
        let u1 = pod(Some("ns"), "u", Some("n1"));
        let u2 = pod(Some("ns"), "u", Some("n3"));
        let diff = store
            .replace(vec![a1, u1, a2.clone(), u2.clone()], "5")
            .unwrap();
        assert_eq!(diff.added.len(), 1);
        assert!(Arc::ptr_eq(&diff.added[0], &a2));
        assert_eq!(diff.updated.len(), 1);
        assert!(Arc::ptr_eq(&diff.updated[0].0, &old) && Arc::ptr_eq(&diff.updated[0].1, &u2));
        assert!(diff.deleted.is_empty());
        assert_eq!(store.len(), 2);
        assert_eq!(
            sorted(store.list_index_values("node").unwrap()),
            ["n2", "n3"]
        );
        check_invariants(&store);
    }

    #[test]
    fn replace_refuses_a_keyless_object_and_changes_nothing() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        store.set_resource_version("1");
        let result = store.replace(
            vec![pod(Some("ns"), "b", None), Arc::new(Pod::default())],
            "2",
        );
        assert!(matches!(result, Err(StoreError::Key(_))));
        assert_eq!(store.list_keys(), [key("ns", "a")]);
        assert_eq!(store.resource_version().as_deref(), Some("1"));
        check_invariants(&store);
    }

    #[test]
    fn replace_and_set_resource_version_record_the_resource_version() {
        let store = node_store();
        assert_eq!(store.resource_version(), None);
        store
            .replace(vec![pod(Some("ns"), "a", None)], "7")
            .unwrap();
        assert_eq!(store.resource_version().as_deref(), Some("7"));
        store.set_resource_version("8");
        assert_eq!(store.resource_version().as_deref(), Some("8"));
        store.add(pod(Some("ns"), "b", None)).unwrap();
        assert_eq!(
            store.resource_version().as_deref(),
            Some("8"),
            "add keeps it"
        );
    }

    // ---------- apply ----------

    #[test]
    fn apply_runs_ops_in_order_and_returns_previous_objects() {
        let store = node_store();
        let a0 = pod(Some("ns"), "a", Some("n0"));
        store.add(a0.clone()).unwrap();
        let a1 = pod(Some("ns"), "a", Some("n1"));
        let a2 = pod(Some("ns"), "a", Some("n2"));
        let b1 = pod(Some("ns"), "b", Some("n1"));
        let prev = store
            .apply(vec![
                StoreOp::Upsert(a1.clone()),
                StoreOp::Delete(key("ns", "a")),
                StoreOp::Delete(key("ns", "a")),
                StoreOp::Upsert(b1.clone()),
                StoreOp::Upsert(a2.clone()),
            ])
            .unwrap();
        assert_eq!(prev.len(), 5);
        assert!(Arc::ptr_eq(prev[0].as_ref().unwrap(), &a0));
        assert!(Arc::ptr_eq(prev[1].as_ref().unwrap(), &a1));
        assert!(prev[2].is_none() && prev[3].is_none() && prev[4].is_none());
        assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &a2));
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
        assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
        check_invariants(&store);
    }

    #[test]
    fn apply_is_all_or_nothing_on_key_error() {
        let store = node_store();
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let result = store.apply(vec![
            StoreOp::Delete(key("ns", "a")),
            StoreOp::Upsert(pod(Some("ns"), "b", Some("n1"))),
            StoreOp::Upsert(Arc::new(Pod::default())),
        ]);
        assert!(matches!(
            result,
            Err(StoreError::Key(KeyError::MissingName { .. }))
        ));
        assert_eq!(store.list_keys(), [key("ns", "a")]);
        assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
        check_invariants(&store);
    }

    #[test]
    fn apply_of_an_empty_batch_changes_nothing() {
        let store = node_store();
        assert!(store.apply(Vec::new()).unwrap().is_empty());
        assert!(store.is_empty());
    }

    // ---------- failures inside index functions ----------

    #[test]
    fn panicking_index_fn_leaves_the_store_unchanged() {
        fn picky(p: &Pod) -> Vec<String> {
            assert!(
                p.metadata.name.as_deref() != Some("boom"),
                "index function panicked"
            );
            node_of(p)
        }
        let store = Arc::new(
            ThreadSafeStore::<Pod>::new()
                .with_indexers(indexers(&[("node", picky)]))
                .unwrap(),
        );
        store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
        let boom = pod(Some("ns"), "boom", Some("n1"));
        type Attempt = Box<dyn Fn(&ThreadSafeStore<Pod>)>;
        let attempts: [Attempt; 3] = [
            Box::new({
                let boom = boom.clone();
                move |s| drop(s.add(boom.clone()))
            }),
            Box::new({
                let boom = boom.clone();
                move |s| drop(s.replace(vec![pod(Some("ns"), "c", None), boom.clone()], "9"))
            }),
            Box::new({
                let boom = boom.clone();
                move |s| {
                    drop(s.apply(vec![
                        StoreOp::Delete(key("ns", "a")),
                        StoreOp::Upsert(boom.clone()),
                    ]))
                }
            }),
        ];
        for attempt in &attempts {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| attempt(&store)));
            assert!(result.is_err());
            assert_eq!(store.list_keys(), [key("ns", "a")]);
            assert_eq!(store.resource_version(), None);
            check_invariants(&store);
        }
        // add_indexers over existing objects.
        let plain = node_store();
        plain.add(boom).unwrap();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            plain.add_indexers(indexers(&[("picky", picky)]))
        }));
        assert!(result.is_err());
        assert_eq!(plain.index_names(), ["namespace", "node"]);
        check_invariants(&plain);
        // The stores still work (parking_lot locks are not poisoned).
        store.add(pod(Some("ns"), "d", None)).unwrap();
        assert_eq!(store.len(), 2);
    }

    // ---------- concurrency ----------

    #[test]
    fn concurrent_readers_do_not_block_each_other() {
        let store = Arc::new(node_store());
        let p = pod(Some("ns"), "a", Some("n1"));
        store.add(p.clone()).unwrap();
        // This thread is a reader in the middle of a long read...
        let held = store.read_guard();
        // ...while another thread runs every read. With a mutex, it would wait for `held`
        // and the answer would not come before the timeout.
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn({
            let store = store.clone();
            move || {
                let n = store.get(&key("ns", "a")).into_iter().count()
                    + store.list().len()
                    + store.list_keys().len()
                    + store.len()
                    + store.by_index("node", "n1").unwrap().len()
                    + store.index_keys(NAMESPACE_INDEX, "ns").unwrap().len()
                    + store.list_index_values("node").unwrap().len()
                    + store.index("node", &p).unwrap().len()
                    + store.index_names().len()
                    + usize::from(store.resource_version().is_none());
                let _ = tx.send(n);
            }
        });
        let answer = rx.recv_timeout(Duration::from_secs(10));
        drop(held);
        reader.join().unwrap();
        assert_eq!(answer, Ok(11), "a reader waited for another reader");
    }

    #[test]
    fn index_functions_of_a_write_do_not_block_readers() {
        // The index function of a write waits until a reader on another thread has read.
        // If the write held an exclusive lock while calling it, the read would wait for the
        // function and the function would time out.
        let (entered_tx, entered_rx) = mpsc::sync_channel::<()>(1);
        let (read_tx, read_rx) = mpsc::sync_channel::<()>(1);
        let entered_tx = parking_lot::Mutex::new(Some(entered_tx));
        let read_rx = parking_lot::Mutex::new(read_rx);
        let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = timed_out.clone();
        let slow = index_fn(move |p: &Pod| {
            if p.metadata.name.as_deref() == Some("slow") {
                if let Some(tx) = entered_tx.lock().take() {
                    let _ = tx.send(());
                }
                if read_rx
                    .lock()
                    .recv_timeout(Duration::from_secs(10))
                    .is_err()
                {
                    flag.store(true, Ordering::SeqCst);
                }
            }
            node_of(p)
        });
        let store = Arc::new(
            ThreadSafeStore::<Pod>::new()
                .with_indexers([("slow".to_owned(), slow)].into())
                .unwrap(),
        );
        store.add(pod(Some("ns"), "fast", Some("n1"))).unwrap();
        let writer = std::thread::spawn({
            let store = store.clone();
            move || store.add(pod(Some("ns"), "slow", Some("n1"))).unwrap()
        });
        entered_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            store.by_index("slow", "n1").unwrap().len(),
            1,
            "the write is not visible yet"
        );
        read_tx.send(()).unwrap();
        writer.join().unwrap();
        assert!(
            !timed_out.load(Ordering::SeqCst),
            "the reader was blocked by the index function"
        );
        assert_eq!(store.by_index("slow", "n1").unwrap().len(), 2);
    }

    #[test]
    fn readers_never_see_half_a_write() {
        let store = Arc::new(node_store());
        let set_a: Vec<Arc<Pod>> = (0..60)
            .map(|i| pod(Some("a"), &format!("a{i}"), Some("na")))
            .collect();
        let set_b: Vec<Arc<Pod>> = (0..30)
            .map(|i| pod(Some("b"), &format!("b{i}"), Some("nb")))
            .collect();
        store.replace(set_a.clone(), "0").unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (store, stop) = (store.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut checks = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let all = store.list();
                        assert!(
                            all.len() == 60 || all.len() == 30,
                            "torn list: {}",
                            all.len()
                        );
                        let ns: BTreeSet<_> =
                            all.iter().map(|p| p.metadata.namespace.clone()).collect();
                        assert_eq!(ns.len(), 1, "list mixes two contents");
                        let na = store.by_index("node", "na").unwrap().len();
                        assert!(na == 0 || na == 60, "torn index: {na}");
                        let nb = store.index_keys(NAMESPACE_INDEX, "b").unwrap().len();
                        assert!(nb == 0 || nb == 30, "torn namespace index: {nb}");
                        checks += 1;
                    }
                    checks
                })
            })
            .collect();
        for round in 0..150 {
            if round % 2 == 0 {
                store.replace(set_b.clone(), "b").unwrap();
            } else {
                // The same switch as one apply batch.
                let mut batch: Vec<StoreOp<Pod>> = set_b
                    .iter()
                    .map(|p| StoreOp::Delete(ObjectKey::from_resource(&**p).unwrap()))
                    .collect();
                batch.extend(set_a.iter().cloned().map(StoreOp::Upsert));
                store.apply(batch).unwrap();
                continue;
            }
            let mut batch: Vec<StoreOp<Pod>> = set_a
                .iter()
                .map(|p| StoreOp::Delete(ObjectKey::from_resource(&**p).unwrap()))
                .collect();
            batch.extend(set_b.iter().cloned().map(StoreOp::Upsert));
            store.apply(batch).unwrap();
            store.replace(set_a.clone(), "a").unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
        check_invariants(&*store);
    }

    #[test]
    fn model_check_against_a_btreemap() {
        // A quick deterministic cross-check; tests/store_props.rs does the thorough one.
        let store = node_store();
        let mut model: BTreeMap<ObjectKey, Arc<Pod>> = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..300 {
            let name = format!("p{}", rng.random_range(0..20));
            let ns = format!("ns{}", rng.random_range(0..3));
            if rng.random_bool(0.7) {
                let p = pod(
                    Some(&ns),
                    &name,
                    Some(&format!("n{}", rng.random_range(0..4))),
                );
                store.add(p.clone()).unwrap();
                model.insert(key(&ns, &name), p);
            } else {
                assert_eq!(
                    store.delete(&key(&ns, &name)).is_some(),
                    model.remove(&key(&ns, &name)).is_some()
                );
            }
            for n in 0..4 {
                let node = format!("n{n}");
                let expected: Vec<ObjectKey> = model
                    .iter()
                    .filter(|(_, p)| node_of(p) == [node.clone()])
                    .map(|(k, _)| k.clone())
                    .collect();
                assert_eq!(sorted(store.index_keys("node", &node).unwrap()), expected);
            }
        }
    }
}
