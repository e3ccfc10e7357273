//! Unit tests of field ownership and server-side apply: one test per rule of
//! structured-merge-diff and the field manager.

use serde_json::{Value, json};

use super::path::{Element, Path, Set, path};
use super::types::{ListKind, Shape, Types};
use super::walk::{compare, field_set, merge, remove_items};
use super::*;
use crate::apiserver::structural::Schema;

fn widget_schema() -> Schema {
    let mut problems = Vec::new();
    let schema = Schema::resource(
        &json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "integer"},
                    "color": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port", "protocol"],
                        "items": {"type": "object", "properties": {
                            "port": {"type": "integer"},
                            "protocol": {"type": "string", "default": "TCP"},
                            "name": {"type": "string"}
                        }}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                        "additionalProperties": {"type": "string"}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        }),
        "",
        &mut problems,
    );
    assert!(problems.is_empty(), "{problems:?}");
    schema
}

fn field(name: &str) -> Element {
    Element::Field(name.into())
}

fn fields_of(shape: Shape<'_>, value: Value) -> Value {
    field_set(shape, &value).unwrap().to_fields_v1()
}

fn writer(manager: &str) -> Writer {
    Writer::new(manager, "example.com/v1")
}

fn widget(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

fn stored(object: &Value) -> Value {
    let mut object = object.clone();
    object["metadata"]["uid"] = json!("u1");
    object
}

fn managers(object: &Value) -> Vec<(String, String, Value)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap().to_string(),
                        e["operation"].as_str().unwrap().to_string(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const NOW: &str = "2026-01-01T00:00:00Z";

fn empty_widget() -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget"})
}

/// The object a first apply of `spec` by `manager` stores.
fn created_by(schema: &Schema, spec: Value, manager: &str) -> Value {
    stored(&apply_as(schema, &empty_widget(), widget(spec), manager, false).unwrap())
}

/// A stored widget whose `spec.size` is `Update`d by manager `a`.
fn sized_by_a() -> Value {
    let mut live = stored(&widget(json!({"size": 1})));
    live["metadata"]["managedFields"] = json!([{"manager": "a", "operation": "Update",
        "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}}]);
    live
}

fn apply_as(
    schema: &Schema,
    live: &Value,
    config: Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    apply(
        Shape::Schema(schema),
        live,
        &config,
        &writer(manager),
        &Set::default(),
        force,
        NOW,
    )
}

#[test]
fn fields_v1_round_trips_members_children_and_every_element_kind() {
    let mut set = Set::default();
    set.insert(&[field("spec")]);
    set.insert(&[field("spec"), field("size")]);
    let key = Element::Key(vec![("name".into(), json!("a"))]);
    set.insert(&[field("spec"), field("containers"), key.clone()]);
    set.insert(&[field("spec"), field("containers"), key, field("image")]);
    set.insert(&[
        field("metadata"),
        field("finalizers"),
        Element::Value(json!("x")),
    ]);
    set.insert(&[field("args"), Element::Index(0)]);
    let json = set.to_fields_v1();
    assert_eq!(
        json,
        json!({
            "f:args": {"i:0": {}},
            "f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
            "f:spec": {".": {}, "f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}, "f:size": {}}
        })
    );
    assert_eq!(Set::from_fields_v1(&json).unwrap(), set);
}

#[test]
fn fields_v1_refuses_unknown_element_kinds() {
    assert!(Set::from_fields_v1(&json!({"x:nope": {}})).is_err());
    assert!(Set::from_fields_v1(&json!({"k:[1]": {}})).is_err());
    assert!(Set::from_fields_v1(&json!([])).is_err());
}

#[test]
fn paths_print_as_conflict_messages_print_them() {
    let p = path(&[
        field("spec"),
        field("ports"),
        Element::Key(vec![
            ("port".into(), json!(80)),
            ("protocol".into(), json!("TCP")),
        ]),
        field("name"),
    ]);
    assert_eq!(p.to_string(), ".spec.ports[port=80,protocol=\"TCP\"].name");
    assert_eq!(
        path(&[field("tags"), Element::Value(json!("a"))]).to_string(),
        ".tags[=\"a\"]"
    );
}

#[test]
fn set_operations_follow_structured_merge_diff() {
    let mut a = Set::default();
    a.insert(&[field("spec")]);
    a.insert(&[field("spec"), field("x")]);
    a.insert(&[field("spec"), field("y")]);
    let mut b = Set::default();
    b.insert(&[field("spec")]);
    // Difference removes members only; recursive difference removes what is under them too.
    assert_eq!(a.difference(&b).paths().len(), 2);
    assert!(a.recursive_difference(&b).is_empty());
    assert!(a.union(&b).has(&[field("spec"), field("x")]));
    assert_eq!(a.intersection(&b).paths(), vec![path(&[field("spec")])]);
}

#[test]
fn field_sets_hold_leaves_items_and_undeclared_keys_but_not_declared_structs() {
    let schema = widget_schema();
    let set = fields_of(
        Shape::Schema(&schema),
        widget(
            json!({"size": 1, "labels": {"a": "b"}, "tags": ["x"], "ports": [{"port": 80}], "args": ["a"]}),
        ),
    );
    assert_eq!(
        set["f:spec"],
        json!({
            "f:args": {},
            "f:labels": {"f:a": {}},
            "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
            "f:size": {},
            "f:tags": {"v:\"x\"": {}}
        }),
        "the map key is a member, the struct field spec is not; list keys use their defaults"
    );
}

#[test]
fn empty_and_null_fields_are_members() {
    let schema = widget_schema();
    let set = fields_of(
        Shape::Schema(&schema),
        widget(json!({"labels": {}, "color": null})),
    );
    assert_eq!(set["f:spec"], json!({"f:color": {}, "f:labels": {}}));
}

#[test]
fn atomic_maps_and_lists_are_one_field() {
    let schema = widget_schema();
    let set = fields_of(
        Shape::Schema(&schema),
        widget(json!({"selector": {"a": "b"}, "args": ["x", "y"]})),
    );
    assert_eq!(set["f:spec"], json!({"f:args": {}, "f:selector": {}}));
}

#[test]
fn preserved_unknown_fields_are_granular_maps_without_declared_fields() {
    let schema = widget_schema();
    let set = fields_of(
        Shape::Schema(&schema),
        widget(json!({"extra": {"a": {"b": 1}, "l": [1]}})),
    );
    assert_eq!(
        set["f:spec"]["f:extra"],
        json!({"f:a": {".": {}, "f:b": {}}, "f:l": {}})
    );
}

#[test]
fn merge_replaces_scalars_and_atomics_and_merges_maps() {
    let schema = widget_schema();
    let shape = Shape::Schema(&schema);
    let live = widget(json!({"size": 1, "color": "red", "args": ["a", "b"], "labels": {"x": "1"}}));
    let config = widget(json!({"size": 2, "args": ["c"], "labels": {"y": "2"}}));
    let merged = merge(shape, Some(&live), Some(&config)).unwrap().unwrap();
    assert_eq!(
        merged["spec"],
        json!({"size": 2, "color": "red", "args": ["c"], "labels": {"x": "1", "y": "2"}})
    );
}

#[test]
fn merge_of_map_lists_matches_items_by_key_and_keeps_the_live_order() {
    let schema = widget_schema();
    let shape = Shape::Schema(&schema);
    let live = widget(json!({"ports": [{"port": 1, "name": "a"}, {"port": 2, "name": "b"}]}));
    let config = widget(json!({"ports": [{"port": 3, "name": "c"}, {"port": 1, "name": "z"}]}));
    let merged = merge(shape, Some(&live), Some(&config)).unwrap().unwrap();
    assert_eq!(
        merged["spec"]["ports"],
        json!([{"port": 3, "name": "c"}, {"port": 1, "name": "z"}, {"port": 2, "name": "b"}])
    );
}

#[test]
fn merge_of_sets_adds_values_once() {
    let schema = widget_schema();
    let live = widget(json!({"tags": ["a", "b"]}));
    let config = widget(json!({"tags": ["b", "c"]}));
    let merged = merge(Shape::Schema(&schema), Some(&live), Some(&config))
        .unwrap()
        .unwrap();
    assert_eq!(merged["spec"]["tags"], json!(["a", "b", "c"]));
}

#[test]
fn configurations_with_duplicate_keys_do_not_merge() {
    let schema = widget_schema();
    let config = widget(json!({"ports": [{"port": 1}, {"port": 1}]}));
    assert!(merge(Shape::Schema(&schema), None, Some(&config)).is_err());
}

#[test]
fn compare_reports_added_modified_and_removed_leaves_and_added_maps() {
    let schema = widget_schema();
    let old = widget(json!({"size": 1, "color": "red"}));
    let new = widget(json!({"size": 2, "labels": {"a": "b"}}));
    let c = compare(Shape::Schema(&schema), &old, &new).unwrap();
    assert_eq!(
        c.modified.paths(),
        vec![path(&[field("spec"), field("size")])]
    );
    assert_eq!(
        c.removed.paths(),
        vec![path(&[field("spec"), field("color")])]
    );
    assert!(c.added.has(&[field("spec"), field("labels")]));
    assert!(c.added.has(&[field("spec"), field("labels"), field("a")]));
}

#[test]
fn compare_of_numbers_is_numeric() {
    let old = json!({"a": 1});
    let new = json!({"a": 1.0});
    assert!(
        compare(Shape::Deduced, &old, &new)
            .unwrap()
            .modified
            .is_empty()
    );
}

#[test]
fn remove_items_drops_members_with_their_children_and_emptied_parents() {
    let schema = widget_schema();
    let object = widget(json!({"size": 1, "labels": {"a": "b"}}));
    let mut set = Set::default();
    set.insert(&[field("spec"), field("labels"), field("a")]);
    let out = remove_items(Shape::Schema(&schema), &object, &set).unwrap();
    assert_eq!(out["spec"], json!({"size": 1}));
    let mut whole = Set::default();
    whole.insert(&[field("spec")]);
    let out = remove_items(Shape::Schema(&schema), &object, &whole).unwrap();
    assert!(out.get("spec").is_none());
}

#[test]
fn a_create_records_the_creator_with_dots_for_new_maps() {
    let schema = widget_schema();
    let mut new = widget(json!({"size": 1}));
    new["metadata"]["labels"] = json!({"app": "a"});
    let empty = empty_widget();
    track_update(
        Shape::Schema(&schema),
        &empty,
        &mut new,
        &writer("curl"),
        &Set::default(),
        NOW,
    );
    let entry = &new["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "curl");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "example.com/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(entry["time"], NOW);
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {".": {}, "f:size": {}}})
    );
}

#[test]
fn an_update_takes_the_fields_it_changes_from_other_managers() {
    let schema = widget_schema();
    let empty = empty_widget();
    let mut created = widget(json!({"size": 1, "color": "red"}));
    track_update(
        Shape::Schema(&schema),
        &empty,
        &mut created,
        &writer("a"),
        &Set::default(),
        NOW,
    );
    let live = stored(&created);
    let mut new = live.clone();
    new["spec"]["size"] = json!(2);
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &writer("b"),
        &Set::default(),
        NOW,
    );
    let found = managers(&new);
    assert_eq!(found[0].2, json!({"f:spec": {".": {}, "f:color": {}}}));
    assert_eq!(found[1].0, "b");
    assert_eq!(found[1].2, json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn an_update_that_changes_nothing_leaves_the_entries_alone() {
    let schema = widget_schema();
    let empty = empty_widget();
    let mut created = widget(json!({"size": 1}));
    track_update(
        Shape::Schema(&schema),
        &empty,
        &mut created,
        &writer("a"),
        &Set::default(),
        NOW,
    );
    let live = stored(&created);
    let mut new = live.clone();
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &writer("b"),
        &Set::default(),
        "2030-01-01T00:00:00Z",
    );
    assert_eq!(
        new["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
}

#[test]
fn reset_fields_are_not_owned_by_the_main_resource() {
    let schema = widget_schema();
    let empty = empty_widget();
    let mut new = widget(json!({"size": 1}));
    new["status"] = json!({"ready": true});
    let ignored = reset_fields(true, None);
    track_update(
        Shape::Schema(&schema),
        &empty,
        &mut new,
        &writer("a"),
        &ignored,
        NOW,
    );
    assert!(
        new["metadata"]["managedFields"][0]["fieldsV1"]
            .get("f:status")
            .is_none()
    );
}

#[test]
fn a_status_write_is_its_own_entry_with_the_subresource() {
    let schema = widget_schema();
    let live = sized_by_a();
    let mut new = live.clone();
    new["status"] = json!({"ready": true});
    let status_writer = writer("a").on(Some("status"));
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &status_writer,
        &reset_fields(true, Some("status")),
        NOW,
    );
    let entries = new["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["subresource"], "status");
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
}

#[test]
fn managed_fields_sent_as_one_empty_entry_reset_them_and_stop_tracking() {
    let schema = widget_schema();
    let live = sized_by_a();
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{}]);
    new["spec"]["size"] = json!(5);
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &writer("b"),
        &Set::default(),
        NOW,
    );
    assert!(new["metadata"].get("managedFields").is_none());
}

#[test]
fn invalid_managed_fields_in_an_update_fall_back_to_the_stored_ones() {
    let schema = widget_schema();
    let live = sized_by_a();
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "z", "operation": "Bogus"}]);
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &writer("b"),
        &Set::default(),
        NOW,
    );
    assert_eq!(managers(&new)[0].0, "a");
}

