//! Bug class: acts on a stale cache. With read-your-own-writes off, a reconcile can run on a
//! cache that has not seen the ReplicaSet the last one created, and with a name generated per
//! create the second create makes a second ReplicaSet.

use informer::prelude::*;
use informer_testing::chaos::{Chaos, FaultKind, World};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use super::support::{SHRINK_RUNS, check_report, deployment, one_replica_set_per_deployment};

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    labels = "chaos=stale",
    owns(ReplicaSet, labels = "chaos=stale", index = [ByControllerUid]),
    read_your_writes = false
)]
pub struct Duplicating;

impl Reconcile for Duplicating {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let Some(deployment) = deployment else {
            return Ok(Action::Done);
        };
        let namespace = key.namespace().unwrap_or("default");
        let client = ctx.client().clone();
        let uid = deployment.uid().unwrap_or_default();
        if ctx
            .replica_sets()
            .by_index::<ByControllerUid>(&uid)
            .is_empty()
        {
            // The bug: the cache may not hold the ReplicaSet created a moment ago, and a
            // generated name does not stop a second create.
            let rs: ReplicaSet = serde_json::from_value(json!({
                "metadata": {
                    "generateName": format!("{}-", deployment.name_any()),
                    "labels": {"chaos": "stale"},
                    "ownerReferences": [deployment.controller_owner_ref(&())],
                },
                "spec": {
                    "replicas": deployment.spec.as_ref().and_then(|s| s.replicas),
                    "selector": deployment.spec.as_ref().map(|s| &s.selector),
                    "template": deployment.spec.as_ref().map(|s| &s.template),
                },
            }))?;
            Api::<ReplicaSet>::namespaced(client.clone(), namespace)
                .create(&PostParams::default(), &rs)
                .await?;
        }
        let generation = deployment.metadata.generation;
        let observed = deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation);
        if observed != generation {
            let patch = Patch::Merge(json!({"status": {"observedGeneration": generation}}));
            Api::<Deployment>::namespaced(client, namespace)
                .patch_status(key.name(), &PatchParams::default(), &patch)
                .await?;
        }
        Ok(Action::Done)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_acting_on_a_stale_cache_is_caught() {
    let report = Chaos::new(|client, stop| Duplicating.run_until(client, stop))
        .name("stale cache: duplicate ReplicaSet")
        .world(
            World::generated([deployment("web", "stale", 2), deployment("api", "stale", 1)])
                .mutate("/spec/replicas", [1, 2, 3]),
        )
        .invariant(
            "one ReplicaSet per Deployment",
            one_replica_set_per_deployment,
        )
        // The faults that make caches disagree: the ReplicaSets' watch later than the
        // Deployments' (without them, a cache on this machine is rarely behind for long
        // enough).
        .faults([FaultKind::WatchDelay])
        .shrinking(SHRINK_RUNS, 3)
        .check()
        .await
        .expect_err("a stale cache makes a second ReplicaSet");
    check_report(&report, "invariant");
}
