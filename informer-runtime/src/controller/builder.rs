//! [`ControllerBuilder`]: the plain-Rust API that wires a controller (and that
//! `#[derive(Controller)]` generates calls to).

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer_core::queue::QueueMetrics;
use informer_core::{
    IndexError, Indexer, Indexers, ListerWatcher, ObjectKey, PriorityQueue, Queue, WorkQueue,
};
use kube::Client;
use kube::api::ListParams;
use kube::core::{NamespaceScope, PartialObjectMeta};
use serde::de::DeserializeOwned;

use super::enqueue::{EnqueueHandler, MapperFn, Mapping};
use super::filter::Filter;
use super::owner::OwnerMatcher;
use super::probe::Probe;
use super::reconciler::Reconciler;
use super::runner::{Runner, RunnerState};
use super::source::{InformerSource, Source, Sources};
use super::{Controller, ControllerResource, ControllerScope};
use crate::factory::{InformerFactory, InformerHandle, InformerParams};
use crate::informer::{HandlerOptions, SharedIndexInformer};
use crate::lister::{Index, Lister, ensure_index};
use crate::lister_watcher::KubeListerWatcher;
use crate::metrics::WorkqueueHooks;
use crate::reflector::ReflectorConfig;

/// How long reconciles in flight may run after shutdown starts, by default.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The controller could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// An index name given with [`ControllerBuilder::index`] is already registered on the
    /// (shared) primary informer, say by another controller. Use a distinct name, or read
    /// the existing index.
    #[error("cannot add index {name:?} to the cache of {informer}: {source}")]
    Index {
        /// The index name.
        name: String,
        /// The informer.
        informer: String,
        /// The store's error.
        source: informer_core::IndexError,
    },
    /// [`ControllerBuilder::store`] needs a source for the private informer: build with
    /// [`Controller::with_client`], [`ControllerBuilder::client`] or [`ControllerBuilder::source`].
    #[error(
        "a custom store needs a client or a source to fill it: set ControllerBuilder::client or ::source"
    )]
    StoreWithoutSource,
    /// The store given to [`ControllerBuilder::store`] already holds objects; it must be
    /// empty (an informer fills it).
    #[error("the custom store must be empty; it holds {0} objects")]
    StoreNotEmpty(usize),
}

/// Registers a typed index on a cache (idempotent), reporting its name on failure.
struct TypedIndex<K> {
    name: &'static str,
    ensure: fn(&dyn Indexer<K>) -> Result<(), IndexError>,
}

impl<K: 'static> TypedIndex<K> {
    fn of<I: Index<K>>() -> Self {
        Self {
            name: I::NAME,
            ensure: ensure_index::<K, I>,
        }
    }
}

/// Registers every typed index of `indexes` on `indexer`.
fn ensure_indexes<K>(
    indexes: &[TypedIndex<K>],
    indexer: &dyn Indexer<K>,
    informer: impl Fn() -> String,
) -> Result<(), BuildError> {
    for index in indexes {
        (index.ensure)(indexer).map_err(|source| BuildError::Index {
            name: index.name.to_owned(),
            informer: informer(),
            source,
        })?;
    }
    Ok(())
}

/// Gets the shared informer of a type from the factory, when the default (a full-object
/// informer of the type's scope) is not the one wanted.
type MakeInformer<K> =
    Box<dyn FnOnce(&InformerFactory, InformerParams) -> InformerHandle<K> + Send>;

/// The factory's metadata-only informer of `C`, as a [`MakeInformer`].
fn metadata_informer<C>() -> MakeInformer<PartialObjectMeta<C>>
where
    C: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    C::DynamicType: Default,
    C::Scope: NamespaceScope,
{
    Box::new(|factory, params| factory.metadata_informer::<C>(params))
}

/// Builds a queue, given the metric hooks to install in it.
type MakeQueue = Box<dyn FnOnce(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> + Send>;

enum QueueChoice {
    Work,
    Priority,
    Custom(MakeQueue),
}

/// Which namespace a related informer watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum NamespaceChoice {
    #[default]
    Controller,
    All,
    One(String),
}

