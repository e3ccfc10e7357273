use super::*;
use serde_json::json;

#[test]
fn builtin_lookup() {
    let registry = Registry::builtin();
    let pods = registry.by_path("", "v1", "pods").unwrap();
    assert_eq!(pods.kind, "Pod");
    assert!(pods.namespaced && pods.status_subresource);
    assert_eq!(
        registry.by_kind("apps/v1", "Deployment").unwrap().plural,
        "deployments"
    );
    assert_eq!(
        registry
            .by_kind("coordination.k8s.io/v1", "Lease")
            .unwrap()
            .plural,
        "leases"
    );
    assert!(!registry.by_path("", "v1", "namespaces").unwrap().namespaced);
    assert!(registry.by_path("apps", "v2", "deployments").is_none());
}

#[test]
fn custom_resources_validate_and_register() {
    let mut registry = Registry::builtin();
    let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
    registry.register(&spec).unwrap();
    assert!(
        registry
            .by_path("example.com", "v1", "widgets")
            .unwrap()
            .custom
    );
    assert!(registry.serves_group_version("example.com", "v1"));
    assert!(
        registry
            .register(&CustomResourceSpec::namespaced(
                "apps",
                "v1",
                "X",
                "deployments"
            ))
            .is_err()
    );
    assert!(
        registry
            .register(&CustomResourceSpec::namespaced(
                "example.com",
                "v1",
                "W",
                "Widgets"
            ))
            .is_err()
    );
    assert!(
        registry
            .register(&CustomResourceSpec::namespaced("", "v1", "W", "ws"))
            .is_err()
    );
}

#[test]
fn field_values() {
    let registry = Registry::builtin();
    let pods = registry.by_path("", "v1", "pods").unwrap();
    let pod = json!({"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}});
    assert_eq!(pods.field_value(&pod, "spec.nodeName"), "n1");
    assert_eq!(pods.field_value(&pod, "spec.hostNetwork"), "false");
    assert_eq!(pods.field_value(&pod, "status.phase"), "");
    assert!(pods.supports_field("spec.nodeName"));
    assert!(!pods.supports_field("spec.bogus"));
}
