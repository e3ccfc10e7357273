//! Create, get, update, patch, delete, status, generation, finalizers,
//! custom resources and the shared revision counter.

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use informer_testing::CustomResourceSpec;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Pod, PodStatus, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, LabelSelector, ManagedFieldsEntry};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::ObjectMeta;
use serde_json::json;

use super::common::{names, pod, raw, server, server_with_widgets, status, within};

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

#[tokio::test]
async fn create_sets_server_fields_and_keeps_managed_fields() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut body = pod("a", &[("app", "web")]);
    let managed = ManagedFieldsEntry {
        manager: Some("test-manager".into()),
        operation: Some("Update".into()),
        api_version: Some("v1".into()),
        fields_type: Some("FieldsV1".into()),
        fields_v1: Some(FieldsV1(serde_json::json!({"f:spec": {"f:hostname": {}}}))),
        time: None,
        subresource: None,
    };
    body.metadata.managed_fields = Some(vec![managed.clone()]);
    let created = within(pods.create(&PostParams::default(), &body))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    assert_eq!(meta.generation, Some(1));
    assert_eq!(meta.uid.as_ref().map(String::len), Some(36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(
        meta.resource_version,
        Some(server.resource_version().to_string())
    );
    // Valid managed fields sent with a create are kept; the creator owns what it set (here
    // everything but the field the sent entry claims).
    let entries = meta.managed_fields.clone().unwrap_or_default();
    assert!(entries.contains(&managed), "{entries:?}");
    let creator = entries
        .iter()
        .find(|e| e.manager != managed.manager)
        .expect("the creator's entry");
    assert_eq!(creator.operation.as_deref(), Some("Update"));
    assert!(creator.fields_v1.as_ref().unwrap().0["f:spec"]["f:containers"].is_object());
    assert!(meta.deletion_timestamp.is_none());

    let again = status(
        within(pods.create(&PostParams::default(), &body))
            .await
            .unwrap_err(),
    );
    assert_eq!((again.code, again.reason.as_str()), (409, "AlreadyExists"));

    let mut unnamed = pod("", &[]);
    unnamed.metadata.name = None;
    let err = status(
        within(pods.create(&PostParams::default(), &unnamed))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));

    unnamed.metadata.generate_name = Some("web-".into());
    let generated = within(pods.create(&PostParams::default(), &unnamed))
        .await
        .unwrap();
    let name = generated.metadata.name.unwrap();
    assert!(name.starts_with("web-") && name.len() == 9, "{name}");

    let mut invalid = pod("Not_A_Valid_Name", &[]);
    invalid.metadata.namespace = None;
    let err = status(
        within(pods.create(&PostParams::default(), &invalid))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);

    let dry = within(pods.create(
        &PostParams {
            dry_run: true,
            ..PostParams::default()
        },
        &pod("dry", &[]),
    ))
    .await
    .unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert_eq!(status(within(pods.get("dry")).await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn malformed_bodies_are_bad_requests() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let json = [("Content-Type", "application/json")];
    for body in [
        &b"{not json"[..],
        b"",
        b"[1,2,3]",
        b"\"string\"",
        b"{\"metadata\": 5}",
    ] {
        raw(&server, "POST", path, &json, body)
            .await
            .assert_status(400, "BadRequest");
    }
    raw(
        &server,
        "POST",
        path,
        &json,
        br#"{"kind": "Pod", "metadata": {"name": "x"}}"#,
    )
    .await
    .assert_status(400, "BadRequest");
    raw(
        &server,
        "POST",
        path,
        &json,
        br#"{"apiVersion": "apps/v1", "metadata": {"name": "x"}}"#,
    )
    .await
    .assert_status(400, "BadRequest");
    raw(
        &server,
        "POST",
        path,
        &json,
        br#"{"metadata": {"name": "x", "namespace": "elsewhere"}}"#,
    )
    .await
    .assert_status(400, "BadRequest");
    raw(&server, "POST", path, &json, br#"{"metadata": {}}"#)
        .await
        .assert_status(422, "Invalid");
    let created = raw(
        &server,
        "POST",
        path,
        &json,
        br#"{"metadata": {"name": "x"}}"#,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["kind"], "ConfigMap");
    raw(&server, "PUT", &format!("{path}/x"), &json, b"{{{")
        .await
        .assert_status(400, "BadRequest");
    raw(
        &server,
        "PUT",
        &format!("{path}/x"),
        &json,
        br#"{"metadata": {"name": "y"}}"#,
    )
    .await
    .assert_status(400, "BadRequest");
    raw(
        &server,
        "PATCH",
        &format!("{path}/x"),
        &[("Content-Type", "application/merge-patch+json")],
        b"nope",
    )
    .await
    .assert_status(400, "BadRequest");
    raw(
        &server,
        "PATCH",
        &format!("{path}/x"),
        &[("Content-Type", "text/plain")],
        b"{}",
    )
    .await
    .assert_status(415, "UnsupportedMediaType");
    raw(&server, "DELETE", &format!("{path}/x"), &json, b"{broken")
        .await
        .assert_status(400, "BadRequest");
}

#[tokio::test]
async fn updates_with_stale_versions_conflict() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = within(maps.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: meta("c"),
            ..ConfigMap::default()
        },
    ))
    .await
    .unwrap();
    let mut first = created.clone();
    first.data = Some(BTreeMap::from([("k".to_string(), "1".to_string())]));
    let updated = within(maps.replace("c", &PostParams::default(), &first))
        .await
        .unwrap();
    let rv = |m: &ConfigMap| {
        m.metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated.metadata.uid, created.metadata.uid);
    assert_eq!(
        updated.metadata.creation_timestamp,
        created.metadata.creation_timestamp
    );

    let mut stale = created.clone();
    stale.data = Some(BTreeMap::from([("k".to_string(), "2".to_string())]));
    let err = status(
        within(maps.replace("c", &PostParams::default(), &stale))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message.contains("the object has been modified"),
        "{}",
        err.message
    );

    // Without a resourceVersion the update is unconditional.
    stale.metadata.resource_version = None;
    within(maps.replace("c", &PostParams::default(), &stale))
        .await
        .unwrap();
    assert_eq!(within(maps.get("c")).await.unwrap().data.unwrap()["k"], "2");

    let missing = status(
        within(maps.replace(
            "missing",
            &PostParams::default(),
            &ConfigMap {
                metadata: meta("missing"),
                ..ConfigMap::default()
            },
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(missing.code, 404);

    // A no-op update keeps the resource version.
    let current = within(maps.get("c")).await.unwrap();
    let same = within(maps.replace("c", &PostParams::default(), &current))
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        current.metadata.resource_version
    );
}

#[tokio::test]
async fn an_update_of_a_missing_object_creates_it_where_the_type_allows_it() {
    let server = server().await;
    let client = server.client();
    // Leases, Services, Endpoints, Events and the RBAC kinds allow it (AllowCreateOnUpdate).
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut lease = Lease {
        metadata: meta("lock"),
        ..Default::default()
    };
    lease.metadata.resource_version = Some("12345".into());
    let created = within(leases.replace("lock", &PostParams::default(), &lease))
        .await
        .expect("a PUT of a missing Lease creates it");
    assert!(created.metadata.uid.is_some());
    let response = raw(
        &server,
        "PUT",
        "/api/v1/namespaces/default/services/web",
        &[("Content-Type", "application/json")],
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"ports": [{"port": 80}]}})
        .to_string()
        .as_bytes(),
    )
    .await;
    assert_eq!(response.status, 201, "created, not updated");
    // The name in the body must be the one in the URL.
    let other = Service {
        metadata: meta("other"),
        ..Default::default()
    };
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let err = status(
        within(services.replace("web2", &PostParams::default(), &other))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "the name of the object (other) does not match the name on the URL (web2)"
    );
    // ConfigMaps do not: 404.
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let cm = ConfigMap {
        metadata: meta("missing"),
        ..Default::default()
    };
    let err = status(
        within(config_maps.replace("missing", &PostParams::default(), &cm))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
}

#[tokio::test]
async fn generation_and_the_status_subresource() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment = Deployment {
        metadata: meta("web"),
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector::default(),
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    let created = within(deployments.create(&PostParams::default(), &deployment))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));

    let labels = json!({"metadata": {"labels": {"a": "b"}}});
    let patched = within(deployments.patch("web", &PatchParams::default(), &Patch::Merge(&labels)))
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "metadata changes keep the generation"
    );

    let scale = json!({"spec": {"replicas": 3}, "status": {"replicas": 99}});
    let patched = within(deployments.patch("web", &PatchParams::default(), &Patch::Merge(&scale)))
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(
        patched.status.and_then(|s| s.replicas),
        None,
        "status changes are ignored on the main resource"
    );

    let status_patch =
        json!({"status": {"replicas": 3, "observedGeneration": 2}, "spec": {"replicas": 7}});
    let patched = within(deployments.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(&status_patch),
    ))
    .await
    .unwrap();
    assert_eq!(patched.status.as_ref().unwrap().replicas, Some(3));
    assert_eq!(
        patched.spec.as_ref().unwrap().replicas,
        Some(3),
        "spec changes are ignored on status"
    );
    assert_eq!(patched.metadata.generation, Some(2));

    let fetched = within(deployments.get_status("web")).await.unwrap();
    assert_eq!(fetched.status.unwrap().observed_generation, Some(2));

    // replace_status on pods.
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut p = within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    p.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..PodStatus::default()
    });
    let replaced = within(pods.replace_status("p", &PostParams::default(), &p))
        .await
        .unwrap();
    assert_eq!(replaced.status.unwrap().phase.as_deref(), Some("Running"));
    assert_eq!(replaced.metadata.generation, Some(1));
}

