//! Controllers: informers feeding keys to a queue, workers reconciling them.
//!
//! ```text
//! informer of K ----(filters)--- own key ------------\
//! informer of C (owns) -------- controlling owner ----+--> Queue<ObjectKey> --> workers --> KeyReconciler<K>
//! informer of W (watches) ----- mapper(&W) ----------/      (priority low for            |
//!                                                            initial list, resync)      Action / error
//!                                                                                        -> forget / add_after / add_rate_limited
//! ```
//!
//! - [`KeyReconciler`], [`reconciler_fn`], [`Action`], [`ReconcileError`]: the user's logic and
//!   its answers.
//! - [`ControllerBuilder`] (from [`Controller::builder`]): what to watch (`owns`, `watches`,
//!   namespace, selectors, [`Filter`]s), declared children and status (`children`,
//!   `status`), the queue, workers, timeouts, a custom store.
//! - [`Controller`]: [`run`](Controller::run) it alone, or hand it to a
//!   [`Manager`](crate::manager::Manager) with others (metrics, health, leader election).
//!
//! # Guarantees
//! - The same key is never reconciled by two workers at once (the queue's guarantee); a key
//!   changed during its reconcile is reconciled again afterwards.
//! - Workers start once every cache of the controller has synced, so a reconcile never sees
//!   a half-filled cache.
//! - Success forgets the key's backoff automatically; errors, panics and timeouts back off
//!   exponentially per key; terminal errors are not retried. See [`KeyReconciler`].
//! - Shutdown stops taking keys, lets reconciles in flight finish up to the shutdown
//!   timeout, then drops them; if keys remain queued, one log line says how many.
//! - Read-your-own-writes (on by default): a key is not reconciled again until the caches
//!   have seen the writes its last reconcile made through the controller's client; see
//!   [`ControllerBuilder::read_your_writes`] for what is and is not covered.
//!
//! # Two ways to write a controller
//! - **A spec** ([`ControllerSpec`] and [`Reconcile`]): what `#[derive(ControllerSpec)]`
//!   implements, and what you can implement by hand when the attributes do not say what you
//!   need (see the example on [`ControllerSpec`]). Reconciles get a [`Context`]: the
//!   controller's client (with read-your-own-writes), its listers, its queue. Functions given
//!   to the builder in [`ControllerSpec::configure`], such as a `watches` mapper that reads a
//!   lister, reach the same context through [`ControllerBuilder::context_cell`] once the
//!   controller is built. Run it with [`RunController`](crate::manager::RunController)'s
//!   `run`, `run_until` or `add_to`.
//! - **A builder and a reconciler** ([`Controller::builder`] and a [`KeyReconciler`] or
//!   [`reconciler_fn`]), as with kube-runtime's `Controller`: the reconciler is a value of
//!   yours holding what it needs (kube-runtime's context). Take the write client from
//!   [`ControllerBuilder::reconcile_client`] and the Event recorder from
//!   [`ControllerBuilder::event_recorder`] before `build`; listers exist once it is built
//!   ([`Controller::lister`], [`Controller::lister_of`]). A mapper that reads a lister needs
//!   it before `build`: hand it an `Arc<OnceLock<Lister<_>>>` filled after `build`, or write
//!   a spec.
//!
//! # Finalizers, events, failures
//! - **Finalizers:** [`ControllerBuilder::finalizer`] (the derive's `finalizer = ".."`)
//!   makes the finalizer the controller's: put on each live object before anything is
//!   written for it, and removed once the reconciler's [`cleanup`](KeyReconciler::cleanup)
//!   (run instead of the reconcile for an object being deleted) answers [`Action::Done`]
//!   (java-operator-sdk's `Cleaner`). Or wrap the reconcile in [`finalizer`]: it adds the
//!   finalizer, runs `Apply` while the object lives and `Cleanup` once it is being deleted,
//!   then removes the finalizer (kube-runtime's `finalizer`, controller-runtime's
//!   `AddFinalizer` / `RemoveFinalizer`). The `website_operator` example uses the first,
//!   `crd_controller` the second.
//! - **Events:** every controller has an
//!   [`EventRecorder`](crate::events::EventRecorder) that reports as its name:
//!   [`Context::recorder`] in a spec's reconcile, [`ControllerContext::recorder`], or
//!   [`ControllerBuilder::event_recorder`] for a reconciler of your own (client-go's
//!   `EventRecorder`, controller-runtime's `GetEventRecorderFor`). A repeat within six
//!   minutes is counted in the first Event's series. A publish that fails returns its error
//!   and is not retried: log it and go on. For Events about declared children, the reconcile
//!   reads what the children step created, updated and deleted with
//!   [`Context::children_report`] ([`ChildrenReport::current`] without the derive).
//! - **Failures:** a reconcile's [`ReconcileError`] (its own, the declared children's before
//!   it, or the declared status's after it) is logged and counted, then its error policy decides: by default
//!   a transient error is retried after the key's exponential backoff and a terminal one is
//!   not. The policy is kube-runtime's `error_policy`: [`KeyReconciler::on_error`],
//!   [`Reconcile::on_error`] for a derived controller, or
//!   [`ReconcilerFn::error_policy`]. It may also write the failure into the object's
//!   status (java-operator-sdk's `updateErrorStatus`; [`crate::conditions`] keeps a
//!   `Ready=False` condition) or record an Event. [`Action::RequeueAfter`] asks for a later
//!   reconcile after success, [`Action::Requeue`] for one after the key's backoff without
//!   counting an error.

