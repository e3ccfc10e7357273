//! Validation failures as kube-apiserver reports them (422 with `details.causes`), JSON
//! patches that cannot reach a panic, and which types keep `metadata.generation`.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use super::common::{pod, raw, server, status, within};

#[tokio::test]
async fn invalid_objects_get_422_with_one_cause_per_failure() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut bad = pod("web", &[("bad key", "x")]);
    let spec = bad.spec.as_mut().unwrap();
    spec.containers.push(spec.containers[0].clone());
    let err = status(
        within(pods.create(&PostParams::default(), &bad))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message
            .starts_with("Pod \"web\" is invalid: [metadata.labels: Invalid value: \"bad key\": "),
        "{}",
        err.message
    );
    let details = err.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("web", "Pod")
    );
    let causes: Vec<(String, String, String)> = details
        .causes
        .iter()
        .map(|c| (c.reason.clone(), c.field.clone(), c.message.clone()))
        .collect();
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert_eq!(causes[0].0, "FieldValueInvalid");
    assert_eq!(causes[0].1, "metadata.labels");
    assert_eq!(
        causes[1],
        (
            "FieldValueDuplicate".to_string(),
            "spec.containers[1].name".to_string(),
            "Duplicate value: \"app\"".to_string()
        )
    );

    let nameless = status(
        within(pods.create(&PostParams::default(), &Pod::default()))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        nameless.message,
        "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(
        nameless.details.unwrap().causes[0].reason,
        "FieldValueRequired"
    );
}

/// POSTs `body` as JSON to `path`; returns the status code and the response's Status.
async fn post_json(
    server: &informer_testing::TestApiServer,
    path: &str,
    body: &Value,
) -> (u16, Value) {
    let response = raw(
        server,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await;
    (
        response.status,
        serde_json::from_slice(&response.body).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn values_go_cannot_decode_into_the_type_get_400_and_nothing_is_stored() {
    let server = server().await;
    let cases = [
        (
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                   "data": {"port": 8080}}),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "data": {"a": "not base64!!"}}),
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3",
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": "3"}}),
            "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
    ];
    for (path, body, message) in cases {
        let (code, status) = post_json(&server, path, &body).await;
        assert_eq!(code, 400, "{status}");
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(status["message"], message);
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    assert!(
        within(config_maps.get_opt("c")).await.unwrap().is_none(),
        "nothing stored"
    );
    // Lists of the type stay readable by typed clients.
    within(config_maps.list(&Default::default())).await.unwrap();
}

#[tokio::test]
async fn a_patch_leaving_a_value_go_cannot_decode_is_422_on_the_patch() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c".into());
    within(config_maps.create(&PostParams::default(), &cm))
        .await
        .unwrap();
    let err = status(
        within(config_maps.patch(
            "c",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"port": 8080}})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message
            .starts_with(" \"\" is invalid: patch: Invalid value: \"{")
            && err.message.ends_with(
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            ),
        "{}",
        err.message
    );
    assert_eq!(err.details.unwrap().causes[0].field, "patch");
    let stored = within(config_maps.get("c")).await.unwrap();
    assert!(stored.data.is_none(), "nothing stored");
}

#[tokio::test]
async fn a_strategic_patch_leaving_a_value_of_the_wrong_kind_is_422_with_the_converters_words() {
    // kube-apiserver converts a strategically patched map back with the unstructured
    // converter, whose error names Go kinds, and shows the patch as Go prints a map
    // (kubectl's test-cmd greps for `cannot restore map from string`).
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c".into());
    within(config_maps.create(&PostParams::default(), &cm))
        .await
        .unwrap();
    let refused = |patch: Value| {
        let config_maps = config_maps.clone();
        async move {
            status(
                within(config_maps.patch("c", &PatchParams::default(), &Patch::Strategic(patch)))
                    .await
                    .unwrap_err(),
            )
        }
    };
    let err = refused(json!({"metadata": {"labels": "invalid"}})).await;
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        " \"\" is invalid: patch: Invalid value: \"map[metadata:map[labels:invalid]]\": cannot restore map from string"
    );
    assert_eq!(err.details.unwrap().causes[0].field, "patch");
    let err = refused(json!({"data": {"port": 8080}})).await;
    assert!(
        err.message.ends_with(": cannot convert int64 to string"),
        "{}",
        err.message
    );
    let stored = within(config_maps.get("c")).await.unwrap();
    assert!(
        stored.data.is_none() && stored.metadata.labels.is_none(),
        "nothing stored"
    );
}

