//! Every example's controller under `informer::testing::chaos`: seeded schedules of world
//! changes (creates, scaling, new images, deletes, re-creates with the same name) and faults
//! (crashes right after a write, stale restarts, delayed, dropped and paused watches, failing
//! requests), with invariants checked on every state the server commits and the expected
//! state required once the world is quiet.
//!
//! A few seeds run by default (CI); `cargo test -p informer-examples --test chaos -- --ignored`
//! runs hundreds, and `INFORMER_CHAOS_SEEDS=1000` any number.

#![allow(dead_code)] // each example's `main` and helpers only its binary uses

#[path = "../crd_controller.rs"]
mod crd_controller;
#[path = "../custom_backends.rs"]
mod custom_backends;
#[path = "../deployment_controller.rs"]
mod deployment_controller;
#[path = "../replicaset_pods.rs"]
mod replicaset_pods;
#[path = "../website_operator.rs"]
mod website_operator;

use deployment_controller::Deployments;
use informer::prelude::RunController as _;
use informer::testing::chaos::{self, Chaos, Cluster, World};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::{CustomResourceExt as _, Resource, ResourceExt};
use serde_json::{Value, json};

/// Seeds of the test marked to run many.
const MANY: u64 = 300;

fn deployment(name: &str, label: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"example": label}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    })
}

fn deployments_world(label: &str) -> World {
    World::generated([deployment("web", label, 2), deployment("api", label, 1)])
        .mutate("/spec/replicas", [1, 2, 3, 5])
        .mutate(
            "/spec/template/spec/containers/0/image",
            ["nginx:1.27", "nginx:1.28"],
        )
}

/// The UID of an object's controlling owner.
fn controller_uid(object: &impl Resource) -> Option<String> {
    let refs = object.meta().owner_references.as_ref()?;
    refs.iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// Invariant: no Deployment ever controls two ReplicaSets.
fn one_replica_set_per_deployment(cluster: &Cluster) -> Result<(), String> {
    for deployment in cluster.list::<Deployment>() {
        let owned = cluster.controlled_by::<ReplicaSet>(&deployment.uid().unwrap_or_default());
        if owned.len() > 1 {
            let names: Vec<String> = owned.iter().map(ResourceExt::name_any).collect();
            return Err(format!("{} controls {names:?}", deployment.name_any()));
        }
    }
    Ok(())
}

/// Each Deployment has one ReplicaSet in step (its replicas, and with `template` its pod
/// template; with `status` its status reports the generation and replicas); no ReplicaSet
/// outlives its Deployment.
fn deployments_converged(cluster: &Cluster, template: bool, status: bool) -> Result<(), String> {
    let deployments = cluster.list::<Deployment>();
    for deployment in &deployments {
        let name = deployment.name_any();
        let spec = deployment.spec.clone().unwrap_or_default();
        let owned = cluster.controlled_by::<ReplicaSet>(&deployment.uid().unwrap_or_default());
        let [rs] = owned.as_slice() else {
            return Err(format!("{name} controls {} ReplicaSets", owned.len()));
        };
        let rs_spec = rs.spec.clone().unwrap_or_default();
        if rs_spec.replicas != Some(spec.replicas.unwrap_or(1)) {
            return Err(format!(
                "{name} wants {:?} replicas, its ReplicaSet {:?}",
                spec.replicas, rs_spec.replicas
            ));
        }
        if template && rs_spec.template.as_ref() != Some(&spec.template) {
            return Err(format!("{name}'s ReplicaSet runs another template"));
        }
        let observed = deployment
            .status
            .as_ref()
            .and_then(|s| s.observed_generation);
        if status && observed != deployment.metadata.generation {
            return Err(format!(
                "{name} at generation {:?}, status says {observed:?}",
                deployment.metadata.generation
            ));
        }
    }
    for rs in cluster.list::<ReplicaSet>() {
        let uid = controller_uid(&rs);
        if !deployments
            .iter()
            .any(|d| d.uid().is_some() && d.uid() == uid)
        {
            return Err(format!(
                "ReplicaSet {} outlived its Deployment",
                rs.name_any()
            ));
        }
    }
    Ok(())
}

fn deployment_controller() -> Chaos {
    Chaos::new(|client, stop| Deployments.run_until(client, stop))
        .name("deployment_controller")
        .world(deployments_world("deployments"))
        .invariant(
            "one ReplicaSet per Deployment",
            one_replica_set_per_deployment,
        )
        .converges(|cluster| deployments_converged(cluster, true, true))
}

fn custom_backends() -> Chaos {
    Chaos::new(|client, stop| custom_backends::Deployments::default().run_until(client, stop))
        .name("custom_backends")
        .world(deployments_world("custom-backends"))
        .invariant(
            "one ReplicaSet per Deployment",
            one_replica_set_per_deployment,
        )
        .converges(|cluster| deployments_converged(cluster, false, false))
}

fn replica_set(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "labels": {"example": "replicaset-pods"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "example": "replicaset-pods"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    })
}

