//! [`WatchOptions`]: where and what a controller watches of an owned or watched type.

use std::any::Any;
use std::fmt;

use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

use super::wiring::{TypedIndex, metadata_informer};
use crate::controller::Filter;
use crate::factory::{InformerParams, NamespacedScope};
use crate::lister::Index;

/// Which namespace a related informer watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum NamespaceChoice {
    #[default]
    Controller,
    All,
    One(String),
}

/// Where and what a controller watches of an owned, watched or child type: namespace,
/// selectors and [`Filter`]s (and, for children, [`create_only`](Self::create_only)). By
/// default: the controller's namespace, no selector, no filter. A cluster-scoped type
/// (`Namespace`, `Node`) is watched cluster-wide whatever the namespace.
///
/// ```
/// use informer_runtime::controller::{Filter, WatchOptions};
/// use k8s_openapi::api::core::v1::Secret;
///
/// let options = WatchOptions::<Secret>::new()
///     .all_namespaces()
///     .labels("app.kubernetes.io/managed-by=shop")
///     .filter(Filter::labels_changed());
/// # let _ = options;
/// ```
pub struct WatchOptions<W> {
    namespace: NamespaceChoice,
    pub(super) label_selector: Option<String>,
    field_selector: Option<String>,
    pub(super) filters: Vec<Filter<W>>,
    pub(super) indexes: Vec<TypedIndex<W>>,
    /// A `MakeInformer<W>` (boxed as `Any`: `InformerHandle` needs `W: Clone`, which this
    /// type does not require).
    pub(super) informer: Option<Box<dyn Any + Send>>,
    /// Children only: create missing children, never change existing ones.
    pub(super) create_only: bool,
}

impl<W> Default for WatchOptions<W> {
    fn default() -> Self {
        Self {
            namespace: NamespaceChoice::Controller,
            label_selector: None,
            field_selector: None,
            filters: Vec::new(),
            indexes: Vec::new(),
            informer: None,
            create_only: false,
        }
    }
}

impl<W> fmt::Debug for WatchOptions<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchOptions")
            .field("namespace", &self.namespace)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("filters", &self.filters)
            .field(
                "indexes",
                &self.indexes.iter().map(|i| i.name).collect::<Vec<_>>(),
            )
            .field("metadata_only", &self.informer.is_some())
            .field("create_only", &self.create_only)
            .finish()
    }
}