#[test]
fn more_than_ten_update_managers_merge_the_oldest_into_ancient_changes() {
    let schema = widget_schema();
    let mut live = stored(&widget(json!({})));
    let entries: Vec<Value> = (0..11)
        .map(|i| {
            json!({"manager": format!("m{i:02}"), "operation": "Update", "apiVersion": "example.com/v1",
                "time": format!("2026-01-01T00:00:{i:02}Z"), "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {format!("f:f{i}"): {}}}})
        })
        .collect();
    live["metadata"]["managedFields"] = json!(entries);
    let mut new = live.clone();
    new["spec"]["size"] = json!(1);
    track_update(
        Shape::Schema(&schema),
        &live,
        &mut new,
        &writer("late"),
        &Set::default(),
        "2026-01-01T00:01:00Z",
    );
    let found = managers(&new);
    assert_eq!(found.len(), 10);
    let ancient = found.iter().find(|m| m.0 == "ancient-changes").unwrap();
    assert_eq!(
        ancient.2,
        json!({"f:spec": {"f:f0": {}, "f:f1": {}, "f:f2": {}}})
    );
}

#[test]
fn an_apply_records_exactly_the_applied_fields() {
    let schema = widget_schema();
    let empty = empty_widget();
    let mut config = widget(json!({"size": 1, "color": "red"}));
    config["metadata"]["labels"] = json!({"app": "c"});
    let out = apply_as(&schema, &empty, config, "a", false).unwrap();
    let found = managers(&out);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1, "Apply");
    assert_eq!(
        found[0].2,
        json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:color": {}, "f:size": {}}})
    );
}

#[test]
fn an_apply_that_changes_another_managers_field_conflicts() {
    let schema = widget_schema();
    let live = created_by(&schema, json!({"size": 1, "color": "red"}), "a");
    let err = apply_as(
        &schema,
        &live,
        widget(json!({"color": "green"})),
        "b",
        false,
    )
    .unwrap_err();
    let api = err.into_api_error("x");
    assert_eq!(api.code(), 409);
    assert_eq!(
        api.message(),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.color"
    );
    let status = api.to_status();
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    assert_eq!(status["details"]["causes"][0]["field"], ".spec.color");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "conflict with \"a\""
    );
}

