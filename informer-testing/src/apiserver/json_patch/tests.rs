use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn patched(mut doc: Value, patch: Value) -> Result<Value, JsonPatchError> {
    json_patch(&mut doc, &patch).map(|()| doc)
}

fn failed(result: Result<Value, JsonPatchError>) -> String {
    match result {
        Err(JsonPatchError::Failed(why)) => why,
        Err(other) => panic!("expected a failed operation, got {other:?}"),
        Ok(doc) => panic!(
            "expected a failed operation, got {} bytes",
            doc.to_string().len()
        ),
    }
}

#[test]
fn operations_follow_rfc_6902() {
    let doc = json!({"a": {"b": [1, 2]}, "c": "x"});
    let out = patched(
        doc,
        json!([
            {"op": "add", "path": "/a/b/1", "value": 9},
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "remove", "path": "/c"},
            {"op": "replace", "path": "/a/b/0", "value": 0},
            {"op": "copy", "from": "/a/b", "path": "/d"},
            {"op": "move", "from": "/d/0", "path": "/e"},
            {"op": "test", "path": "/e", "value": 0}
        ]),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"a": {"b": [0, 9, 2, 3]}, "d": [9, 2, 3], "e": 0})
    );
}

#[test]
fn pointers_unescape_tilde_and_slash() {
    let out = patched(
        json!({"a/b": 1, "m~n": 2}),
        json!([{"op": "replace", "path": "/a~1b", "value": 3},
               {"op": "remove", "path": "/m~0n"}]),
    )
    .unwrap();
    assert_eq!(out, json!({"a/b": 3}));
    failed(patched(
        json!({}),
        json!([{"op": "remove", "path": "/a~2"}]),
    ));
}

#[test]
fn moving_to_the_root_then_failing_is_an_error_not_a_panic() {
    let result = patched(
        json!({"metadata": {"name": "a"}, "x": {"y": 1}}),
        json!([{"op": "move", "from": "/x", "path": ""},
               {"op": "remove", "path": "/metadata/name"}]),
    );
    assert!(failed(result).contains("/metadata/name"));
}

#[test]
fn the_root_can_be_replaced_but_not_removed_or_moved_into_a_child() {
    assert_eq!(
        patched(
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": [1]}])
        )
        .unwrap(),
        json!([1])
    );
    assert!(
        failed(patched(
            json!({"a": 1}),
            json!([{"op": "remove", "path": ""}])
        ))
        .contains("whole")
    );
    assert!(
        failed(patched(
            json!({"a": {}}),
            json!([{"op": "move", "from": "", "path": "/a/b"}])
        ))
        .contains("own child")
    );
}

#[test]
fn missing_paths_and_bad_indices_fail() {
    for op in [
        json!({"op": "remove", "path": "/nope"}),
        json!({"op": "replace", "path": "/a/5", "value": 1}),
        json!({"op": "add", "path": "/a/3", "value": 1}),
        json!({"op": "add", "path": "/a/-1", "value": 1}),
        json!({"op": "add", "path": "/x/y", "value": 1}),
        json!({"op": "move", "from": "/nope", "path": "/b"}),
        json!({"op": "copy", "from": "/a/9", "path": "/b"}),
        json!({"op": "test", "path": "/a/0", "value": 2}),
        json!({"op": "remove", "path": "/a/-"}),
    ] {
        failed(patched(json!({"a": [1]}), json!([op])));
    }
}

#[test]
fn documents_that_are_not_lists_of_objects_are_malformed() {
    for patch in [
        json!({"op": "add"}),
        json!([1]),
        json!([{"op": "add", "path": "/a"}, "x"]),
    ] {
        assert!(
            matches!(
                patched(json!({}), patch.clone()),
                Err(JsonPatchError::Malformed(_))
            ),
            "{patch}"
        );
    }
}

