//! autoscaling/v1 HorizontalPodAutoscalers: the autoscaling/v2 objects, converted as
//! kube-apiserver converts them (`targetCPUUtilizationPercentage` is the CPU utilization
//! metric, the rest travels in `autoscaling.alpha.kubernetes.io/*` annotations). Reads,
//! writes, patches, status updates, deletes and watches across both versions through kube's
//! typed clients, discovery and OpenAPI, the validation of a v1 request, and kubectl
//! (`autoscale`, which writes v1, `get`, `patch`, `apply --server-side`).

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::autoscaling::{v1, v2};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

use super::common::{raw, server, within};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

fn v1_autoscaler(name: &str, percent: i32) -> v1::HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": percent,
        },
    }))
    .unwrap()
}

fn memory_metric() -> v2::MetricSpec {
    serde_json::from_value(json!({"type": "Resource", "resource": {"name": "memory",
        "target": {"type": "AverageValue", "averageValue": "500Mi"}}}))
    .unwrap()
}

#[tokio::test]
async fn one_object_is_read_and_written_through_both_versions() {
    let server = server().await;
    let client = server.client();
    let old: Api<v1::HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let new: Api<v2::HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let post = PostParams::default();

    let created = within(old.create(&post, &v1_autoscaler("web", 70)))
        .await
        .unwrap();
    let spec = created.spec.clone().unwrap();
    assert_eq!(spec.min_replicas, Some(1), "v1's default");
    assert_eq!(spec.target_cpu_utilization_percentage, Some(70));
    let status = created.status.clone().unwrap();
    assert_eq!((status.current_replicas, status.desired_replicas), (0, 0));

    // Through v2: the same object, the target a metric.
    let read = within(new.get("web")).await.unwrap();
    assert_eq!(
        read.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(read.metadata.uid, created.metadata.uid);
    let metrics = read.spec.clone().unwrap().metrics.unwrap();
    assert_eq!(metrics.len(), 1);
    let cpu = metrics[0].resource.as_ref().unwrap();
    assert_eq!(cpu.name, "cpu");
    assert_eq!(cpu.target.type_, "Utilization");
    assert_eq!(cpu.target.average_utilization, Some(70));

    // A v2 client adds a memory metric: v1 keeps it in an annotation.
    let mut changed = read;
    changed
        .spec
        .as_mut()
        .unwrap()
        .metrics
        .as_mut()
        .unwrap()
        .insert(0, memory_metric());
    within(new.replace("web", &post, &changed)).await.unwrap();
    let mut through_v1 = within(old.get("web")).await.unwrap();
    let annotations = through_v1.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations[METRICS],
        r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#
    );
    assert_eq!(
        through_v1
            .spec
            .as_ref()
            .unwrap()
            .target_cpu_utilization_percentage,
        Some(70)
    );

    // A v1 client that reads and writes back loses nothing.
    through_v1
        .spec
        .as_mut()
        .unwrap()
        .target_cpu_utilization_percentage = Some(40);
    let replaced = within(old.replace("web", &post, &through_v1))
        .await
        .unwrap();
    assert_eq!(
        replaced.metadata.annotations.unwrap().get(METRICS),
        Some(&annotations[METRICS])
    );
    let metrics = within(new.get("web"))
        .await
        .unwrap()
        .spec
        .unwrap()
        .metrics
        .unwrap();
    let names: Vec<&str> = metrics
        .iter()
        .map(|m| m.resource.as_ref().unwrap().name.as_str())
        .collect();
    assert_eq!(names, ["memory", "cpu"]);
    assert_eq!(
        metrics[1]
            .resource
            .as_ref()
            .unwrap()
            .target
            .average_utilization,
        Some(40)
    );

    // Patches through v1 apply to the v1 shape.
    let patched = within(old.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"maxReplicas": 8, "targetCPUUtilizationPercentage": 50}})),
    ))
    .await
    .unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().max_replicas, 8);
    let json_patched = within(
        old.patch(
            "web",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/spec/minReplicas", "value": 2}
                ]))
                .unwrap(),
            ),
        ),
    )
    .await
    .unwrap();
    assert_eq!(json_patched.spec.unwrap().min_replicas, Some(2));
    let spec = within(new.get("web")).await.unwrap().spec.unwrap();
    assert_eq!((spec.min_replicas, spec.max_replicas), (Some(2), 8));

    // What a v1 controller writes to the status, and the conditions a v2 one writes.
    let mut status = within(old.get_status("web")).await.unwrap();
    status.status = Some(
        serde_json::from_value(json!({"currentReplicas": 2, "desiredReplicas": 3,
            "currentCPUUtilizationPercentage": 45}))
        .unwrap(),
    );
    within(old.replace_status("web", &post, &status))
        .await
        .unwrap();
    let stored = within(new.get_status("web")).await.unwrap().status.unwrap();
    assert_eq!(stored.desired_replicas, 3);
    let current = stored.current_metrics.unwrap();
    assert_eq!(
        current[0]
            .resource
            .as_ref()
            .unwrap()
            .current
            .average_utilization,
        Some(45)
    );
    within(new.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"conditions": [{"type": "AbleToScale", "status": "True",
            "lastTransitionTime": "2025-01-02T03:04:05Z", "reason": "ReadyForNewScale"}]}}),
        ),
    ))
    .await
    .unwrap();
    let through_v1 = within(old.get("web")).await.unwrap();
    assert_eq!(
        through_v1.metadata.annotations.unwrap()[CONDITIONS],
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2025-01-02T03:04:05Z","reason":"ReadyForNewScale"}]"#
    );
    assert_eq!(
        through_v1
            .status
            .unwrap()
            .current_cpu_utilization_percentage,
        Some(45)
    );

    // Lists of both versions hold it; a delete through v1 removes it for both.
    let listed = within(old.list(&ListParams::default())).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("web"));
    within(old.delete("web", &DeleteParams::default()))
        .await
        .unwrap();
    assert!(within(new.get_opt("web")).await.unwrap().is_none());
}

