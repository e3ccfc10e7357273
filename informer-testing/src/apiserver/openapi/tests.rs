use super::*;
use crate::apiserver::resource::CustomResourceSpec;

/// `/openapi/v3` of `registry`, made afresh.
fn root(registry: &Registry) -> Value {
    Documents::default().root(registry)
}

/// A group version's document in `registry`, made afresh.
fn group_version(registry: &Registry, path: &str) -> Option<Arc<Value>> {
    Documents::default().group_version(registry, path)
}

fn url_of(root: &Value, path: &str) -> String {
    root["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_document_is_made_once_until_its_group_versions_types_change() {
    let documents = Documents::default();
    let mut registry = Registry::builtin();
    registry
        .register(&CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Widget",
            "widgets",
        ))
        .unwrap();
    let first = documents
        .group_version(&registry, "apis/example.com/v1")
        .unwrap();
    let again = documents
        .group_version(&registry, "apis/example.com/v1")
        .unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "made again with nothing changed"
    );
    let root_before = documents.root(&registry);

    // The CRD written again (a new kind in the group version): a new document and hash.
    registry
        .register(&CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Gadget",
            "gadgets",
        ))
        .unwrap();
    let changed = documents
        .group_version(&registry, "apis/example.com/v1")
        .unwrap();
    assert!(!Arc::ptr_eq(&first, &changed));
    assert!(
        changed["components"]["schemas"]
            .as_object()
            .unwrap()
            .keys()
            .any(|name| name.ends_with(".Gadget"))
    );
    let root_after = documents.root(&registry);
    assert_ne!(
        url_of(&root_before, "apis/example.com/v1"),
        url_of(&root_after, "apis/example.com/v1")
    );
    assert_eq!(
        url_of(&root_before, "api/v1"),
        url_of(&root_after, "api/v1")
    );

    // A group version no longer served is gone from the root and from what is kept.
    registry.uninstall("widgets.example.com");
    registry.uninstall("gadgets.example.com");
    assert!(
        documents.root(&registry)["paths"]
            .get("apis/example.com/v1")
            .is_none()
    );
    assert!(
        documents
            .group_version(&registry, "apis/example.com/v1")
            .is_none()
    );
    assert!(!documents.made.lock().contains_key("apis/example.com/v1"));
}

#[test]
fn root_lists_every_group_version() {
    let registry = Registry::builtin();
    let root = root(&registry);
    let paths = root["paths"].as_object().unwrap();
    assert!(paths.contains_key("api/v1"));
    assert!(paths.contains_key("apis/apps/v1"));
    assert!(paths.contains_key("apis/coordination.k8s.io/v1"));
    let url = paths["api/v1"]["serverRelativeURL"].as_str().unwrap();
    assert!(url.starts_with("/openapi/v3/api/v1?hash="));
}

#[test]
fn documents_declare_field_validation_on_patch() {
    let registry = Registry::builtin();
    let doc = group_version(&registry, "api/v1").unwrap();
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation")
    );
    assert!(doc["paths"]["/api/v1/namespaces/{name}"]["patch"].is_object());
    assert!(group_version(&registry, "apis/nope/v1").is_none());
}

#[test]
fn v2_is_an_empty_document_in_json_or_protobuf() {
    let (json, content_type) = v2(false);
    assert_eq!(content_type, "application/json");
    let json: Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(json["swagger"], "2.0");
    let (protobuf, content_type) = v2(true);
    assert_eq!(content_type, V2_PROTOBUF_RESPONSE);
    assert_eq!(&protobuf[..5], b"\x0a\x032.0");
    assert_eq!(protobuf[protobuf.len() - 2..], [8 << 3 | 2, 0]);
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

/// Every reference of a document resolves within it.
fn every_reference_resolves(doc: &Value) {
    let text = doc.to_string();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(
            schema(doc, name).is_object(),
            "{name} is referenced, not defined"
        );
    }
}

/// A schema's shape: `value` without its `description`.
fn shape(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(map) = value.as_object_mut() {
        map.remove("description");
    }
    value
}