#[test]
fn conflicts_with_several_managers_are_grouped_by_manager() {
    let conflicts = vec![
        (
            "\"m2\" using v1".to_string(),
            path(&[field("spec"), field("size")]),
        ),
        (
            "\"curl\" using v1".to_string(),
            path(&[field("spec"), field("color")]),
        ),
        (
            "\"curl\" using v1".to_string(),
            path(&[field("metadata"), field("labels"), field("app")]),
        ),
    ];
    let api = ApplyError::Conflicts(conflicts).into_api_error("x");
    assert_eq!(
        api.message(),
        "Apply failed with 3 conflicts: conflicts with \"curl\" using v1:\n- .metadata.labels.app\n- .spec.color\nconflicts with \"m2\" using v1:\n- .spec.size"
    );
}

#[test]
fn applying_the_same_value_as_another_manager_shares_the_field() {
    let schema = widget_schema();
    let live = created_by(&schema, json!({"color": "red"}), "a");
    let out = apply_as(&schema, &live, widget(json!({"color": "red"})), "b", false).unwrap();
    let found = managers(&out);
    assert_eq!(found.len(), 2);
    assert!(
        found
            .iter()
            .all(|m| m.2 == json!({"f:spec": {"f:color": {}}}))
    );
}

#[test]
fn a_forced_apply_takes_the_conflicting_fields() {
    let schema = widget_schema();
    let live = created_by(&schema, json!({"size": 1, "color": "red"}), "a");
    let out = apply_as(&schema, &live, widget(json!({"color": "green"})), "b", true).unwrap();
    assert_eq!(out["spec"], json!({"size": 1, "color": "green"}));
    let found = managers(&out);
    assert_eq!(
        found[0],
        (
            "a".into(),
            "Apply".into(),
            json!({"f:spec": {"f:size": {}}})
        )
    );
    assert_eq!(
        found[1],
        (
            "b".into(),
            "Apply".into(),
            json!({"f:spec": {"f:color": {}}})
        )
    );
}

