//! What a real server stores differs from what a client sent, as it decodes every write of
//! a built-in type into its Go struct and encodes it back: empty `omitempty` lists and maps
//! disappear (fields not tagged so keep their `[]`), resource quantities are written in
//! canonical form, and timestamps in UTC at their type's precision. Through a typed client and raw JSON, on create, update, patch and
//! apply; managed fields record what is stored.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod};
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::{raw, server, within};

const JSON: [(&str, &str); 1] = [("Content-Type", "application/json")];

/// The fields an entry of `managedFields` records, by manager.
fn fields_of(object: &Value, manager: &str) -> Value {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn empty_omitempty_maps_of_a_created_config_map_are_not_stored() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "annotations": {}, "labels": {"app": "c"}},
        "data": {}, "binaryData": {}
    });
    let created = raw(
        &server,
        "POST",
        &format!("{path}?fieldManager=creator"),
        &JSON,
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    let created = created.json();
    let meta = created["metadata"].as_object().unwrap();
    assert!(!meta.contains_key("annotations"), "{created}");
    assert_eq!(meta["labels"], json!({"app": "c"}));
    assert!(created.get("data").is_none(), "{created}");
    assert!(created.get("binaryData").is_none(), "{created}");
    // The creator's fields are what was stored: no `f:annotations`, no `f:data`.
    let fields = fields_of(&created, "creator");
    assert_eq!(
        fields["f:metadata"],
        json!({"f:labels": {".": {}, "f:app": {}}})
    );
    assert!(fields.get("f:data").is_none(), "{fields}");

    let read = raw(&server, "GET", &format!("{path}/c"), &[], b"")
        .await
        .json();
    assert!(read["metadata"].get("annotations").is_none(), "{read}");
    assert!(read.get("data").is_none(), "{read}");
}

#[tokio::test]
async fn a_null_in_a_map_or_list_is_stored_as_its_zero_value_and_typed_clients_read_it() {
    let server = server().await;
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nulls", "labels": {"app": null}},
        "data": {"a": null, "b": "x"}
    });
    let created = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &JSON,
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    let created = created.json();
    assert_eq!(created["metadata"]["labels"], json!({"app": ""}));
    assert_eq!(created["data"], json!({"a": "", "b": "x"}));
    // A typed client (k8s-openapi's `BTreeMap<String, String>`) reads it.
    let typed: ConfigMap = Api::default_namespaced(server.client())
        .get("nulls")
        .await
        .unwrap();
    assert_eq!(typed.data.unwrap()["a"], "");

    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx", "args": [null, "x"],
            "resources": {"limits": {"cpu": null, "memory": "1Gi"}}}]}
    });
    let created = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods",
        &JSON,
        pod.to_string().as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    let container = &created.json()["spec"]["containers"][0];
    assert_eq!(
        container["resources"]["limits"],
        json!({"cpu": "0", "memory": "1Gi"})
    );
    assert_eq!(container["args"], json!(["", "x"]));
}

#[tokio::test]
async fn a_merge_patch_leaves_no_empty_annotations() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut body = ConfigMap::default();
    body.metadata.name = Some("c".into());
    within(maps.create(&PostParams::default(), &body))
        .await
        .unwrap();
    let patched = within(maps.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {}}, "data": {}})),
    ))
    .await
    .unwrap();
    assert_eq!(patched.metadata.annotations, None);
    assert_eq!(patched.data, None);
    let raw_read = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/c",
        &[],
        b"",
    )
    .await
    .json();
    assert!(raw_read["metadata"].get("annotations").is_none());
    // An update sending them empty stores them absent too.
    let mut update = raw_read.clone();
    update["metadata"]["labels"] = json!({});
    update["binaryData"] = json!({});
    let updated = raw(
        &server,
        "PUT",
        "/api/v1/namespaces/default/configmaps/c",
        &JSON,
        update.to_string().as_bytes(),
    )
    .await
    .json();
    assert!(updated["metadata"].get("labels").is_none(), "{updated}");
    assert!(updated.get("binaryData").is_none(), "{updated}");
}

