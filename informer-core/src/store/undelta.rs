//! [`UndeltaStore`]: a [`Store`] that hands its whole content to a function after every
//! write, client-go's `UndeltaStore` (`tools/cache/undelta_store.go`).

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;

use super::{Indexer, Indexers, ReplaceDiff, Store, StoreOp, ThreadSafeStore};
use crate::error::{IndexError, KeyError, StoreError};
use crate::key::{KeyFn, ObjectKey};

/// The function an [`UndeltaStore`] pushes its whole content to.
type PushFn<K> = Box<dyn FnMut(Vec<Arc<K>>) + Send>;

/// A store that, after every write, pushes its complete content to a function: for a
/// consumer that wants whole states, not changes (client-go's kubelet config sources). It
/// keeps its content in another store (a [`ThreadSafeStore`] unless built with
/// [`with_store`](Self::with_store)) and is a [`Store`] itself, so a reflector or informer
/// can fill it.
///
/// # Guarantees
/// - **One push per write.** Every call of a writing method that succeeds
///   ([`add`](Store::add), [`update`](Store::update),
///   [`update_with_key`](Store::update_with_key), [`delete`](Store::delete),
///   [`replace`](Store::replace), [`apply`](Store::apply)) calls the push function exactly
///   once, after the write, with every object the store then holds (in no particular
///   order). That includes a write that changed nothing, such as the delete of an absent
///   key, as in client-go. A whole [`apply`](Store::apply) batch is one write: one push. A
///   write that fails (an object without a key) changes nothing and pushes nothing.
/// - **Pushes are in write order, each with the state its write left.** A mutex is held
///   from the start of each write until its push returns, so writes through this store run
///   one at a time and pushes never overlap; each push gets exactly the content right after
///   its own write. (client-go releases its lock between the write and the list, so two
///   racing writes may both push the state after both; here that cannot happen, provided
///   every write goes through this store and not to the store it wraps directly.)
/// - **Reads push nothing and do not wait for pushes.** [`get`](Store::get),
///   [`list`](Store::list) and the other reads go straight to the wrapped store, without
///   the mutex, so they may see a write whose push has not returned yet.
///   [`set_resource_version`](Store::set_resource_version) and
///   [`add_indexers`](Indexer::add_indexers) change no object and push nothing.
///
/// The push function runs on the writing thread with the mutex held: it may read this store,
/// but must not write to it (that deadlocks). If it panics, the panic reaches the writer,
/// the write stays made, and the next write pushes again.
///
/// # Examples
/// ```
/// use std::sync::{Arc, Mutex};
/// use informer_core::ObjectKey;
/// use informer_core::store::{Store, UndeltaStore};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let pushed = Arc::new(Mutex::new(Vec::new()));
/// let log = pushed.clone();
/// let store = UndeltaStore::new(move |state: Vec<Arc<ConfigMap>>| log.lock().unwrap().push(state.len()));
///
/// for name in ["a", "b"] {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some(name.into());
///     store.add(Arc::new(cm))?;
/// }
/// store.delete(&ObjectKey::cluster("a"));
/// assert_eq!(*pushed.lock().unwrap(), [1, 2, 1]); // the size of the whole state after each write
/// # Ok::<(), informer_core::StoreError>(())
/// ```
pub struct UndeltaStore<K, S = ThreadSafeStore<K>> {
    inner: S,
    /// Held from the start of each write until its push returns.
    push: Mutex<PushFn<K>>,
}

impl<K: Resource> UndeltaStore<K> {
    /// An empty store of Kubernetes objects (a [`ThreadSafeStore`] keyed by
    /// [`resource_key`](crate::resource_key)) that pushes its content to `push` after every
    /// write. client-go's `NewUndeltaStore(push, MetaNamespaceKeyFunc)`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::store::{Store, UndeltaStore};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let store = UndeltaStore::new(|pods: Vec<Arc<Pod>>| println!("{} pods", pods.len()));
    /// assert!(store.is_empty());
    /// ```
    pub fn new(push: impl FnMut(Vec<Arc<K>>) + Send + 'static) -> Self {
        Self::with_store(ThreadSafeStore::new(), push)
    }
}