#[test]
fn operations_with_unknown_kinds_or_bad_paths_fail_to_apply() {
    // The library reads an operation's fields only as it applies it: 422, not 400.
    for patch in [
        json!([{"path": "/a"}]),
        json!([{"op": 1, "path": "/a"}]),
        json!([{"op": "explode", "path": "/a"}]),
        json!([{"op": "move", "path": "/a"}]),
        json!([{"op": "add", "value": 1}]),
        json!([{"op": "add", "path": "a", "value": 1}]),
        json!([{"op": "remove", "path": "/a~2"}]),
    ] {
        failed(patched(json!({}), patch));
    }
}

#[test]
fn replace_sets_a_missing_key_and_test_of_a_missing_key_against_null_passes() {
    // gopkg.in/evanphx/json-patch.v4, which kube-apiserver applies JSON patches with.
    let out = patched(
        json!({"metadata": {"annotations": {"a": "1"}}, "list": [1]}),
        json!([
            {"op": "replace", "path": "/metadata/annotations/b", "value": "2"},
            {"op": "replace", "path": "/status", "value": {"ready": true}},
            {"op": "test", "path": "/metadata/labels", "value": null},
            {"op": "add", "path": "/empty"}
        ]),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"metadata": {"annotations": {"a": "1", "b": "2"}}, "list": [1],
               "status": {"ready": true}, "empty": null})
    );
    // What stays refused: a missing parent, an index past the end, a missing key tested
    // against a value.
    for op in [
        json!({"op": "replace", "path": "/metadata/labels/b", "value": "2"}),
        json!({"op": "replace", "path": "/list/1", "value": 2}),
        json!({"op": "test", "path": "/metadata/labels", "value": {}}),
        json!({"op": "test", "path": "/nope/x", "value": null}),
    ] {
        failed(patched(json!({"metadata": {}, "list": [1]}), json!([op])));
    }
}

#[test]
fn copies_cannot_grow_a_document_without_bound() {
    // Each copy of the root doubles the document.
    let patch: Vec<Value> = (0..64)
        .map(|i| json!({"op": "copy", "from": "", "path": format!("/c{i}")}))
        .collect();
    let patch = Value::Array(patch);
    assert!(failed(patched(json!({"seed": "x".repeat(1024)}), patch)).contains("accumulated size"));
}

#[test]
fn too_many_operations_are_refused() {
    let patch = Value::Array(vec![
        json!({"op": "test", "path": "", "value": {}});
        MAX_OPERATIONS + 1
    ]);
    assert_eq!(
        patched(json!({}), patch),
        Err(JsonPatchError::TooManyOperations(MAX_OPERATIONS + 1))
    );
}

fn pointer_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("0".to_string()),
            Just("1".to_string()),
            Just("-".to_string()),
            Just("~1".to_string()),
            Just("~".to_string()),
            Just("".to_string()),
            "[a-z0-9~]{0,3}",
        ],
        0..4,
    )
    .prop_map(|tokens| tokens.iter().map(|t| format!("/{t}")).collect())
}

fn value_strategy() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,3}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[ab01]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn operation_strategy() -> impl Strategy<Value = Value> {
    (
        prop_oneof![
            Just("add"),
            Just("remove"),
            Just("replace"),
            Just("move"),
            Just("copy"),
            Just("test"),
            Just("bogus"),
        ],
        pointer_strategy(),
        prop::option::of(pointer_strategy()),
        prop::option::of(value_strategy()),
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

proptest! {
    #[test]
    fn random_patches_apply_or_fail_cleanly(
        doc in value_strategy(),
        ops in prop::collection::vec(operation_strategy(), 0..8),
    ) {
        let mut target = doc.clone();
        match json_patch(&mut target, &Value::Array(ops)) {
            Ok(()) => {}
            Err(JsonPatchError::Malformed(why) | JsonPatchError::Failed(why)) => {
                prop_assert!(!why.is_empty());
            }
            Err(JsonPatchError::TooManyOperations(_)) => prop_assert!(false, "at most 8 operations"),
        }
    }
}
