//! Test a controller the way Sieve (OSDI'22) and Acto (SOSP'23) do, inside `cargo test`:
//! under seeded schedules of faults, with invariants checked at every committed state, a
//! convergence check, shrinking of a failing schedule and a replayable seed.
//!
//! The controller is a black box that talks to the in-process [`TestApiServer`] through a
//! `kube::Client`: you hand [`Chaos`] a function that starts it given a client and a
//! cancellation token, and the harness starts it, crashes it (its requests held, its token
//! cancelled, its task aborted: its caches are gone), restarts it, and runs two replicas when
//! leader election is tested. Each incarnation has a bearer token of its own
//! ([`TestApiServer::user_config`]), so the server attributes its requests and writes
//! (`replica-0.2`: replica 0, second incarnation) and faults aim at it alone.
//!
//! ```no_run
//! use informer_testing::chaos::{Chaos, Cluster, World};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use serde_json::json;
//!
//! # async fn my_controller(_client: kube::Client, _stop: tokio_util::sync::CancellationToken) {}
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn mirrors_every_config_map() {
//!     let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
//!         "metadata": {"name": "settings", "namespace": "default"}, "data": {"mode": "a"}});
//!     Chaos::new(|client, stop| my_controller(client, stop))
//!         .world(World::generated([settings]).mutate("/data/mode", ["a", "b", "c"]))
//!         .invariant("at most one mirror per ConfigMap", |cluster: &Cluster| {
//!             let mirrors = cluster.list::<ConfigMap>().into_iter()
//!                 .filter(|cm| cm.metadata.name.as_deref() == Some("settings-mirror"));
//!             if mirrors.count() > 1 { Err("two mirrors".into()) } else { Ok(()) }
//!         })
//!         .converges(|cluster: &Cluster| {
//!             let source = cluster.get::<ConfigMap>(Some("default"), "settings");
//!             let mirror = cluster.get::<ConfigMap>(Some("default"), "settings-mirror");
//!             match (source, mirror) {
//!                 (Some(s), Some(m)) if s.data == m.data => Ok(()),
//!                 (None, None) => Ok(()),
//!                 (s, m) => Err(format!("source {:?}, mirror {:?}", s.map(|s| s.data), m.map(|m| m.data))),
//!             }
//!         })
//!         .run()
//!         .await;
//! }
//! ```
//!
//! # What a run does
//!
//! Each seed generates a schedule: the [`World`]'s steps (creates, updates, deletes,
//! re-creates with the same name) with faults and pauses mixed in ([`FaultKind`]):
//!
//! | fault | what the controller sees | the bug it hunts |
//! | --- | --- | --- |
//! | [`Crash`](FaultKind::Crash) | it crashes right after the server commits one of its writes (before it can write again), misses a few steps, restarts with empty caches | intermediate states |
//! | [`StaleRestart`](FaultKind::StaleRestart) | it restarts against an API server that has not seen its last writes (an HA API server behind a load balancer, lagging): its lists show the world before them | stale state |
//! | [`WatchDelay`](FaultKind::WatchDelay) | watch events arrive late, by a different delay per resource, so caches of different types disagree | stale state |
//! | [`WatchDrop`](FaultKind::WatchDrop) | watches end, the history is compacted: a relist (410) | relist handling |
//! | [`Unobserved`](FaultKind::Unobserved) | watches pause while the world changes, then it relists: a create and delete, a delete and re-create, are never seen | unobserved states |
//! | [`Coalesce`](FaultKind::Coalesce) | watches pause, then deliver everything at once | events that cancel each other |
//! | [`RequestErrors`](FaultKind::RequestErrors) | its next writes fail with 409, 429 or 500, reads with 429 or 500 | error handling |
//! | [`LeaseLoss`](FaultKind::LeaseLoss) | the leader's Lease renewals fail until another holder takes the Lease over | work after losing the lease |
//!
//! A run starts a fresh server (several run at once, one per seed), follows every change it
//! commits and checks each [`invariant`](Chaos::invariant) on every committed state (not on
//! samples: that is what catches a duplicate child that lives for one revision). After the
//! schedule every fault ends, every replica runs, and the run waits for the
//! [`converges`](Chaos::converges) check to hold with the world quiet (no change but Lease
//! renewals for [`quiet`](Chaos::quiet)), within [`converge_within`](Chaos::converge_within);
//! a state that does not change for half of that bound without being the expected one,
//! while no controller asks for a list or a watch (rebuilds a cache), fails early. A controller that keeps writing while the expected state holds, with no
//! quiet period for 5 s (or ten quiet periods), *thrashes*; a burst that ends by itself does
//! not, nor do writes after the state left the expected one (the checker judged before it saw
//! the world's last change, say): those count as converging, and one that never ends fails
//! the bound. With [`leader_election`](Chaos::leader_election),
//! a replica that writes after its Lease passed to another holder fails the run; a
//! controller whose start function returns or panics while it should run fails it too.
//!
//! # A failure
//!
//! [`Chaos::run`] panics with the [`Report`]: the seed, the failure, the schedule shrunk by
//! delta debugging to the fewest steps that still fail the same way (each candidate run up
//! to three times: timing is not fully deterministic), how to replay both, and the trace of
//! the last failing run: what each incarnation listed, saw on its watches and wrote, the
//! world's steps and the faults. [`Chaos::check`] returns it instead.
//!
//! Candidates run concurrently while shrinking, and some failures happen only under that
//! load. So the shrunk schedule is then replayed one run at a time, as your replay or
//! regression test will run it; if it never fails so, the larger schedule shrinking took
//! before it is replayed instead, and so on. The report says how many of those replays
//! failed ([`Report::replays_failed`]).
//!
//! The report also prints the shrunk schedule as Rust code ([`Report::scenario_code`]):
//! pasted into [`Chaos::scenario`], it becomes a regression test that runs exactly those
//! steps, whatever the generator does in later versions.
//!
//! # A scenario
//!
//! [`Chaos::scenario`] runs a schedule you write out ([`Step`]s: world changes, faults,
//! pauses) instead of generated ones, with the same invariants, convergence check and
//! shrinking: "crash right after the first write, then change the parent while it is down"
//! as a test. Its steps run back to back; a [`Step::Settle`] lets the controller act
//! between two of them.
//!
//! # State outside the cluster
//!
//! A controller that manages something outside the cluster (a DNS zone, a registry cache, a
//! cloud API: what its finalizer cleans up) is tested with a fake of that system, and the
//! fake belongs to the run: runs go on at once, and a crash does not reset an external
//! system. [`outside`]`::<T>()` in the start closure gives the run's `T` (made with
//! `Default`), the same to every incarnation and replica of the run;
//! [`Cluster::outside`] reads it in the convergence check. Stale restarts find the classic
//! bug of such controllers: a write outside the cluster made from a cache that went back in
//! time, for an object whose cleanup already ran (read the object from the API server before
//! an outside write; informer-runtime's managed finalizer does):
//!
//! ```no_run
//! use std::collections::BTreeSet;
//! use std::sync::{Arc, Mutex};
//! use informer_testing::chaos::{self, Chaos, Cluster};
//!
//! type Zone = Mutex<BTreeSet<String>>; // the fake DNS zone: the names it serves
//! # async fn dns_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken, _z: Arc<Zone>) {}
//! # async fn demo() {
//! Chaos::new(|client, stop| dns_controller(client, stop, chaos::outside::<Zone>()))
//!     .converges(|cluster: &Cluster| {
//!         let served = cluster.outside::<Zone>().lock().unwrap().clone();
//!         // ... compare with the objects in `cluster`
//!         # let _ = served;
//!         Ok(())
//!     })
//!     .run()
//!     .await;
//! # }
//! ```
//!
//! A fake takes part in the run through [`run_context`]: [`RunContext::note`] writes its
//! calls into the run's trace (a report then shows the controller's outside writes among
//! its API requests), [`RunContext::seed`] seeds its own failures (so a seed replays them),
//! and [`RunContext::in_schedule`] says when the schedule's faults end, when the fake's own
//! should end too.
//!
//! # Seeds
//!
//! | variable | effect |
//! | --- | --- |
//! | `INFORMER_CHAOS_SEEDS=500` | runs seeds `0..500` (default: [`seeds`](Chaos::seeds), 8) |
//! | `INFORMER_CHAOS_SEED=17` | runs seed 17 alone (then shrinks it if it fails) |
//! | `INFORMER_CHAOS_SEED=17:0,3,9` | runs only steps 0, 3 and 9 of seed 17's schedule, as a report prints it |
//! | `INFORMER_CHAOS_JOBS=2` | seeds run at once (default: [`concurrency`](Chaos::concurrency), 4) |
//! | `INFORMER_CHAOS_TRACE_LINES=1000` | how much of the failing run's trace a report prints (default: the last 80 events) |
//!
//! What a seed fixes: the schedule (the steps, their faults, their pauses). What it does not
//! fix: how the controller's tasks interleave with them in real time, so a seed finds the
//! same kind of interleaving, not always the identical one, and a replay of a failing seed
//! or of its shrunk schedule may need several runs to fail again (a report says so).
//!
//! The variables apply to every chaos test of the test binary: a report's replay lines end
//! with `cargo test -p <package> --test <binary> -- --exact <the test>` to build and run the
//! failing one alone. A step number past
//! the seed's schedule (a line from another test) is refused, not skipped.
//!
//! A chaos run is timed by the wall clock: its pauses, its convergence limit and its quiet
//! period are real time, and paused tokio time (`start_paused`) does not shorten them. Keep
//! chaos tests on the real clock, apart from tests that use paused time.

mod checker;
mod cluster;
mod interceptor;
mod outside;
mod report;
mod rng;
mod run;
mod schedule;
mod shrink;
mod world;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use cluster::Cluster;
pub use outside::{RunContext, outside, run_context};
pub use report::{Failure, Report, Summary, TraceEvent};
pub use schedule::{FaultKind, RequestClass, Step};
pub use world::{ObjectId, World, WorldStep};

use crate::{TestApiServer, TestApiServerBuilder};
use checker::{Check, LeaseRef};

/// How a controller's start function ended: `()`, or a `Result` whose error is displayed.
/// A start function that ends while the harness has not stopped it fails the run.
pub trait Exit {
    /// `Ok` for a clean end, else what went wrong.
    fn into_result(self) -> Result<(), String>;
}

impl Exit for () {
    fn into_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<T, E: fmt::Display> Exit for Result<T, E> {
    fn into_result(self) -> Result<(), String> {
        self.map(drop).map_err(|e| e.to_string())
    }
}

type StartFn = Arc<
    dyn Fn(kube::Client, CancellationToken, String) -> BoxFuture<'static, Result<(), String>>
        + Send
        + Sync,
>;
type ServerFn = Arc<dyn Fn(TestApiServerBuilder) -> TestApiServerBuilder + Send + Sync>;
type SetupFn = Arc<dyn Fn(&TestApiServer) -> Result<(), String> + Send + Sync>;

/// Everything a run needs, shared by the runs of a test.
pub(crate) struct Settings {
    name: String,
    /// The libtest name of the test that made the harness (its thread's name), for the
    /// replay lines; `None` outside a test.
    test: Option<String>,
    start: StartFn,
    replicas: usize,
    server: ServerFn,
    setup: SetupFn,
    world: World,
    kinds: Vec<FaultKind>,
    invariants: Arc<[Check]>,
    converges: Option<Check>,
    lease: Option<LeaseRef>,
    length: usize,
    converge_within: Duration,
    quiet: Duration,
}

/// A chaos test of a controller: what starts it, the world it lives in, the faults, and what
/// must hold. See the [module documentation](self) for what a run does.
///
/// ```no_run
/// # async fn demo() {
/// use informer_testing::chaos::{Chaos, FaultKind, World};
/// # async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken) {}
/// # let seeds: Vec<serde_json::Value> = Vec::new();
/// let summary = Chaos::new(|client, stop| my_controller(client, stop))
///     .name("my controller")
///     .world(World::generated(seeds))
///     .faults([FaultKind::Crash, FaultKind::Unobserved])
///     .seeds(16)
///     .check()
///     .await
///     .expect("no failing seed");
/// println!("{summary}");
/// # }
/// ```
pub struct Chaos {
    settings: Settings,
    kinds: Option<Vec<FaultKind>>,
    invariants: Vec<Check>,
    seeds: u64,
    concurrency: usize,
    attempts: usize,
    shrink_runs: usize,
    /// A schedule written out, run instead of the seeds'.
    scenario: Option<Vec<Step>>,
}

impl fmt::Debug for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chaos")
            .field("name", &self.settings.name)
            .field("replicas", &self.settings.replicas)
            .field("seeds", &self.seeds)
            .finish_non_exhaustive()
    }
}

