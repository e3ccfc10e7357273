//! What `#[derive(ControllerSpec)]` implements ([`ControllerSpec`]) and what its user
//! implements ([`Reconcile`]). The entry points that run a derived controller (`run`,
//! `run_until`, `add_to`) are [`RunController`](crate::manager::RunController)'s, in
//! `manager`; what a reconcile reads ([`Context`]) is in `context.rs`.
//!
//! The derive turns the struct's `#[controller(...)]` attributes into calls to
//! [`ControllerBuilder`] (in [`ControllerSpec::configure`]) and generates a struct of typed
//! listers, one per resource (`ctx.deployments()`, `ctx.replica_sets()`); nothing here is
//! hidden from a hand-written implementation.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use informer_core::queue::QueueMetrics;
use informer_core::{Indexer, ObjectKey, Queue};

use super::{
    Action, BuildError, Context, Controller, ControllerBuilder, ControllerResource, KeyReconciler,
    ReconcileError,
};
use crate::factory::{CachePolicy, InformerFactory};

/// A controller described by a type: its primary resource, how it is wired
/// ([`configure`](Self::configure)) and the listers its reconciles read besides the primary
/// one ([`Listers`](Self::Listers)). Implemented by `#[derive(ControllerSpec)]`; the user
/// implements [`Reconcile`] and calls an entry point: [`into_controller`](Self::into_controller),
/// or `run`, `run_until` or `add_to` of [`RunController`](crate::manager::RunController).
///
/// A hand-written implementation (what the derive generates, in short):
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError,
/// };
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Audit;
///
/// impl ControllerSpec for Audit {
///     type Resource = ConfigMap;
///     type Listers = ();
///     fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
///         builder.name("audit").workers(2)
///     }
///     fn listers(_controller: &Controller<ConfigMap>) {}
/// }
///
/// impl Reconcile for Audit {
///     async fn reconcile(
///         &self,
///         ctx: &Context<Self>,
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

    /// What each reconcile reads besides what every [`Context`] has (client, primary lister,
    /// queue): `#[derive(ControllerSpec)]` generates a struct `<Name>Listers` with one
    /// accessor per resource, reached through `ctx` (`Context` derefs to it). `()` for none.
    type Listers: Send + Sync + 'static;

    /// Whether the controller keeps `metadata.managedFields` in its caches when it creates
    /// its own factory ([`RunController::run`](crate::manager::RunController::run)). `false`
    /// unless `#[controller(keep_managed_fields)]`: `k8s-openapi` holds managed fields as a
    /// JSON value tree (about 10 KB per Pod), and controllers rarely read them.
    const KEEP_MANAGED_FIELDS: bool = false;

    /// What the caches hold when the controller creates its own factory
    /// ([`RunController::run`](crate::manager::RunController::run)):
    /// [`CachePolicy::COMPACT`] (about 1.5 KB per cached Pod instead of 27 KB; a read of an
    /// object that is not hot decodes it, tens of microseconds, which the reconcile's API
    /// calls dwarf). To cache decoded objects, build the controller over a factory of your
    /// own (`into_controller`, or `add_to` a manager) with
    /// [`InformerFactory::cache_policy`]`(CachePolicy::Decoded)`, or cache a
    /// [view](crate::view) of the resource.
    const CACHE_POLICY: CachePolicy = CachePolicy::COMPACT;

    /// Applies the controller's settings (watched resources, children, indexes, queue,
    /// workers...) to `builder`; `self` can hand state to a custom store or queue.
    fn configure(
        &self,
        builder: ControllerBuilder<Self::Resource>,
    ) -> ControllerBuilder<Self::Resource>;

    /// The listers of `controller` (called once, when it is built).
    fn listers(controller: &Controller<Self::Resource>) -> Self::Listers;

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
        let context = ContextCell::<Self>::new();
        let builder = Controller::builder(factory).with_context_cell(Box::new(context.clone()));
        let builder = self.configure(builder);
        let spec = Arc::new(self);
        let reconciler = Derived {
            spec: spec.clone(),
            context: context.clone(),
        };
        let controller = builder.build(reconciler)?;
        // Set before anything can reconcile: workers start only in `run`.
        let _ = context
            .0
            .set(Context::<Self>::new(&controller).with_spec(spec));
        Ok(controller)
    }
}