/// Where and what a controller watches of an owned or watched type: namespace, selectors
/// and [`Filter`]s. By default: the controller's namespace, no selector, no filter.
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
    label_selector: Option<String>,
    field_selector: Option<String>,
    filters: Vec<Filter<W>>,
    indexes: Vec<TypedIndex<W>>,
    /// A `MakeInformer<W>` (boxed as `Any`: `InformerHandle` needs `W: Clone`, which this
    /// type does not require).
    informer: Option<Box<dyn Any + Send>>,
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
    /// [`Lister::by_index`]). Idempotent: another controller may register it too.
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

    fn params(&self, controller_namespace: Option<&str>) -> InformerParams {
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
    C::Scope: NamespaceScope,
{
    /// Watches only the metadata of `C` (the factory's
    /// [`metadata_informer`](InformerFactory::metadata_informer)): the cache holds
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

struct RelatedContext<'a> {
    factory: &'a InformerFactory,
    namespace: Option<&'a str>,
    queue: &'a Arc<dyn Queue<ObjectKey>>,
    controller: &'a str,
    owner: &'a OwnerMatcher,
}

/// An owned or watched type, once wired.
pub(crate) struct Related {
    pub(crate) source: Arc<dyn Source>,
    pub(crate) lister: (TypeId, Box<dyn Any + Send + Sync>),
}

type RelatedFn = Box<dyn FnOnce(&RelatedContext<'_>) -> Result<Related, BuildError> + Send>;

/// Builds a [`Controller`] for resource `K`: what it watches, how keys are queued, how many
/// workers reconcile them.
///
/// Every informer comes from one [`InformerFactory`], by identity (type, namespace,
/// selectors): two controllers watching Pods in the same namespace share one informer, so
/// one list and one watch. To use a custom [`ListerWatcher`] for some type (tests, other
/// sources), register it in the factory first with
/// [`InformerFactory::informer_from`] and the same parameters, or, for the primary type,
/// pass it to [`source`](Self::source).
///
/// | method | default |
/// | --- | --- |
/// | [`name`](Self::name) | the kind of `K`, lowercase (`deployment`) |
/// | [`namespace`](Self::namespace), [`label_selector`](Self::label_selector), [`field_selector`](Self::field_selector) | every namespace, no selector |
/// | [`owns`](Self::owns), [`watches`](Self::watches) | nothing |
/// | [`filter`](Self::filter) | none: every change of `K` is queued |
/// | [`workers`](Self::workers) | 1 |
/// | [`queue`](Self::queue), [`queue_with`](Self::queue_with), [`priority_queue`](Self::priority_queue) | a [`WorkQueue`] with client-go's default controller rate limiter |
/// | [`store`](Self::store), [`source`](Self::source) | the factory's shared informer and cache |
/// | [`resync`](Self::resync) | none |
/// | [`timeout`](Self::timeout) | none |
/// | [`shutdown_timeout`](Self::shutdown_timeout) | [`DEFAULT_SHUTDOWN_TIMEOUT`] (30 s) |
/// | [`index`](Self::index) | none |
///
/// ```no_run
/// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{Action, Controller, Filter, reconciler_fn};
/// use informer_runtime::factory::InformerFactory;
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use tokio_util::sync::CancellationToken;
///
/// let factory = InformerFactory::new(client);
/// let controller = Controller::<Deployment>::builder(&factory)
///     .namespace("shop")
///     .owns::<ReplicaSet>()
///     .watches::<ConfigMap>(|cm| {
///         // Every Deployment named in the ConfigMap's "deployment" entry.
///         cm.data.as_ref().and_then(|d| d.get("deployment"))
///             .map(|name| vec![ObjectKey::new(cm.metadata.namespace.as_deref(), name)])
///             .unwrap_or_default()
///     })
///     .filter(Filter::generation_changed())
///     .workers(4)
///     .priority_queue()
///     .timeout(Duration::from_secs(60))
///     .build(reconciler_fn(|key, deployment: Option<Arc<Deployment>>| async move {
///         let _ = (key, deployment);
///         Ok(Action::Done)
///     }))?;
/// let lister = controller.lister();
/// controller.run(CancellationToken::new()).await;
/// # let _ = lister;
/// # Ok(()) }
/// ```
#[must_use = "call build() to get the controller"]
pub struct ControllerBuilder<K: ControllerResource> {
    factory: InformerFactory,
    client: Option<Client>,
    name: Option<String>,
    params: InformerParams,
    workers: usize,
    queue: QueueChoice,
    store: Option<Arc<dyn Indexer<K>>>,
    source: Option<Arc<dyn ListerWatcher<K>>>,
    resync: Option<Duration>,
    timeout: Option<Duration>,
    shutdown_timeout: Duration,
    indexers: Vec<(String, informer_core::IndexFn<K>)>,
    typed_indexes: Vec<TypedIndex<K>>,
    informer: Option<MakeInformer<K>>,
    filters: Vec<Filter<K>>,
    related: Vec<RelatedFn>,
    hooks: Arc<WorkqueueHooks>,
}

impl<K: ControllerResource> fmt::Debug for ControllerBuilder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("name", &self.name)
            .field("params", &self.params)
            .field("workers", &self.workers)
            .field("related", &self.related.len())
            .field("filters", &self.filters)
            .field("resync", &self.resync)
            .field("timeout", &self.timeout)
            .field("custom_store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: ControllerResource> ControllerBuilder<K> {
    /// A builder taking every informer from `factory`.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use informer_runtime::controller::ControllerBuilder;
    /// let builder = ControllerBuilder::<Pod>::new(&factory);
    /// # let _ = builder;
    /// ```
    pub fn new(factory: &InformerFactory) -> Self {
        Self {
            factory: factory.clone(),
            client: factory.client().cloned(),
            name: None,
            params: InformerParams::default(),
            workers: 1,
            queue: QueueChoice::Work,
            store: None,
            source: None,
            resync: None,
            timeout: None,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            indexers: Vec::new(),
            typed_indexes: Vec::new(),
            informer: None,
            filters: Vec::new(),
            related: Vec::new(),
            hooks: Arc::new(WorkqueueHooks::new()),
        }
    }

    /// The controller's name: the `controller` and workqueue `name` labels of its metrics, and
    /// its logs. Default: the kind of `K` in lowercase. Names must be unique within a
    /// [`Manager`](crate::manager::Manager).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).name("pod-janitor");
    /// # let _ = builder;
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The client a custom [`store`](Self::store) is filled through (not needed otherwise:
    /// shared informers list through the factory's client).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # fn demo(client: kube::Client) {
    /// let factory = InformerFactory::new(client.clone());
    /// let builder = Controller::<Pod>::builder(&factory).client(client);
    /// # let _ = builder;
    /// # }
    /// ```
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self
    }

    /// Watches `K` (and, by default, owned and watched types) only in `namespace`. Ignored
    /// for cluster-scoped types.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).namespace("shop");
    /// # let _ = builder;
    /// ```
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.params.namespace = Some(namespace.into());
        self
    }

    /// Caches only objects of `K` matching this label selector (passed to the server).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).label_selector("app=web,tier!=cache");
    /// # let _ = builder;
    /// ```
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.params.label_selector = Some(selector.into());
        self
    }

    /// Caches only objects of `K` matching this field selector (passed to the server).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).field_selector("spec.nodeName=node-1");
    /// # let _ = builder;
    /// ```
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.params.field_selector = Some(selector.into());
        self
    }

    /// Reconciles the controlling owner of each `C` that changes: a `C` whose
    /// `ownerReferences` has an entry with `controller: true` and the kind and API group of
    /// `K` (see [`controller_owner`](crate::controller::controller_owner)) queues that
    /// owner's key. On an update, the owners of both the old and the new object are queued
    /// (an owner that lost its child hears of it). `C` is watched in the controller's
    /// namespace.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// let builder = Controller::<Deployment>::builder(&factory).owns::<ReplicaSet>();
    /// # let _ = builder;
    /// ```
    pub fn owns<C: ControllerResource>(self) -> Self {
        self.owns_with::<C>(WatchOptions::new())
    }

    /// As [`owns`](Self::owns), with a namespace, selectors or filters for `C`.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use informer_runtime::controller::{Filter, WatchOptions};
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// let builder = Controller::<Deployment>::builder(&factory)
    ///     .owns_with(WatchOptions::<ReplicaSet>::new().filter(Filter::generation_changed()));
    /// # let _ = builder;
    /// ```
    pub fn owns_with<C: ControllerResource>(mut self, options: WatchOptions<C>) -> Self {
        self.related.push(Box::new(move |ctx: &RelatedContext<'_>| {
            let mapping = Mapping::Owner(ctx.owner.clone());
            related::<C>(ctx, "owns", mapping, options)
        }));
        self
    }

    /// Reconciles the keys `mapper` returns for each `W` that changes (for an update: the
    /// keys of both the old and the new object, without duplicates). `mapper` runs on the
    /// informer's notification task for this controller: it must be quick (read listers, do
    /// not call the API server). `W` is watched in the controller's namespace.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use informer_core::ObjectKey;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// // Every Pod named in the ConfigMap's "pods" entry (comma separated).
    /// let builder = Controller::<Pod>::builder(&factory).watches::<ConfigMap>(|cm| {
    ///     let ns = cm.metadata.namespace.as_deref();
    ///     cm.data.as_ref().and_then(|d| d.get("pods")).map_or(Vec::new(), |names| {
    ///         names.split(',').map(|n| ObjectKey::new(ns, n.trim())).collect()
    ///     })
    /// });
    /// # let _ = builder;
    /// ```
    pub fn watches<W: ControllerResource>(
        self,
        mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.watches_with(mapper, WatchOptions::new())
    }

    /// As [`watches`](Self::watches), with a namespace, selectors or filters for `W`.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use informer_core::ObjectKey;
    /// use informer_runtime::controller::WatchOptions;
    /// use k8s_openapi::api::core::v1::Node;
    /// // Node changes reconcile one well-known Pod.
    /// let builder = Controller::<Pod>::builder(&factory).namespace("ops").watches_with(
    ///     |_node: &Node| vec![ObjectKey::new(Some("ops"), "node-reporter")],
    ///     WatchOptions::new().labels("node-role.kubernetes.io/worker"),
    /// );
    /// # let _ = builder;
    /// ```
    pub fn watches_with<W: ControllerResource>(
        mut self,
        mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
        options: WatchOptions<W>,
    ) -> Self {
        let mapper: MapperFn<W> = Arc::new(mapper);
        self.related.push(Box::new(move |ctx: &RelatedContext<'_>| {
            related::<W>(ctx, "watches", Mapping::Mapper(mapper), options)
        }));
        self
    }

    /// Queues a change of `K` only if `filter` passes (all filters must pass). A filter of
    /// enqueueing, not of the cache: see [`Filter`].
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use informer_runtime::controller::Filter;
    /// let builder = Controller::<Pod>::builder(&factory).filter(Filter::labels_changed());
    /// # let _ = builder;
    /// ```
    pub fn filter(mut self, filter: Filter<K>) -> Self {
        self.filters.push(filter);
        self
    }

    /// How many keys are reconciled at once (never the same key twice at once).
    ///
    /// # Panics
    /// If `workers` is zero (a programmer error, as tokio's `worker_threads(0)`).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).workers(8);
    /// # let _ = builder;
    /// ```
    pub fn workers(mut self, workers: usize) -> Self {
        assert!(workers >= 1, "a controller needs at least one worker");
        self.workers = workers;
        self
    }

    /// Uses `queue` instead of a new [`WorkQueue`]. Build it with the controller's
    /// [`queue_metrics`](Self::queue_metrics) installed (`QueueBuilder::metrics`) to keep
    /// `workqueue_adds_total` and `workqueue_queue_duration_seconds`; otherwise they stay
    /// empty. The queue must not be shared with another controller.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::sync::Arc;
    /// use informer_core::WorkQueue;
    /// let builder = Controller::<Pod>::builder(&factory).queue(Arc::new(WorkQueue::new()));
    /// # let _ = builder;
    /// ```
    pub fn queue(self, queue: Arc<dyn Queue<ObjectKey>>) -> Self {
        self.queue_with(move |_| queue)
    }

    /// The metric hooks the controller's queue reports to: install them in a queue built
    /// for [`queue`](Self::queue) (the built-in queues and [`queue_with`](Self::queue_with)
    /// get them automatically).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::sync::Arc;
    /// use informer_core::WorkQueue;
    /// let builder = Controller::<Pod>::builder(&factory);
    /// let queue = WorkQueue::builder().metrics(builder.queue_metrics()).build();
    /// let builder = builder.queue(Arc::new(queue));
    /// # let _ = builder;
    /// ```
    pub fn queue_metrics(&self) -> Arc<dyn QueueMetrics> {
        self.hooks.clone()
    }

    /// Uses the queue `make` builds, given the controller's metric hooks to install in it
    /// (with `QueueBuilder::metrics`), say to choose another rate limiter.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::queue::{ItemExponentialFailureRateLimiter, PriorityQueue};
    /// use informer_runtime::controller::Controller;
    /// use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).queue_with(|hooks| {
    ///     Arc::new(
    ///         PriorityQueue::builder()
    ///             .name("pods")
    ///             .rate_limiter(ItemExponentialFailureRateLimiter::new(
    ///                 Duration::from_millis(100),
    ///                 Duration::from_secs(300),
    ///             ))
    ///             .metrics(hooks)
    ///             .build(),
    ///     )
    /// });
    /// # let _ = builder;
    /// ```
    pub fn queue_with(
        mut self,
        make: impl FnOnce(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> + Send + 'static,
    ) -> Self {
        self.queue = QueueChoice::Custom(Box::new(make));
        self
    }

    /// Uses a [`PriorityQueue`]: keys of the initial list and of resyncs wait behind keys
    /// of real changes, so a restart never delays fresh changes behind thousands of no-op
    /// reconciles.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).priority_queue();
    /// # let _ = builder;
    /// ```
    pub fn priority_queue(mut self) -> Self {
        self.queue = QueueChoice::Priority;
        self
    }

    /// Fills `store` instead of sharing the factory's cache of `K`: the controller gets its
    /// own informer (one more list and watch of `K`), run by the controller. The store must
    /// be empty. Its source is [`source`](Self::source) if set, otherwise `K`'s API through
    /// the [client](Self::client) (with the reflector's default settings).
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::sync::Arc;
    /// use informer_core::ThreadSafeStore;
    /// use informer_testing::MemoryListerWatcher;
    /// let builder = Controller::<Pod>::builder(&factory)
    ///     .store(Arc::new(ThreadSafeStore::<Pod>::new()))
    ///     .source(Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _ = builder;
    /// ```
    pub fn store(mut self, store: Arc<dyn Indexer<K>>) -> Self {
        self.store = Some(store);
        self
    }

    /// Lists and watches `K` through `source` instead of the factory's client. Without a
    /// [`store`](Self::store), the informer is still the factory's, shared by identity: if
    /// the factory already has one for `K` with these parameters, that one is used and
    /// `source` is not.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::sync::Arc;
    /// use informer_testing::MemoryListerWatcher;
    /// let builder = Controller::<Pod>::builder(&factory).source(Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _ = builder;
    /// ```
    pub fn source(mut self, source: Arc<dyn ListerWatcher<K>>) -> Self {
        self.source = Some(source);
        self
    }

    /// Every `period`, every cached `K` is queued again (at low priority), even if nothing
    /// changed. `None` or zero: never (the default). At least one second.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::time::Duration;
    /// let builder = Controller::<Pod>::builder(&factory).resync(Duration::from_secs(600));
    /// # let _ = builder;
    /// ```
    pub fn resync(mut self, period: impl Into<Option<Duration>>) -> Self {
        self.resync = period.into();
        self
    }

    /// A reconcile still running after `timeout` is dropped and counts as a transient error.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::time::Duration;
    /// let builder = Controller::<Pod>::builder(&factory).timeout(Duration::from_secs(120));
    /// # let _ = builder;
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// On shutdown, how long reconciles in flight may run before they are dropped.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// use std::time::Duration;
    /// let builder = Controller::<Pod>::builder(&factory).shutdown_timeout(Duration::from_secs(10));
    /// # let _ = builder;
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Adds an index to the cache of `K` (read it through
    /// [`Lister::by_index`](crate::lister::Lister::by_index)). The cache may be shared: the
    /// name must not be registered already.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).index("node", |pod: &Pod| {
    ///     pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
    /// });
    /// # let _ = builder;
    /// ```
    pub fn index(
        mut self,
        name: impl Into<String>,
        index: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.indexers.push((name.into(), Arc::new(index)));
        self
    }

    /// Registers the typed index `I` on the cache of `K` when the controller is built (see
    /// [`WatchOptions::indexed_by`]); read it with [`Lister::by_index`]. Idempotent, unlike
    /// [`index`](Self::index): controllers sharing the cache may all register it.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
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
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).indexed_by::<ByNode>();
    /// # let _ = builder;
    /// ```
    pub fn indexed_by<I: Index<K>>(mut self) -> Self {
        self.typed_indexes.push(TypedIndex::of::<I>());
        self
    }

    /// Builds the controller with `reconciler`. Its handlers are registered at once (keys
    /// start queueing as soon as the informers run); nothing is reconciled before
    /// [`Controller::run`] (or a [`Manager`](crate::manager::Manager)) runs it.
    ///
    /// # Errors
    /// See [`BuildError`].
    ///
    /// # Panics
    /// As [`InformerFactory::informer`]: if an informer must be created by a factory made
    /// with [`InformerFactory::without_client`] (register it first with
    /// [`InformerFactory::informer_from`]).
    pub fn build(
        self,
        reconciler: impl Reconciler<K> + 'static,
    ) -> Result<Controller<K>, BuildError> {
        let dt = K::DynamicType::default();
        let name: Arc<str> = self
            .name
            .clone()
            .unwrap_or_else(|| K::kind(&dt).to_lowercase())
            .into();
        let hooks = self.hooks;
        let queue: Arc<dyn Queue<ObjectKey>> = match self.queue {
            QueueChoice::Work => Arc::new(
                WorkQueue::builder()
                    .name(&*name)
                    .metrics(hooks.clone())
                    .build(),
            ),
            QueueChoice::Priority => Arc::new(
                PriorityQueue::builder()
                    .name(&*name)
                    .metrics(hooks.clone())
                    .build(),
            ),
            QueueChoice::Custom(make) => make(hooks.clone()),
        };

        let (informer, primary) = match (self.store, self.source) {
            (Some(store), source) => {
                if !store.is_empty() {
                    return Err(BuildError::StoreNotEmpty(store.len()));
                }
                // As the factory's own informers: managed fields dropped if it drops them.
                let drop_managed_fields = self.factory.drops_managed_fields();
                let lw: Arc<dyn ListerWatcher<K>> = match (source, self.client) {
                    (Some(lw), _) => lw,
                    (None, Some(client)) => Arc::new(
                        KubeListerWatcher::new(<K::Scope as ControllerScope>::api::<K>(
                            client,
                            self.params.namespace.as_deref(),
                        ))
                        .dropping_managed_fields(drop_managed_fields),
                    ),
                    (None, None) => return Err(BuildError::StoreWithoutSource),
                };
                let config = ReflectorConfig {
                    list_params: ListParams {
                        label_selector: self.params.label_selector.clone(),
                        field_selector: self.params.field_selector.clone(),
                        ..ReflectorConfig::default().list_params
                    },
                    ..ReflectorConfig::default()
                };
                let mut informer = SharedIndexInformer::builder(lw)
                    .store(store)
                    .reflector_config(config);
                if drop_managed_fields {
                    informer = informer.drop_managed_fields();
                }
                let informer = informer.build();
                let label = format!(
                    "{}.{} (cache of controller {name})",
                    K::plural(&dt),
                    K::version(&dt)
                );
                (informer, Primary::Private(label))
            }
            (None, source) => {
                let handle = match (source, self.informer) {
                    (Some(lw), _) => self.factory.informer_from(self.params.clone(), move || lw),
                    (None, Some(make)) => make(&self.factory, self.params.clone()),
                    (None, None) => <K::Scope as ControllerScope>::informer::<K>(
                        &self.factory,
                        self.params.clone(),
                    ),
                };
                (handle.informer().clone(), Primary::Shared(handle))
            }
        };

        if !self.indexers.is_empty() {
            let names: Vec<String> = self.indexers.iter().map(|(n, _)| n.clone()).collect();
            let indexers: Indexers<K> = self.indexers.into_iter().collect();
            if let Err(source) = informer.add_indexers(indexers) {
                return Err(BuildError::Index {
                    name: names.join(","),
                    informer: primary.label(),
                    source,
                });
            }
        }

        ensure_indexes(&self.typed_indexes, &*informer.indexer(), || {
            primary.label()
        })?;

        let handler = EnqueueHandler::new(queue.clone(), Mapping::Own, self.filters);
        let registration = informer.add_handler_with(
            handler,
            HandlerOptions::new()
                .name(name.to_string())
                .resync_period(self.resync),
        );
        let primary: Arc<dyn Source> = match primary {
            Primary::Private(label) => Arc::new(InformerSource::private(
                label,
                informer.clone(),
                name.to_string(),
                registration,
            )),
            Primary::Shared(handle) => Arc::new(InformerSource::shared(
                &self.factory,
                handle,
                name.to_string(),
                registration,
            )),
        };

        let owner = OwnerMatcher::of::<K>();
        let ctx = RelatedContext {
            factory: &self.factory,
            namespace: self.params.namespace.as_deref(),
            queue: &queue,
            controller: &name,
            owner: &owner,
        };
        let mut sources = vec![primary];
        let mut listers = Vec::with_capacity(self.related.len());
        for wire in self.related {
            let related = wire(&ctx)?;
            sources.push(related.source);
            listers.push(related.lister);
        }

        let state = Arc::new(RunnerState::new(name, queue, hooks, self.workers));
        let runner = Arc::new(Runner {
            state,
            reconciler: Arc::new(reconciler),
            cache: informer.store(),
            timeout: self.timeout,
            shutdown_timeout: self.shutdown_timeout,
        });
        let sources = Arc::new(Sources::new(sources));
        let probe = Arc::new(Probe {
            state: runner.state.clone(),
            sources: sources.clone(),
        });
        Ok(Controller {
            runner,
            sources,
            probe,
            lister: informer.lister(),
            listers,
            factory: self.factory,
        })
    }
}

