use serde_json::{Value, json};

use super::*;
use crate::apiserver::resource::{Registry, ResourceType};
use std::sync::Arc;

fn builtin(group: &str, plural: &str) -> Arc<ResourceType> {
    let version = "v1";
    Registry::builtin()
        .by_path(group, version, plural)
        .expect("registered")
}

fn causes(err: &ApiError) -> Vec<(String, String, String)> {
    let status = err.to_status();
    status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

fn create_error(group: &str, plural: &str, object: Value) -> ApiError {
    validate_create(&builtin(group, plural), &object).expect_err("invalid")
}

#[test]
fn invalid_names_are_field_value_invalid() {
    let err = create_error("", "configmaps", json!({"metadata": {"name": "Web"}}));
    assert_eq!(err.code(), 422);
    assert_eq!(
        causes(&err),
        [(
            "FieldValueInvalid".into(),
            "metadata.name".into(),
            format!("Invalid value: \"Web\": {DNS1123_SUBDOMAIN}")
        )]
    );
    assert_eq!(
        err.message(),
        format!(
            "ConfigMap \"Web\" is invalid: metadata.name: Invalid value: \"Web\": {DNS1123_SUBDOMAIN}"
        )
    );
}

#[test]
fn namespace_and_service_names_are_labels() {
    assert!(
        validate_create(
            &builtin("", "namespaces"),
            &json!({"metadata": {"name": "a.b"}})
        )
        .is_err()
    );
    assert!(
        validate_create(
            &builtin("", "configmaps"),
            &json!({"metadata": {"name": "a.b"}})
        )
        .is_ok()
    );
    let err = create_error("", "services", json!({"metadata": {"name": "1svc"}}));
    assert!(causes(&err)[0].2.contains("DNS-1035"));
}

#[test]
fn long_names_are_rejected_with_their_limit() {
    let err = create_error(
        "",
        "namespaces",
        json!({"metadata": {"name": "a".repeat(64)}}),
    );
    assert!(
        causes(&err)[0]
            .2
            .ends_with("must be no more than 63 characters")
    );
}

#[test]
fn every_failure_of_an_object_is_one_cause_and_the_message_lists_them() {
    let err = create_error(
        "",
        "pods",
        json!({
            "metadata": {"name": "web", "labels": {"bad key": "x", "ok": "-bad"}},
            "spec": {"restartPolicy": "Sometimes",
                     "containers": [{"name": "app"}, {"name": "app"}, {"image": "x"}]}
        }),
    );
    let reasons: Vec<(String, String)> = causes(&err).into_iter().map(|(r, f, _)| (r, f)).collect();
    assert_eq!(
        reasons,
        [
            (
                "FieldValueInvalid".to_string(),
                "metadata.labels".to_string()
            ),
            (
                "FieldValueInvalid".to_string(),
                "metadata.labels".to_string()
            ),
            (
                "FieldValueDuplicate".to_string(),
                "spec.containers[1].name".to_string()
            ),
            (
                "FieldValueRequired".to_string(),
                "spec.containers[2].name".to_string()
            ),
            (
                "FieldValueNotSupported".to_string(),
                "spec.restartPolicy".to_string()
            ),
        ]
    );
    assert!(
        err.message()
            .starts_with("Pod \"web\" is invalid: [metadata.labels: Invalid value: \"bad key\"")
    );
    assert!(err.message().ends_with(
        "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"]"
    ));
}

#[test]
fn grouped_kinds_are_qualified_in_the_message_and_details() {
    let err = create_error(
        "apps",
        "deployments",
        json!({"metadata": {"name": "d"}, "spec": {"replicas": -1}}),
    );
    assert_eq!(
        err.message(),
        "Deployment.apps \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    let status = err.to_status();
    assert_eq!(status["details"]["group"], "apps");
    assert_eq!(status["details"]["kind"], "Deployment");
    assert_eq!(status["details"]["name"], "d");
}

#[test]
fn oversized_annotations_are_too_long() {
    let big = "x".repeat(TOTAL_ANNOTATION_SIZE);
    let err = create_error(
        "",
        "configmaps",
        json!({"metadata": {"name": "c", "annotations": {"a": big}}}),
    );
    assert_eq!(
        causes(&err),
        [(
            "FieldValueTooLong".into(),
            "metadata.annotations".into(),
            "Too long: may not be more than 262144 bytes".into()
        )]
    );
}

#[test]
fn service_types_and_ports_are_checked() {
    let err = create_error(
        "",
        "services",
        json!({"metadata": {"name": "s"}, "spec": {"type": "Magic", "ports": [{"port": 0}]}}),
    );
    let fields: Vec<String> = causes(&err).into_iter().map(|(_, f, _)| f).collect();
    assert_eq!(fields, ["spec.type", "spec.ports[0].port"]);
}

#[test]
fn immutable_config_maps_forbid_data_changes() {
    let config_maps = builtin("", "configmaps");
    let old = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "1"}});
    let same = old.clone();
    assert!(validate_update(&config_maps, &old, &same).is_ok());
    let changed = json!({"metadata": {"name": "c"}, "data": {"a": "2"}});
    let err = validate_update(&config_maps, &old, &changed).unwrap_err();
    assert_eq!(
        causes(&err),
        [
            (
                "FieldValueForbidden".into(),
                "immutable".into(),
                format!("Forbidden: {IMMUTABLE}")
            ),
            (
                "FieldValueForbidden".into(),
                "data".into(),
                format!("Forbidden: {IMMUTABLE}")
            ),
        ]
    );
}

