//! [`InformerFactory`]: one shared informer per (resource type, namespace, label selector,
//! field selector), started together, synced together, stopped when unused (client-go's
//! `SharedInformerFactory`).

mod id;

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use informer_core::{Indexer, ListerWatcher};
use kube::api::ListParams;
use kube::core::{ApiResource, DynamicObject, NamespaceScope, PartialObjectMeta};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::compact_store::{CompactStore, DEFAULT_HOT_OBJECTS};
use crate::informer::{InformerBuilder, InformerError, SharedIndexInformer};
use crate::lister_watcher::KubeListerWatcher;
use crate::reflector::{ReflectorConfig, ReflectorError};

pub use id::{InformerId, InformerParams};

/// The resource scopes the factory's namespaced informers take: kube's
/// [`NamespaceScope`] (namespaced resources, and dynamic ones whose scope is known only at
/// run time), with a compile error that names the method to use for a cluster-scoped
/// resource instead of only saying that `ClusterResourceScope` is not a namespace scope.
///
/// ```compile_fail
/// # use informer_runtime::factory::{InformerFactory, InformerParams};
/// # fn f(factory: InformerFactory) {
/// use k8s_openapi::api::core::v1::Node;
/// // error: `Node` is cluster-scoped: use `cluster_informer`
/// let nodes = factory.informer::<Node>(InformerParams::all());
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "a cluster-scoped resource was given where a namespaced one is expected",
    label = "the resource's scope is `{Self}`",
    note = "a cluster-scoped resource (Node, Namespace, a cluster-scoped custom resource) takes `InformerFactory::cluster_informer` or `cluster_informer_by_policy`, not `informer` (a controller's builder takes either scope)"
)]
pub trait NamespacedScope: NamespaceScope {}

impl NamespacedScope for kube::core::NamespaceResourceScope {}
impl NamespacedScope for kube::core::DynamicResourceScope {}

/// For `get_or_create`: the source is a `KubeListerWatcher` the factory made.
const KUBE_SOURCE: bool = true;

/// What the caches of a factory's informers hold, for the informers built by
/// [`InformerFactory::informer_by_policy`] (what controllers ask for; see also
/// [`view`](crate::view) for caching a projection type).
///
/// | policy | memory per cached Pod | a read |
/// | --- | --- | --- |
/// | [`Decoded`](Self::Decoded) | about 27 KB (k8s-openapi holds every optional field inline) | an `Arc` clone |
/// | [`Compact`](Self::Compact) | about 1.5 KB, plus the hot objects | an `Arc` clone if hot, else a decode (11–18 µs for a Pod) |
///
/// ```
/// use informer_runtime::factory::{CachePolicy, InformerFactory};
/// let factory = InformerFactory::without_client().cache_policy(CachePolicy::COMPACT);
/// assert_eq!(factory.cache(), CachePolicy::COMPACT);
/// assert_eq!(InformerFactory::without_client().cache(), CachePolicy::Decoded);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CachePolicy {
    /// Decoded objects in a `ThreadSafeStore`: every read is an `Arc` clone.
    #[default]
    Decoded,
    /// Objects kept compressed in a [`CompactStore`], the `hot_objects` most recently read or
    /// written kept decoded beside: a tenth of the memory or less, at the cost of a decode
    /// (tens of microseconds for a Pod) on every read of an object that is not hot, and of
    /// encoding every object written. The object a change brings is hot, so a reconcile
    /// that reads the object its event was about reads it at once.
    Compact {
        /// How many decoded objects are kept.
        hot_objects: usize,
    },
}

impl CachePolicy {
    /// [`Compact`](Self::Compact) with [`DEFAULT_HOT_OBJECTS`] hot objects.
    pub const COMPACT: CachePolicy = CachePolicy::Compact {
        hot_objects: DEFAULT_HOT_OBJECTS,
    };

    /// A store for `K` as this policy says (`None`: the informer's default store).
    fn store<K>(self) -> Option<Arc<dyn Indexer<K>>>
    where
        K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        match self {
            CachePolicy::Decoded => None,
            CachePolicy::Compact { hot_objects } => Some(Arc::new(CompactStore::<K>::with_key_fn(
                informer_core::resource_key::<K>,
                hot_objects,
            ))),
        }
    }
}

/// What the factory needs from an informer without knowing its object type.
trait ErasedInformer: Send + Sync {
    fn as_any(&self) -> &(dyn Any + Send + Sync);
    fn has_synced(&self) -> bool;
    fn is_stopped(&self) -> bool;
    fn sync_error(&self) -> Option<Arc<ReflectorError>>;
    fn wait_for_sync(&self) -> BoxFuture<'static, bool>;
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'static, ()>;
    fn handler_count(&self) -> usize;
    fn cache_is_read(&self) -> bool;
}