/// The reconcile function of a [`ControllerSpec`]: what `#[derive(ControllerSpec)]` asks its
/// user to write, beside the children it declares.
///
/// Called with the controller's context, the key taken from the queue and the object the
/// cache holds for it (`None`: deleted, or never seen); the guarantees and the meaning of
/// the answers are those of [`KeyReconciler`]. Write it as an `async fn`. Declared children
/// (`children(...)`, [`ControllerBuilder::children`]) are brought in line before it runs;
/// a controller whose work is all in its children writes `impl Reconcile for Name {}`: the
/// provided `reconcile` does nothing more.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError,
/// };
/// use k8s_openapi::api::core::v1::Secret;
///
/// struct Rotation;
/// # impl ControllerSpec for Rotation {
/// #     type Resource = Secret;
/// #     type Listers = ();
/// #     fn configure(&self, b: ControllerBuilder<Secret>) -> ControllerBuilder<Secret> { b }
/// #     fn listers(_: &Controller<Secret>) {}
/// # }
///
/// impl Reconcile for Rotation {
///     async fn reconcile(
///         &self,
///         _ctx: &Context<Self>,
///         _key: &ObjectKey,
///         secret: Option<Arc<Secret>>,
///     ) -> Result<Action, ReconcileError> {
///         let Some(_secret) = secret else { return Ok(Action::Done) };
///         Ok(Action::requeue_after(std::time::Duration::from_secs(3600)))
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` derives `ControllerSpec` but does not implement `Reconcile`",
    label = "`{Self}` does not implement `Reconcile`",
    note = "write `impl Reconcile for {Self} {{ async fn reconcile(&self, ctx: &Context<Self>, key: &ObjectKey, obj: Option<Arc<..>>) -> Result<Action, ReconcileError> {{ .. }} }}`, or `impl Reconcile for {Self} {{}}` if its declared children are all it does"
)]
pub trait Reconcile: ControllerSpec {
    /// Reconciles `key`; `obj` is the cached object, `None` if the cache has none. Runs after
    /// the declared children were brought in line, and before the declared status is
    /// written (only if this succeeds). Provided: does nothing more.
    ///
    /// # Errors
    /// A [`ReconcileError`]: transient ones are retried with backoff, terminal ones are not.
    fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        obj: Option<Arc<Self::Resource>>,
    ) -> impl Future<Output = Result<Action, ReconcileError>> + Send {
        let _ = (ctx, key, obj);
        async { Ok(Action::Done) }
    }

    /// Decides what happens to `key` after a failed reconcile: an error returned by
    /// [`reconcile`](Self::reconcile), by the declared children before it, or by the
    /// declared status after it (which is not written after a failed reconcile)
    /// (kube-runtime's `error_policy`; with a status write, java-operator-sdk's
    /// `updateErrorStatus`). `obj` is the object the reconcile was given. Provided:
    /// [`ReconcileError::default_action`] (a transient error retried after the key's
    /// backoff, a terminal one not retried). The answers, and where it runs, are those of
    /// [`KeyReconciler::on_error`].
    ///
    /// A failure recorded in the object's status, then the default retry:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use informer_core::ObjectKey;
    /// # use informer_runtime::controller::{Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError};
    /// # use k8s_openapi::api::core::v1::Secret;
    /// # struct Rotation;
    /// # impl ControllerSpec for Rotation {
    /// #     type Resource = Secret;
    /// #     type Listers = ();
    /// #     fn configure(&self, b: ControllerBuilder<Secret>) -> ControllerBuilder<Secret> { b }
    /// #     fn listers(_: &Controller<Secret>) {}
    /// # }
    /// impl Reconcile for Rotation {
    ///     async fn on_error(
    ///         &self,
    ///         ctx: &Context<Self>,
    ///         key: &ObjectKey,
    ///         _secret: Option<Arc<Secret>>,
    ///         error: &ReconcileError,
    ///     ) -> Action {
    ///         // Say, patch a `Ready=False` condition (informer_runtime::conditions) into the
    ///         // status with ctx.client(); here, an Event.
    ///         let _ = (ctx, key);
    ///         tracing::warn!(%key, %error, "rotation failed");
    ///         error.default_action()
    ///     }
    /// }
    /// ```
    fn on_error(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        obj: Option<Arc<Self::Resource>>,
        error: &ReconcileError,
    ) -> impl Future<Output = Action> + Send {
        let _ = (ctx, key, obj);
        let action = error.default_action();
        async move { action }
    }

    /// Cleans up after `obj`, which is being deleted and still carries the controller's
    /// finalizer (`finalizer = "example.com/cleanup"` in `#[controller(..)]`): release what
    /// no owner reference cleans up (state outside the cluster). Runs instead of
    /// [`reconcile`](Self::reconcile), once the declared children in other namespaces are
    /// deleted; [`Action::Done`] removes the finalizer, [`Action::RequeueAfter`] and
    /// [`Action::Requeue`] keep it and run the cleanup again later, an error keeps it and
    /// goes to [`on_error`](Self::on_error) (see [`KeyReconciler::cleanup`]). It may run
    /// more than once for one deletion: make it idempotent. Provided: nothing to clean up
    /// (the finalizer still holds the object until its children in other namespaces are
    /// gone). Never called for a controller without a finalizer: an object without one is
    /// gone before any controller can see it being deleted.
    ///
    /// # Errors
    /// A [`ReconcileError`], as from [`reconcile`](Self::reconcile).
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use informer_core::ObjectKey;
    /// # use informer_runtime::controller::{Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError};
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # struct Mirror;
    /// # impl ControllerSpec for Mirror {
    /// #     type Resource = ConfigMap;
    /// #     type Listers = ();
    /// #     fn configure(&self, b: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> { b.finalizer("example.com/mirror") }
    /// #     fn listers(_: &Controller<ConfigMap>) {}
    /// # }
    /// impl Reconcile for Mirror {
    ///     async fn cleanup(
    ///         &self,
    ///         _ctx: &Context<Self>,
    ///         key: &ObjectKey,
    ///         _cm: Arc<ConfigMap>,
    ///     ) -> Result<Action, ReconcileError> {
    ///         // Delete the outside copy of the ConfigMap; then the finalizer goes.
    ///         tracing::info!(%key, "outside copy deleted");
    ///         Ok(Action::Done)
    ///     }
    /// }
    /// ```
    fn cleanup(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        obj: Arc<Self::Resource>,
    ) -> impl Future<Output = Result<Action, ReconcileError>> + Send {
        let _ = (ctx, key, obj);
        async { Ok(Action::Done) }
    }
}

