use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::Harness;
use crate::apiserver::storage::DeleteOptions;

fn harness() -> Harness<ServiceAccountController> {
    let mut h = Harness::new(ServiceAccountController::new);
    h.create("namespaces", None, "team", json!({}));
    h.settle();
    h
}

fn delete_account(h: &Harness<ServiceAccountController>, name: &str) {
    h.delete(
        "serviceaccounts",
        Some("team"),
        name,
        DeleteOptions::default(),
    )
    .unwrap();
}

#[test]
fn a_new_namespace_gets_the_default_service_account() {
    let h = harness();
    let account = h.get("serviceaccounts", Some("team"), DEFAULT).unwrap();
    // It sets no field but its name: no managed fields entry, as on a cluster.
    assert!(
        account["metadata"].get("managedFields").is_none(),
        "{account}"
    );
}

#[test]
fn a_deleted_default_service_account_comes_back() {
    let mut h = harness();
    delete_account(&h, DEFAULT);
    h.settle();
    assert!(h.get("serviceaccounts", Some("team"), DEFAULT).is_some());
}

#[test]
fn a_terminating_namespace_gets_none_and_others_are_left_alone() {
    let mut h = harness();
    h.create("serviceaccounts", Some("team"), "builder", json!({}));
    delete_account(&h, "builder");
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    delete_account(&h, DEFAULT);
    h.settle();
    assert!(h.get("serviceaccounts", Some("team"), DEFAULT).is_none());
    assert!(h.get("serviceaccounts", Some("team"), "builder").is_none());
}

#[test]
fn a_resync_fills_namespaces_that_have_none() {
    let mut h = Harness::new(ServiceAccountController::new);
    h.create("namespaces", None, "quiet", json!({}));
    h.forget_changes();
    h.resync();
    h.settle();
    assert!(h.get("serviceaccounts", Some("quiet"), DEFAULT).is_some());
}

#[test]
fn a_new_pod_runs_as_the_default_service_account_or_the_one_it_names() {
    let mut pod = json!({"spec": {"containers": []}});
    admit_pod(&mut pod);
    assert_eq!(pod["spec"]["serviceAccountName"], DEFAULT);
    assert_eq!(pod["spec"]["serviceAccount"], DEFAULT);
    let mut named = json!({"spec": {"serviceAccount": "builder"}});
    admit_pod(&mut named);
    assert_eq!(named["spec"]["serviceAccountName"], "builder");
}
