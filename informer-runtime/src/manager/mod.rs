//! [`Manager`]: runs many controllers over one [`InformerFactory`], serves `/metrics`,
//! `/healthz` and `/readyz`, shuts down on SIGTERM/SIGINT or a cancellation token, and
//! scales past one replica with leader election or sharding.
//!
//! ```text
//!                 +-------------------- Manager --------------------+
//!  SIGTERM/INT -->| shutdown token                                  |--> HTTP: /metrics /healthz /readyz
//!  cancel      -->|   informers (always: standbys keep caches warm)  |
//!                 |   controllers' workers: always | while leading | on held shards
//!                 |   LeaderElector / ShardManager (Leases)          |
//!                 +--------------------------------------------------+
//! ```

#![warn(missing_docs)]

mod http;
mod run_controller;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::future::join_all;
use kube::Client;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::controller::{
    Controller, ControllerBuilder, ControllerResource, ErasedController, Ownership,
};
use crate::factory::InformerFactory;
use crate::leader::{LeaderElectionConfig, LeaderElector, LeaderState};
use crate::lease::ConfigError;
use crate::metrics::Metrics;
use crate::shard::{ShardConfig, ShardConfigError, ShardManager, shard_of};

use http::{HttpState, ReadyFn};

pub use run_controller::RunController;

/// The address the HTTP endpoint binds by default: every interface, port 8080
/// (controller-runtime's metrics port).
pub const DEFAULT_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080);

/// The manager could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The HTTP endpoint could not bind its address (in use, or not allowed).
    #[error("cannot serve /metrics on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// Two controllers have the same name (metrics labels would collide): give one a
    /// different [`name`](crate::controller::ControllerBuilder::name).
    #[error("a controller named {0:?} was already added")]
    DuplicateController(String),
    /// The leader election configuration is invalid.
    #[error("invalid leader election configuration: {0}")]
    Config(#[from] ConfigError),
    /// The sharding configuration is invalid.
    #[error("invalid sharding configuration: {0}")]
    ShardConfig(#[from] ShardConfigError),
    /// Leader election and sharding need a `kube::Client` (for their Leases): build the
    /// manager with [`Manager::new`] or set [`Manager::client`].
    #[error("leader election and sharding need a client: use Manager::new or Manager::client")]
    NoClient,
    /// A controller could not be built (see [`RunController::add_to`]).
    #[error(transparent)]
    Build(#[from] crate::controller::BuildError),
    /// A controller that keeps `metadata.managedFields`
    /// ([`KEEP_MANAGED_FIELDS`](crate::controller::ControllerSpec::KEEP_MANAGED_FIELDS)) was
    /// added to a manager whose factory drops them ([`Manager::new`] does): give the manager
    /// a factory that keeps them ([`Manager::with_factory`]).
    #[error(
        "controller {0:?} keeps metadata.managedFields but the manager's factory drops them: give the manager a factory with drop_managed_fields(false) (Manager::with_factory)"
    )]
    ManagedFieldsDropped(String),
    /// Leader election and sharding were both set; a manager uses one or the other.
    #[error("leader election and sharding are exclusive: choose one")]
    LeaderElectionAndSharding,
}

