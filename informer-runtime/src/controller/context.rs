//! What a reconcile reads and writes through: [`Context`] (of a [`ControllerSpec`]: the
//! client, typed `Api`s, the primary lister, the queue, and the spec's own listers) and
//! [`ControllerContext`], the part every controller has.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use futures::future::BoxFuture;
use informer_core::{ObjectKey, Queue};
use kube::{Api, Client};

use super::consistency::ReconcileClient;
use super::scope::ControllerScope;
use super::{Controller, ControllerResource, ControllerSpec};
use crate::events::EventRecorder;
use crate::lister::Lister;

/// What each reconcile of controller `C` reads and writes through: `ctx: &Context<Self>` in a
/// [`Reconcile`](super::Reconcile) impl.
///
/// - [`client`](Self::client) and [`api`](Self::api): the controller's client, and a typed
///   `Api` over it in one call. Writes made through either are recorded for
///   read-your-own-writes (see
///   [`ControllerBuilder::read_your_writes`](super::ControllerBuilder::read_your_writes)).
/// - [`lister`](Self::lister), [`queue`](Self::queue), [`name`](Self::name): the primary
///   resource's cache, the controller's queue and its name.
/// - [`recorder`](Self::recorder): Kubernetes Events reported as the controller.
/// - [`children_report`](Self::children_report): what the declared children step did
///   before this reconcile (the children created, updated and deleted).
/// - Everything of [`C::Listers`](ControllerSpec::Listers), through `Deref`: for a
///   `#[derive(ControllerSpec)]` struct `Deployments`, the generated `DeploymentsListers`
///   with one accessor per resource (`ctx.deployments()`, `ctx.replica_sets()`).
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError,
/// };
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
///
/// struct Stamp;
/// impl ControllerSpec for Stamp {
///     type Resource = ConfigMap;
///     type Listers = ();
///     fn configure(&self, b: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> { b }
///     fn listers(_: &Controller<ConfigMap>) {}
/// }
///
/// impl Reconcile for Stamp {
///     async fn reconcile(
///         &self,
///         ctx: &Context<Self>,
///         key: &ObjectKey,
///         cm: Option<Arc<ConfigMap>>,
///     ) -> Result<Action, ReconcileError> {
///         let Some(_cm) = cm else { return Ok(Action::Done) };
///         let secrets = ctx.api::<Secret>(key.namespace()); // an Api<Secret> in the key's namespace
///         let _found = secrets.get_opt(key.name()).await?;
///         Ok(Action::Done)
///     }
/// }
/// ```
pub struct Context<C: ControllerSpec> {
    core: ControllerContext<C::Resource>,
    listers: C::Listers,
    spec: Option<Arc<C>>,
}

impl<C: ControllerSpec> Context<C> {
    /// The context of `controller`: its core, and the spec's listers
    /// ([`ControllerSpec::listers`]).
    pub fn new(controller: &Controller<C::Resource>) -> Self {
        Self {
            core: ControllerContext::new(controller),
            listers: C::listers(controller),
            spec: None,
        }
    }

    /// This context, carrying the controller's own value.
    pub(crate) fn with_spec(mut self, spec: Arc<C>) -> Self {
        self.spec = Some(spec);
        self
    }

