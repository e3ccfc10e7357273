//! The cache: [`Store`] and [`Indexer`], and the default [`ThreadSafeStore`].
//!
//! The informer applies what the FIFO pops to a store; listers read from it. Objects live in
//! `Arc<K>` and are shared, never deep-copied, between the store, notifications and readers.
//!
//! Other stores, each a drop-in [`Store`]: [`ExpirationCache`] (entries expire under an
//! [`ExpirationPolicy`], by default a [`TtlPolicy`], on a [`Clock`] tests can set:
//! [`FakeClock`]) and [`UndeltaStore`] (pushes its whole content to a function after every
//! write).

mod clock;
mod expiration;
mod thread_safe;
mod undelta;
mod wrapper;

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{IndexError, StoreError};
use crate::key::ObjectKey;

pub use clock::{Clock, FakeClock, RealClock};
pub use expiration::{ExpirationCache, ExpirationPolicy, TimestampedEntry, TtlPolicy};
pub use thread_safe::ThreadSafeStore;
pub use undelta::UndeltaStore;
pub use wrapper::StoreWrapper;
#[cfg(test)]
pub(crate) use wrapper::recording::Recording;

/// The name of the index every [`ThreadSafeStore`] has from the start: objects by namespace
/// (cluster-scoped objects are indexed under the empty string).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function: the values under which an object is filed in one named index.
///
/// An object may be filed under any number of values (none, one, or several).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Named index functions, as passed to [`Indexer::add_indexers`].
///
/// ```
/// use informer_core::store::{index_fn, Indexers};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut indexers: Indexers<Pod> = Indexers::new();
/// indexers.insert(
///     "node".into(),
///     index_fn(|pod: &Pod| pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()),
/// );
/// ```
pub type Indexers<K> = HashMap<String, IndexFn<K>>;

/// Wraps a closure as an [`IndexFn`].
pub fn index_fn<K, F>(f: F) -> IndexFn<K>
where
    F: Fn(&K) -> Vec<String> + Send + Sync + 'static,
{
    Arc::new(f)
}

/// One change in a batch given to [`Store::apply`].
#[derive(Debug)]
pub enum StoreOp<K> {
    /// Insert the object, or replace the stored object with the same key.
    Upsert(Arc<K>),
    /// Remove the object with this key, if present.
    Delete(ObjectKey),
}

/// What [`Store::replace`] changed, so that the caller can notify handlers of exactly that.
#[derive(Debug)]
pub struct ReplaceDiff<K> {
    /// Objects that were not in the store before.
    pub added: Vec<Arc<K>>,
    /// Objects that were in the store: `(old, new)`.
    pub updated: Vec<(Arc<K>, Arc<K>)>,
    /// Objects that were in the store and are not in the new list, with their last state.
    pub deleted: Vec<(ObjectKey, Arc<K>)>,
}

impl<K> Default for ReplaceDiff<K> {
    fn default() -> Self {
        Self {
            added: Vec::new(),
            updated: Vec::new(),
            deleted: Vec::new(),
        }
    }
}

/// A thread-safe, keyed cache of objects.
///
/// Guarantees every implementation must keep (the default [`ThreadSafeStore`] is tested for
/// each):
/// - objects are stored and returned as `Arc<K>`: no read copies an object;
/// - every method is atomic with respect to every other: a reader never sees half of a
///   [`replace`](Store::replace) or of an [`apply`](Store::apply) batch;
/// - readers do not block one another;
/// - an object without a key (see [`KeyError`](crate::KeyError)) is refused with an error and the
///   store is left unchanged.
///
/// The trait is object safe: `Arc<dyn Store<K>>` and `Arc<dyn Indexer<K>>` work, so a custom
/// backend can be plugged in wherever the library takes a store. Test one of your own with
/// [`conformance::check_store`](crate::conformance::check_store): it compares every read of
/// your store with [`ThreadSafeStore`]'s through a long sequence of writes.
///
/// What an informer calls (see [`apply_deltas`](crate::apply::apply_deltas)), so that a store of your own, or one
/// that watches writes, knows where each write comes from:
/// - each part of a list (the first list and a relist, page by page): one
///   [`apply`](Store::apply) batch of upserts; when the list ends, [`delete`](Store::delete)
///   for each cached key it did not hold, then [`set_resource_version`](Store::set_resource_version);
/// - a list taken whole (a FIFO that delivers it as one replace, `RealFifo`'s atomic mode):
///   [`replace`](Store::replace);
/// - each watch event: [`update_with_key`](Store::update_with_key) (added or modified) or
///   [`delete`](Store::delete), then `set_resource_version` after a batch of events, and on
///   a bookmark;
/// - a resync: `update_with_key` with the cached object.
///
/// A store of your own gets its single-object upserts through `add` (`update` and
/// `update_with_key` default to it); a wrapper ([`StoreWrapper`]) routes `add` and `delete`
/// to `apply` as well.
pub trait Store<K>: Send + Sync {
    /// Inserts or replaces the object under its key; returns the object it replaced.
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError>;