impl<K> UndeltaStore<K> {
    /// An empty store of any object type (a [`ThreadSafeStore`] keyed by `key_fn`) that
    /// pushes its content to `push` after every write. client-go's `NewUndeltaStore`.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use informer_core::{KeyError, ObjectKey};
    /// use informer_core::store::{Store, UndeltaStore};
    ///
    /// fn key(name: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(name))
    /// }
    /// let last = Arc::new(Mutex::new(Vec::new()));
    /// let seen = last.clone();
    /// let store = UndeltaStore::with_key_fn(key, move |state: Vec<Arc<String>>| *seen.lock().unwrap() = state);
    /// store.replace(vec![Arc::new("a".to_owned())], "1")?;
    /// assert_eq!(*last.lock().unwrap(), [Arc::new("a".to_owned())]);
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>, push: impl FnMut(Vec<Arc<K>>) + Send + 'static) -> Self {
        Self::with_store(ThreadSafeStore::with_key_fn(key_fn), push)
    }
}

impl<K, S> UndeltaStore<K, S> {
    /// A store that keeps its content in `inner` and pushes it to `push` after every write.
    /// `inner` need not be empty; nothing is pushed until the first write.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::store::{ExpirationCache, Store, UndeltaStore};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let inner = ExpirationCache::<ConfigMap>::new(Duration::from_secs(60));
    /// let store = UndeltaStore::with_store(inner, |_: Vec<Arc<ConfigMap>>| {});
    /// assert!(store.resource_version().is_none());
    /// ```
    pub fn with_store(inner: S, push: impl FnMut(Vec<Arc<K>>) + Send + 'static) -> Self {
        Self {
            inner,
            push: Mutex::new(Box::new(push)),
        }
    }
}

impl<K, S: Store<K>> UndeltaStore<K, S> {
    /// Runs `write` on the wrapped store and, if it succeeds, pushes the content, all under
    /// the push mutex.
    fn write<R, E>(&self, write: impl FnOnce(&S) -> Result<R, E>) -> Result<R, E> {
        let mut push = self.push.lock();
        let result = write(&self.inner)?;
        push(self.inner.list());
        Ok(result)
    }
}

impl<K, S: fmt::Debug> fmt::Debug for UndeltaStore<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UndeltaStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<K, S: Store<K>> Store<K> for UndeltaStore<K, S> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.write(|inner| inner.add(obj))
    }

    fn update(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.write(|inner| inner.update(obj))
    }

    fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        self.inner.key_of(obj)
    }

    fn update_with_key(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        self.write(|inner| inner.update_with_key(key, obj))
    }

    fn keys_by_resource_key(&self) -> bool {
        self.inner.keys_by_resource_key()
    }

    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let Ok(deleted) = self.write(|inner| Ok::<_, Infallible>(inner.delete(key)));
        deleted
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.inner.get(key)
    }

    fn list(&self) -> Vec<Arc<K>> {
        self.inner.list()
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner.list_keys()
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError> {
        self.write(|inner| inner.replace(objects, resource_version))
    }

    fn resource_version(&self) -> Option<String> {
        self.inner.resource_version()
    }

    fn set_resource_version(&self, resource_version: &str) {
        self.inner.set_resource_version(resource_version);
    }

    fn apply(&self, batch: Vec<StoreOp<K>>) -> Result<Vec<Option<Arc<K>>>, StoreError> {
        self.write(|inner| inner.apply(batch))
    }
}

/// Indexes are the wrapped store's; registering one changes no object and pushes nothing.
impl<K, S: Indexer<K>> Indexer<K> for UndeltaStore<K, S> {
    fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        self.inner.add_indexers(indexers)
    }

    fn index_names(&self) -> Vec<String> {
        self.inner.index_names()
    }

    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        self.inner.by_index(index, value)
    }

    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        self.inner.index_keys(index, value)
    }

    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        self.inner.list_index_values(index)
    }

    fn index(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        self.inner.index(index, obj)
    }
}

#[cfg(test)]
mod tests;
