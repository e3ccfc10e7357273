//! Server-side apply and field ownership through a real `kube::Client`: `managedFields` on
//! every write, conflicts between managers, `force`, removal of fields a manager stops
//! applying, and list merging by key, on built-in types and custom resources.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

use super::common::{raw, server, status, within};
use informer_testing::{CustomResourceSpec, TestApiServer};

fn entries(
    managed: Option<&Vec<ManagedFieldsEntry>>,
) -> Vec<(String, String, Option<String>, Value)> {
    managed
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e.manager.clone().unwrap_or_default(),
                        e.operation.clone().unwrap_or_default(),
                        e.subresource.clone(),
                        e.fields_v1
                            .as_ref()
                            .map(|f| f.0.clone())
                            .unwrap_or(Value::Null),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": data})
}

async fn widgets(server: &TestApiServer) -> Api<DynamicObject> {
    server
        .register_custom_resource(
            CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
                .with_status_subresource(),
        )
        .unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(server.client(), "default", &resource)
}

#[tokio::test]
async fn every_write_records_its_manager_operation_and_fields() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created: ConfigMap = serde_json::from_value(config_map(json!({"a": "1"}))).unwrap();
    let params = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    let created = within(maps.create(&params, &created)).await.unwrap();
    assert_eq!(
        entries(created.metadata.managed_fields.as_ref()),
        [(
            "creator".into(),
            "Update".into(),
            None,
            json!({"f:data": {".": {}, "f:a": {}}})
        )]
    );
    let entry = &created.metadata.managed_fields.as_ref().unwrap()[0];
    assert_eq!(entry.api_version.as_deref(), Some("v1"));
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    assert!(entry.time.is_some());

    // A patch without a field manager is the user agent's (kube sends none: "unknown").
    let patched = within(maps.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "2", "b": "3"}})),
    ))
    .await
    .unwrap();
    assert_eq!(
        entries(patched.metadata.managed_fields.as_ref()),
        [
            // The creator still owns the map it created, not its keys.
            (
                "creator".into(),
                "Update".into(),
                None,
                json!({"f:data": {}})
            ),
            (
                "unknown".into(),
                "Update".into(),
                None,
                json!({"f:data": {"f:a": {}, "f:b": {}}})
            ),
        ]
    );
}

#[tokio::test]
async fn the_user_agent_names_the_manager_when_no_field_manager_is_given() {
    let server = server().await;
    let body = config_map(json!({"a": "1"})).to_string();
    let created = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[
            ("Content-Type", "application/json"),
            ("User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc"),
        ],
        body.as_bytes(),
    )
    .await
    .json();
    assert_eq!(
        created["metadata"]["managedFields"][0]["manager"],
        "kubectl"
    );
}

#[tokio::test]
async fn status_writes_are_entries_of_the_status_subresource() {
    let server = server().await;
    let api = widgets(&server).await;
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}
    }))
    .unwrap();
    within(api.create(&PostParams::default(), &widget))
        .await
        .unwrap();
    let patched = within(api.patch_status(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"ready": true}})),
    ))
    .await
    .unwrap();
    let found = entries(patched.metadata.managed_fields.as_ref());
    assert!(
        found.contains(&(
            "unknown".into(),
            "Update".into(),
            Some("status".into()),
            json!({"f:status": {".": {}, "f:ready": {}}})
        )),
        "{found:?}"
    );
}

#[tokio::test]
async fn an_apply_that_changes_another_managers_field_conflicts_unless_forced() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    within(maps.patch(
        "settings",
        &PatchParams::apply("a"),
        &Patch::Apply(config_map(json!({"mode": "fast", "size": "1"}))),
    ))
    .await
    .expect("apply creates the object");
    let err = status(
        within(maps.patch(
            "settings",
            &PatchParams::apply("b"),
            &Patch::Apply(config_map(json!({"mode": "slow"}))),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .data.mode"
    );
    let cause = &err.details.unwrap().causes[0];
    assert_eq!(
        (
            cause.reason.as_str(),
            cause.field.as_str(),
            cause.message.as_str()
        ),
        ("FieldManagerConflict", ".data.mode", "conflict with \"a\"")
    );

    let forced = within(maps.patch(
        "settings",
        &PatchParams::apply("b").force(),
        &Patch::Apply(config_map(json!({"mode": "slow"}))),
    ))
    .await
    .unwrap();
    assert_eq!(forced.data.unwrap()["mode"], "slow");
    assert_eq!(
        entries(forced.metadata.managed_fields.as_ref()),
        [
            (
                "a".into(),
                "Apply".into(),
                None,
                json!({"f:data": {"f:size": {}}})
            ),
            (
                "b".into(),
                "Apply".into(),
                None,
                json!({"f:data": {"f:mode": {}}})
            ),
        ]
    );
}

#[tokio::test]
async fn fields_a_manager_stops_applying_are_removed_unless_another_owns_them() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let a = PatchParams::apply("a");
    within(maps.patch(
        "settings",
        &a,
        &Patch::Apply(config_map(json!({"x": "1", "y": "2", "z": "3"}))),
    ))
    .await
    .unwrap();
    // b shares y by applying the same value.
    within(maps.patch(
        "settings",
        &PatchParams::apply("b"),
        &Patch::Apply(config_map(json!({"y": "2"}))),
    ))
    .await
    .unwrap();
    let applied = within(maps.patch("settings", &a, &Patch::Apply(config_map(json!({"x": "1"})))))
        .await
        .unwrap();
    let data = applied.data.unwrap();
    assert_eq!(
        data.keys().collect::<Vec<_>>(),
        ["x", "y"],
        "z went, y is b's too"
    );
}