impl<K> ErasedInformer for SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn as_any(&self) -> &(dyn Any + Send + Sync) {
        self
    }
    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }
    fn is_stopped(&self) -> bool {
        SharedIndexInformer::is_stopped(self)
    }
    fn sync_error(&self) -> Option<Arc<ReflectorError>> {
        SharedIndexInformer::sync_error(self)
    }
    fn handler_count(&self) -> usize {
        SharedIndexInformer::handler_count(self)
    }
    fn cache_is_read(&self) -> bool {
        SharedIndexInformer::cache_is_read(self)
    }
    fn wait_for_sync(&self) -> BoxFuture<'static, bool> {
        let informer = self.clone();
        async move { informer.wait_for_sync().await }.boxed()
    }
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        async move {
            match informer.run(cancel).await {
                Ok(()) => {}
                Err(e @ InformerError::AlreadyStarted) => {
                    tracing::warn!(error = %e, "informer not started");
                }
                // Logged where it happened (and printed without a subscriber).
                Err(e) => tracing::error!(error = %e, "informer stopped"),
            }
        }
        .boxed()
    }
}

struct Entry {
    /// Distinguishes this entry from a later one with the same id.
    serial: u64,
    informer: Arc<dyn ErasedInformer>,
    users: usize,
    /// Kept by the factory itself until it shuts down: its last handle was dropped before
    /// it started while handlers were registered or a lister of its cache was held, as a
    /// client-go user drops `fooInformer` once its handler is added or its lister taken.
    pinned: bool,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

struct State {
    entries: HashMap<InformerId, Entry>,
    /// Tasks of informers released while running: awaited by `shutdown`.
    stopping: Vec<JoinHandle<()>>,
    /// `start` was called: informers asked for from then on start at once.
    started: bool,
    shut_down: bool,
}

struct Inner {
    client: Option<Client>,
    default_resync: Option<Duration>,
    drop_managed_fields: bool,
    shrink_objects: bool,
    cache: CachePolicy,
    reflector: ReflectorConfig,
    root: CancellationToken,
    state: Mutex<State>,
    next_serial: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropping the factory (and every handle) stops whatever still runs.
        self.root.cancel();
    }
}

/// Shares informers: asking twice for the same (resource type, namespace, label selector,
/// field selector) gives the same [`SharedIndexInformer`].
///
/// # Guarantees
/// - **One informer per identity** ([`InformerId`]): one list+watch and one cache per
///   resource type (including the `ApiResource` of a `DynamicObject`, and metadata-only
///   informers as their own type), namespace, label selector and field selector.
/// - **Started together**: [`start`](Self::start) starts every informer not yet started;
///   once it has been called, an informer asked for later starts at once (as
///   controller-runtime's cache starts informers on demand; client-go's factory needs
///   another `Start`), so a lister taken after start-up (in a manager's task, say) fills.
/// - **Synced together, or told why not**: [`wait_for_sync`](Self::wait_for_sync) returns
///   which informers have not synced and the reflector's last error for each (403 Forbidden
///   by RBAC, 404 for a resource the server does not serve, ...).
/// - **Reference counted**: each [`InformerHandle`] (and each clone of one) is a user. When
///   the last user of an informer is dropped, the informer is stopped and forgotten: asking
///   again builds a fresh one. Except during setup: an informer not yet started whose
///   handlers or lister are in use is kept until shutdown, as client-go keeps it (see
///   [`InformerHandle`]).
/// - **Shut down and waited for**: [`shutdown`](Self::shutdown) stops every informer and
///   waits until their tasks have ended.
///
/// Settings that the factory applies to every informer it builds: a default resync period
/// suggested to handlers, the reflector's configuration (page size, backoff, streaming
/// list), and optionally dropping `managedFields`.
///
/// `InformerFactory` is a cheap handle: clones share the same informers.
///
/// ```no_run
/// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use informer_runtime::factory::{InformerFactory, InformerParams};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let factory = InformerFactory::new(client).drop_managed_fields(true);
/// let pods = factory.informer::<Pod>(InformerParams::namespaced("default"));
/// let same = factory.informer::<Pod>(InformerParams::namespaced("default"));
/// assert!(pods.same_informer(&same));
/// factory.start();
/// factory.wait_for_sync(Duration::from_secs(30)).await?; // says which did not sync, and why
/// println!("{} pods", pods.lister().len());
/// factory.shutdown().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct InformerFactory {
    inner: Arc<Inner>,
}

