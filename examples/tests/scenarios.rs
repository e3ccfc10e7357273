//! Every example's scenario, run to completion against a fresh in-process API server, then
//! the final state checked in the server.

#![allow(dead_code)] // each example's `main` and helpers only its binary uses

#[path = "../client_go_style.rs"]
mod client_go_style;
#[path = "../config_mirror.rs"]
mod config_mirror;
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

use informer::testing::TestApiServer;
use serde_json::Value;

async fn server() -> TestApiServer {
    TestApiServer::start()
        .await
        .expect("the test API server starts")
}

fn names(server: &TestApiServer, api_version: &str, kind: &str) -> Vec<String> {
    let objects = server
        .list_json(api_version, kind, Some("default"))
        .unwrap();
    let name = |o: &Value| {
        o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    objects.iter().map(name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_controller_follows_a_deployment_and_cleans_up() {
    let server = server().await;
    deployment_controller::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(names(&server, "apps/v1", "Deployment").is_empty());
    assert!(names(&server, "apps/v1", "ReplicaSet").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicaset_pods_keeps_the_pod_count_and_cleans_up() {
    let server = server().await;
    replicaset_pods::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(names(&server, "apps/v1", "ReplicaSet").is_empty());
    assert!(names(&server, "v1", "Pod").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_style_copies_a_config_map_into_a_secret_and_cleans_up() {
    let server = server().await;
    client_go_style::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(
        names(&server, "v1", "ConfigMap")
            .iter()
            .all(|n| n != "settings")
    );
    assert!(
        names(&server, "v1", "Secret")
            .iter()
            .all(|n| n != "settings")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_backends_are_used_by_the_controller() {
    let server = server().await;
    let usage = custom_backends::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(usage.store_writes >= 3, "add, update, delete: {usage:?}");
    assert!(usage.store_reads >= 3, "a read per reconcile: {usage:?}");
    assert!(usage.queue_adds >= 3 && usage.queue_gets >= 3, "{usage:?}");
    assert!(names(&server, "apps/v1", "Deployment").is_empty());
    assert!(names(&server, "apps/v1", "ReplicaSet").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crd_controller_cleans_up_through_its_finalizer() {
    use crd_controller::Greeting;
    use kube::CustomResourceExt as _;
    let server = TestApiServer::builder()
        .crd(Greeting::crd())
        .start()
        .await
        .unwrap();
    crd_controller::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(names(&server, "examples.informer.dev/v1", "Greeting").is_empty());
    assert_eq!(
        names(&server, "v1", "ConfigMap"),
        ["greetings"],
        "the garbage collector deleted hello-greeting; the shared list stays"
    );
    let list = server
        .get_json("v1", "ConfigMap", Some("default"), "greetings")
        .unwrap();
    assert!(list["data"].get("hello").is_none(), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_mirror_copies_across_namespaces_and_deletes_copies_of_sources_gone() {
    let server = server().await;
    config_mirror::scenario(server.client(), false)
        .await
        .unwrap();
    let copies = server.list_json("v1", "ConfigMap", Some("mirror")).unwrap();
    let names: Vec<&str> = copies
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .filter(|name| name.starts_with("team-a."))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn website_operator_serves_a_website_and_cleans_up_through_its_finalizer() {
    use kube::CustomResourceExt as _;
    use website_operator::Website;
    let server = TestApiServer::builder()
        .crd(Website::crd())
        .start()
        .await
        .unwrap();
    website_operator::scenario(server.client(), false)
        .await
        .unwrap();
    assert!(names(&server, "examples.informer.dev/v1", "Website").is_empty());
    assert!(names(&server, "v1", "ConfigMap").is_empty());
    assert!(names(&server, "apps/v1", "Deployment").is_empty());
    // The `kubernetes` Service every cluster has in `default` stays.
    assert_eq!(names(&server, "v1", "Service"), ["kubernetes"]);
}
