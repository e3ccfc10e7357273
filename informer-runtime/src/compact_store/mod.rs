//! [`CompactStore`]: a cache backend that keeps objects encoded in memory (compressed
//! JSON) and decodes them on read, with a small cache of hot objects; several times smaller
//! than decoded objects, at the cost of a decode on every read that misses the hot cache.
//!
//! It implements [`Store`] and [`Indexer`], so it is chosen per informer with
//! [`InformerBuilder::store`](crate::informer::InformerBuilder::store) in place of the
//! default `informer_core::ThreadSafeStore`.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use informer_core::store::ReplaceDiff;
use informer_core::{
    IndexError, IndexFn, Indexer, Indexers, KeyError, KeyFn, NAMESPACE_INDEX, ObjectKey, Store,
    StoreError, StoreOp, resource_key,
};
use kube::Resource;
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::lister_watcher::with_decoder;
use crate::pool::map_parallel;

/// Writes of at least this many objects are encoded in parallel (on the caller and the
/// decode pool).
const PARALLEL_ENCODE: usize = 32;

/// Writes that replace at least this many objects not in the hot cache decode them in
/// parallel (on the caller and the decode pool) before taking the store's lock.
const PARALLEL_DECODE: usize = 8;

/// Objects decoded ahead of a write, by key, with the bytes they were decoded from.
type Prefetched<K> = HashMap<ObjectKey, (Arc<[u8]>, Arc<K>)>;

/// How many decoded objects a [`CompactStore`] keeps by default ([`CompactStore::new`]).
pub const DEFAULT_HOT_OBJECTS: usize = 256;

/// Counters of a [`CompactStore`], for metrics and memory accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactStoreStats {
    /// Objects stored.
    pub objects: usize,
    /// Bytes of encoded objects (the payload; keys and index entries come on top).
    pub encoded_bytes: usize,
    /// Decoded objects held in the hot cache.
    pub hot_objects: usize,
    /// Reads served from the hot cache.
    pub hot_hits: u64,
    /// Objects decoded (reads that missed the hot cache, and old versions returned by writes).
    pub decodes: u64,
}

/// A [`Store`] and [`Indexer`] that keeps every object encoded (JSON compressed with LZ4,
/// against a dictionary: the first object stored) and decodes it when it is read, with a
/// small LRU cache of recently read or written objects.
///
/// For very large caches where memory matters more than read speed. A realistic Pod takes
/// about 35 KB decoded (k8s-openapi structs hold every optional field inline) and 1-2 KB
/// here.
///
/// # Guarantees
/// The same as every [`Store`]/[`Indexer`] (atomic operations, readers never see half of a
/// batch, keyless objects refused, index values with no object removed), with one
/// difference: **reads decode**. An object read twice may be two different allocations
/// (equal in value) unless the hot cache still holds it; `Update { old, new }` notifications
/// still carry the right versions. Index functions run on decoded objects, so indexes behave
/// exactly as with [`ThreadSafeStore`](informer_core::store::ThreadSafeStore).
///
/// # Costs
/// - a write encodes the new object and decodes the replaced one (unless hot), since
///   [`Store::add`] returns it;
/// - `get` decodes unless hot (tens of microseconds for a Pod); `list` and `by_index`
///   decode every object they return, so prefer `get` by key (as a workqueue-driven
///   controller does) over repeated full lists;
/// - a relist ([`Store::replace`]) decodes every replaced object to report the difference.
///
/// # Panics
/// If `K`'s JSON form does not round-trip (serialization fails, or decoding what was
/// encoded fails). Every k8s-openapi type, `DynamicObject` and derived custom resources
/// round-trip; a type that does not is a programmer error.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{ObjectKey, Store};
/// use informer_runtime::compact_store::CompactStore;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let store = CompactStore::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.namespace = Some("default".into());
/// store.add(Arc::new(cm.clone()))?;
/// let read = store.get(&ObjectKey::new(Some("default"), "settings")).unwrap();
/// assert_eq!(*read, cm);
/// assert!(store.stats().encoded_bytes < 100);
/// # Ok::<(), informer_core::StoreError>(())
/// ```
pub struct CompactStore<K> {
    key_fn: KeyFn<K>,
    /// The JSON of the first object ever encoded: objects of one kind share most of their
    /// field names and many values, so compressing against it shrinks them several times.
    dictionary: OnceLock<Arc<[u8]>>,
    inner: RwLock<Inner<K>>,
    hot: Mutex<Hot<K>>,
    hot_hits: AtomicU64,
    decodes: AtomicU64,
}