impl fmt::Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("InformerFactory")
            .field("informers", &state.entries.keys().collect::<Vec<_>>())
            .field("shut_down", &state.shut_down)
            .finish_non_exhaustive()
    }
}

impl InformerFactory {
    /// A factory whose informers list and watch through `client`.
    pub fn new(client: Client) -> Self {
        Self::build(Some(client))
    }

    /// A factory without a client: only [`informer_from`](Self::informer_from) works (the
    /// kube-backed methods panic). For tests and custom sources.
    pub fn without_client() -> Self {
        Self::build(None)
    }

    fn build(client: Option<Client>) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                default_resync: None,
                drop_managed_fields: false,
                shrink_objects: false,
                cache: CachePolicy::Decoded,
                reflector: ReflectorConfig::default(),
                root: CancellationToken::new(),
                state: Mutex::new(State {
                    entries: HashMap::new(),
                    stopping: Vec::new(),
                    started: false,
                    shut_down: false,
                }),
                next_serial: AtomicU64::new(1),
            }),
        }
    }

    fn configure(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => f(inner),
            None => tracing::warn!(
                "InformerFactory settings must be chosen before the factory is cloned or used; ignored"
            ),
        }
        self
    }

    /// The resync period of every informer built from now on (see
    /// [`SharedIndexInformer::default_resync`]). Set it before cloning or using the factory.
    /// A handler gets it when it asks for it: `add_handler(h, informer.default_resync())`
    /// (client-go's `AddEventHandler`); `add_handler(h, None)` has no resync.
    pub fn default_resync(self, period: Option<Duration>) -> Self {
        self.configure(|inner| inner.default_resync = period)
    }

    /// Whether informers drop `metadata.managedFields` before caching objects. The
    /// factory's kube-backed informers skip them while decoding
    /// ([`KubeListerWatcher::drop_managed_fields`]), so they cost nothing at all (about 10 KB
    /// and a third of the decoding time of a typical pod); informers built from a source
    /// of your own drop them with a transform. Set it before cloning or using the factory.
    pub fn drop_managed_fields(self, drop: bool) -> Self {
        self.configure(|inner| inner.drop_managed_fields = drop)
    }

    /// Whether informers cache a clone of each object, shrunk to fit (see
    /// [`InformerBuilder::shrink_objects`]). Only worth it for sources of your own that
    /// decode with `serde_json`: the factory's kube-backed sources already decode objects
    /// without spare capacity. Set it before cloning or using the factory.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// let factory = InformerFactory::without_client().shrink_objects(true);
    /// # let _ = factory;
    /// ```
    pub fn shrink_objects(self, shrink: bool) -> Self {
        self.configure(|inner| inner.shrink_objects = shrink)
    }

    /// What the caches of the informers built by
    /// [`informer_by_policy`](Self::informer_by_policy) and
    /// [`cluster_informer_by_policy`](Self::cluster_informer_by_policy) (those controllers
    /// ask for) hold; [`CachePolicy::Decoded`] by default. Set it before cloning or using the
    /// factory.
    pub fn cache_policy(self, policy: CachePolicy) -> Self {
        self.configure(|inner| inner.cache = policy)
    }

    /// The factory's [`CachePolicy`].
    pub fn cache(&self) -> CachePolicy {
        self.inner.cache
    }

    /// The reflector configuration informers start from (their selectors replace its
    /// `list_params` selectors). Set it before cloning or using the factory.
    pub fn reflector_config(self, config: ReflectorConfig) -> Self {
        self.configure(|inner| inner.reflector = config)
    }

    /// The client informers list and watch through (`None` for
    /// [`without_client`](Self::without_client)).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// assert!(InformerFactory::without_client().client().is_none());
    /// ```
    pub fn client(&self) -> Option<&Client> {
        self.inner.client.as_ref()
    }

    /// Whether informers drop `metadata.managedFields` before caching (see
    /// [`drop_managed_fields`](Self::drop_managed_fields)).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// let factory = InformerFactory::without_client().drop_managed_fields(true);
    /// assert!(factory.drops_managed_fields());
    /// ```
    pub fn drops_managed_fields(&self) -> bool {
        self.inner.drop_managed_fields
    }

    fn require_client(&self) -> Client {
        match &self.inner.client {
            Some(c) => c.clone(),
            None => panic!(
                "InformerFactory::without_client() can only build informers with informer_from"
            ),
        }
    }

    /// The shared informer of namespaced (or dynamically scoped) resource `K` in
    /// `params.namespace` (all namespaces when `None`), with `params`' selectors.
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn informer<K>(&self, params: InformerParams) -> InformerHandle<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: NamespacedScope,
    {
        self.informer_with(&K::DynamicType::default(), params)
    }

    /// The shared informer of `K` described by `dyntype` (for `DynamicObject`: its
    /// `ApiResource`), in `params.namespace` (all namespaces or cluster-scoped when `None`).
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn informer_with<K>(
        &self,
        dyntype: &K::DynamicType,
        params: InformerParams,
    ) -> InformerHandle<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::Scope: NamespacedScope,
    {
        self.namespaced(dyntype, params, None)
    }

    /// As [`informer`](Self::informer), its cache as the factory's [`CachePolicy`] says (a
    /// compact cache encodes objects, so `K` must be serializable). Controllers get their
    /// informers this way. The informer is shared with [`informer`](Self::informer) (one per
    /// identity): whichever asks first decides its cache.
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn informer_by_policy<K>(&self, params: InformerParams) -> InformerHandle<K>
    where
        K: Resource + Clone + Serialize + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: NamespacedScope,
    {
        let store = self.inner.cache.store::<K>();
        self.namespaced(&K::DynamicType::default(), params, store)
    }

    /// As [`informer`](Self::informer), over `store`, a cache backend of your own (client-go's
    /// `NewSharedIndexInformer` with a custom `Indexer`): an empty store that no other
    /// informer uses, say a [`CompactStore`] with other settings or a store that also
    /// counts or persists. The informer is still the factory's: shared, started and waited
    /// for with the others. One informer per identity: if one exists already (asked for
    /// earlier through any method), it keeps its own cache and `store` is dropped unused
    /// (`Arc::ptr_eq` of the handle's `indexer()` and yours tells).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use informer_runtime::compact_store::CompactStore;
    /// use informer_runtime::factory::{InformerFactory, InformerParams};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// # fn demo(client: kube::Client) {
    /// let factory = InformerFactory::new(client);
    /// let store = Arc::new(CompactStore::<Pod>::with_key_fn(informer_core::resource_key, 4_096));
    /// let pods = factory.informer_with_store::<Pod>(InformerParams::all(), store);
    /// # let _ = pods;
    /// # }
    /// ```
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn informer_with_store<K>(
        &self,
        params: InformerParams,
        store: Arc<dyn Indexer<K>>,
    ) -> InformerHandle<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: NamespacedScope,
    {
        self.namespaced(&K::DynamicType::default(), params, Some(store))
    }

    fn namespaced<K>(
        &self,
        dyntype: &K::DynamicType,
        params: InformerParams,
        store: Option<Arc<dyn Indexer<K>>>,
    ) -> InformerHandle<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::Scope: NamespaceScope,
    {
        let id = InformerId::new::<K>(dyntype, &params);
        self.get_or_create(id, store, KUBE_SOURCE, || {
            let api =
                namespaced_api::<K>(self.require_client(), dyntype, params.namespace.as_deref());
            Arc::new(
                KubeListerWatcher::new(api).dropping_managed_fields(self.drops_managed_fields()),
            )
        })
    }

    /// The shared informer of `DynamicObject`s of `resource` (namespaced or cluster-scoped).
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        params: InformerParams,
    ) -> InformerHandle<DynamicObject> {
        self.informer_with::<DynamicObject>(resource, params)
    }

    /// The shared informer of cluster-scoped resource `K` (say, `Node`) with `params`'
    /// selectors; `params.namespace` must be `None` (a namespace is ignored with a warning).
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn cluster_informer<K>(&self, params: InformerParams) -> InformerHandle<K>
    where
        K: Resource<Scope = kube::core::ClusterResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        self.cluster(params, None)
    }

    /// As [`cluster_informer`](Self::cluster_informer), its cache as the factory's
    /// [`CachePolicy`] says (see [`informer_by_policy`](Self::informer_by_policy)).
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn cluster_informer_by_policy<K>(&self, params: InformerParams) -> InformerHandle<K>
    where
        K: Resource<Scope = kube::core::ClusterResourceScope>
            + Clone
            + Serialize
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        let store = self.inner.cache.store::<K>();
        self.cluster(params, store)
    }

    /// As [`cluster_informer`](Self::cluster_informer), over `store`, a cache backend of your
    /// own (see [`informer_with_store`](Self::informer_with_store)).
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn cluster_informer_with_store<K>(
        &self,
        params: InformerParams,
        store: Arc<dyn Indexer<K>>,
    ) -> InformerHandle<K>
    where
        K: Resource<Scope = kube::core::ClusterResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        self.cluster(params, Some(store))
    }

    /// The cluster-scoped informer of `K` (a namespace in `params` is ignored with a warning).
    fn cluster<K>(
        &self,
        mut params: InformerParams,
        store: Option<Arc<dyn Indexer<K>>>,
    ) -> InformerHandle<K>
    where
        K: Resource<Scope = kube::core::ClusterResourceScope>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
        K::DynamicType: Default,
    {
        let dyntype = K::DynamicType::default();
        if let Some(ns) = params.namespace.take() {
            tracing::warn!(namespace = %ns, kind = %K::kind(&dyntype), "cluster-scoped resources have no namespace; ignored");
        }
        let id = InformerId::new::<K>(&dyntype, &params);
        self.get_or_create(id, store, KUBE_SOURCE, || {
            let api = Api::<K>::all_with(self.require_client(), &dyntype);
            Arc::new(
                KubeListerWatcher::new(api).dropping_managed_fields(self.drops_managed_fields()),
            )
        })
    }

    /// The shared metadata-only informer of `K`: it caches `PartialObjectMeta<K>` (only each
    /// object's metadata), which keeps very large caches small. It is a different informer
    /// from `informer::<K>` with the same parameters.
    ///
    /// # Panics
    /// On a factory made with [`without_client`](Self::without_client).
    pub fn metadata_informer<K>(
        &self,
        params: InformerParams,
    ) -> InformerHandle<PartialObjectMeta<K>>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
        K::DynamicType: Default,
        K::Scope: NamespacedScope,
    {
        let dyntype = K::DynamicType::default();
        let id = InformerId::new::<PartialObjectMeta<K>>(&dyntype, &params);
        self.get_or_create(id, None, KUBE_SOURCE, || {
            let api =
                namespaced_api::<K>(self.require_client(), &dyntype, params.namespace.as_deref());
            Arc::new(
                KubeListerWatcher::metadata(api)
                    .dropping_managed_fields(self.drops_managed_fields()),
            )
        })
    }

    /// The shared informer of `K` with identity (`K`, `params`), built from the
    /// [`ListerWatcher`] `make` returns if the factory has none yet (`make` is not called
    /// otherwise). For tests and custom sources; the selectors in `params` are passed to
    /// the lister-watcher in its `ListParams`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_runtime::factory::{InformerFactory, InformerParams};
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let factory = InformerFactory::without_client();
    /// let source = MemoryListerWatcher::<ConfigMap>::new();
    /// let a = factory.informer_from(InformerParams::default(), || Arc::new(source.clone()));
    /// let b = factory.informer_from(InformerParams::default(), || unreachable!("shared"));
    /// assert!(a.same_informer(&b));
    /// factory.start();
    /// factory.wait_for_sync(Duration::from_secs(5)).await.unwrap();
    /// factory.shutdown().await;
    /// # }
    /// ```
    pub fn informer_from<K>(
        &self,
        params: InformerParams,
        make: impl FnOnce() -> Arc<dyn ListerWatcher<K>>,
    ) -> InformerHandle<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        let id = InformerId::new::<K>(&K::DynamicType::default(), &params);
        self.get_or_create(id, None, !KUBE_SOURCE, make)
    }

    /// The informer of `id`, built from `make`'s source over `store` (the default store
    /// when `None`) if the factory has none yet. `kube_source`: the source is a
    /// `KubeListerWatcher` the factory made, which drops managed fields itself when asked.
    fn get_or_create<K>(
        &self,
        id: InformerId,
        store: Option<Arc<dyn Indexer<K>>>,
        kube_source: bool,
        make: impl FnOnce() -> Arc<dyn ListerWatcher<K>>,
    ) -> InformerHandle<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        let mut state = self.inner.state.lock();
        if let Some(entry) = state.entries.get_mut(&id)
            && let Some(informer) = entry
                .informer
                .as_any()
                .downcast_ref::<SharedIndexInformer<K>>()
        {
            entry.users += 1;
            return InformerHandle {
                informer: informer.clone(),
                factory: self.inner.clone(),
                id: Arc::new(id),
                serial: entry.serial,
                report_orphans: true,
            };
        }
        let informer = self.build_informer(&id, make(), store, kube_source);
        let serial = self.inner.next_serial.fetch_add(1, Ordering::Relaxed);
        let cancel = self.inner.root.child_token();
        if state.shut_down {
            cancel.cancel();
        }
        let erased: Arc<dyn ErasedInformer> = Arc::new(informer.clone());
        // After `start`, a new informer starts at once (it needs a runtime to run on).
        let task = match tokio::runtime::Handle::try_current() {
            Ok(runtime) if state.started && !state.shut_down => {
                Some(runtime.spawn(erased.run(cancel.clone())))
            }
            Err(_) if state.started && !state.shut_down => {
                tracing::warn!(informer = %id, "informer asked for outside a Tokio runtime after the factory started: call InformerFactory::start again from inside one to start it");
                None
            }
            _ => None,
        };
        state.entries.insert(
            id.clone(),
            Entry {
                serial,
                informer: erased,
                users: 1,
                pinned: false,
                cancel,
                task,
            },
        );
        InformerHandle {
            informer,
            factory: self.inner.clone(),
            id: Arc::new(id),
            serial,
            report_orphans: true,
        }
    }

    fn build_informer<K>(
        &self,
        id: &InformerId,
        lw: Arc<dyn ListerWatcher<K>>,
        store: Option<Arc<dyn Indexer<K>>>,
        kube_source: bool,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        // A selector that does not parse is refused (400) by the API server at every list:
        // the informer would never sync, and say so only once a sync wait gives up. Say it
        // now.
        if let Some(selector) = &id.params().label_selector
            && let Err(error) = informer_core::selector::parse_label_selector(selector)
        {
            tracing::error!(informer = %id, %selector, %error, "invalid label selector: the API server refuses it and this informer never syncs");
            crate::fallback::report(format_args!(
                "informer {id}: label selector {selector:?} is invalid ({error}): the API server refuses it and this informer never syncs"
            ));
        }
        let mut config = self.inner.reflector.clone();
        let mut list_params = ListParams {
            label_selector: id.params().label_selector.clone(),
            field_selector: id.params().field_selector.clone(),
            ..config.list_params.clone()
        };
        if list_params.limit.is_none() {
            list_params.limit = config.list_params.limit;
        }
        config.list_params = list_params;
        let mut builder: InformerBuilder<K> = SharedIndexInformer::builder(lw)
            .reflector_config(config)
            .default_resync(self.inner.default_resync);
        if let Some(store) = store {
            builder = builder.store(store);
        }
        // A KubeListerWatcher made by the factory skips them while decoding already.
        if self.inner.drop_managed_fields && !kube_source {
            builder = builder.drop_managed_fields();
        }
        if self.inner.shrink_objects {
            builder = builder.shrink_objects();
        }
        builder.build()
    }

    /// Starts every informer not started yet, each on its own task; informers asked for
    /// from then on start as they are asked for (on the runtime of the caller that asks).
    /// Does nothing after [`shutdown`](Self::shutdown).
    ///
    /// # Panics
    /// Outside a Tokio runtime (as `tokio::spawn`).
    pub fn start(&self) {
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return;
        }
        state.started = true;
        for entry in state.entries.values_mut() {
            if entry.task.is_none() {
                entry.task = Some(tokio::spawn(entry.informer.run(entry.cancel.clone())));
            }
        }
    }

    /// The identities of the informers the factory holds.
    pub fn informers(&self) -> Vec<InformerId> {
        self.inner.state.lock().entries.keys().cloned().collect()
    }

    /// Waits until every informer the factory holds has synced, for at most `timeout`.
    ///
    /// # Errors
    /// [`NotSynced`] listing each informer that has not synced and why: not started,
    /// stopped, or still listing with the reflector's last error (for example RBAC's
    /// 403 Forbidden, or 404 when the server does not serve the resource).
    pub async fn wait_for_sync(&self, timeout: Duration) -> Result<(), NotSynced> {
        self.wait_for_sync_until(tokio::time::sleep(timeout)).await
    }

    /// Waits until every informer the factory holds has synced, or until `cancel` is
    /// cancelled.
    ///
    /// # Errors
    /// As [`wait_for_sync`](Self::wait_for_sync).
    pub async fn wait_for_sync_cancellable(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(), NotSynced> {
        self.wait_for_sync_until(cancel.cancelled()).await
    }

    async fn wait_for_sync_until(
        &self,
        give_up: impl Future<Output = ()>,
    ) -> Result<(), NotSynced> {
        let snapshot = self.snapshot();
        let waits = snapshot
            .iter()
            .filter(|(_, _, started)| *started)
            .map(|(_, informer, _)| informer.wait_for_sync());
        tokio::select! {
            biased;
            _ = join_all(waits) => {}
            _ = give_up => {}
        }
        let unsynced = Self::unsynced_of(snapshot);
        if unsynced.is_empty() {
            Ok(())
        } else {
            Err(NotSynced { unsynced })
        }
    }

    /// The informers the factory holds that have not synced (or have stopped), each with
    /// why, without waiting: empty once every one has synced.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use informer_runtime::factory::{InformerFactory, InformerParams, UnsyncedReason};
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let factory = InformerFactory::without_client();
    /// let config_maps = factory.informer_from(InformerParams::all(), || {
    ///     Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    /// });
    /// let unsynced = factory.unsynced();
    /// assert!(matches!(unsynced[0].reason, UnsyncedReason::NotStarted));
    /// factory.start();
    /// config_maps.informer().wait_for_sync().await;
    /// assert!(factory.unsynced().is_empty());
    /// # }
    /// ```
    pub fn unsynced(&self) -> Vec<Unsynced> {
        Self::unsynced_of(self.snapshot())
    }

    /// Each informer the factory holds, and whether it was started.
    fn snapshot(&self) -> Vec<(InformerId, Arc<dyn ErasedInformer>, bool)> {
        self.inner
            .state
            .lock()
            .entries
            .iter()
            .map(|(id, e)| (id.clone(), e.informer.clone(), e.task.is_some()))
            .collect()
    }

    fn unsynced_of(snapshot: Vec<(InformerId, Arc<dyn ErasedInformer>, bool)>) -> Vec<Unsynced> {
        snapshot
            .into_iter()
            .filter(|(_, informer, _)| !informer.has_synced())
            .map(|(id, informer, started)| Unsynced {
                reason: if !started {
                    UnsyncedReason::NotStarted
                } else if informer.is_stopped() {
                    UnsyncedReason::Stopped
                } else {
                    UnsyncedReason::Listing(informer.sync_error())
                },
                informer: id,
            })
            .collect()
    }

    /// Stops every informer and waits until their tasks have ended. Informers asked for
    /// afterwards are never started.
    pub async fn shutdown(&self) {
        let tasks: Vec<JoinHandle<()>> = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            self.inner.root.cancel();
            let mut tasks: Vec<JoinHandle<()>> = state.stopping.drain(..).collect();
            tasks.extend(state.entries.values_mut().filter_map(|e| e.task.take()));
            tasks
        };
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// An `Api<K>` over `namespace`, or every namespace when `None`.
pub(crate) fn namespaced_api<K>(
    client: Client,
    dyntype: &K::DynamicType,
    namespace: Option<&str>,
) -> Api<K>
where
    K: Resource,
    K::Scope: NamespaceScope,
{
    let api = Api::all_with(client, dyntype);
    match namespace {
        Some(ns) => api.constrain(ns),
        None => api,
    }
}

impl Inner {
    fn acquire(&self, id: &InformerId, serial: u64) {
        if let Some(entry) = self.state.lock().entries.get_mut(id)
            && entry.serial == serial
        {
            entry.users += 1;
        }
    }

    fn release(&self, id: &InformerId, serial: u64, report_orphans: bool) {
        let mut state = self.state.lock();
        let shut_down = state.shut_down;
        let Some(entry) = state.entries.get_mut(id) else {
            return;
        };
        if entry.serial != serial {
            return;
        }
        entry.users -= 1;
        if entry.users > 0 || entry.pinned {
            return;
        }
        // Handlers registered on an informer that has not run, or a lister of its cache
        // still held, mean someone expects its events or objects: the handle was dropped
        // during setup, as client-go's idiom drops it (`factory.Core().V1().Pods().Lister()`,
        // or `AddEventHandler` on a temporary informer). The factory keeps such an informer,
        // as client-go's does, so that `start` starts it and it runs until `shutdown`. Once
        // it ran, dropping its last handle is how an informer is stopped.
        if report_orphans
            && entry.task.is_none()
            && !shut_down
            && (entry.informer.handler_count() > 0 || entry.informer.cache_is_read())
        {
            entry.pinned = true;
            tracing::debug!(informer = %id, "last handle dropped before start while its handlers or lister are in use: the factory keeps the informer until it shuts down");
            return;
        }
        if let Some(entry) = state.entries.remove(id) {
            entry.cancel.cancel();
            state.stopping.retain(|t| !t.is_finished());
            if let Some(task) = entry.task {
                state.stopping.push(task);
            }
            tracing::debug!(informer = %id, "last user gone; informer stopped and removed");
        }
    }
}

/// A user's handle on a shared informer from an [`InformerFactory`]; dereferences to the
/// [`SharedIndexInformer`].
///
/// Each handle, and each clone of one, counts as one user. When the last user of an
/// informer is dropped, the factory stops the informer and forgets it. Handles keep the
/// factory's shared state alive.
///
/// **Which informers run.** An informer that has run stops when its last handle is
/// dropped: listers, handler registrations and stores taken from it do not count as users,
/// so that dynamic watches can end. During setup, client-go's habits work as in client-go:
/// a last handle dropped before the informer started, while handlers are registered on it
/// or a lister of its cache is held (`factory.informer::<Pod>(params).lister()`), leaves the
/// informer with the factory, which starts it with the others and keeps it until
/// [`shutdown`](InformerFactory::shutdown) (or until the factory and every handle are
/// dropped). An informer dropped with neither is forgotten. Holding the handle makes the
/// informer's life yours, beside the listers, as a field of your controller:
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use informer_runtime::factory::{InformerFactory, InformerHandle, InformerParams};
/// use informer_runtime::lister::Lister;
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// struct MyController {
///     _deployments: InformerHandle<Deployment>, // keeps the informer running
///     deployments: Lister<Deployment>,
/// }
/// let factory = InformerFactory::new(client);
/// let informer = factory.informer::<Deployment>(InformerParams::all());
/// let controller = MyController { deployments: informer.lister(), _deployments: informer };
/// factory.start();
/// # let _ = controller;
/// # }
/// ```
pub struct InformerHandle<K: Clone> {
    informer: SharedIndexInformer<K>,
    factory: Arc<Inner>,
    id: Arc<InformerId>,
    serial: u64,
    /// Whether dropping the last handle while handlers are registered is reported (not
    /// when the library drops a handle whose handlers it owns).
    report_orphans: bool,
}

impl<K: Clone> InformerHandle<K> {
    /// The informer's identity in the factory.
    pub fn id(&self) -> &InformerId {
        &self.id
    }

    /// Whether two handles share one informer.
    pub fn same_informer(&self, other: &Self) -> bool {
        *self.id == *other.id && self.serial == other.serial
    }

    /// The informer itself. A clone of it is not a user: it does not keep the informer
    /// running.
    pub fn informer(&self) -> &SharedIndexInformer<K> {
        &self.informer
    }

    /// This handle, dropped without reporting handlers left registered: for the library's
    /// own handles, whose handlers go with them (a controller dropped without being
    /// stopped).
    pub(crate) fn quiet(mut self) -> Self {
        self.report_orphans = false;
        self
    }
}

impl<K: Clone> Deref for InformerHandle<K> {
    type Target = SharedIndexInformer<K>;
    fn deref(&self) -> &SharedIndexInformer<K> {
        &self.informer
    }
}

impl<K: Clone> Clone for InformerHandle<K> {
    fn clone(&self) -> Self {
        self.factory.acquire(&self.id, self.serial);
        Self {
            informer: self.informer.clone(),
            factory: self.factory.clone(),
            id: self.id.clone(),
            serial: self.serial,
            report_orphans: self.report_orphans,
        }
    }
}

impl<K: Clone> Drop for InformerHandle<K> {
    fn drop(&mut self) {
        self.factory
            .release(&self.id, self.serial, self.report_orphans);
    }
}

impl<K: Clone> fmt::Debug for InformerHandle<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerHandle")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Why an informer has not synced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum UnsyncedReason {
    /// It was never started: call [`InformerFactory::start`] after asking for it.
    NotStarted,
    /// It stopped (its last user was dropped, or the factory shut down) before syncing.
    Stopped,
    /// It is still trying to list. The reflector's last error says why it has not
    /// succeeded yet (`None`: no error so far, it is just slow).
    Listing(Option<Arc<ReflectorError>>),
}