#[test]
fn fields_a_manager_stops_applying_are_removed_unless_someone_else_owns_them() {
    let schema = widget_schema();
    let live = created_by(
        &schema,
        json!({"size": 1, "color": "red", "tags": ["x"]}),
        "a",
    );
    let shared =
        stored(&apply_as(&schema, &live, widget(json!({"tags": ["x"]})), "b", false).unwrap());
    let out = apply_as(&schema, &shared, widget(json!({"size": 2})), "a", false).unwrap();
    assert_eq!(
        out["spec"],
        json!({"size": 2, "tags": ["x"]}),
        "color went, b's tag stayed"
    );
}

#[test]
fn a_manager_applying_nothing_loses_its_entry_and_its_fields() {
    let schema = widget_schema();
    let live = created_by(&schema, json!({"color": "red"}), "a");
    let out = apply_as(
        &schema,
        &live,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        "a",
        false,
    )
    .unwrap();
    assert!(out.get("spec").is_none());
    assert!(out["metadata"].get("managedFields").is_none());
}

#[test]
fn removed_map_list_items_go_item_by_item() {
    let schema = widget_schema();
    let live = created_by(&schema, json!({"ports": [{"port": 1}, {"port": 2}]}), "a");
    let live = stored(
        &apply_as(
            &schema,
            &live,
            widget(json!({"ports": [{"port": 3}]})),
            "b",
            false,
        )
        .unwrap(),
    );
    let out = apply_as(
        &schema,
        &live,
        widget(json!({"ports": [{"port": 2}]})),
        "a",
        false,
    )
    .unwrap();
    assert_eq!(out["spec"]["ports"], json!([{"port": 2}, {"port": 3}]));
}

