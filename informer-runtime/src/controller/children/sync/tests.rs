use std::sync::Arc;

use informer_core::{ObjectKey, ThreadSafeStore};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use serde_json::json;

use super::*;

/// A set of Secret children of ConfigMaps, watched in `watched` (`None`: all), with empty
/// caches and no client.
fn set(watched: Option<&str>) -> ChildSet<ConfigMap, Secret> {
    ChildSet {
        desired: Arc::new(|_: &ConfigMap| Ok(Vec::new())),
        children: Lister::new(Arc::new(ThreadSafeStore::<Secret>::new())),
        parents: Lister::new(Arc::new(ThreadSafeStore::<ConfigMap>::new())),
        client: Arc::new(ReconcileClient::new(None, None)),
        field_manager: "ctl".into(),
        ownership: Ownership::of::<ConfigMap>("ctl"),
        watched_namespace: watched.map(str::to_owned),
        parent_view: InformerParams::default(),
        create_only: false,
        recorder: crate::events::EventRecorder::without_client(crate::events::Reporter::new("ctl")),
    }
}

fn parent(namespace: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("app".into());
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.uid = Some("u-1".into());
    cm
}

fn child(name: Option<&str>, namespace: Option<&str>) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = name.map(str::to_owned);
    secret.metadata.namespace = namespace.map(str::to_owned);
    secret
}

fn prepared(
    set: &ChildSet<ConfigMap, Secret>,
    parent: &ConfigMap,
    child: &Secret,
) -> Result<Prepared, ChildrenError> {
    let key = ObjectKey::new(parent.metadata.namespace.as_deref(), "app");
    set.prepare(parent, &key, child)
}

#[test]
fn a_child_without_a_namespace_goes_to_its_parents() {
    let p = prepared(&set(None), &parent("shop"), &child(Some("s"), None)).unwrap();
    assert_eq!(p.key, ObjectKey::new(Some("shop"), "s"));
    assert_eq!(p.body["metadata"]["namespace"], "shop");
}

#[test]
fn a_child_without_a_namespace_goes_where_its_kind_is_watched() {
    let p = prepared(
        &set(Some("mirror")),
        &parent("shop"),
        &child(Some("s"), None),
    )
    .unwrap();
    assert_eq!(p.key, ObjectKey::new(Some("mirror"), "s"));
    assert_eq!(p.body["metadata"]["labels"][OWNER_UID_LABEL], "u-1");
    assert_eq!(
        p.body["metadata"]["annotations"][OWNER_ANNOTATION],
        "shop/app"
    );
    assert!(p.body["metadata"].get("ownerReferences").is_none());
}

#[test]
fn the_body_carries_type_ownership_and_hash_and_no_server_fields_or_status() {
    let mut secret = child(Some("s"), None);
    secret.metadata.resource_version = Some("7".into());
    secret.metadata.uid = Some("child-uid".into());
    let p = prepared(&set(None), &parent("shop"), &secret).unwrap();
    assert_eq!(p.body["apiVersion"], "v1");
    assert_eq!(p.body["kind"], "Secret");
    let meta = &p.body["metadata"];
    assert!(meta.get("resourceVersion").is_none() && meta.get("uid").is_none());
    assert_eq!(meta["labels"][CONTROLLER_LABEL], "ctl");
    assert_eq!(
        meta["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "app", "uid": "u-1", "controller": true, "blockOwnerDeletion": true}])
    );
    let hash = meta["annotations"][APPLIED_HASH_ANNOTATION]
        .as_str()
        .unwrap();
    assert_eq!(hash.len(), 16);
}

#[test]
fn the_hash_changes_with_what_is_wanted() {
    let set = set(None);
    let hash = |secret: &Secret| {
        prepared(&set, &parent("shop"), secret).unwrap().body["metadata"]["annotations"]
            [APPLIED_HASH_ANNOTATION]
            .clone()
    };
    let mut a = child(Some("s"), None);
    let same = hash(&a);
    assert_eq!(hash(&a), same, "the same child, the same hash");
    a.type_ = Some("Opaque".into());
    assert_ne!(hash(&a), same);
}

#[test]
fn a_child_without_a_name_is_refused() {
    let error = prepared(&set(None), &parent("shop"), &child(None, None)).unwrap_err();
    assert!(matches!(error, ChildrenError::NoName { .. }), "{error}");
}

#[test]
fn a_child_outside_the_watched_namespace_is_refused() {
    let error = prepared(
        &set(Some("mirror")),
        &parent("shop"),
        &child(Some("s"), Some("other")),
    )
    .unwrap_err();
    assert!(
        matches!(error, ChildrenError::OutsideWatch { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("\"mirror\""), "{error}");
}

#[test]
fn a_child_naming_another_controlling_owner_is_refused() {
    let mut secret = child(Some("s"), None);
    secret.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "other".into(),
            controller: Some(true),
            ..Default::default()
        },
    ]);
    let error = prepared(&set(None), &parent("shop"), &secret).unwrap_err();
    assert!(
        matches!(error, ChildrenError::ControllerTaken { .. }),
        "{error}"
    );
}