#[tokio::test]
async fn a_status_write_of_a_built_in_type_keeps_the_metadata_its_strategy_allows() {
    use kube::ResourceExt as _;
    // kube-apiserver's status strategies reset the spec, and of metadata only what their
    // kind says: a Pod's owner references, an apps workload's labels. A custom resource's
    // keeps nothing but the status (tested with the CRDs).
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-1"}]);
    let patch = json!({
        "metadata": {"labels": {"seen": "yes"}, "annotations": {"note": "n"}, "ownerReferences": owner},
        "status": {"phase": "Running"},
    });
    let patched = within(pods.patch_status("p", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    assert_eq!(
        patched.labels().get("seen").map(String::as_str),
        Some("yes")
    );
    assert_eq!(
        patched.annotations().get("note").map(String::as_str),
        Some("n")
    );
    assert!(
        patched.owner_references().is_empty(),
        "owner references are reset"
    );
    assert_eq!(patched.status.unwrap().phase.as_deref(), Some("Running"));

    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment = Deployment {
        metadata: meta("web"),
        spec: Some(DeploymentSpec {
            selector: LabelSelector::default(),
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    within(deployments.create(&PostParams::default(), &deployment))
        .await
        .unwrap();
    let patch = json!({
        "metadata": {"labels": {"seen": "yes"}, "annotations": {"note": "n"}},
        "status": {"replicas": 1},
    });
    let patched =
        within(deployments.patch_status("web", &PatchParams::default(), &Patch::Merge(&patch)))
            .await
            .unwrap();
    assert!(!patched.labels().contains_key("seen"), "labels are reset");
    assert_eq!(
        patched.annotations().get("note").map(String::as_str),
        Some("n")
    );
    assert_eq!(patched.status.unwrap().replicas, Some(1));
}

#[tokio::test]
async fn a_created_pod_starts_pending_with_its_qos_class_whatever_status_was_sent() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let body: Pod = serde_json::from_value(json!({
        "metadata": {"name": "sized"},
        "spec": {"containers": [{
            "name": "app", "image": "nginx:1.27",
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}
        }]},
        "status": {"phase": "Running", "podIP": "10.0.0.1"}
    }))
    .unwrap();
    let created = within(pods.create(&PostParams::default(), &body))
        .await
        .unwrap();
    let status = created.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(status.pod_ip, None, "the status sent is dropped");
    // Requests default to the limits, so requests equal limits for both resources.
    assert_eq!(status.qos_class.as_deref(), Some("Guaranteed"));

    let plain = within(pods.create(&PostParams::default(), &pod("plain", &[])))
        .await
        .unwrap();
    assert_eq!(
        plain.status.and_then(|s| s.qos_class).as_deref(),
        Some("BestEffort")
    );
}

#[tokio::test]
async fn merge_strategic_and_json_patches() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("p", &[("a", "1"), ("b", "2")])))
        .await
        .unwrap();

    let merge = json!({"metadata": {"labels": {"a": null, "c": "3"}}});
    let patched = within(pods.patch("p", &PatchParams::default(), &Patch::Merge(&merge)))
        .await
        .unwrap();
    let labels = patched.metadata.labels.unwrap();
    assert_eq!(
        labels,
        BTreeMap::from([("b".into(), "2".into()), ("c".into(), "3".into())])
    );

    // Strategic merge: containers merge by name instead of being replaced (in a pod
    // template: a Pod's containers cannot be added or removed).
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "1"}}, "template": {
            "metadata": {"labels": {"a": "1"}},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    within(deployments.create(&PostParams::default(), &deployment))
        .await
        .unwrap();
    let template_spec = |d: Deployment| d.spec.unwrap().template.spec.unwrap();
    let strategic = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "nginx:1.28"},
        {"name": "sidecar", "image": "envoy:1"}
    ]}}}});
    let patched =
        within(deployments.patch("d", &PatchParams::default(), &Patch::Strategic(&strategic)))
            .await
            .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    let containers = template_spec(patched).containers;
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1.28"));
    assert_eq!(containers[1].name, "sidecar");

    let delete_sidecar = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "$patch": "delete"}
    ]}}}});
    let patched = within(deployments.patch(
        "d",
        &PatchParams::default(),
        &Patch::Strategic(&delete_sidecar),
    ))
    .await
    .unwrap();
    assert_eq!(template_spec(patched).containers.len(), 1);

    // A JSON merge patch replaces lists.
    let merge_list = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "only", "image": "x"}
    ]}}}});
    let patched =
        within(deployments.patch("d", &PatchParams::default(), &Patch::Merge(&merge_list)))
            .await
            .unwrap();
    assert_eq!(template_spec(patched).containers[0].name, "only");

    // A patch carrying a stale resourceVersion conflicts.
    let stale = json!({"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}});
    let err = status(
        within(pods.patch("p", &PatchParams::default(), &Patch::Merge(&stale)))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);

    // JSON patch (RFC 6902).
    let path = "/api/v1/namespaces/default/pods/p";
    let ops = br#"[{"op": "add", "path": "/metadata/labels/d", "value": "4"}, {"op": "remove", "path": "/metadata/labels/b"}]"#;
    let response = raw(
        &server,
        "PATCH",
        path,
        &[("Content-Type", "application/json-patch+json")],
        ops,
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json()["metadata"]["labels"],
        json!({"c": "3", "d": "4"})
    );
    let failing = br#"[{"op": "test", "path": "/metadata/name", "value": "other"}]"#;
    raw(
        &server,
        "PATCH",
        path,
        &[("Content-Type", "application/json-patch+json")],
        failing,
    )
    .await
    .assert_status(422, "Invalid");

    let missing = status(
        within(pods.patch("missing", &PatchParams::default(), &Patch::Merge(&merge)))
            .await
            .unwrap_err(),
    );
    assert_eq!(missing.code, 404);
}

#[tokio::test]
async fn server_side_apply_creates_and_merges() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"a": "1"}
    });
    let params = PatchParams::apply("test-manager");
    let created = within(maps.patch("applied", &params, &Patch::Apply(&config)))
        .await
        .unwrap();
    assert_eq!(created.data.unwrap()["a"], "1");
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"b": "2"}
    });
    let merged = within(maps.patch("applied", &params, &Patch::Apply(&config)))
        .await
        .unwrap();
    assert_eq!(merged.data.unwrap()["b"], "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_turn_deletes_into_marks() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut body = pod("guarded", &[]);
    body.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
    let created = within(pods.create(&PostParams::default(), &body))
        .await
        .unwrap();
    let mut events = within(pods.watch(
        &WatchParams::default().disable_bookmarks(),
        created.metadata.resource_version.as_deref().unwrap(),
    ))
    .await
    .unwrap()
    .boxed();

    let deleted = within(pods.delete("guarded", &DeleteParams::default()))
        .await
        .unwrap();
    let marked = deleted.left().expect("the marked object is returned");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.deletion_grace_period_seconds, Some(0));
    let still_there = within(pods.get("guarded")).await.unwrap();
    assert!(still_there.metadata.deletion_timestamp.is_some());
    // Deleting again changes nothing.
    let again = within(pods.delete("guarded", &DeleteParams::default()))
        .await
        .unwrap();
    assert_eq!(
        again.left().unwrap().metadata.resource_version,
        still_there.metadata.resource_version
    );

    let clear = json!({"metadata": {"finalizers": null}});
    within(pods.patch("guarded", &PatchParams::default(), &Patch::Merge(&clear)))
        .await
        .unwrap();
    assert_eq!(
        status(within(pods.get("guarded")).await.unwrap_err()).code,
        404
    );

    let mut seen = Vec::new();
    for _ in 0..2 {
        match within(events.try_next()).await.unwrap().unwrap() {
            WatchEvent::Modified(p) => {
                seen.push(("MODIFIED", p.metadata.deletion_timestamp.is_some()))
            }
            WatchEvent::Deleted(p) => {
                seen.push(("DELETED", p.metadata.deletion_timestamp.is_some()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, [("MODIFIED", true), ("DELETED", true)]);
}

/// The Pod strategy's `CheckGracefulDelete` makes every Pod delete graceful; with period 0
/// (an unscheduled Pod; here every Pod, as no kubelet runs) the registry first writes the
/// mark (`deletionTimestamp`, `deletionGracePeriodSeconds: 0`, the next `generation`), then
/// deletes the marked Pod, and answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_delete_is_graceful_with_period_0_marked_then_deleted() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut scheduled = pod("scheduled", &[]);
    scheduled.spec.as_mut().unwrap().node_name = Some("node-1".into());
    let mut created = Vec::new();
    for body in [pod("unscheduled", &[]), scheduled] {
        created.push(
            within(pods.create(&PostParams::default(), &body))
                .await
                .unwrap(),
        );
    }
    let after: u64 = created[1]
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    let mut events = within(pods.watch(
        &WatchParams::default().disable_bookmarks(),
        &after.to_string(),
    ))
    .await
    .unwrap()
    .boxed();

    // A dry run writes nothing and answers the marked Pod.
    let dry = within(pods.delete("unscheduled", &DeleteParams::default().dry_run()))
        .await
        .unwrap()
        .left()
        .expect("the Pod");
    assert!(dry.metadata.deletion_timestamp.is_some());
    assert_eq!(dry.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(dry.metadata.generation, Some(2));
    let unchanged = within(pods.get("unscheduled")).await.unwrap();
    assert_eq!(unchanged.metadata.deletion_timestamp, None);
    assert_eq!(
        unchanged.metadata.resource_version,
        created[0].metadata.resource_version
    );

    let mut revision = after;
    for (name, created) in ["unscheduled", "scheduled"].into_iter().zip(&created) {
        let answer = within(pods.delete(name, &DeleteParams::default()))
            .await
            .unwrap()
            .left()
            .expect("the Pod");
        assert!(answer.metadata.deletion_timestamp.is_some(), "{name}");
        assert_eq!(answer.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(answer.metadata.generation, Some(2));
        assert_eq!(answer.metadata.uid, created.metadata.uid);
        assert_eq!(status(within(pods.get(name)).await.unwrap_err()).code, 404);
        let modified = match within(events.try_next()).await.unwrap().unwrap() {
            WatchEvent::Modified(p) => p,
            other => panic!("expected MODIFIED of {name}, got {other:?}"),
        };
        let deleted = match within(events.try_next()).await.unwrap().unwrap() {
            WatchEvent::Deleted(p) => p,
            other => panic!("expected DELETED of {name}, got {other:?}"),
        };
        assert_eq!(modified.metadata.name.as_deref(), Some(name));
        assert_eq!(
            modified.metadata.resource_version,
            Some((revision + 1).to_string())
        );
        assert_eq!(
            modified.metadata.deletion_timestamp,
            answer.metadata.deletion_timestamp
        );
        assert_eq!(modified.metadata.deletion_grace_period_seconds, Some(0));
        assert_eq!(modified.metadata.generation, Some(2));
        // The DELETED event is the marked Pod at the next version; the answer too.
        assert_eq!(
            deleted.metadata.resource_version,
            Some((revision + 2).to_string())
        );
        assert_eq!(
            deleted.metadata.deletion_timestamp,
            modified.metadata.deletion_timestamp
        );
        assert_eq!(deleted.metadata.generation, Some(2));
        assert_eq!(
            answer.metadata.resource_version,
            deleted.metadata.resource_version
        );
        revision += 2;
    }

    // A collection's Pods go the same way, one after the other.
    for name in ["c1", "c2"] {
        within(pods.create(&PostParams::default(), &pod(name, &[("set", "c")])))
            .await
            .unwrap();
    }
    within(pods.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("set=c"),
    ))
    .await
    .unwrap();
    let mut seen = Vec::new();
    for _ in 0..6 {
        match within(events.try_next()).await.unwrap().unwrap() {
            WatchEvent::Added(p) => seen.push(("ADDED", p.metadata.name.unwrap())),
            WatchEvent::Modified(p) => {
                assert!(p.metadata.deletion_timestamp.is_some());
                seen.push(("MODIFIED", p.metadata.name.unwrap()))
            }
            WatchEvent::Deleted(p) => {
                assert!(p.metadata.deletion_timestamp.is_some());
                seen.push(("DELETED", p.metadata.name.unwrap()))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let seen: Vec<(&str, &str)> = seen.iter().map(|(e, n)| (*e, n.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "c1"),
            ("ADDED", "c2"),
            ("MODIFIED", "c1"),
            ("DELETED", "c1"),
            ("MODIFIED", "c2"),
            ("DELETED", "c2"),
        ]
    );
}

#[tokio::test]
async fn deletes() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = within(maps.create(
        &PostParams::default(),
        &ConfigMap {
            metadata: meta("c"),
            ..ConfigMap::default()
        },
    ))
    .await
    .unwrap();
    // ConfigMap deletes answer with a Success status; pod deletes with the object.
    let result = within(maps.delete("c", &DeleteParams::default()))
        .await
        .unwrap();
    let done = result.right().expect("a Status");
    assert_eq!(done.details.unwrap().uid, created.metadata.uid.unwrap());
    assert_eq!(
        status(
            within(maps.delete("c", &DeleteParams::default()))
                .await
                .unwrap_err()
        )
        .code,
        404
    );

    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    let result = within(pods.delete("p", &DeleteParams::default()))
        .await
        .unwrap();
    assert_eq!(
        result.left().expect("the pod").metadata.name.as_deref(),
        Some("p")
    );

    // Preconditions.
    let p = within(pods.create(&PostParams::default(), &pod("q", &[])))
        .await
        .unwrap();
    let wrong_uid = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    // Worded as `rest.BeforeDelete` words them, naming the kind.
    let err = status(within(pods.delete("q", &wrong_uid)).await.unwrap_err());
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on Pod \"q\": the UID in the precondition (not-the-uid) does not match the UID in record ({}). The object might have been deleted and then recreated",
            p.metadata.uid.as_deref().unwrap()
        )
    );
    assert_eq!(err.details.as_ref().unwrap().kind, "Pod");
    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        }),
        ..DeleteParams::default()
    };
    let err = status(within(pods.delete("q", &stale)).await.unwrap_err());
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on Pod \"q\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified",
            p.metadata.resource_version.as_deref().unwrap()
        )
    );
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: p.metadata.uid.clone(),
            resource_version: p.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    within(pods.delete("q", &right)).await.unwrap();

    // Delete collection with a selector.
    for (name, app) in [("w1", "web"), ("w2", "web"), ("d1", "db")] {
        within(pods.create(&PostParams::default(), &pod(name, &[("app", app)])))
            .await
            .unwrap();
    }
    within(pods.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=web"),
    ))
    .await
    .unwrap();
    let left = within(pods.list(&ListParams::default())).await.unwrap();
    assert_eq!(names(&left.items), ["d1"]);
}

