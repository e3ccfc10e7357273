//! [`Manager`]: runs many controllers and the user's [`Task`]s over one
//! [`InformerFactory`], serves `/metrics` and the probes `/healthz` and `/readyz` (with the
//! user's named checks, in controller-runtime's format), shuts down on SIGTERM/SIGINT or a
//! cancellation token, and scales past one replica with leader election or sharding.
//!
//! ```text
//!                 +-------------------- Manager --------------------+
//!  SIGTERM/INT -->| shutdown token                                  |--> HTTP: /metrics
//!  cancel      -->|   informers (always: standbys keep caches warm)  |--> probes: /healthz /readyz
//!                 |   controllers' workers: always | while leading | on held shards  (same or own address)
//!                 |   tasks: once caches synced; always | while leading
//!                 |   LeaderElector / ShardManager (Leases)          |
//!                 +--------------------------------------------------+
//! ```

#![warn(missing_docs)]

mod health;
mod http;
mod run_controller;
mod task;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

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
use crate::leader::{
    DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE, HealthzAdaptor, LeaderElectionConfig, LeaderElector,
    LeaderState,
};
use crate::lease::ConfigError;
use crate::metrics::Metrics;
use crate::shard::{ShardConfig, ShardConfigError, ShardManager, shard_of};

use health::{NamedCheck, Reason};
use http::{HttpState, Probes};

pub use health::{AsyncCheck, Check, CheckResult, IntoCheck, SyncCheck};
pub use run_controller::RunController;
pub use task::Task;

/// The readiness check the manager adds: every controller's caches have synced.
const INFORMER_SYNC_CHECK: &str = "informer-sync";
/// The readiness check the manager adds: shutdown has not begun.
const SHUTDOWN_CHECK: &str = "shutdown";
/// The health check served when the user added none (controller-runtime's `healthz.Ping`).
const PING_CHECK: &str = "ping";
/// The health check the manager adds with leader election (kube-controller-manager's name).
const LEADER_ELECTION_CHECK: &str = HealthzAdaptor::NAME;

/// The address the HTTP endpoint binds by default: every interface, port 8080
/// (controller-runtime's metrics port).
pub const DEFAULT_ADDRESS: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::UNSPECIFIED), 8080);

/// The manager could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The HTTP endpoint could not bind its address (in use, or not allowed).
    #[error(
        "cannot serve /metrics on {address}: {source} (another process, or another Manager of this one, serves there: give each its own metrics_address, or call without_http() in tests)"
    )]
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
    /// The health probe endpoint ([`Manager::health_probe_address`]) could not bind its
    /// address.
    #[error("cannot serve the health probes on {address}: {source}")]
    BindHealthProbe {
        /// The address.
        address: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// A check with this name was already added to this endpoint (or the manager's own
    /// checks have it: `informer-sync` and `shutdown` on `/readyz`, and `leaderElection` on
    /// `/healthz` with [leader election](Manager::leader_election)). For a `leaderElection`
    /// health check added before leader election was set, [`Manager::run`] gives this error.
    #[error("a /{endpoint} check named {name:?} was already added")]
    DuplicateCheck {
        /// `healthz` or `readyz`.
        endpoint: &'static str,
        /// The name.
        name: String,
    },
    /// A check name must be a path segment: letters, digits, `-`, `_` and `.`, at least one.
    #[error("invalid check name {0:?}: use letters, digits, '-', '_' and '.'")]
    InvalidCheckName(String),
    /// Two tasks have the same name: give one another [`Task::new`] name.
    #[error("a task named {0:?} was already added")]
    DuplicateTask(String),
    /// A task that needs leader election was added to a manager that shards, where no
    /// replica leads: set [`Task::needs_leader_election(false)`](Task::needs_leader_election)
    /// to run it on every replica, or use leader election.
    #[error(
        "task {0:?} needs leader election, but the manager shards instead: set needs_leader_election(false) to run it on every replica"
    )]
    TaskNeedsLeaderElection(String),
    /// This replica led and lost its Lease while running, and the manager was told to end
    /// then ([`Manager::exit_on_leader_loss`]): it shut down in order and returns this, so
    /// that the process exits and is restarted, as controller-runtime's manager does.
    #[error("leader election lost: lease {0:?} is no longer held by this replica")]
    LeaderElectionLost(String),
}