#[test]
fn applying_to_an_object_without_managed_fields_makes_its_fields_before_first_apply() {
    let schema = widget_schema();
    let live = stored(&widget(json!({"size": 1})));
    let err = apply_as(&schema, &live, widget(json!({"size": 2})), "a", false).unwrap_err();
    assert_eq!(
        err.into_api_error("x").message(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using example.com/v1: .spec.size"
    );
}

#[test]
fn an_apply_of_unknown_fields_or_wrong_types_is_a_typed_error() {
    let schema = widget_schema();
    let empty = empty_widget();
    let err = apply_as(&schema, &empty, widget(json!({"bogus": 1})), "a", false).unwrap_err();
    let api = err.into_api_error("/w; example.com/v1, Kind=Widget");
    assert_eq!(api.code(), 500);
    assert_eq!(
        api.message(),
        "failed to create typed patch object (/w; example.com/v1, Kind=Widget): .spec.bogus: field not declared in schema"
    );
    let err = apply_as(&schema, &empty, widget(json!({"size": "big"})), "a", false).unwrap_err();
    assert!(
        err.into_api_error("x")
            .message()
            .ends_with(".spec.size: expected numeric (int or float), got string")
    );
}

#[test]
fn an_apply_must_name_the_requests_version_and_carry_no_managed_fields() {
    let schema = widget_schema();
    let empty = empty_widget();
    let mut other = widget(json!({}));
    other["apiVersion"] = json!("example.com/v2");
    assert_eq!(
        apply_as(&schema, &empty, other, "a", false)
            .unwrap_err()
            .into_api_error("x")
            .code(),
        400
    );
    let mut managed = widget(json!({}));
    managed["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    assert_eq!(
        apply_as(&schema, &empty, managed, "a", false)
            .unwrap_err()
            .into_api_error("x")
            .message(),
        "metadata.managedFields must be nil"
    );
}

#[test]
fn builtin_types_use_their_openapi_list_types() {
    let types = Types::builtin();
    let pod_spec = types
        .get("api.core.v1.PodSpec")
        .expect("PodSpec in the table");
    match &pod_spec.fields["containers"] {
        types::FieldType::List(ListKind::Map(keys), _) => assert_eq!(keys, &["name"]),
        other => panic!("containers are {other:?}"),
    }
    let container = types.get("api.core.v1.Container").unwrap();
    match &container.fields["ports"] {
        types::FieldType::List(ListKind::Map(keys), _) => {
            assert_eq!(keys, &["containerPort", "protocol"])
        }
        other => panic!("ports are {other:?}"),
    }
    let meta = types
        .get("apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    assert!(matches!(
        &meta.fields["finalizers"],
        types::FieldType::List(ListKind::Set, _)
    ));
    assert!(
        types
            .get("apimachinery.pkg.apis.meta.v1.LabelSelector")
            .unwrap()
            .atomic
    );
}