#[tokio::test]
async fn deployment_containers_merge_by_name_between_managers() {
    let server = server().await;
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "default");
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}}})
    };
    within(deployments.patch(
        "web",
        &PatchParams::apply("app-team"),
        &Patch::Apply(deployment(json!([{"name": "app", "image": "app:1"}]))),
    ))
    .await
    .unwrap();
    let merged = within(deployments.patch(
        "web",
        &PatchParams::apply("mesh").force(),
        &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "proxy:1"}]}}}})),
    ))
    .await
    .unwrap();
    let names: Vec<String> = merged
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["app", "proxy"], "the list merged by name");
    let mesh = entries(merged.metadata.managed_fields.as_ref())
        .into_iter()
        .find(|e| e.0 == "mesh")
        .unwrap();
    assert!(
        mesh.3["f:spec"]["f:template"]["f:spec"]["f:containers"]
            .get("k:{\"name\":\"proxy\"}")
            .is_some()
    );
    let app_team = entries(merged.metadata.managed_fields.as_ref())
        .into_iter()
        .find(|e| e.0 == "app-team")
        .unwrap();
    assert_eq!(
        app_team.3["f:spec"]["f:selector"],
        json!({}),
        "label selectors are atomic"
    );
}

#[tokio::test]
async fn apply_needs_a_field_manager_and_forbids_force_on_other_patches() {
    let server = server().await;
    let body = config_map(json!({"a": "1"})).to_string();
    let missing = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/settings",
        &[("Content-Type", "application/apply-patch+yaml")],
        body.as_bytes(),
    )
    .await;
    missing.assert_status(422, "Invalid");
    assert_eq!(
        missing.json()["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let forced = raw(
        &server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/settings?force=true",
        &[("Content-Type", "application/merge-patch+json")],
        b"{}",
    )
    .await;
    forced.assert_status(422, "Invalid");
}

/// An apply that creates must name the URL's object, as `checkName` checks the patched
/// object: another name, or none, is a 400 and creates nothing.
#[tokio::test]
async fn an_apply_that_creates_must_name_the_urls_object() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let params = PatchParams::apply("tests");
    let refused = [
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
            "the name of the object (other) does not match the name on the URL (settings)",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}),
            "the name of the object (settings based on URL) was undeterminable: name must be provided",
        ),
    ];
    for (body, message) in refused {
        let err = api
            .patch("settings", &params, &Patch::Apply(&body))
            .await
            .expect_err("the body does not name the URL's object");
        let err = status(err);
        assert_eq!((err.code, err.message.as_str()), (400, message));
    }
    assert!(api.get_opt("settings").await.unwrap().is_none());
    assert!(api.get_opt("other").await.unwrap().is_none());
    let named = config_map(json!({"a": "1"}));
    api.patch("settings", &params, &Patch::Apply(&named))
        .await
        .expect("the body names the URL's object");
}