#[tokio::test]
async fn a_watch_through_v1_converts_every_event() {
    let server = server().await;
    let client = server.client();
    let old: Api<v1::HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let new: Api<v2::HorizontalPodAutoscaler> = Api::default_namespaced(client.clone());
    let version = within(old.list(&ListParams::default()))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = within(old.watch(&WatchParams::default(), &version))
        .await
        .unwrap()
        .boxed();
    let created: v2::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 4,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 65}}}],
        },
    }))
    .unwrap();
    within(new.create(&PostParams::default(), &created))
        .await
        .unwrap();
    match within(events.try_next()).await.unwrap() {
        Some(WatchEvent::Added(hpa)) => {
            assert_eq!(
                hpa.spec.unwrap().target_cpu_utilization_percentage,
                Some(65)
            );
        }
        other => panic!("expected ADDED, got {other:?}"),
    }
    within(new.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "memory",
                "target": {"type": "Utilization", "averageUtilization": 90}}}]}})),
    ))
    .await
    .unwrap();
    match within(events.try_next()).await.unwrap() {
        Some(WatchEvent::Modified(hpa)) => {
            assert!(
                hpa.spec
                    .unwrap()
                    .target_cpu_utilization_percentage
                    .is_none()
            );
            assert!(hpa.metadata.annotations.unwrap()[METRICS].contains("memory"));
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    within(new.delete("web", &DeleteParams::default()))
        .await
        .unwrap();
    match within(events.try_next()).await.unwrap() {
        Some(WatchEvent::Deleted(hpa)) => {
            assert_eq!(hpa.metadata.name.as_deref(), Some("web"));
        }
        other => panic!("expected DELETED, got {other:?}"),
    }
}

#[tokio::test]
async fn discovery_and_openapi_serve_both_versions_v2_preferred() {
    let server = server().await;
    let client = server.client();
    let groups = within(client.list_api_groups()).await.unwrap();
    let group = groups
        .groups
        .iter()
        .find(|g| g.name == "autoscaling")
        .unwrap();
    let versions: Vec<&str> = group.versions.iter().map(|v| v.version.as_str()).collect();
    assert_eq!(versions, ["v2", "v1"]);
    assert_eq!(group.preferred_version.as_ref().unwrap().version, "v2");
    let hashes: Vec<String> = {
        let mut hashes = Vec::new();
        for version in ["autoscaling/v1", "autoscaling/v2"] {
            let list = within(client.list_api_group_resources(version))
                .await
                .unwrap();
            let names: Vec<&str> = list.resources.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(
                names,
                [
                    "horizontalpodautoscalers",
                    "horizontalpodautoscalers/status"
                ]
            );
            let main = &list.resources[0];
            assert_eq!(main.short_names.as_deref(), Some(&["hpa".to_string()][..]));
            assert_eq!(main.categories.as_deref(), Some(&["all".to_string()][..]));
            hashes.push(main.storage_version_hash.clone().unwrap());
        }
        hashes
    };
    assert_eq!(hashes[0], hashes[1], "one storage");

    let document = raw(&server, "GET", "/openapi/v3/apis/autoscaling/v1", &[], b"").await;
    assert_eq!(document.status, 200);
    let document: Value = serde_json::from_slice(&document.body).unwrap();
    let schema =
        &document["components"]["schemas"]["io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerSpec"];
    assert!(
        schema["properties"]["targetCPUUtilizationPercentage"].is_object(),
        "{schema}"
    );
}

#[tokio::test]
async fn a_v1_request_is_validated_as_the_internal_object_it_converts_to() {
    let server = server().await;
    let old: Api<v1::HorizontalPodAutoscaler> = Api::default_namespaced(server.client());
    let mut bad = v1_autoscaler("web", 0);
    bad.spec.as_mut().unwrap().min_replicas = Some(6);
    let err = match within(old.create(&PostParams::default(), &bad)).await {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected 422, got {other:?}"),
    };
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "HorizontalPodAutoscaler.autoscaling \"web\" is invalid: [spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`, spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0]"
    );
    // An unknown field of v1 (a v2 field) is refused under strict field validation.
    let response = raw(
        &server,
        "POST",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers?fieldValidation=Strict",
        &[("Content-Type", "application/json")],
        br#"{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"x"},"spec":{"maxReplicas":1,"metrics":[]}}"#,
    )
    .await;
    assert_eq!(response.status, 400, "{response:?}");
    assert!(
        String::from_utf8_lossy(&response.body).contains(r#"unknown field \"spec.metrics\""#),
        "{response:?}"
    );
}

#[tokio::test]
async fn server_side_apply_through_v1_sets_the_cpu_target() {
    let server = server().await;
    let old: Api<v1::HorizontalPodAutoscaler> = Api::default_namespaced(server.client());
    let new: Api<v2::HorizontalPodAutoscaler> = Api::default_namespaced(server.client());
    let params = PatchParams::apply("example");
    let config = json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 30},
    });
    let applied = within(old.patch("web", &params, &Patch::Apply(&config)))
        .await
        .unwrap();
    assert_eq!(
        applied.spec.unwrap().target_cpu_utilization_percentage,
        Some(30)
    );
    let mut config = config;
    config["spec"]["targetCPUUtilizationPercentage"] = json!(35);
    within(old.patch("web", &params, &Patch::Apply(&config)))
        .await
        .unwrap();
    let metrics = within(new.get("web"))
        .await
        .unwrap()
        .spec
        .unwrap()
        .metrics
        .unwrap();
    assert_eq!(metrics.len(), 1);
    assert_eq!(
        metrics[0]
            .resource
            .as_ref()
            .unwrap()
            .target
            .average_utilization,
        Some(35)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_autoscale_writes_v1_and_gets_read_both_versions() {
    let Some((server, kubectl)) = super::kubectl::started().await else {
        return;
    };
    kubectl
        .ok(&["create", "deployment", "web", "--image=nginx"])
        .await;
    let out = kubectl
        .ok(&[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=80",
        ])
        .await;
    assert_eq!(
        out.trim(),
        "horizontalpodautoscaler.autoscaling/web autoscaled"
    );

    let table = kubectl.ok(&["get", "hpa"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    let row = table.lines().nth(1).unwrap();
    for cell in ["web", "Deployment/web", "cpu: <unknown>/80%", "2", "5", "0"] {
        assert!(row.contains(cell), "{table}");
    }
    // The same table through v1 (client-go's short names resolve to the preferred version,
    // so the full name picks v1).
    let v1_table = kubectl
        .ok(&["get", "horizontalpodautoscalers.v1.autoscaling"])
        .await;
    assert_eq!(v1_table.lines().next(), table.lines().next(), "{v1_table}");
    // The same cells but the age, which may have ticked.
    let without_age = |text: &str| -> Vec<String> {
        let cells: Vec<String> = text
            .lines()
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        cells[..cells.len().saturating_sub(1)].to_vec()
    };
    assert_eq!(without_age(&v1_table), without_age(&table), "{v1_table}");

    let yaml = kubectl
        .ok(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "yaml",
        ])
        .await;
    assert!(yaml.starts_with("apiVersion: autoscaling/v1\n"), "{yaml}");
    for line in [
        "  maxReplicas: 5",
        "  minReplicas: 2",
        "  targetCPUUtilizationPercentage: 80",
        "  currentReplicas: 0",
        "  desiredReplicas: 0",
    ] {
        assert!(yaml.lines().any(|l| l == line), "{line}: {yaml}");
    }
    assert!(!yaml.contains("metrics"), "{yaml}");
    let yaml = kubectl.ok(&["get", "hpa", "web", "-o", "yaml"]).await;
    assert!(yaml.starts_with("apiVersion: autoscaling/v2\n"), "{yaml}");
    assert!(yaml.contains("averageUtilization: 80"), "{yaml}");

    kubectl
        .ok(&[
            "patch",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-p",
            r#"{"spec":{"targetCPUUtilizationPercentage":55}}"#,
        ])
        .await;
    let target = kubectl
        .ok(&[
            "get",
            "hpa",
            "web",
            "-o",
            "jsonpath={.spec.metrics[0].resource.target.averageUtilization}",
        ])
        .await;
    assert_eq!(target, "55");
    let refused = kubectl
        .run(&[
            "patch",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minReplicas":0}}"#,
        ])
        .await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"),
        "{stderr}"
    );
    drop(server);
    kubectl.cleanup();
}
