//! [`ControllerBuilder`]: the plain-Rust API that wires a controller (and that
//! `#[derive(ControllerSpec)]` generates calls to).
//!
//! - this file: what can be set ([`ControllerBuilder`]'s methods) and [`BuildError`];
//! - `watch_options.rs`: [`WatchOptions`], the settings of an owned or watched type;
//! - `wiring.rs`: the machinery both the primary and the related types go through (typed
//!   indexes, informers from the factory, a related type's handler);
//! - `build.rs`: [`build`](ControllerBuilder::build), step by step.

mod build;
mod children;
mod watch_options;
mod wiring;

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer_core::queue::QueueMetrics;
use informer_core::{Indexer, ListerWatcher, ObjectKey, Queue};
use kube::Client;
use kube::core::PartialObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::children::{DesiredFn, IntoChildren, StatusFn, StatusSet, SyncChildren};
use super::consistency::ReconcileClient;
use super::consistency::{Gate, tracking_client};
use super::enqueue::{MapperFn, Mapping};
use super::filter::Filter;
use super::reconciler::{BoxError, ReconcileError};
use super::{ContextCell, ControllerResource};
use crate::factory::{InformerFactory, InformerParams, NamespacedScope};
use crate::lister::Index;
use crate::metrics::WorkqueueHooks;
use wiring::{MakeInformer, RelatedContext, RelatedFn, TypedIndex, metadata_informer, related};

pub use watch_options::WatchOptions;

/// How long reconciles in flight may run after shutdown starts, by default: controller-runtime's
/// `GracefulShutdownTimeout`.
///
/// It equals a Pod's default `terminationGracePeriodSeconds` (30 s): with leader election,
/// a replica whose reconciles use all of it may be killed by the kubelet before it releases
/// its Lease, and the next leader then waits out the lease (15 to 24 s by default) instead of
/// taking over at once. Give the Pod a longer grace period than the shutdown timeout (say
/// 40 s against 30 s), or shorten the timeout.
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
    /// [`Controller::with_client`](crate::controller::Controller::with_client),
    /// [`ControllerBuilder::client`] or [`ControllerBuilder::source`].
    #[error(
        "a custom store needs a client or a source to fill it: set ControllerBuilder::client or ::source"
    )]
    StoreWithoutSource,
    /// The store given to [`ControllerBuilder::store`] already holds objects; it must be
    /// empty (an informer fills it).
    #[error(
        "the custom store must be empty (an informer fills it); it holds {0} object{s}",
        s = if *.0 == 1 { "" } else { "s" }
    )]
    StoreNotEmpty(usize),
    /// [`ControllerBuilder::children`] was given the same child type twice: the two
    /// declarations would delete each other's children. Return every child of that type
    /// from one function.
    #[error("children of type {0} are declared twice: return them all from one function")]
    ChildrenTwice(&'static str),
    /// [`WatchOptions::create_only`] was given to an owned or watched type, which the
    /// controller never creates: give it to [`ControllerBuilder::children_with`].
    #[error(
        "create_only was given to the watch of {0}, which the controller does not create: give it to children_with"
    )]
    CreateOnlyNotChildren(&'static str),
    /// The name given to [`ControllerBuilder::finalizer`] is one the API server refuses, or
    /// has no domain (which it warns about: another writer could use the same name).
    #[error("the controller's finalizer cannot be {name:?}: {problem}")]
    Finalizer {
        /// The name given.
        name: String,
        /// What is wrong with it, and what to write instead.
        problem: String,
    },
    /// A label selector given to [`ControllerBuilder::label_selector`] or
    /// [`WatchOptions::labels`] is malformed: the API server would refuse every list, and
    /// the controller would never sync. (`#[derive(ControllerSpec)]` checks its `labels`
    /// when it compiles.)
    #[error("the label selector of the controller's watch of {kind} is malformed: {source}")]
    LabelSelector {
        /// The kind watched.
        kind: String,
        /// Where and why the selector is malformed.
        source: informer_core::SelectorParseError,
    },
}

