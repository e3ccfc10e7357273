//! The admission plugins that fill a new object in from others, as a cluster runs them by
//! default: `DefaultStorageClass`, `DefaultIngressClass` and `TaintNodesByCondition`,
//! through a real `kube::Client`.

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::common::server;

fn create<K: serde::de::DeserializeOwned>(value: serde_json::Value) -> K {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn a_claim_without_a_class_gets_the_default_storage_class() {
    let server = server().await;
    let classes: Api<StorageClass> = Api::all(server.client());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();
    let claim = |name: &str, class: Option<&str>| {
        create::<PersistentVolumeClaim>(json!({
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": class,
            },
        }))
    };
    let before = claims.create(&pp, &claim("before", None)).await.unwrap();
    assert_eq!(
        before.spec.unwrap().storage_class_name,
        None,
        "no default class yet"
    );
    classes
        .create(
            &pp,
            &create(json!({
                "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "example.com/disk",
            })),
        )
        .await
        .unwrap();
    let defaulted = claims.create(&pp, &claim("defaulted", None)).await.unwrap();
    assert_eq!(
        defaulted.spec.unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    let none = claims.create(&pp, &claim("none", Some(""))).await.unwrap();
    assert_eq!(
        none.spec.unwrap().storage_class_name.as_deref(),
        Some(""),
        "an empty class is a choice: no class"
    );
}

#[tokio::test]
async fn an_ingress_without_a_class_gets_the_default_ingress_class() {
    let server = server().await;
    let classes: Api<IngressClass> = Api::all(server.client());
    let ingresses: Api<Ingress> = Api::namespaced(server.client(), "default");
    let pp = PostParams::default();
    classes
        .create(
            &pp,
            &create(json!({
                "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                "spec": {"controller": "k8s.io/ingress-nginx"},
            })),
        )
        .await
        .unwrap();
    let ingress = |name: &str| {
        create::<Ingress>(json!({
            "metadata": {"name": name},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}},
        }))
    };
    let web = ingresses.create(&pp, &ingress("web")).await.unwrap();
    assert_eq!(
        web.spec.unwrap().ingress_class_name.as_deref(),
        Some("nginx")
    );
}

#[tokio::test]
async fn a_new_node_is_tainted_not_ready() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client());
    let node = nodes
        .create(
            &PostParams::default(),
            &create(json!({"metadata": {"name": "node-1"}})),
        )
        .await
        .unwrap();
    let taints = node.spec.unwrap().taints.unwrap();
    assert_eq!(taints.len(), 1);
    assert_eq!(
        (taints[0].key.as_str(), taints[0].effect.as_str()),
        ("node.kubernetes.io/not-ready", "NoSchedule")
    );
}
