//! What every example shares: picking a cluster, waiting for a condition, `--follow`.
//!
//! The library of the examples package: each example names it `support`.

use std::error::Error;
use std::time::Duration;

use informer::testing::TestApiServer;
use kube::Client;

/// The error type of the examples.
pub type BoxError = Box<dyn Error + Send + Sync>;

/// The namespace the examples work in.
pub const NAMESPACE: &str = "default";

/// Whether `--follow` was passed: keep running after the scenario until Ctrl-C.
pub fn follow_flag() -> bool {
    std::env::args().skip(1).any(|arg| arg == "--follow")
}

/// The cluster named by `KUBECONFIG` if it is set, otherwise a fresh in-process API server,
/// returned so that it lives as long as the caller keeps it.
pub async fn connect(follow: bool) -> Result<(Client, Option<TestApiServer>), BoxError> {
    if std::env::var_os("KUBECONFIG").is_some() {
        let client = Client::try_default().await?;
        println!("using the cluster of KUBECONFIG");
        return Ok((client, None));
    }
    let server = TestApiServer::start().await?;
    println!("started the in-process API server at {}", server.url());
    if follow {
        let path = std::env::temp_dir().join("informer-example.kubeconfig");
        server.write_kubeconfig(&path)?;
        println!(
            "  kubectl works against it: KUBECONFIG={} kubectl get all",
            path.display()
        );
    }
    Ok((server.client(), Some(server)))
}

/// Polls `check` until it returns true; gives up after a minute (a generous limit: the
/// in-process server answers in milliseconds, a real cluster in well under a second).
pub async fn wait_for<F>(what: &str, mut check: F) -> Result<(), BoxError>
where
    F: AsyncFnMut() -> Result<bool, kube::Error>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::time::Instant::now() < deadline {
        if check().await? {
            println!("  ok: {what}");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("timed out waiting until {what}").into())
}

/// With `--follow`, waits for Ctrl-C (the controller keeps running meanwhile).
pub async fn follow_until_ctrl_c(follow: bool) -> Result<(), BoxError> {
    if follow {
        println!("--follow: the controller keeps running; press Ctrl-C to stop");
        tokio::signal::ctrl_c().await?;
    }
    Ok(())
}

/// A step of the scenario, printed as a heading.
pub fn step(text: &str) {
    println!("\n==> {text}");
}

/// Prints the library's log lines of level INFO and above on stdout, as `  [controller]
/// message field=value ...`: what the controllers did, beside the scenario's own lines. A
/// program of your own would install a subscriber of the `tracing` ecosystem instead
/// (`tracing_subscriber::fmt::init()`); this one keeps the examples free of dependencies.
pub fn print_logs() {
    let _ = tracing::subscriber::set_global_default(Lines);
}

/// The subscriber of [`print_logs`].
struct Lines;

impl tracing::Subscriber for Lines {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::INFO && metadata.target().starts_with("informer")
    }

    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut line = Line::default();
        event.record(&mut line);
        let level = event.metadata().level();
        let prefix = match line.controller.take() {
            Some(controller) => format!("[{controller}]"),
            None => format!("[{level}]"),
        };
        println!("  {prefix} {}{}", line.message, line.fields);
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

/// One event's message and fields.
#[derive(Default)]
struct Line {
    controller: Option<String>,
    message: String,
    fields: String,
}

impl tracing::field::Visit for Line {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "controller" => {
                self.controller = Some(format!("{value:?}").trim_matches('"').to_owned())
            }
            name => self.fields.push_str(&format!(" {name}={value:?}")),
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "controller" => self.controller = Some(value.to_owned()),
            _ => self.record_debug(field, &value),
        }
    }
}

/// Installs the CustomResourceDefinition of `K` through the API, as `kubectl apply -f crd.yaml`
/// would (server-side apply as `manager`; the in-process server serves it as a cluster does:
/// its schema prunes, defaults and validates), and waits until it is established.
pub async fn install_crd<K: kube::CustomResourceExt>(
    client: &Client,
    manager: &str,
) -> Result<(), BoxError> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::ResourceExt as _;
    use kube::api::{Api, Patch, PatchParams};

    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let crd = K::crd();
    let name = crd.name_any();
    let params = PatchParams::apply(manager).force();
    crds.patch(&name, &params, &Patch::Apply(&crd)).await?;
    println!("applied CustomResourceDefinition {name}");
    wait_for("the CustomResourceDefinition is established", async || {
        let crd = crds.get(&name).await?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        Ok(conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True"))
    })
    .await
}