struct Index<K> {
    name: String,
    func: IndexFn<K>,
    values: HashMap<String, HashSet<ObjectKey>>,
}

struct Inner<K> {
    objects: HashMap<ObjectKey, Box<[u8]>>,
    encoded_bytes: usize,
    indexes: Vec<Index<K>>,
    resource_version: Option<String>,
}

/// A small LRU of decoded objects: a map with access stamps and a queue of (key, stamp);
/// queue entries whose stamp is stale are skipped on eviction.
struct Hot<K> {
    capacity: usize,
    map: HashMap<ObjectKey, (Arc<K>, u64)>,
    order: VecDeque<(ObjectKey, u64)>,
    tick: u64,
}

impl<K> Hot<K> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            map: HashMap::new(),
            order: VecDeque::new(),
            tick: 0,
        }
    }

    fn get(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        self.tick += 1;
        let tick = self.tick;
        let (obj, stamp) = self.map.get_mut(key)?;
        *stamp = tick;
        let obj = obj.clone();
        self.order.push_back((key.clone(), tick));
        self.compact_order();
        Some(obj)
    }

    fn insert(&mut self, key: ObjectKey, obj: Arc<K>) {
        if self.capacity == 0 {
            return;
        }
        self.tick += 1;
        self.order.push_back((key.clone(), self.tick));
        self.map.insert(key, (obj, self.tick));
        while self.map.len() > self.capacity {
            let Some((key, stamp)) = self.order.pop_front() else {
                break;
            };
            if let MapEntry::Occupied(e) = self.map.entry(key)
                && e.get().1 == stamp
            {
                e.remove();
            }
        }
        self.compact_order();
    }

    fn remove(&mut self, key: &ObjectKey) {
        self.map.remove(key);
    }

    fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
    }

    /// Keeps the queue within a few times the capacity by dropping stale entries.
    fn compact_order(&mut self) {
        if self.order.len() > 4 * self.capacity.max(16) {
            let map = &self.map;
            self.order
                .retain(|(key, stamp)| map.get(key).is_some_and(|(_, s)| s == stamp));
        }
    }
}

/// The longest dictionary LZ4 uses (its window).
const MAX_DICTIONARY: usize = 64 * 1024;

fn normalized(mut values: Vec<String>) -> Vec<String> {
    if values.len() > 1 {
        values.sort_unstable();
        values.dedup();
    }
    values
}

impl<K> Index<K> {
    fn link(&mut self, key: &ObjectKey, obj: &K) {
        for value in normalized((self.func)(obj)) {
            self.values.entry(value).or_default().insert(key.clone());
        }
    }

    fn unlink(&mut self, key: &ObjectKey, obj: &K) {
        for value in normalized((self.func)(obj)) {
            if let MapEntry::Occupied(mut e) = self.values.entry(value) {
                e.get_mut().remove(key);
                if e.get().is_empty() {
                    e.remove();
                }
            }
        }
    }
}

impl<K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static> CompactStore<K> {
    /// An empty store of Kubernetes objects keyed by [`resource_key`], with the built-in
    /// [`NAMESPACE_INDEX`] and a hot cache of [`DEFAULT_HOT_OBJECTS`] objects.
    pub fn new() -> Self {
        Self::with_key_fn(resource_key::<K>, DEFAULT_HOT_OBJECTS)
    }
}

