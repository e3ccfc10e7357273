//! Bug class: assumes it saw every intermediate state. The controller counts the spec
//! changes it has seen and reports the count as the observed generation; a workqueue folds
//! several changes of a key into one reconcile, a relist shows only the last state, and a
//! restart forgets the count, so the count falls behind the generation.

use std::collections::HashMap;
use std::sync::Mutex;

use informer::prelude::*;
use informer_testing::chaos::{Chaos, Cluster, World};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

use super::support::{SHRINK_RUNS, check_report, deployment};

#[derive(ControllerSpec)]
#[controller(for = Deployment, labels = "chaos=counting")]
pub struct Counting {
    /// Per Deployment UID: the spec last seen and how many specs have been seen.
    seen: Mutex<HashMap<String, (Value, i64)>>,
}

impl Reconcile for Counting {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let Some(deployment) = deployment else {
            return Ok(Action::Done);
        };
        let spec = serde_json::to_value(&deployment.spec)?;
        let count = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let entry = seen
                .entry(deployment.uid().unwrap_or_default())
                .or_insert_with(|| (spec.clone(), 1));
            // The bug: one change seen is taken for one generation.
            if entry.0 != spec {
                entry.0 = spec;
                entry.1 += 1;
            }
            entry.1
        };
        let observed = deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation);
        if observed != Some(count) {
            let patch = Patch::Merge(json!({"status": {"observedGeneration": count}}));
            Api::<Deployment>::namespaced(
                ctx.client().clone(),
                key.namespace().unwrap_or("default"),
            )
            .patch_status(key.name(), &PatchParams::default(), &patch)
            .await?;
        }
        Ok(Action::Done)
    }
}

fn generations_observed(cluster: &Cluster) -> Result<(), String> {
    for deployment in cluster.list::<Deployment>() {
        let observed = deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation);
        if observed != deployment.metadata.generation {
            return Err(format!(
                "Deployment {} is at generation {:?}, its status says {observed:?}",
                deployment.name_any(),
                deployment.metadata.generation
            ));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_counting_the_states_it_saw_is_caught() {
    let report = Chaos::new(|client, stop| {
        Counting {
            seen: Mutex::default(),
        }
        .run_until(client, stop)
    })
    .name("missed states: counted generations")
    .world(
        World::generated([deployment("web", "counting", 1)]).mutate("/spec/replicas", [1, 2, 3, 4]),
    )
    .converges(generations_observed)
    .converge_within(std::time::Duration::from_secs(5))
    .shrinking(SHRINK_RUNS, 3)
    .check()
    .await
    .expect_err("a missed change leaves the count behind");
    check_report(&report, "not converged");
}
