//! [`RunController`]: the entry points of a controller described by a type
//! ([`ControllerSpec`](crate::controller::ControllerSpec)): run it alone, or add it to a
//! [`Manager`].

use std::future::Future;

use kube::Client;
use tokio_util::sync::CancellationToken;

use super::{Manager, ManagerError, shutdown_on_signal};
use crate::controller::{BuildError, Reconcile};
use crate::factory::InformerFactory;

/// How a controller described by a type starts: alone until a signal ([`run`](Self::run)) or
/// a token ([`run_until`](Self::run_until)), or beside other controllers in a [`Manager`]
/// ([`add_to`](Self::add_to)). Implemented for every [`Reconcile`] type, that is every
/// `#[derive(ControllerSpec)]` struct with its `reconcile`; in the prelude.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::ObjectKey;
/// use informer_runtime::controller::{
///     Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError,
/// };
/// use informer_runtime::factory::InformerFactory;
/// use informer_runtime::manager::{Manager, RunController};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// struct Audit;
/// impl ControllerSpec for Audit {
///     type Resource = ConfigMap;
///     type Listers = ();
///     fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
///         builder.name("audit")
///     }
///     fn listers(_controller: &Controller<ConfigMap>) {}
/// }
/// impl Reconcile for Audit {
///     async fn reconcile(
///         &self,
///         _ctx: &Context<Self>,
///         _key: &ObjectKey,
///         _cm: Option<Arc<ConfigMap>>,
///     ) -> Result<Action, ReconcileError> {
///         Ok(Action::Done)
///     }
/// }
///
/// let mut manager = Manager::with_factory(InformerFactory::without_client());
/// # let _cms = manager.factory().informer_from(
/// #     informer_runtime::factory::InformerParams::all(),
/// #     || Arc::new(informer_testing::MemoryListerWatcher::<ConfigMap>::new()),
/// # );
/// Audit.add_to(&mut manager).unwrap();
/// assert!(Audit.add_to(&mut manager).is_err(), "one controller per name");
/// ```
pub trait RunController: Reconcile {
    /// Builds the controller over `manager`'s factory and adds it to the manager, which
    /// runs it with the others (metrics, health, leader election). The manager's factory
    /// decides how objects are cached ([`Manager::new`]'s: compactly, without managed
    /// fields, as [`run`](Self::run) does); if it keeps managed fields and the controller does
    /// not ask to, an info line says how to drop them.
    ///
    /// Returns the controller's listers (what `ctx` reads in a reconcile: the same caches,
    /// typed indexes included), for code beside the controller that reads them: a task
    /// ([`Manager::add_task`]), a web handler. They fill once the manager runs.
    ///
    /// # Errors
    /// [`ManagerError::Build`] if the controller cannot be built,
    /// [`ManagerError::DuplicateController`] if one with the same name was added, or
    /// [`ManagerError::ManagedFieldsDropped`] if the controller keeps managed fields
    /// (`keep_managed_fields`) and the manager's factory drops them.
    fn add_to(self, manager: &mut Manager) -> Result<Self::Listers, ManagerError> {
        if Self::KEEP_MANAGED_FIELDS && manager.factory().drops_managed_fields() {
            let name = std::any::type_name::<Self>();
            let name = name.rsplit("::").next().unwrap_or(name);
            return Err(ManagerError::ManagedFieldsDropped(name.to_owned()));
        }
        let controller = self.into_controller(manager.factory())?;
        if !Self::KEEP_MANAGED_FIELDS && !manager.factory().drops_managed_fields() {
            tracing::info!(
                controller = controller.name(),
                "the manager's factory caches metadata.managedFields; to save about 10 KB per \
                 object, give the manager a factory with drop_managed_fields(true)"
            );
        }
        let listers = Self::listers(&controller);
        manager.add(controller)?;
        Ok(listers)
    }

    /// Runs the controller on `client` until `cancel` is cancelled, with its own factory:
    /// managed fields dropped (never decoded) unless kept, caches as
    /// [`CACHE_POLICY`](crate::controller::ControllerSpec::CACHE_POLICY) says (compact). Returns early if an informer
    /// stops before its cache synced (logged).
    ///
    /// # Errors
    /// See [`BuildError`].
    fn run_until(
        self,
        client: Client,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<(), BuildError>> + Send {
        async move {
            let factory = InformerFactory::new(client)
                .drop_managed_fields(!Self::KEEP_MANAGED_FIELDS)
                .cache_policy(Self::CACHE_POLICY);
            let controller = self.into_controller(&factory)?;
            controller.run(cancel).await;
            factory.shutdown().await;
            Ok(())
        }
    }

    /// Runs the controller on `client` until the process receives Ctrl-C or SIGTERM (as
    /// [`run_until`](Self::run_until) otherwise).
    ///
    /// # Errors
    /// See [`BuildError`].
    fn run(self, client: Client) -> impl Future<Output = Result<(), BuildError>> + Send {
        async move {
            let cancel = CancellationToken::new();
            let run = async {
                let result = self.run_until(client, cancel.clone()).await;
                cancel.cancel(); // stops listening for signals
                result
            };
            let (result, ()) = tokio::join!(run, shutdown_on_signal(cancel.clone()));
            result
        }
    }
}

impl<C: Reconcile> RunController for C {}