#[tokio::test]
async fn a_workloads_selector_must_select_its_template_and_never_changes() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment = |selector: Value, labels: Value| -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"selector": selector, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
        }))
        .unwrap()
    };
    let err = status(
        within(deployments.create(
            &PostParams::default(),
            &deployment(
                json!({"matchLabels": {"app": "web"}}),
                json!({"app": "other", "tier": "x"}),
            ),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"other\",\"tier\":\"x\"}: `selector` does not match template `labels`"
    );
    within(deployments.create(
        &PostParams::default(),
        &deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "web"}),
        ),
    ))
    .await
    .unwrap();
    let change = Patch::Merge(json!({"spec": {
        "selector": {"matchLabels": {"app": "web", "v": "2"}},
        "template": {"metadata": {"labels": {"app": "web", "v": "2"}}}}}));
    let err = status(
        within(deployments.patch("web", &PatchParams::default(), &change))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"v\":\"2\"}}: field is immutable"
    );
}

/// What `ValidatePodUpdate` says when anything but the updatable fields changes.
const POD_UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

async fn merge_patch_error<K>(api: &Api<K>, name: &str, patch: Value) -> kube::core::Status
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    status(
        within(api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)))
            .await
            .unwrap_err(),
    )
}

#[tokio::test]
async fn a_pod_update_changes_only_images_a_lower_deadline_and_added_tolerations() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    let allowed = [
        json!({"metadata": {"labels": {"a": "b"}}}),
        json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}),
        json!({"spec": {"activeDeadlineSeconds": 60}}),
        json!({"spec": {"activeDeadlineSeconds": 30}}),
    ];
    for patch in allowed {
        within(pods.patch("p", &PatchParams::default(), &Patch::Strategic(&patch)))
            .await
            .unwrap_or_else(|err| panic!("{patch}: {err}"));
    }
    // The tolerations the admission plugins added stay; another may join them.
    let mut p = within(pods.get("p")).await.unwrap();
    let spec = p.spec.as_mut().unwrap();
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    assert!(
        !tolerations.is_empty(),
        "DefaultTolerationSeconds added some"
    );
    tolerations.push(serde_json::from_value(json!({"key": "k", "operator": "Exists"})).unwrap());
    spec.tolerations = Some(tolerations);
    let p = within(pods.replace("p", &PostParams::default(), &p))
        .await
        .unwrap();
    assert_eq!(p.metadata.generation, Some(5), "each spec change counts");

    let err = merge_patch_error(&pods, "p", json!({"spec": {"activeDeadlineSeconds": 90}})).await;
    assert_eq!(
        err.message,
        "Pod \"p\" is invalid: spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"
    );
    // Removing the added one: `DefaultTolerationSeconds` admits updates too and puts back
    // its own two, not `k`.
    let err = merge_patch_error(&pods, "p", json!({"spec": {"tolerations": []}})).await;
    assert_eq!(
        err.message,
        "Pod \"p\" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
    );
    let env = json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.28",
        "env": [{"name": "A", "value": "1"}]}]}});
    let err = status(
        within(pods.patch("p", &PatchParams::default(), &Patch::Strategic(&env)))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        format!("Pod \"p\" is invalid: spec: Forbidden: {POD_UPDATABLE}")
    );
    let err = merge_patch_error(&pods, "p", json!({"spec": {"nodeName": "n1"}})).await;
    assert_eq!(
        err.message,
        format!("Pod \"p\" is invalid: spec: Forbidden: {POD_UPDATABLE}")
    );
    let sidecar = json!({"spec": {"containers": [{"name": "sidecar", "image": "envoy"}]}});
    let err = status(
        within(pods.patch("p", &PatchParams::default(), &Patch::Strategic(&sidecar)))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Pod \"p\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );
    // The status subresource and metadata are not the spec.
    let running = json!({"status": {"phase": "Running"}});
    within(pods.patch_status("p", &PatchParams::default(), &Patch::Merge(&running)))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_statefulset_update_changes_only_replicas_template_and_the_update_settings() {
    let server = server().await;
    let sets: Api<StatefulSet> = Api::namespaced(server.client(), "default");
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}]}
    }))
    .unwrap();
    within(sets.create(&PostParams::default(), &set))
        .await
        .unwrap();
    let allowed = json!({"spec": {"replicas": 3, "minReadySeconds": 5,
        "template": {"spec": {"containers": [{"name": "db", "image": "postgres:17"}]}},
        "updateStrategy": {"type": "OnDelete"}}});
    within(sets.patch("db", &PatchParams::default(), &Patch::Strategic(&allowed)))
        .await
        .unwrap();
    let forbidden = "StatefulSet.apps \"db\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
    let bigger = json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}]}});
    let err = merge_patch_error(&sets, "db", bigger).await;
    assert_eq!((err.code, err.message.as_str()), (422, forbidden));
    let err = merge_patch_error(&sets, "db", json!({"spec": {"serviceName": "other"}})).await;
    assert_eq!(err.message, forbidden);
}