#![warn(missing_docs)]

mod builder;
pub(crate) mod children;
mod consistency;
mod context;
mod enqueue;
mod filter;
mod finalizer;
mod owner;
mod probe;
mod reconciler;
mod runner;
mod scope;
mod source;
mod spec;

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use informer_core::{ObjectKey, Queue};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

pub use crate::metrics::ControllerStats;
pub use builder::{BuildError, ControllerBuilder, DEFAULT_SHUTDOWN_TIMEOUT, WatchOptions};
pub use children::{
    APPLIED_HASH_ANNOTATION, CONTROLLER_LABEL, ChildRef, ChildrenError, ChildrenReport,
    DesiredChildren, DesiredStatus, IntoChildren, OWNER_ANNOTATION, OWNER_UID_LABEL, TAKEN_RETRY,
    Validator,
};
pub use context::{Context, ControllerContext, NoClient, related_lister, related_lister_at};
pub use filter::Filter;
pub use finalizer::{FinalizerEvent, finalizer};
pub use owner::{
    OwnerReferenceError, controller_owner, is_controlled_by, set_controller_reference,
};
#[allow(deprecated)]
pub use reconciler::Reconciler;
pub use reconciler::{
    Action, BoxError, CleanupFn, DefaultErrorPolicy, ErrorKind, ErrorPolicy, KeyReconciler,
    NoCleanup, ReconcileError, ReconcilerFn, reconciler_fn,
};
pub use scope::ControllerScope;
pub use spec::{
    ContextCell, ControllerSpec, IntoQueue, IntoStore, MakeNamespace, MakeQueue, MakeStore, Mapper,
    Reconcile,
};

pub(crate) use runner::Ownership;
pub(crate) use source::Sources;

use crate::factory::InformerFactory;
use crate::lister::Lister;
use crate::metrics::{ControllerMetrics, ControllerProbe};
use probe::Probe;
use runner::Runner;

/// What a controller needs of a resource type: a Kubernetes resource with a static type
/// (`DynamicType = ()`, or another `Default` one) that deserializes, is shared between
/// threads, and has a [`ControllerScope`]. Every `k8s-openapi` type and every
/// `#[derive(CustomResource)]` type is one; implemented automatically.
///
/// ```
/// use informer_runtime::controller::ControllerResource;
/// use k8s_openapi::api::core::v1::{Node, Pod};
///
/// fn check<K: ControllerResource>() {}
/// check::<Pod>();
/// check::<Node>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource a controller can watch",
    label = "not a Kubernetes resource",
    note = "use a k8s-openapi type (such as `k8s_openapi::api::apps::v1::Deployment`) or a `#[derive(CustomResource)]` type",
    note = "a controller's resource implements `kube::Resource` (with a `Default` dynamic type), `Clone`, `Debug`, `Serialize`, `DeserializeOwned`, `Send`, `Sync` and `'static`"
)]
pub trait ControllerResource:
    Resource<DynamicType: Default, Scope: ControllerScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

#[diagnostic::do_not_recommend]
impl<K> ControllerResource for K
where
    K: Resource + Clone + Serialize + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
    K::Scope: ControllerScope,
{
}

