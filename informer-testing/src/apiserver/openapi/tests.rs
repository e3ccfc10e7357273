use super::*;

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
        pod["properties"]["spec"],
        json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]})
    );
    // The envelope is not required, whatever k8s-openapi's types hold.
    assert!(pod.get("required").is_none(), "{pod}");
    let container = schema(&doc, "io.k8s.api.core.v1.Container");
    assert_eq!(container["required"], json!(["name"]));
    assert_eq!(
        schema(&doc, "io.k8s.api.core.v1.ContainerPort")["properties"]["containerPort"],
        json!({"type": "integer", "format": "int32"})
    );
    let meta = schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(
        meta["properties"]["labels"],
        json!({"type": "object", "additionalProperties": {"type": "string"}})
    );
    // Types with a JSON form of their own are components, as kube-openapi writes them.
    assert_eq!(
        meta["properties"]["creationTimestamp"],
        json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Time"}]})
    );
    assert_eq!(
        schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.Time"),
        &json!({"type": "string", "format": "date-time"})
    );
    assert_eq!(
        schema(&doc, "io.k8s.apimachinery.pkg.api.resource.Quantity"),
        &json!({"oneOf": [{"type": "string"}, {"type": "number"}]})
    );
    assert_eq!(
        schema(&doc, "io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
        &json!({"format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(
        schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"),
        &json!({"type": "object"})
    );
    // Every reference resolves within the document.
    let text = doc.to_string();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = &reference[..reference.find('"').unwrap()];
        assert!(
            schema(&doc, name).is_object(),
            "{name} is referenced, not defined"
        );
    }
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
    assert_eq!(widget["properties"]["kind"], json!({"type": "string"}));
    assert_eq!(
        widget["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let list = schema(&doc, "com.example.v1.WidgetList");
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "WidgetList"
    );
    assert!(schema(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta").is_object());
}
