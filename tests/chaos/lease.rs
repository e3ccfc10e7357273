//! Bug class: keeps working after losing its lease. Two replicas elect a leader on a Lease;
//! the buggy one starts its workers once it leads and lets them run until shutdown, so when
//! its Lease renewals fail and another holder takes the Lease over, it goes on writing beside
//! the new leader. The manager's leader election stops the workers when the term ends: the
//! same controller run by a `Manager` passes.

use std::time::Duration;

use informer::prelude::*;
use informer::runtime::leader::{LeaderElectionConfig, LeaderElector, LeaderState};
use informer::runtime::lease::LeaseTimings;
use informer_testing::chaos::{Chaos, Cluster, FaultKind, World};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use super::support::{SHRINK_RUNS, check_report, deployment};

const LEASE: &str = "summaries";

/// Keeps a ConfigMap `<name>-summary` with the replicas of every Deployment (found by name,
/// so that a re-created Deployment reuses it); deletes the summary of a Deployment that is
/// gone.
#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    namespace = "default",
    labels = "chaos=leader",
    watches(ConfigMap, labels = "chaos=summary", mapper = deployment_of)
)]
pub struct Summaries;

fn data_of(deployment: &Deployment) -> serde_json::Value {
    let replicas = deployment
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(1);
    json!({"replicas": replicas.to_string()})
}

fn deployment_of(summary: &ConfigMap) -> Vec<ObjectKey> {
    let name = summary.name_any();
    name.strip_suffix("-summary")
        .map(|source| ObjectKey::new(Some("default"), source))
        .into_iter()
        .collect()
}

impl Reconcile for Summaries {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        source: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let api = Api::<ConfigMap>::namespaced(ctx.client().clone(), "default");
        let name = format!("{}-summary", key.name());
        let copy = ctx
            .config_maps()
            .get(&ObjectKey::new(Some("default"), &name));
        match (source, copy) {
            (None, Some(_)) => match api.delete(&name, &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                result => drop(result?),
            },
            (Some(source), None) => {
                let copy: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": {"chaos": "summary"}},
                    "data": data_of(&source),
                }))?;
                match api.create(&PostParams::default(), &copy).await {
                    Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                    result => drop(result?),
                }
            }
            (Some(source), Some(copy)) if serde_json::to_value(&copy.data)? != data_of(&source) => {
                let patch = Patch::Merge(json!({"data": data_of(&source)}));
                api.patch(&name, &PatchParams::default(), &patch).await?;
            }
            _ => {}
        }
        Ok(Action::Done)
    }
}

/// Every Deployment has its summary, and every summary its Deployment.
fn summarized(cluster: &Cluster) -> Result<(), String> {
    let deployments = cluster.list::<Deployment>();
    let summaries: Vec<ConfigMap> = cluster
        .list::<ConfigMap>()
        .into_iter()
        .filter(|c| c.labels().get("chaos").map(String::as_str) == Some("summary"))
        .collect();
    for deployment in &deployments {
        let name = format!("{}-summary", deployment.name_any());
        let summary = summaries.iter().find(|c| c.name_any() == name);
        let data = summary.and_then(|c| serde_json::to_value(&c.data).ok());
        if data != Some(data_of(deployment)) {
            return Err(format!(
                "Deployment {} has summary {data:?}",
                deployment.name_any()
            ));
        }
    }
    for summary in &summaries {
        let name = summary.name_any();
        let source = name.trim_end_matches("-summary");
        if !deployments.iter().any(|d| d.name_any() == source) {
            return Err(format!("summary {name} has no Deployment"));
        }
    }
    Ok(())
}

/// Short timings, so that a lost lease is taken over within two seconds.
fn election(identity: String) -> LeaderElectionConfig {
    let mut config = LeaderElectionConfig::new(LEASE, "default", identity);
    config.timings = LeaseTimings {
        lease_duration: Duration::from_secs(1),
        renew_deadline: Duration::from_millis(700),
        retry_period: Duration::from_millis(200),
    };
    config
}

/// The bug: once leading, the controller runs until shutdown, whatever happens to the term.
async fn stubborn(
    client: Client,
    stop: CancellationToken,
    identity: String,
) -> Result<(), BuildError> {
    let elector = LeaderElector::new(client.clone(), election(identity));
    tokio::spawn({
        let elector = elector.clone();
        let stop = stop.clone();
        async move { elector.run(stop).await }
    });
    let mut states = elector.subscribe();
    loop {
        if matches!(*states.borrow_and_update(), LeaderState::Leading { .. }) {
            break;
        }
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            changed = states.changed() => if changed.is_err() { return Ok(()) },
        }
    }
    Summaries.run_until(client, stop).await
}

/// The same controller, run by a manager: workers stop when the term ends.
async fn managed(
    client: Client,
    stop: CancellationToken,
    identity: String,
) -> Result<(), ManagerError> {
    let mut manager = Manager::new(client)
        .handle_signals(false)
        .without_http()
        .leader_election(election(identity));
    Summaries.add_to(&mut manager)?;
    manager.run(stop).await
}

use informer::runtime::controller::BuildError;
use informer::runtime::manager::ManagerError;

fn test(chaos: Chaos) -> Chaos {
    chaos
        .leader_election("default", LEASE)
        .world(
            World::generated([
                deployment("alpha", "leader", 1),
                deployment("beta", "leader", 2),
            ])
            .mutate("/spec/replicas", [1, 2, 3]),
        )
        .converges(summarized)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_working_after_losing_its_lease_is_caught() {
    let report = test(Chaos::replicated(2, stubborn))
        .name("lease: workers outlive the term")
        .faults([FaultKind::LeaseLoss, FaultKind::Crash])
        .shrinking(SHRINK_RUNS, 3)
        .check()
        .await
        .expect_err("the old leader writes beside the new one");
    check_report(&report, "write after lease loss");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_leader_elected_controller_passes() {
    test(Chaos::replicated(2, managed))
        .name("lease: manager")
        .seeds(4)
        .run()
        .await;
}