impl<K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static> Default
    for CompactStore<K>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Serialize + DeserializeOwned + Send + Sync + 'static> CompactStore<K> {
    /// An empty store keyed by `key_fn`, keeping up to `hot_objects` decoded objects (0: none),
    /// with the built-in [`NAMESPACE_INDEX`] (objects by their key's namespace).
    pub fn with_key_fn(key_fn: KeyFn<K>, hot_objects: usize) -> Self {
        let namespace: IndexFn<K> = Arc::new(move |obj: &K| {
            key_fn(obj)
                .map(|k| k.namespace().unwrap_or("").to_owned())
                .into_iter()
                .collect()
        });
        Self {
            key_fn,
            dictionary: OnceLock::new(),
            inner: RwLock::new(Inner {
                objects: HashMap::new(),
                encoded_bytes: 0,
                indexes: vec![Index {
                    name: NAMESPACE_INDEX.to_owned(),
                    func: namespace,
                    values: HashMap::new(),
                }],
                resource_version: None,
            }),
            hot: Mutex::new(Hot::new(hot_objects)),
            hot_hits: AtomicU64::new(0),
            decodes: AtomicU64::new(0),
        }
    }

    /// Counters: objects, encoded bytes, hot-cache hits, decodes.
    pub fn stats(&self) -> CompactStoreStats {
        let inner = self.inner.read();
        CompactStoreStats {
            objects: inner.objects.len(),
            encoded_bytes: inner.encoded_bytes,
            hot_objects: self.hot.lock().map.len(),
            hot_hits: self.hot_hits.load(Ordering::Relaxed),
            decodes: self.decodes.load(Ordering::Relaxed),
        }
    }

    fn encode(&self, obj: &K) -> Box<[u8]> {
        let json = to_json(obj);
        let dictionary = self
            .dictionary
            .get_or_init(|| json[..json.len().min(MAX_DICTIONARY)].into());
        lz4_flex::block::compress_prepend_size_with_dict(&json, dictionary).into_boxed_slice()
    }

    /// Encodes `objects`, in parallel when there are many (the first one fixes the
    /// dictionary if none is set yet).
    fn encode_all(&self, objects: Vec<Arc<K>>) -> Vec<Box<[u8]>> {
        let dictionary = match (self.dictionary.get(), objects.first()) {
            (Some(d), _) => d.clone(),
            (None, Some(first)) => {
                self.encode(first);
                self.dictionary.get().expect("set by encode").clone()
            }
            (None, None) => return Vec::new(),
        };
        let encode = move |obj: &Arc<K>| {
            lz4_flex::block::compress_prepend_size_with_dict(&to_json(&**obj), &dictionary)
                .into_boxed_slice()
        };
        if objects.len() < PARALLEL_ENCODE {
            return objects.iter().map(encode).collect();
        }
        map_parallel(objects, encode)
    }

    fn decode(&self, bytes: &[u8]) -> K {
        self.decodes.fetch_add(1, Ordering::Relaxed);
        let dictionary = self.dictionary.get().map_or(&[][..], |d| &d[..]);
        decode_with(dictionary, bytes)
    }

    /// The objects `batch` replaces or deletes that the hot cache does not hold, decoded in
    /// parallel before the write lock is taken (a write decodes what it replaces, to return
    /// it). Each is kept with the bytes it was decoded from: the write uses it only if its
    /// key still holds those bytes.
    fn prefetch_replaced<'a>(&self, keys: impl Iterator<Item = &'a ObjectKey>) -> Prefetched<K> {
        // One copy of each object's bytes, shared with the decoding threads.
        let wanted: Vec<(ObjectKey, Arc<[u8]>)> = {
            let inner = self.inner.read();
            let hot = self.hot.lock();
            let mut seen = HashSet::new();
            keys.filter(|key| seen.insert(*key) && !hot.map.contains_key(*key))
                .filter_map(|key| Some((key.clone(), Arc::from(&inner.objects.get(key)?[..]))))
                .collect()
        };
        if wanted.len() < PARALLEL_DECODE {
            return HashMap::new();
        }
        let Some(dictionary) = self.dictionary.get().cloned() else {
            return HashMap::new();
        };
        self.decodes
            .fetch_add(wanted.len() as u64, Ordering::Relaxed);
        let inputs: Vec<Arc<[u8]>> = wanted.iter().map(|(_, bytes)| bytes.clone()).collect();
        let decoded = map_parallel(inputs, move |bytes| {
            Arc::new(decode_with::<K>(&dictionary, bytes))
        });
        wanted
            .into_iter()
            .zip(decoded)
            .map(|((key, bytes), obj)| (key, (bytes, obj)))
            .collect()
    }

    /// The object `key` held as `bytes`, which a write replaces or deletes: the prefetched
    /// one if it was decoded from these bytes, else from the hot cache or decoded.
    fn replaced(&self, key: &ObjectKey, bytes: &[u8], prefetched: &mut Prefetched<K>) -> Arc<K> {
        match prefetched.remove(key) {
            Some((from, obj)) if *from == *bytes => obj,
            _ => self.materialize(key, bytes, false),
        }
    }

    /// The object stored as `bytes` under `key`: from the hot cache, or decoded. Must be
    /// called with `inner` locked, so that the hot cache and the bytes agree.
    fn materialize(&self, key: &ObjectKey, bytes: &[u8], remember: bool) -> Arc<K> {
        if let Some(obj) = self.hot.lock().get(key) {
            self.hot_hits.fetch_add(1, Ordering::Relaxed);
            return obj;
        }
        let obj = Arc::new(self.decode(bytes));
        if remember {
            self.hot.lock().insert(key.clone(), obj.clone());
        }
        obj
    }

    /// Stores `obj` (already encoded) under `key` with `inner` write-locked; returns the
    /// replaced object.
    fn upsert_locked(
        &self,
        inner: &mut Inner<K>,
        key: ObjectKey,
        obj: Arc<K>,
        bytes: Box<[u8]>,
        prefetched: &mut Prefetched<K>,
    ) -> Option<Arc<K>> {
        inner.encoded_bytes += bytes.len();
        let old = match inner.objects.insert(key.clone(), bytes) {
            Some(old_bytes) => {
                inner.encoded_bytes -= old_bytes.len();
                let old = self.replaced(&key, &old_bytes, prefetched);
                for index in &mut inner.indexes {
                    index.unlink(&key, &old);
                }
                Some(old)
            }
            None => None,
        };
        for index in &mut inner.indexes {
            index.link(&key, &obj);
        }
        self.hot.lock().insert(key, obj);
        old
    }

    fn delete_locked(
        &self,
        inner: &mut Inner<K>,
        key: &ObjectKey,
        prefetched: &mut Prefetched<K>,
    ) -> Option<Arc<K>> {
        let bytes = inner.objects.remove(key)?;
        inner.encoded_bytes -= bytes.len();
        let old = self.replaced(key, &bytes, prefetched);
        for index in &mut inner.indexes {
            index.unlink(key, &old);
        }
        self.hot.lock().remove(key);
        Some(old)
    }

    fn objects_of(&self, inner: &Inner<K>, keys: impl Iterator<Item = ObjectKey>) -> Vec<Arc<K>> {
        keys.filter_map(|key| {
            inner
                .objects
                .get(&key)
                .map(|bytes| self.materialize(&key, bytes, false))
        })
        .collect()
    }

    fn index_of<'a>(inner: &'a Inner<K>, name: &str) -> Result<&'a Index<K>, IndexError> {
        inner
            .indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| IndexError::UnknownIndex(name.to_owned()))
    }
}