/// Runs controllers over one [`InformerFactory`]: starts the informers, waits for the
/// caches, runs the workers and the user's [tasks](Task), serves metrics and health, and
/// shuts everything down in order.
///
/// # Guarantees
/// - **One watch per informer identity.** Controllers built with
///   [`controller`](Self::controller) take their informers from the manager's factory, so
///   two controllers watching Pods open one watch.
/// - **Every informer of its factory runs**, those a [task](Task) or your own code took
///   from [`factory`](Self::factory) included (as client-go's `factory.Start`), from the
///   moment the manager runs; informers asked for later start at once.
/// - **`/readyz` is ready once every cache has synced** (every controller's informers, and
///   each handler has queued its initial list, and every other informer of the factory) and every check added with
///   [`add_readyz_check`](Self::add_readyz_check) passes; it answers 500 before, naming the
///   missing caches and why they have not synced (the list's error: a 403 names the RBAC
///   to grant), and 500 again once shutdown has begun. A cache that cannot sync is waited
///   for without a limit, retried with backoff (it syncs once the permission comes), and
///   reported while it waits; controller-runtime's controllers give up after their
///   `CacheSyncTimeout` (2 minutes) and end the manager. `/healthz` (and `/livez`) answer
///   200 while the manager runs and every check added with
///   [`add_healthz_check`](Self::add_healthz_check) passes, 500 otherwise. Both answer in
///   controller-runtime's format, with a path per check and `?verbose` and `?exclude=`: see
///   [`add_healthz_check`](Self::add_healthz_check). `/metrics` serves the OpenMetrics text
///   of [`registry_mut`](Self::registry_mut), which holds the [`Metrics`] of every
///   controller. The probes are served beside `/metrics`, or on their own address with
///   [`health_probe_address`](Self::health_probe_address).
/// - **Tasks** ([`add_task`](Self::add_task)) start once the caches have synced, only while
///   this replica leads if they ask (the default), are cancelled on shutdown with the
///   workers, and are reported as controllers are when they fail: see [`Task`].
/// - **Leader election** ([`leader_election`](Self::leader_election)): informers run on
///   every replica (standbys keep their caches and queues warm, so a new leader starts
///   reconciling at once); workers run only while this replica leads. When the term ends,
///   reconciles in flight are dropped at once (before another replica can take the lease
///   over; their keys stay queued) and the replica goes on as a standby; controller-runtime's
///   manager exits instead, which [`exit_on_leader_loss`](Self::exit_on_leader_loss) asks
///   for. The lease is released only after the workers stopped on shutdown. A replica that
///   cannot read or write its Lease (RBAC, an API not served) never leads and says so: a
///   warning at the first failure, then at most once a minute. `/healthz` gains a `leaderElection` check that fails if the election loop
///   is stuck while this replica believes it leads (see
///   [`leader_election_health_tolerance`](Self::leader_election_health_tolerance)).
/// - **Sharding** ([`sharding`](Self::sharding)): workers run on every replica and
///   reconcile only keys whose shard this replica holds; keys of other shards are dropped
///   from the queue (`forget` + `done`); reconciles of a key whose shard is lost are
///   dropped; when shards are gained, every cached key of the new shards is queued.
/// - **Shutdown** on SIGTERM, SIGINT (unless [`handle_signals(false)`](Self::handle_signals))
///   or the token given to [`run`](Self::run): `/readyz` fails at once; workers stop taking
///   keys and reconciles in flight finish (up to each controller's shutdown timeout), while
///   tasks' tokens are cancelled (each has its own timeout); then the lease or shards are
///   released, the informers stopped, and the HTTP endpoints closed.
///
/// ```no_run
/// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use informer_runtime::controller::{Action, reconciler_fn};
/// use informer_runtime::leader::LeaderElectionConfig;
/// use informer_runtime::manager::Manager;
/// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
/// use informer_runtime::CancellationToken;
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
    tasks: Vec<Task>,
    health_checks: Vec<NamedCheck>,
    ready_checks: Vec<NamedCheck>,
    metrics: Metrics,
    registry: Registry,
    address: Option<SocketAddr>,
    listener: Option<TcpListener>,
    probe_address: Option<SocketAddr>,
    probe_listener: Option<TcpListener>,
    signals: bool,
    leader: Option<LeaderElectionConfig>,
    /// The `leaderElection` health check's tolerance past the lease duration.
    leader_health_tolerance: Duration,
    /// End `run` with an error when a term ends while running.
    exit_on_leader_loss: bool,
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
            .field(
                "tasks",
                &self.tasks.iter().map(Task::name).collect::<Vec<_>>(),
            )
            .field(
                "healthz_checks",
                &self
                    .health_checks
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field(
                "readyz_checks",
                &self
                    .ready_checks
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("address", &self.address)
            .field("health_probe_address", &self.probe_address)
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
            tasks: Vec::new(),
            health_checks: Vec::new(),
            ready_checks: Vec::new(),
            metrics,
            registry,
            address: Some(DEFAULT_ADDRESS),
            listener: None,
            probe_address: None,
            probe_listener: None,
            signals: true,
            leader: None,
            leader_health_tolerance: DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE,
            exit_on_leader_loss: false,
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

    /// Serves `/metrics` on `address` (default [`DEFAULT_ADDRESS`]), and `/healthz` and
    /// `/readyz` too unless they have their own
    /// [`health_probe_address`](Self::health_probe_address). Port 0 picks a free port: read
    /// it with [`bind`](Self::bind).
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

    /// Serves no `/metrics` endpoint, and no probes unless they have their own
    /// [`health_probe_address`](Self::health_probe_address).
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

    /// Serves the probes `/healthz` (`/livez`) and `/readyz`, with their per-check paths, on
    /// their own `address` (controller-runtime's `HealthProbeBindAddress`), and `/metrics`
    /// alone on the [`metrics_address`](Self::metrics_address); each endpoint answers 404 for
    /// the other's paths. By default the probes are served beside `/metrics`. The same
    /// address as the metrics one (with a port other than 0) serves everything on one
    /// endpoint, as without this call. Port 0 picks a free port: read it with
    /// [`bind_health_probe`](Self::bind_health_probe).
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::Manager;
    /// let manager = Manager::with_factory(InformerFactory::without_client())
    ///     .metrics_address("127.0.0.1:8080".parse().unwrap())
    ///     .health_probe_address("0.0.0.0:8081".parse().unwrap());
    /// # let _ = manager;
    /// ```
    pub fn health_probe_address(mut self, address: SocketAddr) -> Self {
        self.probe_address = Some(address);
        self.probe_listener = None;
        self
    }

    /// Adds a named health check to `/healthz` (and `/livez`): controller-runtime's
    /// `mgr.AddHealthzCheck(name, checker)`. `check` is a closure answering
    /// `Result<(), BoxError>`, directly or through a future (see [`IntoCheck`]); it runs at
    /// each request of `/healthz`, with the others at once. A liveness check should fail
    /// only when restarting the process helps (kubelet restarts it): say, a task that must
    /// be alive has stopped.
    ///
    /// What the probes answer, as controller-runtime's `healthz` package:
    /// - `/healthz`: 200 `ok` when every check passes; otherwise (the verbose form is always
    ///   given on failure) 500 with one line per check in name order, `[+]name ok` or
    ///   `[-]name failed: reason withheld` (the error of a check of yours is not shown on
    ///   this unauthenticated path; it is logged at `debug`), then `healthz check failed`.
    /// - `?verbose`: the list even when every check passes, ending in `healthz check passed`.
    /// - `?exclude=name` (repeatable): that check is not run and is listed as
    ///   `[+]name excluded: ok`; an exclude that names no check adds
    ///   `warn: some health checks cannot be excluded: no matches for "name"`.
    /// - `/healthz/<name>`: that check alone: 200 `ok`, or 500
    ///   `internal server error: <its error>`; 404 for a name that is not a check.
    /// - With no check added, one named `ping` always passes.
    /// - With [leader election](Self::leader_election), the manager adds `leaderElection`
    ///   (see [`leader_election_health_tolerance`](Self::leader_election_health_tolerance)).
    ///
    /// `/readyz` answers the same way for [`add_readyz_check`](Self::add_readyz_check)'s
    /// checks, failing with 500 too. Differences from controller-runtime: `ok` ends with a
    /// newline, and the manager's own readiness checks show their reason.
    ///
    /// # Errors
    /// [`ManagerError::InvalidCheckName`] for a name that is empty or holds more than
    /// letters, digits, `-`, `_` and `.`; [`ManagerError::DuplicateCheck`] for a name taken,
    /// `leaderElection` included once leader election is set.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use informer_runtime::factory::InformerFactory;
    /// use informer_runtime::manager::{Manager, ManagerError};
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// let mut manager = Manager::with_factory(InformerFactory::without_client())
    ///     .metrics_address("127.0.0.1:0".parse().unwrap())
    ///     .handle_signals(false);
    /// let alive = Arc::new(AtomicBool::new(true));
    /// let flag = alive.clone();
    /// manager
    ///     .add_healthz_check("loop", move || {
    ///         if flag.load(Ordering::Acquire) { Ok(()) } else { Err("the loop stopped".into()) }
    ///     })
    ///     .unwrap();
    /// manager.add_healthz_check("upstream", || async { Ok(()) }).unwrap();
    /// assert!(matches!(
    ///     manager.add_healthz_check("loop", || Ok(())),
    ///     Err(ManagerError::DuplicateCheck { .. })
    /// ));
    ///
    /// let address = manager.bind().await.unwrap().unwrap();
    /// let stop = informer_runtime::CancellationToken::new();
    /// let run = tokio::spawn(manager.run(stop.clone()));
    /// let get = async |path: &str| {
    ///     let mut s = tokio::net::TcpStream::connect(address).await.unwrap();
    ///     s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    ///     let mut out = String::new();
    ///     s.read_to_string(&mut out).await.unwrap();
    ///     out.split_once("\r\n\r\n").unwrap().1.to_owned()
    /// };
    /// assert_eq!(get("/healthz").await, "ok\n");
    /// alive.store(false, Ordering::Release);
    /// assert_eq!(
    ///     get("/healthz").await,
    ///     "[-]loop failed: reason withheld\n[+]upstream ok\nhealthz check failed\n"
    /// );
    /// assert_eq!(get("/healthz/loop").await, "internal server error: the loop stopped\n");
    /// stop.cancel();
    /// run.await.unwrap().unwrap();
    /// # }
    /// ```
    pub fn add_healthz_check<M>(
        &mut self,
        name: impl Into<String>,
        check: impl IntoCheck<M>,
    ) -> Result<(), ManagerError> {
        let name = name.into();
        let reserved: &[&str] = if self.leader.is_some() {
            &[LEADER_ELECTION_CHECK]
        } else {
            &[]
        };
        add_check(
            &mut self.health_checks,
            "healthz",
            reserved,
            name,
            check.into_check(),
        )
    }

    /// Adds a named readiness check to `/readyz`: controller-runtime's
    /// `mgr.AddReadyzCheck(name, checker)`. `/readyz` passes once the manager's own checks
    /// pass (`informer-sync`: every controller's caches have synced and none has stopped,
    /// as one does on a panic of its reflector or cache; `shutdown`: shutdown has not begun) and every check added here passes; it fails with 500. A readiness check
    /// should fail while this replica cannot serve (kubelet takes it out of its Services'
    /// endpoints, without restarting it). The format, `?verbose`, `?exclude=` and
    /// `/readyz/<name>` are as for [`add_healthz_check`](Self::add_healthz_check).
    ///
    /// # Errors
    /// [`ManagerError::InvalidCheckName`], or [`ManagerError::DuplicateCheck`] for a name
    /// taken, `informer-sync` and `shutdown` included.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::{Manager, ManagerError};
    /// let mut manager = Manager::with_factory(InformerFactory::without_client());
    /// manager
    ///     .add_readyz_check("database", || async {
    ///         // say, ping the database with a short timeout
    ///         Ok(())
    ///     })
    ///     .unwrap();
    /// assert!(matches!(
    ///     manager.add_readyz_check("shutdown", || Ok(())),
    ///     Err(ManagerError::DuplicateCheck { .. })
    /// ));
    /// assert!(matches!(
    ///     manager.add_readyz_check("two words", || Ok(())),
    ///     Err(ManagerError::InvalidCheckName(_))
    /// ));
    /// ```
    pub fn add_readyz_check<M>(
        &mut self,
        name: impl Into<String>,
        check: impl IntoCheck<M>,
    ) -> Result<(), ManagerError> {
        let name = name.into();
        add_check(
            &mut self.ready_checks,
            "readyz",
            &[INFORMER_SYNC_CHECK, SHUTDOWN_CHECK],
            name,
            check.into_check(),
        )
    }

    /// Adds a task the manager runs beside its controllers (controller-runtime's
    /// `mgr.Add(runnable)`): once the caches have synced, while this replica leads unless
    /// the task says otherwise, until shutdown. See [`Task`] for when it starts and stops
    /// and how its failures are reported.
    ///
    /// # Errors
    /// [`ManagerError::DuplicateTask`] if a task with the same name was added.
    ///
    /// ```
    /// # use informer_runtime::factory::InformerFactory;
    /// # use informer_runtime::manager::{Manager, ManagerError, Task};
    /// use informer_runtime::CancellationToken;
    /// let mut manager = Manager::with_factory(InformerFactory::without_client());
    /// let gc = || Task::new("gc", |cancel: CancellationToken| async move {
    ///     cancel.cancelled().await;
    ///     Ok(())
    /// });
    /// manager.add_task(gc()).unwrap();
    /// assert!(matches!(manager.add_task(gc()), Err(ManagerError::DuplicateTask(_))));
    /// ```
    pub fn add_task(&mut self, task: Task) -> Result<(), ManagerError> {
        if self.tasks.iter().any(|t| t.name == task.name) {
            return Err(ManagerError::DuplicateTask(task.name));
        }
        self.tasks.push(task);
        Ok(())
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
    /// (exclusive with [`sharding`](Self::sharding)). Needs a [`client`](Self::client) that
    /// may `get`, `create` and `update` `leases` of `coordination.k8s.io` in the Lease's
    /// namespace (controller-runtime's leader election role).
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

    /// How long past the lease duration this replica may go without renewing the Lease
    /// while it believes it leads before the `leaderElection` health check fails
    /// (default [`DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE`], 20 s, as kube-controller-manager).
    ///
    /// With [leader election](Self::leader_election), `/healthz` (and `/livez`) serve a check
    /// named `leaderElection`: [`LeaderElector::check`] with this tolerance. It fails only
    /// when the election loop is stuck (a running loop steps down by itself at the renew
    /// deadline, so a standby, or a leader that stepped down, always passes), so that
    /// kubelet restarts a replica that may still be doing leader-only work after another
    /// one took over. Its error is shown, as with the manager's other checks:
    /// `[-]leaderElection failed: failed election to renew leadership on lease <name>`.
    /// A probe that must ignore it can ask `/healthz?exclude=leaderElection`; sharding has
    /// no such check.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use informer_runtime::leader::LeaderElectionConfig;
    /// # use informer_runtime::manager::Manager;
    /// # fn demo(client: kube::Client) {
    /// let manager = Manager::new(client)
    ///     .leader_election(LeaderElectionConfig::new("shop-controller", "shop", "pod-a"))
    ///     .leader_election_health_tolerance(Duration::from_secs(60));
    /// # let _ = manager;
    /// # }
    /// ```
    pub fn leader_election_health_tolerance(mut self, tolerance: Duration) -> Self {
        self.leader_health_tolerance = tolerance;
        self
    }

    /// What this replica does when it loses the Lease while running (it stops renewing in
    /// time, or another replica takes the Lease over).
    ///
    /// - `false` (the default): its workers and leader-only tasks stop at once, and it goes
    ///   on as a standby with warm caches, ready to lead again.
    /// - `true`: it shuts down in order, as on SIGTERM, and [`run`](Self::run) returns
    ///   [`ManagerError::LeaderElectionLost`], so that `main` exits and the pod restarts:
    ///   controller-runtime's behaviour (its manager ends with "leader election lost"). Use
    ///   it when leader-only state lives outside the manager's tasks and must not outlive a
    ///   term. A shutdown asked for (a signal, the token) is not a loss, even if it ends the
    ///   term.
    ///
    /// ```
    /// # use informer_runtime::leader::LeaderElectionConfig;
    /// # use informer_runtime::manager::Manager;
    /// # fn demo(client: kube::Client) {
    /// let manager = Manager::new(client)
    ///     .leader_election(LeaderElectionConfig::new("shop-controller", "shop", "pod-a"))
    ///     .exit_on_leader_loss(true);
    /// # let _ = manager;
    /// # }
    /// ```
    pub fn exit_on_leader_loss(mut self, exit: bool) -> Self {
        self.exit_on_leader_loss = exit;
        self
    }

    /// Reconciles only the keys of the shards this replica holds (exclusive with
    /// [`leader_election`](Self::leader_election)). Needs a [`client`](Self::client).
    /// `/metrics` reports the shards held (`informer_shards_held`, beside
    /// `informer_shards_total`) and, per controller, the keys left to other replicas
    /// (`informer_shard_skipped_keys_total`) and the reconciles dropped when a shard moved
    /// (`informer_shard_cancelled_reconciles_total`).
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
        mut controller: Controller<K>,
    ) -> Result<(), ManagerError> {
        controller.mark_used();
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
        if let Some(address) = self.address
            && self.listener.is_none()
        {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::Bind { address, source })?;
            self.listener = Some(listener);
        }
        if let Some(address) = self.separate_probe_address()
            && self.probe_listener.is_none()
        {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|source| ManagerError::BindHealthProbe { address, source })?;
            self.probe_listener = Some(listener);
        }
        Ok(bound(self.listener.as_ref(), self.address))
    }

    /// Binds the HTTP endpoints now, as [`bind`](Self::bind), and returns the address the
    /// probes are served on: the [`health_probe_address`](Self::health_probe_address) (with
    /// port 0, the port the system picked), or else the metrics address; `None` when neither
    /// is served.
    ///
    /// # Errors
    /// [`ManagerError::Bind`] or [`ManagerError::BindHealthProbe`] if an address cannot be
    /// bound.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), informer_runtime::manager::ManagerError> {
    /// use informer_runtime::factory::InformerFactory;
    /// use informer_runtime::manager::Manager;
    ///
    /// let mut manager = Manager::with_factory(InformerFactory::without_client())
    ///     .metrics_address("127.0.0.1:0".parse().unwrap())
    ///     .health_probe_address("127.0.0.1:0".parse().unwrap());
    /// let metrics = manager.bind().await?.expect("metrics are served");
    /// let probes = manager.bind_health_probe().await?.expect("probes are served");
    /// assert_ne!(metrics, probes);
    /// # Ok(()) }
    /// ```
    pub async fn bind_health_probe(&mut self) -> Result<Option<SocketAddr>, ManagerError> {
        let metrics = self.bind().await?;
        Ok(match self.separate_probe_address() {
            Some(address) => bound(self.probe_listener.as_ref(), Some(address)),
            None => metrics,
        })
    }

    /// The address the probes bind apart from `/metrics`, if they do.
    fn separate_probe_address(&self) -> Option<SocketAddr> {
        let probe = self.probe_address?;
        let shared = self.address == Some(probe) && probe.port() != 0;
        (!shared).then_some(probe)
    }

    /// Runs every controller until `cancel` is cancelled (or SIGTERM/SIGINT arrives), then
    /// shuts down in order: workers (letting reconciles in flight finish), the lease or
    /// shards, the informers, the HTTP endpoint. See [`Manager`] for the guarantees.
    ///
    /// Dropping the future instead (aborting its task) stops at once: no reconcile is
    /// waited for and the lease is not released (another replica takes it over after its
    /// duration), but every watch and the HTTP endpoint are closed, as the tasks that hold
    /// them are dropped with it.
    ///
    /// # Errors
    /// Before anything runs: [`ManagerError::Bind`], [`ManagerError::BindHealthProbe`],
    /// [`ManagerError::Config`], [`ManagerError::ShardConfig`], [`ManagerError::NoClient`],
    /// [`ManagerError::LeaderElectionAndSharding`],
    /// [`ManagerError::TaskNeedsLeaderElection`], [`ManagerError::DuplicateCheck`] (a health
    /// check of yours named `leaderElection` with leader election).
    pub async fn run(mut self, cancel: CancellationToken) -> Result<(), ManagerError> {
        self.mode()?;
        if matches!(self.mode, Some(Mode::Leader(_)))
            && self
                .health_checks
                .iter()
                .any(|c| c.name == LEADER_ELECTION_CHECK)
        {
            return Err(ManagerError::DuplicateCheck {
                endpoint: "healthz",
                name: LEADER_ELECTION_CHECK.to_owned(),
            });
        }
        if matches!(self.mode, Some(Mode::Shards(_)))
            && let Some(task) = self.tasks.iter().find(|t| t.needs_leader_election)
        {
            return Err(ManagerError::TaskNeedsLeaderElection(task.name.clone()));
        }
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
        if let Mode::Shards(shards) = &mode {
            let config = shards.config();
            let (name, total) = (config.lease_prefix.clone(), config.shards);
            let shards = shards.clone();
            self.metrics
                .set_shard_status(name, Arc::new(move || shards.held().len()), total);
        }

        let controllers: Arc<Vec<Box<dyn ErasedController>>> =
            Arc::new(std::mem::take(&mut self.controllers));
        let tasks = std::mem::take(&mut self.tasks);
        let probes = Arc::new(self.probes(&controllers, &shutdown, &mode));
        let registry = std::mem::take(&mut self.registry);
        let separate = self.separate_probe_address().is_some();
        let metrics_state = Arc::new(HttpState {
            registry: Some(registry),
            probes: (!separate).then(|| probes.clone()),
        });
        let probe_state = Arc::new(HttpState {
            registry: None,
            probes: Some(probes),
        });

        // Everything below runs inside this future (nothing is detached), so dropping it
        // (say, aborting its task) stops it all at once, like a crash: the lease is then
        // not released and expires on its own.
        let http_stop = CancellationToken::new();
        let serve_metrics = async {
            if let Some(listener) = self.listener.take() {
                if let Ok(address) = listener.local_addr() {
                    if separate {
                        tracing::info!(%address, "serving /metrics");
                    } else {
                        tracing::info!(%address, "serving /metrics, /healthz and /readyz");
                    }
                }
                http::serve(listener, metrics_state, http_stop.clone()).await;
            }
        };
        let serve_probes = async {
            if let Some(listener) = self.probe_listener.take() {
                if let Ok(address) = listener.local_addr() {
                    tracing::info!(%address, "serving the health probes /healthz and /readyz");
                }
                http::serve(listener, probe_state, http_stop.clone()).await;
            }
        };
        let http = async {
            tokio::join!(serve_metrics, serve_probes);
        };
        let signals = async {
            if self.signals {
                shutdown_on_signal(shutdown.clone()).await;
            }
        };
        // With exit_on_leader_loss: the end of a term while running shuts the manager down.
        let lost_lease = std::sync::Mutex::new(None::<String>);
        let watch_term = async {
            if let (true, Mode::Leader(elector)) = (self.exit_on_leader_loss, &mode) {
                let lease = elector.config().lease_name.clone();
                if watch_for_lost_term(elector.subscribe(), &shutdown).await {
                    tracing::error!(%lease, "leader election lost: shutting down (exit_on_leader_loss)");
                    *lost_lease.lock().unwrap_or_else(PoisonError::into_inner) = Some(lease);
                    shutdown.cancel();
                }
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
            // Every informer of the factory, those a task or handler of the user's took from
            // it included (client-go's `factory.Start`); then controllers' informers of other
            // factories or their own.
            self.factory.start();
            for controller in controllers.iter() {
                controller.sources().start();
            }
            tracing::info!(
                controllers = controllers.len(),
                tasks = tasks.len(),
                "manager started"
            );
            // Controllers whose caches are still syncing, and the factory's other informers
            // (one count for them all); tasks start at 0.
            let (syncing, synced) = watch::channel(controllers.len() + 1);
            let factory_synced = async {
                // An informer that stopped before syncing does not hold the tasks back, as a
                // controller's does not.
                let _ = self.factory.wait_for_sync_cancellable(&shutdown).await;
                syncing.send_modify(|n| *n = n.saturating_sub(1));
            };
            let elector = match &mode {
                Mode::Leader(elector) => Some(elector),
                _ => None,
            };
            // A controller whose informer stopped before syncing returns early, as does a
            // task that returns; the others (and the endpoint) keep running until shutdown.
            tokio::join!(
                join_all(
                    controllers
                        .iter()
                        .map(|c| drive(&**c, &shutdown, &mode, &syncing))
                ),
                join_all(
                    tasks
                        .iter()
                        .map(|t| task::drive(t, &shutdown, elector, synced.clone()))
                ),
                factory_synced,
                shutdown.cancelled(),
            );
            tracing::info!("manager shutting down");
            scale_stop.cancel();
        };
        let stop_all = async {
            tokio::join!(work, scale, signals, watch_term);
            join_all(controllers.iter().map(|c| c.shutdown())).await;
            self.factory.shutdown().await;
            http_stop.cancel();
        };
        tokio::join!(stop_all, http);
        tracing::info!("manager stopped");
        match lost_lease
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(lease) => Err(ManagerError::LeaderElectionLost(lease)),
            None => Ok(()),
        }
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

    /// The checks `/healthz` and `/readyz` serve: the user's, and the manager's own
    /// (`leaderElection` with leader election).
    fn probes(
        &mut self,
        controllers: &Arc<Vec<Box<dyn ErasedController>>>,
        shutdown: &CancellationToken,
        mode: &Mode,
    ) -> Probes {
        let mut health = std::mem::take(&mut self.health_checks);
        if health.is_empty() {
            health.push(NamedCheck {
                name: PING_CHECK.to_owned(),
                check: (|| Ok(())).into_check(),
                reason: Reason::Shown,
            });
        }
        if let Mode::Leader(elector) = mode {
            let (elector, tolerance) = (elector.clone(), self.leader_health_tolerance);
            health.push(NamedCheck {
                name: LEADER_ELECTION_CHECK.to_owned(),
                check: (move || elector.check(tolerance).map_err(Into::into)).into_check(),
                reason: Reason::Shown,
            });
        }
        let mut ready = std::mem::take(&mut self.ready_checks);
        let controllers = controllers.clone();
        let factory = self.factory.clone();
        ready.push(NamedCheck {
            name: INFORMER_SYNC_CHECK.to_owned(),
            check: (move || {
                let mut missing: Vec<String> = controllers
                    .iter()
                    .flat_map(|c| c.sources().unsynced())
                    .collect();
                if missing.is_empty() {
                    // The factory's other informers (a task's), once the controllers' are in.
                    missing = factory
                        .unsynced()
                        .iter()
                        .map(|u| format!("{}: {}", u.informer, u.reason))
                        .collect();
                }
                if missing.is_empty() {
                    Ok(())
                } else {
                    Err(format!("caches not synced: {}", missing.join("; ")).into())
                }
            })
            .into_check(),
            reason: Reason::Shown,
        });
        let shutdown = shutdown.clone();
        ready.push(NamedCheck {
            name: SHUTDOWN_CHECK.to_owned(),
            check: (move || {
                if shutdown.is_cancelled() {
                    Err("shutting down".into())
                } else {
                    Ok(())
                }
            })
            .into_check(),
            reason: Reason::Shown,
        });
        Probes { health, ready }
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

/// Adds `check` as `name` to `checks` (the checks of `/endpoint`, whose built-in names are
/// `reserved`), refusing invalid and taken names.
fn add_check(
    checks: &mut Vec<NamedCheck>,
    endpoint: &'static str,
    reserved: &[&str],
    name: String,
    check: Check,
) -> Result<(), ManagerError> {
    if !health::valid_name(&name) {
        return Err(ManagerError::InvalidCheckName(name));
    }
    if reserved.contains(&name.as_str()) || checks.iter().any(|c| c.name == name) {
        return Err(ManagerError::DuplicateCheck { endpoint, name });
    }
    checks.push(NamedCheck {
        name,
        check,
        reason: Reason::Withheld,
    });
    Ok(())
}

/// The address `listener` is bound to, or `address` if it cannot say; `None` without either.
fn bound(listener: Option<&TcpListener>, address: Option<SocketAddr>) -> Option<SocketAddr> {
    listener.and_then(|l| l.local_addr().ok()).or(address)
}

/// How replicas share the work, once set up.
enum Mode {
    Single,
    Leader(LeaderElector),
    Shards(ShardManager),
}

/// Drives one controller: waits for its caches (then counts itself out of `syncing`), then
/// runs its workers as the mode says, until `shutdown`.
async fn drive(
    controller: &dyn ErasedController,
    shutdown: &CancellationToken,
    mode: &Mode,
    syncing: &watch::Sender<usize>,
) {
    let synced = controller
        .sources()
        .wait_synced(controller.name(), shutdown)
        .await;
    syncing.send_modify(|n| *n = n.saturating_sub(1));
    if !synced {
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

/// Waits until a term of `states` has begun and ended while `shutdown` was not asked for
/// (`true`), or until `shutdown` (`false`).
async fn watch_for_lost_term(
    mut states: watch::Receiver<LeaderState>,
    shutdown: &CancellationToken,
) -> bool {
    let mut led = false;
    loop {
        let leading = states.borrow_and_update().is_leading();
        if leading {
            led = true;
        } else if led {
            return !shutdown.is_cancelled();
        }
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => return false,
            changed = states.changed() => if changed.is_err() { return false },
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