#[tokio::test]
async fn every_builtin_type_round_trips() {
    let server = server().await;
    let client = server.client();
    let pp = PostParams::default();
    let ns: Api<Namespace> = Api::all(client.clone());
    let created = within(ns.create(
        &pp,
        &Namespace {
            metadata: meta("team-a"),
            ..Namespace::default()
        },
    ))
    .await
    .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    assert!(created.metadata.namespace.is_none());

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team-a");
    within(secrets.create(
        &pp,
        &Secret {
            metadata: meta("s"),
            type_: Some("Opaque".into()),
            ..Secret::default()
        },
    ))
    .await
    .unwrap();
    let by_type = within(secrets.list(&ListParams::default().fields("type=Opaque")))
        .await
        .unwrap();
    assert_eq!(names(&by_type.items), ["s"]);
    let services: Api<Service> = Api::namespaced(client.clone(), "team-a");
    within(services.create(
        &pp,
        &Service {
            metadata: meta("svc"),
            ..Service::default()
        },
    ))
    .await
    .unwrap();
    let events: Api<Event> = Api::namespaced(client.clone(), "team-a");
    let mut event = Event {
        metadata: meta("e"),
        reason: Some("Started".into()),
        ..Event::default()
    };
    event.involved_object.kind = Some("Pod".into());
    event.involved_object.name = Some("p".into());
    // Without an event time, the involved object's namespace must be the event's.
    event.involved_object.namespace = Some("team-a".into());
    within(events.create(&pp, &event)).await.unwrap();
    let by_object = within(
        events.list(&ListParams::default().fields("involvedObject.kind=Pod,reason=Started")),
    )
    .await
    .unwrap();
    assert_eq!(names(&by_object.items), ["e"]);
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "team-a");
    within(replica_sets.create(
        &pp,
        &ReplicaSet {
            metadata: meta("rs"),
            ..ReplicaSet::default()
        },
    ))
    .await
    .unwrap();
    let leases: Api<Lease> = Api::namespaced(client.clone(), "team-a");
    within(leases.create(
        &pp,
        &Lease {
            metadata: meta("leader"),
            ..Lease::default()
        },
    ))
    .await
    .unwrap();
    let lease = within(leases.get("leader")).await.unwrap();
    assert_eq!(lease.metadata.namespace.as_deref(), Some("team-a"));
}