impl Chaos {
    /// A test of the controller `start` starts: it is called with a client of the test
    /// server (authenticated as a new incarnation) and a token that is cancelled to stop it,
    /// once per incarnation; it should run until the token is cancelled. For a derived
    /// controller: `|client, stop| MyController.run_until(client, stop)`.
    ///
    /// ```no_run
    /// use informer_testing::chaos::Chaos;
    /// # async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken) -> Result<(), std::io::Error> { Ok(()) }
    /// let chaos = Chaos::new(|client, stop| my_controller(client, stop));
    /// # let _ = chaos;
    /// ```
    pub fn new<F, Fut>(start: F) -> Self
    where
        F: Fn(kube::Client, CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Exit,
    {
        Self::replicated(1, move |client, stop, _identity| start(client, stop))
    }

    /// A test of `replicas` replicas of a controller (for leader election, with
    /// [`leader_election`](Self::leader_election)); `start` also gets a holder identity
    /// unique to the incarnation (`replica-0.1`), for its leader elector. Sharded replicas
    /// (a `Manager` with sharding) run the same way: give each its identity, and no
    /// `leader_election`. A crashed replica's shards move after their Leases' duration, so
    /// keep [`converge_within`](Self::converge_within) above it.
    ///
    /// With the `informer` crate's `Manager`, hand the identity to its leader election on
    /// the Lease this test watches: `manager.leader_election(LeaderElectionConfig::new(
    /// "my-controller", "default", identity))` beside `.leader_election("default",
    /// "my-controller")` here (the same namespace and Lease name; in production,
    /// `LeaderElectionConfig::for_client` picks the identity). The replicas run in one
    /// process, so a `Manager` serving `/metrics` on its default address would find it
    /// taken by the first: build each with `without_http()` (or its own `metrics_address`).
    ///
    /// ```no_run
    /// use informer_testing::chaos::Chaos;
    /// # async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken, _id: String) {}
    /// let chaos = Chaos::replicated(2, |client, stop, identity| my_controller(client, stop, identity))
    ///     .leader_election("default", "my-controller");
    /// # let _ = chaos;
    /// ```
    pub fn replicated<F, Fut>(replicas: usize, start: F) -> Self
    where
        F: Fn(kube::Client, CancellationToken, String) -> Fut + Send + Sync + 'static,
        Fut: Future + Send + 'static,
        Fut::Output: Exit,
    {
        let start: StartFn = Arc::new(move |client, stop, identity| {
            let future = start(client, stop, identity);
            Box::pin(async move { future.await.into_result() })
        });
        let test = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(str::to_owned);
        Self {
            settings: Settings {
                name: test.clone().unwrap_or_else(|| "chaos".to_string()),
                test,
                start,
                replicas: replicas.max(1),
                server: Arc::new(|builder| builder),
                setup: Arc::new(|_| Ok(())),
                world: World::default(),
                kinds: Vec::new(),
                invariants: Arc::from(Vec::new()),
                converges: None,
                lease: None,
                length: 16,
                converge_within: Duration::from_secs(30),
                quiet: Duration::from_millis(500),
            },
            kinds: None,
            invariants: Vec::new(),
            seeds: 8,
            concurrency: 4,
            attempts: 3,
            shrink_runs: 100,
            scenario: None,
        }
    }

    /// The test's name, for reports (default: the name of the test function that made the
    /// harness, else `chaos`).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.name("deployments");
    /// # let _ = chaos;
    /// ```
    pub fn name(mut self, name: &str) -> Self {
        self.settings.name = name.to_string();
        self
    }

    /// Configures each run's server (custom resources, limits). To have the server check
    /// objects against a custom resource's schema as a cluster would, give it the whole CRD:
    /// `builder.crd(Widget::crd())` with kube's `CustomResource` derive (see
    /// [`TestApiServerBuilder::crd`]).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// use informer_testing::CustomResourceSpec;
    /// let chaos = chaos.server(|builder| {
    ///     builder.custom_resource(CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets"))
    /// });
    /// # let _ = chaos;
    /// ```
    pub fn server<F>(mut self, configure: F) -> Self
    where
        F: Fn(TestApiServerBuilder) -> TestApiServerBuilder + Send + Sync + 'static,
    {
        self.settings.server = Arc::new(configure);
        self
    }

    /// Prepares each run's server before the controller starts (namespaces, objects the
    /// world does not change). An error fails the run as a harness failure.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.setup(|server| {
    ///     server.create_json(serde_json::json!({
    ///         "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}
    ///     }))?;
    ///     Ok::<_, informer_testing::Error>(())
    /// });
    /// # let _ = chaos;
    /// ```
    pub fn setup<F, E>(mut self, setup: F) -> Self
    where
        F: Fn(&TestApiServer) -> Result<(), E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        self.settings.setup = Arc::new(move |server| setup(server).map_err(|e| e.to_string()));
        self
    }

