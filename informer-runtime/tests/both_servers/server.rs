//! "A server" for a scenario: the in-process fake or the real API server, serving the same
//! custom resource, with the faults both can suffer (a network outage through [`Proxy`],
//! compaction, restarts), and the `on_both_servers!` macro that runs one scenario against
//! each as two tests.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use informer_testing::envtest::{EnvTest, StopMode};
use informer_testing::{CustomResourceSpec, RestartMode, TestApiServer};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{AbortHandle, JoinHandle};

/// Runs `$scenario(&Server)` as two tests in a module named `$name`: `fake` against the
/// in-process server and `real` against the real one (which skips, saying why, without its
/// binaries).
macro_rules! on_both_servers {
    ($name:ident, $options:expr, $scenario:path) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn fake() {
                let server = $crate::both_servers::server::Server::fake($options).await;
                $scenario(&server).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn real() {
                let Some(server) = $crate::both_servers::server::Server::real($options).await
                else {
                    return;
                };
                $scenario(&server).await;
            }
        }
    };
}
pub(crate) use on_both_servers;

/// How a scenario wants its server.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Real server: `--watch-cache=false`, so that lists and watches go to etcd and its
    /// compaction is seen through the API (410 for old versions and continue tokens).
    pub without_watch_cache: bool,
}

impl Options {
    pub const DEFAULT: Options = Options {
        without_watch_cache: false,
    };
    /// For scenarios that need compaction to expire versions.
    pub const COMPACTABLE: Options = Options {
        without_watch_cache: true,
    };
}

/// The custom resource every scenario uses.
pub fn widget_spec() -> CustomResourceSpec {
    CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
        .with_status_subresource()
}

pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// A widget in `default` with `labels` and `spec.value`.
pub fn widget(name: &str, labels: &[(&str, &str)], value: u64) -> DynamicObject {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| ((*k).into(), json!(v)))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"value": value},
    }))
    .expect("a valid widget")
}

pub fn name_of(o: &DynamicObject) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

pub fn value_of(o: &DynamicObject) -> u64 {
    o.data["spec"]["value"].as_u64().unwrap_or(u64::MAX)
}

pub fn rv_of(o: &DynamicObject) -> u64 {
    o.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub enum Server {
    Fake(TestApiServer),
    Real(Box<EnvTest>),
}

impl Server {
    pub async fn fake(_options: Options) -> Self {
        let server = TestApiServer::builder()
            .bookmark_interval(Duration::from_millis(200))
            .custom_resource(widget_spec())
            .start()
            .await
            .expect("the fake API server starts");
        Server::Fake(server)
    }

    /// `None` (the reason printed) without the real server's binaries.
    pub async fn real(options: Options) -> Option<Self> {
        let mut builder = EnvTest::builder().custom_resource(widget_spec());
        if options.without_watch_cache {
            builder = builder.apiserver_arg("--watch-cache=false");
        }
        builder
            .start_or_skip()
            .await
            .map(|env| Server::Real(Box::new(env)))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Server::Fake(_) => "fake",
            Server::Real(_) => "real",
        }
    }

    fn address(&self) -> SocketAddr {
        match self {
            Server::Fake(server) => server.address(),
            Server::Real(env) => env.address(),
        }
    }

    /// A configuration without kube's own retries, so that the code under test meets every
    /// error itself.
    pub fn config(&self) -> kube::Config {
        let mut config = match self {
            Server::Fake(server) => server.config(),
            Server::Real(env) => env.config(),
        };
        config.default_retry = false;
        config
    }

    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config()).expect("a client")
    }

    /// Widgets in `default`, straight to the server.
    pub fn widgets(&self) -> Api<DynamicObject> {
        widgets(self.client())
    }

    /// Compacts the server's history up to now: older versions and continue tokens expire
    /// (on the real server: etcd's, seen through the API when it runs without watch cache).
    pub async fn compact(&self) {
        match self {
            Server::Fake(server) => server.faults().compact(),
            Server::Real(env) => {
                env.compact_etcd().await.expect("etcd compacts");
            }
        }
    }

    /// The API server process dies and comes back (the fake: its connections and watches
    /// end, its data stays).
    pub async fn restart_apiserver(&self) {
        match self {
            Server::Fake(server) => server.faults().restart(RestartMode::KeepData),
            Server::Real(env) => env
                .restart_apiserver(StopMode::Kill)
                .await
                .expect("the API server comes back"),
        }
    }

    /// The storage dies and comes back (the fake has none apart from itself: it restarts
    /// keeping its data).
    pub async fn restart_storage(&self) {
        match self {
            Server::Fake(server) => server.faults().restart(RestartMode::KeepData),
            Server::Real(env) => env
                .restart_etcd(StopMode::Kill)
                .await
                .expect("etcd comes back"),
        }
    }

    /// A TCP proxy in front of the server, for clients whose connection a test cuts.
    pub async fn proxy(&self) -> Proxy {
        Proxy::start(self.address(), self.config()).await
    }
}