/// A controller of resource `K`: its informers and handlers (registered when built), its
/// queue, and the workers that [`run`](Self::run) reconciles keys with.
///
/// Built by [`Controller::builder`] (or [`Manager::controller`](crate::manager::Manager::controller)).
/// Read its caches through [`lister`](Self::lister) and [`lister_of`](Self::lister_of)
/// before running it; `run` consumes it.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_runtime::controller::{Action, Controller, reconciler_fn};
/// use informer_runtime::factory::{InformerFactory, InformerParams};
/// use informer_testing::MemoryListerWatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use informer_runtime::CancellationToken;
///
/// let source = MemoryListerWatcher::<ConfigMap>::new();
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.metadata.namespace = Some("default".into());
/// source.create(cm);
///
/// let factory = InformerFactory::without_client();
/// let _registered = factory.informer_from(InformerParams::all(), || Arc::new(source.clone()));
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// let controller = Controller::<ConfigMap>::builder(&factory)
///     .build(reconciler_fn(move |key, _cm: Option<Arc<ConfigMap>>| {
///         let tx = tx.clone();
///         async move {
///             let _ = tx.send(key);
///             Ok(Action::Done)
///         }
///     }))
///     .unwrap();
/// let cancel = CancellationToken::new();
/// let run = tokio::spawn(controller.run(cancel.clone()));
/// assert_eq!(rx.recv().await.unwrap().to_string(), "default/settings");
/// cancel.cancel();
/// run.await.unwrap();
/// # }
/// ```
pub struct Controller<K: Clone> {
    runner: Arc<Runner<K>>,
    sources: Arc<Sources>,
    /// What the metrics read (one per controller: metrics report it once).
    probe: Arc<Probe>,
    lister: Lister<K>,
    listers: Vec<(TypeId, Box<dyn Any + Send + Sync>)>,
    factory: InformerFactory,
    /// The client reconciles write through (see [`ControllerBuilder::read_your_writes`]).
    reconcile_client: Arc<consistency::ReconcileClient>,
    /// Whether it was run or handed to a manager (a controller dropped otherwise did
    /// nothing, which its drop logs).
    used: bool,
}

