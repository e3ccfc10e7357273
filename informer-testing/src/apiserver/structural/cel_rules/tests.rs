use serde_json::{Value, json};

use super::super::{ProblemKind, Schema};
use super::{escape, go_rule_struct, ratcheted_warnings, validate};

/// A resource schema whose `spec` is `spec`.
fn schema(spec: Value) -> Schema {
    let mut problems = Vec::new();
    let schema = Schema::resource(
        &json!({"type": "object", "properties": {"spec": spec}}),
        "",
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:?}");
    schema
}

/// The errors of `spec` (and of `old_spec`, on update) against a rule on `spec`.
fn errors(spec_schema: Value, spec: Value, old_spec: Option<Value>) -> Vec<String> {
    let schema = schema(spec_schema);
    let object = json!({"apiVersion": "example.com/v1", "kind": "Ruler",
                        "metadata": {"name": "r1", "labels": {"a": "b"}}, "spec": spec});
    let old = old_spec.map(|spec| {
        let mut old = object.clone();
        old["spec"] = spec;
        old
    });
    validate(&schema, &object, old.as_ref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Whether `rule` holds on `spec`, a value of `spec_schema`.
fn holds(spec_schema: Value, rule: &str, spec: Value) -> bool {
    let mut spec_schema = spec_schema;
    spec_schema["x-kubernetes-validations"] = json!([{"rule": rule}]);
    let found = errors(spec_schema, spec, None);
    assert!(
        found.iter().all(|e| e.contains("failed rule")),
        "{rule}: {found:?}"
    );
    found.is_empty()
}

fn problems(spec: Value) -> Vec<(String, ProblemKind, String)> {
    let mut problems = Vec::new();
    Schema::parse(
        &json!({"type": "object", "properties": {"spec": spec}}),
        "spec.validation.openAPIV3Schema",
        &mut problems,
    );
    problems
        .into_iter()
        .map(|p| (p.field, p.kind, p.detail))
        .collect()
}

#[test]
fn a_failed_rule_is_an_invalid_value_at_the_node_with_its_message() {
    let spec = json!({"type": "object", "properties": {
        "min": {"type": "integer"}, "max": {"type": "integer"}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.min >= 0"}]});
    assert_eq!(
        errors(spec.clone(), json!({"min": 5, "max": 3}), None),
        ["spec: Invalid value: min must not exceed max"]
    );
    assert_eq!(
        errors(spec, json!({"min": -1, "max": 3}), None),
        ["spec: Invalid value: failed rule: self.min >= 0"]
    );
}

#[test]
fn scalars_show_their_value_and_the_root_is_nil() {
    let spec = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self != 'x'"}]});
    assert_eq!(
        errors(spec, json!("x"), None),
        ["spec: Invalid value: \"x\": failed rule: self != 'x'"]
    );
    let mut problems = Vec::new();
    let root = Schema::resource(
        &json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('r')", "message": "name must start with r"},
            {"rule": "!has(self.metadata.labels)", "message": "labels are not visible"}]}),
        "",
        &mut problems,
    );
    let object =
        json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "labels": {"a": "b"}}});
    let found: Vec<String> = validate(&root, &object, None)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(found, ["<nil>: Invalid value: name must start with r"]);
}

#[test]
fn message_expression_reason_and_field_path_shape_the_error() {
    let spec = json!({"type": "object", "properties": {
        "mode": {"type": "string"}, "max": {"type": "integer"}, "tags": {"type": "object",
            "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "self.max == 1", "messageExpression": "'mode ' + self.mode + ' allows 1'",
             "reason": "FieldValueForbidden", "fieldPath": ".max"},
            {"rule": "!('a.b' in self.tags)", "reason": "FieldValueRequired", "message": "no a.b",
             "fieldPath": ".tags['a.b']"},
            {"rule": "false", "messageExpression": "1", "message": "fallback"}]});
    assert_eq!(
        errors(
            spec,
            json!({"mode": "locked", "max": 3, "tags": {"a.b": "x"}}),
            None
        ),
        [
            "spec.max: Forbidden: mode locked allows 1",
            "spec.tags[a.b]: Required value: no a.b",
            "spec: Invalid value: fallback"
        ]
    );
}

#[test]
fn evaluation_errors_name_the_rule() {
    let spec = json!({"type": "object", "properties": {"limits": {"type": "object",
        "properties": {"cpu": {"type": "integer"}}}},
        "x-kubernetes-validations": [{"rule": "self.limits.cpu > 0"}]});
    assert_eq!(
        errors(spec, json!({}), None),
        [
            "spec: Invalid value: \"object\": no such key: limits evaluating rule: self.limits.cpu > 0"
        ]
    );
}