#[test]
fn a_missing_name_is_required() {
    let err = name_required(&builtin("", "pods"));
    assert_eq!(
        err.message(),
        "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(causes(&err)[0].0, "FieldValueRequired");
}

#[test]
fn no_finalizer_is_added_while_an_object_is_deleted_and_the_error_comes_twice() {
    let config_maps = builtin("", "configmaps");
    let old = json!({"metadata": {"name": "c", "deletionTimestamp": "2024-01-01T00:00:00Z",
        "finalizers": ["example.com/a"]}});
    let removed = json!({"metadata": {"name": "c", "finalizers": []}});
    assert!(validate_update(&config_maps, &old, &removed).is_ok());
    let added =
        json!({"metadata": {"name": "c", "finalizers": ["example.com/a", "example.com/b"]}});
    let err = validate_update(&config_maps, &old, &added).unwrap_err();
    let detail = "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\"}";
    assert_eq!(causes(&err).len(), 2);
    assert_eq!(causes(&err)[0].2, detail);
    assert_eq!(
        err.message(),
        format!("ConfigMap \"c\" is invalid: metadata.finalizers: {detail}"),
        "the message lists the error once"
    );
}

#[test]
fn custom_resources_are_checked_against_their_schema_and_scale_path() {
    let mut registry = Registry::builtin();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "pools", "kind": "Pool"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    });
    registry.install(
        "pools.example.com",
        crate::apiserver::crd::served_types(&crd, 0).unwrap(),
    );
    let pools = registry.by_path("example.com", "v1", "pools").unwrap();
    let err = validate_create(
        &pools,
        &json!({"metadata": {"name": "p"}, "spec": {"size": -1}}),
    )
    .unwrap_err();
    assert_eq!(
        causes(&err),
        [(
            "FieldValueInvalid".into(),
            ".spec.size".into(),
            "Invalid value: -1: should be a non-negative integer".into()
        )]
    );
    let err = validate_create(
        &pools,
        &json!({"metadata": {"name": "p"}, "spec": {"size": "big"}}),
    )
    .unwrap_err();
    assert_eq!(causes(&err)[0].0, "FieldValueTypeInvalid");
}

fn owner(kind: &str, name: &str, controller: bool) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": controller})
}

#[test]
fn only_one_owner_reference_may_be_the_controller() {
    let object = json!({"metadata": {"name": "web", "ownerReferences": [
        owner("ConfigMap", "a", true),
        owner("ConfigMap", "b", false),
        owner("Secret", "c", true),
    ]}});
    let err = create_error("", "configmaps", object);
    let causes = causes(&err);
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].1, "metadata.ownerReferences");
    assert!(
        causes[0].2.ends_with(
            "Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/a and Secret/c"
        ),
        "{}",
        causes[0].2
    );
    // A 1.34+ server prints the bad value as JSON.
    assert!(causes[0].2.starts_with(
        "Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"uid-a\",\"controller\":true},"
    ));
    let one_controller = json!({"metadata": {"name": "web", "ownerReferences": [
        owner("ConfigMap", "a", true),
        owner("ConfigMap", "b", false),
    ]}});
    assert!(validate_create(&builtin("", "configmaps"), &one_controller).is_ok());
}

#[test]
fn owner_references_name_a_version_kind_name_and_uid() {
    let object = json!({"metadata": {"name": "web", "ownerReferences": [
        {"apiVersion": "apps/", "kind": "", "name": "", "uid": ""},
    ]}});
    let err = create_error("", "configmaps", object);
    assert_eq!(
        causes(&err)
            .into_iter()
            .map(|(_, field, message)| format!("{field}: {message}"))
            .collect::<Vec<_>>(),
        [
            "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
            "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
            "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
            "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
        ]
    );
}

#[test]
fn an_event_owns_nothing() {
    let object =
        json!({"metadata": {"name": "web", "ownerReferences": [owner("Event", "e", false)]}});
    let err = create_error("", "configmaps", object);
    assert!(
        causes(&err)[0]
            .2
            .ends_with("/v1, Kind=Event is disallowed from being an owner")
    );
}