    /// The controller's own value: the struct `#[derive(ControllerSpec)]` is on, with its
    /// fields (a clock, settings, a client of another service), for the functions given
    /// `&Context<Self>` beside the object (declared children, status, mappers, filters),
    /// which `reconcile`'s `&self` does not reach. Always `Some` in a controller built with
    /// [`ControllerSpec::into_controller`] (what `run`, `run_until` and a manager use);
    /// `None` in a context made with [`Context::new`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Context, Controller, ControllerBuilder, ControllerSpec};
    /// use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus};
    ///
    /// /// Reads the time from its struct, so that a test can give it a clock.
    /// struct CronJobs {
    ///     now: Arc<dyn Fn() -> i64 + Send + Sync>,
    /// }
    /// # impl ControllerSpec for CronJobs {
    /// #     type Resource = CronJob;
    /// #     type Listers = ();
    /// #     fn configure(&self, b: ControllerBuilder<CronJob>) -> ControllerBuilder<CronJob> { b }
    /// #     fn listers(_: &Controller<CronJob>) {}
    /// # }
    ///
    /// // `status = status` in `#[controller(..)]`.
    /// fn status(cron: &CronJob, ctx: &Context<CronJobs>) -> CronJobStatus {
    ///     let now = ctx.spec().map_or(0, |spec| (spec.now)());
    ///     # let _ = (cron, now);
    ///     CronJobStatus::default()
    /// }
    /// # let _ = status;
    /// ```
    pub fn spec(&self) -> Option<&C> {
        self.spec.as_deref()
    }

    /// The client to read and write through: the controller's factory's client, which,
    /// with read-your-own-writes on (the default), records every write a reconcile makes
    /// through it, so that the next reconcile of the same key waits until the caches have
    /// seen it. A controller whose factory has no client (tests over memory sources) gets a
    /// client whose every request fails with [`NoClient`].
    pub fn client(&self) -> &Client {
        self.core.client_or_failing()
    }

    /// What the declared children step did for the key this reconcile is for (the
    /// children created, updated and deleted, and whether the status was written), as
    /// [`ChildrenReport::current`](super::ChildrenReport::current) describes: say, to record an Event for each child
    /// created. `None` for a controller without declared children, and outside a reconcile.
    ///
    /// ```no_run
    /// # use informer_runtime::controller::{Context, ControllerSpec};
    /// use informer_runtime::events::{Event, EventType};
    /// # async fn demo<C: ControllerSpec>(ctx: &Context<C>, parent: &C::Resource)
    /// # where C::Resource: kube::Resource<DynamicType = ()> {
    /// if let Some(report) = ctx.children_report() {
    ///     for child in &report.created {
    ///         let event = Event {
    ///             type_: EventType::Normal,
    ///             reason: "Created".into(),
    ///             action: "Create".into(),
    ///             note: Some(format!("created {child}")),
    ///             related: Some(child.object_ref()),
    ///         };
    ///         // An Event about the parent; a failure is logged, the reconcile goes on.
    ///         if let Err(error) = ctx.recorder().publish_for(parent, &event).await {
    ///             tracing::warn!(%error, "event not recorded");
    ///         }
    ///     }
    /// }
    /// # }
    /// ```
    pub fn children_report(&self) -> Option<super::ChildrenReport> {
        super::ChildrenReport::current()
    }