/// Each ReplicaSet controls as many live Pods as it asks for and says so in its status; no
/// Pod outlives its ReplicaSet.
fn pods_converged(cluster: &Cluster) -> Result<(), String> {
    let replica_sets = cluster.list::<ReplicaSet>();
    for rs in &replica_sets {
        let want = rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let pods = cluster.controlled_by::<Pod>(&rs.uid().unwrap_or_default());
        let live = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .count();
        if live != usize::try_from(want).unwrap_or(0) {
            return Err(format!("{} wants {want} Pods, has {live}", rs.name_any()));
        }
        let status = rs.status.clone().unwrap_or_default();
        if status.replicas != want || status.observed_generation != rs.metadata.generation {
            return Err(format!("{}'s status says {status:?}", rs.name_any()));
        }
    }
    for pod in cluster.list::<Pod>() {
        let uid = controller_uid(&pod);
        if !replica_sets
            .iter()
            .any(|r| r.uid().is_some() && r.uid() == uid)
        {
            return Err(format!("Pod {} outlived its ReplicaSet", pod.name_any()));
        }
    }
    Ok(())
}

fn replicaset_pods() -> Chaos {
    use replicaset_pods::ReplicaSets;
    Chaos::new(|client, stop| ReplicaSets.run_until(client, stop))
        .name("replicaset_pods")
        .world(
            World::generated([replica_set("web", 2), replica_set("db", 1)])
                .mutate("/spec/replicas", [0, 1, 2, 3]),
        )
        .converges(pods_converged)
}

/// Each Greeting has its ConfigMap with its message, its line in the shared list and a
/// status that saw its generation; deleted Greetings are gone (their finalizer removed, their
/// line too); no ConfigMap outlives its Greeting.
fn greetings_converged(cluster: &Cluster) -> Result<(), String> {
    use crd_controller::Greeting;
    let greetings = cluster.list::<Greeting>();
    for greeting in &greetings {
        let name = greeting.name_any();
        if greeting.meta().deletion_timestamp.is_some() {
            return Err(format!("{name} is still being deleted"));
        }
        let cm = cluster.get::<ConfigMap>(Some("default"), &format!("{name}-greeting"));
        let message = cm.and_then(|cm| cm.data?.remove("message"));
        if message.as_ref() != Some(&greeting.spec.message) {
            return Err(format!(
                "{name} says {:?}, its ConfigMap {message:?}",
                greeting.spec.message
            ));
        }
        let observed = greeting.status.as_ref().and_then(|s| s.observed_generation);
        if observed != greeting.meta().generation {
            return Err(format!("{name}'s status saw generation {observed:?}"));
        }
    }
    // The shared list: one line per Greeting, with its message.
    let lines = cluster
        .get::<ConfigMap>(Some("default"), "greetings")
        .and_then(|list| list.data)
        .unwrap_or_default();
    let want: std::collections::BTreeMap<String, String> = greetings
        .iter()
        .map(|g| (g.name_any(), g.spec.message.clone()))
        .collect();
    if lines != want {
        return Err(format!("the list says {lines:?}, the Greetings {want:?}"));
    }
    for cm in cluster.list::<ConfigMap>() {
        let Some(owner) = cm.name_any().strip_suffix("-greeting").map(str::to_string) else {
            continue;
        };
        if !greetings.iter().any(|g| g.name_any() == owner) {
            return Err(format!("ConfigMap {} outlived its Greeting", cm.name_any()));
        }
    }
    Ok(())
}

fn crd_controller() -> Chaos {
    use crd_controller::{Greeting, Greetings};
    let greeting = |name: &str, message: &str| {
        json!({
            "apiVersion": "examples.informer.dev/v1", "kind": "Greeting",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"message": message},
        })
    };
    // The CRD itself, as the README says: objects are pruned, defaulted and validated
    // against its schema, as on a cluster.
    Chaos::new(|client, stop| Greetings.run_until(client, stop))
        .name("crd_controller")
        .server(|builder| builder.crd(Greeting::crd()))
        .world(
            World::generated([greeting("hello", "Hello"), greeting("bye", "Bye")])
                .mutate("/spec/message", ["Hello", "Hi", "Bye"]),
        )
        .converges(greetings_converged)
}

/// The website operator's outside mirror: the images it holds.
type Mirror = std::sync::Mutex<std::collections::BTreeSet<String>>;