/// `kubectl apply --server-side` on an object `kubectl apply` made: the `kubectl` manager takes
/// over without conflicts the fields the last-applied annotation still describes, and the
/// annotation then holds what it applied; any other manager conflicts, and so does `kubectl`
/// on a field someone else changed since.
#[tokio::test]
async fn kubectl_server_side_apply_takes_over_what_client_side_apply_set() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    const ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
    // What `kubectl apply` creates: the object with its configuration in the annotation.
    let last = "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"x\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"settings\",\"namespace\":\"default\"}}\n";
    let created: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "settings", "annotations": {ANNOTATION: last}},
        "data": {"a": "1", "b": "x"},
    }))
    .unwrap();
    within(maps.create(
        &PostParams {
            field_manager: Some("kubectl-client-side-apply".into()),
            ..PostParams::default()
        },
        &created,
    ))
    .await
    .unwrap();
    let applied = config_map(json!({"a": "2", "b": "x"}));

    let err = status(
        within(maps.patch(
            "settings",
            &PatchParams::apply("other"),
            &Patch::Apply(&applied),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409, "only kubectl's applies take over");

    let result = within(maps.patch(
        "settings",
        &PatchParams::apply("kubectl"),
        &Patch::Apply(&applied),
    ))
    .await
    .unwrap();
    assert_eq!(result.data.as_ref().unwrap()["a"], "2");
    assert_eq!(
        result.metadata.annotations.as_ref().unwrap()[ANNOTATION],
        "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"2\",\"b\":\"x\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"settings\"}}\n",
        "the annotation holds the applied configuration"
    );
    let kubectl = entries(result.metadata.managed_fields.as_ref())
        .into_iter()
        .find(|e| e.0 == "kubectl")
        .unwrap();
    assert_eq!(kubectl.3["f:data"], json!({"f:a": {}, "f:b": {}}));

    // A field changed by another writer since the last client-side apply still conflicts.
    let replaced: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "other", "annotations": {ANNOTATION: last.replace("settings", "other")}},
        "data": {"a": "1", "b": "x"},
    }))
    .unwrap();
    within(maps.create(
        &PostParams {
            field_manager: Some("kubectl-client-side-apply".into()),
            ..PostParams::default()
        },
        &replaced,
    ))
    .await
    .unwrap();
    within(maps.patch(
        "other",
        &PatchParams {
            field_manager: Some("editor".into()),
            ..PatchParams::default()
        },
        &Patch::Merge(json!({"data": {"b": "edited"}})),
    ))
    .await
    .unwrap();
    let mut applied = config_map(json!({"a": "2", "b": "y"}));
    applied["metadata"]["name"] = json!("other");
    let err = status(
        within(maps.patch(
            "other",
            &PatchParams::apply("kubectl"),
            &Patch::Apply(&applied),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.b"
    );
}

/// The field manager checks an apply configuration's group, version and kind before anything
/// else (`versionCheckManager`): another kind or version, or none, is a 400 naming what the
/// configuration says, as Go prints a `GroupVersionKind`.
#[tokio::test]
async fn an_apply_configuration_of_another_type_is_an_invalid_object_type() {
    let server = server().await;
    let apply = async |body: Value| {
        raw(
            &server,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/settings?fieldManager=test",
            &[("Content-Type", "application/apply-patch+yaml")],
            body.to_string().as_bytes(),
        )
        .await
    };
    for (body, gvk) in [
        (
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "settings"}}),
            "/v1, Kind=Secret",
        ),
        (
            json!({"kind": "ConfigMap", "metadata": {"name": "settings"}}),
            "/, Kind=ConfigMap",
        ),
        (
            json!({"apiVersion": "v1", "metadata": {"name": "settings"}}),
            "/v1, Kind=",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}),
            "apps/v1, Kind=ConfigMap",
        ),
    ] {
        let response = apply(body).await;
        response.assert_status(400, "BadRequest");
        assert_eq!(
            response.json()["message"],
            format!("invalid object type: {gvk}")
        );
    }
    // Nothing was created; the right type is applied.
    let response = apply(config_map(json!({"a": "1"}))).await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
}

#[tokio::test]
async fn managed_fields_are_reset_by_one_empty_entry() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    within(maps.patch(
        "settings",
        &PatchParams::apply("a"),
        &Patch::Apply(config_map(json!({"x": "1"}))),
    ))
    .await
    .unwrap();
    let reset = within(maps.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"managedFields": [{}]}})),
    ))
    .await
    .unwrap();
    assert!(reset.metadata.managed_fields.is_none());
    // Nobody owns the fields now: an apply takes them over from `before-first-apply`.
    let err = status(
        within(maps.patch(
            "settings",
            &PatchParams::apply("b"),
            &Patch::Apply(config_map(json!({"x": "2"}))),
        ))
        .await
        .unwrap_err(),
    );
    assert!(
        err.message.contains("conflict with \"before-first-apply\""),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn applies_to_custom_resources_follow_their_schema() {
    let server = server().await;
    let api = widgets(&server).await;
    let widget = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec});
    let created = within(api.patch(
        "w",
        &PatchParams::apply("a"),
        &Patch::Apply(widget(json!({"size": 1, "color": "red"}))),
    ))
    .await
    .unwrap();
    // Without a schema (x-kubernetes-preserve-unknown-fields) no field is declared, so the
    // applied `spec` is owned as a map too.
    assert_eq!(
        entries(created.metadata.managed_fields.as_ref()),
        [(
            "a".into(),
            "Apply".into(),
            None,
            json!({"f:spec": {".": {}, "f:color": {}, "f:size": {}}})
        )]
    );
    let same = within(api.patch(
        "w",
        &PatchParams::apply("a"),
        &Patch::Apply(widget(json!({"size": 1, "color": "red"}))),
    ))
    .await
    .unwrap();
    assert_eq!(
        same.metadata.resource_version, created.metadata.resource_version,
        "an apply that changes nothing writes nothing"
    );
    let removed = within(api.patch(
        "w",
        &PatchParams::apply("a"),
        &Patch::Apply(widget(json!({"size": 2}))),
    ))
    .await
    .unwrap();
    assert_eq!(removed.data["spec"], json!({"size": 2}));
}