/// The [`Context`] of the [`ControllerSpec`] being built, set once the controller is built:
/// how functions given to the builder before the context exists (children computed from the
/// context's listers) reach it. [`ControllerSpec::into_controller`] makes one and hands it
/// to the builder ([`ControllerBuilder::context_cell`]).
pub struct ContextCell<C: ControllerSpec>(Arc<OnceLock<Context<C>>>);

impl<C: ControllerSpec> Clone for ContextCell<C> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<C: ControllerSpec> std::fmt::Debug for ContextCell<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ContextCell")
            .field(&self.0.get().is_some())
            .finish()
    }
}

impl<C: ControllerSpec> ContextCell<C> {
    /// An empty cell.
    pub(crate) fn new() -> Self {
        Self(Arc::new(OnceLock::new()))
    }

    /// The context, once the controller is built.
    pub fn get(&self) -> Option<&Context<C>> {
        self.0.get()
    }
}

/// A [`Reconcile`] as a [`KeyReconciler`], with the context set once the controller is built.
struct Derived<C: ControllerSpec> {
    spec: Arc<C>,
    context: ContextCell<C>,
}

#[async_trait]
impl<C: Reconcile> KeyReconciler<C::Resource> for Derived<C> {
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

    async fn on_error(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<C::Resource>>,
        error: &ReconcileError,
    ) -> Action {
        match self.context.get() {
            Some(ctx) => self.spec.on_error(ctx, key, obj, error).await,
            None => error.default_action(),
        }
    }
    async fn cleanup(
        &self,
        key: &ObjectKey,
        obj: Arc<C::Resource>,
    ) -> Result<Action, ReconcileError> {
        match self.context.get() {
            Some(ctx) => self.spec.cleanup(ctx, key, obj).await,
            None => Err(ReconcileError::transient(NotBuilt)),
        }
    }
}