/// Builds a queue, given the metric hooks to install in it.
type MakeQueue = Box<dyn FnOnce(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> + Send>;

/// Makes the declared status's step, given the controller's client and name.
type MakeStatus<K> =
    Box<dyn FnOnce(Arc<ReconcileClient>, String) -> Arc<dyn SyncChildren<K>> + Send>;

/// Which queue the controller gets.
enum QueueChoice {
    Work,
    Priority,
    Custom(MakeQueue),
}

/// Builds a [`Controller`](crate::controller::Controller) for resource `K`: what it watches, how keys are queued, how many
/// workers reconcile them.
///
/// Every informer comes from one [`InformerFactory`], by identity (type, namespace,
/// selectors): two controllers watching Pods in the same namespace share one informer, so
/// one list and one watch. To use a custom [`ListerWatcher`] for some type (tests, other
/// sources), register it in the factory first with
/// [`InformerFactory::informer_from`] and the same parameters, keeping the handle it
/// returns until the controller is built (the factory forgets an informer whose last
/// handle is dropped), or, for the primary type, pass it to [`source`](Self::source).
///
/// | method | default |
/// | --- | --- |
/// | [`name`](Self::name) | the kind of `K`, lowercase (`deployment`) |
/// | [`namespace`](Self::namespace), [`label_selector`](Self::label_selector), [`field_selector`](Self::field_selector) | every namespace, no selector |
/// | [`owns`](Self::owns), [`watches`](Self::watches) | nothing |
/// | [`children`](Self::children), [`children_with`](Self::children_with), [`status`](Self::status) | none |
/// | [`filter`](Self::filter) | none: every change of `K` is queued |
/// | [`workers`](Self::workers) | 1 |
/// | [`queue`](Self::queue), [`queue_with`](Self::queue_with), [`priority_queue`](Self::priority_queue) | a [`WorkQueue`](informer_core::WorkQueue) with client-go's default controller rate limiter |
/// | [`store`](Self::store), [`source`](Self::source) | the factory's shared informer and cache |
/// | [`resync`](Self::resync) | none |
/// | [`timeout`](Self::timeout) | none |
/// | [`shutdown_timeout`](Self::shutdown_timeout) | [`DEFAULT_SHUTDOWN_TIMEOUT`] (30 s) |
/// | [`index`](Self::index) | none |
/// | [`read_your_writes`](Self::read_your_writes) | on |
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
/// use informer_runtime::CancellationToken;
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
    related: Vec<RelatedFn<K>>,
    /// The first malformed label selector given (of the controller's or of a watch's):
    /// `build` fails with it, before any informer is made.
    malformed_selector: Option<BuildError>,
    /// The child types declared, to refuse one declared twice.
    child_types: Vec<(std::any::TypeId, &'static str)>,
    /// The declared status, made once the controller's client exists.
    status: Option<MakeStatus<K>>,
    /// The check of a live object before its children and reconcile.
    validate: Option<super::children::ValidateFn<K>>,
    /// The finalizer the controller manages.
    finalizer: Option<String>,
    hooks: Arc<WorkqueueHooks>,
    read_your_writes: bool,
    gate: Arc<Gate>,
    /// The [`ContextCell`] of the [`ControllerSpec`](crate::controller::ControllerSpec)
    /// being built, if any (boxed: the builder does not know the spec's type).
    context_cell: Option<Box<dyn Any + Send + Sync>>,
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
            .field("read_your_writes", &self.read_your_writes)
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
            malformed_selector: None,
            child_types: Vec::new(),
            status: None,
            validate: None,
            finalizer: None,
            hooks: Arc::new(WorkqueueHooks::new()),
            read_your_writes: true,
            gate: Arc::new(Gate::new()),
            context_cell: None,
        }
    }

    /// Carries the context cell of the spec being built (set by `into_controller`).
    pub(crate) fn with_context_cell(mut self, cell: Box<dyn Any + Send + Sync>) -> Self {
        self.context_cell = Some(cell);
        self
    }

    /// The [`Context`](crate::controller::Context) of the
    /// [`ControllerSpec`](crate::controller::ControllerSpec) `C` being configured, available
    /// once the controller is built: for functions given to the builder that read the
    /// context (what the derive generates for `children(T, from = f)` with
    /// `f(&parent, &Context<Self>)`). Outside [`ControllerSpec::into_controller`] (and
    /// the entry points that call it), or for another spec than the one being built, the
    /// cell is never set.
    ///
    /// [`ControllerSpec::into_controller`]: crate::controller::ControllerSpec::into_controller
    pub fn context_cell<C>(&self) -> ContextCell<C>
    where
        C: crate::controller::ControllerSpec<Resource = K>,
    {
        self.context_cell
            .as_ref()
            .and_then(|cell| cell.downcast_ref::<ContextCell<C>>())
            .cloned()
            .unwrap_or_else(ContextCell::new)
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

    /// Read-your-own-writes (on by default; `false` turns it off for this controller), as
    /// Kubernetes' own controllers do since 1.36 (KEP-5647).
    ///
    /// **What it guarantees.** Every write a reconcile makes through the controller's client
    /// ([`ControllerContext::client`](crate::controller::ControllerContext::client), or
    /// [`reconcile_client`](Self::reconcile_client) for a hand-written reconciler) — create,
    /// update, patch, delete, status and other subresources — records, for the key being
    /// reconciled, the resource version the server answered with. The next reconcile of that
    /// key runs only once every cache of the controller holding that resource has reached
    /// that version (so the cache shows the write, or something newer); and a write to an
    /// object of the primary type holds that object's own reconcile the same way. Until then
    /// the key is requeued with the queue's rate limiter instead of running on a cache from
    /// before its own write (counted as `stale_sync_skips_total`); the write's watch event
    /// usually comes within milliseconds, and queues the key anyway. One write causes one
    /// more reconcile of its own: a held-back key waiting for its backoff is the same queue
    /// entry (with the built-in queues) its watch event makes ready, and the event of a
    /// write the key has already been reconciled with queues nothing — unless the object
    /// changed again since (then it is not the write's event). The one exception: should
    /// the key's backoff retry reach a worker in the very microseconds the event queues the
    /// key, the key runs once more, with nothing new to do.
    ///
    /// **What it does not guarantee.** Writes made by other clients, by other controllers,
    /// outside a reconcile, or on a task a reconcile spawned are not tracked; nor are
    /// dry runs, writes whose answer carries no object (a delete answered with a `Status`),
    /// writes of kinds the controller does not cache, or servers whose resource versions are
    /// not integers. It orders a reconcile after its own writes; it does not make the cache
    /// current (for that, read from the API server). A cache that can never see a write as
    /// an event is not waited for: another namespace than the cache's, or labels its selector
    /// does not match on an object it does not hold (a controller copying ConfigMaps into
    /// another namespace waits for its copies in the cache of copies, not in the cache of
    /// sources; waiting there would last until a bookmark, about a minute on a real API
    /// server). Field selectors are not evaluated: a write outside one is waited for until
    /// the cache's version passes it. Caches filled through a `DeltaFifo` do not track
    /// their version and are not waited for.
    ///
    /// **Cost.** With no write pending, one atomic load per reconcile.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// // This controller tolerates stale reads (say, it only reports).
    /// let builder = Controller::<Pod>::builder(&factory).read_your_writes(false);
    /// # let _ = builder;
    /// ```
    pub fn read_your_writes(mut self, on: bool) -> Self {
        self.read_your_writes = on;
        self
    }

    /// The client a reconcile should write through: the factory's client, wrapped to record
    /// writes for [`read_your_writes`](Self::read_your_writes) when it is on (as
    /// [`ControllerContext::client`](crate::controller::ControllerContext::client) is). For
    /// reconcilers built before the controller (closures given to [`build`](Self::build)).
    /// `None` if the factory has no client. Call it inside a Tokio runtime (kube's client
    /// spawns a task); outside one it returns the factory's client as is, untracked, and logs
    /// a warning.
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kube::Api;
    ///
    /// let factory = InformerFactory::new(client);
    /// let builder = Controller::<ConfigMap>::builder(&factory);
    /// let writes = builder.reconcile_client().expect("a client");
    /// use informer_core::ObjectKey;
    /// let controller = builder.build(reconciler_fn(move |key: ObjectKey, cm: Option<Arc<ConfigMap>>| {
    ///     let api: Api<ConfigMap> = Api::namespaced(writes.clone(), key.namespace().unwrap_or("default"));
    ///     async move {
    ///         let _ = (api, cm); // writes through `api` are waited for by the next reconcile
    ///         Ok(Action::Done)
    ///     }
    /// }))?;
    /// # let _ = controller; Ok(()) }
    /// ```
    pub fn reconcile_client(&self) -> Option<Client> {
        let plain = self.factory.client()?.clone();
        if !self.read_your_writes {
            return Some(plain);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            // The tracking client's service needs a runtime to spawn on: without one, writes
            // through this client are not waited for, which the user did not ask for.
            tracing::warn!(
                "reconcile_client called outside a tokio runtime: its writes are not tracked for read-your-own-writes; call it inside the runtime the controller runs on"
            );
            return Some(plain);
        }
        Some(tracking_client(plain, self.gate.clone()))
    }

    /// An [`EventRecorder`](crate::events::EventRecorder) that reports as this controller
    /// (its [`name`](Self::name) as set so far, so set the name first; the default is the
    /// kind in lower case) and publishes through the factory's client: for a reconciler of
    /// your own, taken before [`build`](Self::build) and moved into it. client-go's
    /// `broadcaster.NewRecorder(scheme, name)`, controller-runtime's
    /// `mgr.GetEventRecorderFor(name)`. Without a client, every publish fails with
    /// [`NoClient`](crate::controller::NoClient). Derived controllers have one in their
    /// context: `ctx.recorder()`.
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// use informer_runtime::events::{Event, EventType};
    /// use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let factory = InformerFactory::new(client);
    /// let builder = Controller::<ConfigMap>::builder(&factory).name("config-checker");
    /// let recorder = builder.event_recorder();
    /// let controller = builder.build(reconciler_fn(move |_key, cm: Option<Arc<ConfigMap>>| {
    ///     let recorder = recorder.clone();
    ///     async move {
    ///         let Some(cm) = cm else { return Ok(Action::Done) };
    ///         let event = Event { type_: EventType::Normal, reason: "Checked".into(), action: "Check".into(), ..Event::default() };
    ///         if let Err(error) = recorder.publish_for(&*cm, &event).await {
    ///             tracing::warn!(%error, "event not recorded"); // a report: the reconcile goes on
    ///         }
    ///         Ok(Action::Done)
    ///     }
    /// }))?;
    /// # let _ = controller; Ok(()) }
    /// ```
    pub fn event_recorder(&self) -> crate::events::EventRecorder {
        let name = build::controller_name::<K>(self.name.clone());
        crate::events::EventRecorder::of_controller(self.factory.client(), &name)
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
        let selector = selector.into();
        self.check_selector::<K>(Some(&selector));
        self.params.label_selector = Some(selector);
        self
    }

    /// Keeps the error of `selector`, the label selector of a watch of `W`, if it is the
    /// first malformed one.
    fn check_selector<W: ControllerResource>(&mut self, selector: Option<&str>) {
        if self.malformed_selector.is_none() {
            self.malformed_selector = wiring::label_selector_error::<W>(selector);
        }
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
        self.check_selector::<C>(options.label_selector.as_deref());
        self.related
            .push(Box::new(move |ctx: &RelatedContext<'_, K>| {
                let mapping = Mapping::Owner(ctx.owner.clone());
                related::<K, C>(ctx, "owns", mapping, options)
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
        self.check_selector::<W>(options.label_selector.as_deref());
        self.related
            .push(Box::new(move |ctx: &RelatedContext<'_, K>| {
                related::<K, W>(ctx, "watches", Mapping::Mapper(mapper), options)
            }));
        self
    }

    /// Declares children of type `C`: for each `K`, `desired` returns the `C`s it wants
    /// (`Vec<C>`, `Option<C>`, or a `Result` of either: see [`IntoChildren`]), and before
    /// each reconcile the controller makes the cluster match:
    ///
    /// - **applies** each wanted child with server-side apply (field manager: the
    ///   controller's [name](Self::name), `force`), unless the cached child already holds
    ///   every field wanted (no write when nothing changed: no churn, no reconcile storm);
    ///   children declared with [`WatchOptions::create_only`] are created when missing and
    ///   never changed;
    /// - **owns** it: an owner reference (`controller: true`, `blockOwnerDeletion: true`) if
    ///   it is in the parent's namespace or the parent is cluster-scoped, so the cluster's
    ///   garbage collector deletes it with its parent (and an orphaning deletion keeps it);
    ///   a parent that still exists but leaves the controller's view (its labels no longer
    ///   match the controller's selector, say) has its children deleted by the controller,
    ///   which a GET and a LIST of that parent confirm first; otherwise (owner references cannot
    ///   cross namespaces) the label [`OWNER_UID_LABEL`] and the annotation
    ///   [`OWNER_ANNOTATION`], and the controller deletes it itself when the parent is gone,
    ///   including parents deleted while it was not running (their children enqueue their
    ///   key when the controller starts; a key whose object is gone deletes them);
    /// - **never takes over** an object that is not the parent's: before a child the
    ///   cache does not hold is created, one GET reads what has its name. An object there
    ///   without the controller's marks and not controlled by the parent (made by hand, by
    ///   another tool, or controlled by another owner) is left as it is; the reconcile fails
    ///   with [`ChildrenError::Exists`](crate::controller::ChildrenError::Exists) and a
    ///   Warning Event `ErrResourceExists` on the parent says why, as client-go's
    ///   sample-controller refuses a Deployment its Foo does not control. It is tried again
    ///   every [`TAKEN_RETRY`](crate::controller::TAKEN_RETRY) (15 s; the object is not
    ///   watched), so the child is made soon after the name is freed. An object with a
    ///   controlling owner reference to the parent (made by an earlier controller of the
    ///   parent, or given one by hand to hand it over) and an orphan of this controller's
    ///   (carrying its label [`CONTROLLER_LABEL`]` = <name>`, with no parent that still
    ///   exists) are the parent's children: they are applied to (adopted) and reported as
    ///   updated. The label is the controller's mark: an object given it by hand is treated
    ///   as the controller's own (adopted, or deleted when no parent wants it). When
    ///   taking over the children of another controller, give this one its field manager
    ///   ([`name`](Self::name)): the fields only the old manager set are then removed or
    ///   reset by the first apply, where under another manager they would stay, co-owned;
    /// - **namespaces first**: children of type `Namespace` are brought in line before the
    ///   other types, and a child in a namespace that is a `Namespace` child of the same
    ///   parent is not written (nor deleted) while that namespace is not in line (refused as
    ///   someone else's, or failing): nothing lands in a namespace that is not the parent's;
    /// - **deletes** the cached children of the parent that are no longer wanted (only what
    ///   it made: its cache holds nothing else), after the wanted ones are written: a parent
    ///   whose child changes name has both for a moment (create before delete), so an "at
    ///   most N children" invariant must allow for it;
    /// - **watches** them: every child carries the label [`CONTROLLER_LABEL`] (the
    ///   controller's name), the controller caches its children through it, and a child
    ///   that changes (or is deleted) reconciles its parent;
    /// - writes through the controller's client, so read-your-own-writes holds the parent's
    ///   next reconcile until the caches have the children written;
    /// - logs what it created, updated and deleted (info), and fails the reconcile
    ///   (transient: retried) if a request fails; a mistake in what is declared (a child
    ///   without a name, two with one name, one outside the namespace children are watched
    ///   in) fails it as a terminal error. A write the API server refuses for what it holds
    ///   (`400`, `403`, `422`) is also reported on the parent as a Warning Event,
    ///   `FailedCreate` or `FailedUpdate`.
    ///
    /// **Fields that cannot change** (a Job's pod template, a Service's `clusterIP`, a
    /// StatefulSet's `volumeClaimTemplates`, the data of an immutable Secret): a wanted
    /// child that changes one is refused with `422` on every retry, and the child stays as
    /// it was. Put what such a field depends on into the child's name (a hash of the
    /// spec, a generation), so that a change makes a new child and the old one is deleted
    /// as unwanted.
    ///
    /// **Access** (the RBAC rules of the controller's ServiceAccount): on the child type,
    /// `list` and `watch` (its cache), `get` (the read before a create), `patch` (server-side
    /// apply; `create` for create-only children) and `delete`; on the parent type, `get`
    /// besides what its own cache needs (the parent is read live before a child is created);
    /// `create` and `patch` on `events` in `events.k8s.io` for the Warning Events.
    ///
    /// A child's namespace, if it names none: the namespace its children are watched in
    /// (see [`children_with`](Self::children_with)), else its parent's. `status` is not
    /// applied (it is the child's own). A parent being deleted (`deletionTimestamp` set)
    /// is treated as gone: nothing is applied for it, its children in other namespaces are
    /// deleted by the controller, and those with owner references are left to the garbage
    /// collector (they go when the parent goes, or stay if it is deleted with orphan
    /// propagation). The reconciler given to [`build`](Self::build) runs after, for
    /// what children cannot express (say, the parent's status); with nothing else to do,
    /// [`build_children_only`](Self::build_children_only). One declaration per child type.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// // Each Secret gets a ConfigMap listing its keys.
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Secret>::builder(&factory).children(|secret: &Secret| {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some(format!("{}-keys", secret.metadata.name.as_deref()?));
    ///     let keys = secret.data.iter().flat_map(|d| d.keys().cloned()).collect::<Vec<_>>();
    ///     cm.data = Some([("keys".to_owned(), keys.join(","))].into());
    ///     Some(cm)
    /// });
    /// # let _ = builder;
    /// ```
    ///
    /// [`IntoChildren`]: crate::controller::IntoChildren
    /// [`OWNER_UID_LABEL`]: crate::controller::OWNER_UID_LABEL
    /// [`OWNER_ANNOTATION`]: crate::controller::OWNER_ANNOTATION
    /// [`CONTROLLER_LABEL`]: crate::controller::CONTROLLER_LABEL
    pub fn children<C, R>(self, desired: impl Fn(&K) -> R + Send + Sync + 'static) -> Self
    where
        C: ControllerResource + Serialize,
        R: IntoChildren<C>,
    {
        self.children_with(desired, WatchOptions::new())
    }

    /// Declares the status of each `K`: after the children are in line (not when one of them
    /// could not be applied or deleted: the reconcile fails and is retried), `status` computes
    /// what the object's `status` should be (`K`'s status type, or an `Option` of it:
    /// `None` leaves it), and after a successful reconcile (not after a failed one, whose
    /// error policy reports it), unless the cached object already holds it, the controller
    /// writes it with server-side apply to the status subresource (field manager: the
    /// controller's [name](Self::name), `force`): no write when nothing changed, so the
    /// object's own watch event, which reconciles it again, writes nothing more. Fields the
    /// function stops returning are removed: a status that differs from the one last
    /// applied is applied even when the cached object holds it (and, after a restart, once
    /// when the cached status holds more than is wanted; fields other managers own stay).
    /// A parent that is gone or
    /// being deleted gets no status. `K` needs a status subresource (every built-in type
    /// with a status has one; a custom resource declares it): without one, the reconcile
    /// fails as terminal with [`ChildrenError::NoStatusSubresource`](crate::controller::ChildrenError::NoStatusSubresource),
    /// saying what to add. Metacontroller's sync hook
    /// answers the same two things: the children, and the parent's status.
    ///
    /// A status with conditions starts from the object's current ones and sets each with
    /// [`set_status_condition`](crate::conditions::set_status_condition), which keeps a
    /// condition's `lastTransitionTime` while its `status` stays the same. Built afresh
    /// instead, every condition would take a new time whenever the status is computed after
    /// some other change, and each of those is a write.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Deployment>::builder(&factory).status(|d: &Deployment| {
    ///     DeploymentStatus { observed_generation: d.metadata.generation, ..Default::default() }
    /// });
    /// # let _ = builder;
    /// ```
    pub fn status<S: Serialize>(self, status: impl Fn(&K) -> S + Send + Sync + 'static) -> Self
    where
        K: Serialize,
    {
        self.status_value(move |parent: &K| Ok(serde_json::to_value(status(parent))?))
    }

    /// As [`status`](Self::status), given the status as JSON or an error (what the derive's
    /// `status = f` generates).
    #[doc(hidden)]
    pub fn status_value(
        mut self,
        status: impl Fn(&K) -> Result<serde_json::Value, BoxError> + Send + Sync + 'static,
    ) -> Self
    where
        K: Serialize,
    {
        let status: StatusFn<K> = Arc::new(status);
        self.status = Some(Box::new(move |client, field_manager| {
            Arc::new(StatusSet {
                status,
                client,
                field_manager,
                applied: Default::default(),
            })
        }));
        self
    }

    /// Checks each live object (not being deleted) before anything else of its reconcile:
    /// an `Err` writes no declared child (none applied, none deleted), skips the reconcile
    /// and the declared status, and goes to the error policy (`on_error`), as the
    /// reconcile's error would. Return [`ReconcileError::terminal`] for a spec only its
    /// author can fix: it is not retried until the object changes. Without it, child types
    /// are applied independently, so an invalid spec has to be refused in every children
    /// function. An object being deleted is not checked: its cleanup goes on. (The derive's
    /// `validate = f`, with [`Validator`](crate::controller::Validator).)
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// use informer_runtime::controller::ReconcileError;
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Deployment>::builder(&factory).validate(|d: &Deployment| {
    ///     match d.spec.as_ref().and_then(|s| s.replicas) {
    ///         Some(n) if n > 10 => Err(ReconcileError::terminal("at most 10 replicas")),
    ///         _ => Ok(()),
    ///     }
    /// });
    /// # let _ = builder;
    /// ```
    pub fn validate(
        mut self,
        validate: impl Fn(&K) -> Result<(), ReconcileError> + Send + Sync + 'static,
    ) -> Self {
        self.validate = Some(Arc::new(validate));
        self
    }

    /// A finalizer the controller manages (java-operator-sdk's finalizer of a `Cleaner`;
    /// kube-runtime's and controller-runtime's finalizer helpers, done for you): each live
    /// object gets it before anything is written for it (after [`validate`](Self::validate),
    /// before the declared children and the reconcile), so that its deletion waits for the
    /// controller. When the object is being deleted and still carries it, the declared
    /// children in other namespaces (which no owner reference reaches) are deleted, then the
    /// reconciler's [`cleanup`](super::KeyReconciler::cleanup) runs instead of its reconcile,
    /// and the finalizer is removed when the cleanup answers [`Action::Done`](super::Action::Done)
    /// (other answers keep it and run the cleanup again later; an error keeps it and is
    /// retried). So what a parent made is released even if the controller was down when the
    /// parent was deleted. The writes are JSON patches that test the finalizers they change
    /// (and, to remove, the `uid`), as [`finalizer`](super::finalizer) writes them.
    ///
    /// Before the children and the reconcile of an object the cache holds with the
    /// finalizer, the object is read from the API server (one GET per such reconcile), and
    /// the reconcile goes on with what was read: a cache can go back in time (a restart
    /// against a lagging API server lists an object whose cleanup already ran and which is
    /// gone), and a write outside the cluster for such an object would never be cleaned up.
    /// Gone (or made again under its name), nothing runs; being deleted, it is cleaned up.
    ///
    /// The name must be domain-qualified (`example.com/cleanup`): [`build`](Self::build)
    /// fails with [`BuildError::Finalizer`] otherwise. (The derive's
    /// `finalizer = "example.com/cleanup"`, checked at compile time.) A view of the resource
    /// must keep `finalizers` and `deletion_timestamp` in its metadata.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Action, ReconcileError, reconciler_fn};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// # let factory = InformerFactory::without_client();
    /// # let _i = factory.informer_from(informer_runtime::factory::InformerParams::all(), || Arc::new(informer_testing::MemoryListerWatcher::<ConfigMap>::new()));
    /// let controller = Controller::<ConfigMap>::builder(&factory)
    ///     .finalizer("example.com/outside-copy")
    ///     .build(
    ///         reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
    ///             // Copy the ConfigMap outside the cluster.
    ///             Ok::<_, ReconcileError>(Action::Done)
    ///         })
    ///         .cleanup(|_key, _cm: Arc<ConfigMap>| async {
    ///             // Delete the outside copy; then the finalizer goes.
    ///             Ok(Action::Done)
    ///         }),
    ///     );
    /// assert!(controller.is_ok());
    /// ```
    pub fn finalizer(mut self, name: impl Into<String>) -> Self {
        self.finalizer = Some(name.into());
        self
    }

    /// As [`children`](Self::children), with where the children are watched: by default the
    /// controller's namespace; [`WatchOptions::namespace`] or
    /// [`WatchOptions::all_namespaces`] for children in another namespace than their
    /// parent's. Every child must be in the namespace watched.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// use informer_runtime::controller::WatchOptions;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// // ConfigMaps labelled mirror=true, copied into namespace "mirror".
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<ConfigMap>::builder(&factory).label_selector("mirror=true").children_with(
    ///     |cm: &ConfigMap| {
    ///         let mut copy = ConfigMap::default();
    ///         let (ns, name) = (cm.metadata.namespace.as_deref()?, cm.metadata.name.as_deref()?);
    ///         copy.metadata.name = Some(format!("{ns}.{name}"));
    ///         copy.data = cm.data.clone();
    ///         Some(copy)
    ///     },
    ///     WatchOptions::new().namespace("mirror"),
    /// );
    /// # let _ = builder;
    /// ```
    pub fn children_with<C, R>(
        mut self,
        desired: impl Fn(&K) -> R + Send + Sync + 'static,
        options: WatchOptions<C>,
    ) -> Self
    where
        C: ControllerResource + Serialize,
        R: IntoChildren<C>,
    {
        self.child_types
            .push((std::any::TypeId::of::<C>(), std::any::type_name::<C>()));
        let desired: DesiredFn<K, C> = Arc::new(move |parent: &K| desired(parent).into_children());
        self.check_selector::<C>(options.label_selector.as_deref());
        self.related
            .push(Box::new(move |ctx: &RelatedContext<'_, K>| {
                children::wire_children::<K, C>(ctx, desired, options)
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

    /// Uses `queue` instead of a new [`WorkQueue`](informer_core::WorkQueue). Build it with
    /// the controller's [`queue_metrics`](Self::queue_metrics) installed
    /// (`QueueBuilder::metrics`) to keep `workqueue_adds_total` and
    /// `workqueue_queue_duration_seconds`; otherwise they stay empty. The queue must not be
    /// shared with another controller.
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

    /// Uses a [`PriorityQueue`](informer_core::PriorityQueue): keys of the initial list and
    /// of resyncs wait behind keys of real changes, so a restart never delays fresh changes
    /// behind thousands of no-op reconciles.
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

    /// Fills `store` instead of sharing the factory's cache of `K`, the primary resource
    /// (owned, watched and child types keep the factory's shared caches): the controller gets
    /// its own informer (one more list and watch of `K`), run by the controller. The store must
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
    /// changed: the primary's built-in `*_changed` [`Filter`]s let these resyncs through
    /// (a filter of your own is asked, and tells them by `is_resync()`). `None` or zero:
    /// never (the default). At least one second.
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
    /// [`WatchOptions::indexed_by`]); read it with
    /// [`Lister::by_index`](crate::lister::Lister::by_index). Idempotent, unlike
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
}

impl<C> ControllerBuilder<PartialObjectMeta<C>>
where
    C: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    C::DynamicType: Default,
    C::Scope: NamespacedScope,
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