#[tokio::test]
async fn empty_lists_and_maps_of_a_deployment_template_are_not_stored() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let body: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}, "annotations": {}},
                "spec": {
                    "nodeSelector": {},
                    "containers": [{"name": "app", "image": "nginx", "env": [], "args": []}]
                }
            }
        }
    }))
    .unwrap();
    within(deployments.create(&PostParams::default(), &body))
        .await
        .unwrap();
    let stored = raw(
        &server,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/d",
        &[],
        b"",
    )
    .await
    .json();
    let template = &stored["spec"]["template"];
    assert!(
        template["metadata"].get("annotations").is_none(),
        "{stored}"
    );
    assert!(template["spec"].get("nodeSelector").is_none(), "{stored}");
    let container = &template["spec"]["containers"][0];
    assert!(container.get("env").is_none(), "{stored}");
    assert!(container.get("args").is_none(), "{stored}");
    assert_eq!(container["image"], "nginx");
}

#[tokio::test]
async fn lists_not_tagged_omitempty_keep_an_empty_list_and_an_absent_one_is_null() {
    let server = server().await;
    let path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let body = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "empty"}, "rules": []});
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["rules"], json!([]));
    let body = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "absent"}});
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    // Go's JSON writes a nil slice not tagged omitempty as null.
    assert_eq!(created.json().get("rules"), Some(&Value::Null));
    let roles: Api<Role> = Api::namespaced(server.client(), "default");
    let role = within(roles.get("empty")).await.unwrap();
    assert_eq!(role.rules, Some(Vec::new()));
}

#[tokio::test]
async fn resource_quantities_are_stored_in_canonical_form() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/pods";
    let body = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{
            "name": "app", "image": "nginx",
            "resources": {
                "limits": {"cpu": "0.5", "memory": 1073741824},
                "requests": {"cpu": "250m", "memory": "1024Mi"}
            }
        }]}
    });
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    let resources = created.json()["spec"]["containers"][0]["resources"].clone();
    assert_eq!(
        resources,
        json!({
            "limits": {"cpu": "500m", "memory": "1073741824"},
            "requests": {"cpu": "250m", "memory": "1Gi"}
        })
    );
    // Typed clients read the canonical strings back.
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let pod = within(pods.get("p")).await.unwrap();
    let limits = pod.spec.unwrap().containers[0]
        .resources
        .clone()
        .unwrap()
        .limits
        .unwrap();
    assert_eq!(limits["cpu"].0, "500m");

    // A claim's storage, through a typed create and a merge patch.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(server.client(), "default");
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2048Mi"}}}
    }))
    .unwrap();
    let created = within(claims.create(&PostParams::default(), &claim))
        .await
        .unwrap();
    let storage = |claim: &PersistentVolumeClaim| {
        claim
            .spec
            .as_ref()
            .unwrap()
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap()["storage"]
            .0
            .clone()
    };
    assert_eq!(storage(&created), "2Gi");
    let patched = within(claims.patch(
        "data",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"resources": {"requests": {"storage": "0.5Ti"}}}})),
    ))
    .await
    .unwrap();
    assert_eq!(storage(&patched), "512Gi");
}

#[tokio::test]
async fn server_side_apply_stores_the_normalized_object() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "applied", "annotations": {}},
        "data": {}
    });
    let applied = within(maps.patch(
        "applied",
        &PatchParams::apply("applier"),
        &Patch::Apply(config),
    ))
    .await
    .unwrap();
    assert_eq!(applied.metadata.annotations, None);
    assert_eq!(applied.data, None);
}

/// Timestamps are stored as Go writes `metav1.Time` and `metav1.MicroTime` back: in UTC, to
/// the second and to the microsecond (always six digits). A client that wrote a Lease's
/// `renewTime` without fractions, or with an offset, reads the canonical form back.
#[tokio::test]
async fn timestamps_are_stored_in_utc_at_their_types_precision() {
    let server = server().await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let body = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock"},
        "spec": {
            "holderIdentity": "a",
            "acquireTime": "2024-01-01T02:00:00.5+02:00",
            "renewTime": "2024-01-01T00:00:00Z",
        }
    });
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    let spec = created.json()["spec"].clone();
    assert_eq!(spec["acquireTime"], "2024-01-01T00:00:00.500000Z");
    assert_eq!(spec["renewTime"], "2024-01-01T00:00:00.000000Z");

    let status = json!({"status": {"startTime": "2024-01-01T10:00:00.999+02:00"}});
    within(
        Api::<Pod>::namespaced(server.client(), "default").create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}
            }))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    let patched = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/pods/p/status",
        &[("Content-Type", "application/merge-patch+json")],
        status.to_string().as_bytes(),
    )
    .await;
    assert_eq!(patched.status, 200);
    assert_eq!(
        patched.json()["status"]["startTime"],
        "2024-01-01T08:00:00Z"
    );
}

