//! Bug class: leaks a child when a delete and a re-create of the parent arrive together.
//! Each parent Deployment in `default` has a child ConfigMap in namespace `children` (a
//! cross-namespace child: no ownerReference, no garbage collection) holding its replicas,
//! named after the parent's UID. The controller deletes a parent's children only when a reconcile finds the
//! parent gone; when the delete and the re-create arrive together it never does, and the
//! child of the old parent stays forever.

use informer::prelude::*;
use informer_testing::chaos::{Chaos, Cluster, World};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::support::{SHRINK_RUNS, check_report, deployment};

const CHILDREN: &str = "children";

/// What a parent's child holds: its replicas.
fn data_of(parent: &Deployment) -> serde_json::Value {
    let replicas = parent.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    json!({"replicas": replicas.to_string()})
}

/// A child's parent, from its `parent` label.
fn parent_of(child: &ConfigMap) -> Vec<ObjectKey> {
    child
        .labels()
        .get("parent")
        .map(|name| ObjectKey::new(Some("default"), name))
        .into_iter()
        .collect()
}

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    namespace = "default",
    labels = "chaos=parent",
    watches(ConfigMap, namespace = "children", labels = "chaos=child", mapper = parent_of, lister = children),
    // Not the bug: without the gate, a reconcile never waits for a relisting cache, so the
    // test's short convergence bound only ever catches the leak.
    read_your_writes = false
)]
pub struct Leaky;

impl Reconcile for Leaky {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        parent: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let api = Api::<ConfigMap>::namespaced(ctx.client().clone(), CHILDREN);
        let children = ctx.children().namespaced(CHILDREN).list();
        let mine = |child: &ConfigMap| {
            child.labels().get("parent").map(String::as_str) == Some(key.name())
        };
        let Some(parent) = parent else {
            // The bug: the only clean-up, and it runs only if a reconcile sees the parent gone.
            for child in children.iter().filter(|c| mine(c)) {
                match api
                    .delete(&child.name_any(), &DeleteParams::default())
                    .await
                {
                    Err(kube::Error::Api(status)) if status.is_not_found() => {}
                    result => drop(result?),
                }
            }
            return Ok(Action::Done);
        };
        let uid = parent.uid().unwrap_or_default();
        let current = children
            .iter()
            .find(|c| c.labels().get("parent-uid") == Some(&uid));
        match current {
            None => {
                let child: ConfigMap = serde_json::from_value(json!({
                    "metadata": {
                        "name": format!("{}-{}", key.name(), &uid[..8.min(uid.len())]),
                        "labels": {"chaos": "child", "parent": key.name(), "parent-uid": uid},
                    },
                    "data": data_of(&parent),
                }))?;
                match api.create(&PostParams::default(), &child).await {
                    Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                    result => drop(result?),
                }
            }
            Some(child) if serde_json::to_value(&child.data)? != data_of(&parent) => {
                let patch = Patch::Merge(json!({"data": data_of(&parent)}));
                api.patch(&child.name_any(), &PatchParams::default(), &patch)
                    .await?;
            }
            Some(_) => {}
        }
        Ok(Action::Done)
    }
}

/// No child outlives its parent (checked first: that is the bug); each parent has one child
/// with its data.
fn children_match_parents(cluster: &Cluster) -> Result<(), String> {
    let parents = cluster.list::<Deployment>();
    let all = cluster.list::<ConfigMap>();
    let children: Vec<&ConfigMap> = all
        .iter()
        .filter(|c| c.labels().get("chaos").map(String::as_str) == Some("child"))
        .collect();
    for child in &children {
        let uid = child
            .labels()
            .get("parent-uid")
            .cloned()
            .unwrap_or_default();
        if !parents
            .iter()
            .any(|p| p.uid().as_deref() == Some(uid.as_str()))
        {
            return Err(format!(
                "child {} outlived its parent (UID {uid})",
                child.name_any()
            ));
        }
    }
    for parent in &parents {
        let uid = parent.uid().unwrap_or_default();
        let its: Vec<&&ConfigMap> = children
            .iter()
            .filter(|c| c.labels().get("parent-uid") == Some(&uid))
            .collect();
        match its.as_slice() {
            [child] if serde_json::to_value(&child.data).ok() == Some(data_of(parent)) => {}
            _ => {
                return Err(format!(
                    "parent {} has children {:?}",
                    parent.name_any(),
                    its.iter().map(|c| c.name_any()).collect::<Vec<_>>()
                ));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_leaking_a_child_on_delete_and_recreate_is_caught() {
    let report = Chaos::new(|client, stop| Leaky.run_until(client, stop))
        .name("leaked child: delete and re-create together")
        .setup(|server| {
            server.create_json(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CHILDREN}}),
            )?;
            Ok::<_, informer_testing::Error>(())
        })
        .world(
            World::generated([
                deployment("alpha", "parent", 1),
                deployment("beta", "parent", 2),
            ])
            .mutate("/spec/replicas", [1, 2, 3]),
        )
        .converges(children_match_parents)
        .converge_within(std::time::Duration::from_secs(5))
        .shrinking(SHRINK_RUNS, 3)
        .check()
        .await
        .expect_err("a child outlives its parent");
    check_report(&report, "not converged");
    assert!(
        report.failure.to_string().contains("outlived its parent"),
        "{report}"
    );
}