#[tokio::test]
async fn a_jobs_template_and_selector_are_immutable_unless_suspended_before_it_started() {
    let server = server().await;
    let jobs: Api<Job> = Api::namespaced(server.client(), "default");
    let job = |name: &str, suspend: bool| -> Job {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"suspend": suspend, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox"}]}}}
        }))
        .unwrap()
    };
    within(jobs.create(&PostParams::default(), &job("run", false)))
        .await
        .unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "work", "image": "busybox:2"}]}}}});
    let err = status(
        within(jobs.patch("run", &PatchParams::default(), &Patch::Strategic(&image)))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Job.batch \"run\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"
    );
    let err = merge_patch_error(&jobs, "run", json!({"spec": {"completions": 3}})).await;
    assert_eq!(
        err.message,
        "Job.batch \"run\" is invalid: spec.completions: Invalid value: 3: field is immutable"
    );
    // What may change: parallelism, suspension, deadlines.
    let allowed = json!({"spec": {"parallelism": 2, "suspend": true, "activeDeadlineSeconds": 60}});
    within(jobs.patch("run", &PatchParams::default(), &Patch::Merge(&allowed)))
        .await
        .unwrap();

    // A suspended Job that never started may be told where its pods go, not what they run.
    within(jobs.create(&PostParams::default(), &job("held", true)))
        .await
        .unwrap();
    let placement = json!({"spec": {"template": {
        "metadata": {"labels": {"zone": "a"}},
        "spec": {"nodeSelector": {"zone": "a"}}}}});
    within(jobs.patch("held", &PatchParams::default(), &Patch::Merge(&placement)))
        .await
        .unwrap();
    let err = status(
        within(jobs.patch("held", &PatchParams::default(), &Patch::Strategic(&image)))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
}

#[tokio::test]
async fn a_bindings_role_ref_never_changes() {
    let server = server().await;
    let bindings: Api<RoleBinding> = Api::namespaced(server.client(), "default");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]
    }))
    .unwrap();
    within(bindings.create(&PostParams::default(), &binding))
        .await
        .unwrap();
    let subjects = json!({"subjects": [{"kind": "User", "name": "bob",
        "apiGroup": "rbac.authorization.k8s.io"}]});
    within(bindings.patch("readers", &PatchParams::default(), &Patch::Merge(&subjects)))
        .await
        .unwrap();
    let err = merge_patch_error(&bindings, "readers", json!({"roleRef": {"name": "edit"}})).await;
    assert_eq!(
        err.message,
        "RoleBinding.rbac.authorization.k8s.io \"readers\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
    );
}

#[tokio::test]
async fn a_secrets_type_never_changes() {
    let server = server().await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let mut secret = Secret {
        metadata: ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        },
        type_: Some("example.com/token".into()),
        ..Default::default()
    };
    within(secrets.create(&PostParams::default(), &secret))
        .await
        .unwrap();
    secret.type_ = Some("Opaque".into());
    let err = status(
        within(secrets.replace("s", &PostParams::default(), &secret))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Secret \"s\" is invalid: type: Invalid value: \"Opaque\": field is immutable"
    );
}