#[tokio::test]
async fn struct_fields_go_never_leaves_out_read_back_empty() {
    // A real server writes every struct field of the Go type, and every field not tagged
    // omitempty: typed clients (Python's `node.status.node_info.kubelet_version`) read them.
    let server = server().await;
    let body = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
    let created = raw(
        &server,
        "POST",
        "/api/v1/nodes",
        &JSON,
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(created.status, 201);
    let node = created.json();
    assert_eq!(
        node["spec"],
        json!({"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]}),
        "TaintNodesByCondition's taint, nothing else"
    );
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "");
    assert_eq!(node["status"]["nodeInfo"]["machineID"], "");

    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    let deployment = created.json();
    let template = &deployment["spec"]["template"];
    // ObjectMeta's creationTimestamp is `omitzero` (1.34+): a template has none, not null.
    assert!(template["metadata"].get("creationTimestamp").is_none());
    assert_eq!(template["spec"]["containers"][0]["resources"], json!({}));
    // What the object has is kept: the labels, the image.
    assert_eq!(template["metadata"]["labels"]["app"], "web");
    // An update that leaves the fields out changes nothing: no new generation.
    let generation = deployment["metadata"]["generation"].clone();
    let mut update = body.clone();
    update["metadata"]["resourceVersion"] = deployment["metadata"]["resourceVersion"].clone();
    let updated = raw(
        &server,
        "PUT",
        &format!("{path}/web"),
        &JSON,
        update.to_string().as_bytes(),
    )
    .await;
    assert_eq!(updated.status, 200);
    assert_eq!(updated.json()["metadata"]["generation"], generation);
}

#[tokio::test]
async fn a_patch_that_sends_what_is_stored_again_writes_nothing() {
    // kubectl apply of an unchanged manifest replaces lists without a merge key whole
    // (`volumeClaimTemplates`): the sent list lacks the fields Go fills in, and must still
    // compare equal to the stored one, as after the real server's round trip.
    let server = server().await;
    let claim = json!({"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let body = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "db", "image": "postgres"}]}},
                 "volumeClaimTemplates": [claim]}});
    let path = "/apis/apps/v1/namespaces/default/statefulsets";
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    let version = created.json()["metadata"]["resourceVersion"].clone();
    let patch = json!({"spec": {"volumeClaimTemplates": [claim]}});
    let patched = raw(
        &server,
        "PATCH",
        &format!("{path}/db?fieldManager=kubectl-client-side-apply"),
        &[("Content-Type", "application/strategic-merge-patch+json")],
        patch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["metadata"]["resourceVersion"], version);

    // An EndpointSlice's endpoints (an atomic list) read back with `conditions: {}`.
    let endpoints = json!([{"addresses": ["10.0.0.1"]}]);
    let body = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-1"}, "addressType": "IPv4", "endpoints": endpoints});
    let path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    assert_eq!(created.json()["endpoints"][0]["conditions"], json!({}));
    let version = created.json()["metadata"]["resourceVersion"].clone();
    let patch = json!({"endpoints": endpoints});
    let patched = raw(
        &server,
        "PATCH",
        &format!("{path}/web-1?fieldManager=kubectl-client-side-apply"),
        &[("Content-Type", "application/merge-patch+json")],
        patch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["metadata"]["resourceVersion"], version);
}

#[tokio::test]
async fn a_grpc_probe_defaults_its_service_to_the_empty_string() {
    let server = server().await;
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "api"},
        "spec": {"containers": [{"name": "api", "image": "api",
            "readinessProbe": {"grpc": {"port": 9000}}}]}});
    let path = "/api/v1/namespaces/default/pods";
    let created = raw(&server, "POST", path, &JSON, body.to_string().as_bytes()).await;
    assert_eq!(created.status, 201);
    let probe = &created.json()["spec"]["containers"][0]["readinessProbe"];
    assert_eq!(probe["grpc"], json!({"port": 9000, "service": ""}));
}