#[test]
fn pod_containers_merge_by_name_and_ports_by_port_and_protocol() {
    let shape = Shape::builtin("v1", "Pod");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "a", "ports": [{"containerPort": 80}]}]}});
    let set = field_set(shape, &pod).unwrap().to_fields_v1();
    assert_eq!(
        set["f:spec"]["f:containers"]["k:{\"name\":\"app\"}"],
        json!({".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}})
    );
}

#[test]
fn crd_status_conditions_are_a_map_by_type() {
    let shape = Shape::builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let old = json!({"status": {"conditions": null}});
    let new = json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}});
    let c = compare(shape, &old, &new).unwrap();
    let key = Element::Key(vec![("type".into(), json!("Established"))]);
    assert!(
        c.added
            .has(&[field("status"), field("conditions"), key.clone()])
    );
    assert!(
        c.added
            .has(&[field("status"), field("conditions"), key, field("status")])
    );
}

#[test]
fn user_agents_become_manager_names() {
    assert_eq!(
        manager_from_user_agent("kubectl/v1.32.4 (linux/amd64) kubernetes/abc"),
        "kubectl"
    );
    assert_eq!(manager_from_user_agent(""), "");
    assert_eq!(manager_from_user_agent(&"x".repeat(200)).len(), 128);
    assert_eq!(Writer::new("", "v1").manager, "unknown");
}

#[test]
fn manager_names_are_checked() {
    assert!(validate_manager("kubectl").is_empty());
    assert_eq!(validate_manager(&"x".repeat(129)).len(), 1);
    assert_eq!(
        validate_manager("a\u{7}b")[0].to_string(),
        // Go's `%q` (the real server answers `"a\x01b"` for U+0001).
        "fieldManager: Invalid value: \"a\\ab\": invalid character U+0007 (at position 1)"
    );
}

#[test]
fn the_builtin_table_parses() {
    let parsed = Types::parse(include_str!("builtin.txt")).unwrap();
    assert!(parsed.get("api.apps.v1.Deployment").is_some());
    assert!(Types::parse("type a\n  x struct missing\n").is_err());
    let _ = Path::default();
}

#[test]
fn the_last_applied_annotation_is_written_as_go_encodes_an_unstructured() {
    let mut stored = json!({"metadata": {"annotations": {LAST_APPLIED: "{}"}}});
    let config = json!({
        "spec": {"size": 9007199254740993_u64, "ratio": 2.0, "half": 0.5, "b": "<&>"},
        "metadata": {"annotations": {LAST_APPLIED: "old", "z": "1"}, "name": "w"},
    });
    sync_last_applied(&mut stored, &config);
    assert_eq!(
        stored["metadata"]["annotations"][LAST_APPLIED],
        "{\"metadata\":{\"annotations\":{\"z\":\"1\"},\"name\":\"w\"},\
         \"spec\":{\"b\":\"\\u003c\\u0026\\u003e\",\"half\":0.5,\"ratio\":2,\"size\":9007199254740993}}\n"
    );
}
