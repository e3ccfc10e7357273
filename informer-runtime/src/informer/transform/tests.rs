use super::*;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

#[test]
fn strip_managed_fields_keeps_everything_else() {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.resource_version = Some("7".into());
    cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    let mut expected = cm.clone();
    expected.metadata.managed_fields = None;
    assert_eq!(strip_managed_fields(cm), expected);
}

#[test]
fn chained_transforms_run_in_order() {
    let first: Transform<String> = Arc::new(|s| s + "1");
    let second: Transform<String> = Arc::new(|s| s + "2");
    assert_eq!(chain(Some(first), second.clone())("x".into()), "x12");
    assert_eq!(chain(None, second)("x".into()), "x2");
}
