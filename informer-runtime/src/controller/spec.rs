//! What `#[derive(Controller)]` implements ([`ControllerSpec`]) and what its user implements
//! ([`Reconcile`]). The entry points that run a derived controller (`run`, `run_until`,
//! `add_to`) are [`RunController`](crate::manager::RunController)'s, in `manager`.
//!
//! The derive turns the struct's `#[controller(...)]` attributes into calls to
//! [`ControllerBuilder`] (in [`ControllerSpec::configure`]) and generates a context type
//! with a typed lister per resource (`ctx.deployments()`, `ctx.replica_sets()`); nothing
//! here is hidden from a hand-written implementation.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use informer_core::queue::QueueMetrics;
use informer_core::{Indexer, ObjectKey, Queue};
use kube::Client;

use super::consistency::ReconcileClient;
use super::{
    Action, BuildError, Controller, ControllerBuilder, ControllerResource, ReconcileError,
    Reconciler,
};
use crate::factory::InformerFactory;
use crate::lister::Lister;

/// A controller described by a type: its primary resource, how it is wired
/// ([`configure`](Self::configure)) and the context its reconciles read
/// ([`Context`](Self::Context)). Implemented by `#[derive(Controller)]`; the user implements
/// [`Reconcile`] and calls an entry point: [`into_controller`](Self::into_controller), or
/// `run`, `run_until` or `add_to` of [`RunController`](crate::manager::RunController).
///
/// A hand-written implementation (what the derive generates, in short):
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Controller, ControllerBuilder, ControllerContext, ControllerSpec, Reconcile,
///     ReconcileError,
/// };
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Audit;
///
/// impl ControllerSpec for Audit {
///     type Resource = ConfigMap;
///     type Context = ControllerContext<ConfigMap>;
///     fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
///         builder.name("audit").workers(2)
///     }
///     fn context(controller: &Controller<ConfigMap>) -> Self::Context {
///         ControllerContext::new(controller)
///     }
/// }
///
/// impl Reconcile for Audit {
///     async fn reconcile(
///         &self,
///         ctx: &ControllerContext<ConfigMap>,
///         key: &ObjectKey,
///         cm: Option<Arc<ConfigMap>>,
///     ) -> Result<Action, ReconcileError> {
///         println!("{key}: {} cached", ctx.lister().len());
///         let _ = cm;
///         Ok(Action::Done)
///     }
/// }
/// ```
pub trait ControllerSpec: Sized + Send + Sync + 'static {
    /// The primary resource: the type whose keys are reconciled.
    type Resource: ControllerResource;

    /// What each reconcile can read: listers of every resource the controller watches, its
    /// queue and the client. `#[derive(Controller)]` generates a struct
    /// `<Name>Context` with one accessor per resource.
    type Context: Send + Sync + 'static;

    /// Whether the controller keeps `metadata.managedFields` in its caches when it creates
    /// its own factory ([`RunController::run`](crate::manager::RunController::run)). `false` unless `#[controller(keep_managed_fields)]`:
    /// `k8s-openapi` holds managed fields as a JSON value tree (about 11 KB per pod), and
    /// controllers rarely read them.
    const KEEP_MANAGED_FIELDS: bool = false;

    /// Applies the controller's settings (watched resources, indexes, queue, workers...)
    /// to `builder`; `self` can hand state to a custom store or queue.
    fn configure(
        &self,
        builder: ControllerBuilder<Self::Resource>,
    ) -> ControllerBuilder<Self::Resource>;

    /// The context of `controller` (called once, when it is built).
    fn context(controller: &Controller<Self::Resource>) -> Self::Context;

    /// Builds the controller over `factory` (its informers are shared with every other
    /// controller built from the same factory). Does not run it.
    ///
    /// # Errors
    /// See [`BuildError`].
    fn into_controller(
        self,
        factory: &InformerFactory,
    ) -> Result<Controller<Self::Resource>, BuildError>
    where
        Self: Reconcile,
    {
        let builder = self.configure(Controller::builder(factory));
        let context = Arc::new(OnceLock::new());
        let reconciler = Derived {
            spec: self,
            context: context.clone(),
        };
        let controller = builder.build(reconciler)?;
        // Set before anything can reconcile: workers start only in `run`.
        let _ = context.set(Self::context(&controller));
        Ok(controller)
    }
}