    /// A typed `Api` of `T` over [`client`](Self::client): in `namespace` (a `&str`, or
    /// `key.namespace()`), or across all namespaces with `None`; cluster-scoped types ignore
    /// the namespace. For writes, use the full type, not a view: a replace through an `Api`
    /// of a view sends only the view's fields and removes the others.
    ///
    /// ```no_run
    /// # use informer_runtime::controller::{Context, ControllerSpec};
    /// # fn demo<C: ControllerSpec>(ctx: &Context<C>, key: &informer_core::ObjectKey) {
    /// use k8s_openapi::api::apps::v1::ReplicaSet;
    /// use k8s_openapi::api::core::v1::Node;
    /// let replica_sets = ctx.api::<ReplicaSet>(key.namespace()); // the key's namespace
    /// let in_shop = ctx.api::<ReplicaSet>("shop");
    /// let nodes = ctx.api::<Node>(None); // cluster-scoped
    /// # let _ = (replica_sets, in_shop, nodes);
    /// # }
    /// ```
    pub fn api<'a, T: ControllerResource>(&self, namespace: impl Into<Option<&'a str>>) -> Api<T> {
        <T::Scope as ControllerScope>::api::<T>(self.client().clone(), namespace.into())
    }

    /// Writes `status` to the status subresource of `object` (the primary resource) the way
    /// a declared `status = f` is written: a server-side apply as the controller's field
    /// manager ([`name`](Self::name), forced), through [`client`](Self::client) (so the next
    /// reconcile of the key waits until the cache has it), with `object`'s
    /// `metadata.resourceVersion` as a precondition. Returns the object as the server
    /// stored it.
    ///
    /// For a failure status from [`on_error`](super::Reconcile::on_error) (a `Ready=False`
    /// condition, as java-operator-sdk's `updateErrorStatus`), or any status a reconcile
    /// writes itself. `status` is the whole status this controller owns: a field that an
    /// earlier apply of the same field manager set and this one leaves out is removed, and
    /// fields other managers own are kept. Start from the object's current conditions
    /// ([`set_status_condition`](crate::conditions::set_status_condition)) so that
    /// transition times are kept. The write is itself a change of the object: write only
    /// when the status differs, or the object is reconciled again and again. When the write
    /// fails for another reason than a newer version or a deleted object, have `on_error`
    /// retry ([`Action::Requeue`](super::Action::Requeue)), as below: a failure answered
    /// with `Done` and a status never written leaves the object looking healthy.
    ///
    /// # Errors
    /// The API server's, as a [`kube::Error`]:
    /// - 409 Conflict when the object changed since `object` was read (or was deleted and
    ///   made again under its name): the status was computed from an old version. Answer
    ///   [`Action::Requeue`](crate::controller::Action::Requeue) to compute it again from a
    ///   newer one: the newer version's own event may not reconcile the key, since a filter
    ///   such as `Filter::generation_changed()` drops a change of metadata alone;
    /// - 404 Not Found when the object is gone, or its resource has no status subresource
    ///   (a CRD without `subresources: {status: {}}`);
    /// - 422 Invalid when the status does not match the resource's schema;
    /// - [`kube::Error::SerdeError`] when `status` does not serialize.
    ///
    /// ```no_run
    /// use informer_runtime::conditions::{CONDITION_FALSE, UNSET_TIME, set_status_condition};
    /// use informer_runtime::controller::{Action, Context, ControllerSpec, ReconcileError};
    /// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    /// use kube::Resource;
    ///
    /// /// The status this controller owns (the resource's status type, or the part of it
    /// /// this controller writes).
    /// #[derive(serde::Serialize)]
    /// struct WidgetStatus {
    ///     conditions: Vec<Condition>,
    /// }
    ///
    /// // In `on_error`, with `conditions` read from the object's current status; returns
    /// // what `on_error` answers.
    /// async fn report<C: ControllerSpec>(
    ///     ctx: &Context<C>,
    ///     widget: &C::Resource,
    ///     mut conditions: Vec<Condition>,
    ///     error: &ReconcileError,
    /// ) -> Action {
    ///     let failed = Condition {
    ///         type_: "Ready".into(),
    ///         status: CONDITION_FALSE.into(),
    ///         reason: "ReconcileFailed".into(),
    ///         message: error.to_string(),
    ///         observed_generation: widget.meta().generation,
    ///         last_transition_time: UNSET_TIME, // set on a transition
    ///     };
    ///     if set_status_condition(&mut conditions, failed) {
    ///         let status = WidgetStatus { conditions };
    ///         match ctx.apply_status(widget, &status).await {
    ///             Ok(_) => {}
    ///             // Gone (404): its deletion reconciles the key.
    ///             Err(kube::Error::Api(status)) if status.is_not_found() => {}
    ///             // A newer version (409): report from it, after the backoff.
    ///             Err(kube::Error::Api(status)) if status.code == 409 => return Action::Requeue,
    ///             // Not written (a 500, a lost connection): retry after the backoff, or the
    ///             // failure, terminal ones included, would never show in the status.
    ///             Err(write) => {
    ///                 tracing::warn!(error = %write, "failure status not written; retrying");
    ///                 return Action::Requeue;
    ///             }
    ///         }
    ///     }
    ///     error.default_action()
    /// }
    /// ```
    pub async fn apply_status(
        &self,
        object: &C::Resource,
        status: impl serde::Serialize,
    ) -> Result<C::Resource, kube::Error> {
        let status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
        let name = kube::ResourceExt::name_any(object);
        let body = super::children::status_apply_body(object, &name, status);
        let params = kube::api::PatchParams::apply(self.name()).force();
        self.api::<C::Resource>(kube::Resource::meta(object).namespace.as_deref())
            .patch_status(&name, &params, &kube::api::Patch::Apply(&body))
            .await
    }

    /// The lister of the primary resource.
    pub fn lister(&self) -> &Lister<C::Resource> {
        self.core.lister()
    }

    /// The controller's queue: add a key to have it reconciled (the key of an object:
    /// [`ObjectKey::from_resource`], a `Result` since an object may lack a name; or
    /// [`ObjectKey::new`] from a namespace and a name). A reconcile that queues keys without
    /// waiting on anything is fine: the workers yield their thread every few thousand keys
    /// (see [`cooperate`](informer_core::queue::cooperate)), but two objects that keep
    /// queueing each other are reconciled for ever.
    ///
    /// ```no_run
    /// # use informer_runtime::controller::{Context, ControllerSpec};
    /// use informer_core::ObjectKey;
    /// # fn demo<C: ControllerSpec>(ctx: &Context<C>, other: &C::Resource)
    /// # where C::Resource: kube::Resource<DynamicType = ()> {
    /// if let Ok(key) = ObjectKey::from_resource(other) {
    ///     ctx.queue().add(key);
    /// }
    /// ctx.queue().add(ObjectKey::new(Some("shop"), "web"));
    /// # }
    /// ```
    pub fn queue(&self) -> &Arc<dyn Queue<ObjectKey>> {
        self.core.queue()
    }

    /// The controller's name (metrics labels, logs, the field manager of its children).
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// The controller's Event recorder, as [`ControllerContext::recorder`] describes it:
    /// Events reported as the controller's name, repeats counted in series. `record_for`
    /// writes in the background (client-go's `Eventf`, retried); `publish_for` is awaited and
    /// returns its error.
    ///
    /// ```no_run
    /// # use informer_runtime::controller::{Context, ControllerSpec};
    /// use informer_runtime::events::{Event, EventType};
    /// # async fn demo<C: ControllerSpec>(ctx: &Context<C>, object: &C::Resource)
    /// # where C::Resource: kube::Resource<DynamicType = ()> {
    /// let event = Event { type_: EventType::Warning, reason: "InvalidSpec".into(),
    ///     action: "Validate".into(), note: Some("replicas < 0".into()), related: None };
    /// ctx.recorder().record_for(object, event.clone()); // returns at once
    /// if let Err(error) = ctx.recorder().publish_for(object, &event).await {
    ///     tracing::warn!(%error, "event not recorded"); // or wait, and see what failed
    /// }
    /// # }
    /// ```
    pub fn recorder(&self) -> &EventRecorder {
        self.core.recorder()
    }

    /// The spec's listers ([`ControllerSpec::Listers`]); also reached through `Deref`.
    pub fn listers(&self) -> &C::Listers {
        &self.listers
    }
}

