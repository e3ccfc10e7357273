//! The `Priority` admission plugin and PriorityClass validation, as kube-apiserver applies
//! them: a Pod gets its class's priority and preemption policy (or the global default's),
//! a class that does not exist or a priority that is not the class's is refused, one class
//! at most is the global default, and `system-` names and values above 1e9 are reserved.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::common::{pod, server, status, within};

fn class(name: &str, value: i32, global_default: bool) -> PriorityClass {
    serde_json::from_value(json!({
        "metadata": {"name": name}, "value": value, "globalDefault": global_default,
    }))
    .unwrap()
}

fn pod_of_class(name: &str, class: &str) -> Pod {
    let mut pod = pod(name, &[]);
    pod.spec.as_mut().unwrap().priority_class_name = Some(class.to_string());
    pod
}

#[tokio::test]
async fn a_pod_gets_its_priority_classs_value_and_preemption_policy() {
    let server = server().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    let mut never = class("batch-low", 100, false);
    never.preemption_policy = Some("Never".into());
    within(classes.create(&PostParams::default(), &never))
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = within(pods.create(&PostParams::default(), &pod_of_class("a", "batch-low")))
        .await
        .unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.priority, Some(100));
    assert_eq!(spec.preemption_policy.as_deref(), Some("Never"));
    let critical = within(pods.create(
        &PostParams::default(),
        &pod_of_class("b", "system-node-critical"),
    ))
    .await
    .unwrap();
    assert_eq!(critical.spec.unwrap().priority, Some(2_000_001_000));
}

#[tokio::test]
async fn a_pod_of_a_priority_class_that_does_not_exist_is_forbidden() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let err = status(
        within(pods.create(&PostParams::default(), &pod_of_class("a", "nope")))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"a\" is forbidden: no PriorityClass with name nope was found"
    );
}

#[tokio::test]
async fn a_pod_priority_that_is_not_its_classs_is_forbidden() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut sent = pod_of_class("a", "system-cluster-critical");
    sent.spec.as_mut().unwrap().priority = Some(7);
    let err = status(
        within(pods.create(&PostParams::default(), &sent))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(
        err.message.ends_with(
            "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 2000000000 from the given PriorityClass name"
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_pod_without_a_class_gets_the_global_default_class() {
    let server = server().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let plain = within(pods.create(&PostParams::default(), &pod("before", &[])))
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!((plain.priority, plain.priority_class_name), (Some(0), None));
    assert_eq!(
        plain.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    within(classes.create(&PostParams::default(), &class("everyday", 10, true)))
        .await
        .unwrap();
    let defaulted = within(pods.create(&PostParams::default(), &pod("after", &[])))
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(defaulted.priority, Some(10));
    assert_eq!(defaulted.priority_class_name.as_deref(), Some("everyday"));
}

#[tokio::test]
async fn only_one_priority_class_is_the_global_default() {
    let server = server().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    within(classes.create(&PostParams::default(), &class("first", 10, true)))
        .await
        .unwrap();
    let err = status(
        within(classes.create(&PostParams::default(), &class("second", 20, true)))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"
    );
    within(classes.create(&PostParams::default(), &class("second", 20, false)))
        .await
        .unwrap();
    let err = status(
        within(classes.patch(
            "second",
            &PatchParams::default(),
            &Patch::Merge(json!({"globalDefault": true})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    // The default itself may be written again.
    within(classes.patch(
        "first",
        &PatchParams::default(),
        &Patch::Merge(json!({"description": "the default"})),
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn system_names_and_values_above_a_billion_are_reserved() {
    let server = server().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    let err = status(
        within(classes.create(&PostParams::default(), &class("system-mine", 5, false)))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "PriorityClass.scheduling.k8s.io \"system-mine\" is invalid: metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
    );
    let err = status(
        within(classes.create(&PostParams::default(), &class("huge", 1_000_000_001, false)))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "PriorityClass.scheduling.k8s.io \"huge\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    );
}

#[tokio::test]
async fn a_priority_classs_value_never_changes() {
    let server = server().await;
    let classes: Api<PriorityClass> = Api::all(server.client());
    within(classes.create(&PostParams::default(), &class("c", 5, false)))
        .await
        .unwrap();
    let err = status(
        within(classes.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"value": 6})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "PriorityClass.scheduling.k8s.io \"c\" is invalid: value: Forbidden: may not be changed in an update."
    );
}