/// The reconcile function of a [`ControllerSpec`]: what `#[derive(Controller)]` asks its
/// user to write.
///
/// Called with the controller's context, the key taken from the queue and the object the
/// cache holds for it (`None`: deleted, or never seen); the guarantees and the meaning of
/// the answers are those of [`Reconciler`]. Write it as an `async fn`.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Controller, ControllerBuilder, ControllerContext, ControllerSpec, Reconcile,
///     ReconcileError,
/// };
/// use k8s_openapi::api::core::v1::Secret;
///
/// struct Rotation;
/// # impl ControllerSpec for Rotation {
/// #     type Resource = Secret;
/// #     type Context = ControllerContext<Secret>;
/// #     fn configure(&self, b: ControllerBuilder<Secret>) -> ControllerBuilder<Secret> { b }
/// #     fn context(c: &Controller<Secret>) -> Self::Context { ControllerContext::new(c) }
/// # }
///
/// impl Reconcile for Rotation {
///     async fn reconcile(
///         &self,
///         _ctx: &ControllerContext<Secret>,
///         _key: &ObjectKey,
///         secret: Option<Arc<Secret>>,
///     ) -> Result<Action, ReconcileError> {
///         let Some(_secret) = secret else { return Ok(Action::Done) };
///         Ok(Action::requeue_after(std::time::Duration::from_secs(3600)))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` derives `Controller` but has no reconcile function",
    label = "`{Self}` does not implement `Reconcile`",
    note = "write `impl Reconcile for {Self} {{ async fn reconcile(&self, ctx: &Context<Self>, key: &ObjectKey, obj: Option<Arc<..>>) -> Result<Action, ReconcileError> {{ .. }} }}`"
)]
pub trait Reconcile: ControllerSpec {
    /// Reconciles `key`; `obj` is the cached object, `None` if the cache has none.
    ///
    /// # Errors
    /// A [`ReconcileError`]: transient ones are retried with backoff, terminal ones are not.
    fn reconcile(
        &self,
        ctx: &Self::Context,
        key: &ObjectKey,
        obj: Option<Arc<Self::Resource>>,
    ) -> impl Future<Output = Result<Action, ReconcileError>> + Send;
}

/// The context type of controller `C`: `ctx: &Context<Self>` in a [`Reconcile`] impl.
///
/// ```
/// use informer_runtime::controller::{
///     Context, Controller, ControllerBuilder, ControllerContext, ControllerSpec,
/// };
/// use k8s_openapi::api::core::v1::Secret;
///
/// struct Rotation;
/// impl ControllerSpec for Rotation {
///     type Resource = Secret;
///     type Context = ControllerContext<Secret>;
///     fn configure(&self, b: ControllerBuilder<Secret>) -> ControllerBuilder<Secret> { b }
///     fn context(c: &Controller<Secret>) -> Self::Context { ControllerContext::new(c) }
/// }
///
/// fn cached(ctx: &Context<Rotation>) -> usize {
///     ctx.lister().len()
/// }
/// # let _ = cached;
/// ```
pub type Context<C> = <C as ControllerSpec>::Context;

/// A [`Reconcile`] as a [`Reconciler`], with the context set once the controller is built.
struct Derived<C: ControllerSpec> {
    spec: C,
    context: Arc<OnceLock<C::Context>>,
}

#[async_trait]
impl<C: Reconcile> Reconciler<C::Resource> for Derived<C> {
    async fn reconcile(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<C::Resource>>,
    ) -> Result<Action, ReconcileError> {
        match self.context.get() {
            Some(ctx) => self.spec.reconcile(ctx, key, obj).await,
            None => Err(ReconcileError::transient(NotBuilt)),
        }
    }
}

/// A reconcile ran before its controller was fully built (never, through the entry points).
#[derive(Debug, thiserror::Error)]
#[error("the controller's context is not set yet")]
struct NotBuilt;

