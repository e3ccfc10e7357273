use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::Harness;
use crate::apiserver::storage::DeleteOptions;

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

fn harness() -> Harness<RootCaPublisher> {
    let mut h = Harness::new(|registry| RootCaPublisher::new(registry, Some(Arc::from(CA))));
    h.create("namespaces", None, "team", json!({}));
    h.settle();
    h
}

fn published(h: &Harness<RootCaPublisher>) -> Value {
    h.get("configmaps", Some("team"), NAME)
        .expect("the kube-root-ca.crt ConfigMap")
}

fn delete_published(h: &Harness<RootCaPublisher>) {
    h.delete("configmaps", Some("team"), NAME, DeleteOptions::default())
        .unwrap();
}

#[test]
fn a_new_namespace_gets_the_ca_bundle_with_its_description() {
    let h = harness();
    let config_map = published(&h);
    assert_eq!(config_map["data"], json!({"ca.crt": CA}));
    assert_eq!(
        config_map["metadata"]["annotations"]["kubernetes.io/description"],
        DESCRIPTION
    );
    assert_eq!(
        config_map["metadata"]["managedFields"][0]["manager"],
        MANAGER
    );
}

#[test]
fn a_deleted_bundle_comes_back() {
    let mut h = harness();
    delete_published(&h);
    h.settle();
    assert_eq!(published(&h)["data"]["ca.crt"], CA);
}

#[test]
fn changed_data_is_put_back_and_other_metadata_kept() {
    let mut h = harness();
    let mut config_map = published(&h);
    config_map["data"] = json!({"ca.crt": "not a CA", "extra": "x"});
    config_map["metadata"]["labels"] = json!({"team": "a"});
    config_map["metadata"]["annotations"] = json!({"note": "mine"});
    h.update("configmaps", config_map, Subresource::Main);
    h.settle();
    let config_map = published(&h);
    assert_eq!(config_map["data"], json!({"ca.crt": CA}));
    assert_eq!(config_map["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(config_map["metadata"]["annotations"]["note"], "mine");
    assert_eq!(
        config_map["metadata"]["annotations"]["kubernetes.io/description"],
        DESCRIPTION
    );
}

#[test]
fn a_description_in_other_words_is_left_alone() {
    let mut h = harness();
    let mut config_map = published(&h);
    config_map["metadata"]["annotations"]["kubernetes.io/description"] = json!("ours");
    let written = h.update("configmaps", config_map, Subresource::Main);
    h.settle();
    assert_eq!(
        published(&h)["metadata"]["resourceVersion"],
        written["metadata"]["resourceVersion"]
    );
}

#[test]
fn a_terminating_namespace_gets_none() {
    let mut h = harness();
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    delete_published(&h);
    h.settle();
    assert!(h.get("configmaps", Some("team"), NAME).is_none());
}

#[test]
fn a_resync_publishes_to_every_namespace() {
    let mut h = Harness::new(|registry| RootCaPublisher::new(registry, Some(Arc::from(CA))));
    h.create("namespaces", None, "a", json!({}));
    h.create("namespaces", None, "b", json!({}));
    h.forget_changes();
    h.resync();
    h.settle();
    for namespace in ["a", "b"] {
        assert!(
            h.get("configmaps", Some(namespace), NAME).is_some(),
            "{namespace}"
        );
    }
}

#[test]
fn without_a_ca_nothing_is_published() {
    let mut h = Harness::new(|registry| RootCaPublisher::new(registry, None));
    h.create("namespaces", None, "team", json!({}));
    h.settle();
    assert!(h.get("configmaps", Some("team"), NAME).is_none());
}
