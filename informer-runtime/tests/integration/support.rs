//! What the integration tests share: the in-process API server, creating a namespace in it,
//! and waiting until a condition holds.

use std::time::Duration;

use informer_testing::{CustomResourceSpec, TestApiServer};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::{Api, Client};

/// How often a condition is checked.
const POLL: Duration = Duration::from_millis(10);

/// How long a condition may take before the test fails: generous, for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// The in-process API server, sending watch bookmarks every 200 ms.
pub(crate) async fn server() -> TestApiServer {
    TestApiServer::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .expect("the test API server starts")
}

/// As [`server`], serving the namespaced custom resource `widgets.example.com/v1` too.
pub(crate) async fn server_with_widgets() -> TestApiServer {
    widgets_server(true).await
}

/// As [`server_with_widgets`], run without kube-apiserver's watch cache: a list at
/// `resourceVersion=0` with a limit comes in pages.
pub(crate) async fn server_without_watch_cache() -> TestApiServer {
    widgets_server(false).await
}

async fn widgets_server(watch_cache: bool) -> TestApiServer {
    TestApiServer::builder()
        .watch_cache(watch_cache)
        .bookmark_interval(Duration::from_millis(200))
        .custom_resource(CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Widget",
            "widgets",
        ))
        .start()
        .await
        .expect("the test API server starts")
}

/// Checks `cond` every 10 ms until it holds; panics naming `what` after 10 s.
pub(crate) async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    eventually_async(what, async || cond()).await;
}

/// As [`eventually`], for a condition that awaits.
pub(crate) async fn eventually_async(what: &str, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {PATIENCE:?} waiting until {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Creates namespace `name`.
pub(crate) async fn create_namespace(client: &Client, name: &str) {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Records the messages of the warnings logged on the thread it is installed on.
#[derive(Clone, Default)]
pub(crate) struct Warnings(pub(crate) std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl tracing::Subscriber for Warnings {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                use std::fmt::Write;
                let _ = write!(self.0, " {}={value:?}", field.name());
            }
        }
        let mut text = String::new();
        event.record(&mut Message(&mut text));
        self.0.lock().unwrap().push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