/// The controller has no Kubernetes client: its factory was made with
/// [`InformerFactory::without_client`].
///
/// ```
/// use informer_runtime::controller::{NoClient, ReconcileError};
///
/// let error: ReconcileError = NoClient.into(); // what `ctx.client()?` returns in a reconcile
/// assert!(error.to_string().contains("no Kubernetes client"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("this controller has no Kubernetes client (its factory was made without one)")]
pub struct NoClient;

/// What every controller's context holds: the primary resource's lister, the queue, the
/// client and the controller's name. Generated contexts wrap one and add a lister per
/// owned or watched resource.
///
/// ```
/// # use std::sync::Arc;
/// # use informer_runtime::controller::{Action, Controller, ControllerContext, reconciler_fn};
/// # use informer_runtime::factory::{InformerFactory, InformerParams};
/// # use informer_testing::MemoryListerWatcher;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # let factory = InformerFactory::without_client();
/// # let _cms = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
/// # let controller = Controller::<ConfigMap>::builder(&factory)
/// #     .build(reconciler_fn(|_k, _c: Option<Arc<ConfigMap>>| async { Ok(Action::Done) }))
/// #     .unwrap();
/// let ctx = ControllerContext::new(&controller);
/// assert_eq!(ctx.name(), "configmap");
/// assert!(ctx.client().is_err(), "a factory without a client");
/// assert!(ctx.lister().is_empty());
/// ```
pub struct ControllerContext<K> {
    lister: Lister<K>,
    queue: Arc<dyn Queue<ObjectKey>>,
    client: Arc<ReconcileClient>,
    name: String,
}

impl<K> Clone for ControllerContext<K> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            queue: self.queue.clone(),
            client: self.client.clone(),
            name: self.name.clone(),
        }
    }
}

impl<K> fmt::Debug for ControllerContext<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerContext")
            .field("name", &self.name)
            .field("cached", &self.lister.len())
            .field("queued", &self.queue.len())
            .field("client", &self.client.get().is_some())
            .finish()
    }
}

impl<K: Clone + Send + Sync + 'static> ControllerContext<K> {
    /// The context of `controller`.
    pub fn new(controller: &Controller<K>) -> Self {
        Self {
            lister: controller.lister(),
            queue: controller.queue(),
            client: controller.reconcile_client(),
            name: controller.name().to_owned(),
        }
    }

    /// The lister of the primary resource.
    pub fn lister(&self) -> &Lister<K> {
        &self.lister
    }

    /// The controller's queue: add a key to have it reconciled.
    pub fn queue(&self) -> &Arc<dyn Queue<ObjectKey>> {
        &self.queue
    }

    /// The client to read and write through: the controller's factory's client, which,
    /// with [read-your-own-writes](super::ControllerBuilder::read_your_writes) on (the
    /// default), records every write a reconcile makes through it, so that the next
    /// reconcile of the same key waits until the caches have seen it. Writes made through
    /// any other client are not tracked.
    ///
    /// # Errors
    /// [`NoClient`] if the factory has none (it converts into a [`ReconcileError`], so
    /// `ctx.client()?` works in a reconcile).
    pub fn client(&self) -> Result<&Client, NoClient> {
        self.client.get().ok_or(NoClient)
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The lister of `C` that controller `controller` watches. For generated contexts: a
/// derived controller always watches the types it names, so a missing one is a bug in the
/// derive and panics with what was asked.
///
/// # Panics
/// If `controller` does not watch `C`.
#[doc(hidden)]
pub fn related_lister<K, C>(controller: &Controller<K>) -> Lister<C>
where
    K: Clone + Send + Sync + 'static,
    C: 'static,
{
    controller.lister_of::<C>().unwrap_or_else(|| {
        panic!(
            "controller {} does not watch {}",
            controller.name(),
            std::any::type_name::<C>()
        )
    })
}

/// What `#[controller(store = f)]` accepts: `fn() -> Arc<dyn Indexer<K>>`, or
/// `fn(&C) -> Arc<dyn Indexer<K>>` to build the store from the controller struct's state.
/// (`Marker` only tells the two apart.)
///
/// ```
/// use std::sync::Arc;
/// use informer_core::{Indexer, ThreadSafeStore};
/// use informer_runtime::controller::MakeStore;
/// use k8s_openapi::api::core::v1::Pod;
///
/// struct Pods { capacity_hint: usize }
/// fn plain() -> Arc<dyn Indexer<Pod>> { Arc::new(ThreadSafeStore::new()) }
/// fn from_state(c: &Pods) -> Arc<dyn Indexer<Pod>> {
///     let _ = c.capacity_hint;
///     Arc::new(ThreadSafeStore::new())
/// }
/// let pods = Pods { capacity_hint: 10 };
/// assert!(MakeStore::<Pods, Pod, _>::make_store(plain, &pods).is_empty());
/// assert!(MakeStore::<Pods, Pod, _>::make_store(from_state, &pods).is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot make the cache of this controller",
    label = "expected `fn() -> Arc<dyn Indexer<{K}>>` or `fn(&{C}) -> Arc<dyn Indexer<{K}>>`",
    note = "`store = f` names a function that returns the store: `fn() -> Arc<dyn Indexer<{K}>>`, or `fn(&{C}) -> Arc<dyn Indexer<{K}>>` to use the controller's state"
)]
pub trait MakeStore<C, K, Marker> {
    /// Makes the store.
    fn make_store(self, controller: &C) -> Arc<dyn Indexer<K>>;
}