#[test]
fn values_are_typed_by_the_schema() {
    let number = json!({"type": "number"});
    assert!(holds(
        number.clone(),
        "type(self) == double && self == 1.0",
        json!(1)
    ));
    assert!(holds(
        json!({"type": "integer"}),
        "type(self) == int",
        json!(7)
    ));
    let int_or_string = json!({"x-kubernetes-int-or-string": true});
    assert!(holds(int_or_string.clone(), "type(self) == int", json!(3)));
    assert!(holds(int_or_string, "type(self) == string", json!("3%")));
    assert!(holds(
        json!({"type": "string", "format": "date-time"}),
        "self < timestamp('2030-01-01T00:00:00Z')",
        json!("2025-05-01T10:00:00Z")
    ));
    assert!(holds(
        json!({"type": "string", "format": "duration"}),
        "self > duration('1m')",
        json!("1h")
    ));
    assert!(holds(
        json!({"type": "string", "format": "byte"}),
        "self == b'hi'",
        json!("aGk=")
    ));
    let object = json!({"type": "object", "properties": {
        "name-prefix": {"type": "string"}, "namespace": {"type": "string"},
        "a__b": {"type": "string"}, "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    assert!(holds(
        object,
        "self.name__dash__prefix == 'x' && self.__namespace__ == 'n' && self.a__underscores__b == 'u' && self.free == {}",
        json!({"name-prefix": "x", "namespace": "n", "a__b": "u", "free": {"hidden": 1}})
    ));
}

#[test]
fn transition_rules_run_on_update_only_where_the_old_value_correlates() {
    let spec = json!({"type": "object", "properties": {
        "class": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "class is immutable"}]},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "keeps its port"}]}}}});
    let old =
        json!({"class": "gold", "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]});
    assert!(errors(spec.clone(), old.clone(), None).is_empty());
    assert_eq!(
        errors(
            spec.clone(),
            json!({"class": "silver", "ports": [{"name": "b", "port": 3}, {"name": "a", "port": 1}, {"name": "c", "port": 9}]}),
            Some(old.clone())
        ),
        [
            "spec.class: Invalid value: \"silver\": class is immutable",
            "spec.ports[0]: Invalid value: keeps its port"
        ]
    );
    // A field set by the update has no old value: its transition rule does not run.
    assert!(errors(spec, old, Some(json!({}))).is_empty());
}

#[test]
fn optional_old_self_runs_without_an_old_value() {
    let spec = json!({"type": "object", "properties": {"owner": {"type": "string",
        "x-kubernetes-validations": [{"rule": "oldSelf.hasValue() ? oldSelf.value() == self : self == 'ann'",
            "optionalOldSelf": true, "message": "owner"}]}}});
    assert!(errors(spec.clone(), json!({"owner": "ann"}), None).is_empty());
    assert_eq!(
        errors(spec.clone(), json!({"owner": "bob"}), None),
        ["spec.owner: Invalid value: \"bob\": owner"]
    );
    assert_eq!(
        errors(spec, json!({"owner": "bob"}), Some(json!({"owner": "ann"}))),
        ["spec.owner: Invalid value: \"bob\": owner"]
    );
}

#[test]
fn unchanged_values_are_not_held_to_rules_without_old_self() {
    let spec = json!({"type": "object", "properties": {
        "min": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 2"}]},
        "tags": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}}}});
    let old = json!({"min": 1, "tags": ["long"]});
    let unchanged = errors(
        spec.clone(),
        json!({"min": 1, "tags": ["long"]}),
        Some(old.clone()),
    );
    assert!(unchanged.is_empty(), "{unchanged:?}");
    assert_eq!(
        errors(spec, json!({"min": 0, "tags": ["long", "x"]}), Some(old)),
        [
            "spec.min: Invalid value: 0: failed rule: self >= 2",
            "spec.tags[0]: Invalid value: \"long\": failed rule: self.size() < 3"
        ]
    );
}

#[test]
fn the_kubernetes_libraries_are_there() {
    let list = json!({"type": "array", "items": {"type": "integer"}});
    for rule in [
        "self.isSorted() && self.sum() == 6 && self.min() == 1 && self.max() == 3",
        "self.indexOf(2) == 1 && self.lastIndexOf(9) == -1",
        "self.map(x, x * 2).filter(x, x > 2) == [4, 6] && self.exists_one(x, x == 2)",
        "self.slice(1, 2) == [2] && self.reverse() == [3, 2, 1]",
    ] {
        assert!(holds(list.clone(), rule, json!([1, 2, 3])), "{rule}");
    }
    assert!(!holds(list, "self.isSorted()", json!([2, 1])));
    let text = json!({"type": "string"});
    for rule in [
        "self.lowerAscii() == 'a-b.c' && self.upperAscii() == 'A-B.C'",
        "self.split('.') == ['A-b', 'c'] && ['x', 'y'].join('-') == 'x-y'",
        "self.replace('-', '_') == 'A_b.c' && ' x '.trim() == 'x'",
        "self.substring(2) == 'b.c' && self.charAt(0) == 'A' && self.indexOf('b') == 2 && self.lastIndexOf('.') == 3",
        "self.find('[a-z]') == 'b' && self.findAll('[a-z]') == ['b', 'c'] && self.findAll('[a-z]', 1) == ['b']",
        "self.matches('^A') && self.startsWith('A') && self.endsWith('c') && self.contains('-')",
    ] {
        assert!(holds(text.clone(), rule, json!("A-b.c")), "{rule}");
    }
}