    /// Same as [`add`](Store::add): the store does not distinguish add from update.
    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.add(obj)
    }

    /// The key this store files `obj` under.
    ///
    /// # Errors
    /// [`KeyError`](crate::KeyError) if the object has no key.
    fn key_of(&self, obj: &K) -> Result<ObjectKey, crate::KeyError>;

    /// Same as [`update`](Store::update), given the key `obj` is filed under, which the
    /// caller has computed already, so that the store need not compute it again (the
    /// informer passes the key its FIFO computed).
    ///
    /// `key` must be what [`key_of`](Store::key_of) returns for `obj`; callers check
    /// [`keys_by_resource_key`](Store::keys_by_resource_key) before passing a key computed
    /// by [`resource_key`](crate::resource_key). The default ignores `key` and calls
    /// [`update`](Store::update), so a custom store need not implement it.
    ///
    /// # Errors
    /// As [`update`](Store::update).
    fn update_with_key(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let _ = key;
        self.update(obj)
    }

    /// Whether [`key_of`](Store::key_of) is [`resource_key`](crate::resource_key), so that a
    /// key computed by it may be passed to [`update_with_key`](Store::update_with_key) and
    /// [`delete`](Store::delete). `false` by default (then callers let the store compute its
    /// keys).
    fn keys_by_resource_key(&self) -> bool {
        false
    }

    /// Whether the informer should write a run of watch events with one
    /// [`apply`](Store::apply) call rather than one write per event (the notifications are
    /// the same, in the same order): `true` for a store whose writes cost more than its lock,
    /// such as one that encodes objects and encodes a batch in parallel
    /// (`informer_runtime::compact_store::CompactStore`), or a
    /// [`StoreWrapper`], whose every write is a batch. `false` by
    /// default: each event is written with [`update_with_key`](Store::update_with_key), which
    /// computes no key twice.
    fn prefers_batches(&self) -> bool {
        false
    }

    /// Removes the object with this key; returns it if it was present.
    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>>;

    /// The object with this key.
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>>;

    /// Every object, in no particular order.
    fn list(&self) -> Vec<Arc<K>>;

    /// Every key, in no particular order.
    fn list_keys(&self) -> Vec<ObjectKey>;

    /// The number of objects.
    fn len(&self) -> usize;

    /// Whether the store holds no object.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole content with `objects` (the result of a list at
    /// `resource_version`) in one step, and returns what changed.
    ///
    /// # Errors
    /// If any object has no key, nothing is changed.
    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError>;

    /// The resource version given to the last [`replace`](Store::replace) or
    /// [`set_resource_version`](Store::set_resource_version), if any: for a store an informer
    /// fills in order (through a [`RealFifo`](crate::RealFifo)), the version of the last
    /// object, delete, bookmark or list applied (client-go's `LastStoreSyncResourceVersion`;
    /// see [`apply_ordered_deltas`](crate::apply::apply_ordered_deltas)).
    ///
    /// Deliberately unlike client-go's `threadSafeMap`, writing an object (`add`, `update`,
    /// `apply`) does not move it: there a resync moves it back to an older object's version
    /// and one page of a paginated list sets it before the list is whole; here the informer's
    /// step sets it to the position in the server's stream that the content reflects.
    fn resource_version(&self) -> Option<String>;

    /// Records the resource version the content corresponds to (after a batch of watch
    /// events or a bookmark). Called once per applied batch: make it cheap.
    fn set_resource_version(&self, resource_version: &str);

    /// Applies a batch of changes under one lock, in order: readers see all or none of them.
    /// Returns, for each operation, the object previously stored under its key.
    ///
    /// # Errors
    /// If any object has no key, nothing is changed.
    fn apply(&self, batch: Vec<StoreOp<K>>) -> Result<Vec<Option<Arc<K>>>, StoreError>;
}

/// A [`Store`] with named secondary indexes.
///
/// An index maps each value an [`IndexFn`] returns for an object to the set of keys of the
/// objects filed under it. Indexes are kept up to date by every write. A value whose set of
/// objects becomes empty is removed, so short-lived values (say, pod IPs) do not leak.
pub trait Indexer<K>: Store<K> {
    /// Registers more indexes. Objects already stored are indexed at once.
    ///
    /// # Errors
    /// [`IndexError::Conflict`] if a name is already registered; then no index is added.
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError>;

    /// The names of the registered indexes.
    fn index_names(&self) -> Vec<String>;

    /// The objects filed under `value` in the index `index`.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError>;

    /// The keys of the objects filed under `value` in the index `index`.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError>;

    /// Every value that at least one object is filed under in the index `index`.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError>;

    /// The objects that share at least one value of the index `index` with `obj`.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    fn index(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError>;
}

impl<K, S: Store<K> + ?Sized> Store<K> for Arc<S> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        (**self).add(obj)
    }
    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        (**self).update(obj)
    }
    fn key_of(&self, obj: &K) -> Result<ObjectKey, crate::KeyError> {
        (**self).key_of(obj)
    }
    fn update_with_key(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        (**self).update_with_key(key, obj)
    }
    fn keys_by_resource_key(&self) -> bool {
        (**self).keys_by_resource_key()
    }
    fn prefers_batches(&self) -> bool {
        (**self).prefers_batches()
    }
    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        (**self).delete(key)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        (**self).get(key)
    }
    fn list(&self) -> Vec<Arc<K>> {
        (**self).list()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        (**self).list_keys()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError> {
        (**self).replace(objects, resource_version)
    }
    fn resource_version(&self) -> Option<String> {
        (**self).resource_version()
    }
    fn set_resource_version(&self, resource_version: &str) {
        (**self).set_resource_version(resource_version)
    }
    fn apply(&self, batch: Vec<StoreOp<K>>) -> Result<Vec<Option<Arc<K>>>, StoreError> {
        (**self).apply(batch)
    }
}

impl<K, S: Indexer<K> + ?Sized> Indexer<K> for Arc<S> {
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        (**self).add_indexers(indexers)
    }
    fn index_names(&self) -> Vec<String> {
        (**self).index_names()
    }
    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        (**self).by_index(index, value)
    }
    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        (**self).index_keys(index, value)
    }
    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        (**self).list_index_values(index)
    }
    fn index(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        (**self).index(index, obj)
    }
}