    /// The world: how the controller's objects are created, changed and deleted.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// use informer_testing::chaos::World;
    /// let chaos = chaos.world(World::generated([serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}
    /// })]));
    /// # let _ = chaos;
    /// ```
    pub fn world(mut self, world: World) -> Self {
        self.settings.world = world;
        self
    }

    /// The faults schedules may inject (default: every kind; [`FaultKind::LeaseLoss`] only
    /// with [`leader_election`](Self::leader_election)). An empty list runs the world alone.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// use informer_testing::chaos::FaultKind;
    /// let chaos = chaos.faults([FaultKind::Crash, FaultKind::StaleRestart]);
    /// # let _ = chaos;
    /// ```
    pub fn faults(mut self, kinds: impl IntoIterator<Item = FaultKind>) -> Self {
        self.kinds = Some(kinds.into_iter().collect());
        self
    }

    /// A property that must hold in every state the server commits, from the first to the
    /// last: `Ok`, or what is wrong. A panic in it counts as `Err` with its message.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// use informer_testing::chaos::Cluster;
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// let chaos = chaos.invariant("one ReplicaSet per Deployment", |cluster: &Cluster| {
    ///     for deployment in cluster.list::<Deployment>() {
    ///         let uid = deployment.metadata.uid.unwrap_or_default();
    ///         let owned = cluster.controlled_by::<ReplicaSet>(&uid).len();
    ///         if owned > 1 {
    ///             return Err(format!("{uid} controls {owned} ReplicaSets"));
    ///         }
    ///     }
    ///     Ok(())
    /// });
    /// # let _ = chaos;
    /// ```
    pub fn invariant<F>(mut self, name: &str, check: F) -> Self
    where
        F: Fn(&Cluster) -> Result<(), String> + Send + Sync + 'static,
    {
        self.invariants.push(Check {
            name: name.to_string(),
            check: Arc::new(check),
        });
        self
    }