impl<K: Clone> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.runner.state.name)
            .field("workers", &self.runner.state.workers())
            .field("read_your_writes", &self.runner.gate.is_some())
            .field(
                "informers",
                &self
                    .sources
                    .list()
                    .iter()
                    .map(|s| s.informer_label())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<K: ControllerResource> Controller<K> {
    /// A builder taking every informer from `factory`.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use informer_runtime::factory::InformerFactory;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// let builder = Controller::<Pod>::builder(&factory).namespace("default");
    /// # let _ = builder;
    /// ```
    pub fn builder(factory: &InformerFactory) -> ControllerBuilder<K> {
        ControllerBuilder::new(factory)
    }

    /// A builder with its own [`InformerFactory`] over `client` (informers are shared only
    /// with controllers built from [`factory`](Self::factory) of this one). Prefer
    /// [`builder`](Self::builder) with one factory for all controllers.
    ///
    /// ```
    /// # use informer_runtime::controller::Controller;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # fn demo(client: kube::Client) {
    /// let builder = Controller::<Pod>::with_client(client).namespace("default");
    /// # let _ = builder;
    /// # }
    /// ```
    pub fn with_client(client: Client) -> ControllerBuilder<K> {
        ControllerBuilder::new(&InformerFactory::new(client.clone())).client(client)
    }
}

impl<K: Clone + Send + Sync + 'static> Controller<K> {
    /// The controller's name (metrics labels, logs).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert_eq!(controller.name(), "pod");
    /// ```
    pub fn name(&self) -> &str {
        &self.runner.state.name
    }

    /// A lister over the cache of `K`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert!(controller.lister().is_empty()); // not run yet
    /// ```
    pub fn lister(&self) -> Lister<K> {
        self.lister.clone()
    }

    /// A lister over the cache of an owned or watched type `C` (the first one added of that
    /// type), or `None` if the controller does not watch `C`.
    ///
    /// A reconciler passed to [`build`](ControllerBuilder::build) is made before the
    /// controller: to move a lister into it, take it from the factory first. Informers are
    /// shared by type, namespace and selectors, so the factory's informer for what the
    /// controller watches is the controller's own when asked for with the same parameters
    /// and as controllers ask: with
    /// [`informer_by_policy`](crate::factory::InformerFactory::informer_by_policy) (for a
    /// cluster-scoped type such as `Namespace`,
    /// [`cluster_informer_by_policy`](crate::factory::InformerFactory::cluster_informer_by_policy)),
    /// which follows the factory's cache policy; a [`Manager`](crate::manager::Manager)'s
    /// factory is `manager.factory()`. A lister taken from a handle dropped at once still
    /// fills (the factory keeps an informer whose lister is held until it starts it, as
    /// client-go's factory does), but keeping the handle until the controller is built lets
    /// the controller share that informer rather than find it and hold it itself:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let factory = InformerFactory::new(client);
    /// let pods = factory.informer_by_policy::<Pod>(InformerParams::all()); // the handle
    /// let lister = pods.lister();
    /// let controller = Controller::<ConfigMap>::builder(&factory)
    ///     .watches::<Pod>(|_pod| Vec::new())
    ///     .build(reconciler_fn(move |_key, _cm: Option<Arc<ConfigMap>>| {
    ///         let cached = lister.len(); // the controller's own cache of Pods
    ///         async move {
    ///             let _ = cached;
    ///             Ok(Action::Done)
    ///         }
    ///     }))?;
    /// drop(pods); // the controller holds the informer now
    /// # let _ = controller;
    /// # Ok(()) }
    /// ```
    ///
    /// Derived controllers have every lister in their context (`ctx.pods()`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert!(controller.lister_of::<ConfigMap>().is_some());
    /// assert!(controller.lister_of::<k8s_openapi::api::core::v1::Secret>().is_none());
    /// ```
    pub fn lister_of<C: 'static>(&self) -> Option<Lister<C>> {
        self.listers
            .iter()
            .find(|(id, _)| *id == TypeId::of::<C>())
            .and_then(|(_, lister)| lister.downcast_ref::<Lister<C>>())
            .cloned()
    }

    /// The lister of the `index`-th owned, watched or child resource, in the order they
    /// were added to the builder, if it is of type `C` (one type may be watched twice, say
    /// in two namespaces: [`lister_of`](Self::lister_of) finds the first).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, WatchOptions, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _a = factory.informer_from(InformerParams::namespaced("a"), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let _b = factory.informer_from(InformerParams::namespaced("b"), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// let controller = Controller::<Pod>::builder(&factory)
    ///     .owns_with(WatchOptions::<ConfigMap>::new().namespace("a"))
    ///     .owns_with(WatchOptions::<ConfigMap>::new().namespace("b"))
    ///     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    ///     .unwrap();
    /// assert!(controller.lister_at::<ConfigMap>(1).is_some());
    /// assert!(controller.lister_at::<Pod>(1).is_none(), "not of that type");
    /// assert!(controller.lister_at::<ConfigMap>(2).is_none(), "only two");
    /// ```
    pub fn lister_at<C: 'static>(&self, index: usize) -> Option<Lister<C>> {
        self.listers
            .get(index)
            .and_then(|(_, lister)| lister.downcast_ref::<Lister<C>>())
            .cloned()
    }

    /// The controller's queue, say to queue keys on external events. Keys added after the
    /// controller stopped are ignored.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// use informer_core::ObjectKey;
    /// controller.queue().add(ObjectKey::new(Some("default"), "web-0"));
    /// assert_eq!(controller.stats().queue_depth, 1);
    /// ```
    pub fn queue(&self) -> Arc<dyn Queue<ObjectKey>> {
        self.runner.state.queue.clone()
    }

    /// The controller's counters right now.
    ///
    /// [`run`](Self::run) takes the controller: to read its counters while or after it
    /// runs (in a test, say), take its probe first with [`ControllerMetrics::probe`], a
    /// shared handle whose `sample().stats` are these counters.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert_eq!(controller.stats().reconciles(), 0);
    ///
    /// // A handle that outlives `run(self)`.
    /// use informer_runtime::metrics::ControllerMetrics as _;
    /// let probe = controller.probe();
    /// # let cancel = informer_runtime::informer::CancellationToken::new();
    /// # cancel.cancel();
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async move {
    /// controller.run(cancel).await;
    /// assert_eq!(probe.sample().stats.reconciles(), 0);
    /// # });
    /// ```
    pub fn stats(&self) -> ControllerStats {
        self.runner.state.stats()
    }

    /// Whether every informer of the controller has synced and its handlers have queued
    /// the initial list.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert!(!controller.has_synced()); // not run yet
    /// ```
    pub fn has_synced(&self) -> bool {
        self.sources.has_synced()
    }

    /// The factory the controller's shared informers come from.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .owns::<ConfigMap>()
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert_eq!(controller.factory().informers().len(), 2);
    /// ```
    pub fn factory(&self) -> &InformerFactory {
        &self.factory
    }

    /// The client reconciles should write through: the factory's client, wrapped to record
    /// writes when [read-your-own-writes](ControllerBuilder::read_your_writes) is on (what
    /// [`ControllerContext::client`] returns). `None` if the factory has no client.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use informer_runtime::controller::{Action, Controller, reconciler_fn};
    /// # use informer_runtime::factory::{InformerFactory, InformerParams};
    /// # use informer_testing::MemoryListerWatcher;
    /// # use k8s_openapi::api::core::v1::Pod;
    /// # let factory = InformerFactory::without_client();
    /// # let _pods = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// # let controller = Controller::<Pod>::builder(&factory)
    /// #     .build(reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// assert!(controller.client().is_none()); // a factory without a client
    /// ```
    pub fn client(&self) -> Option<&Client> {
        self.reconcile_client.handed_out();
        self.reconcile_client.get()
    }

    /// Records that a manager took the controller to run (so dropping it does not warn).
    pub(crate) fn mark_used(&mut self) {
        self.used = true;
    }

    /// The client reconciles write through, handed to a context.
    pub(crate) fn reconcile_client(&self) -> Arc<consistency::ReconcileClient> {
        self.reconcile_client.handed_out();
        self.reconcile_client.clone()
    }

    /// Runs the controller until `cancel` is cancelled: starts its informers, waits until
    /// their caches have synced, then reconciles with its workers. On cancel, stops taking
    /// keys, lets reconciles in flight finish up to the shutdown timeout, removes its
    /// handlers and shuts its queue down. If an informer stops before it synced, the
    /// controller stops (logged).
    ///
    /// # Panics
    /// Outside a Tokio runtime.
    pub async fn run(mut self, cancel: CancellationToken) {
        self.used = true;
        self.sources.start();
        if self.sources.wait_synced(self.name(), &cancel).await {
            let never = CancellationToken::new();
            self.runner.run_workers(&cancel, &never, None).await;
        }
        self.shutdown().await;
    }

    /// Shuts the queue down and releases the informers.
    async fn shutdown(&self) {
        self.runner.state.queue.shut_down();
        self.sources.stop().await;
    }
}

