use serde_json::json;

use crate::apiserver::schema::Schema;

const CONFIG_MAP: &str = "k8s.io.api.core.v1.ConfigMap";
const POD: &str = "k8s.io.api.core.v1.Pod";
const SECRET: &str = "k8s.io.api.core.v1.Secret";
const DEPLOYMENT: &str = "k8s.io.api.apps.v1.Deployment";

fn error(message: &str, object: serde_json::Value) -> Option<String> {
    Schema::builtin().go_decode_error(message, &object)
}

#[test]
fn a_well_typed_object_decodes() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "creationTimestamp": null},
        "spec": {"containers": [{"name": "c", "image": "i",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "0.5", "memory": 1073741824}},
            "livenessProbe": {"httpGet": {"port": "http"}}}]},
        "status": {"startTime": "2026-01-02T03:04:05Z"}
    });
    assert_eq!(error(POD, pod), None);
}

#[test]
fn a_map_value_of_the_wrong_type_names_the_struct_and_field() {
    assert_eq!(
        error(CONFIG_MAP, json!({"data": {"port": 8080}})).as_deref(),
        Some("json: cannot unmarshal number into Go struct field ConfigMap.data of type string")
    );
}

#[test]
fn nested_fields_are_named_by_their_json_path_without_indexes() {
    let pod = json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}});
    assert_eq!(
        error(POD, pod).as_deref(),
        Some(
            "json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32"
        )
    );
}

#[test]
fn integers_out_of_range_or_with_a_fraction_are_refused_with_their_literal() {
    assert_eq!(
        error(DEPLOYMENT, json!({"spec": {"replicas": 1.5}})).as_deref(),
        Some(
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        )
    );
    assert_eq!(
        error(DEPLOYMENT, json!({"spec": {"replicas": 3_000_000_000_i64}})).as_deref(),
        Some(
            "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32"
        )
    );
}

#[test]
fn a_struct_or_list_of_the_wrong_shape_names_its_go_type() {
    assert_eq!(
        error(POD, json!({"spec": "nothing"})).as_deref(),
        Some("json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec")
    );
    assert_eq!(
        error(POD, json!({"spec": {"containers": {"name": "c"}}})).as_deref(),
        Some(
            "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
        )
    );
    assert_eq!(
        error(CONFIG_MAP, json!({"metadata": {"labels": ["a"]}})).as_deref(),
        Some(
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"
        )
    );
}

#[test]
fn null_decodes_into_anything() {
    assert_eq!(
        error(
            POD,
            json!({"metadata": null, "spec": {"containers": [null], "nodeName": null}})
        ),
        None
    );
}

#[test]
fn bytes_must_be_base64() {
    assert_eq!(
        error(SECRET, json!({"data": {"a": "not base64!!"}})).as_deref(),
        Some("illegal base64 data at input byte 3")
    );
    assert_eq!(error(SECRET, json!({"data": {"a": "YWJj"}})), None, "abc");
    assert_eq!(
        error(SECRET, json!({"data": {"a": "YWJ"}})).as_deref(),
        Some("illegal base64 data at input byte 0")
    );
    assert_eq!(
        error(SECRET, json!({"data": {"a": "YR=="}})),
        None,
        "trailing bits are allowed"
    );
}