    /// The state the cluster must reach once the schedule is over and the world is quiet: a
    /// function of the whole state (typically of the primary objects: the children each
    /// should have, their specs, the status it should report), `Ok` or what differs.
    /// Without it, a run only has to become quiet. For a controller with a finalizer, check
    /// that no object is left being deleted (a `deletionTimestamp` with the finalizer still
    /// on): skipping those objects would let a cleanup that never finishes pass.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// use informer_testing::chaos::Cluster;
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// let chaos = chaos.converges(|cluster: &Cluster| {
    ///     for d in cluster.list::<Deployment>() {
    ///         let status = d.status.unwrap_or_default();
    ///         if status.observed_generation != d.metadata.generation {
    ///             return Err(format!("{:?} not observed", d.metadata.name));
    ///         }
    ///     }
    ///     Ok(())
    /// });
    /// # let _ = chaos;
    /// ```
    pub fn converges<F>(mut self, check: F) -> Self
    where
        F: Fn(&Cluster) -> Result<(), String> + Send + Sync + 'static,
    {
        self.settings.converges = Some(Check {
            name: "converges".to_string(),
            check: Arc::new(check),
        });
        self
    }

    /// The Lease the replicas elect their leader on: enables [`FaultKind::LeaseLoss`] and
    /// the rule that a replica must not write after its Lease passed to another holder
    /// (the harness takes a Lease over only after it went unrenewed for one and a half
    /// lease durations, so a leader that stops at its renew deadline never breaks it).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.leader_election("default", "my-controller");
    /// # let _ = chaos;
    /// ```
    pub fn leader_election(mut self, namespace: &str, lease_name: &str) -> Self {
        self.settings.lease = Some(LeaseRef {
            namespace: namespace.to_string(),
            name: lease_name.to_string(),
        });
        self
    }