impl<C: ControllerSpec> Deref for Context<C> {
    type Target = C::Listers;

    fn deref(&self) -> &C::Listers {
        &self.listers
    }
}

impl<C: ControllerSpec> fmt::Debug for Context<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.core)
            .finish_non_exhaustive()
    }
}

/// The controller has no Kubernetes client (defined beside the factory, whose lack of a
/// client it reports, so that modules below the controller can name it too).
pub use crate::factory::NoClient;

/// What every controller's context holds: the primary resource's lister, the queue, the
/// client, the controller's name and its Event recorder. [`Context`] wraps one.
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
    /// The client whose requests fail with [`NoClient`], made on first use.
    failing: Arc<OnceLock<Client>>,
    name: String,
    recorder: EventRecorder,
}

impl<K> Clone for ControllerContext<K> {
    fn clone(&self) -> Self {
        Self {
            lister: self.lister.clone(),
            queue: self.queue.clone(),
            client: self.client.clone(),
            failing: self.failing.clone(),
            name: self.name.clone(),
            recorder: self.recorder.clone(),
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
            failing: Arc::new(OnceLock::new()),
            name: controller.name().to_owned(),
            recorder: EventRecorder::of_controller(
                controller.factory().client(),
                controller.name(),
            ),
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

    /// The client to read and write through, as [`Context::client`] describes it.
    ///
    /// # Errors
    /// [`NoClient`] if the factory has none (it converts into a [`ReconcileError`], so
    /// `ctx.client()?` works in a reconcile).
    ///
    /// [`ReconcileError`]: super::ReconcileError
    pub fn client(&self) -> Result<&Client, NoClient> {
        self.client.get().ok_or(NoClient)
    }

    /// The client, or one whose every request fails with [`NoClient`].
    pub(crate) fn client_or_failing(&self) -> &Client {
        match self.client.get() {
            Some(client) => client,
            None => self.failing.get_or_init(failing_client),
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The controller's Event recorder ([`EventRecorder`]): reports as
    /// [`Reporter::new`](crate::events::Reporter::new)`(name)` (the controller's name; the
    /// instance from `POD_NAME`, else `HOSTNAME`, else the host name), publishes through the
    /// factory's client as it is (Events are not writes that read-your-own-writes waits
    /// for), and is made once with the context: its clones, and so the controller's workers,
    /// share its memory of series. A controller whose factory has no client gets a recorder
    /// whose every publish fails with [`NoClient`].
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
    /// #     .name("settings")
    /// #     .build(reconciler_fn(|_k, _c: Option<Arc<ConfigMap>>| async { Ok(Action::Done) }))
    /// #     .unwrap();
    /// let ctx = ControllerContext::new(&controller);
    /// assert_eq!(ctx.recorder().reporter().controller, "settings");
    /// ```
    pub fn recorder(&self) -> &EventRecorder {
        &self.recorder
    }
}

/// A client whose every request fails with [`NoClient`]. Needs a Tokio runtime (kube's
/// client spawns its buffer task), as every request does.
pub(crate) fn failing_client() -> Client {
    Client::new(Failing, "default")
}

/// The service behind [`failing_client`].
#[derive(Clone, Copy)]
struct Failing;

impl tower_service::Service<http::Request<kube::client::Body>> for Failing {
    type Response = http::Response<kube::client::Body>;
    type Error = NoClient;
    type Future = BoxFuture<'static, Result<Self::Response, NoClient>>;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> Poll<Result<(), NoClient>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: http::Request<kube::client::Body>) -> Self::Future {
        Box::pin(async { Err(NoClient) })
    }
}

/// The lister of `C` that controller `controller` watches. For generated listers: a
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

/// The lister of the `index`-th owned, watched or child resource of `controller` (in the
/// order the builder added them), of type `C`. For generated listers, where one type may be
/// watched twice (say, in two namespaces).
///
/// # Panics
/// If that resource is not of type `C` (a bug in the derive).
#[doc(hidden)]
pub fn related_lister_at<K, C>(controller: &Controller<K>, index: usize) -> Lister<C>
where
    K: Clone + Send + Sync + 'static,
    C: 'static,
{
    controller.lister_at::<C>(index).unwrap_or_else(|| {
        panic!(
            "controller {}: related resource {index} is not a {}",
            controller.name(),
            std::any::type_name::<C>()
        )
    })
}

#[cfg(test)]
mod tests;
