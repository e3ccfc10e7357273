use serde_json::json;

use super::*;
use crate::apiserver::resource::Registry;
use crate::{CustomResourceSpec, ScaleSubresource};

fn deployments() -> std::sync::Arc<ResourceType> {
    Registry::builtin()
        .by_path("apps", "v1", "deployments")
        .unwrap()
}

#[test]
fn a_workload_scale_reads_replicas_and_the_selector_string() {
    let deployment = json!({
        "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7", "labels": {"x": "y"}},
        "spec": {"replicas": 3, "selector": {
            "matchLabels": {"tier": "fe", "app": "web"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]
        }},
        "status": {"replicas": 2}
    });
    let scale = scale(&deployments(), &deployment).unwrap();
    assert_eq!(
        scale,
        json!({
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
            "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=web,!canary,env in (dev,prod),tier=fe"}
        })
    );
}

#[test]
fn missing_replicas_read_as_zero() {
    let scale = scale(&deployments(), &json!({"metadata": {"name": "a"}})).unwrap();
    // As Go writes a `Scale` of 0 replicas: `spec.replicas` is `omitempty`, the status's not.
    assert_eq!(scale["spec"], json!({}));
    assert_eq!(scale["status"], json!({"replicas": 0}));
}

#[test]
fn custom_resources_use_their_declared_paths() {
    let mut registry = Registry::builtin();
    registry
        .register(
            &CustomResourceSpec::namespaced("example.com", "v1", "Pool", "pools")
                .with_scale_subresource(
                    ScaleSubresource::new(".spec.size", ".status.ready")
                        .with_label_selector_path(".status.labels"),
                ),
        )
        .unwrap();
    let pools = registry.by_path("example.com", "v1", "pools").unwrap();
    let pool = json!({"metadata": {"name": "p"}, "spec": {"size": 4}, "status": {"ready": 1, "labels": "app=p"}});
    let scale = scale(&pools, &pool).unwrap();
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=p"}));
    let resized = with_replicas(&pools, &json!({"metadata": {"name": "p"}}), 6).unwrap();
    assert_eq!(resized["spec"]["size"], 6);
}

#[test]
fn scale_paths_are_validated_on_registration() {
    let bad = CustomResourceSpec::namespaced("example.com", "v1", "Pool", "pools")
        .with_scale_subresource(ScaleSubresource::new(".status.size", ".status.ready"));
    assert!(Registry::builtin().register(&bad).is_err());
}

#[test]
fn requested_replicas_are_checked() {
    let deployments = deployments();
    assert_eq!(
        requested_replicas(&deployments, "web", &json!({"spec": {"replicas": 5}})).unwrap(),
        5
    );
    let err =
        requested_replicas(&deployments, "web", &json!({"spec": {"replicas": -1}})).unwrap_err();
    assert_eq!(
        err.message(),
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let err =
        requested_replicas(&deployments, "web", &json!({"metadata": {"name": "db"}})).unwrap_err();
    assert_eq!(err.code(), 400);
}