    /// How many seeds run, unless `INFORMER_CHAOS_SEEDS` or `INFORMER_CHAOS_SEED` says
    /// otherwise (default 8: a few, for CI).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.seeds(100);
    /// # let _ = chaos;
    /// ```
    pub fn seeds(mut self, seeds: u64) -> Self {
        self.seeds = seeds;
        self
    }

    /// How many generated steps a schedule has beyond the world's initial creates (default
    /// 16).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.steps(30);
    /// # let _ = chaos;
    /// ```
    pub fn steps(mut self, steps: usize) -> Self {
        self.settings.length = steps;
        self
    }

    /// How many seeds (each its own server) run at once, unless `INFORMER_CHAOS_JOBS` says
    /// otherwise (default 4).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.concurrency(2);
    /// # let _ = chaos;
    /// ```
    pub fn concurrency(mut self, runs: usize) -> Self {
        self.concurrency = runs.max(1);
        self
    }

    /// How long the cluster may take to reach the expected state after the schedule
    /// (default 30 s); unchanged for half of it in another state, with no list or watch
    /// request from a controller meanwhile (a cache being rebuilt), fails at once. Controllers
    /// back off after errors and stale caches (this library's rate limiter doubles the delay
    /// of a key each time), so leave them room. With
    /// [`leader_election`](Self::leader_election), both bounds grow by one and a half of the
    /// Lease's `leaseDurationSeconds` (the time a standby may wait for a crashed leader's
    /// Lease to expire), so a test can keep its production lease timings.
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.converge_within(std::time::Duration::from_secs(10));
    /// # let _ = chaos;
    /// ```
    pub fn converge_within(mut self, bound: Duration) -> Self {
        self.settings.converge_within = bound;
        self
    }

    /// How long the world must stay unchanged (Lease renewals aside) in the expected state
    /// for a run to pass (default 500 ms).
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.quiet(std::time::Duration::from_secs(1));
    /// # let _ = chaos;
    /// ```
    pub fn quiet(mut self, quiet: Duration) -> Self {
        self.settings.quiet = quiet;
        self
    }

    /// How shrinking spends its time: up to `runs` runs in all (default 100: a minute or so),
    /// each candidate schedule run up to `attempts` times (default 3) before it counts as
    /// passing. The report says when shrinking stopped at the budget. The schedule shrinking
    /// ends with is then replayed one run at a time, up to `2 × attempts` times until it
    /// fails (these runs are not counted against `runs`); see [`Report::replays_failed`].
    ///
    /// ```
    /// # let chaos = informer_testing::chaos::Chaos::new(|_c, _s| async {});
    /// let chaos = chaos.shrinking(100, 2);
    /// # let _ = chaos;
    /// ```
    pub fn shrinking(mut self, runs: usize, attempts: usize) -> Self {
        self.shrink_runs = runs;
        self.attempts = attempts.max(1);
        self
    }

