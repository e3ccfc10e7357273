//! What a seed of `informer_testing::chaos` costs: a derived Deployment controller (one
//! ReplicaSet per Deployment, named after it, one of another Deployment of that name
//! deleted first; the observed generation in the status)
//! under the default schedules (16 generated steps of world changes, faults and pauses, then
//! convergence and 500 ms of quiet), on this machine.
//!
//! Printed: the mean wall time of a seed run alone (seeds one after another), and the seeds
//! per second with 2 and 4 seeds at once (each seed its own in-process API server, all in
//! one process). A seed's time is mostly the schedule's pauses and the quiet period, which
//! are waits, not work: seeds at once overlap them.
//!
//! ```sh
//! cargo bench --bench chaos                       # 16 seeds per setting
//! INFORMER_CHAOS_BENCH_SEEDS=64 cargo bench --bench chaos
//! ```

use std::time::Instant;

use informer::prelude::*;
use informer_testing::chaos::{Chaos, Cluster, World};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    labels = "bench=chaos",
    owns(ReplicaSet, labels = "bench=chaos")
)]
struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let namespace = key.namespace().unwrap_or("default");
        let client = ctx.client().clone();
        let rs_api = Api::<ReplicaSet>::namespaced(client.clone(), namespace);
        let name = format!("{}-rs", key.name());
        let current = ctx
            .replica_sets()
            .get(&ObjectKey::new(Some(namespace), &name));
        let uid = deployment.as_ref().and_then(|d| d.uid());
        // A ReplicaSet of a Deployment that is gone (or was re-created): delete it.
        if let Some(rs) = &current
            && controller_uid(rs) != uid
        {
            match rs_api.delete(&name, &DeleteParams::default()).await {
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                result => drop(result?),
            }
            return Ok(Action::Done);
        }
        let Some(deployment) = deployment else {
            return Ok(Action::Done);
        };
        let replicas = deployment.spec.as_ref().and_then(|s| s.replicas);
        match current {
            None => {
                let rs: ReplicaSet = serde_json::from_value(json!({
                    "metadata": {
                        "name": name,
                        "labels": {"bench": "chaos"},
                        "ownerReferences": [deployment.controller_owner_ref(&())],
                    },
                    "spec": {
                        "replicas": replicas,
                        "selector": deployment.spec.as_ref().map(|s| &s.selector),
                        "template": deployment.spec.as_ref().map(|s| &s.template),
                    },
                }))?;
                match rs_api.create(&PostParams::default(), &rs).await {
                    // The old one is still there: its delete event reconciles again.
                    Err(kube::Error::Api(s)) if s.is_already_exists() => return Ok(Action::Done),
                    result => drop(result?),
                }
            }
            Some(rs) if rs.spec.as_ref().and_then(|s| s.replicas) != replicas => {
                let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
                rs_api.patch(&name, &PatchParams::default(), &patch).await?;
            }
            Some(_) => {}
        }
        let generation = deployment.metadata.generation;
        if deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation)
            != generation
        {
            let patch = Patch::Merge(json!({"status": {"observedGeneration": generation}}));
            Api::<Deployment>::namespaced(client, namespace)
                .patch_status(key.name(), &PatchParams::default(), &patch)
                .await?;
        }
        Ok(Action::Done)
    }
}

fn controller_uid(rs: &ReplicaSet) -> Option<String> {
    let refs = rs.metadata.owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": "chaos"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]},
            },
        },
    })
}

fn in_step(cluster: &Cluster) -> Result<(), String> {
    for d in cluster.list::<Deployment>() {
        let owned = cluster.controlled_by::<ReplicaSet>(&d.uid().unwrap_or_default());
        let replicas = d.spec.as_ref().and_then(|s| s.replicas);
        match owned.as_slice() {
            [rs] if rs.spec.as_ref().and_then(|s| s.replicas) == replicas => {}
            _ => return Err(format!("{} is not in step", d.name_any())),
        }
        if d.status.as_ref().and_then(|s| s.observed_generation) != d.metadata.generation {
            return Err(format!("{} has not been observed", d.name_any()));
        }
    }
    Ok(())
}

fn chaos(seeds: u64, concurrency: usize) -> Chaos {
    Chaos::new(|client, stop| Deployments.run_until(client, stop))
        .name("bench")
        .world(
            World::generated([deployment("web", 2), deployment("api", 1)])
                .mutate("/spec/replicas", [1, 2, 3]),
        )
        .converges(in_step)
        .seeds(seeds)
        .concurrency(concurrency)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let seeds: u64 = std::env::var("INFORMER_CHAOS_BENCH_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    println!("chaos: {seeds} seeds of a derived Deployment controller per setting");
    for concurrency in [1, 2, 4] {
        let started = Instant::now();
        let result = runtime.block_on(chaos(seeds, concurrency).check());
        let elapsed = started.elapsed().as_secs_f64();
        match result {
            Ok(_) => println!(
                "  {concurrency} at once: {:.2} seeds/s ({:.0} ms per seed of wall time)",
                seeds as f64 / elapsed,
                elapsed * 1000.0 / seeds as f64,
            ),
            Err(report) => panic!("the bench's controller failed a seed:\n{report}"),
        }
    }
}
