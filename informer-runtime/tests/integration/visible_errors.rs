//! A failing reconcile is never silent: with no `tracing` subscriber installed it is printed
//! on stderr; with one installed (even one that drops everything), only the subscriber hears
//! of it. Each case runs a controller in a child process (this test binary, re-run on one
//! test), since a global subscriber cannot be uninstalled.

use std::process::Command;

use super::support::{eventually, server};
use informer_runtime::controller::{Action, Controller, ReconcileError, reconciler_fn};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use informer_runtime::metrics::ControllerMetrics;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;

/// Set in the child process: `plain` (no subscriber) or `subscriber`.
const MODE: &str = "INFORMER_VISIBLE_ERRORS_CHILD";

/// A subscriber that drops everything.
struct Silent;

impl tracing::Subscriber for Silent {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The child's body: a controller whose reconcile writes into a namespace that does not
/// exist, until it failed twice. Does nothing outside a child process.
#[tokio::test]
async fn child_process_a_reconcile_failing_twice() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    if mode == "subscriber" {
        tracing::subscriber::set_global_default(Silent).unwrap();
    }
    let server = server().await;
    let client = server.client();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("app".into());
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let factory = InformerFactory::new(client.clone());
    let builder = Controller::<ConfigMap>::builder(&factory).name("copier");
    let writes = builder.reconcile_client().unwrap();
    let controller = builder
        .build(reconciler_fn(
            move |_key, cm: Option<std::sync::Arc<ConfigMap>>| {
                let api = Api::<ConfigMap>::namespaced(writes.clone(), "nowhere");
                async move {
                    if let Some(cm) = cm {
                        let mut copy = (*cm).clone();
                        copy.metadata = Default::default();
                        copy.metadata.name = Some("copy".into());
                        api.create(&PostParams::default(), &copy).await?;
                    }
                    Ok::<_, ReconcileError>(Action::Done)
                }
            },
        ))
        .unwrap();
    let probe = controller.probe();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    eventually("the reconcile failed twice", || {
        probe.sample().stats.errors >= 2
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}

/// The child's stderr, run in `mode`.
fn child_stderr(mode: &str) -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "integration::visible_errors::child_process_a_reconcile_failing_twice",
            "--nocapture",
        ])
        .env(MODE, mode)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "the child failed: {}\n{stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

#[test]
fn a_failing_reconcile_is_printed_on_stderr_when_no_subscriber_is_installed() {
    let stderr = child_stderr("plain");
    assert!(
        stderr.contains("no tracing subscriber is installed"),
        "the first line says why: {stderr}"
    );
    let failures: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("informer: controller copier: reconcile of default/app failed"))
        .collect();
    assert!(failures.len() >= 2, "{stderr}");
    assert!(
        failures[0].contains("namespaces \"nowhere\" not found"),
        "the API's reason: {}",
        failures[0]
    );
}

#[test]
fn with_a_subscriber_installed_nothing_is_printed_on_stderr() {
    let stderr = child_stderr("subscriber");
    assert!(!stderr.contains("informer:"), "{stderr}");
}