/// Each Website has its finalizer, its three children as it asks for them and a status
/// that saw its generation; deleted Websites are gone (their cleanup ran); the outside mirror
/// holds exactly the images the Websites run; no child outlives its Website.
fn websites_converged(cluster: &Cluster) -> Result<(), String> {
    use k8s_openapi::api::core::v1::Service;
    use website_operator::Website;
    let websites = cluster.list::<Website>();
    for website in &websites {
        let name = website.name_any();
        if website.meta().deletion_timestamp.is_some() {
            return Err(format!("{name} is still being deleted"));
        }
        if !website
            .finalizers()
            .iter()
            .any(|f| f == "examples.informer.dev/image-mirror")
        {
            return Err(format!("{name} has no finalizer"));
        }
        let uid = website.uid().unwrap_or_default();
        let page = cluster
            .get::<ConfigMap>(Some("default"), &format!("{name}-content"))
            .filter(|cm| controller_uid(cm).as_deref() == Some(uid.as_str()))
            .and_then(|cm| cm.data?.remove("index.html"));
        if page.as_ref() != Some(&website.spec.content) {
            return Err(format!("{name}'s page is {page:?}"));
        }
        let served = cluster
            .get::<Deployment>(Some("default"), &name)
            .filter(|d| controller_uid(d).as_deref() == Some(uid.as_str()))
            .and_then(|d| {
                let spec = d.spec?;
                let image = spec.template.spec?.containers.first()?.image.clone()?;
                Some((spec.replicas?, image))
            });
        if served != Some((website.spec.replicas, website.spec.image.clone())) {
            return Err(format!("{name}'s Deployment serves {served:?}"));
        }
        if cluster.get::<Service>(Some("default"), &name).is_none() {
            return Err(format!("{name} has no Service"));
        }
        let observed = website.status.as_ref().and_then(|s| s.observed_generation);
        if observed != website.meta().generation {
            return Err(format!("{name}'s status saw generation {observed:?}"));
        }
    }
    let images: std::collections::BTreeSet<String> =
        websites.iter().map(|w| w.spec.image.clone()).collect();
    let mirrored = cluster.outside::<Mirror>().lock().unwrap().clone();
    if mirrored != images {
        return Err(format!(
            "the mirror holds {mirrored:?}, the Websites run {images:?}"
        ));
    }
    for d in cluster.list::<Deployment>() {
        if !websites.iter().any(|w| w.uid() == controller_uid(&d)) {
            return Err(format!("Deployment {} outlived its Website", d.name_any()));
        }
    }
    Ok(())
}

fn website_operator() -> Chaos {
    use website_operator::{Website, Websites};
    let website = |name: &str, image: &str| {
        json!({
            "apiVersion": "examples.informer.dev/v1", "kind": "Website",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"image": image, "replicas": 1, "content": format!("<h1>{name}</h1>")},
        })
    };
    // The mirror is outside the cluster: one per run, it outlives the controller's crashes.
    Chaos::new(|client, stop| {
        let operator = Websites {
            mirror: chaos::outside::<Mirror>(),
        };
        operator.run_until(client, stop)
    })
    .name("website_operator")
    .server(|builder| builder.crd(Website::crd()))
    .world(
        World::generated([website("blog", "nginx:1.27"), website("docs", "nginx:1.27")])
            .mutate("/spec/image", ["nginx:1.27", "nginx:1.28", "caddy:2"])
            .mutate("/spec/replicas", [1, 3]),
    )
    .converges(websites_converged)
}

// The README's test, as it is there (`the_readme_shows_a_test_that_runs_here` checks).
#[rustfmt::skip]
fn owned(cluster: &Cluster, d: &Deployment) -> Vec<ReplicaSet> {
    cluster.controlled_by::<ReplicaSet>(&d.uid().unwrap_or_default())
}

#[rustfmt::skip]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_under_chaos() {
    let web = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"example": "deployments"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    Chaos::new(|client, stop| Deployments.run_until(client, stop))
        .world(World::generated([web]).mutate("/spec/replicas", [1, 2, 5]))
        .invariant("one ReplicaSet per Deployment", |cluster: &Cluster| {
            match cluster.list::<Deployment>().iter().find(|d| owned(cluster, d).len() > 1) {
                Some(d) => Err(format!("{} controls two ReplicaSets", d.name_any())),
                None => Ok(()),
            }
        })
        .converges(|cluster: &Cluster| {
            for d in cluster.list::<Deployment>() {
                let want = d.spec.as_ref().and_then(|s| s.replicas);
                let have: Vec<_> = owned(cluster, &d).iter().map(|rs| rs.spec.as_ref()?.replicas).collect();
                let seen = d.status.as_ref().and_then(|s| s.observed_generation);
                if have != [want] || seen != d.metadata.generation {
                    return Err(format!("{}: wants {want:?}, has {have:?}, saw {seen:?}", d.name_any()));
                }
            }
            Ok(())
        })
        .run()
        .await;
}

#[test]
fn the_readme_shows_a_test_that_runs_here() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```rust,ignore\nuse informer::prelude::RunController")
        .expect("the README's chaos test");
    let block = &readme[start..];
    let block = &block[..block[3..].find("```").expect("its end") + 3];
    let here = include_str!("chaos.rs");
    for line in block
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty() && !l.starts_with("use "))
    {
        assert!(
            here.contains(line),
            "the README's line is not in examples/tests/chaos.rs: {line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_backends_under_chaos() {
    custom_backends().run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicaset_pods_under_chaos() {
    replicaset_pods().run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_controller_under_chaos() {
    crd_controller().run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn website_operator_under_chaos() {
    website_operator().run().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "hundreds of seeds: minutes; run with --ignored"]
async fn every_example_passes_hundreds_of_seeds() {
    for chaos in [
        deployment_controller(),
        custom_backends(),
        replicaset_pods(),
        crd_controller(),
        website_operator(),
    ] {
        chaos.seeds(MANY).run().await;
    }
}