    /// Runs this schedule, written out, instead of the seeds' generated ones: a scenario you
    /// want tested as it is (crash right after the first write, change the parent while the
    /// controller is down), or a regression test for what a seed found. A failure [`Report`]
    /// prints its shrunk schedule as the code of such a call, to paste in place of the seeds
    /// on the same builder (its invariants and convergence check are what make the steps a
    /// test). The world's steps are the scenario's own ([`world`](Self::world) is not used);
    /// invariants, convergence, replicas, leader election and the server's configuration
    /// apply as in a seeded run. It runs once; `INFORMER_CHAOS_SEED` and
    /// `INFORMER_CHAOS_SEEDS` do not apply.
    ///
    /// **Steps do not wait for the controller.** They run back to back, as fast as the
    /// harness can make them: a fault armed for the controller's next write, then a world
    /// change, both happen before the controller has written anything. Put
    /// [`Step::Settle`] (or a [`Step::Wait`]) wherever the controller should act before the
    /// next step. Convergence is checked once, after the last step: end the scenario in the
    /// state whose outcome you want checked (a scenario that ends by deleting everything
    /// cannot show that an update was missed).
    ///
    /// ```no_run
    /// use informer_testing::chaos::{Chaos, Cluster, Step, WorldStep};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use serde_json::json;
    /// # async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken) {}
    /// # async fn demo() {
    /// let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "settings", "namespace": "default"}, "data": {"mode": "a"}});
    /// Chaos::new(|client, stop| my_controller(client, stop))
    ///     .converges(|cluster: &Cluster| {
    ///         let source = cluster.get::<ConfigMap>(Some("default"), "settings");
    ///         let mirror = cluster.get::<ConfigMap>(Some("default"), "settings-mirror");
    ///         match (source, mirror) {
    ///             (Some(s), Some(m)) if s.data == m.data => Ok(()),
    ///             (s, m) => Err(format!("{:?} mirrored as {:?}", s.map(|s| s.data), m.map(|m| m.data))),
    ///         }
    ///     })
    ///     .scenario([
    ///         Step::World(WorldStep::create(&settings)),
    ///         // Crash right after the controller's next write, then let it write.
    ///         Step::Crash { after_writes: 1, down_steps: 1 },
    ///         Step::Settle,
    ///         // Changed while it is down; it restarts after this step, caches empty.
    ///         Step::World(WorldStep::set(&settings, "/data/mode", "b")),
    ///         Step::DropWatches { compact: true },
    ///     ])
    ///     .run()
    ///     .await;
    /// # }
    /// ```
    pub fn scenario(mut self, steps: impl IntoIterator<Item = Step>) -> Self {
        self.scenario = Some(steps.into_iter().collect());
        self
    }

    /// The schedule seed `seed` generates, as a run would execute it.
    ///
    /// ```
    /// use informer_testing::chaos::{Chaos, World};
    /// let chaos = Chaos::new(|_c, _s| async {}).world(World::generated([serde_json::json!({
    ///     "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}
    /// })]));
    /// let schedule = chaos.schedule(7);
    /// assert_eq!(schedule, chaos.schedule(7), "a seed means one schedule");
    /// for (i, step) in schedule.iter().enumerate() {
    ///     println!("{i:>3}. {step}");
    /// }
    /// ```
    pub fn schedule(&self, seed: u64) -> Vec<Step> {
        let kinds = self.effective_kinds();
        schedule::generate(seed, &self.settings.world, &kinds, self.settings.length)
    }

    fn effective_kinds(&self) -> Vec<FaultKind> {
        let lease = self.settings.lease.is_some();
        self.kinds
            .clone()
            .unwrap_or_else(|| FaultKind::ALL.to_vec())
            .into_iter()
            .filter(|k| *k != FaultKind::LeaseLoss || lease)
            .collect()
    }

    /// Runs the seeds; panics with the [`Report`] of the first failing one (shrunk), and
    /// prints a one-line [`Summary`] otherwise.
    ///
    /// # Panics
    /// If a seed fails, or an environment variable of the harness is malformed.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// # async fn my_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken) {}
    /// informer_testing::chaos::Chaos::new(|client, stop| my_controller(client, stop))
    ///     .run()
    ///     .await;
    /// # }
    /// ```
    pub async fn run(self) {
        match self.check().await {
            Ok(summary) => println!("{summary}"),
            Err(report) => panic!("{report}"),
        }
    }

