//! Typed listers: read-only views of an informer's cache (client-go's generated listers).
//!
//! A [`Lister`] reads the whole cache; [`Lister::namespaced`] gives a [`NamespacedLister`]
//! for one namespace. Reads never contact the server, never copy objects (they return the
//! cached `Arc<K>`) and never panic: a missing object is `None`. An index named by a string
//! that the cache does not have is a typed [`IndexError`]; a typed index ([`Index`]) is
//! registered on first use, and the `try_` reads give the error of a cache (a store of your
//! own) that refuses it, which the plain reads log and read as no objects.

mod index;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use informer_core::{IndexError, Indexer, NAMESPACE_INDEX, ObjectKey};
use kube::Resource;
use kube::core::{Selector, SelectorExt};

pub use index::{ByControllerUid, Index, IndexValues, ensure_index};
pub use informer_core::selector::{SelectorParseError, parse_label_selector};

/// A typed, read-only view of a cache.
///
/// Cheap to clone (one `Arc`). Every method reads the cache as it is at the call: results
/// are consistent within one call (the store's reads are atomic), not across calls.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{ObjectKey, Store, ThreadSafeStore};
/// use informer_runtime::lister::Lister;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let store = Arc::new(ThreadSafeStore::<Pod>::new());
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.namespace = Some("shop".into());
/// pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
/// store.add(Arc::new(pod))?;
///
/// let lister = Lister::new(store);
/// assert!(lister.get(&ObjectKey::new(Some("shop"), "web-0")).is_some());
/// assert!(lister.get(&ObjectKey::new(Some("shop"), "missing")).is_none());
/// assert_eq!(lister.list_by_labels("app=web")?.len(), 1);
/// assert_eq!(lister.namespaced("shop").list().len(), 1);
/// assert!(lister.namespaced("other").get("web-0").is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lister<K> {
    indexer: Arc<dyn Indexer<K>>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("len", &self.indexer.len())
            .finish()
    }
}

fn no_labels() -> &'static BTreeMap<String, String> {
    static EMPTY: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    EMPTY.get_or_init(BTreeMap::new)
}

fn labels_match<K: Resource>(obj: &K, selector: &Selector) -> bool {
    selector.matches(obj.meta().labels.as_ref().unwrap_or_else(|| no_labels()))
}

impl<K> Lister<K> {
    /// A lister over `indexer` (for example [`SharedIndexInformer::indexer`]).
    ///
    /// [`SharedIndexInformer::indexer`]: crate::informer::SharedIndexInformer::indexer
    pub fn new(indexer: Arc<dyn Indexer<K>>) -> Self {
        Self { indexer }
    }

    /// The object with this key, or `None`. A cluster-scoped object's key has no namespace:
    /// `lister.get(&ObjectKey::cluster("node-1"))` (client-go's `nodeLister.Get(name)`); a
    /// namespaced one's, `ObjectKey::new(Some("default"), "web")`, or
    /// `lister.namespaced("default").get("web")`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{ObjectKey, Store, ThreadSafeStore};
    /// use informer_runtime::lister::Lister;
    /// use k8s_openapi::api::core::v1::Node;
    ///
    /// let store = Arc::new(ThreadSafeStore::<Node>::new());
    /// let mut node = Node::default();
    /// node.metadata.name = Some("node-1".into());
    /// store.add(Arc::new(node))?;
    /// let lister = Lister::new(store);
    /// assert!(lister.get(&ObjectKey::cluster("node-1")).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.indexer.get(key)
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.indexer.list()
    }

    /// The number of cached objects.
    pub fn len(&self) -> usize {
        self.indexer.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.indexer.is_empty()
    }

    /// A lister of the objects in namespace `namespace`. As in client-go (`NamespaceAll`)
    /// and controller-runtime (`InNamespace("")`), `""` means every namespace: its lists are
    /// the whole cache's, and its [`get`](NamespacedLister::get) finds a cluster-scoped
    /// object by name.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Store, ThreadSafeStore};
    /// use informer_runtime::lister::Lister;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    /// for ns in ["a", "b"] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some("settings".into());
    ///     cm.metadata.namespace = Some(ns.into());
    ///     store.add(Arc::new(cm))?;
    /// }
    /// let lister = Lister::new(store);
    /// assert_eq!(lister.namespaced("a").list().len(), 1);
    /// assert_eq!(lister.namespaced("").list().len(), 2);
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn namespaced(&self, namespace: &str) -> NamespacedLister<K> {
        NamespacedLister {
            indexer: self.indexer.clone(),
            namespace: Arc::from(namespace),
        }
    }

    /// The objects filed under `value` in the index named `index` (a string-named index,
    /// as registered with `add_indexers`; prefer the typed [`by_index`](Self::by_index)).
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    pub fn by_index_name(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        self.indexer.by_index(index, value)
    }

    /// The keys of the objects filed under `value` in the index named `index`.
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    pub fn index_keys_name(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        self.indexer.index_keys(index, value)
    }

    /// The underlying cache.
    pub fn indexer(&self) -> &Arc<dyn Indexer<K>> {
        &self.indexer
    }
}