#[test]
fn a_namespaced_child_of_a_cluster_scoped_parent_needs_a_namespace() {
    let set: ChildSet<Namespace, Secret> = ChildSet {
        desired: Arc::new(|_: &Namespace| Ok(Vec::new())),
        children: Lister::new(Arc::new(ThreadSafeStore::<Secret>::new())),
        parents: Lister::new(Arc::new(ThreadSafeStore::<Namespace>::new())),
        client: Arc::new(ReconcileClient::new(None, None)),
        field_manager: "ctl".into(),
        ownership: Ownership::of::<Namespace>("ctl"),
        watched_namespace: None,
        parent_view: InformerParams::default(),
        create_only: false,
        recorder: crate::events::EventRecorder::without_client(crate::events::Reporter::new("ctl")),
    };
    let mut ns = Namespace::default();
    ns.metadata.name = Some("team-a".into());
    ns.metadata.uid = Some("u-ns".into());
    let key = ObjectKey::new(None, "team-a");
    let error = set.prepare(&ns, &key, &child(Some("s"), None)).unwrap_err();
    assert!(
        matches!(error, ChildrenError::NoNamespace { .. }),
        "{error}"
    );
    let ok = set
        .prepare(&ns, &key, &child(Some("s"), Some("team-a")))
        .unwrap();
    assert_eq!(
        ok.body["metadata"]["ownerReferences"][0]["kind"], "Namespace",
        "a cluster-scoped parent owns by reference in any namespace"
    );
}

/// What syncing the children of `parent` (as `shop/app`) fails with; what it did goes to
/// `report`.
async fn sync_error(
    set: &ChildSet<ConfigMap, Secret>,
    parent: &ConfigMap,
    report: &mut ChildrenReport,
) -> ChildrenError {
    set.sync(&ObjectKey::new(Some("shop"), "app"), Some(parent), report)
        .await
        .unwrap_err()
}

#[tokio::test]
async fn two_children_with_one_name_fail_before_anything_is_written() {
    let mut set = set(None);
    set.desired =
        Arc::new(|_: &ConfigMap| Ok(vec![child(Some("s"), None), child(Some("s"), None)]));
    let mut report = ChildrenReport::default();
    let error = sync_error(&set, &parent("shop"), &mut report).await;
    assert!(matches!(error, ChildrenError::Twice { .. }), "{error}");
    assert!(report.is_unchanged());
}

#[tokio::test]
async fn a_parent_without_a_uid_cannot_own_children() {
    let set = set(None);
    let mut parent = parent("shop");
    parent.metadata.uid = None;
    let error = sync_error(&set, &parent, &mut ChildrenReport::default()).await;
    assert!(
        matches!(error, ChildrenError::ParentWithoutUid { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn without_a_client_a_wanted_child_fails_transiently() {
    let mut set = set(None);
    set.desired = Arc::new(|_: &ConfigMap| Ok(vec![child(Some("s"), None)]));
    let error = sync_error(&set, &parent("shop"), &mut ChildrenReport::default()).await;
    assert!(matches!(error, ChildrenError::NoClient), "{error}");
    assert!(!error.into_reconcile_error().is_terminal());
}

#[tokio::test]
async fn a_failing_desired_function_is_reported_with_its_error() {
    let mut set = set(None);
    set.desired = Arc::new(|_: &ConfigMap| Err("no template".into()));
    let error = sync_error(&set, &parent("shop"), &mut ChildrenReport::default()).await;
    assert_eq!(
        error.to_string(),
        "computing the Secret children failed: no template"
    );
}
