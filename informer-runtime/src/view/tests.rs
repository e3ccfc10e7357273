use std::sync::Arc;

use informer_core::{Indexer, ObjectKey};
use informer_derive::View;
use informer_testing::MemoryListerWatcher;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::core::{ClusterResourceScope, NamespaceResourceScope};
use serde::{Deserialize, Serialize};

use super::View;
use crate::informer::SharedIndexInformer;
use crate::lister_watcher::{BodyDecoder, JsonDecoder};

#[derive(Clone, Debug, PartialEq, View)]
#[view(of = Pod, crate = crate)]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<Spec>,
    status: Option<Status>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Spec {
    node_name: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
struct Status {
    phase: Option<String>,
}

#[derive(Clone, Debug, View)]
#[view(of = Node, crate = crate)]
struct NodeView {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, View)]
#[view(of = Deployment, crate = crate)]
struct DeploymentView {
    metadata: ObjectMeta,
}

/// A projection of the metadata too, with serde attributes of its own.
#[derive(Clone, Debug, View)]
#[view(of = Pod, metadata(uid, owner_references), crate = crate)]
#[serde(rename_all = "camelCase")]
struct SlimPod {
    metadata: ObjectMeta,
    #[serde(rename = "spec")]
    placement: Option<Spec>,
    // Not a field of `Pod`: unchecked, and absent from the JSON, so defaulted.
    #[view(unchecked)]
    #[serde(default)]
    missing: Vec<String>,
}

const POD: &str = r#"{"apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"web-1","namespace":"shop","resourceVersion":"5","labels":{"app":"web"},
        "managedFields":[{"manager":"kubelet","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}}}]},
    "spec":{"nodeName":"node-7","containers":[{"name":"app","image":"shop:1",
        "env":[{"name":"A","value":"1"}],"resources":{"limits":{"cpu":"1"}}}],
        "volumes":[{"name":"data","emptyDir":{}}]},
    "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;

#[test]
fn a_view_is_its_resource_kind_group_version_plural_and_scope() {
    fn namespaced<K: Resource<Scope = NamespaceResourceScope>>() {}
    fn cluster<K: Resource<Scope = ClusterResourceScope>>() {}
    namespaced::<PodView>();
    cluster::<NodeView>();
    for (view, full) in [
        (PodView::api_version(&()), Pod::api_version(&())),
        (PodView::kind(&()), Pod::kind(&())),
        (PodView::plural(&()), Pod::plural(&())),
        (DeploymentView::group(&()), Deployment::group(&())),
        (DeploymentView::version(&()), Deployment::version(&())),
        (
            DeploymentView::url_path(&(), Some("ns")).into(),
            Deployment::url_path(&(), Some("ns")).into(),
        ),
    ] {
        assert_eq!(view, full);
    }
    fn of<V: View<Of = O>, O>() {}
    of::<PodView, Pod>();
}

#[test]
fn a_view_decodes_its_fields_and_skips_the_rest() {
    let mut decoder = JsonDecoder::new().skip_managed_fields(true);
    let view: PodView = decoder.decode(&mut POD.as_bytes().to_vec()).unwrap();
    assert_eq!(view.metadata.name.as_deref(), Some("web-1"));
    assert_eq!(view.metadata.labels.as_ref().unwrap()["app"], "web");
    assert!(
        view.metadata.managed_fields.is_none(),
        "skipped while decoding"
    );
    assert_eq!(
        view.spec.as_ref().unwrap().node_name.as_deref(),
        Some("node-7")
    );
    assert_eq!(
        view.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );
    // The key and resource version come from its metadata, as for the full type.
    assert_eq!(
        ObjectKey::from_resource(&view).unwrap(),
        ObjectKey::new(Some("shop"), "web-1")
    );
    let kept: PodView = JsonDecoder::new()
        .decode(&mut POD.as_bytes().to_vec())
        .unwrap();
    assert_eq!(kept.metadata.managed_fields.map(|m| m.len()), Some(1));
}

#[tokio::test]
async fn a_view_list_decoded_from_the_wire_keeps_only_its_fields() {
    let list = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"9"}},"items":[{POD},{POD}]}}"#
    );
    let body = futures::stream::iter([Ok(bytes::Bytes::from(list))]);
    let list = BodyDecoder::new()
        .skip_managed_fields(true)
        .list::<PodView>(body)
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(
        list.items
            .iter()
            .all(|v| v.metadata.managed_fields.is_none())
    );
}