impl fmt::Display for UnsyncedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnsyncedReason::NotStarted => f.write_str("not started (call InformerFactory::start)"),
            UnsyncedReason::Stopped => f.write_str("stopped before it synced"),
            UnsyncedReason::Listing(None) => f.write_str("still listing, no error so far"),
            UnsyncedReason::Listing(Some(e)) => write!(f, "still listing; last error: {e}"),
        }
    }
}

/// One informer that has not synced, and why.
#[derive(Debug, Clone)]
pub struct Unsynced {
    /// Which informer.
    pub informer: InformerId,
    /// Why.
    pub reason: UnsyncedReason,
}

/// [`InformerFactory::wait_for_sync`] gave up before every informer synced.
#[derive(Debug, Clone, thiserror::Error)]
pub struct NotSynced {
    /// Each informer that has not synced, with the reason.
    pub unsynced: Vec<Unsynced>,
}

impl fmt::Display for NotSynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} informer(s) have not synced:", self.unsynced.len())?;
        for u in &self.unsynced {
            write!(f, " [{}: {}]", u.informer, u.reason)?;
        }
        Ok(())
    }
}

/// The controller (or recorder) has no Kubernetes client: its factory was made with
/// [`InformerFactory::without_client`].
///
/// ```
/// use informer_runtime::controller::{NoClient, ReconcileError};
///
/// let error: ReconcileError = NoClient.into();
/// assert!(error.to_string().contains("no Kubernetes client"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("this controller has no Kubernetes client (its factory was made without one)")]
pub struct NoClient;

#[cfg(test)]
mod tests;
