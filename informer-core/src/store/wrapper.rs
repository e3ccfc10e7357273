//! [`StoreWrapper`]: a store made by wrapping another, writing only what changes.

use std::sync::Arc;

use super::{Indexer, Indexers, ReplaceDiff, Store, StoreOp};
use crate::error::{IndexError, KeyError, StoreError};
use crate::key::ObjectKey;

/// A store that wraps another [`Indexer`] and changes some of what it does (counts, logs,
/// checks, mirrors writes elsewhere): implement [`inner`](Self::inner) and the methods you
/// change; every other method forwards to the inner store. Every type implementing it is a
/// [`Store`] and an [`Indexer`] (hand it to `#[controller(store = ...)]` or
/// `ControllerBuilder::store` as `Arc<dyn Indexer<K>>`).
///
/// **Every write goes through [`apply`](Self::apply) or [`replace`](Self::replace).** The
/// single-object writes of [`Store`] (`add`, `update`, `update_with_key`, `delete`) are
/// made as one-operation batches of `apply`, so a wrapper that watches writes overrides
/// those two and misses none, whichever of them the informer calls (see [`Store`]'s
/// "What an informer calls").
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer_core::store::{StoreOp, StoreWrapper};
/// use informer_core::{Indexer, Store, StoreError, ThreadSafeStore};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// /// Counts the objects written.
/// struct Counting(ThreadSafeStore<ConfigMap>, Arc<AtomicUsize>);
///
/// impl StoreWrapper for Counting {
///     type Object = ConfigMap;
///     fn inner(&self) -> &dyn Indexer<ConfigMap> {
///         &self.0
///     }
///     fn apply(&self, batch: Vec<StoreOp<ConfigMap>>) -> Result<Vec<Option<Arc<ConfigMap>>>, StoreError> {
///         self.1.fetch_add(batch.len(), Ordering::Relaxed);
///         self.0.apply(batch)
///     }
/// }
///
/// let written = Arc::new(AtomicUsize::new(0));
/// let store: Arc<dyn Indexer<ConfigMap>> = Arc::new(Counting(ThreadSafeStore::new(), written.clone()));
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.namespace = Some("default".into());
/// store.add(Arc::new(cm)).unwrap(); // add goes through apply
/// assert_eq!((store.len(), written.load(Ordering::Relaxed)), (1, 1));
/// ```
///
/// On the wrapper's own type (not through `dyn Indexer`), a method both traits have is
/// ambiguous: call it as `Store::len(&wrapper)`.
pub trait StoreWrapper: Send + Sync {
    /// The type of the objects stored.
    type Object;

    /// The store wrapped.
    fn inner(&self) -> &dyn Indexer<Self::Object>;

    /// Every write of objects one by one ([`Store::apply`]; `add`, `update` and `delete`
    /// come here as one-operation batches, and an informer's runs of watch events as one
    /// batch each, since a wrapper [prefers batches](Store::prefers_batches)). Forwards by
    /// default.
    ///
    /// # Errors
    /// As [`Store::apply`].
    fn apply(
        &self,
        batch: Vec<StoreOp<Self::Object>>,
    ) -> Result<Vec<Option<Arc<Self::Object>>>, StoreError> {
        self.inner().apply(batch)
    }

    /// The writes of whole lists ([`Store::replace`]). Forwards by default.
    ///
    /// # Errors
    /// As [`Store::replace`].
    fn replace(
        &self,
        objects: Vec<Arc<Self::Object>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<Self::Object>, StoreError> {
        self.inner().replace(objects, resource_version)
    }

    /// [`Store::get`]. Forwards by default.
    fn get(&self, key: &ObjectKey) -> Option<Arc<Self::Object>> {
        self.inner().get(key)
    }

    /// [`Store::list`]. Forwards by default.
    fn list(&self) -> Vec<Arc<Self::Object>> {
        self.inner().list()
    }

    /// [`Store::list_keys`]. Forwards by default.
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner().list_keys()
    }

    /// [`Store::len`]. Forwards by default.
    fn len(&self) -> usize {
        self.inner().len()
    }

    /// [`Store::is_empty`]: whether [`len`](Self::len) is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`Store::key_of`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Store::key_of`].
    fn key_of(&self, obj: &Self::Object) -> Result<ObjectKey, KeyError> {
        self.inner().key_of(obj)
    }

    /// [`Store::resource_version`]. Forwards by default.
    fn resource_version(&self) -> Option<String> {
        self.inner().resource_version()
    }