/// Creates `object` through `api` (kube's typed client) and reads it back.
async fn round_trip<K>(api: Api<K>, object: serde_json::Value) -> K
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let body: K = serde_json::from_value(object).unwrap();
    let name = body.meta().name.clone().unwrap();
    within(api.create(&PostParams::default(), &body))
        .await
        .unwrap();
    within(api.get(&name)).await.unwrap()
}

#[tokio::test]
async fn jobs_rbac_storage_nodes_ingresses_and_budgets_round_trip_with_their_defaults() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    use k8s_openapi::api::batch::v1::{CronJob, Job};
    use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, ServiceAccount};
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    let server = server().await;
    let client = server.client();
    within(Api::<Namespace>::all(client.clone()).create(
        &PostParams::default(),
        &Namespace {
            metadata: meta("team-b"),
            ..Namespace::default()
        },
    ))
    .await
    .unwrap();
    let template = json!({"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "restartPolicy": "Never"}});

    let job: Job = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "once", "namespace": "team-b"},
        "spec": {"template": template}}),
    )
    .await;
    let uid = job.metadata.uid.clone().unwrap();
    // The Job takes its template's labels, the generated ones included (as the real server
    // reads it back from storage), so `kubectl get jobs -l job-name=once` finds it.
    let job_labels = job.metadata.labels.clone().unwrap_or_default();
    assert_eq!(job_labels.get("job-name").map(String::as_str), Some("once"));
    assert_eq!(
        job_labels.get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    let spec = job.spec.unwrap();
    assert_eq!(
        (spec.completions, spec.parallelism, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
    assert_eq!(spec.manual_selector, Some(false));
    let selector = spec.selector.unwrap().match_labels.unwrap();
    assert_eq!(
        selector.get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    let labels = spec.template.metadata.unwrap().labels.unwrap();
    assert_eq!(labels.get("job-name").map(String::as_str), Some("once"));
    assert_eq!(labels.get("controller-uid"), Some(&uid));
    let jobs: Api<Job> = Api::namespaced(client.clone(), "team-b");
    let unfinished = within(jobs.list(&ListParams::default().fields("status.successful=0")))
        .await
        .unwrap();
    assert_eq!(names(&unfinished.items), ["once"]);

    let cron: CronJob = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "nightly", "namespace": "team-b"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": template}}}}),
    )
    .await;
    let spec = cron.spec.unwrap();
    assert_eq!(spec.concurrency_policy.as_deref(), Some("Allow"));
    assert_eq!(
        (
            spec.successful_jobs_history_limit,
            spec.failed_jobs_history_limit
        ),
        (Some(3), Some(1))
    );
    assert_eq!(
        spec.job_template.spec.unwrap().backoff_limit,
        None,
        "a job template gets no Job defaults"
    );

    let daemons: DaemonSet = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "agent", "namespace": "team-b"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": template["spec"]}},
        "status": {"numberReady": 5}}),
    )
    .await;
    assert_eq!(
        daemons
            .spec
            .unwrap()
            .update_strategy
            .unwrap()
            .type_
            .as_deref(),
        Some("RollingUpdate")
    );
    assert_eq!(
        daemons.status.unwrap().number_ready,
        0,
        "the status sent is dropped"
    );

    let claim: PersistentVolumeClaim = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "data", "namespace": "team-b"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    assert_eq!(
        claim.spec.unwrap().volume_mode.as_deref(),
        Some("Filesystem")
    );
    assert_eq!(claim.status.unwrap().phase.as_deref(), Some("Pending"));

    let account: ServiceAccount = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "bot", "namespace": "team-b"}}),
    )
    .await;
    assert_eq!(account.metadata.namespace.as_deref(), Some("team-b"));
    let rule = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let _: Role = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "reader", "namespace": "team-b"}, "rules": rule}),
    )
    .await;
    let binding: RoleBinding = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "bot-reads", "namespace": "team-b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": "team-b"}]}),
    )
    .await;
    assert_eq!(binding.role_ref.name, "reader");
    let role: ClusterRole = round_trip(
        Api::all(client.clone()),
        json!({"metadata": {"name": "node-reader"}, "rules": rule}),
    )
    .await;
    assert!(role.metadata.namespace.is_none());
    let _: ClusterRoleBinding = round_trip(Api::all(client.clone()), json!({"metadata": {"name": "alice-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]})).await;
    let node: Node = round_trip(
        Api::all(client.clone()),
        json!({"metadata": {"name": "node-1"}, "spec": {"unschedulable": true}}),
    )
    .await;
    let nodes: Api<Node> = Api::all(client.clone());
    let cordoned = within(nodes.list(&ListParams::default().fields("spec.unschedulable=true")))
        .await
        .unwrap();
    assert_eq!(names(&cordoned.items), [node.metadata.name.unwrap()]);
    let ingress: Ingress = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "web", "namespace": "team-b"},
        "spec": {"rules": [{"host": "example.com"}]}}),
    )
    .await;
    assert!(ingress.status.is_some());
    let budget: PodDisruptionBudget = round_trip(
        Api::namespaced(client.clone(), "team-b"),
        json!({"metadata": {"name": "web", "namespace": "team-b"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    )
    .await;
    assert_eq!(budget.status.unwrap().disruptions_allowed, 0);
}

#[tokio::test]
async fn resource_versions_are_shared_across_types() {
    let server = server().await;
    let client = server.client();
    let pp = PostParams::default();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut versions = Vec::new();
    for i in 0..3 {
        let cm = within(maps.create(
            &pp,
            &ConfigMap {
                metadata: meta(&format!("c{i}")),
                ..ConfigMap::default()
            },
        ))
        .await
        .unwrap();
        let p = within(pods.create(&pp, &pod(&format!("p{i}"), &[])))
            .await
            .unwrap();
        let l = within(leases.create(
            &pp,
            &Lease {
                metadata: meta(&format!("l{i}")),
                ..Lease::default()
            },
        ))
        .await
        .unwrap();
        for rv in [
            cm.metadata.resource_version,
            p.metadata.resource_version,
            l.metadata.resource_version,
        ] {
            versions.push(rv.unwrap().parse::<u64>().unwrap());
        }
    }
    assert!(
        versions.windows(2).all(|w| w[1] == w[0] + 1),
        "{versions:?}"
    );
    assert_eq!(*versions.last().unwrap(), server.resource_version());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources() {
    let server = server_with_widgets().await;
    server
        .register_custom_resource(CustomResourceSpec::cluster_scoped(
            "example.com",
            "v1",
            "Zone",
            "zones",
        ))
        .unwrap();
    assert!(
        server
            .register_custom_resource(CustomResourceSpec::namespaced(
                "apps",
                "v1",
                "X",
                "deployments"
            ))
            .is_err()
    );

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let mut widget = DynamicObject::new("w1", &resource);
    widget.data = json!({"spec": {"size": 1}});
    let created = within(widgets.create(&PostParams::default(), &widget))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let mut events = within(widgets.watch(
        &WatchParams::default().disable_bookmarks(),
        created.metadata.resource_version.as_deref().unwrap(),
    ))
    .await
    .unwrap()
    .boxed();

    let patch = json!({"spec": {"size": 2}, "status": {"ready": true}});
    let patched = within(widgets.patch("w1", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["size"], 2);
    assert!(patched.data.get("status").is_none());
    assert_eq!(patched.metadata.generation, Some(2));
    let patched =
        within(widgets.patch_status("w1", &PatchParams::default(), &Patch::Merge(&patch)))
            .await
            .unwrap();
    assert_eq!(patched.data["status"]["ready"], true);
    assert_eq!(patched.metadata.generation, Some(2));

    // Like the real server, custom resources reject strategic merge patches.
    let err = status(
        within(widgets.patch("w1", &PatchParams::default(), &Patch::Strategic(&patch)))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 415);

    match within(events.try_next()).await.unwrap().unwrap() {
        WatchEvent::Modified(w) => assert_eq!(w.data["spec"]["size"], 2),
        other => panic!("unexpected {other:?}"),
    }
    let list = within(widgets.list(&ListParams::default())).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let deleted = within(widgets.delete("w1", &DeleteParams::default()))
        .await
        .unwrap();
    assert!(
        deleted.is_right(),
        "custom resource deletes answer a Status, as on a real server"
    );

    let zone_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Zone"),
        "zones",
    );
    let zones: Api<DynamicObject> = Api::all_with(server.client(), &zone_resource);
    let created = within(zones.create(
        &PostParams::default(),
        &DynamicObject::new("eu", &zone_resource),
    ))
    .await
    .unwrap();
    assert!(created.metadata.namespace.is_none());
    assert_eq!(
        within(zones.list(&ListParams::default()))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn direct_data_access_matches_http() {
    let server = server().await;
    let created = server
        .create_json(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "seeded", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}
        }))
        .unwrap();
    assert_eq!(created["metadata"]["namespace"], "default");
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let fetched = within(pods.get("seeded")).await.unwrap();
    assert_eq!(
        fetched.metadata.uid.as_deref(),
        created["metadata"]["uid"].as_str()
    );

    let mut object = server
        .get_json("v1", "Pod", Some("default"), "seeded")
        .unwrap();
    object["metadata"]["labels"]["app"] = json!("db");
    server.update_json(object.clone()).unwrap();
    let err = server.update_json(object).unwrap_err();
    assert!(
        matches!(err, informer_testing::Error::Api(ref e) if e.code() == 409),
        "{err}"
    );
    let mut object = server
        .get_json("v1", "Pod", Some("default"), "seeded")
        .unwrap();
    object["status"] = json!({"phase": "Running"});
    server.update_status_json(object).unwrap();
    assert_eq!(
        within(pods.get("seeded"))
            .await
            .unwrap()
            .status
            .unwrap()
            .phase
            .as_deref(),
        Some("Running")
    );
    assert_eq!(server.list_json("v1", "Pod", None).unwrap().len(), 1);
    server
        .delete_json("v1", "Pod", Some("default"), "seeded")
        .unwrap();
    assert!(
        server
            .get_json("v1", "Pod", Some("default"), "seeded")
            .is_none()
    );
    assert!(matches!(
        server.create_json(json!({"apiVersion": "v9", "kind": "Nope"})),
        Err(informer_testing::Error::UnknownKind { .. })
    ));
}

#[tokio::test]
async fn a_generated_name_cuts_the_prefix_to_58_bytes() {
    // names.SimpleNameGenerator: the prefix is cut so that the name fits in 63.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut unnamed = pod("x", &[]);
    unnamed.metadata.name = None;
    unnamed.metadata.generate_name = Some("a".repeat(60));
    let generated = within(pods.create(&PostParams::default(), &unnamed))
        .await
        .unwrap();
    let name = generated.metadata.name.unwrap();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"a".repeat(58)), "{name}");
    assert_eq!(
        generated.metadata.generate_name.as_deref(),
        Some("a".repeat(60).as_str())
    );
}

