//! Typed indexes: an [`Index<K>`] names an index of a cache of `K` and computes its values,
//! so a lister can be asked [`by_index::<I>(value)`](super::Lister::by_index) without a
//! string that could be misspelt or point at another resource's index.
//!
//! `#[indexer(Pod)]` (from `informer-derive`) implements [`Index<Pod>`] for a function; the
//! trait can also be implemented by hand.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use informer_core::{IndexError, Indexer, index_fn};

/// A named index of a cache of `K`: its name and the values an object is filed under.
///
/// The index is registered on a cache the first time a [`Lister`](super::Lister) is asked
/// for it (or up front, by `ControllerBuilder::indexed_by` and `WatchOptions::indexed_by`,
/// so that it is built while the cache fills instead of on first use). Registration is
/// idempotent: an index of the same [`NAME`](Index::NAME) already on the cache is used as is,
/// so names must identify one function; `#[indexer]` uses the function's module path.
///
/// Using an index with the lister of another resource is a compile error.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Store, ThreadSafeStore};
/// use informer_runtime::lister::{Index, Lister};
/// use k8s_openapi::api::core::v1::Pod;
///
/// /// Pods by the node they run on.
/// struct ByNode;
///
/// impl Index<Pod> for ByNode {
///     const NAME: &'static str = "example::by_node";
///     fn values(pod: &Pod) -> Vec<String> {
///         pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     }
/// }
///
/// let store = Arc::new(ThreadSafeStore::<Pod>::new());
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-0".into());
/// pod.metadata.namespace = Some("shop".into());
/// pod.spec = Some(Default::default());
/// pod.spec.as_mut().unwrap().node_name = Some("node-1".into());
/// store.add(Arc::new(pod))?;
///
/// let pods = Lister::new(store);
/// assert_eq!(pods.by_index::<ByNode>("node-1").len(), 1);
/// assert!(pods.by_index::<ByNode>("node-2").is_empty());
/// # Ok::<(), informer_core::StoreError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an index of `{K}`",
    label = "`{Self}` does not index `{K}`",
    note = "an index made with `#[indexer(T)]` can only be used with the lister of `T`, and listed only beside `T` in `#[controller(...)]`"
)]
pub trait Index<K>: 'static {
    /// The index's name in the cache; unique per index function.
    const NAME: &'static str;

    /// The values `obj` is filed under (none: the object is not in the index).
    fn values(obj: &K) -> Vec<String>;
}

/// What an index function may return: the values an object is filed under.
///
/// Lets `#[indexer]` functions return `Vec<String>`, `Option<String>`, a `String`, or a
/// set of strings, whichever reads best.
///
/// ```
/// use informer_runtime::lister::IndexValues;
///
/// assert_eq!(Some("a".to_string()).into_index_values(), vec!["a"]);
/// assert!(None::<String>.into_index_values().is_empty());
/// assert_eq!("b".to_string().into_index_values(), vec!["b"]);
/// ```
#[diagnostic::on_unimplemented(
    message = "an index function cannot return `{Self}`",
    label = "return the values the object is filed under",
    note = "return `Vec<String>`, `Option<String>`, `String`, or a set of `String`s"
)]
pub trait IndexValues {
    /// The values, in any order; duplicates are ignored by the store.
    fn into_index_values(self) -> Vec<String>;
}

impl IndexValues for Vec<String> {
    fn into_index_values(self) -> Vec<String> {
        self
    }
}

impl IndexValues for Option<String> {
    fn into_index_values(self) -> Vec<String> {
        self.into_iter().collect()
    }
}

impl IndexValues for String {
    fn into_index_values(self) -> Vec<String> {
        vec![self]
    }
}

impl IndexValues for BTreeSet<String> {
    fn into_index_values(self) -> Vec<String> {
        self.into_iter().collect()
    }
}

impl<S: std::hash::BuildHasher> IndexValues for HashSet<String, S> {
    fn into_index_values(self) -> Vec<String> {
        self.into_iter().collect()
    }
}