/// The primary informer before its handler is registered.
enum Primary<K: Clone> {
    /// The controller's own informer (custom store), with its label.
    Private(String),
    /// The factory's shared informer.
    Shared(crate::factory::InformerHandle<K>),
}

impl<K: Clone> Primary<K> {
    /// The informer as errors name it.
    fn label(&self) -> String {
        match self {
            Primary::Private(label) => label.clone(),
            Primary::Shared(handle) => handle.id().to_string(),
        }
    }
}

/// Wires an owned or watched type: its informer from the factory, the controller's handler.
fn related<W: ControllerResource>(
    ctx: &RelatedContext<'_>,
    role: &str,
    mapping: Mapping<W>,
    mut options: WatchOptions<W>,
) -> Result<Related, BuildError> {
    let params = options.params(ctx.namespace);
    let make = options
        .informer
        .take()
        .and_then(|make| make.downcast::<MakeInformer<W>>().ok());
    let handle = match make {
        Some(make) => make(ctx.factory, params),
        None => <W::Scope as ControllerScope>::informer::<W>(ctx.factory, params),
    };
    ensure_indexes(&options.indexes, &*handle.informer().indexer(), || {
        handle.id().to_string()
    })?;
    let handler_name = format!(
        "{}/{role}/{}",
        ctx.controller,
        W::kind(&W::DynamicType::default())
    );
    let handler = EnqueueHandler::new(ctx.queue.clone(), mapping, options.filters);
    let registration =
        handle.add_handler_with(handler, HandlerOptions::new().name(handler_name.clone()));
    let lister: Lister<W> = handle.lister();
    Ok(Related {
        source: Arc::new(InformerSource::shared(
            ctx.factory,
            handle,
            handler_name,
            registration,
        )),
        lister: (TypeId::of::<W>(), Box::new(lister)),
    })
}

impl<C> ControllerBuilder<PartialObjectMeta<C>>
where
    C: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    C::DynamicType: Default,
    C::Scope: NamespaceScope,
    PartialObjectMeta<C>: ControllerResource,
{
    /// Watches only the metadata of the primary resource `C` (the factory's
    /// [`metadata_informer`](InformerFactory::metadata_informer)); the reconciler receives
    /// `PartialObjectMeta<C>`. Ignored with a custom [`store`](Self::store) or
    /// [`source`](Self::source) (give a `KubeListerWatcher::metadata` source instead).
    ///
    /// ```
    /// use informer_runtime::controller::Controller;
    /// use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::Secret;
    /// use kube::core::PartialObjectMeta;
    ///
    /// let factory = InformerFactory::without_client();
    /// let builder = Controller::<PartialObjectMeta<Secret>>::builder(&factory).metadata_only();
    /// # let _ = builder;
    /// ```
    pub fn metadata_only(mut self) -> Self {
        self.informer = Some(metadata_informer::<C>());
        self
    }
}