#[test]
fn rules_that_do_not_compile_are_problems_of_the_crd() {
    let found = problems(json!({"type": "object", "x-kubernetes-validations": [
        {"rule": "self.a =="}, {"rule": ""}, {"rule": "true", "reason": "Nope"},
        {"rule": "true", "fieldPath": ".b"}, {"rule": "true", "messageExpression": "'a' +"}]}));
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(found.len(), 5, "{found:?}");
    assert_eq!(found[0].0, format!("{at}[0].rule"));
    assert_eq!(found[0].1, ProblemKind::InvalidShownAsIs);
    assert!(
        found[0].2.starts_with(
            "compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>'"
        ),
        "{}",
        found[0].2
    );
    assert!(
        found[0].2.ends_with("\n | self.a ==\n | .........^"),
        "{}",
        found[0].2
    );
    assert_eq!(
        found[1],
        (
            format!("{at}[1].rule"),
            ProblemKind::Required,
            "rule is not specified".into()
        )
    );
    assert_eq!(
        (found[2].0.as_str(), found[2].1),
        (
            format!("{at}[2].reason").as_str(),
            ProblemKind::NotSupported
        )
    );
    assert_eq!(
        found[3],
        (
            format!("{at}[3].fieldPath"),
            ProblemKind::Invalid,
            "must be a valid path".into()
        )
    );
    assert_eq!(found[4].0, format!("{at}[4].messageExpression"));
}

#[test]
fn transition_rules_under_atomic_lists_are_refused() {
    let found = problems(
        json!({"type": "object", "properties": {"list": {"type": "array",
        "items": {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}),
    );
    assert_eq!(
        found,
        [(
            "spec.validation.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations[0].rule".to_string(),
            ProblemKind::Invalid,
            "oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[list]".to_string()
        )]
    );
    assert!(
        problems(
            json!({"type": "object", "properties": {"list": {"type": "array",
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}})
        )
        .is_empty()
    );
}

#[test]
fn property_names_are_escaped_as_upstream() {
    assert_eq!(escape("name-prefix").as_deref(), Some("name__dash__prefix"));
    assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
    assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
    assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
    assert_eq!(escape("1abc"), None);
    assert_eq!(escape("a b"), None);
}

#[test]
fn a_rule_shown_as_a_bad_value_is_go_json_of_the_internal_rule() {
    assert_eq!(
        go_rule_struct(&json!({"rule": "self.a < 1 &&", "reason": "FieldValueForbidden"})),
        json!(
            r#"{"Rule":"self.a \u003c 1 \u0026\u0026","Message":"","MessageExpression":"","Reason":"FieldValueForbidden","FieldPath":"","OptionalOldSelf":null}"#
        )
    );
}

/// Ratcheting: a rule that an unchanged value breaks (and that does not use `oldSelf`) is not
/// an error but a warning of the error's text, as the real validator adds it; a changed value
/// is held to it.
#[test]
fn rules_unchanged_values_break_are_warnings() {
    let schema = schema(json!({"type": "object", "properties": {
        "owner": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self.startsWith('x')", "message": "must start with x"}]},
        "size": {"type": "integer"}}}));
    let object = |spec: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Ruler",
               "metadata": {"name": "r1"}, "spec": spec})
    };
    let old = object(json!({"owner": "oscar", "size": 1}));
    let resized = object(json!({"owner": "oscar", "size": 2}));
    assert_eq!(
        validate(&schema, &resized, Some(&old)),
        Vec::new(),
        "an unchanged value is not held to the rule"
    );
    assert_eq!(
        ratcheted_warnings(&schema, &resized, &old),
        ["spec.owner: Invalid value: \"oscar\": must start with x"]
    );
    let renamed = object(json!({"owner": "otto", "size": 2}));
    assert_eq!(
        ratcheted_warnings(&schema, &renamed, &old),
        Vec::<String>::new()
    );
    assert_eq!(validate(&schema, &renamed, Some(&old)).len(), 1);
}