    /// [`Store::set_resource_version`]. Forwards by default.
    fn set_resource_version(&self, resource_version: &str) {
        self.inner().set_resource_version(resource_version)
    }

    /// [`Indexer::by_index`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Indexer::by_index`].
    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<Self::Object>>, IndexError> {
        self.inner().by_index(index, value)
    }

    /// [`Indexer::index_keys`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Indexer::index_keys`].
    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        self.inner().index_keys(index, value)
    }

    /// [`Indexer::list_index_values`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Indexer::list_index_values`].
    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        self.inner().list_index_values(index)
    }

    /// [`Indexer::index`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Indexer::index`].
    fn index(&self, index: &str, obj: &Self::Object) -> Result<Vec<Arc<Self::Object>>, IndexError> {
        self.inner().index(index, obj)
    }

    /// [`Indexer::add_indexers`]. Forwards by default.
    ///
    /// # Errors
    /// As [`Indexer::add_indexers`].
    fn add_indexers(&self, indexers: Indexers<Self::Object>) -> Result<(), IndexError> {
        self.inner().add_indexers(indexers)
    }

    /// [`Indexer::index_names`]. Forwards by default.
    fn index_names(&self) -> Vec<String> {
        self.inner().index_names()
    }
}

/// The one previous object a one-operation batch returns.
fn single<K>(
    result: Result<Vec<Option<Arc<K>>>, StoreError>,
) -> Result<Option<Arc<K>>, StoreError> {
    result.map(|mut previous| previous.pop().flatten())
}

impl<W: StoreWrapper> Store<W::Object> for W {
    fn add(&self, obj: Arc<W::Object>) -> Result<Option<Arc<W::Object>>, StoreError> {
        single(StoreWrapper::apply(self, vec![StoreOp::Upsert(obj)]))
    }

    fn update_with_key(
        &self,
        _key: ObjectKey,
        obj: Arc<W::Object>,
    ) -> Result<Option<Arc<W::Object>>, StoreError> {
        // The key is the inner store's to compute: the write goes through `apply`.
        Store::add(self, obj)
    }

    fn key_of(&self, obj: &W::Object) -> Result<ObjectKey, KeyError> {
        StoreWrapper::key_of(self, obj)
    }

    fn prefers_batches(&self) -> bool {
        true // every write is a batch of the inner store's
    }

    fn delete(&self, key: &ObjectKey) -> Option<Arc<W::Object>> {
        single(StoreWrapper::apply(
            self,
            vec![StoreOp::Delete(key.clone())],
        ))
        .ok()
        .flatten()
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<W::Object>> {
        StoreWrapper::get(self, key)
    }

    fn list(&self) -> Vec<Arc<W::Object>> {
        StoreWrapper::list(self)
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        StoreWrapper::list_keys(self)
    }

    fn len(&self) -> usize {
        StoreWrapper::len(self)
    }

    fn is_empty(&self) -> bool {
        StoreWrapper::is_empty(self)
    }

    fn replace(
        &self,
        objects: Vec<Arc<W::Object>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<W::Object>, StoreError> {
        StoreWrapper::replace(self, objects, resource_version)
    }

    fn resource_version(&self) -> Option<String> {
        StoreWrapper::resource_version(self)
    }

    fn set_resource_version(&self, resource_version: &str) {
        StoreWrapper::set_resource_version(self, resource_version)
    }

    fn apply(
        &self,
        batch: Vec<StoreOp<W::Object>>,
    ) -> Result<Vec<Option<Arc<W::Object>>>, StoreError> {
        StoreWrapper::apply(self, batch)
    }
}

impl<W: StoreWrapper> Indexer<W::Object> for W {
    fn add_indexers(&self, indexers: Indexers<W::Object>) -> Result<(), IndexError> {
        StoreWrapper::add_indexers(self, indexers)
    }

    fn index_names(&self) -> Vec<String> {
        StoreWrapper::index_names(self)
    }

    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<W::Object>>, IndexError> {
        StoreWrapper::by_index(self, index, value)
    }

    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        StoreWrapper::index_keys(self, index, value)
    }

    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        StoreWrapper::list_index_values(self, index)
    }

    fn index(&self, index: &str, obj: &W::Object) -> Result<Vec<Arc<W::Object>>, IndexError> {
        StoreWrapper::index(self, index, obj)
    }
}

#[cfg(test)]
pub(crate) mod recording;
#[cfg(test)]
mod tests;