/// A reconcile ran before its controller was fully built (never, through the entry points).
#[derive(Debug, thiserror::Error)]
#[error("the controller's context is not set yet")]
pub(crate) struct NotBuilt;

/// What `#[controller(store = f)]` accepts: `fn() -> Arc<dyn Indexer<K>>`, or
/// `fn(&C) -> Arc<dyn Indexer<K>>` to build the store from the controller struct's state;
/// either may return `Arc<MyStore>` instead, the `Arc` of a store type of your own
/// ([`IntoStore`]). (`Marker` only tells the forms apart.)
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
/// fn typed() -> Arc<ThreadSafeStore<Pod>> { Arc::new(ThreadSafeStore::new()) }
/// let pods = Pods { capacity_hint: 10 };
/// assert!(MakeStore::<Pods, Pod, _>::make_store(plain, &pods).is_empty());
/// assert!(MakeStore::<Pods, Pod, _>::make_store(from_state, &pods).is_empty());
/// assert!(MakeStore::<Pods, Pod, _>::make_store(typed, &pods).is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot make the cache of this controller",
    label = "expected `fn() -> Arc<dyn Indexer<{K}>>` or `fn(&{C}) -> Arc<dyn Indexer<{K}>>`",
    note = "`store = f` names a function that returns the store: `fn() -> Arc<dyn Indexer<{K}>>`, or `fn(&{C}) -> Arc<dyn Indexer<{K}>>` to use the controller's state; `Arc<MyStore>` of a type implementing `Indexer<{K}>` works as well"
)]
pub trait MakeStore<C, K, Marker> {
    /// Makes the store.
    fn make_store(self, controller: &C) -> Arc<dyn Indexer<K>>;
}

impl<C, K, F, R> MakeStore<C, K, ((), R)> for F
where
    F: FnOnce() -> R,
    R: IntoStore<K>,
{
    fn make_store(self, _controller: &C) -> Arc<dyn Indexer<K>> {
        self().into_store()
    }
}

impl<C, K, F, R> MakeStore<C, K, ((C,), R)> for F
where
    F: FnOnce(&C) -> R,
    R: IntoStore<K>,
{
    fn make_store(self, controller: &C) -> Arc<dyn Indexer<K>> {
        self(controller).into_store()
    }
}

/// What a `store = f` function may return: `Arc<dyn Indexer<K>>`, or the `Arc` of a store
/// type of your own (`Arc<MyStore>`), so that you can keep a handle of its type.
pub trait IntoStore<K> {
    /// The store, as the controller holds it.
    fn into_store(self) -> Arc<dyn Indexer<K>>;
}

impl<K> IntoStore<K> for Arc<dyn Indexer<K>> {
    fn into_store(self) -> Arc<dyn Indexer<K>> {
        self
    }
}

impl<K, S: Indexer<K> + 'static> IntoStore<K> for Arc<S> {
    fn into_store(self) -> Arc<dyn Indexer<K>> {
        self
    }
}