impl<K: Clone + Send + Sync + 'static> ControllerMetrics for Controller<K> {
    fn probe(&self) -> Arc<dyn ControllerProbe> {
        self.probe.clone()
    }
}

impl<K: Clone> Drop for Controller<K> {
    fn drop(&mut self) {
        if !self.used && !std::thread::panicking() {
            let name = &self.runner.state.name;
            tracing::warn!(
                controller = %name,
                "a controller was built and dropped without running: it reconciled nothing. \
                 Pass it to Manager::add, or run it with Controller::run"
            );
            crate::fallback::report(format_args!(
                "controller {name} was built and dropped without running: it reconciled \
                 nothing. Pass it to Manager::add, or run it with Controller::run"
            ));
        }
        // A controller dropped without running must not let its queue grow forever: its
        // handlers stay registered until its informers are released, and keep adding.
        self.runner.state.queue.shut_down();
    }
}

/// A controller of any type, as a [`Manager`](crate::manager::Manager) drives it.
pub(crate) trait ErasedController: Send + Sync {
    fn name(&self) -> &str;
    fn sources(&self) -> &Arc<Sources>;
    /// Reconciles until `graceful` (finish in flight) or `hard` (drop in flight).
    fn run_workers<'a>(
        &'a self,
        graceful: &'a CancellationToken,
        hard: &'a CancellationToken,
        ownership: Option<Ownership>,
    ) -> BoxFuture<'a, ()>;
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

impl<K: Clone + Send + Sync + 'static> ErasedController for Controller<K> {
    fn name(&self) -> &str {
        Controller::name(self)
    }

    fn sources(&self) -> &Arc<Sources> {
        &self.sources
    }

    fn run_workers<'a>(
        &'a self,
        graceful: &'a CancellationToken,
        hard: &'a CancellationToken,
        ownership: Option<Ownership>,
    ) -> BoxFuture<'a, ()> {
        self.runner.run_workers(graceful, hard, ownership).boxed()
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Controller::shutdown(self).boxed()
    }
}

#[cfg(test)]
mod tests;