#[test]
fn quantities_must_parse() {
    let limits = |cpu: serde_json::Value| json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": cpu}}}]}});
    for good in [
        json!("500m"),
        json!("1Gi"),
        json!("1e3"),
        json!(2),
        json!("0.5"),
        json!("+1"),
    ] {
        assert_eq!(error(POD, limits(good.clone())), None, "{good}");
    }
    assert_eq!(
        error(POD, limits(json!("abc"))).as_deref(),
        Some(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    );
    assert_eq!(
        error(POD, limits(json!("5Xi"))).as_deref(),
        Some(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    );
    assert_eq!(
        error(POD, limits(json!("5Mx"))).as_deref(),
        Some(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    );
    assert_eq!(
        error(POD, limits(json!("5iK"))).as_deref(),
        Some("unable to parse quantity's suffix")
    );
    assert!(error(POD, limits(json!(true))).is_some());
}

#[test]
fn times_must_be_rfc3339() {
    assert_eq!(
        error(POD, json!({"status": {"startTime": "yesterday"}})).as_deref(),
        Some(
            "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""
        )
    );
    assert_eq!(
        error(POD, json!({"status": {"startTime": 5}})).as_deref(),
        Some("json: cannot unmarshal number into Go value of type string")
    );
}

#[test]
fn int_or_string_takes_an_int32_or_a_string() {
    let port = |p: serde_json::Value| json!({"spec": {"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": p}}}]}});
    assert_eq!(error(POD, port(json!(8080))), None);
    assert_eq!(error(POD, port(json!("http"))), None);
    assert_eq!(
        error(POD, port(json!(true))).as_deref(),
        Some("json: cannot unmarshal bool into Go value of type int32")
    );
}

#[test]
fn unknown_fields_are_left_to_the_unknown_field_check() {
    assert_eq!(error(CONFIG_MAP, json!({"datta": {"port": 8080}})), None);
}

fn converted(message: &str, object: serde_json::Value) -> Option<String> {
    Schema::builtin().go_convert_error(message, &object)
}

#[test]
fn the_unstructured_converter_restores_maps_slices_and_structs_from_their_own_kinds_only() {
    assert_eq!(
        converted(POD, json!({"metadata": {"labels": "invalid"}})).as_deref(),
        Some("cannot restore map from string")
    );
    assert_eq!(
        converted(POD, json!({"spec": {"containers": {"name": "c"}}})).as_deref(),
        Some("cannot restore slice from map")
    );
    assert_eq!(
        converted(POD, json!({"spec": 5})).as_deref(),
        Some("cannot restore struct from: int64")
    );
}

#[test]
fn the_unstructured_converter_converts_scalars_by_gos_conversion_rules() {
    assert_eq!(
        converted(CONFIG_MAP, json!({"data": {"port": 8080}})).as_deref(),
        Some("cannot convert int64 to string")
    );
    assert_eq!(
        converted(DEPLOYMENT, json!({"spec": {"replicas": "3"}})).as_deref(),
        Some("cannot convert string to int32")
    );
    assert_eq!(
        converted(DEPLOYMENT, json!({"spec": {"replicas": 1.5}})).as_deref(),
        Some("cannot convert float64 to int32")
    );
    assert_eq!(
        converted(DEPLOYMENT, json!({"spec": {"replicas": 2.0}})),
        None
    );
    assert_eq!(
        converted(DEPLOYMENT, json!({"spec": {"paused": "yes"}})).as_deref(),
        Some("cannot convert string to bool")
    );
    assert_eq!(
        converted(CONFIG_MAP, json!({"metadata": {"name": {"a": 1}}})).as_deref(),
        Some("cannot convert map[string]interface {} to string")
    );
}

#[test]
fn the_unstructured_converter_unmarshals_types_with_their_own_decoding() {
    assert_eq!(
        converted(POD, json!({"status": {"startTime": 5}})).as_deref(),
        Some("json: cannot unmarshal number into Go value of type string")
    );
    assert_eq!(
        converted(SECRET, json!({"data": {"k": "not base64!"}})).as_deref(),
        Some("illegal base64 data at input byte 3")
    );
}

#[test]
fn go_prints_a_decoded_map_with_sorted_keys_and_bare_values() {
    use crate::apiserver::schema::go_print;
    assert_eq!(
        go_print(&json!({"metadata": {"labels": "invalid", "a": [1, true, null]}})),
        "map[metadata:map[a:[1 true <nil>] labels:invalid]]"
    );
    let floats: Vec<String> = [
        1.5, 1e6, 123456.0, 1234567.0, 0.0001, 0.00001, -2.5e-7, 1e21,
    ]
    .iter()
    .map(|f| go_print(&json!(f)))
    .collect();
    assert_eq!(
        floats,
        [
            "1.5",
            "1e+06",
            "123456",
            "1.234567e+06",
            "0.0001",
            "1e-05",
            "-2.5e-07",
            "1e+21"
        ]
    );
}