    /// Runs the seeds and returns the [`Report`] of the first failing one (shrunk), or the
    /// [`Summary`] if every seed passed.
    ///
    /// # Errors
    /// The report of the failing seed.
    ///
    /// # Panics
    /// If an environment variable of the harness is malformed.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// # async fn buggy_controller(_c: kube::Client, _s: tokio_util::sync::CancellationToken) {}
    /// let report = informer_testing::chaos::Chaos::new(|client, stop| buggy_controller(client, stop))
    ///     .check()
    ///     .await
    ///     .expect_err("the bug is found");
    /// assert!(report.shrunk.len() < report.schedule.len());
    /// # }
    /// ```
    pub async fn check(mut self) -> Result<Summary, Box<Report>> {
        let started = Instant::now();
        self.settings.kinds = self.effective_kinds();
        self.settings.invariants = Arc::from(std::mem::take(&mut self.invariants));
        if let Some(schedule) = self.scenario.take() {
            return self.check_scenario(schedule, started).await;
        }
        let plan = Plan::from_env(self.seeds);
        let concurrency = env_number("INFORMER_CHAOS_JOBS")
            .map_or(self.concurrency, |n| usize::try_from(n).unwrap_or(1).max(1));
        let settings = Arc::new(self.settings);
        let mut runs = Box::pin(
            futures::stream::iter(plan.seeds.clone())
                .map(|seed| {
                    let settings = settings.clone();
                    let only = plan.only.clone();
                    async move {
                        let schedule = schedule::generate(
                            seed,
                            &settings.world,
                            &settings.kinds,
                            settings.length,
                        );
                        let kept =
                            steps_to_run(only.as_deref(), seed, schedule.len(), &settings.name);
                        let steps: Vec<(usize, Step)> =
                            kept.iter().map(|i| (*i, schedule[*i].clone())).collect();
                        let result = run::run(&settings, Some(seed), &steps).await;
                        (seed, schedule, kept, result)
                    }
                })
                .buffer_unordered(concurrency),
        );
        let mut passed = Vec::new();
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        while let Some((seed, schedule, kept, result)) = runs.next().await {
            let Some(failure) = result.failure else {
                passed.push(seed);
                for i in &kept {
                    *counts.entry(schedule[*i].kind()).or_default() += 1;
                }
                continue;
            };
            let seeds_run = passed.len() + 1;
            // The seeds still running stop here (their servers and controllers with them).
            drop(runs);
            let shrink = plan.only.is_none();
            return Err(Box::new(
                shrink_and_report(
                    &settings,
                    ShrinkInput {
                        seed,
                        scenario: false,
                        schedule,
                        kept,
                        failure,
                        trace: result.trace,
                        seeds_run,
                        shrink,
                        attempts: self.attempts,
                        budget: self.shrink_runs,
                        concurrency,
                    },
                )
                .await,
            ));
        }
        Ok(Summary {
            name: settings.name.clone(),
            seeds: passed,
            steps: counts.into_iter().collect(),
            elapsed: started.elapsed(),
            scenario: false,
        })
    }

    /// [`check`](Self::check) of a [`scenario`](Self::scenario): one run of `schedule`,
    /// shrunk if it fails.
    async fn check_scenario(
        self,
        schedule: Vec<Step>,
        started: Instant,
    ) -> Result<Summary, Box<Report>> {
        let settings = Arc::new(self.settings);
        let kept: Vec<usize> = (0..schedule.len()).collect();
        let steps: Vec<(usize, Step)> = schedule.iter().cloned().enumerate().collect();
        let result = run::run(&settings, None, &steps).await;
        let Some(failure) = result.failure else {
            let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
            for step in &schedule {
                *counts.entry(step.kind()).or_default() += 1;
            }
            return Ok(Summary {
                name: settings.name.clone(),
                seeds: Vec::new(),
                steps: counts.into_iter().collect(),
                elapsed: started.elapsed(),
                scenario: true,
            });
        };
        let mut report = shrink_and_report(
            &settings,
            ShrinkInput {
                seed: 0,
                scenario: true,
                schedule,
                kept,
                failure,
                trace: result.trace,
                seeds_run: 1,
                shrink: true,
                attempts: self.attempts,
                budget: self.shrink_runs,
                concurrency: self.concurrency,
            },
        )
        .await;
        report.scenario = true;
        Err(Box::new(report))
    }
}

struct ShrinkInput {
    seed: u64,
    /// A written scenario: its runs have no seed.
    scenario: bool,
    schedule: Vec<Step>,
    kept: Vec<usize>,
    failure: Failure,
    trace: Vec<TraceEvent>,
    seeds_run: usize,
    shrink: bool,
    attempts: usize,
    budget: usize,
    concurrency: usize,
}

