//! Unit tests of structural schemas: one test per rule of pruning, defaulting and validation.

use serde_json::{Value, json};

use super::*;

fn schema(value: Value) -> Schema {
    let mut problems = Vec::new();
    let schema = Schema::resource(&value, "", &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    schema
}

fn gadget() -> Schema {
    schema(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "required": ["mode"], "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5, "minLength": 2},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3,
                    "x-kubernetes-list-type": "set"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port", "protocol"],
                    "items": {"type": "object", "required": ["port"], "properties": {
                        "port": {"type": "integer"},
                        "protocol": {"type": "string", "default": "TCP"}}}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "nested": {"type": "object", "default": {}, "properties": {
                    "a": {"type": "string", "default": "x"},
                    "b": {"type": "number", "nullable": true}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "port": {"x-kubernetes-int-or-string": true},
                "choice": {"type": "string", "anyOf": [{"enum": ["a"]}, {"enum": ["b"]}]}
            }},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }
    }))
}

fn valid_spec() -> Value {
    json!({"mode": "fast"})
}

fn errors(spec: Value) -> Vec<String> {
    let object = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    gadget()
        .validate(&object, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// The errors of an update of `old_spec` to `spec` (ratcheted).
fn update_errors(old_spec: Value, spec: Value) -> Vec<String> {
    let object = |spec: Value| json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    gadget()
        .validate(&object(spec), Some(&object(old_spec)))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// CRDValidationRatcheting: on an update, a value equal to its old value (found by field
/// name, map key or map-list keys; never for items of other lists) keeps the errors it had;
/// a changed one is checked.
#[test]
fn updates_ratchet_errors_of_unchanged_values() {
    let invalid = json!({"mode": "fast", "name": "A1", "tags": ["a", "b", "c", "d"],
        "ports": [{"port": 80, "protocol": "x"}], "labels": {"k": "v"}, "ratio": 0});
    assert_eq!(
        errors(invalid.clone()).len(),
        3,
        "{:?}",
        errors(invalid.clone())
    );
    // Nothing changed but a field with no errors.
    let mut more = invalid.clone();
    more["replicas"] = json!(2);
    assert_eq!(update_errors(invalid.clone(), more), Vec::<String>::new());
    // An enum value no longer allowed may stay; `required` belongs to the object, which
    // changed.
    assert_eq!(
        update_errors(
            json!({"mode": "medium"}),
            json!({"mode": "medium", "replicas": 2})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        update_errors(json!({"name": "ab"}), json!({"name": "ab", "replicas": 2})),
        ["spec.mode: Required value"]
    );
    // A changed field is held to the schema; the others are not.
    let mut renamed = invalid.clone();
    renamed["name"] = json!("B1");
    assert_eq!(
        update_errors(invalid.clone(), renamed),
        ["spec.name: Invalid value: \"B1\": spec.name in body should match '^[a-z]+$'"]
    );
    // A list is one value: a changed set list is checked whole.
    let mut retagged = invalid.clone();
    retagged["tags"] = json!(["a", "b", "c", "e"]);
    assert_eq!(
        update_errors(invalid.clone(), retagged),
        ["spec.tags: Too many: 4: must have at most 3 items"]
    );
    // Items of a map list are found by their keys: a new item is checked, an old one not.
    let mut ported = invalid.clone();
    ported["ports"] =
        json!([{"port": 80, "protocol": "x"}, {"port": 81, "extra": 1, "protocol": 5}]);
    assert_eq!(
        update_errors(invalid.clone(), ported),
        [
            "spec.ports[1].protocol: Invalid value: \"integer\": spec.ports[1].protocol in body must be of type string: \"integer\""
        ]
    );
    // A value that is new is checked.
    assert_eq!(
        update_errors(json!({"mode": "fast"}), json!({"mode": "fast", "ratio": 0})),
        ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]
    );
}

/// Duplicates in set and map lists are not checked on an update of an object that had some
/// already (anywhere), as `ValidateListSetsAndMaps` ratchets them.
#[test]
fn updates_of_objects_with_duplicates_ratchet_duplicates() {
    let duplicated = json!({"mode": "fast", "tags": ["a", "a"]});
    assert_eq!(
        update_errors(json!({"mode": "fast"}), duplicated.clone()),
        ["spec.tags[1]: Duplicate value: \"a\""]
    );
    let more = json!({"mode": "fast", "tags": ["a", "a", "b"],
        "ports": [{"port": 1}, {"port": 1}]});
    assert_eq!(update_errors(duplicated, more), Vec::<String>::new());
}

#[test]
fn pruning_drops_undeclared_fields_and_reports_them_sorted_metadata_first() {
    let mut object = json!({
        "apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g", "bogus": 1},
        "spec": {"mode": "fast", "zzz": 1, "aaa": {"b": 2}, "ports": [{"port": 1, "x": 2}]},
        "other": true
    });
    let unknown = gadget().prune(&mut object);
    assert_eq!(
        unknown,
        [
            "metadata.bogus",
            "other",
            "spec.aaa",
            "spec.ports[0].x",
            "spec.zzz"
        ]
    );
    assert_eq!(
        object["spec"],
        json!({"mode": "fast", "ports": [{"port": 1}]})
    );
    assert_eq!(object["metadata"], json!({"name": "g"}));
}

#[test]
fn preserved_unknown_fields_stay_but_declared_ones_are_pruned_below() {
    let mut object = json!({"spec": {"extra": {"anything": [1], "known": {"a": "x", "b": "y"}}}});
    let unknown = gadget().prune(&mut object);
    assert_eq!(unknown, ["spec.extra.known.b"]);
    assert_eq!(
        object["spec"]["extra"],
        json!({"anything": [1], "known": {"a": "x"}})
    );
}

#[test]
fn embedded_resources_keep_type_fields_and_object_meta_fields_only() {
    let mut object = json!({"spec": {"template": {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "bogus": 1}, "spec": {"any": 1}}}});
    let unknown = gadget().prune(&mut object);
    assert_eq!(unknown, ["spec.template.metadata.bogus"]);
    assert_eq!(object["spec"]["template"]["metadata"], json!({"name": "x"}));
    assert_eq!(object["spec"]["template"]["spec"], json!({"any": 1}));
}

#[test]
fn map_values_are_pruned_by_additional_properties() {
    let s = schema(
        json!({"type": "object", "properties": {"m": {"type": "object",
        "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}}}}),
    );
    let mut object = json!({"m": {"k": {"a": "x", "b": "y"}}});
    assert_eq!(s.prune(&mut object), ["m.k.b"]);
}

#[test]
fn defaults_fill_missing_fields_and_defaults_inside_defaults() {
    let mut object = json!({"spec": {"mode": "fast", "ports": [{"port": 80}]}});
    gadget().apply_defaults(&mut object);
    assert_eq!(object["spec"]["replicas"], 1);
    assert_eq!(object["spec"]["nested"], json!({"a": "x"}));
    assert_eq!(
        object["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}])
    );
}

#[test]
fn nulls_are_dropped_unless_nullable_and_defaulted_when_a_default_exists() {
    let mut object = json!({"spec": {"mode": null, "replicas": null, "nested": {"b": null}}});
    gadget().apply_defaults(&mut object);
    assert!(object["spec"].get("mode").is_none());
    assert_eq!(object["spec"]["replicas"], 1);
    assert_eq!(object["spec"]["nested"], json!({"a": "x", "b": null}));
}

#[test]
fn a_valid_object_has_no_errors() {
    assert!(errors(valid_spec()).is_empty());
}

#[test]
fn types_are_checked_with_the_type_found_as_the_value() {
    assert_eq!(
        errors(json!({"mode": "fast", "replicas": "two"})),
        [
            "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
        ]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "labels": {"a": 1}})),
        [
            "spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\""
        ]
    );
}

#[test]
fn required_fields_are_reported_at_their_paths() {
    assert_eq!(errors(json!({})), ["spec.mode: Required value"]);
    assert_eq!(
        errors(json!({"mode": "fast", "ports": [{"protocol": "UDP"}]})),
        ["spec.ports[0].port: Required value"]
    );
}

#[test]
fn enums_list_the_supported_values() {
    assert_eq!(
        errors(json!({"mode": "medium"})),
        ["spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\""]
    );
}

#[test]
fn bounds_are_checked_inclusive_and_exclusive() {
    assert_eq!(
        errors(json!({"mode": "fast", "replicas": 11})),
        [
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "replicas": -1})),
        [
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
        ]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "ratio": 0})),
        ["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]
    );
}