#[tokio::test]
async fn a_dry_run_create_answers_without_a_resource_version() {
    // Nothing is stored: the field is left out rather than "".
    let server = server().await;
    let body = serde_json::to_vec(&pod("dry", &[])).unwrap();
    let response = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods?dryRun=All",
        &[("Content-Type", "application/json")],
        &body,
    )
    .await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    let created = response.json();
    assert_eq!(created["metadata"]["name"], "dry");
    assert!(
        created["metadata"].get("resourceVersion").is_none(),
        "{created}"
    );
}

#[tokio::test]
async fn an_update_cannot_change_the_uid() {
    // ValidateObjectMetaUpdate: 422, the cause listed twice as kube-apiserver validates an
    // update's metadata twice; an empty uid is the object's.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let patch = json!({"metadata": {"uid": "00000000-0000-0000-0000-000000000000"}});
    let err = status(
        within(pods.patch("a", &PatchParams::default(), &Patch::Merge(&patch)))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Pod \"a\" is invalid: metadata.uid: Invalid value: \"00000000-0000-0000-0000-000000000000\": field is immutable"
    );
    assert_eq!(err.details.unwrap().causes.len(), 2);
    let mut unchanged = created.clone();
    unchanged.metadata.uid = Some(String::new());
    let replaced = within(pods.replace("a", &PostParams::default(), &unchanged))
        .await
        .unwrap();
    assert_eq!(replaced.metadata.uid, created.metadata.uid);
}