/// Decodes what [`CompactStore::encode`] made against `dictionary`.
///
/// # Panics
/// If `K` does not round-trip through JSON (see the type's panics).
fn decode_with<K: DeserializeOwned>(dictionary: &[u8], bytes: &[u8]) -> K {
    let decoded = lz4_flex::block::decompress_size_prepended_with_dict(bytes, dictionary)
        .map_err(|e| e.to_string())
        .and_then(|mut json| {
            with_decoder(false, |decoder| decoder.decode(&mut json)).map_err(|e| e.to_string())
        });
    match decoded {
        Ok(obj) => obj,
        Err(e) => panic!(
            "CompactStore: {} does not round-trip through JSON ({e}); use a store that keeps objects decoded",
            std::any::type_name::<K>()
        ),
    }
}

/// `obj` as JSON.
///
/// # Panics
/// If it cannot be serialized (see the type's panics).
fn to_json<K: Serialize>(obj: &K) -> Vec<u8> {
    match serde_json::to_vec(obj) {
        Ok(json) => json,
        Err(e) => panic!(
            "CompactStore: {} cannot be encoded as JSON ({e}); use a store that keeps objects decoded",
            std::any::type_name::<K>()
        ),
    }
}

impl<K> fmt::Debug for CompactStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("CompactStore")
            .field("objects", &inner.objects.len())
            .field("encoded_bytes", &inner.encoded_bytes)
            .field(
                "indexes",
                &inner.indexes.iter().map(|i| &i.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<K: Serialize + DeserializeOwned + Send + Sync + 'static> Store<K> for CompactStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let key = (self.key_fn)(&obj)?;
        let bytes = self.encode(&*obj);
        let mut inner = self.inner.write();
        Ok(self.upsert_locked(&mut inner, key, obj, bytes, &mut HashMap::new()))
    }

    fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        (self.key_fn)(obj)
    }

    /// `true`: a batch encodes its objects, and decodes those it replaces, in parallel.
    fn prefers_batches(&self) -> bool {
        true
    }

    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        self.delete_locked(&mut inner, key, &mut HashMap::new())
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let inner = self.inner.read();
        let bytes = inner.objects.get(key)?;
        Some(self.materialize(key, bytes, true))
    }

    fn list(&self) -> Vec<Arc<K>> {
        let inner = self.inner.read();
        inner
            .objects
            .iter()
            .map(|(key, bytes)| self.materialize(key, bytes, false))
            .collect()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.read().objects.keys().cloned().collect()
    }

    fn len(&self) -> usize {
        self.inner.read().objects.len()
    }

    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        // The last object of a key wins, as with repeated adds.
        let mut latest: HashMap<ObjectKey, (Arc<K>, Box<[u8]>)> =
            HashMap::with_capacity(keys.len());
        let mut order = Vec::with_capacity(keys.len());
        let encoded = self.encode_all(objects.clone());
        for ((key, obj), bytes) in keys.into_iter().zip(objects).zip(encoded) {
            if latest.insert(key.clone(), (obj, bytes)).is_none() {
                order.push(key);
            }
        }
        let mut inner = self.inner.write();
        let mut old_objects = std::mem::take(&mut inner.objects);
        let mut diff = ReplaceDiff::default();
        let mut old_of: HashMap<ObjectKey, Arc<K>> = HashMap::new();
        for key in &order {
            if let Some(bytes) = old_objects.remove(key) {
                old_of.insert(key.clone(), self.materialize(key, &bytes, false));
            }
        }
        for (key, bytes) in old_objects {
            let old = self.materialize(&key, &bytes, false);
            diff.deleted.push((key, old));
        }
        self.hot.lock().clear();
        for index in &mut inner.indexes {
            index.values.clear();
        }
        inner.encoded_bytes = 0;
        for key in order {
            let Some((obj, bytes)) = latest.remove(&key) else {
                continue;
            };
            inner.encoded_bytes += bytes.len();
            for index in &mut inner.indexes {
                index.link(&key, &obj);
            }
            match old_of.remove(&key) {
                Some(old) => diff.updated.push((old, obj.clone())),
                None => diff.added.push(obj.clone()),
            }
            inner.objects.insert(key, bytes);
        }
        inner.resource_version = Some(resource_version.to_owned());
        Ok(diff)
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
        enum Prepared<K> {
            Upsert(ObjectKey, Arc<K>, Box<[u8]>),
            Delete(ObjectKey),
        }
        let upserts: Vec<Arc<K>> = batch
            .iter()
            .filter_map(|op| match op {
                StoreOp::Upsert(obj) => Some(obj.clone()),
                StoreOp::Delete(_) => None,
            })
            .collect();
        // Keys first: a keyless object refuses the batch before anything is encoded.
        let keys = upserts
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, KeyError>>()?;
        let mut encoded = keys.into_iter().zip(self.encode_all(upserts));
        let prepared: Vec<Prepared<K>> = batch
            .into_iter()
            .map(|op| match op {
                StoreOp::Upsert(obj) => {
                    let (key, bytes) = encoded.next().expect("one encoding per upsert");
                    Prepared::Upsert(key, obj, bytes)
                }
                StoreOp::Delete(key) => Prepared::Delete(key),
            })
            .collect();
        let mut prefetched = self.prefetch_replaced(prepared.iter().map(|op| match op {
            Prepared::Upsert(key, ..) | Prepared::Delete(key) => key,
        }));
        let mut inner = self.inner.write();
        Ok(prepared
            .into_iter()
            .map(|op| match op {
                Prepared::Upsert(key, obj, bytes) => {
                    self.upsert_locked(&mut inner, key, obj, bytes, &mut prefetched)
                }
                Prepared::Delete(key) => self.delete_locked(&mut inner, &key, &mut prefetched),
            })
            .collect())
    }
}