#[test]
fn string_rules_stop_at_the_first_that_fails() {
    assert_eq!(
        errors(json!({"mode": "fast", "name": "ABCDEFG"})),
        ["spec.name: Too long: may not be more than 5 bytes"]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "name": "a"})),
        ["spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long"]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "name": "AB"})),
        ["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"]
    );
}

#[test]
fn item_counts_are_checked() {
    assert_eq!(
        errors(json!({"mode": "fast", "tags": ["a", "b", "c", "d"]})),
        ["spec.tags: Too many: 4: must have at most 3 items"]
    );
    assert_eq!(
        errors(json!({"mode": "fast", "tags": []})),
        ["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
    );
}

#[test]
fn sets_and_maps_refuse_duplicates() {
    assert_eq!(
        errors(json!({"mode": "fast", "tags": ["a", "a"]})),
        ["spec.tags[1]: Duplicate value: \"a\""]
    );
    assert_eq!(
        errors(
            json!({"mode": "fast", "ports": [{"port": 1, "protocol": "TCP"}, {"port": 1, "protocol": "TCP"}]})
        ),
        ["spec.ports[1]: Duplicate value: {\"port\":1,\"protocol\":\"TCP\"}"]
    );
}

#[test]
fn int_or_string_accepts_both_and_nothing_else() {
    assert!(errors(json!({"mode": "fast", "port": "http"})).is_empty());
    assert!(errors(json!({"mode": "fast", "port": 80})).is_empty());
    assert_eq!(
        errors(json!({"mode": "fast", "port": true})),
        [
            "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\""
        ]
    );
}

#[test]
fn formats_are_checked() {
    assert!(errors(json!({"mode": "fast", "when": "2024-01-01T00:00:00Z"})).is_empty());
    assert_eq!(
        errors(json!({"mode": "fast", "when": "yesterday"})),
        [
            "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""
        ]
    );
}

#[test]
fn any_of_needs_one_match() {
    assert!(errors(json!({"mode": "fast", "choice": "b"})).is_empty());
    assert_eq!(
        errors(json!({"mode": "fast", "choice": "c"})),
        [
            "<nil>: Invalid value: \"\": \"spec.choice\" must validate at least one schema (anyOf)",
            "spec.choice: Unsupported value: \"c\": supported values: \"a\""
        ]
    );
}

/// `objectmeta.Validate` of the embedded resources of a gadget with `spec`.
fn embedded_errors(spec: Value) -> Vec<String> {
    let object = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    gadget()
        .validate_embedded(&object)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    // Checked as embedded resources, not by the schema.
    assert!(errors(json!({"mode": "fast", "template": {"metadata": {}}})).is_empty());
    assert_eq!(
        embedded_errors(json!({"mode": "fast", "template": {"metadata": {}}})),
        [
            "spec.template.apiVersion: Required value",
            "spec.template.kind: Required value"
        ]
    );
    assert_eq!(
        embedded_errors(json!({"template": {"apiVersion": "a/b/c", "kind": "Bad_Kind"}})),
        [
            "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
            "spec.template.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
}

#[test]
fn embedded_metadata_is_object_metadata() {
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "a/b", "labels": {"ok": "x".repeat(64)}, "finalizers": ["bad finalizer"]}});
    assert_eq!(
        embedded_errors(json!({"template": template})),
        [
            "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
            &format!(
                "spec.template.metadata.labels: Invalid value: \"{}\": must be no more than 63 bytes",
                "x".repeat(64)
            ),
            "spec.template.metadata.finalizers: Invalid value: \"bad finalizer\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ]
    );
    let object =
        json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": "x"}}});
    assert_eq!(
        gadget().coerce_error(&object).as_deref(),
        Some(
            "spec.template.metadata: Invalid value: \"x\": json: cannot unmarshal string into Go value of type v1.ObjectMeta"
        )
    );
    let object = json!({"spec": {"template": {"apiVersion": "v1", "kind": 1}}});
    assert_eq!(
        gadget().coerce_error(&object).as_deref(),
        Some("spec.template.kind: Invalid value: 1: must be a string")
    );
}

#[test]
fn string_formats_are_checked_as_kube_openapi_checks_them() {
    use super::formats::valid;
    let cases: [(&str, &[&str], &[&str]); 16] = [
        (
            "email",
            &["a@b", "Ann <ann@example.com>", "x.y+z@example.com"],
            &["nope", "a@", "@b", "a b@c"],
        ),
        (
            "uri",
            &["http://example.com/x?y", "/abs/path", "mailto:a@b"],
            &["rel/path", "", "http://a b/"],
        ),
        (
            "hostname",
            &["example.com", "a", "xn--bcher-kva.example"],
            &["-a.com", "a..b", "a_b.com"],
        ),
        (
            "ipv4",
            &["1.2.3.4", "001.2.3.4", "::ffff:1.2.3.4"],
            &["1.2.3", "256.1.1.1", "::1"],
        ),
        ("ipv6", &["::1", "fe80::1"], &["1.2.3.4", "::g"]),
        (
            "cidr",
            &["10.0.0.0/8", "::/0"],
            &["10.0.0.0", "10.0.0.0/33"],
        ),
        (
            "mac",
            &["01:23:45:67:89:ab", "0123.4567.89ab"],
            &["01:23:45", "0123.4567"],
        ),
        (
            "uuid",
            &[
                "a987fbc9-4bed-3078-cf07-9141ba07c9f3",
                "A987FBC94BED3078CF079141BA07C9F3",
            ],
            &["123"],
        ),
        (
            "uuid4",
            &["a987fbc9-4bed-4078-8f07-9141ba07c9f3"],
            &["a987fbc9-4bed-3078-cf07-9141ba07c9f3"],
        ),
        ("isbn", &["0321751043", "978-0321751041"], &["0321751044"]),
        (
            "creditcard",
            &["4111 1111 1111 1111"],
            &["4111 1111 1111 1112"],
        ),
        ("ssn", &["123-45-6789"], &["123456789"]),
        ("byte", &["aGk="], &["", "a"]),
        ("date", &["2024-02-29"], &["2023-02-29", "2024-1-01"]),
        (
            "date-time",
            &["2024-01-01T10:00:00Z", "2024-01-01t10:00:00.5+01:00"],
            &["2024-01-01", "2024-01-01T25:00:00Z"],
        ),
        ("duration", &["1h30m", "5 days", "3 hours"], &["soon", ""]),
    ];
    for (format, good, bad) in cases {
        for text in good {
            assert!(valid(format, text), "{format}: {text:?} should pass");
        }
        for text in bad {
            assert!(!valid(format, text), "{format}: {text:?} should fail");
        }
    }
    assert!(valid("k8s-short-name", "web-1") && !valid("k8s-short-name", "Web"));
    assert!(valid("k8s-long-name", "a.b-c") && !valid("k8s-long-name", "a..b"));
    assert!(valid("password", "") && valid("quantity", "nonsense") && valid("money", "x"));
    assert!(super::formats::unrecognized("string", "money"));
    assert!(super::formats::unrecognized("integer", "date"));
    assert!(!super::formats::unrecognized("string", "date-time"));
}

#[test]
fn nulls_are_type_errors_unless_nullable() {
    assert!(errors(json!({"mode": "fast", "nested": {"b": null}})).is_empty());
    assert_eq!(
        errors(json!({"mode": "fast", "name": null})),
        ["spec.name: Invalid value: \"null\": spec.name in body must be of type string: \"null\""]
    );
}

#[test]
fn parsing_reports_what_is_not_structural() {
    let mut problems = Vec::new();
    Schema::parse(
        &json!({"type": "object", "properties": {
            "a": {"properties": {"x": {"type": "string"}}},
            "b": {"type": "array"},
            "c": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map"},
            "d": {"type": "object", "properties": {"x": {"type": "string"}},
                "additionalProperties": {"type": "string"}},
            "e": {"type": "string", "pattern": "("}
        }}),
        "spec.versions[0].schema.openAPIV3Schema",
        &mut problems,
    );
    let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
    assert!(
        fields.contains(&"spec.versions[0].schema.openAPIV3Schema.properties[a].type"),
        "{fields:?}"
    );
    assert!(fields.contains(&"spec.versions[0].schema.openAPIV3Schema.properties[b].items"));
    assert!(fields.contains(
        &"spec.versions[0].schema.openAPIV3Schema.properties[c].x-kubernetes-list-map-keys"
    ));
    assert!(
        fields.contains(
            &"spec.versions[0].schema.openAPIV3Schema.properties[d].additionalProperties"
        )
    );
    assert!(fields.contains(&"spec.versions[0].schema.openAPIV3Schema.properties[e].pattern"));
}

/// The errors of a custom resource whose `spec.x` has the schema `field` and the value
/// `value`, given as JSON text (`3.0` and `1e3` are floats, as the API server decodes them).
fn x_errors(field: Value, value: &str) -> Vec<String> {
    let root = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"x": field}}}}));
    let value: Value = serde_json::from_str(value).expect("JSON");
    let object = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"x": value}});
    root.validate(&object, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

const CHECKED_INT32: &str =
    "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.x";

/// kube-openapi's type validator checks the format first: a fraction in an integer field with
/// a format is a `float64`, not of that format (then the range check fails too).
#[test]
fn a_fraction_in_an_integer_field_with_a_format_is_a_float64_of_the_wrong_format() {
    let int32 = json!({"type": "integer", "format": "int32"});
    assert_eq!(
        x_errors(int32.clone(), "1.5"),
        [
            "spec.x: Invalid value: \"float64\": spec.x in body must be of type int32: \"float64\"",
            CHECKED_INT32
        ]
    );
    assert_eq!(
        x_errors(json!({"type": "integer", "format": "int64"}), "-2.5"),
        [
            "spec.x: Invalid value: \"float64\": spec.x in body must be of type int64: \"float64\"",
            "<nil>: Invalid value: \"\": Checked value must be of type integer with format int64 in spec.x"
        ]
    );
    // Without a format, the type is checked: a fraction is a `number`.
    assert_eq!(
        x_errors(json!({"type": "integer"}), "1.5"),
        [
            "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: \"number\"",
            "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.x"
        ]
    );
}

/// A value that is neither a number, a string nor an array, in a field with a format, has no
/// data format: `must be of type int32: ""`.
#[test]
fn a_boolean_or_an_object_in_a_field_with_a_format_has_no_format() {
    for (field, value, format) in [
        (
            json!({"type": "integer", "format": "int32"}),
            "true",
            "int32",
        ),
        (
            json!({"type": "integer", "format": "int64"}),
            "{\"a\":1}",
            "int64",
        ),
        (
            json!({"type": "number", "format": "float"}),
            "true",
            "float",
        ),
        (
            json!({"type": "number", "format": "double"}),
            "{}",
            "double",
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            "false",
            "date-time",
        ),
    ] {
        assert_eq!(
            x_errors(field, value),
            [format!(
                "spec.x: Invalid value: \"\": spec.x in body must be of type {format}: \"\""
            )],
            "{value}"
        );
    }
}

/// Strings and arrays skip the format check: in a numeric field they fail the type check.
#[test]
fn a_string_or_an_array_in_a_numeric_field_with_a_format_is_of_the_wrong_type() {
    let int32 = json!({"type": "integer", "format": "int32"});
    assert_eq!(
        x_errors(int32.clone(), "\"5\""),
        ["spec.x: Invalid value: \"string\": spec.x in body must be of type integer: \"string\""]
    );
    assert_eq!(
        x_errors(int32, "[1]"),
        ["spec.x: Invalid value: \"array\": spec.x in body must be of type integer: \"array\""]
    );
    assert_eq!(
        x_errors(json!({"type": "number", "format": "double"}), "\"5\""),
        ["spec.x: Invalid value: \"string\": spec.x in body must be of type number: \"string\""]
    );
}

/// `isFloatInt`: a whole float (`3.0`, `1e3`, or within a relative 1e-9 of its truncation)
/// within ±(2^53 - 1) passes an integer field, with or without a format; the range check
/// then takes it as Go prints it.
#[test]
fn a_whole_float_passes_an_integer_field() {
    let int32 = json!({"type": "integer", "format": "int32"});
    for value in ["3.0", "1e3", "-0", "-4.0"] {
        assert!(x_errors(int32.clone(), value).is_empty(), "{value}");
        assert!(
            x_errors(json!({"type": "integer"}), value).is_empty(),
            "{value}"
        );
    }
    assert_eq!(x_errors(int32.clone(), "1.0000000001"), [CHECKED_INT32]);
    assert_eq!(
        x_errors(int32.clone(), "9007199254740991.0"),
        [CHECKED_INT32]
    );
    // Truncated towards zero, so not within 1e-9; past 2^53 - 1, never whole.
    for value in ["0.9999999999", "-1.0000000001"] {
        assert_eq!(x_errors(int32.clone(), value).len(), 2, "{value}");
    }
    assert_eq!(
        x_errors(
            json!({"type": "integer", "format": "int64"}),
            "9007199254740993.0"
        ),
        ["spec.x: Invalid value: \"float64\": spec.x in body must be of type int64: \"float64\""]
    );
}

/// `isIntFloat`: an integer passes a number field of any format.
#[test]
fn an_integer_passes_a_number_field_of_any_format() {
    for format in ["float", "double", ""] {
        let field = json!({"type": "number", "format": format});
        assert!(x_errors(field.clone(), "3").is_empty(), "{format}");
        assert!(x_errors(field, "1.5").is_empty(), "{format}");
    }
}

/// An integer past int64 is a `float64` to the API server: a `number`, not an `integer`.
#[test]
fn an_integer_past_int64_is_a_float() {
    assert_eq!(
        x_errors(json!({"type": "integer"}), "10000000000000000000"),
        [
            "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: \"number\"",
            "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.x"
        ]
    );
    assert_eq!(
        x_errors(json!({"type": "integer", "format": "int32"}), "3000000000"),
        [CHECKED_INT32]
    );
    assert_eq!(
        x_errors(json!({"type": "string"}), "10000000000000000000"),
        ["spec.x: Invalid value: \"number\": spec.x in body must be of type string: \"number\""]
    );
}

/// A whole float is still a `number` where the type check fails.
#[test]
fn a_whole_float_is_a_number_in_a_field_of_another_type() {
    assert_eq!(
        x_errors(json!({"type": "string"}), "3.0"),
        ["spec.x: Invalid value: \"number\": spec.x in body must be of type string: \"number\""]
    );
    assert_eq!(
        x_errors(json!({"type": "boolean"}), "3"),
        ["spec.x: Invalid value: \"integer\": spec.x in body must be of type boolean: \"integer\""]
    );
}

/// A number in a string field with a format fails the format check with its data format; an
/// array in it passes (kube-openapi checks neither its type nor its format).
#[test]
fn a_number_in_a_string_field_with_a_format_names_its_data_format_and_an_array_passes() {
    let when = json!({"type": "string", "format": "date-time"});
    assert_eq!(
        x_errors(when.clone(), "3"),
        ["spec.x: Invalid value: \"int64\": spec.x in body must be of type date-time: \"int64\""]
    );
    assert_eq!(
        x_errors(when.clone(), "3.0"),
        [
            "spec.x: Invalid value: \"float64\": spec.x in body must be of type date-time: \"float64\""
        ]
    );
    assert!(x_errors(when, "[1]").is_empty());
}

/// apiextensions-apiserver drops a format it does not support for the type (`uint32`,
/// `float64`, any on a boolean or an integer's `float`): the type alone is checked.
#[test]
fn unsupported_formats_are_no_format() {
    assert_eq!(
        x_errors(json!({"type": "integer", "format": "uint32"}), "1.5"),
        [
            "spec.x: Invalid value: \"number\": spec.x in body must be of type integer: \"number\"",
            "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.x"
        ]
    );
    assert!(x_errors(json!({"type": "integer", "format": "uint32"}), "-1").is_empty());
    assert_eq!(
        x_errors(json!({"type": "number", "format": "float64"}), "true"),
        ["spec.x: Invalid value: \"boolean\": spec.x in body must be of type number: \"boolean\""]
    );
    assert_eq!(
        x_errors(json!({"type": "boolean", "format": "int32"}), "3"),
        ["spec.x: Invalid value: \"integer\": spec.x in body must be of type boolean: \"integer\""]
    );
    assert_eq!(
        x_errors(json!({"type": "integer", "format": "float"}), "true"),
        ["spec.x: Invalid value: \"boolean\": spec.x in body must be of type integer: \"boolean\""]
    );
}

/// An int-or-string takes a whole float (`isFloatInt`), unchecked for range.
#[test]
fn int_or_string_takes_a_whole_float() {
    let port = json!({"x-kubernetes-int-or-string": true});
    for value in ["3.0", "1.0000000001", "1e3"] {
        assert!(x_errors(port.clone(), value).is_empty(), "{value}");
    }
    assert_eq!(
        x_errors(port, "0.9999999999"),
        [
            "spec.x: Invalid value: \"number\": spec.x in body must be of type integer,string: \"number\""
        ]
    );
}

/// The status validator's errors are under `status`; one naming no field is at `status`.
#[test]
fn a_status_error_naming_no_field_is_at_status() {
    let root = schema(json!({"type": "object", "properties": {
        "status": {"type": "object", "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"}}}}}));
    let object = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "status": {"observedGeneration": 1.5}});
    let errors: Vec<String> = root
        .validate_status(&object, None)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        [
            "status.observedGeneration: Invalid value: \"float64\": observedGeneration in body must be of type int64: \"float64\"",
            "status: Invalid value: \"\": Checked value must be of type integer with format int64 in observedGeneration"
        ]
    );
}
