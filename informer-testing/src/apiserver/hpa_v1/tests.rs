use super::*;
use crate::apiserver::resource::Registry;
use crate::apiserver::storage::{Limits, Storage};

/// What `kubectl autoscale deployment web --min=2 --max=5 --cpu-percent=80` sends.
fn autoscaled() -> Value {
    json!({
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 80,
        },
        "status": {"currentReplicas": 0, "desiredReplicas": 0},
    })
}

/// A v2 autoscaler with what v1 cannot hold: a memory metric, a behavior, current metrics and
/// conditions.
fn rich_v2() -> Value {
    json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Min",
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}},
        },
        "status": {
            "currentReplicas": 3,
            "desiredReplicas": 4,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": 75, "averageValue": "150m"}}},
            ],
            "conditions": [{"type": "AbleToScale", "status": "True",
                "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "ReadyForNewScale"}],
        },
    })
}

#[test]
fn the_cpu_target_is_one_resource_metric_both_ways() {
    let stored = to_v2(&autoscaled());
    assert_eq!(stored["apiVersion"], "autoscaling/v2");
    assert_eq!(
        stored["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    assert!(
        stored["spec"]
            .get("targetCPUUtilizationPercentage")
            .is_none()
    );
    assert_eq!(from_v2(&stored), autoscaled());
    assert!(stored.pointer("/metadata/annotations").is_none());
}

#[test]
fn v1_defaults_min_replicas_and_implies_an_80_percent_cpu_target() {
    let bare = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3},
    });
    let stored = to_v2(&bare);
    assert_eq!(stored["spec"]["minReplicas"], 1);
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"],
        json!({"type": "Utilization", "averageUtilization": 80})
    );
    assert_eq!(
        stored["spec"]["scaleTargetRef"],
        json!({"kind": "Deployment", "name": "web"})
    );
    // Read back through v1, the implied target is explicit.
    assert_eq!(
        from_v2(&stored)["spec"]["targetCPUUtilizationPercentage"],
        80
    );
}

#[test]
fn what_v1_cannot_hold_travels_in_annotations_written_as_go_writes_them() {
    let v1 = from_v2(&rich_v2());
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(
        v1["spec"],
        json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10, "targetCPUUtilizationPercentage": 60,
        })
    );
    assert_eq!(
        v1["status"],
        json!({"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 75})
    );
    let annotations = &v1["metadata"]["annotations"];
    assert_eq!(annotations["team"], "a");
    assert_eq!(
        annotations[METRIC_SPECS],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#
    );
    assert_eq!(
        annotations[METRIC_STATUSES],
        r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":75,"currentAverageValue":"150m"}}]"#
    );
    assert_eq!(
        annotations[BEHAVIOR],
        r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Min","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":30}],"Tolerance":null}}"#
    );
    assert_eq!(
        annotations[CONDITIONS],
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2025-01-02T03:04:05Z","reason":"ReadyForNewScale"}]"#
    );
    // And back: the same object, the annotations gone.
    assert_eq!(to_v2(&v1), rich_v2());
}

#[test]
fn the_first_cpu_metric_decides_the_target_and_the_last_the_current_value() {
    let mut stored = rich_v2();
    stored["spec"]["metrics"] = json!([
        {"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "AverageValue", "averageValue": "200m"}}},
        {"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}},
    ]);
    stored["status"]["currentMetrics"] = json!([
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 10}}},
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 20}}},
    ]);
    let v1 = from_v2(&stored);
    // The first CPU metric has no utilization: no target; the utilization one is not kept.
    assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
    assert_eq!(
        v1["metadata"]["annotations"][METRIC_SPECS],
        r#"[{"type":"Resource","resource":{"name":"cpu","targetAverageValue":"200m"}}]"#
    );
    assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 20);
    // A zero quantity Go declares by value is written "0".
    assert!(
        v1["metadata"]["annotations"][METRIC_STATUSES]
            .as_str()
            .unwrap()
            .contains(r#""currentAverageValue":"0""#)
    );
}

