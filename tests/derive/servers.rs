//! The two API servers a derived controller's scenario runs against from one test body: the
//! in-process fake and the real one of `EnvTest` (skipped, the reason printed, without its
//! binaries); and waiting for a condition or a controller's next message.

use std::time::Duration;

use informer_testing::TestApiServer;
use informer_testing::envtest::EnvTest;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;

/// The in-process server or the real one, serving a scenario's custom resources.
pub enum Server {
    Fake(TestApiServer),
    Real(Box<EnvTest>),
}

impl Server {
    /// The fake, serving `crds` (the same CRDs as the real one's, schemas included).
    pub async fn fake(crds: impl IntoIterator<Item = CustomResourceDefinition>) -> Self {
        let server = crds
            .into_iter()
            .fold(TestApiServer::builder(), |builder, crd| builder.crd(crd))
            .start()
            .await
            .expect("the fake API server starts");
        Server::Fake(server)
    }

    /// The real one, serving `crds` (`None`, the reason printed, without its binaries).
    pub async fn real(crds: impl IntoIterator<Item = CustomResourceDefinition>) -> Option<Self> {
        crds.into_iter()
            .fold(EnvTest::builder(), |builder, crd| builder.crd(crd))
            .start_or_skip()
            .await
            .map(|env| Server::Real(Box::new(env)))
    }

    pub fn client(&self) -> Client {
        match self {
            Server::Fake(server) => server.client(),
            Server::Real(env) => env.client(),
        }
    }

    pub fn is_real(&self) -> bool {
        matches!(self, Server::Real(_))
    }
}

/// Two tests of one scenario (an `async fn(Server)`): one against the in-process server,
/// one against the real one, which passes (the reason printed) without its binaries.
///
/// ```ignore
/// on_both_servers!(
///     scenario,
///     scenario_on_the_fake_server = Server::fake([Widget::crd()]).await,
///     scenario_on_the_real_server = Server::real([Widget::crd()]).await,
/// );
/// ```
macro_rules! on_both_servers {
    ($scenario:ident, $fake:ident = $fake_server:expr, $real:ident = $real_server:expr $(,)?) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $fake() {
            $scenario($fake_server).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $real() {
            if let Some(server) = $real_server {
                $scenario(server).await;
            }
        }
    };
}
pub(crate) use on_both_servers;

/// Waits (up to a minute: the machine may be loaded) until `check` holds.
pub async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The next message a running controller sends on `rx` (up to 30 s).
pub async fn next<T>(rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>, what: &str) -> T {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .expect("the controller is running")
}