/// Runs controllers over one [`InformerFactory`]: starts the informers, waits for the
/// caches, runs the workers, serves metrics and health, and shuts everything down in order.
///
/// # Guarantees
/// - **One watch per informer identity.** Controllers built with
///   [`controller`](Self::controller) take their informers from the manager's factory, so
///   two controllers watching Pods open one watch.
/// - **`/readyz` is ready once every cache has synced** (every controller's informers, and
///   each handler has queued its initial list); it answers 503 with the missing caches
///   before, and 503 again once shutdown has begun. `/healthz` (and `/livez`) answer 200
///   while the manager runs. `/metrics` serves the OpenMetrics text of
///   [`registry_mut`](Self::registry_mut), which holds the [`Metrics`] of every controller.
/// - **Leader election** ([`leader_election`](Self::leader_election)): informers run on
///   every replica (standbys keep their caches and queues warm, so a new leader starts
///   reconciling at once); workers run only while this replica leads. When the term ends,
///   reconciles in flight are dropped at once (before another replica can take the lease
///   over; their keys stay queued); the lease is released only after the workers stopped
///   on shutdown.
/// - **Sharding** ([`sharding`](Self::sharding)): workers run on every replica and
///   reconcile only keys whose shard this replica holds; keys of other shards are dropped
///   from the queue (`forget` + `done`); reconciles of a key whose shard is lost are
///   dropped; when shards are gained, every cached key of the new shards is queued.
/// - **Shutdown** on SIGTERM, SIGINT (unless [`handle_signals(false)`](Self::handle_signals))
///   or the token given to [`run`](Self::run): workers stop taking keys and reconciles in
///   flight finish (up to each controller's shutdown timeout); then the lease or shards are
///   released, the informers stopped, and the HTTP endpoint closed.
///
/// ```no_run
/// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use informer_runtime::controller::{Action, reconciler_fn};
/// use informer_runtime::leader::LeaderElectionConfig;
/// use informer_runtime::manager::Manager;
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use tokio_util::sync::CancellationToken;
///
/// let mut manager = Manager::new(client)
///     .metrics_address("0.0.0.0:9090".parse()?)
///     .leader_election(LeaderElectionConfig::new("shop-controller", "shop", "pod-a"));
/// let deployments = manager
///     .controller::<Deployment>()
///     .owns::<ReplicaSet>()
///     .workers(4)
///     .build(reconciler_fn(|_key, _d: Option<Arc<Deployment>>| async { Ok(Action::Done) }))?;
/// manager.add(deployments)?;
/// manager.run(CancellationToken::new()).await?; // until SIGTERM
/// # Ok(()) }
/// ```
pub struct Manager {
    factory: InformerFactory,
    client: Option<Client>,
    controllers: Vec<Box<dyn ErasedController>>,
    metrics: Metrics,
    registry: Registry,
    address: Option<SocketAddr>,
    listener: Option<TcpListener>,
    signals: bool,
    leader: Option<LeaderElectionConfig>,
    sharding: Option<ShardConfig>,
    /// Built from `leader` / `sharding` on first use.
    mode: Option<Mode>,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field(
                "controllers",
                &self
                    .controllers
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>(),
            )
            .field("address", &self.address)
            .field("signals", &self.signals)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A manager with a new [`InformerFactory`] over `client`, caching as a derived
    /// controller run on its own does: compact caches
    /// ([`CachePolicy::COMPACT`](crate::factory::CachePolicy::COMPACT), about 1.5 KB per
    /// Pod where a decoded one takes 27 KB) and `metadata.managedFields` dropped, so that the
    /// controllers it hosts cost no more memory than client-go's. For decoded caches (every
    /// read an `Arc` clone) or managed fields, give it a factory of your own with
    /// [`with_factory`](Self::with_factory):
    /// `Manager::with_factory(InformerFactory::new(client.clone())).client(client)`.
    ///
    /// ```
    /// # use informer_runtime::manager::Manager;
    /// # use informer_runtime::factory::CachePolicy;
    /// # async fn demo(client: kube::Client) {
    /// let manager = Manager::new(client);
    /// assert_eq!(manager.factory().cache(), CachePolicy::COMPACT);
    /// assert!(manager.factory().drops_managed_fields());
    /// # }
    /// ```
    pub fn new(client: Client) -> Self {
        let factory = InformerFactory::new(client.clone())
            .drop_managed_fields(true)
            .cache_policy(crate::factory::CachePolicy::COMPACT);
        Self::with_factory(factory).client(client)
    }