impl<C, K, F> MakeStore<C, K, ()> for F
where
    F: FnOnce() -> Arc<dyn Indexer<K>>,
{
    fn make_store(self, _controller: &C) -> Arc<dyn Indexer<K>> {
        self()
    }
}

impl<C, K, F> MakeStore<C, K, (C,)> for F
where
    F: FnOnce(&C) -> Arc<dyn Indexer<K>>,
{
    fn make_store(self, controller: &C) -> Arc<dyn Indexer<K>> {
        self(controller)
    }
}

/// What `#[controller(queue = f)]` accepts: `fn(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>`,
/// or `fn(&C, Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>` to build the queue from
/// the controller struct's state. Install the metrics in the queue to keep the workqueue
/// metrics. (`Marker` only tells the two apart.)
///
/// ```
/// use std::sync::Arc;
/// use informer_core::queue::QueueMetrics;
/// use informer_core::{ObjectKey, Queue, WorkQueue};
/// use informer_runtime::controller::MakeQueue;
///
/// struct Jobs;
/// fn plain(metrics: Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>> {
///     Arc::new(WorkQueue::builder().metrics(metrics).build())
/// }
/// # let metrics = informer_runtime::controller::Controller::<k8s_openapi::api::core::v1::Pod>::builder(
/// #     &informer_runtime::factory::InformerFactory::without_client()).queue_metrics();
/// let queue = MakeQueue::<Jobs, _>::make_queue(plain, &Jobs, metrics);
/// assert!(queue.is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot make the queue of this controller",
    label = "expected `fn(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>` or `fn(&{C}, Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>`",
    note = "`queue = f` names a function that returns the queue, given the metric hooks to install in it"
)]
pub trait MakeQueue<C, Marker> {
    /// Makes the queue.
    fn make_queue(
        self,
        controller: &C,
        metrics: Arc<dyn QueueMetrics>,
    ) -> Arc<dyn Queue<ObjectKey>>;
}

impl<C, F> MakeQueue<C, ()> for F
where
    F: FnOnce(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>,
{
    fn make_queue(
        self,
        _controller: &C,
        metrics: Arc<dyn QueueMetrics>,
    ) -> Arc<dyn Queue<ObjectKey>> {
        self(metrics)
    }
}

impl<C, F> MakeQueue<C, (C,)> for F
where
    F: FnOnce(&C, Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>,
{
    fn make_queue(
        self,
        controller: &C,
        metrics: Arc<dyn QueueMetrics>,
    ) -> Arc<dyn Queue<ObjectKey>> {
        self(controller, metrics)
    }
}