#[tokio::test]
async fn a_namespaced_built_in_type_is_only_listed_and_watched_across_namespaces() {
    // kube-apiserver registers the path without a namespace for list and watch only: a
    // create or a deletecollection there gets go-restful's 405 and changes nothing.
    let server = server().await;
    let in_default: Api<ConfigMap> = Api::default_namespaced(server.client());
    let kept = ConfigMap {
        metadata: ObjectMeta {
            name: Some("kept".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    within(in_default.create(&PostParams::default(), &kept))
        .await
        .unwrap();
    let all: Api<ConfigMap> = Api::all(server.client());
    let err = within(all.delete_collection(&DeleteParams::default(), &ListParams::default()))
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 405);
    let mut elsewhere = kept.clone();
    elsewhere.metadata.name = Some("nowhere".into());
    let err = within(all.create(&PostParams::default(), &elsewhere))
        .await
        .unwrap_err();
    assert_eq!(status(err).code, 405);
    let response = raw(
        &server,
        "POST",
        "/api/v1/configmaps",
        &[("Content-Type", "application/json")],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}"#,
    )
    .await;
    response.assert_status(405, "MethodNotAllowed");
    assert_eq!(
        response.json()["message"],
        "the server does not allow this method on the requested resource"
    );
    assert_eq!(
        names(
            &within(all.list(&ListParams::default()))
                .await
                .unwrap()
                .items
        ),
        ["kept"]
    );
}

/// etcd3's `Create` refuses an object that carries a non-zero resource version
/// (`ErrResourceVersionSetOnCreate`: a plain error, 500 without a reason), even under a name
/// that exists; a dry run never reaches it and answers the object with the version sent.
#[tokio::test]
async fn a_create_with_a_resource_version_is_refused_as_etcd_refuses_it() {
    let server = server_with_widgets().await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let json_body = [("Content-Type", "application/json")];
    let body = |name: &str, rv: &str| {
        format!(
            r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"{name}","resourceVersion":"{rv}"}}}}"#
        )
    };
    let refused = raw(
        &server,
        "POST",
        path,
        &json_body,
        body("w1", "5").as_bytes(),
    )
    .await;
    assert_eq!(refused.status, 500);
    let status = refused.json();
    assert_eq!(
        status["message"],
        "resourceVersion should not be set on objects to be created"
    );
    assert!(status.get("reason").is_none(), "{status}");
    assert!(
        server
            .get_json("example.com/v1", "Widget", Some("default"), "w1")
            .is_none()
    );

    let dry = raw(
        &server,
        "POST",
        &format!("{path}?dryRun=All"),
        &json_body,
        body("w1", "5").as_bytes(),
    )
    .await;
    assert_eq!(dry.status, 201);
    assert_eq!(dry.json()["metadata"]["resourceVersion"], "5");

    // A version that is no number is not one: the object is created.
    let created = raw(
        &server,
        "POST",
        path,
        &json_body,
        body("w1", "abc").as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    assert_ne!(created.json()["metadata"]["resourceVersion"], "abc");
    let again = raw(
        &server,
        "POST",
        path,
        &json_body,
        body("w1", "5").as_bytes(),
    )
    .await;
    assert_eq!(again.status, 500, "before the name is found taken");
}