    /// A manager over `factory` (set [`client`](Self::client) for leader election,
    /// sharding, and controllers with custom stores).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client());
    /// assert!(manager.factory().informers().is_empty());
    /// ```
    pub fn with_factory(factory: InformerFactory) -> Self {
        let metrics = Metrics::new();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        Self {
            factory,
            client: None,
            controllers: Vec::new(),
            metrics,
            registry,
            address: Some(DEFAULT_ADDRESS),
            listener: None,
            signals: true,
            leader: None,
            sharding: None,
            mode: None,
        }
    }

    /// The client for the Leases of leader election and sharding, and for controllers
    /// built with [`controller`](Self::controller) that use a custom store.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// # fn demo(client: kube::Client) {
    /// let factory = InformerFactory::new(client.clone()).drop_managed_fields(true);
    /// let manager = Manager::with_factory(factory).client(client);
    /// # let _ = manager;
    /// # }
    /// ```
    pub fn client(mut self, client: Client) -> Self {
        self.client = Some(client);
        self.mode = None;
        self
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` on `address` (default
    /// [`DEFAULT_ADDRESS`]). Port 0 picks a free port: read it with [`bind`](Self::bind).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client())
    ///     .metrics_address("0.0.0.0:9090".parse().unwrap());
    /// # let _ = manager;
    /// ```
    pub fn metrics_address(mut self, address: SocketAddr) -> Self {
        self.address = Some(address);
        self.listener = None;
        self
    }

    /// Serves no HTTP endpoint.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client()).without_http();
    /// # let _ = manager;
    /// ```
    pub fn without_http(mut self) -> Self {
        self.address = None;
        self.listener = None;
        self
    }

    /// Whether SIGTERM and SIGINT shut the manager down (default: true).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client()).handle_signals(false);
    /// # let _ = manager;
    /// ```
    pub fn handle_signals(mut self, handle: bool) -> Self {
        self.signals = handle;
        self
    }

    /// Runs the workers only while this replica holds the Lease `config` describes
    /// (exclusive with [`sharding`](Self::sharding)). Needs a [`client`](Self::client).
    ///
    /// ```
    /// # use informer_runtime::leader::LeaderElectionConfig;
    /// # use informer_runtime::manager::Manager;
    /// # fn demo(client: kube::Client) {
    /// let manager = Manager::new(client)
    ///     .leader_election(LeaderElectionConfig::new("shop-controller", "shop", "pod-a"));
    /// # let _ = manager;
    /// # }
    /// ```
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.leader = Some(config);
        self.mode = None;
        self
    }

    /// Reconciles only the keys of the shards this replica holds (exclusive with
    /// [`leader_election`](Self::leader_election)). Needs a [`client`](Self::client).
    ///
    /// ```
    /// # use informer_runtime::manager::Manager;
    /// # use informer_runtime::shard::ShardConfig;
    /// # fn demo(client: kube::Client) {
    /// let manager = Manager::new(client).sharding(ShardConfig::new(16, "shop-controller", "shop", "pod-a"));
    /// # let _ = manager;
    /// # }
    /// ```
    pub fn sharding(mut self, config: ShardConfig) -> Self {
        self.sharding = Some(config);
        self.mode = None;
        self
    }

    /// The factory controllers built with [`controller`](Self::controller) take their
    /// informers from.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client());
    /// let _factory: &InformerFactory = manager.factory();
    /// ```
    pub fn factory(&self) -> &InformerFactory {
        &self.factory
    }

