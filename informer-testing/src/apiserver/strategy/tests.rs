//! Unit tests of what a write does to an object before validation, by type.

use serde_json::json;

use super::*;
use crate::apiserver::crd;
use crate::apiserver::resource::Registry;

fn gadgets() -> std::sync::Arc<ResourceType> {
    let mut registry = Registry::builtin();
    let definition = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "default": 1}}},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}}]}
    });
    registry.install(
        "gadgets.example.com",
        crd::served_types(&definition, 0).unwrap(),
    );
    registry.by_path("example.com", "v1", "gadgets").unwrap()
}

#[test]
fn a_created_custom_resource_is_pruned_defaulted_and_owned_with_its_defaults() {
    let gadgets = gadgets();
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"bogus": 1}});
    prepare_create(&gadgets, &mut object, &WriteOptions::by("me"));
    assert_eq!(object["spec"], json!({"size": 1}));
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "me");
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {".": {}, "f:size": {}}})
    );
}

#[test]
fn a_create_cannot_set_status_when_the_type_has_a_status_subresource() {
    let gadgets = gadgets();
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "status": {"ready": true}});
    prepare_create(&gadgets, &mut object, &WriteOptions::default());
    assert!(object.get("status").is_none());
}

#[test]
fn writes_that_name_no_manager_are_the_default_managers() {
    let gadgets = gadgets();
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"size": 2}});
    prepare_create(&gadgets, &mut object, &false.into());
    assert_eq!(
        object["metadata"]["managedFields"][0]["manager"],
        DEFAULT_MANAGER
    );
}

#[test]
fn a_crd_is_compared_with_the_zero_object_of_its_go_type() {
    let crds = crd::definition_type();
    let empty = empty_object(&crds);
    assert_eq!(empty["spec"]["names"], json!({"plural": "", "kind": ""}));
    let mut created = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"}, "versions": []}});
    prepare_create(&crds, &mut created, &WriteOptions::by("me"));
    let owned = &created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    assert!(owned.get(".").is_none(), "spec exists in the zero object");
    assert_eq!(
        owned["f:conversion"],
        json!({".": {}, "f:strategy": {}}),
        "conversion does not"
    );
    assert!(created["status"]["storedVersions"].is_array());
}

#[test]
fn typed_apply_errors_name_the_object_as_the_real_server() {
    let gadgets = gadgets();
    let config = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}, "spec": {"bogus": 1}});
    let err = apply(
        &gadgets,
        None,
        &config,
        Subresource::Main,
        &WriteOptions::by("a"),
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        "failed to create typed patch object (/g; example.com/v1, Kind=Gadget): .spec.bogus: field not declared in schema"
    );
}
