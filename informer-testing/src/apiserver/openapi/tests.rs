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