    /// The metrics of the manager's controllers (already in [`registry_mut`](Self::registry_mut)).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client());
    /// assert!(manager.metrics().encode().ends_with("# EOF\n"));
    /// ```
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The registry `/metrics` serves: register your own metrics here before [`run`](Self::run).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// use prometheus_client::metrics::counter::Counter;
    /// let mut manager = Manager::with_factory(InformerFactory::without_client());
    /// let emails: Counter = Counter::default();
    /// manager.registry_mut().register("emails_sent", "Emails sent by the controller", emails.clone());
    /// ```
    pub fn registry_mut(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// A builder for a controller of `K` over the manager's factory (and client). Add the
    /// built controller with [`add`](Self::add).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// use k8s_openapi::api::core::v1::Pod;
    /// let manager = Manager::with_factory(InformerFactory::without_client());
    /// let builder = manager.controller::<Pod>().workers(2);
    /// # let _ = builder;
    /// ```
    pub fn controller<K: ControllerResource>(&self) -> ControllerBuilder<K> {
        let builder = Controller::<K>::builder(&self.factory);
        match &self.client {
            Some(client) => builder.client(client.clone()),
            None => builder,
        }
    }

    /// Adds a controller: the manager runs it and reports its metrics.
    ///
    /// # Errors
    /// [`ManagerError::DuplicateController`] if a controller with the same name was added.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// use std::sync::Arc;
    /// use informer_runtime::controller::{Action, reconciler_fn};
    /// use informer_runtime::factory::InformerParams;
    /// use informer_testing::MemoryListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let mut manager = Manager::with_factory(InformerFactory::without_client());
    /// let _pods = manager.factory().informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<Pod>::new()));
    /// let noop = || reconciler_fn(|_k, _p: Option<Arc<Pod>>| async { Ok(Action::Done) });
    /// manager.add(manager.controller::<Pod>().build(noop()).unwrap()).unwrap();
    /// assert!(manager.add(manager.controller::<Pod>().build(noop()).unwrap()).is_err(), "same name");
    /// ```
    pub fn add<K: Clone + Send + Sync + 'static>(
        &mut self,
        controller: Controller<K>,
    ) -> Result<(), ManagerError> {
        if self
            .controllers
            .iter()
            .any(|c| c.name() == controller.name())
        {
            return Err(ManagerError::DuplicateController(
                controller.name().to_owned(),
            ));
        }
        self.metrics.add_controller(&controller);
        self.controllers.push(Box::new(controller));
        Ok(())
    }