#[tokio::test]
async fn an_informer_caches_views_and_its_lister_returns_them() {
    let source = MemoryListerWatcher::<PodView>::new();
    let mut view: PodView = serde_json::from_str(POD).unwrap();
    view.metadata.resource_version = None;
    source.create(view.clone());
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let cancel = crate::informer::CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    assert!(informer.wait_for_sync().await);
    let cached = informer
        .lister()
        .get(&ObjectKey::new(Some("shop"), "web-1"))
        .expect("cached");
    assert_eq!(cached.spec, view.spec);
    assert_eq!(
        informer
            .indexer()
            .by_index("namespace", "shop")
            .unwrap()
            .len(),
        1
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[test]
fn a_view_keeps_only_the_metadata_fields_it_lists_and_those_that_key_it() {
    let json = POD.replace(
        r#""labels":{"app":"web"},"#,
        r#""labels":{"app":"web"},"uid":"u-1","annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u-0"}],"#,
    );
    let view: SlimPod = serde_json::from_str(&json).unwrap();
    let meta = &view.metadata;
    assert_eq!(meta.name.as_deref(), Some("web-1"));
    assert_eq!(meta.namespace.as_deref(), Some("shop"));
    assert_eq!(meta.resource_version.as_deref(), Some("5"));
    assert_eq!(meta.uid.as_deref(), Some("u-1"));
    assert_eq!(meta.owner_references.as_ref().map(Vec::len), Some(1));
    assert!(meta.labels.is_none() && meta.annotations.is_none());
    assert!(
        meta.managed_fields.is_none(),
        "not listed, so never decoded"
    );
    // The struct's own serde attributes hold.
    assert_eq!(
        view.placement.and_then(|s| s.node_name).as_deref(),
        Some("node-7")
    );
    assert!(view.missing.is_empty());
    // The same through the library's decoder.
    let from_wire: SlimPod = JsonDecoder::new().decode(&mut json.into_bytes()).unwrap();
    assert_eq!(from_wire.metadata, *meta);
}

#[test]
fn a_malformed_kept_metadata_field_is_an_error_and_a_skipped_one_is_not() {
    let bad_uid = r#"{"metadata":{"name":"a","uid":7}}"#;
    assert!(serde_json::from_str::<SlimPod>(bad_uid).is_err());
    let bad_labels = r#"{"metadata":{"name":"a","labels":7}}"#;
    assert!(serde_json::from_str::<SlimPod>(bad_labels).is_ok());
}

/// A view keeping one annotation and one label of the object's.
#[derive(Clone, Debug, View)]
#[view(of = Pod, metadata(annotations("example.com/ttl"), labels("app")), crate = crate)]
struct TtlPod {
    metadata: ObjectMeta,
}

#[test]
fn a_view_keeps_only_the_annotation_and_label_keys_it_lists() {
    let json = r#"{"metadata":{"name":"web-1","namespace":"shop","resourceVersion":"5",
        "labels":{"app":"web","tier":"front"},
        "annotations":{"example.com/ttl":"1h","kubectl.kubernetes.io/last-applied-configuration":"{\"big\":true}"}}}"#;
    for view in [
        serde_json::from_str::<TtlPod>(json).unwrap(),
        JsonDecoder::new()
            .decode(&mut json.as_bytes().to_vec())
            .unwrap(),
    ] {
        let meta = &view.metadata;
        assert_eq!(meta.name.as_deref(), Some("web-1"));
        let annotations = meta.annotations.as_ref().unwrap();
        assert_eq!(annotations.len(), 1, "{annotations:?}");
        assert_eq!(annotations["example.com/ttl"], "1h");
        let labels = meta.labels.as_ref().unwrap();
        assert_eq!(labels.len(), 1);
        assert_eq!(labels["app"], "web");
    }
    // No annotations, null ones, none of the keys listed.
    for (metadata, annotations) in [
        (r#"{"name":"a"}"#, None),
        (r#"{"name":"a","annotations":null}"#, None),
        (r#"{"name":"a","annotations":{"other":"x"}}"#, Some(0)),
    ] {
        let json = format!(r#"{{"metadata":{metadata}}}"#);
        let view: TtlPod = serde_json::from_str(&json).unwrap();
        assert_eq!(
            view.metadata.annotations.map(|a| a.len()),
            annotations,
            "{json}"
        );
    }
    // A kept key whose value is not a string is an error, a skipped one is not decoded.
    assert!(
        serde_json::from_str::<TtlPod>(r#"{"metadata":{"annotations":{"example.com/ttl":7}}}"#)
            .is_err()
    );
    assert!(serde_json::from_str::<TtlPod>(r#"{"metadata":{"annotations":{"other":7}}}"#).is_ok());
    // It round-trips (a compact store encodes and decodes it).
    let view: TtlPod = serde_json::from_str(json).unwrap();
    let again: TtlPod = serde_json::from_value(serde_json::to_value(&view).unwrap()).unwrap();
    assert_eq!(again.metadata, view.metadata);
}