impl<K: 'static> Lister<K> {
    /// The objects filed under `value` in index `I` (see [`Index`]), in every namespace:
    /// an index's values are not scoped by namespace (use
    /// [`NamespacedLister::by_index`] for one namespace's). The index is registered on the
    /// cache the first time it is used, unless it was registered up front. Using an index
    /// of another resource does not compile.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Store, ThreadSafeStore};
    /// use informer_runtime::lister::{Index, Lister};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct ByOwnerTeam;
    /// impl Index<ConfigMap> for ByOwnerTeam {
    ///     const NAME: &'static str = "doc::by_owner_team";
    ///     fn values(cm: &ConfigMap) -> Vec<String> {
    ///         cm.metadata.labels.as_ref().and_then(|l| l.get("team").cloned()).into_iter().collect()
    ///     }
    /// }
    ///
    /// let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("settings".into());
    /// cm.metadata.labels = Some([("team".to_string(), "blue".to_string())].into());
    /// store.add(Arc::new(cm))?;
    /// let lister = Lister::new(store);
    /// assert_eq!(lister.by_index::<ByOwnerTeam>("blue").len(), 1);
    /// assert_eq!(lister.index_keys::<ByOwnerTeam>("blue")[0].name(), "settings");
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    ///
    /// The built-in caches never fail this read. A store of your own that refuses to
    /// register the index, or fails the read, is logged as an error (printed on stderr
    /// when no `tracing` subscriber is installed) and read as no objects; use
    /// [`try_by_index`](Self::try_by_index) to handle that failure yourself.
    pub fn by_index<I: Index<K>>(&self, value: &str) -> Vec<Arc<K>> {
        index::read_index::<K, I, _>(&self.indexer, |ix| ix.by_index(I::NAME, value))
    }

    /// [`by_index`](Self::by_index), with the cache's error when it cannot register or
    /// read the index.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::ThreadSafeStore;
    /// use informer_runtime::lister::{ByControllerUid, Lister};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let lister = Lister::new(Arc::new(ThreadSafeStore::<Pod>::new()));
    /// assert!(lister.try_by_index::<ByControllerUid>("rs-uid")?.is_empty());
    /// # Ok::<(), informer_core::IndexError>(())
    /// ```
    pub fn try_by_index<I: Index<K>>(&self, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        index::try_read_index::<K, I, _>(&self.indexer, |ix| ix.by_index(I::NAME, value))
    }

    /// The keys of the objects filed under `value` in index `I`; see
    /// [`by_index`](Self::by_index).
    pub fn index_keys<I: Index<K>>(&self, value: &str) -> Vec<ObjectKey> {
        index::read_index::<K, I, _>(&self.indexer, |ix| ix.index_keys(I::NAME, value))
    }

    /// [`index_keys`](Self::index_keys), with the cache's error when it cannot register
    /// or read the index.
    pub fn try_index_keys<I: Index<K>>(&self, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        index::try_read_index::<K, I, _>(&self.indexer, |ix| ix.index_keys(I::NAME, value))
    }
}

impl<K: Resource> Lister<K> {
    /// The cached objects whose labels match `selector`.
    pub fn list_matching(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut all = self.indexer.list();
        if !selector.selects_all() {
            all.retain(|o| labels_match(&**o, selector));
        }
        all
    }

    /// The cached objects whose labels match the selector string (as `kubectl -l`; see
    /// [`parse_label_selector`]).
    ///
    /// # Errors
    /// [`SelectorParseError`] if the selector is malformed.
    pub fn list_by_labels(&self, selector: &str) -> Result<Vec<Arc<K>>, SelectorParseError> {
        Ok(self.list_matching(&parse_label_selector(selector)?))
    }
}

/// A typed, read-only view of the objects of one namespace of a cache.
///
/// Uses the cache's [`NAMESPACE_INDEX`] when it has one, and otherwise filters by key.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Store, ThreadSafeStore};
/// use informer_runtime::lister::Lister;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
/// for ns in ["a", "b"] {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some("settings".into());
///     cm.metadata.namespace = Some(ns.into());
///     store.add(Arc::new(cm))?;
/// }
/// let in_a = Lister::new(store).namespaced("a");
/// assert_eq!(in_a.namespace(), "a");
/// assert_eq!(in_a.list().len(), 1);
/// assert_eq!(in_a.get("settings").unwrap().metadata.namespace.as_deref(), Some("a"));
/// # Ok::<(), informer_core::StoreError>(())
/// ```
pub struct NamespacedLister<K> {
    indexer: Arc<dyn Indexer<K>>,
    namespace: Arc<str>,
}

impl<K> Clone for NamespacedLister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<K> fmt::Debug for NamespacedLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespacedLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K> NamespacedLister<K> {
    /// The namespace this lister reads.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The object named `name` in this namespace, or `None` (for the lister of `""`, the
    /// cluster-scoped object named `name`).
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        if name.is_empty() {
            return None;
        }
        self.indexer
            .get(&ObjectKey::new(Some(&self.namespace), name))
    }

    /// Every cached object of this namespace (of every namespace for the lister of `""`),
    /// in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        if self.namespace.is_empty() {
            return self.indexer.list();
        }
        match self.indexer.by_index(NAMESPACE_INDEX, &self.namespace) {
            Ok(objects) => objects,
            Err(_) => {
                let ns = Some(&*self.namespace);
                self.indexer
                    .list()
                    .into_iter()
                    .filter(|o| self.indexer.key_of(o).is_ok_and(|k| k.namespace() == ns))
                    .collect()
            }
        }
    }
}