    /// Binds the HTTP endpoint now (if it is enabled and not bound yet) and returns its
    /// address: with port 0, the port the system picked. [`run`](Self::run) binds it
    /// otherwise.
    ///
    /// # Errors
    /// [`ManagerError::Bind`] if the address cannot be bound.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), informer_runtime::manager::ManagerError> {
    /// use informer_runtime::factory::InformerFactory;
    /// use informer_runtime::manager::Manager;
    ///
    /// let mut manager = Manager::with_factory(InformerFactory::without_client())
    ///     .metrics_address("127.0.0.1:0".parse().unwrap());
    /// let address = manager.bind().await?.expect("HTTP is enabled");
    /// assert_ne!(address.port(), 0);
    /// # Ok(()) }
    /// ```
    pub async fn bind(&mut self) -> Result<Option<SocketAddr>, ManagerError> {
        let Some(address) = self.address else {
            return Ok(None);
        };
        if self.listener.is_none() {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::Bind { address, source })?;
            self.listener = Some(listener);
        }
        let bound = self
            .listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .unwrap_or(address);
        Ok(Some(bound))
    }

    /// Runs every controller until `cancel` is cancelled (or SIGTERM/SIGINT arrives), then
    /// shuts down in order: workers (letting reconciles in flight finish), the lease or
    /// shards, the informers, the HTTP endpoint. See [`Manager`] for the guarantees.
    ///
    /// # Errors
    /// Before anything runs: [`ManagerError::Bind`], [`ManagerError::Config`],
    /// [`ManagerError::ShardConfig`], [`ManagerError::NoClient`],
    /// [`ManagerError::LeaderElectionAndSharding`].
    pub async fn run(mut self, cancel: CancellationToken) -> Result<(), ManagerError> {
        self.mode()?;
        let mode = self.mode.take().unwrap_or(Mode::Single);
        self.bind().await?;
        let shutdown = cancel.child_token();

        if let Mode::Leader(elector) = &mode {
            let elector = elector.clone();
            self.metrics.set_leader_status(
                elector.config().lease_name.clone(),
                Arc::new(move || elector.is_leader()),
            );
        }

        let controllers: Arc<Vec<Box<dyn ErasedController>>> =
            Arc::new(std::mem::take(&mut self.controllers));
        let ready: ReadyFn = {
            let controllers = controllers.clone();
            Box::new(move || {
                let missing: Vec<String> = controllers
                    .iter()
                    .flat_map(|c| c.sources().unsynced())
                    .collect();
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(missing.join("; "))
                }
            })
        };
        let state = Arc::new(HttpState {
            registry: std::mem::take(&mut self.registry),
            ready,
            shutting_down: Default::default(),
        });

        // Everything below runs inside this future (nothing is detached), so dropping it
        // (say, aborting its task) stops it all at once, like a crash: the lease is then
        // not released and expires on its own.
        let http_stop = CancellationToken::new();
        let http = async {
            if let Some(listener) = self.listener.take() {
                if let Ok(address) = listener.local_addr() {
                    tracing::info!(%address, "serving /metrics, /healthz and /readyz");
                }
                http::serve(listener, state.clone(), http_stop.clone()).await;
            }
        };
        let signals = async {
            if self.signals {
                shutdown_on_signal(shutdown.clone()).await;
            }
        };
        // Leader election and sharding run until the workers have stopped, so that the
        // lease and shards are released only after the work in flight is done.
        let scale_stop = CancellationToken::new();
        let scale = async {
            match &mode {
                Mode::Single => {}
                Mode::Leader(elector) => elector.run(scale_stop.clone()).await,
                Mode::Shards(shards) => shards.run(scale_stop.clone()).await,
            }
        };
        let work = async {
            for controller in controllers.iter() {
                controller.sources().start();
            }
            tracing::info!(controllers = controllers.len(), "manager started");
            // A controller whose informer stopped before syncing returns early; the others
            // (and the endpoint) keep running until shutdown.
            tokio::join!(
                join_all(controllers.iter().map(|c| drive(&**c, &shutdown, &mode))),
                shutdown.cancelled(),
            );
            tracing::info!("manager shutting down");
            state.shutting_down.store(true, Ordering::Release);
            scale_stop.cancel();
        };
        let stop_all = async {
            tokio::join!(work, scale, signals);
            join_all(controllers.iter().map(|c| c.shutdown())).await;
            self.factory.shutdown().await;
            http_stop.cancel();
        };
        tokio::join!(stop_all, http);
        tracing::info!("manager stopped");
        Ok(())
    }

    /// The leader elector the manager runs (with [`leader_election`](Self::leader_election)),
    /// say to run other leader-only work on its terms or to ask
    /// [`is_leader`](LeaderElector::is_leader). It runs only while the manager runs.
    ///
    /// # Errors
    /// As [`run`](Self::run): [`ManagerError::Config`], [`ManagerError::ShardConfig`],
    /// [`ManagerError::NoClient`],
    /// [`ManagerError::LeaderElectionAndSharding`].
    ///
    /// ```
    /// # use informer_runtime::leader::LeaderElectionConfig;
    /// # use informer_runtime::manager::Manager;
    /// # fn demo(client: kube::Client) -> Result<(), informer_runtime::manager::ManagerError> {
    /// let mut manager = Manager::new(client).leader_election(LeaderElectionConfig::new("lock", "default", "pod-a"));
    /// let elector = manager.leader_elector()?.expect("leader election is on");
    /// assert!(!elector.is_leader()); // not running yet
    /// # Ok(()) }
    /// ```
    pub fn leader_elector(&mut self) -> Result<Option<LeaderElector>, ManagerError> {
        Ok(match self.mode()? {
            Mode::Leader(elector) => Some(elector.clone()),
            _ => None,
        })
    }

    /// The shard manager the manager runs (with [`sharding`](Self::sharding)), say to ask
    /// which shards this replica [holds](ShardManager::held). It runs only while the manager
    /// runs.
    ///
    /// # Errors
    /// As [`leader_elector`](Self::leader_elector).
    ///
    /// ```
    /// # use informer_runtime::manager::Manager;
    /// # use informer_runtime::shard::ShardConfig;
    /// # fn demo(client: kube::Client) -> Result<(), informer_runtime::manager::ManagerError> {
    /// let mut manager = Manager::new(client).sharding(ShardConfig::new(8, "ctl", "default", "pod-a"));
    /// let shards = manager.shard_manager()?.expect("sharding is on");
    /// assert!(shards.held().is_empty()); // not running yet
    /// # Ok(()) }
    /// ```
    pub fn shard_manager(&mut self) -> Result<Option<ShardManager>, ManagerError> {
        Ok(match self.mode()? {
            Mode::Shards(shards) => Some(shards.clone()),
            _ => None,
        })
    }

    /// Checks the scale-out settings and builds the elector or shard manager (once).
    fn mode(&mut self) -> Result<&Mode, ManagerError> {
        if self.mode.is_none() {
            let mode = match (&self.leader, &self.sharding) {
                (None, None) => Mode::Single,
                (Some(_), Some(_)) => return Err(ManagerError::LeaderElectionAndSharding),
                (Some(config), None) => {
                    let client = self.client.clone().ok_or(ManagerError::NoClient)?;
                    Mode::Leader(LeaderElector::try_new(client, config.clone())?)
                }
                (None, Some(config)) => {
                    let client = self.client.clone().ok_or(ManagerError::NoClient)?;
                    Mode::Shards(ShardManager::try_new(client, config.clone())?)
                }
            };
            self.mode = Some(mode);
        }
        Ok(self.mode.get_or_insert(Mode::Single))
    }
}

