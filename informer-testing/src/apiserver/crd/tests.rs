//! Unit tests of CustomResourceDefinitions: defaults, names and conditions, the types they
//! serve, and their validation.

use serde_json::{Value, json};

use super::*;

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas"}},
                 "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                 "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v1alpha1", "served": false, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}}}
            ]
        }
    })
}

/// A CRD as the server stores it on create: defaulted, with its initial status.
fn created(mut crd: Value) -> Value {
    apply_defaults(&mut crd);
    prepare_create(&mut crd);
    crd
}

fn condition(crd: &Value, kind: &str) -> Value {
    crd["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .cloned()
        .unwrap_or(Value::Null)
}

fn messages(crd: &Value, old: Option<&Value>) -> Vec<String> {
    validation::validate(crd, old)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn defaults_fill_the_conversion_strategy_singular_and_list_kind() {
    let crd = created(widget_crd());
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
}

#[test]
fn a_created_crd_has_no_accepted_names_and_stores_its_storage_version() {
    let crd = created(widget_crd());
    assert_eq!(
        crd["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
}

#[test]
fn names_without_conflicts_are_accepted_and_the_crd_established() {
    let crd = accept_names(&created(widget_crd()), &[]);
    assert_eq!(crd["status"]["acceptedNames"]["plural"], "widgets");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["wd"]));
    assert_eq!(crd["status"]["acceptedNames"]["categories"], json!(["all"]));
    let accepted = condition(&crd, "NamesAccepted");
    assert_eq!(
        (
            &accepted["status"],
            &accepted["reason"],
            &accepted["message"]
        ),
        (
            &json!("True"),
            &json!("NoConflicts"),
            &json!("no conflicts found")
        )
    );
    let established = condition(&crd, "Established");
    assert_eq!(
        (&established["status"], &established["reason"]),
        (&json!("True"), &json!("InitialNamesAccepted"))
    );
    let order: Vec<&str> = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["NamesAccepted", "Established"]);
}

#[test]
fn names_another_crd_of_the_group_accepted_are_refused_the_last_conflict_named() {
    let widgets = accept_names(&created(widget_crd()), &[]);
    let mut gizmos = widget_crd();
    gizmos["metadata"]["name"] = json!("gizmos.example.com");
    gizmos["spec"]["names"] =
        json!({"plural": "gizmos", "kind": "Widget", "shortNames": ["wd", "gz"]});
    let gizmos = accept_names(&created(gizmos), std::slice::from_ref(&widgets));
    let accepted = condition(&gizmos, "NamesAccepted");
    assert_eq!(accepted["status"], "False");
    assert_eq!(accepted["reason"], "ListKindConflict");
    assert_eq!(accepted["message"], "\"WidgetList\" is already in use");
    assert_eq!(condition(&gizmos, "Established")["reason"], "NotAccepted");
    assert_eq!(
        gizmos["status"]["acceptedNames"],
        json!({"plural": "gizmos", "kind": ""})
    );
}

#[test]
fn names_of_other_groups_do_not_conflict() {
    let widgets = accept_names(&created(widget_crd()), &[]);
    let mut other = widget_crd();
    other["metadata"]["name"] = json!("widgets.other.io");
    other["spec"]["group"] = json!("other.io");
    // The controller compares with the CRDs of the same group only.
    let others: Vec<Value> = [widgets]
        .into_iter()
        .filter(|c| c["spec"]["group"] == other["spec"]["group"])
        .collect();
    let other = accept_names(&created(other), &others);
    assert_eq!(condition(&other, "NamesAccepted")["status"], "True");
}

#[test]
fn an_established_crd_stays_established_when_its_new_names_conflict() {
    let mut widgets = accept_names(&created(widget_crd()), &[]);
    let taken = json!({"status": {"acceptedNames": {"plural": "things", "kind": "Thing"}}});
    widgets["spec"]["names"]["plural"] = json!("things");
    let widgets = accept_names(&widgets, &[taken]);
    assert_eq!(
        condition(&widgets, "NamesAccepted")["reason"],
        "PluralConflict"
    );
    assert_eq!(condition(&widgets, "Established")["status"], "True");
}

#[test]
fn every_served_version_is_a_type_with_its_schema_subresources_and_columns() {
    let crd = accept_names(&created(widget_crd()), &[]);
    let types = served_types(&crd, 7).unwrap();
    let versions: Vec<&str> = types.iter().map(|t| t.version.as_str()).collect();
    assert_eq!(versions, ["v1", "v1beta1"]);
    let v1 = &types[0];
    assert!(v1.custom && v1.namespaced && v1.status_subresource && v1.tracks_generation);
    assert_eq!(
        (
            v1.plural.as_str(),
            v1.singular.as_str(),
            v1.list_kind.as_str()
        ),
        ("widgets", "widget", "WidgetList")
    );
    assert_eq!(v1.short_names, ["wd"]);
    assert_eq!(v1.categories, ["all"]);
    assert_eq!(
        v1.scale.as_ref().unwrap().spec_replicas_path,
        ".spec.replicas"
    );
    assert_eq!(v1.printer_columns[0].json_path, ".spec.size");
    assert_eq!(v1.crd.as_deref(), Some("widgets.example.com"));
    assert_eq!(v1.served_since, 7);
    assert!(!v1.returns_deleted_object, "deletes answer a Status");
    let beta = &types[1];
    assert_eq!(beta.storage_version, "v1");
    assert!(!beta.status_subresource);
    assert!(beta.schema.as_ref().unwrap().preserve_unknown_fields);
}

#[test]
fn the_registry_serves_installed_crds_and_forgets_uninstalled_ones() {
    let crd = accept_names(&created(widget_crd()), &[]);
    let mut registry = registry_with(std::slice::from_ref(&crd));
    assert!(
        registry
            .by_path("example.com", "v1beta1", "widgets")
            .is_some()
    );
    let beta = registry
        .by_path("example.com", "v1beta1", "widgets")
        .unwrap();
    assert_eq!(beta.storage(&registry).version, "v1");
    registry.uninstall("widgets.example.com");
    assert!(registry.by_path("example.com", "v1", "widgets").is_none());
}

#[test]
fn an_update_adds_a_new_storage_version_to_the_stored_versions() {
    let mut crd = created(widget_crd());
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    prepare_update(&mut crd);
    assert_eq!(crd["status"]["storedVersions"], json!(["v1", "v1beta1"]));
}

#[test]
fn deleting_adds_the_cleanup_finalizer_and_the_terminating_condition() {
    let mut crd = created(widget_crd());
    mark_deleting(&mut crd);
    assert_eq!(crd["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
    let terminating = condition(&crd, "Terminating");
    assert_eq!(
        (&terminating["status"], &terminating["reason"]),
        (&json!("True"), &json!("InstanceDeletionPending"))
    );
}

#[test]
fn a_valid_crd_passes_validation() {
    assert!(messages(&created(widget_crd()), None).is_empty());
}

#[test]
fn the_name_must_be_plural_dot_group() {
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("things.example.org");
    assert_eq!(
        messages(&created(crd), None),
        [
            "metadata.name: Invalid value: \"things.example.org\": must be spec.names.plural+\".\"+spec.group"
        ]
    );
}

#[test]
fn exactly_one_version_is_stored() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["storage"] = json!(false);
    let found = messages(&created(crd), None);
    assert!(
        found
            .iter()
            .any(|m| m.starts_with("spec.versions: Invalid value: ")
                && m.ends_with("must have exactly one version marked as storage version")),
        "{found:?}"
    );
    assert!(found.iter().any(|m| m
        == "status.storedVersions: Invalid value: null: must have at least one stored version"));
}

#[test]
fn versions_need_dns_names_and_schemas() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][1]["name"] = json!("V1");
    crd["spec"]["versions"][2]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    let found = messages(&created(crd), None);
    assert!(
        found.iter().any(
            |m| m.starts_with("spec.versions[1].name: Invalid value: \"V1\": a DNS-1035 label")
        ),
        "{found:?}"
    );
    assert!(found.contains(&"spec.versions[2].schema.openAPIV3Schema: Required value".to_string()));
}