impl<K: 'static> NamespacedLister<K> {
    /// The objects of this namespace filed under `value` in index `I` (see [`Index`]): the
    /// index's objects of every namespace, less those of the others. Only the objects
    /// returned are read (a [`CompactStore`](crate::compact_store::CompactStore) decodes no
    /// others). The index is registered on first use, as with [`Lister::by_index`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Store, ThreadSafeStore};
    /// use informer_runtime::lister::{Index, Lister};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// struct ByTeam;
    /// impl Index<ConfigMap> for ByTeam {
    ///     const NAME: &'static str = "doc::by_team";
    ///     fn values(cm: &ConfigMap) -> Vec<String> {
    ///         cm.metadata.labels.as_ref().and_then(|l| l.get("team").cloned()).into_iter().collect()
    ///     }
    /// }
    ///
    /// let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    /// for ns in ["a", "b"] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some("settings".into());
    ///     cm.metadata.namespace = Some(ns.into());
    ///     cm.metadata.labels = Some([("team".to_string(), "blue".to_string())].into());
    ///     store.add(Arc::new(cm))?;
    /// }
    /// let lister = Lister::new(store);
    /// assert_eq!(lister.by_index::<ByTeam>("blue").len(), 2);
    /// let in_a = lister.namespaced("a").by_index::<ByTeam>("blue");
    /// assert_eq!(in_a.len(), 1);
    /// assert_eq!(in_a[0].metadata.namespace.as_deref(), Some("a"));
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    ///
    /// A failure of the cache is handled as [`Lister::by_index`] handles it; see
    /// [`try_by_index`](Self::try_by_index).
    pub fn by_index<I: Index<K>>(&self, value: &str) -> Vec<Arc<K>> {
        let keys = index::read_index::<K, I, _>(&self.indexer, |ix| ix.index_keys(I::NAME, value));
        self.in_namespace(keys)
    }

    /// [`by_index`](Self::by_index), with the cache's error when it cannot register or
    /// read the index.
    pub fn try_by_index<I: Index<K>>(&self, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let keys =
            index::try_read_index::<K, I, _>(&self.indexer, |ix| ix.index_keys(I::NAME, value))?;
        Ok(self.in_namespace(keys))
    }

    /// The objects of this namespace filed under `value` in the index named `index` (a
    /// string-named index, as registered with `add_indexers`; prefer the typed
    /// [`by_index`](Self::by_index)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::{Indexer, Indexers, Store, ThreadSafeStore};
    /// use informer_runtime::lister::Lister;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    /// let mut indexers: Indexers<ConfigMap> = Indexers::new();
    /// indexers.insert("by-team".into(), Arc::new(|cm: &ConfigMap| {
    ///     cm.metadata.labels.as_ref().and_then(|l| l.get("team").cloned()).into_iter().collect()
    /// }));
    /// store.add_indexers(indexers)?;
    /// for ns in ["a", "b"] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some("settings".into());
    ///     cm.metadata.namespace = Some(ns.into());
    ///     cm.metadata.labels = Some([("team".to_string(), "blue".to_string())].into());
    ///     store.add(Arc::new(cm))?;
    /// }
    /// let lister = Lister::new(store);
    /// assert_eq!(lister.by_index_name("by-team", "blue")?.len(), 2);
    /// assert_eq!(lister.namespaced("a").by_index_name("by-team", "blue")?.len(), 1);
    /// assert!(lister.namespaced("a").by_index_name("no-such-index", "blue").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`IndexError::UnknownIndex`] if no index has that name.
    pub fn by_index_name(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let keys = self.indexer.index_keys(index, value)?;
        Ok(self.in_namespace(keys))
    }

    /// The cached objects of `keys` that are in this namespace (all of them for `""`).
    fn in_namespace(&self, keys: Vec<ObjectKey>) -> Vec<Arc<K>> {
        let every = self.namespace.is_empty();
        keys.into_iter()
            .filter(|key| every || key.namespace() == Some(&*self.namespace))
            .filter_map(|key| self.indexer.get(&key))
            .collect()
    }
}

impl<K: Resource> NamespacedLister<K> {
    /// The objects of this namespace whose labels match `selector`.
    pub fn list_matching(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut all = self.list();
        if !selector.selects_all() {
            all.retain(|o| labels_match(&**o, selector));
        }
        all
    }

    /// The objects of this namespace whose labels match the selector string.
    ///
    /// # Errors
    /// [`SelectorParseError`] if the selector is malformed.
    pub fn list_by_labels(&self, selector: &str) -> Result<Vec<Arc<K>>, SelectorParseError> {
        Ok(self.list_matching(&parse_label_selector(selector)?))
    }
}

#[cfg(test)]
mod tests;