/// How replicas share the work, once set up.
enum Mode {
    Single,
    Leader(LeaderElector),
    Shards(ShardManager),
}

/// Drives one controller: waits for its caches, then runs its workers as the mode says,
/// until `shutdown`.
async fn drive(controller: &dyn ErasedController, shutdown: &CancellationToken, mode: &Mode) {
    if !controller
        .sources()
        .wait_synced(controller.name(), shutdown)
        .await
    {
        return;
    }
    let never = CancellationToken::new();
    match mode {
        Mode::Single => controller.run_workers(shutdown, &never, None).await,
        Mode::Shards(shards) => {
            let ownership = Ownership {
                shards: shards.config().shards,
                held: shards.subscribe(),
                shard_of,
            };
            controller
                .run_workers(shutdown, &never, Some(ownership))
                .await
        }
        Mode::Leader(elector) => {
            let mut states: watch::Receiver<LeaderState> = elector.subscribe();
            loop {
                let term = states
                    .borrow_and_update()
                    .term()
                    .filter(|t| !t.is_cancelled())
                    .cloned();
                if let Some(term) = term {
                    tracing::info!(controller = controller.name(), "leading: starting workers");
                    controller.run_workers(shutdown, &term, None).await;
                    if shutdown.is_cancelled() {
                        return;
                    }
                    tracing::info!(
                        controller = controller.name(),
                        "no longer leading: workers stopped"
                    );
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    changed = states.changed() => if changed.is_err() { return },
                }
            }
        }
    }
}

/// Cancels `shutdown` on SIGTERM or SIGINT.
pub(crate) async fn shutdown_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await
        }
    };
    tokio::select! {
        _ = shutdown.cancelled() => return,
        _ = terminate => tracing::info!("SIGTERM received; shutting down"),
        _ = interrupt => tracing::info!("SIGINT received; shutting down"),
    }
    shutdown.cancel();
}

#[cfg(test)]
mod tests;