/// What `namespace = f` of `#[controller(...)]` accepts, for a namespace known only when the
/// controller is built (the operator's own, from the `POD_NAMESPACE` the Downward API
/// gives it, or a field of the controller struct): `fn() -> N` or `fn(&C) -> N`, `N` a
/// `String` or `&'static str` (anything `Into<String>`). It is called once, when the
/// controller is built. (`Marker` only tells the forms apart.)
///
/// ```
/// use informer_runtime::controller::MakeNamespace;
///
/// struct Operator {
///     namespace: String,
/// }
/// fn own(operator: &Operator) -> String {
///     operator.namespace.clone()
/// }
/// fn from_env() -> String {
///     std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "default".into())
/// }
/// let operator = Operator { namespace: "shop".into() };
/// assert_eq!(MakeNamespace::<Operator, _>::make_namespace(own, &operator), "shop");
/// assert!(!MakeNamespace::<Operator, _>::make_namespace(from_env, &operator).is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot name the namespace of this controller",
    label = "expected `fn() -> String` or `fn(&{C}) -> String`",
    note = "`namespace = f` names a function called once, when the controller is built, that returns the namespace to watch (say, from the POD_NAMESPACE environment variable); write `namespace = \"shop\"` for a fixed one"
)]
pub trait MakeNamespace<C, Marker> {
    /// The namespace.
    fn make_namespace(self, controller: &C) -> String;
}

impl<C, F, N> MakeNamespace<C, ((), N)> for F
where
    F: FnOnce() -> N,
    N: Into<String>,
{
    fn make_namespace(self, _controller: &C) -> String {
        self().into()
    }
}

impl<C, F, N> MakeNamespace<C, ((C,), N)> for F
where
    F: FnOnce(&C) -> N,
    N: Into<String>,
{
    fn make_namespace(self, controller: &C) -> String {
        self(controller).into()
    }
}

/// What `#[controller(queue = f)]` accepts: `fn(Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>`,
/// or `fn(&C, Arc<dyn QueueMetrics>) -> Arc<dyn Queue<ObjectKey>>` to build the queue from
/// the controller struct's state; either may return `Arc<MyQueue>` instead, the `Arc` of a
/// queue type of your own ([`IntoQueue`]). Install the metrics in the queue to keep the
/// workqueue metrics. (`Marker` only tells the forms apart.)
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

impl<C, F, R> MakeQueue<C, ((), R)> for F
where
    F: FnOnce(Arc<dyn QueueMetrics>) -> R,
    R: IntoQueue,
{
    fn make_queue(
        self,
        _controller: &C,
        metrics: Arc<dyn QueueMetrics>,
    ) -> Arc<dyn Queue<ObjectKey>> {
        self(metrics).into_queue()
    }
}

impl<C, F, R> MakeQueue<C, ((C,), R)> for F
where
    F: FnOnce(&C, Arc<dyn QueueMetrics>) -> R,
    R: IntoQueue,
{
    fn make_queue(
        self,
        controller: &C,
        metrics: Arc<dyn QueueMetrics>,
    ) -> Arc<dyn Queue<ObjectKey>> {
        self(controller, metrics).into_queue()
    }
}

/// What a `queue = f` function may return: `Arc<dyn Queue<ObjectKey>>`, or the `Arc` of a
/// queue type of your own (`Arc<MyQueue>`), so that you can keep a handle of its type.
pub trait IntoQueue {
    /// The queue, as the controller holds it.
    fn into_queue(self) -> Arc<dyn Queue<ObjectKey>>;
}

impl IntoQueue for Arc<dyn Queue<ObjectKey>> {
    fn into_queue(self) -> Arc<dyn Queue<ObjectKey>> {
        self
    }
}

impl<Q: Queue<ObjectKey> + 'static> IntoQueue for Arc<Q> {
    fn into_queue(self) -> Arc<dyn Queue<ObjectKey>> {
        self
    }
}

