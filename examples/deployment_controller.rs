//! client-go's Deployment controller, derived: Deployment events enqueue `namespace/name`;
//! each reconcile reads the Deployment from the cache, keeps one ReplicaSet in step with its
//! replicas and pod template, and reports in the Deployment's status. The scenario creates a
//! Deployment, scales it, changes its image, deletes it, and exits.
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

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use support::{BoxError, NAMESPACE, step, wait_for};

/// Reconciles Deployments; a change to a ReplicaSet reconciles the Deployment owning it.
#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    labels = "example=deployments",
    owns(ReplicaSet, labels = "example=deployments", index = [ByControllerUid])
)]
pub struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let Some(deployment) = deployment else {
            // Deleted: the garbage collector deletes its ReplicaSet through the ReplicaSet's
            // ownerReference (kube-controller-manager's on a cluster, the in-process server's
            // own here).
            return Ok(Action::Done);
        };
        let namespace = key.namespace().unwrap_or(NAMESPACE);
        let replica_sets = ctx.api::<ReplicaSet>(namespace);

        // Its ReplicaSet, found in the cache through the owner index: create or update it.
        // Updates carry the cached resourceVersion: a conflict means the cache is behind,
        // and the newer version's event reconciles again.
        let spec = deployment.spec.clone().unwrap_or_default();
        let replicas = spec.replicas.unwrap_or(1);
        let uid = deployment.uid().unwrap_or_default();
        let rs = match ctx.replica_sets().by_index::<ByControllerUid>(&uid).pop() {
            None => {
                let rs = replica_set_for(&deployment)?;
                let rs = replica_sets.create(&PostParams::default(), &rs).await?;
                println!(
                    "  reconcile {key}: created ReplicaSet {} ({replicas} replicas)",
                    rs.name_any()
                );
                rs
            }
            Some(rs) if in_step(&rs, &spec) => (*rs).clone(),
            Some(rs) => {
                let patch = Patch::Merge(json!({
                    "metadata": {"resourceVersion": rs.resource_version()},
                    "spec": {"replicas": replicas, "template": spec.template},
                }));
                let rs = match replica_sets
                    .patch(&rs.name_any(), &PatchParams::default(), &patch)
                    .await
                {
                    Err(e) if is_conflict(&e) => return Ok(Action::Done),
                    result => result?,
                };
                let image = image_of(&spec.template);
                println!(
                    "  reconcile {key}: updated ReplicaSet {}: {replicas} x {image}",
                    rs.name_any()
                );
                rs
            }
        };

        // The status: the generation seen, and the ReplicaSet's counts. (client-go counts
        // the pods of the ReplicaSets; the in-process server runs no ReplicaSet controller,
        // so there are none: this reports the replicas the ReplicaSet was asked for.)
        let rs_replicas = rs.spec.as_ref().and_then(|s| s.replicas);
        let rs_status = rs.status.clone().unwrap_or_default();
        let (ready, available) = (rs_status.ready_replicas, rs_status.available_replicas);
        let generation = deployment.metadata.generation;
        let have = deployment.status.clone().unwrap_or_default();
        let have = (
            have.observed_generation,
            have.replicas,
            have.ready_replicas,
            have.available_replicas,
        );
        if have != (generation, rs_replicas, ready, available) {
            let patch = Patch::Merge(json!({
                "metadata": {"resourceVersion": deployment.resource_version()},
                "status": {
                    "observedGeneration": generation,
                    "replicas": rs_replicas,
                    "updatedReplicas": rs_replicas,
                    "readyReplicas": ready,
                    "availableReplicas": available,
                },
            }));
            let deployments = ctx.api::<Deployment>(namespace);
            match deployments
                .patch_status(key.name(), &PatchParams::default(), &patch)
                .await
            {
                Err(e) if is_conflict(&e) => return Ok(Action::Done),
                result => drop(result?),
            }
            let (generation, replicas) = (generation.unwrap_or(0), rs_replicas.unwrap_or(0));
            println!(
                "  reconcile {key}: status observedGeneration={generation}, replicas={replicas}"
            );
        }
        Ok(Action::Done)
    }
}

/// A new ReplicaSet for `deployment`: its labels, selector and template, controlled by it.
fn replica_set_for(deployment: &Deployment) -> Result<ReplicaSet, serde_json::Error> {
    let spec = deployment.spec.as_ref();
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{}-rs", deployment.name_any()),
            "labels": deployment.labels(),
            "ownerReferences": [deployment.controller_owner_ref(&())],
        },
        "spec": {
            "replicas": spec.and_then(|s| s.replicas),
            "selector": spec.map(|s| &s.selector),
            "template": spec.map(|s| &s.template),
        },
    }))
}

/// Whether `rs` runs the replicas and template `spec` asks for.
fn in_step(rs: &ReplicaSet, spec: &DeploymentSpec) -> bool {
    let rs_spec = rs.spec.as_ref();
    rs_spec.and_then(|s| s.replicas) == Some(spec.replicas.unwrap_or(1))
        && rs_spec.and_then(|s| s.template.as_ref()) == Some(&spec.template)
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.is_conflict())
}

fn image_of(template: &PodTemplateSpec) -> String {
    let container = template.spec.as_ref().and_then(|s| s.containers.first());
    container.and_then(|c| c.image.clone()).unwrap_or_default()
}

/// Runs the controller through a Deployment's life: create, scale, new image, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(Deployments.run_until(client.clone(), cancel.clone()));
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let replica_sets = Api::<ReplicaSet>::namespaced(client, NAMESPACE);
    let web_rs = async || replica_sets.get_opt("web-rs").await;
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
        let template = web_rs().await?.and_then(|rs| rs.spec?.template);
        Ok(image_of(&template.unwrap_or_default()) == "nginx:1.28")
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
    let follow = support::follow_flag();
    let (client, _server) = support::connect(Vec::new(), follow).await?;
    scenario(client, follow).await
}
