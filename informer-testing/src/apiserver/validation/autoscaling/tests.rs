use serde_json::json;

use super::*;

fn errors_of(object: &Value, old: Option<&Value>) -> Vec<String> {
    let mut errors = Vec::new();
    horizontal_pod_autoscaler(object, old, &mut errors);
    errors.iter().map(ToString::to_string).collect()
}

fn autoscaler(spec: Value) -> Value {
    json!({"metadata": {"name": "web"}, "spec": spec})
}

fn valid_spec() -> Value {
    json!({
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1,
        "maxReplicas": 3,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}],
    })
}

#[test]
fn a_valid_autoscaler_passes() {
    assert!(errors_of(&autoscaler(valid_spec()), None).is_empty());
}

#[test]
fn replicas_are_bounded_and_scaling_to_zero_needs_an_object_metric() {
    let mut spec = valid_spec();
    spec["minReplicas"] = json!(0);
    spec["maxReplicas"] = json!(0);
    assert_eq!(
        errors_of(&autoscaler(spec.clone()), None),
        [
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
        ]
    );
    // An object that already scales to zero may keep doing so.
    let old = autoscaler(json!({"minReplicas": 0}));
    spec["maxReplicas"] = json!(2);
    assert_eq!(
        errors_of(&autoscaler(spec), Some(&old)),
        [
            "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"
        ]
    );
}

#[test]
fn metric_sources_must_match_their_type() {
    let mut spec = valid_spec();
    spec["metrics"] = json!([
        {"type": "Bogus"},
        {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
            "external": {"metric": {"name": "q/x"}, "target": {"type": "Value", "value": "0"}}},
    ]);
    let supported =
        r#"supported values: "ContainerResource", "External", "Object", "Pods", "Resource""#;
    assert_eq!(
        errors_of(&autoscaler(spec), None),
        [
            format!(r#"spec.metrics[0].type: Unsupported value: "Bogus": {supported}"#),
            format!(r#"spec.metrics[0].type: Unsupported value: "Bogus": {supported}"#),
            "spec.metrics[1].external.metric.name: Invalid value: \"q/x\": may not contain '/'".to_string(),
            "spec.metrics[1].external.target.value: Invalid value: \"0\": must be positive".to_string(),
            "spec.metrics[1].pods: Required value: must populate information for the given metric source".to_string(),
            "spec.metrics[1].external: Forbidden: must populate the given metric source only".to_string(),
            "spec.metrics[1].resource: Forbidden: must populate the given metric source only".to_string(),
        ]
    );
}

#[test]
fn behavior_rules_are_checked() {
    let mut spec = valid_spec();
    spec["behavior"] = json!({
        "scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Sometimes",
            "policies": [{"type": "Nodes", "value": 0, "periodSeconds": 2000}], "tolerance": "-1"},
        "scaleDown": {"policies": []},
    });
    assert_eq!(
        errors_of(&autoscaler(spec), None),
        [
            "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
            r#"spec.behavior.scaleUp.selectPolicy: Unsupported value: "Sometimes": supported values: "Disabled", "Max", "Min""#,
            r#"spec.behavior.scaleUp.policies[0].type: Unsupported value: "Nodes": supported values: "Percent", "Pods""#,
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
            r#"spec.behavior.scaleUp.tolerance: Invalid value: "-1": must be greater than or equal to 0"#,
            "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
        ]
    );
}

#[test]
fn the_target_reference_and_status_counts_are_checked() {
    let mut object =
        autoscaler(json!({"scaleTargetRef": {"kind": "..", "name": "a%b"}, "maxReplicas": 1}));
    object["status"] = json!({"currentReplicas": -1, "desiredReplicas": 0});
    assert_eq!(
        errors_of(&object, None),
        [
            "spec.scaleTargetRef.kind: Invalid value: \"..\": may not be '..'",
            "spec.scaleTargetRef.name: Invalid value: \"a%b\": may not contain '%'",
            "status.currentReplicas: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
}

#[test]
fn container_resource_metrics_name_a_standard_resource_and_a_container() {
    let mut spec = valid_spec();
    spec["metrics"] = json!([{"type": "ContainerResource", "containerResource": {
        "name": "gpus", "container": "App_1",
        "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "1"}}}]);
    let errors = errors_of(&autoscaler(spec), None);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert_eq!(
        errors[0],
        "spec.metrics[0].containerResource.name: Invalid value: \"gpus\": must be a standard resource for containers"
    );
    assert!(errors[1].starts_with("spec.metrics[0].containerResource.container: Invalid value: \"App_1\": a lowercase RFC 1123 label"));
    assert_eq!(
        errors[2],
        "spec.metrics[0].containerResource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization"
    );
}