pub fn widgets(client: kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client, "default", &widget_resource())
}

/// Every widget on the server, by name (a consistent read).
pub async fn server_state(
    api: &Api<DynamicObject>,
) -> std::collections::HashMap<String, DynamicObject> {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|o| (name_of(&o), o))
        .collect()
}

pub async fn create(
    api: &Api<DynamicObject>,
    name: &str,
    labels: &[(&str, &str)],
    value: u64,
) -> DynamicObject {
    api.create(&PostParams::default(), &widget(name, labels, value))
        .await
        .expect("create")
}

pub async fn update(api: &Api<DynamicObject>, name: &str, value: u64) -> DynamicObject {
    let mut current = api.get(name).await.expect("get");
    current.data["spec"]["value"] = json!(value);
    api.replace(name, &PostParams::default(), &current)
        .await
        .expect("replace")
}

pub async fn delete(api: &Api<DynamicObject>, name: &str) {
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete");
}

/// Polls `cond` every 20 ms for up to 60 s.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting until {what}");
}

/// A TCP proxy on 127.0.0.1 in front of a server: [`Proxy::cut`] drops every connection and
/// refuses new ones until [`Proxy::restore`], which is a network outage as the clients behind
/// it see it, whichever server is behind. TLS passes through untouched (the real server's
/// certificate is for 127.0.0.1, as is the proxy).
pub struct Proxy {
    address: SocketAddr,
    base: kube::Config,
    state: Arc<Mutex<ProxyState>>,
    accept: JoinHandle<()>,
}

#[derive(Default)]
struct ProxyState {
    cut: bool,
    connections: Vec<AbortHandle>,
}

impl Proxy {
    async fn start(target: SocketAddr, base: kube::Config) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("an address");
        let state = Arc::new(Mutex::new(ProxyState::default()));
        let accept = tokio::spawn({
            let state = state.clone();
            async move {
                loop {
                    let Ok((mut inbound, _)) = listener.accept().await else {
                        continue;
                    };
                    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                    if state.cut {
                        drop(inbound);
                        continue;
                    }
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    state.connections.retain(|c| !c.is_finished());
                    state.connections.push(task.abort_handle());
                }
            }
        });
        Self {
            address,
            base,
            state,
            accept,
        }
    }

    /// The server's configuration, pointed at the proxy.
    pub fn config(&self) -> kube::Config {
        let mut config = self.base.clone();
        let scheme = config
            .cluster_url
            .scheme_str()
            .unwrap_or("http")
            .to_string();
        config.cluster_url = format!("{scheme}://{}", self.address)
            .parse()
            .expect("a valid URL");
        config
    }

    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config()).expect("a client")
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.cut = true;
        for connection in state.connections.drain(..) {
            connection.abort();
        }
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cut = false;
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}
