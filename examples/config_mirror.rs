//! A cross-namespace copier, declared: every ConfigMap labelled `mirror=true`, in any
//! namespace, is copied into namespace `mirror` as `<namespace>.<name>`, and the copy goes
//! when its source goes, or stops being labelled. Owner references cannot cross namespaces:
//! the library ties each copy to its source by labels, deletes the copies of a source that
//! is gone, and, when it starts, those of sources deleted while it was not running. The
//! scenario copies a ConfigMap, edits it, deletes it, then deletes another while the
//! controller is stopped and starts it again. `docs/kube-runtime/config_mirror.rs` is the
//! same controller with kube-runtime.
//!
//! ```sh
//! cargo run --release --example config_mirror             # in-process API server
//! cargo run --release --example config_mirror -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example config_mirror
//! ```

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use support::{BoxError, step, wait_for};

// controller: begin
use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

/// ConfigMaps labelled `mirror=true`, each copied into namespace `mirror`.
#[derive(ControllerSpec)]
#[controller(
    for = ConfigMap,
    labels = "mirror=true",
    children(ConfigMap, from = copy, namespace = "mirror", lister = copies)
)]
pub struct Mirror;

impl Reconcile for Mirror {}

/// The copy of a source: `<namespace>.<name>`, with its data.
fn copy(source: &ConfigMap) -> Option<ConfigMap> {
    let (namespace, name) = (
        source.metadata.namespace.as_deref()?,
        source.metadata.name.as_deref()?,
    );
    Some(ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{namespace}.{name}")),
            ..Default::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..Default::default()
    })
}
// controller: end

/// Runs the copier through the life of two sources.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let namespaces = Api::<Namespace>::all(client.clone());
    for name in ["mirror", "team-a"] {
        if namespaces.get_opt(name).await?.is_none() {
            let ns = serde_json::from_value(json!({"metadata": {"name": name}}))?;
            namespaces.create(&PostParams::default(), &ns).await?;
        }
    }
    let sources = Api::<ConfigMap>::namespaced(client.clone(), "team-a");
    let copies = Api::<ConfigMap>::namespaced(client.clone(), "mirror");
    let copied = async |name: &str| -> Result<Option<String>, kube::Error> {
        let copy = copies.get_opt(name).await?;
        Ok(copy.and_then(|c| c.data?.remove("mode")))
    };
    let source = |name: &str, mode: &str| {
        serde_json::from_value::<ConfigMap>(json!({
            "metadata": {"name": name, "labels": {"mirror": "true"}},
            "data": {"mode": mode},
        }))
    };
    let start = || {
        let cancel = CancellationToken::new();
        (
            cancel.clone(),
            tokio::spawn(Mirror.run_until(client.clone(), cancel)),
        )
    };
    let (cancel, controller) = start();

    step("create ConfigMap team-a/settings, labelled mirror=true");
    sources
        .create(&PostParams::default(), &source("settings", "fast")?)
        .await?;
    wait_for("mirror/team-a.settings holds mode=fast", async || {
        Ok(copied("team-a.settings").await?.as_deref() == Some("fast"))
    })
    .await?;

    step("change team-a/settings to mode=safe");
    let safe = Patch::Merge(json!({"data": {"mode": "safe"}}));
    sources
        .patch("settings", &PatchParams::default(), &safe)
        .await?;
    wait_for("mirror/team-a.settings holds mode=safe", async || {
        Ok(copied("team-a.settings").await?.as_deref() == Some("safe"))
    })
    .await?;

    step("delete team-a/settings");
    sources.delete("settings", &DeleteParams::default()).await?;
    wait_for("mirror/team-a.settings is gone", async || {
        Ok(copied("team-a.settings").await?.is_none())
    })
    .await?;

    step("create team-a/flags, then stop the controller and delete team-a/flags");
    sources
        .create(&PostParams::default(), &source("flags", "on")?)
        .await?;
    wait_for("mirror/team-a.flags holds mode=on", async || {
        Ok(copied("team-a.flags").await?.as_deref() == Some("on"))
    })
    .await?;
    cancel.cancel();
    controller.await??;
    sources.delete("flags", &DeleteParams::default()).await?;

    step("start the controller again: it deletes the copy of the source gone meanwhile");
    let (cancel, controller) = start();
    wait_for("mirror/team-a.flags is gone", async || {
        Ok(copied("team-a.flags").await?.is_none())
    })
    .await?;

    support::follow_until_ctrl_c(follow).await?;
    cancel.cancel();
    controller.await??;
    println!("\ndone");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    support::print_logs();
    let follow = support::follow_flag();
    let (client, _server) = support::connect(follow).await?;
    scenario(client, follow).await
}