#[tokio::test]
async fn immutable_config_maps_refuse_changes_with_forbidden_causes() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("frozen".into()),
            ..ObjectMeta::default()
        },
        immutable: Some(true),
        data: Some([("a".to_string(), "1".to_string())].into()),
        ..ConfigMap::default()
    };
    within(config_maps.create(&PostParams::default(), &config_map))
        .await
        .unwrap();
    let change = json!({"data": {"a": "2"}});
    let err = status(
        within(config_maps.patch("frozen", &PatchParams::default(), &Patch::Merge(&change)))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueForbidden", "data")
    );
}

/// `ValidateConfigMap` and `ValidateSecret`: keys are config keys, a ConfigMap's key is in
/// `data` or `binaryData` but not both, and a Secret has what its `type` needs (after its
/// `stringData` was merged into `data`).
#[tokio::test]
async fn config_map_and_secret_data_are_validated_as_kube_apiserver_does() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let config_map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "settings"},
        "data": {"bad key": "x", "b": "y"},
        "binaryData": {"b": "AAE="},
    }))
    .unwrap();
    let err = status(
        within(config_maps.create(&PostParams::default(), &config_map))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let fields: Vec<String> = err
        .details
        .unwrap()
        .causes
        .into_iter()
        .map(|c| c.field)
        .collect();
    assert_eq!(fields, ["data[b]", "data[bad key]", "binaryData[b]"]);

    let tls: Secret = serde_json::from_value(json!({
        "metadata": {"name": "cert"},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": "certificate"},
    }))
    .unwrap();
    let err = status(
        within(secrets.create(&PostParams::default(), &tls))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Secret \"cert\" is invalid: data[tls.key]: Required value"
    );
    let tls: Secret = serde_json::from_value(json!({
        "metadata": {"name": "cert"},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": "certificate", "tls.key": "key"},
    }))
    .unwrap();
    within(secrets.create(&PostParams::default(), &tls))
        .await
        .unwrap();
    // An update is checked too.
    let removal = json!([{"op": "remove", "path": "/data/tls.key"}]);
    let err = status(
        within(secrets.patch(
            "cert",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(removal).unwrap()),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let token: Secret = serde_json::from_value(json!({
        "metadata": {"name": "token"},
        "type": "kubernetes.io/service-account-token",
    }))
    .unwrap();
    let err = status(
        within(secrets.create(&PostParams::default(), &token))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Secret \"token\" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"
    );
}

#[tokio::test]
async fn grouped_kinds_name_their_group() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": -2, "selector": {}, "template": {}}
    }))
    .unwrap();
    let err = status(
        within(deployments.create(&PostParams::default(), &deployment))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0"
    );
    assert_eq!(err.details.unwrap().group, "apps");
}

#[tokio::test]
async fn generation_is_kept_only_for_types_that_have_it() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some("settings".into());
    config_map.metadata.generation = Some(7);
    let created = within(config_maps.create(&PostParams::default(), &config_map))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, None);
    let change = json!({"data": {"a": "1"}});
    let changed =
        within(config_maps.patch("settings", &PatchParams::default(), &Patch::Merge(&change)))
            .await
            .unwrap();
    assert_eq!(changed.metadata.generation, None);

    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let mut secret = Secret::default();
    secret.metadata.name = Some("token".into());
    let created = within(secrets.create(&PostParams::default(), &secret))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, None);

    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = within(pods.create(&PostParams::default(), &pod("web", &[])))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
}