#[test]
fn every_metric_source_converts_both_ways() {
    let selector = json!({"matchLabels": {"app": "web"}});
    let metrics = json!([
        {"type": "Object", "object": {
            "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
            "metric": {"name": "requests-per-second", "selector": selector},
            "target": {"type": "Value", "value": "10k"}}},
        {"type": "Pods", "pods": {"metric": {"name": "packets"},
            "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
            "target": {"type": "Utilization", "averageUtilization": 70}}},
        {"type": "External", "external": {"metric": {"name": "queue", "selector": selector},
            "target": {"type": "AverageValue", "averageValue": "30"}}},
    ]);
    let mut stored = rich_v2();
    stored["spec"]["metrics"] = metrics.clone();
    let v1 = from_v2(&stored);
    assert_eq!(
        v1["metadata"]["annotations"][METRIC_SPECS],
        concat!(
            r#"[{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"#,
            r#""metricName":"requests-per-second","targetValue":"10k","selector":{"matchLabels":{"app":"web"}}}},"#,
            r#"{"type":"Pods","pods":{"metricName":"packets","targetAverageValue":"1k"}},"#,
            r#"{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":70,"container":"app"}},"#,
            r#"{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"app":"web"}},"targetAverageValue":"30"}}]"#
        )
    );
    // No CPU utilization target among them: v1 names none, and the metrics come back as
    // they were.
    assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
    assert_eq!(to_v2(&v1)["spec"]["metrics"], metrics);
}

#[test]
fn annotations_that_do_not_decode_are_dropped() {
    let mut v1 = autoscaled();
    v1["metadata"]["annotations"] = json!({
        METRIC_SPECS: "not json",
        METRIC_STATUSES: r#"[{"type": 5}]"#,
        CONDITIONS: r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2025-01-02T03:04:05Z"}]"#,
        BEHAVIOR: "{}",
        "keep": "me",
    });
    let stored = to_v2(&v1);
    assert_eq!(stored["metadata"]["annotations"], json!({"keep": "me"}));
    assert_eq!(stored["spec"]["metrics"].as_array().unwrap().len(), 1);
    assert!(stored["status"].get("currentMetrics").is_none());
    assert!(
        stored["spec"].get("behavior").is_none(),
        "the zero behavior"
    );
    assert_eq!(stored["status"]["conditions"][0]["type"], "AbleToScale");
}

#[test]
fn the_behavior_annotation_decodes_as_go_matches_field_names() {
    // `encoding/json` matches keys case-insensitively: a hand-written lower-case annotation
    // works too; `Tolerance` is a quantity.
    let mut v1 = autoscaled();
    v1["metadata"]["annotations"] = json!({
        BEHAVIOR: r#"{"scaleUp":{"stabilizationWindowSeconds":30,"policies":[{"type":"Percent","value":50,"periodSeconds":60}],"Tolerance":"0.05"}}"#,
    });
    let stored = to_v2(&v1);
    assert_eq!(
        stored["spec"]["behavior"],
        json!({"scaleUp": {"stabilizationWindowSeconds": 30, "tolerance": "50m",
            "policies": [{"type": "Percent", "value": 50, "periodSeconds": 60}]}})
    );
    assert!(stored["metadata"].get("annotations").is_none());
}

#[test]
fn html_characters_are_escaped_as_go_escapes_them() {
    let mut stored = rich_v2();
    stored["status"]["conditions"][0]["message"] = json!("a < b & c > d");
    let v1 = from_v2(&stored);
    assert!(
        v1["metadata"]["annotations"][CONDITIONS]
            .as_str()
            .unwrap()
            .contains(r#""message":"a \u003c b \u0026 c \u003e d""#)
    );
    assert_eq!(
        to_v2(&v1)["status"]["conditions"][0]["message"],
        "a < b & c > d"
    );
}

#[test]
fn an_apply_configuration_converts_only_what_it_sets() {
    let live = rich_v2();
    let config = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"maxReplicas": 7, "targetCPUUtilizationPercentage": 40},
    });
    let converted = config_to_v2(&config, Some(&live));
    assert_eq!(converted["apiVersion"], "autoscaling/v2");
    assert_eq!(
        converted["spec"],
        json!({"maxReplicas": 7, "metrics": [
            live["spec"]["metrics"][0].clone(),
            {"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 40}}},
        ]})
    );
    // Without the CPU target, the metrics are left alone.
    let config = json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 7}});
    assert_eq!(
        config_to_v2(&config, Some(&live))["spec"],
        json!({"maxReplicas": 7})
    );
}