impl<K: Serialize + DeserializeOwned + Send + Sync + 'static> Indexer<K> for CompactStore<K> {
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        let mut inner = self.inner.write();
        if let Some(taken) = indexers
            .keys()
            .filter(|name| inner.indexes.iter().any(|i| &i.name == *name))
            .min()
        {
            return Err(IndexError::Conflict(taken.clone()));
        }
        let mut added: Vec<Index<K>> = indexers
            .into_iter()
            .map(|(name, func)| Index {
                name,
                func,
                values: HashMap::new(),
            })
            .collect();
        added.sort_by(|a, b| a.name.cmp(&b.name));
        if !added.is_empty() {
            for (key, bytes) in &inner.objects {
                let obj = self.materialize(key, bytes, false);
                for index in &mut added {
                    index.link(key, &obj);
                }
            }
        }
        inner.indexes.extend(added);
        Ok(())
    }

    fn index_names(&self) -> Vec<String> {
        self.inner
            .read()
            .indexes
            .iter()
            .map(|i| i.name.clone())
            .collect()
    }

    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let inner = self.inner.read();
        let keys: Vec<ObjectKey> = Self::index_of(&inner, index)?
            .values
            .get(value)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        Ok(self.objects_of(&inner, keys.into_iter()))
    }

    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        let inner = self.inner.read();
        Ok(Self::index_of(&inner, index)?
            .values
            .get(value)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default())
    }

    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        let inner = self.inner.read();
        Ok(Self::index_of(&inner, index)?
            .values
            .keys()
            .cloned()
            .collect())
    }

    fn index(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        let inner = self.inner.read();
        let idx = Self::index_of(&inner, index)?;
        let mut keys: HashSet<ObjectKey> = HashSet::new();
        for value in normalized((idx.func)(obj)) {
            if let Some(set) = idx.values.get(&value) {
                keys.extend(set.iter().cloned());
            }
        }
        Ok(self.objects_of(&inner, keys.into_iter()))
    }
}

#[cfg(test)]
mod tests;