/// A patch body of the wrong shape (a merge patch that is not an object, as a client sends a
/// list with the merge content type; a JSON patch that is not a list) is a 400 worded as the
/// patch handler decodes it: into Go's types unless `fieldValidation=Ignore`, when a merge
/// patch replaces the object instead (422) and a JSON patch fails in its library's decoder.
#[tokio::test]
async fn a_patch_of_the_wrong_shape_is_a_400_worded_as_the_handler_decodes_it() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let config_map: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "settings"}})).unwrap();
    within(config_maps.create(&PostParams::default(), &config_map))
        .await
        .unwrap();
    let send = async |query: &str, content_type: &str, body: &str| {
        raw(
            &server,
            "PATCH",
            &format!("/api/v1/namespaces/default/configmaps/settings{query}"),
            &[("Content-Type", content_type)],
            body.as_bytes(),
        )
        .await
    };
    let patch = async |query: &str, content_type: &str, body: &str| {
        let response = send(query, content_type, body).await;
        response.assert_status(400, "BadRequest");
        response.json()["message"].as_str().unwrap().to_string()
    };
    const MERGE: &str = "application/merge-patch+json";
    const JSON: &str = "application/json-patch+json";
    assert_eq!(
        patch("", MERGE, r#"[{"op": "add"}]"#).await,
        "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert_eq!(
        patch("?fieldValidation=Strict", MERGE, "3").await,
        "error decoding patch: json: cannot unmarshal number into Go value of type map[string]interface {}"
    );
    assert_eq!(patch("", MERGE, "null").await, "Invalid JSON Patch");
    // Ignored, a merge patch that is not an object replaces the object, which then does not
    // decode.
    let replaced = send("?fieldValidation=Ignore", MERGE, "[ ]").await;
    replaced.assert_status(422, "Invalid");
    assert_eq!(
        replaced.json()["message"],
        " \"\" is invalid: patch: Invalid value: \"[ ]\": couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
    );
    // A null JSON patch is no operation at all.
    assert_eq!(send("", JSON, "null").await.status, 200);
    assert_eq!(
        patch("", JSON, r#"{"a": 1}"#).await,
        "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
    );
    assert_eq!(
        patch("?fieldValidation=Ignore", JSON, r#"{"a": 1}"#).await,
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    );
}

const POD: &str = "/api/v1/namespaces/default/pods/web";

async fn json_patch(server: &informer_testing::TestApiServer, patch: &Value) -> (u16, Value) {
    let response = raw(
        server,
        "PATCH",
        POD,
        &[("Content-Type", "application/json-patch+json")],
        patch.to_string().as_bytes(),
    )
    .await;
    let body = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body)
}

#[tokio::test]
async fn a_json_patch_moving_to_the_root_then_failing_is_422_not_500() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("web", &[])))
        .await
        .unwrap();
    let patch = json!([
        {"op": "move", "from": "/spec", "path": ""},
        {"op": "test", "path": "/metadata/name", "value": "web"}
    ]);
    let err = status(
        within(pods.patch(
            "web",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(patch).unwrap()),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "the server rejected our request due to an error in our request"
    );
    // kube-apiserver shows no cause (NewGenericServerResponse without one).
    assert!(err.details.is_none_or(|d| d.causes.is_empty()));
    // The object is untouched.
    assert!(within(pods.get("web")).await.unwrap().spec.is_some());
}

fn pointer() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("metadata"),
            Just("labels"),
            Just("spec"),
            Just("containers"),
            Just("0"),
            Just("1"),
            Just("-"),
            Just("name"),
            Just("~"),
            Just("x"),
        ],
        0..4,
    )
    .prop_map(|tokens| tokens.iter().map(|t| format!("/{t}")).collect())
}

fn operation() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("nope"),
        ],
        pointer(),
        prop::option::of(pointer()),
        prop::option::of(prop_oneof![
            Just(json!(null)),
            Just(json!("web")),
            Just(json!(3)),
            Just(json!({"a": "b"})),
            Just(json!([{"name": "x"}])),
        ]),
    )
        .prop_map(|(op, path, from, value)| {
            let mut operation = json!({"op": op, "path": path});
            if let Some(from) = from {
                operation["from"] = json!(from);
            }
            if let Some(value) = value {
                operation["value"] = value;
            }
            operation
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_json_patches_never_get_a_500() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("web", &[("app", "web")])))
        .await
        .unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 200,
        ..Config::default()
    });
    let patches = prop::collection::vec(operation(), 1..6);
    let mut cases = Vec::new();
    for _ in 0..200 {
        cases.push(Value::Array(
            patches.new_tree(&mut runner).unwrap().current(),
        ));
    }
    for patch in cases {
        let (code, body) = json_patch(&server, &patch).await;
        assert!(
            matches!(code, 200 | 400 | 409 | 422),
            "{patch} -> {code} {body}"
        );
        if code != 200 {
            assert_eq!(body["kind"], "Status", "{patch} -> {body}");
        }
        // Put the pod back when a patch changed it, so later patches see a full object.
        if code == 200 {
            server
                .delete_json("v1", "Pod", Some("default"), "web")
                .unwrap();
            within(pods.create(&PostParams::default(), &pod("web", &[("app", "web")])))
                .await
                .unwrap();
        }
    }
}