/// What `watches(W, mapper = f)` of `#[derive(ControllerSpec)]` accepts: `fn(&W) ->
/// Vec<ObjectKey>`, or `fn(&W) -> Option<ObjectKey>` for at most one key; either with a
/// second argument `&Context<S>` to read the controller's listers (controller-runtime's
/// `EnqueueRequestsFromMapFunc` reading a cache: the objects of an index). (`Marker` only
/// tells the forms apart.)
///
/// ```
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Context, Controller, ControllerBuilder, ControllerSpec, ContextCell, Mapper,
/// };
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
///
/// struct Apps;
/// impl ControllerSpec for Apps {
///     type Resource = Pod;
///     type Listers = ();
///     fn configure(&self, b: ControllerBuilder<Pod>) -> ControllerBuilder<Pod> { b }
///     fn listers(_: &Controller<Pod>) {}
/// }
///
/// // The Pod named by the ConfigMap's `app` label.
/// fn named_app(cm: &ConfigMap) -> Option<ObjectKey> {
///     let app = cm.metadata.labels.as_ref()?.get("app")?;
///     Some(ObjectKey::new(cm.metadata.namespace.as_deref(), app))
/// }
/// // Every cached Pod of the ConfigMap's namespace.
/// fn pods_of_namespace(cm: &ConfigMap, ctx: &Context<Apps>) -> Vec<ObjectKey> {
///     let ns = cm.metadata.namespace.as_deref().unwrap_or_default();
///     ctx.lister().namespaced(ns).list().iter().map(|p| ObjectKey::from_resource(&**p).unwrap()).collect()
/// }
/// # let factory = informer_runtime::factory::InformerFactory::without_client();
/// // Set once the controller is built (by `into_controller`); empty here.
/// let cell: ContextCell<Apps> = Controller::<Pod>::builder(&factory).context_cell::<Apps>();
/// assert!(Mapper::<Apps, ConfigMap, _>::keys(&named_app, &ConfigMap::default(), &cell).is_empty());
/// assert!(Mapper::<Apps, ConfigMap, _>::keys(&pods_of_namespace, &ConfigMap::default(), &cell).is_empty());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot map a `{W}` to the keys to reconcile",
    label = "expected `fn(&{W}) -> Vec<ObjectKey>` or `fn(&{W}) -> Option<ObjectKey>`, optionally with a second argument `&Context<{S}>`",
    note = "`mapper = f` names a function from a changed `&{W}` (and, to read the controller's listers, `&Context<{S}>`) to the keys of the objects to reconcile: `Vec<ObjectKey>`, or `Option<ObjectKey>` for at most one; a closure needs its types written out (`|w: &{W}| -> Option<ObjectKey> {{ .. }}`)"
)]
pub trait Mapper<S: ControllerSpec, W, Marker> {
    /// The keys `object` maps to. A form that reads the context maps to no key while the
    /// context is not set (before the controller is built, when no event comes yet).
    fn keys(&self, object: &W, context: &ContextCell<S>) -> Vec<ObjectKey>;
}

impl<S: ControllerSpec, W, F> Mapper<S, W, Vec<ObjectKey>> for F
where
    F: Fn(&W) -> Vec<ObjectKey>,
{
    fn keys(&self, object: &W, _context: &ContextCell<S>) -> Vec<ObjectKey> {
        self(object)
    }
}

impl<S: ControllerSpec, W, F> Mapper<S, W, Option<ObjectKey>> for F
where
    F: Fn(&W) -> Option<ObjectKey>,
{
    fn keys(&self, object: &W, _context: &ContextCell<S>) -> Vec<ObjectKey> {
        self(object).into_iter().collect()
    }
}

impl<S: ControllerSpec, W, F> Mapper<S, W, fn(&S, Vec<ObjectKey>)> for F
where
    F: Fn(&W, &Context<S>) -> Vec<ObjectKey>,
{
    fn keys(&self, object: &W, context: &ContextCell<S>) -> Vec<ObjectKey> {
        context.get().map_or_else(Vec::new, |ctx| self(object, ctx))
    }
}

impl<S: ControllerSpec, W, F> Mapper<S, W, fn(&S, Option<ObjectKey>)> for F
where
    F: Fn(&W, &Context<S>) -> Option<ObjectKey>,
{
    fn keys(&self, object: &W, context: &ContextCell<S>) -> Vec<ObjectKey> {
        context
            .get()
            .and_then(|ctx| self(object, ctx))
            .into_iter()
            .collect()
    }
}