/// Shrinks a failing seed's schedule and writes the report.
async fn shrink_and_report(settings: &Arc<Settings>, input: ShrinkInput) -> Report {
    let ShrinkInput {
        seed,
        scenario,
        schedule,
        kept,
        failure,
        trace,
        seeds_run,
        shrink,
        attempts,
        budget,
        concurrency,
    } = input;
    // One run of a candidate (a subset of the schedule): its failure and trace if it failed
    // the way the seed did.
    let original = failure.clone();
    let scenario_seed = (!scenario).then_some(seed);
    let try_candidate = |candidate: Vec<usize>| {
        let (schedule, original) = (&schedule, &original);
        async move {
            let steps: Vec<(usize, Step)> = candidate
                .iter()
                .map(|i| (*i, schedule[*i].clone()))
                .collect();
            let result = run::run(settings, scenario_seed, &steps).await;
            result
                .failure
                .filter(|f| f.same_kind(original))
                .map(|f| (f, result.trace))
        }
    };
    let mut shrunk = if shrink {
        // Most failures need neither the pauses nor, often, the faults: try without first.
        let without = |drop: fn(&Step) -> bool| -> Vec<usize> {
            kept.iter()
                .copied()
                .filter(|i| !drop(&schedule[*i]))
                .collect()
        };
        let hints = vec![
            without(|s| matches!(s, Step::Wait(_) | Step::Settle)),
            without(|s| !matches!(s, Step::World(_))),
        ];
        let budget = shrink::Budget {
            attempts,
            runs: budget,
            concurrency,
        };
        shrink::ddmin(
            kept.clone(),
            (failure, trace),
            hints,
            &budget,
            &try_candidate,
        )
        .await
    } else {
        shrink::Shrunk {
            kept: kept.clone(),
            path: Vec::new(),
            evidence: (failure, trace),
            runs: 0,
            exhausted: false,
        }
    };
    // Candidates ran concurrently while shrinking: replay what was taken one run at a time,
    // as the user's replay will, and step back to a larger schedule if it never fails so.
    let (mut replays, mut replays_failed, mut set_aside) = (0, 0, Vec::new());
    if !shrunk.path.is_empty() {
        let mut candidates: Vec<Vec<usize>> = shrunk.path.iter().rev().cloned().collect();
        candidates.push(kept);
        let confirmed = shrink::confirm(&candidates, 2 * attempts, &try_candidate).await;
        shrunk.runs += confirmed.total;
        replays = confirmed.runs;
        if let Some(evidence) = confirmed.evidence {
            replays_failed = 1;
            set_aside = candidates[..confirmed.chosen].to_vec();
            shrunk.kept = candidates.swap_remove(confirmed.chosen);
            shrunk.evidence = evidence;
        }
    }
    let (failure, trace) = shrunk.evidence;
    Report {
        name: settings.name.clone(),
        test: settings.test.clone(),
        cargo_target: cargo_target(),
        run_ignored: std::env::args().any(|a| a == "--ignored" || a == "--include-ignored"),
        attempts,
        seed,
        seeds_run,
        failure,
        shrunk: shrunk
            .kept
            .iter()
            .map(|i| (*i, schedule[*i].clone()))
            .collect(),
        schedule,
        shrink_runs: shrunk.runs,
        shrink_budget_exhausted: shrunk.exhausted,
        replays,
        replays_failed,
        set_aside,
        trace,
        scenario: false,
    }
}

/// The steps of seed `seed`'s schedule (`len` steps) to run: those `only` names, or all.
///
/// # Panics
/// If `only` names a step past the schedule's end: the replay line is from another test,
/// or from another version of this one, and running what is left would pass for the wrong
/// reason.
fn steps_to_run(only: Option<&[usize]>, seed: u64, len: usize, name: &str) -> Vec<usize> {
    let Some(only) = only else {
        return (0..len).collect();
    };
    if let Some(i) = only.iter().find(|i| **i >= len) {
        panic!(
            "INFORMER_CHAOS_SEED names step {i}, but seed {seed}'s schedule in chaos test {name:?} has {len} steps (0 to {}): is the line from another test, or another version of it?",
            len.saturating_sub(1)
        );
    }
    only.to_vec()
}

/// Which seeds run, from the environment.
struct Plan {
    seeds: Vec<u64>,
    /// Only these steps of the (single) seed's schedule.
    only: Option<Vec<usize>>,
}

impl Plan {
    fn from_env(default_seeds: u64) -> Self {
        if let Ok(value) = std::env::var("INFORMER_CHAOS_SEED") {
            return Self::parse_seed(&value).unwrap_or_else(|| {
                panic!(
                    "INFORMER_CHAOS_SEED must be a seed (17) or a seed and steps (17:0,3,9), not {value:?}"
                )
            });
        }
        let count = env_number("INFORMER_CHAOS_SEEDS").unwrap_or(default_seeds);
        Self {
            seeds: (0..count).collect(),
            only: None,
        }
    }

    fn parse_seed(value: &str) -> Option<Self> {
        let (seed, steps) = match value.trim().split_once(':') {
            Some((seed, steps)) => (seed, Some(steps)),
            None => (value.trim(), None),
        };
        let seed = seed.trim().parse().ok()?;
        let only = match steps {
            None => None,
            Some(steps) => Some(
                steps
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse().ok())
                    .collect::<Option<Vec<usize>>>()?,
            ),
        };
        Some(Self {
            seeds: vec![seed],
            only,
        })
    }
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name} must be a number, not {value:?}"),
    }
}

/// The `cargo test` arguments selecting the running test binary: its package (cargo sets
/// `CARGO_PKG_NAME` when it runs a test) and its target, from the binary's name
/// (`target/debug/deps/<target>-<hash>`): `--lib` for the package's own unit tests,
/// `--test <target>` for an integration test.
fn cargo_target() -> Option<String> {
    let package = std::env::var("CARGO_PKG_NAME").ok()?;
    let exe = std::env::current_exe().ok()?;
    cargo_target_of(&package, exe.file_stem()?.to_str()?)
}

/// [`cargo_target`] from the package's name and the binary's file stem.
fn cargo_target_of(package: &str, stem: &str) -> Option<String> {
    let (target, hash) = stem.rsplit_once('-')?;
    if hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    if target == package.replace('-', "_") {
        Some(format!("-p {package} --lib"))
    } else {
        Some(format!("-p {package} --test {target}"))
    }
}

#[cfg(test)]
mod tests;