/// `ValidateSecret` (`pkg/apis/core/validation/validation.go`) decodes a docker config
/// Secret's `.dockerconfigjson` / `.dockercfg` with Go's `json.Unmarshal` into a
/// `map[string]interface{}`: its error is Go's scanner's (`kubectl create secret generic
/// --type=kubernetes.io/dockerconfigjson --from-literal=.dockerconfigjson=notjson`), or the
/// type mismatch for valid JSON that is not an object.
#[tokio::test]
async fn docker_config_secrets_report_go_json_errors() {
    let server = server().await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let message = async |kind: &str, key: &str, value: &str| {
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "registry"},
            "type": kind,
            "stringData": {key: value},
        }))
        .unwrap();
        let err = status(
            within(secrets.create(&PostParams::default(), &secret))
                .await
                .unwrap_err(),
        );
        assert_eq!(err.code, 422);
        err.message
    };
    let invalid = |key: &str, why: &str| {
        format!(
            "Secret \"registry\" is invalid: data[{key}]: Invalid value: \"<secret contents redacted>\": {why}"
        )
    };
    assert_eq!(
        message(
            "kubernetes.io/dockerconfigjson",
            ".dockerconfigjson",
            "notjson"
        )
        .await,
        invalid(
            ".dockerconfigjson",
            "invalid character 'o' in literal null (expecting 'u')"
        )
    );
    assert_eq!(
        message("kubernetes.io/dockercfg", ".dockercfg", "{\"a\":").await,
        invalid(".dockercfg", "unexpected end of JSON input")
    );
    assert_eq!(
        message("kubernetes.io/dockerconfigjson", ".dockerconfigjson", "[1]").await,
        invalid(
            ".dockerconfigjson",
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    );
}

#[tokio::test]
async fn a_workload_without_a_selector_is_invalid() {
    // apps/v1 does not default a selector from the template: `ValidateDeploymentSpec` and the
    // ReplicaSet and StatefulSet ones require it, and a missing one (`labels.Nothing()`)
    // matches no template; a DaemonSet's missing one just matches nothing.
    let server = server().await;
    let create = async |plural: &str, kind: &str| {
        let mut spec = json!({"replicas": 3, "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}});
        if kind == "StatefulSet" {
            spec["serviceName"] = json!("web");
        }
        let body = json!({"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web"}, "spec": spec});
        let response = raw(
            &server,
            "POST",
            &format!("/apis/apps/v1/namespaces/default/{plural}"),
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await;
        response.assert_status(422, "Invalid");
        response.json()["message"].as_str().unwrap().to_string()
    };
    let unmatched = "spec.template.metadata.labels: Invalid value: {\"app\":\"nginx\"}: `selector` does not match template `labels`";
    for (plural, kind) in [
        ("deployments", "Deployment"),
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
    ] {
        assert_eq!(
            create(plural, kind).await,
            format!("{kind}.apps \"web\" is invalid: [spec.selector: Required value, {unmatched}]")
        );
    }
    assert_eq!(
        create("daemonsets", "DaemonSet").await,
        format!("DaemonSet.apps \"web\" is invalid: {unmatched}")
    );
}

#[tokio::test]
async fn a_bad_owner_reference_is_printed_as_json() {
    // 1.34+ `field.Error` prints a bad value as its JSON, as the real 1.36 server answered for
    // the same references on a custom resource.
    let server = server().await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o",
    "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "controller": true},
    ]}});
    let response = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await;
    response.assert_status(422, "Invalid");
    assert_eq!(
        response.json()["message"],
        "ConfigMap \"o\" is invalid: metadata.ownerReferences: Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"1\",\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"b\",\"uid\":\"2\",\"controller\":true}]: Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and ConfigMap/b"
    );
}