#[test]
fn a_nodes_pod_cidrs_and_provider_id_are_set_once() {
    let nodes = builtin("", "nodes");
    let node = |spec: Value| json!({"metadata": {"name": "n1"}, "spec": spec});
    // From nothing to something: allowed (the controller manager assigns them).
    let bare = node(json!({}));
    let assigned = node(json!({"podCIDRs": ["10.244.0.0/24"], "providerID": "kind://n1"}));
    assert!(validate_update(&nodes, &bare, &assigned).is_ok());
    let changed =
        node(json!({"podCIDRs": ["10.244.0.0/24", "fd00::/64"], "providerID": "aws://n1"}));
    let err = validate_update(&nodes, &assigned, &changed).unwrap_err();
    assert_eq!(
        causes(&err),
        [
            (
                "FieldValueForbidden".to_string(),
                "spec.podCIDRs".to_string(),
                "Forbidden: node updates may not change podCIDR except from \"\" to valid"
                    .to_string()
            ),
            (
                "FieldValueForbidden".to_string(),
                "spec.providerID".to_string(),
                "Forbidden: node updates may not change providerID except from \"\" to valid"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn built_in_finalizers_are_standard_or_domain_qualified() {
    let config_maps = builtin("", "configmaps");
    let create = |finalizers: Value| {
        validate_create(
            &config_maps,
            &json!({"metadata": {"name": "c", "finalizers": finalizers}}),
        )
    };
    assert!(create(json!(["kubernetes", "orphan", "example.com/x"])).is_ok());
    let err = create(json!(["example.com/x", "mine", "bad one"])).unwrap_err();
    assert_eq!(
        causes(&err)
            .iter()
            .map(|(_, field, message)| format!("{field}: {message}"))
            .collect::<Vec<_>>(),
        [
            format!("metadata.finalizers: Invalid value: \"bad one\": {QUALIFIED_NAME}"),
            "metadata.finalizers[1]: Invalid value: \"mine\": name is neither a standard finalizer name nor is it fully qualified".to_string(),
            "metadata.finalizers[2]: Invalid value: \"bad one\": name is neither a standard finalizer name nor is it fully qualified".to_string(),
        ]
    );
    let err = create(json!(["orphan", "foregroundDeletion"])).unwrap_err();
    assert_eq!(
        causes(&err)[0].2,
        "Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
    );
    // Updates check the standard names only.
    let old = json!({"metadata": {"name": "c"}});
    let new = json!({"metadata": {"name": "c", "finalizers": ["mine"]}});
    let err = validate_update(&config_maps, &old, &new).unwrap_err();
    assert_eq!(causes(&err).len(), 1);
}

#[test]
fn label_lengths_are_counted_in_bytes() {
    let err = create_error(
        "",
        "configmaps",
        json!({"metadata": {"name": "c", "labels": {"k": "v".repeat(64), "p/": "x"}}}),
    );
    let messages: Vec<String> = causes(&err).into_iter().map(|c| c.2).collect();
    assert_eq!(
        messages,
        [
            format!(
                "Invalid value: \"{}\": must be no more than 63 bytes",
                "v".repeat(64)
            ),
            "Invalid value: \"p/\": name part must be non-empty".to_string(),
            format!("Invalid value: \"p/\": {QUALIFIED_NAME}"),
        ]
    );
}

#[test]
fn bad_values_print_as_json_of_their_go_types() {
    // `map[string]string`: keys sorted, Go's escapes.
    let labels = json!({"tier": "<x>", "app": "web"});
    assert_eq!(
        json_string_map(labels.as_object().unwrap()),
        r#"{"app":"web","tier":"\u003cx\u003e"}"#
    );
    // `[]string`.
    assert_eq!(
        json_string_slice(["10.0.0.1", "a&b"]),
        r#"["10.0.0.1","a\u0026b"]"#
    );
    assert_eq!(json_string_slice([]), "[]");
    // `*metav1.LabelSelector`: struct order, `omitempty` (an empty `values` left out).
    assert_eq!(
        json_label_selector(&json!({
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "gone", "operator": "DoesNotExist", "values": []}],
            "matchLabels": {"b": "2", "a": "1"}})),
        r#"{"matchLabels":{"a":"1","b":"2"},"matchExpressions":[{"key":"tier","operator":"In","values":["a","b"]},{"key":"gone","operator":"DoesNotExist"}]}"#
    );
    assert_eq!(json_label_selector(&json!({"matchLabels": {}})), "{}");
}

#[test]
fn a_workload_selector_and_its_template_labels_print_as_json() {
    let deployment = builtin("apps", "deployments");
    let object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}, "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["front"]}]},
                 "template": {"metadata": {"labels": {"app": "db", "tier": "front"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let errors = validate_create(&deployment, &object).unwrap_err();
    assert!(
        errors.message().contains(
            r#"spec.template.metadata.labels: Invalid value: {"app":"db","tier":"front"}: `selector` does not match template `labels`"#
        ),
        "{errors}"
    );
    let mut old = object.clone();
    old["spec"]["template"]["metadata"]["labels"]["app"] = json!("web");
    let mut changed = object.clone();
    changed["spec"]["selector"]["matchLabels"]["app"] = json!("db");
    let errors = validate_update(&deployment, &old, &changed).unwrap_err();
    assert!(
        errors.message().contains(
            r#"spec.selector: Invalid value: {"matchLabels":{"app":"db"},"matchExpressions":[{"key":"tier","operator":"In","values":["front"]}]}: field is immutable"#
        ),
        "{}",
        errors.message()
    );
}
