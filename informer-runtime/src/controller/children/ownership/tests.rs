use std::collections::BTreeMap;

use informer_core::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::core::ObjectMeta;

use super::*;

fn meta(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
    let map = |pairs: &[(&str, &str)]| -> Option<BTreeMap<String, String>> {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
    };
    ObjectMeta {
        namespace: Some("child-ns".into()),
        labels: map(labels),
        annotations: map(annotations),
        ..ObjectMeta::default()
    }
}

#[test]
fn a_valid_name_is_its_own_label_value() {
    assert_eq!(label_value("secrets-of"), "secrets-of");
    assert_eq!(label_value("my_controller.v2"), "my_controller.v2");
}

#[test]
fn a_name_that_is_no_label_value_becomes_a_stable_hash() {
    let long = "a".repeat(64);
    for name in [long.as_str(), "-starts-with-dash", "has space", "ends-"] {
        let value = label_value(name);
        assert!(
            value.starts_with("c-") && value.len() == 18,
            "{name}: {value}"
        );
        assert_eq!(value, label_value(name), "the same in every call");
    }
    assert_ne!(label_value("has space"), label_value("has  space"));
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325, "FNV-1a's offset basis");
}

#[test]
fn children_in_the_parents_namespace_are_tied_by_owner_reference_others_by_labels() {
    let namespaced = Ownership::of::<ConfigMap>("c");
    assert_eq!(namespaced.tie(Some("a"), Some("a")), Tie::OwnerReference);
    assert_eq!(namespaced.tie(Some("a"), Some("b")), Tie::Labels);
    assert_eq!(
        namespaced.tie(Some("a"), None),
        Tie::Labels,
        "a cluster-scoped child"
    );
    let cluster = Ownership::of::<Namespace>("c");
    assert_eq!(cluster.tie(None, Some("b")), Tie::OwnerReference);
    assert_eq!(cluster.tie(None, None), Tie::OwnerReference);
}

#[test]
fn the_owner_reference_is_controlling_and_blocks_owner_deletion() {
    let parent = ObjectMeta {
        name: Some("app".into()),
        uid: Some("u-1".into()),
        ..ObjectMeta::default()
    };
    let reference = Ownership::of::<ConfigMap>("c").owner_reference(&parent);
    assert_eq!(
        (
            reference.api_version.as_str(),
            reference.kind.as_str(),
            reference.name.as_str(),
            reference.uid.as_str(),
            reference.controller,
            reference.block_owner_deletion
        ),
        ("v1", "ConfigMap", "app", "u-1", Some(true), Some(true))
    );
}

#[test]
fn a_child_tied_by_labels_names_its_parent_in_the_annotation() {
    let ownership = Ownership::of::<ConfigMap>("mirror");
    let child = meta(
        &[(CONTROLLER_LABEL, "mirror"), (OWNER_UID_LABEL, "u-1")],
        &[(OWNER_ANNOTATION, "team-a/settings")],
    );
    assert_eq!(
        ownership.parent_of(&child),
        Some((ObjectKey::new(Some("team-a"), "settings"), Tie::Labels))
    );
}

#[test]
fn a_child_tied_by_owner_reference_has_its_parent_in_its_own_namespace() {
    let ownership = Ownership::of::<ConfigMap>("c");
    let parent = ObjectMeta {
        name: Some("app".into()),
        uid: Some("u-1".into()),
        ..ObjectMeta::default()
    };
    let mut child = meta(&[(CONTROLLER_LABEL, "c")], &[]);
    child.owner_references = Some(vec![ownership.owner_reference(&parent)]);
    assert_eq!(
        ownership.parent_of(&child),
        Some((ObjectKey::new(Some("child-ns"), "app"), Tie::OwnerReference))
    );
}

#[test]
fn objects_without_this_controllers_label_are_not_its_children() {
    let ownership = Ownership::of::<ConfigMap>("mirror");
    let other = meta(
        &[(CONTROLLER_LABEL, "someone-else")],
        &[(OWNER_ANNOTATION, "team-a/settings")],
    );
    assert_eq!(ownership.parent_of(&other), None);
    assert_eq!(ownership.parent_of(&meta(&[], &[])), None);
    let unmarked = meta(&[(CONTROLLER_LABEL, "mirror")], &[]);
    assert_eq!(
        ownership.parent_of(&unmarked),
        None,
        "labelled but no parent named"
    );
}

#[test]
fn the_selector_and_index_name_the_controller() {
    let ownership = Ownership::of::<ConfigMap>("mirror");
    assert_eq!(ownership.selector(), "informer.dev/controller=mirror");
    assert!(ownership.index_name().ends_with(":mirror"));
}