/// Registers index `I` on `indexer` unless an index of that name is there already.
///
/// ```
/// use informer_core::{Indexer, ThreadSafeStore};
/// use informer_runtime::lister::{Index, ensure_index};
/// use k8s_openapi::api::core::v1::Pod;
///
/// struct ByNode;
/// impl Index<Pod> for ByNode {
///     const NAME: &'static str = "doc::by_node";
///     fn values(pod: &Pod) -> Vec<String> {
///         pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
///     }
/// }
///
/// let store = ThreadSafeStore::<Pod>::new();
/// ensure_index::<Pod, ByNode>(&store)?;
/// ensure_index::<Pod, ByNode>(&store)?; // already there: nothing to do
/// assert_eq!(store.index_names().iter().filter(|n| *n == ByNode::NAME).count(), 1);
/// # Ok::<(), informer_core::IndexError>(())
/// ```
///
/// # Errors
/// None in practice: a concurrent registration of the same name counts as success. The
/// `Result` carries whatever else a user-written [`Indexer`] may report.
pub fn ensure_index<K, I>(indexer: &dyn Indexer<K>) -> Result<(), IndexError>
where
    K: 'static,
    I: Index<K>,
{
    if indexer.index_names().iter().any(|n| n == I::NAME) {
        return Ok(());
    }
    let indexers = [(I::NAME.to_owned(), index_fn(I::values))].into();
    match indexer.add_indexers(indexers) {
        Ok(()) | Err(IndexError::Conflict(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs `read` against index `I` of `indexer`, registering the index on first use.
pub(super) fn try_read_index<K, I, T>(
    indexer: &Arc<dyn Indexer<K>>,
    read: impl Fn(&dyn Indexer<K>) -> Result<Vec<T>, IndexError>,
) -> Result<Vec<T>, IndexError>
where
    K: 'static,
    I: Index<K>,
{
    match read(&**indexer) {
        Err(IndexError::UnknownIndex(_)) => {
            ensure_index::<K, I>(&**indexer)?;
            read(&**indexer)
        }
        result => result,
    }
}

/// [`try_read_index`], a failure logged (and printed on stderr when no `tracing`
/// subscriber is installed) and read as no objects.
pub(super) fn read_index<K, I, T>(
    indexer: &Arc<dyn Indexer<K>>,
    read: impl Fn(&dyn Indexer<K>) -> Result<Vec<T>, IndexError>,
) -> Vec<T>
where
    K: 'static,
    I: Index<K>,
{
    try_read_index::<K, I, T>(indexer, read).unwrap_or_else(|e| {
        tracing::error!(index = I::NAME, error = %e, "index read failed; read as no objects");
        crate::fallback::report(format_args!(
            "index {} could not be read (read as no objects): {e}",
            I::NAME
        ));
        Vec::new()
    })
}

/// The index every owner-based controller needs: objects by the UID of their controlling
/// owner (the owner reference with `controller: true`), as client-go's ReplicaSet and
/// Deployment controllers keep. An index of every resource type.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Store, ThreadSafeStore};
/// use informer_runtime::lister::{ByControllerUid, Lister};
/// use k8s_openapi::api::core::v1::Pod;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
///
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web-1".into());
/// pod.metadata.namespace = Some("shop".into());
/// pod.metadata.owner_references = Some(vec![OwnerReference {
///     uid: "rs-uid".into(),
///     controller: Some(true),
///     ..Default::default()
/// }]);
/// let store = Arc::new(ThreadSafeStore::<Pod>::new());
/// store.add(Arc::new(pod))?;
/// let pods = Lister::new(store);
/// assert_eq!(pods.by_index::<ByControllerUid>("rs-uid").len(), 1);
/// # Ok::<(), informer_core::StoreError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ByControllerUid;

impl<K: kube::Resource + 'static> Index<K> for ByControllerUid {
    const NAME: &'static str = "informer::by_controller_uid";

    fn values(obj: &K) -> Vec<String> {
        obj.meta()
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .map(|r| r.uid.clone())
            .into_iter()
            .collect()
    }
}