/// The CRD handler's status and scale subresources serve get, update and patch; any other
/// verb is `NewMethodNotSupported` of the verb `RequestInfoFactory` found.
#[tokio::test]
async fn verbs_a_custom_resources_status_lacks_are_405_naming_the_verb() {
    let server = server_with_widgets().await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let json_body = [("Content-Type", "application/json")];
    server
        .create_json(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"}}))
        .expect("created");
    for (method, verb) in [("POST", "create"), ("DELETE", "delete")] {
        let response = raw(
            &server,
            method,
            &format!("{path}/w1/status"),
            &json_body,
            b"{}",
        )
        .await;
        response.assert_status(405, "MethodNotAllowed");
        let status = response.json();
        assert_eq!(
            status["message"],
            format!("{verb} is not supported on resources of kind \"widgets.example.com\"")
        );
        assert_eq!(
            status["details"],
            json!({"group": "example.com", "kind": "widgets"})
        );
    }
}

/// `transformObject` of one custom resource asked for as a `PartialObjectMetadataList`: the
/// unstructured object is a `ListInterface`, so `EachListItem` fails (500, no reason); and
/// metadata and Tables come in the `meta.k8s.io` version asked for.
#[tokio::test]
async fn metadata_answers_of_custom_resources_follow_the_media_type_asked_for() {
    let server = server_with_widgets().await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    server
        .create_json(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"}}))
        .expect("created");
    let accept = |as_: &str, v: &str| format!("application/json;as={as_};g=meta.k8s.io;v={v}");

    let list_of_one = raw(
        &server,
        "GET",
        &format!("{path}/w1"),
        &[("Accept", &accept("PartialObjectMetadataList", "v1"))],
        b"",
    )
    .await;
    assert_eq!(list_of_one.status, 500);
    assert_eq!(list_of_one.json()["message"], "content is not a list");
    assert!(list_of_one.json().get("reason").is_none());

    let one = raw(
        &server,
        "GET",
        &format!("{path}/w1"),
        &[("Accept", &accept("PartialObjectMetadata", "v1beta1"))],
        b"",
    )
    .await
    .json();
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1beta1");
    let list = raw(
        &server,
        "GET",
        path,
        &[("Accept", &accept("PartialObjectMetadataList", "v1beta1"))],
        b"",
    )
    .await
    .json();
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(list["items"][0]["apiVersion"], "meta.k8s.io/v1beta1");
    let table = raw(
        &server,
        "GET",
        &format!("{path}?includeObject=Metadata"),
        &[("Accept", &accept("Table", "v1beta1"))],
        b"",
    )
    .await
    .json();
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(
        table["rows"][0]["object"]["apiVersion"],
        "meta.k8s.io/v1beta1"
    );
    let v1 = raw(
        &server,
        "GET",
        &format!("{path}/w1"),
        &[("Accept", &accept("PartialObjectMetadata", "v1"))],
        b"",
    )
    .await
    .json();
    assert_eq!(v1["apiVersion"], "meta.k8s.io/v1");
}