#[test]
fn schemas_must_be_structural() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"] =
        json!({});
    assert_eq!(
        messages(&created(crd), None),
        [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"
        ]
    );
}

#[test]
fn group_scope_and_names_are_checked() {
    let mut crd = widget_crd();
    crd["metadata"]["name"] = json!("widgets.example");
    crd["spec"]["group"] = json!("example");
    crd["spec"]["scope"] = json!("Sometimes");
    crd["spec"]["names"]["listKind"] = json!("Widget");
    let found = messages(&created(crd), None);
    assert!(
        found.contains(
            &"spec.group: Invalid value: \"example\": should be a domain with at least one dot"
                .to_string()
        ),
        "{found:?}"
    );
    assert!(found.contains(&"spec.scope: Unsupported value: \"Sometimes\": supported values: \"Cluster\", \"Namespaced\"".to_string()));
    assert!(found.contains(&"spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".to_string()));
}

#[test]
fn scale_paths_and_printer_columns_are_checked() {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.size");
    crd["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("float");
    let found = messages(&created(crd), None);
    assert!(found.contains(&"spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.size\": should be a json path under .spec".to_string()), "{found:?}");
    // Worded as upstream's ValidateCustomResourceColumn words it (an Invalid value).
    assert!(
        found.iter().any(|m| m.ends_with(
            "additionalPrinterColumns[0].type: Invalid value: \"float\": must be one of boolean,date,integer,number,string"
        )),
        "{found:?}"
    );
}

#[test]
fn updates_keep_group_and_plural_and_once_established_scope_and_kind() {
    let old = accept_names(&created(widget_crd()), &[]);
    let mut new = old.clone();
    new["spec"]["group"] = json!("other.io");
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    let found = messages(&new, Some(&old));
    for field in ["spec.scope", "spec.names.kind", "spec.group"] {
        assert!(
            found
                .iter()
                .any(|m| m.starts_with(field) && m.ends_with("field is immutable")),
            "{field} in {found:?}"
        );
    }
}

#[test]
fn stored_versions_must_stay_in_the_spec() {
    let old = created(widget_crd());
    let mut new = old.clone();
    new["spec"]["versions"] = json!([{"name": "v2", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object"}}}]);
    let found = messages(&new, Some(&old));
    assert!(
        found.contains(
            &"status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 \
              was previously a storage version, and must remain in spec.versions until a \
              storage migration ensures no data remains persisted in v1 and removes v1 from \
              status.storedVersions"
                .to_string()
        ),
        "{found:?}"
    );
}

#[test]
fn the_definition_type_is_cluster_scoped_with_a_status_subresource() {
    let crds = definition_type();
    assert!(is_definition(&crds));
    assert!(!crds.namespaced && crds.status_subresource);
    assert_eq!(crds.short_names, ["crd", "crds"]);
}