impl<W> WatchOptions<W> {
    /// The controller's namespace, no selector, no filter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Watches this namespace instead of the controller's.
    ///
    /// ```
    /// # use informer_runtime::controller::WatchOptions;
    /// # use k8s_openapi::api::core::v1::Secret;
    /// let options = WatchOptions::<Secret>::new().namespace("vault");
    /// # let _ = options;
    /// ```
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = NamespaceChoice::One(namespace.into());
        self
    }

    /// For [children](super::ControllerBuilder::children_with) only: a child that is missing
    /// is created, one that exists is never changed (java-operator-sdk's creator-only
    /// dependent). For what must be made once and kept: a generated password, a key pair.
    ///
    /// - A missing child is created (a `POST`, not an apply), with the controller's marks
    ///   (label, owner reference or owner labels); `409 AlreadyExists` counts as done: the
    ///   cache may not have seen it yet (a controller just restarted against a lagging
    ///   server), and the existing child is kept as it is.
    /// - An existing child is left as it is, whatever the function returns for it now,
    ///   ownership marks included (one orphaned by its parent's orphaning deletion is not
    ///   adopted again).
    /// - A child no longer wanted is deleted, as other children are.
    ///
    /// Without it, children are applied with server-side apply, `force`: a function that
    /// computes a new value (a random password) after a restart, before the cache has the
    /// child, overwrites the one in the cluster.
    ///
    /// Given to `owns_with` or `watches_with`, where nothing is created, building fails with
    /// [`BuildError::CreateOnlyNotChildren`](super::BuildError::CreateOnlyNotChildren).
    ///
    /// ```
    /// # use informer_runtime::controller::{Controller, WatchOptions};
    /// # use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<ConfigMap>::builder(&factory).children_with(
    ///     |cm: &ConfigMap| {
    ///         let mut secret = Secret::default();
    ///         secret.metadata.name = cm.metadata.name.clone();
    ///         secret.string_data = Some([("password".to_owned(), "generated".to_owned())].into());
    ///         Some(secret)
    ///     },
    ///     WatchOptions::new().create_only(),
    /// );
    /// # let _ = builder;
    /// ```
    pub fn create_only(mut self) -> Self {
        self.create_only = true;
        self
    }

    /// Watches every namespace, whatever the controller's namespace.
    ///
    /// ```
    /// # use informer_runtime::controller::WatchOptions;
    /// # use k8s_openapi::api::core::v1::Secret;
    /// let options = WatchOptions::<Secret>::new().all_namespaces();
    /// # let _ = options;
    /// ```
    pub fn all_namespaces(mut self) -> Self {
        self.namespace = NamespaceChoice::All;
        self
    }

    /// Caches only objects matching this label selector (passed to the server).
    ///
    /// ```
    /// # use informer_runtime::controller::WatchOptions;
    /// # use k8s_openapi::api::core::v1::Secret;
    /// let options = WatchOptions::<Secret>::new().labels("app=web");
    /// # let _ = options;
    /// ```
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Caches only objects matching this field selector (passed to the server).
    ///
    /// ```
    /// # use informer_runtime::controller::WatchOptions;
    /// # use k8s_openapi::api::core::v1::Secret;
    /// let options = WatchOptions::<Secret>::new().fields("type=kubernetes.io/tls");
    /// # let _ = options;
    /// ```
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// Adds a filter of enqueueing (all filters must pass; see [`Filter`]).
    ///
    /// ```
    /// # use informer_runtime::controller::WatchOptions;
    /// # use k8s_openapi::api::core::v1::Secret;
    /// use informer_runtime::controller::Filter;
    /// let options = WatchOptions::<Secret>::new().filter(Filter::annotations_changed());
    /// # let _ = options;
    /// ```
    pub fn filter(mut self, filter: Filter<W>) -> Self {
        self.filters.push(filter);
        self
    }

    /// Registers index `I` on the cache of `W` when the controller is built, so it is
    /// filled while the cache fills (otherwise it is registered on first use by
    /// [`Lister::by_index`](crate::lister::Lister::by_index)). Idempotent: another controller may register it too.
    ///
    /// ```
    /// use informer_runtime::controller::WatchOptions;
    /// use informer_runtime::lister::Index;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// struct ByNode;
    /// impl Index<Pod> for ByNode {
    ///     const NAME: &'static str = "doc::by_node";
    ///     fn values(pod: &Pod) -> Vec<String> {
    ///         pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
    ///     }
    /// }
    /// let options = WatchOptions::<Pod>::new().indexed_by::<ByNode>();
    /// # let _ = options;
    /// ```
    pub fn indexed_by<I: Index<W>>(mut self) -> Self
    where
        W: 'static,
    {
        self.indexes.push(TypedIndex::of::<I>());
        self
    }

    /// The informer parameters, given the controller's namespace.
    pub(super) fn params(&self, controller_namespace: Option<&str>) -> InformerParams {
        InformerParams {
            namespace: match &self.namespace {
                NamespaceChoice::Controller => controller_namespace.map(str::to_owned),
                NamespaceChoice::All => None,
                NamespaceChoice::One(ns) => Some(ns.clone()),
            },
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
        }
    }
}

/// What an owned or watched type needs from the controller being built.
impl<C> WatchOptions<PartialObjectMeta<C>>
where
    C: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    C::DynamicType: Default,
    C::Scope: NamespacedScope,
{
    /// Watches only the metadata of `C` (the factory's
    /// [`metadata_informer`](crate::factory::InformerFactory::metadata_informer)): the cache holds
    /// `PartialObjectMeta<C>`, a fraction of the memory of full objects. Enough to map
    /// changes to keys by owner, labels or annotations.
    ///
    /// ```
    /// use informer_runtime::controller::{Controller, WatchOptions};
    /// use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::apps::v1::ReplicaSet;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::core::PartialObjectMeta;
    ///
    /// let factory = InformerFactory::without_client();
    /// let builder = Controller::<ReplicaSet>::builder(&factory)
    ///     .owns_with(WatchOptions::<PartialObjectMeta<Pod>>::new().metadata_only());
    /// # let _ = builder;
    /// ```
    pub fn metadata_only(mut self) -> Self {
        self.informer = Some(Box::new(metadata_informer::<C>()));
        self
    }
}
