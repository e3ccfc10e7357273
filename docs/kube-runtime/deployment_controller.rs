//! The Deployment controller of `examples/deployment_controller.rs`, written with
//! kube-runtime 5.0 as a competent user would: one ReplicaSet per Deployment (`<name>-rs`,
//! its template at its replica count, owned by the Deployment) applied with server-side
//! apply, the Deployment's status reporting it, ReplicaSets watched through their owner,
//! only objects labelled `example=deployments`, errors logged and retried.
//!
//! Not built by default (it is here to be compared, line for line, with ours:
//! `cargo test -p informer-examples --test line_counts` prints both counts). It compiled
//! against kube 5.0.0 (features `client`, `runtime`, `rustls-tls`), k8s-openapi 0.29
//! (`v1_35`), tokio, futures, serde_json, thiserror and tracing.

// controller: begin
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

struct Context {
    client: Client,
}

/// The ReplicaSet a Deployment wants, owned by it.
fn replica_set(d: &Deployment) -> serde_json::Result<ReplicaSet> {
    let spec = d.spec.as_ref();
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{}-rs", d.name_any()),
            "labels": d.labels(),
            "ownerReferences": [d.controller_owner_ref(&())],
        },
        "spec": {
            "replicas": spec.and_then(|s| s.replicas).unwrap_or(1),
            "selector": spec.map(|s| &s.selector),
            "template": spec.map(|s| &s.template),
        },
    }))
}

async fn reconcile(d: Arc<Deployment>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = d.namespace().unwrap_or_default();
    let params = PatchParams::apply("deployments").force();
    let replica_sets = Api::<ReplicaSet>::namespaced(ctx.client.clone(), &namespace);
    let rs = replica_set(&d)?;
    let rs = replica_sets
        .patch(&rs.name_any(), &params, &Patch::Apply(&rs))
        .await?;
    let (replicas, rs_status) = (
        rs.spec.as_ref().and_then(|s| s.replicas),
        rs.status.clone().unwrap_or_default(),
    );
    let status = DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas,
        updated_replicas: replicas,
        ready_replicas: rs_status.ready_replicas,
        available_replicas: rs_status.available_replicas,
        ..Default::default()
    };
    if d.status.as_ref() != Some(&status) {
        let deployments = Api::<Deployment>::namespaced(ctx.client.clone(), &namespace);
        let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": status});
        deployments
            .patch_status(&d.name_any(), &params, &Patch::Apply(&body))
            .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(d: Arc<Deployment>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(deployment = %d.name_any(), %error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

/// Runs the controller until Ctrl-C or SIGTERM.
pub async fn run(client: Client) {
    let selected = watcher::Config::default().labels("example=deployments");
    Controller::new(Api::<Deployment>::all(client.clone()), selected.clone())
        .owns(Api::<ReplicaSet>::all(client.clone()), selected)
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(%error, "controller error");
            }
        })
        .await;
}
// controller: end

#[tokio::main]
async fn main() -> Result<(), kube::Error> {
    run(Client::try_default().await?).await;
    Ok(())
}
