//! client-go's ReplicaSet controller, derived: Pods map to the ReplicaSet controlling them
//! through their ownerReference, and an index of Pods by owner UID finds a ReplicaSet's
//! Pods in the cache. Each reconcile creates or deletes Pods until their number matches
//! `spec.replicas`, and writes it to `status.replicas`. The scenario creates a ReplicaSet,
//! deletes one of its Pods, scales it down, deletes it, and exits.
//!
//! ```sh
//! cargo run --release --example replicaset_pods             # in-process API server
//! cargo run --release --example replicaset_pods -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example replicaset_pods
//! ```
//!
//! The controller only sees objects labelled `example=replicaset-pods`. On a real cluster,
//! kube-controller-manager's ReplicaSet controller manages the same ReplicaSet beside this
//! one: use a throwaway cluster (kind, k3d).

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use std::collections::BTreeSet;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use support::{BoxError, NAMESPACE, step, wait_for};

/// Pods by the UID of their controlling owner, the index client-go's ReplicaSet controller
/// keeps. (The library's `lister::ByControllerUid` is the same index for any resource;
/// it is written out here to show `#[indexer]`.)
#[indexer(Pod)]
fn pods_by_owner(pod: &Pod) -> Option<String> {
    let owner = pod
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true))?;
    Some(owner.uid.clone())
}

/// Reconciles ReplicaSets; a change to a Pod reconciles the ReplicaSet controlling it.
#[derive(ControllerSpec)]
#[controller(
    for = ReplicaSet,
    labels = "example=replicaset-pods",
    owns(Pod, labels = "example=replicaset-pods", index = [PodsByOwner])
)]
pub struct ReplicaSets;

impl Reconcile for ReplicaSets {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        rs: Option<Arc<ReplicaSet>>,
    ) -> Result<Action, ReconcileError> {
        let Some(rs) = rs else {
            // Deleted: the garbage collector deletes its Pods through their ownerReference
            // (kube-controller-manager's on a cluster, the in-process server's own here).
            return Ok(Action::Done);
        };
        let namespace = key.namespace().unwrap_or(NAMESPACE);
        let pods = ctx.api::<Pod>(namespace);

        // The Pods this ReplicaSet controls, from the cache (Pods being deleted do not count).
        let uid = rs.uid().unwrap_or_default();
        let mut owned: Vec<String> = ctx
            .pods()
            .by_index::<PodsByOwner>(&uid)
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .map(|pod| pod.name_any())
            .collect();
        owned.sort_by_key(|name| (name.len(), name.clone())); // web-2 before web-10
        let want = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) as usize;

        // Pods are named `<replicaset>-<n>` with the smallest free n: a reconcile that runs
        // on a cache which has not seen its last creations yet cannot create a Pod twice.
        let taken: BTreeSet<&String> = owned.iter().collect();
        let mut free = (0..)
            .map(|n| format!("{}-{n}", rs.name_any()))
            .filter(|name| !taken.contains(name));
        for _ in owned.len()..want {
            let name = free.next().unwrap_or_default();
            match pods
                .create(&PostParams::default(), &pod_for(&rs, &name)?)
                .await
            {
                Ok(_) => println!("  reconcile {key}: created Pod {name}"),
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                Err(error) => return Err(error.into()),
            }
        }
        for name in owned.iter().skip(want).rev() {
            delete_pod(&pods, key, name, "too many").await?;
        }

        // The status: how many Pods the ReplicaSet has now.
        let have = rs
            .status
            .as_ref()
            .map(|s| (s.replicas, s.observed_generation));
        if have != Some((want as i32, rs.metadata.generation)) {
            let patch = Patch::Merge(json!({
                "status": {"replicas": want, "observedGeneration": rs.metadata.generation},
            }));
            let replica_sets = ctx.api::<ReplicaSet>(namespace);
            replica_sets
                .patch_status(key.name(), &PatchParams::default(), &patch)
                .await?;
            println!("  reconcile {key}: status replicas={want}");
        }
        Ok(Action::Done)
    }
}

async fn delete_pod(
    pods: &Api<Pod>,
    key: &ObjectKey,
    name: &str,
    why: &str,
) -> Result<(), kube::Error> {
    match pods.delete(name, &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) if status.is_not_found() => return Ok(()),
        result => drop(result?),
    }
    println!("  reconcile {key}: deleted Pod {name} ({why})");
    Ok(())
}

/// A Pod of `rs`, named `name`: its template, controlled by it.
fn pod_for(rs: &ReplicaSet, name: &str) -> Result<Pod, serde_json::Error> {
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .unwrap_or_default();
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": template.metadata.unwrap_or_default(),
        "spec": template.spec,
    }))?;
    pod.metadata.name = Some(name.to_owned());
    pod.metadata.owner_references = rs.controller_owner_ref(&()).map(|o| vec![o]);
    Ok(pod)
}

/// Runs the controller through a ReplicaSet's life: create, lose a Pod, scale down, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(ReplicaSets.run_until(client.clone(), cancel.clone()));
    let replica_sets = Api::<ReplicaSet>::namespaced(client.clone(), NAMESPACE);
    let pods = Api::<Pod>::namespaced(client, NAMESPACE);
    let pod_names = async || -> Result<Vec<String>, kube::Error> {
        let selector = ListParams::default().labels("app=frontend");
        let mut names: Vec<_> = pods
            .list(&selector)
            .await?
            .iter()
            .map(|p| p.name_any())
            .collect();
        names.sort();
        Ok(names)
    };

    step("create ReplicaSet frontend with 3 replicas");
    let frontend = serde_json::from_value(json!({
        "metadata": {"name": "frontend", "labels": {"example": "replicaset-pods"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "frontend"}},
            "template": {
                "metadata": {"labels": {"app": "frontend", "example": "replicaset-pods"}},
                "spec": {"containers": [{"name": "php", "image": "php:8-apache"}]},
            },
        },
    }))?;
    replica_sets
        .create(&PostParams::default(), &frontend)
        .await?;
    let three = ["frontend-0", "frontend-1", "frontend-2"];
    wait_for("Pods frontend-0, -1, -2 exist", async || {
        Ok(pod_names().await? == three)
    })
    .await?;
    wait_for("frontend's status: 3 replicas", async || {
        let rs = replica_sets.get("frontend").await?;
        Ok(rs.status.is_some_and(|s| s.replicas == 3))
    })
    .await?;

    step("delete Pod frontend-1 (as if its node failed)");
    pods.delete("frontend-1", &DeleteParams::default()).await?;
    wait_for("frontend-1 is back", async || {
        Ok(pod_names().await? == three)
    })
    .await?;

    step("scale frontend down to 1 replica");
    let scale = Patch::Merge(json!({"spec": {"replicas": 1}}));
    replica_sets
        .patch("frontend", &PatchParams::default(), &scale)
        .await?;
    wait_for("only frontend-0 is left", async || {
        Ok(pod_names().await? == ["frontend-0"])
    })
    .await?;

    step("delete ReplicaSet frontend (the garbage collector deletes its Pods)");
    replica_sets
        .delete("frontend", &DeleteParams::default())
        .await?;
    wait_for("its Pods are gone", async || {
        Ok(pod_names().await?.is_empty())
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
    let (client, _server) = support::connect(follow).await?;
    scenario(client, follow).await
}