#[test]
fn a_built_in_kind_has_a_schema_found_by_its_group_version_kind() {
    let registry = Registry::builtin();
    let doc = group_version(&registry, "api/v1").unwrap();
    let pod = schema(&doc, "io.k8s.api.core.v1.Pod");
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "Pod"}])
    );
    assert_eq!(
        shape(&pod["properties"]["spec"]),
        json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]})
    );
    // The envelope is not required, whatever k8s-openapi's types hold.
    assert!(pod.get("required").is_none(), "{pod}");
    let container = schema(&doc, "io.k8s.api.core.v1.Container");
    assert_eq!(container["required"], json!(["name"]));
    assert_eq!(
        shape(&schema(&doc, "io.k8s.api.core.v1.ContainerPort")["properties"]["containerPort"]),
        json!({"type": "integer", "format": "int32"})
    );
    let meta = schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(
        shape(&meta["properties"]["labels"]),
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    // Types with a JSON form of their own are components, as kube-openapi writes them.
    assert_eq!(
        shape(&meta["properties"]["creationTimestamp"]),
        json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}]})
    );
    assert_eq!(
        shape(schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.Time")),
        json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        shape(schema(
            &doc,
            "io.k8s.apimachinery.pkg.api.resource.Quantity"
        )),
        json!({"oneOf": [{"type": "string"}, {"type": "number"}]})
    );
    assert_eq!(
        shape(schema(
            &doc,
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
        )),
        json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(
        shape(schema(
            &doc,
            "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
        )),
        json!({"type": "object"})
    );
    every_reference_resolves(&doc);
}

#[test]
fn built_in_types_and_fields_carry_kube_apiservers_descriptions() {
    let registry = Registry::builtin();
    let doc = group_version(&registry, "api/v1").unwrap();
    let description = |name: &str, field: Option<&str>| {
        let schema = schema(&doc, name);
        let value = match field {
            Some(field) => &schema["properties"][field]["description"],
            None => &schema["description"],
        };
        value.as_str().unwrap_or_default().to_string()
    };
    assert!(
        description("io.k8s.api.core.v1.Pod", None)
            .starts_with("Pod is a collection of containers that can run on a host.")
    );
    assert!(
        description("io.k8s.api.core.v1.PodSpec", Some("containers"))
            .starts_with("List of containers belonging to the pod.")
    );
    // A reference has its field's description beside it, as kube-openapi writes it.
    let spec = &schema(&doc, "io.k8s.api.core.v1.Pod")["properties"]["spec"];
    assert!(spec["allOf"].is_array(), "{spec}");
    assert!(
        spec["description"]
            .as_str()
            .unwrap()
            .starts_with("Specification of the desired behavior of the pod.")
    );
    // An embedded message's fields are described as its parent's (VolumeSource's in Volume).
    assert!(
        description("io.k8s.api.core.v1.Volume", Some("configMap"))
            .starts_with("configMap represents a configMap that should populate this volume")
    );
    assert!(
        description("io.k8s.apimachinery.pkg.apis.meta.v1.Time", None)
            .starts_with("Time is a wrapper around time.Time")
    );
    // Line breaks are kept.
    let config_map_volume = description("io.k8s.api.core.v1.ConfigMapVolumeSource", None);
    assert!(
        config_map_volume.contains("\n\nThe contents"),
        "{config_map_volume}"
    );
}

#[test]
fn the_crd_kind_has_kube_apiservers_schema_with_every_reference_resolved() {
    let registry = Registry::builtin();
    let doc = group_version(&registry, "apis/apiextensions.k8s.io/v1").unwrap();
    let crd = schema(
        &doc,
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    );
    assert_eq!(
        crd["x-kubernetes-group-version-kind"],
        json!([{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"}])
    );
    assert_eq!(crd["required"], json!(["spec"]), "metadata is not required");
    assert_eq!(
        crd["properties"]["spec"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec"
    );
    assert!(
        crd["properties"]["spec"]["description"]
            .as_str()
            .unwrap()
            .starts_with("spec describes how the user wants the resources to appear")
    );
    let props = schema(
        &doc,
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
    );
    assert!(
        props["properties"]["x-kubernetes-validations"].is_object(),
        "{props}"
    );
    every_reference_resolves(&doc);
}

#[test]
fn a_custom_resource_has_its_crds_schema_and_a_list_schema() {
    let registry = Registry::with_widgets();
    let doc = group_version(&registry, "apis/example.com/v1").unwrap();
    let widget = schema(&doc, "com.example.v1.Widget");
    assert_eq!(
        widget["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        shape(&widget["properties"]["kind"]),
        json!({"type": "string"})
    );
    // The envelope's descriptions, as apiextensions-apiserver's builder adds them.
    for (property, starts) in [
        ("apiVersion", "APIVersion defines the versioned schema"),
        (
            "kind",
            "Kind is a string value representing the REST resource",
        ),
        ("metadata", "Standard object's metadata."),
    ] {
        let description = widget["properties"][property]["description"].as_str();
        assert!(description.unwrap().starts_with(starts), "{property}");
    }
    assert_eq!(
        widget["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let list = schema(&doc, "com.example.v1.WidgetList");
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "WidgetList"
    );
    assert_eq!(list["description"], "WidgetList is a list of Widget");
    assert!(
        list["properties"]["items"]["description"]
            .as_str()
            .unwrap()
            .starts_with("List of widgets.")
    );
    assert!(schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta").is_object());
}