#[test]
fn the_view_shares_the_v2_storage() {
    let registry = Registry::builtin();
    let v2 = registry
        .by_path("autoscaling", "v2", "horizontalpodautoscalers")
        .unwrap();
    let v1 = registry
        .by_path("autoscaling", "v1", "horizontalpodautoscalers")
        .unwrap();
    assert!(is_view(&v1) && !is_view(&v2));
    assert!(is_autoscaler(&v1) && is_autoscaler(&v2));
    assert_eq!(v1.key(), v2.key());
    assert_eq!(v1.storage(&registry).version, "v2");
    assert_eq!(v1.short_names, ["hpa"]);
    assert_eq!(v1.categories, ["all"]);
    assert!(v1.status_subresource);
}

#[test]
fn writes_through_either_version_are_one_object() {
    let registry = Registry::builtin();
    let v1 = registry
        .by_path("autoscaling", "v1", "horizontalpodautoscalers")
        .unwrap();
    let v2 = v1.storage(&registry);
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let mut object = autoscaled();
    v1.to_storage(&mut object);
    let created = store.create(&v2, Some("default"), object, false).unwrap();
    assert_eq!(created["apiVersion"], "autoscaling/v2");
    assert_eq!(
        created["status"],
        json!({"currentMetrics": null, "desiredReplicas": 0})
    );
    let read = v1.present(&created);
    assert_eq!(read["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(
        read["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // A merge patch through v1 changes the target in the v1 shape.
    let patched = patch(
        &mut store,
        &v1,
        &v2,
        Some("default"),
        "web",
        PatchKind::Merge,
        &json!({"spec": {"targetCPUUtilizationPercentage": 50}}),
        Subresource::Main,
        WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(
        patched["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        50
    );
    assert_eq!(patched["spec"]["minReplicas"], 2);
    assert_ne!(
        patched["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // A status update through v1 (what an old controller writes).
    let mut status = from_v2(&patched);
    status["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3,
        "currentCPUUtilizationPercentage": 45});
    v1.to_storage(&mut status);
    let updated = store
        .update(
            &v2,
            Some("default"),
            "web",
            status,
            Subresource::Status,
            false,
        )
        .unwrap();
    assert_eq!(
        updated["status"]["currentMetrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": 45}}}])
    );
    assert_eq!(
        v1.present(&updated)["status"]["currentCPUUtilizationPercentage"],
        45
    );
}

#[test]
fn a_v2_write_drops_the_round_trip_annotations() {
    let registry = Registry::builtin();
    let v2 = registry
        .by_path("autoscaling", "v2", "horizontalpodautoscalers")
        .unwrap();
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let mut object = rich_v2();
    object["metadata"]["annotations"][METRIC_SPECS] = json!("[]");
    object["metadata"]["annotations"][CONDITIONS] = json!("[]");
    let created = store.create(&v2, Some("default"), object, false).unwrap();
    assert_eq!(created["metadata"]["annotations"], json!({"team": "a"}));
}

#[test]
fn invalid_v1_writes_fail_with_the_v2_field_names() {
    let registry = Registry::builtin();
    let v1 = registry
        .by_path("autoscaling", "v1", "horizontalpodautoscalers")
        .unwrap();
    let v2 = v1.storage(&registry);
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let mut object = autoscaled();
    object["spec"]["minReplicas"] = json!(6);
    object["spec"]["targetCPUUtilizationPercentage"] = json!(0);
    object["spec"]["scaleTargetRef"] = json!({"kind": "Deployment"});
    v1.to_storage(&mut object);
    let err = store
        .create(&v2, Some("default"), object, false)
        .unwrap_err();
    assert_eq!(err.code(), 422);
    assert_eq!(
        err.to_string(),
        "Invalid (422): HorizontalPodAutoscaler.autoscaling \"web\" is invalid: [spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`, spec.scaleTargetRef.name: Required value, spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0]"
    );
}
