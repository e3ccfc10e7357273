//! client-go's Deployment controller, declared: each Deployment gets one ReplicaSet in step
//! with its replicas and pod template (a declared child), and a status reporting it (a
//! declared status); no reconcile body. The scenario creates a Deployment, scales it,
//! changes its image, deletes it, and exits; the controller's logs show what it wrote.
//! `docs/kube-runtime/deployment_controller.rs` is the same controller with kube-runtime.
//!
//! ```sh
//! cargo run --release --example deployment_controller             # in-process API server
//! cargo run --release --example deployment_controller -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example deployment_controller
//! ```
//!
//! The controller only sees objects labelled `example=deployments`. On a real cluster,
//! kube-controller-manager's Deployment controller manages the same Deployment beside this
//! one: use a throwaway cluster (kind, k3d).

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use support::{BoxError, NAMESPACE, step, wait_for};

// controller: begin
use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use kube::ResourceExt;
use serde_json::json;

/// Deployments, each with one ReplicaSet (`<name>-rs`) running its template at its replica
/// count, and a status reporting it. Both are declared: the library applies the ReplicaSet
/// (owned by the Deployment, so the garbage collector deletes it with it), watches it, and
/// writes the status only when it changes.
#[derive(ControllerSpec)]
#[controller(for = Deployment, labels = "example=deployments")]
#[controller(children(ReplicaSet, from = replica_set), status = status)]
pub struct Deployments;

impl Reconcile for Deployments {}

/// The ReplicaSet a Deployment wants.
fn replica_set(d: &Deployment) -> serde_json::Result<Option<ReplicaSet>> {
    let spec = d.spec.as_ref();
    serde_json::from_value(json!({
        "metadata": {"name": format!("{}-rs", d.name_any()), "labels": d.labels()},
        "spec": {
            "replicas": spec.and_then(|s| s.replicas).unwrap_or(1),
            "selector": spec.map(|s| &s.selector),
            "template": spec.map(|s| &s.template),
        },
    }))
}

/// The generation seen, and the ReplicaSet's counts (the in-process server runs no
/// ReplicaSet controller, so no pods: its replicas are the ones it was asked for).
fn status(d: &Deployment, ctx: &Context<Deployments>) -> Option<DeploymentStatus> {
    let rs = ctx
        .replica_sets()
        .namespaced(&d.namespace()?)
        .get(&format!("{}-rs", d.name_any()))?;
    let (replicas, rs_status) = (
        rs.spec.as_ref()?.replicas,
        rs.status.clone().unwrap_or_default(),
    );
    Some(DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas,
        updated_replicas: replicas,
        ready_replicas: rs_status.ready_replicas,
        available_replicas: rs_status.available_replicas,
        ..Default::default()
    })
}
// controller: end

/// Runs the controller through a Deployment's life: create, scale, new image, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(Deployments.run_until(client.clone(), cancel.clone()));
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let replica_sets = Api::<ReplicaSet>::namespaced(client, NAMESPACE);
    let web_rs = async || replica_sets.get_opt("web-rs").await;
    let image_of = |rs: Option<ReplicaSet>| -> Option<String> {
        let spec = rs?.spec?.template?.spec?;
        spec.containers.first()?.image.clone()
    };
    // The ReplicaSet's replicas, and the generation and replicas in the Deployment's status.
    let state = async || -> Result<_, kube::Error> {
        let rs_replicas = web_rs().await?.and_then(|rs| rs.spec?.replicas);
        let status = deployments.get("web").await?.status.unwrap_or_default();
        Ok((rs_replicas, status.observed_generation, status.replicas))
    };

    step("create Deployment web: 2 replicas of nginx:1.27");
    let web = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"example": "deployments"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }))?;
    deployments.create(&PostParams::default(), &web).await?;
    wait_for(
        "web-rs has 2 replicas; web's status: generation 1, 2 replicas",
        async || Ok(state().await? == (Some(2), Some(1), Some(2))),
    )
    .await?;

    step("scale web to 5 replicas");
    let scale = Patch::Merge(json!({"spec": {"replicas": 5}}));
    deployments
        .patch("web", &PatchParams::default(), &scale)
        .await?;
    wait_for(
        "web-rs has 5 replicas; web's status: generation 2, 5 replicas",
        async || Ok(state().await? == (Some(5), Some(2), Some(5))),
    )
    .await?;

    step("change web's image to nginx:1.28");
    let containers = json!([{"name": "web", "image": "nginx:1.28"}]);
    let image = Patch::Merge(json!({"spec": {"template": {"spec": {"containers": containers}}}}));
    deployments
        .patch("web", &PatchParams::default(), &image)
        .await?;
    wait_for("ReplicaSet web-rs's template runs nginx:1.28", async || {
        Ok(image_of(web_rs().await?).as_deref() == Some("nginx:1.28"))
    })
    .await?;

    step("delete Deployment web (the garbage collector deletes web-rs)");
    deployments.delete("web", &DeleteParams::default()).await?;
    wait_for("ReplicaSet web-rs is gone", async || {
        Ok(web_rs().await?.is_none())
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
