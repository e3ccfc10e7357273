//! [`ThreadSafeStore`]: the default [`Store`] and [`Indexer`], client-go's
//! `threadSafeMap` + `storeIndex` laid out for fast index reads.
//!
//! | file | holds |
//! | --- | --- |
//! | `mod.rs` | [`ThreadSafeStore`]: keys, the lock, the [`Store`] and [`Indexer`] impls |
//! | `slab.rs` | [`Inner`]: the objects' slab and key table (behind the lock); every write path |
//! | `index.rs` | [`Index`]: one named index, value → set of objects, and the links back |
//! | `tests/` | unit tests, one per rule, grouped by topic |
//! | `read_ahead.rs` | cloning many `Arc`s or keys, loading their cache lines a group at a time |

mod index;
mod read_ahead;
mod slab;

use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kube_core::Resource;
use parking_lot::{RwLock, RwLockUpgradableReadGuard};

use self::index::{Index, Member, index_id_u32, normalized};
use self::read_ahead::{GROUP, clone_objects, touch_counts, touch_keys};
use self::slab::{Inner, Prepared, slot_id};
#[cfg(doc)]
use super::NAMESPACE_INDEX;
use super::{IndexFn, Indexer, Indexers, ReplaceDiff, Store, StoreOp};
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
        // Called after every batch the informer applies: reuse the buffer.
        let mut inner = self.inner.write();
        match &mut inner.resource_version {
            Some(rv) => {
                rv.clear();
                rv.push_str(resource_version);
            }
            None => inner.resource_version = Some(resource_version.to_owned()),
        }
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

#[cfg(test)]
mod tests;
