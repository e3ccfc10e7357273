use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::Harness;

fn harness() -> Harness<ApiServiceController> {
    let mut h = Harness::new(ApiServiceController::new);
    h.resync();
    h.settle();
    h
}

/// What the CRD reconcile does after every write of a CRD.
fn register_crds(h: &Harness<ApiServiceController>) {
    register(&mut h.storage.lock(), &h.registry, false);
}

/// A stored CRD of `things.<group>` with these versions (`(name, served)`), not established
/// and not in the registry (the registry is not what registration reads).
fn store_crd(h: &Harness<ApiServiceController>, group: &str, versions: &[(&str, bool)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, (name, served))| {
            json!({"name": name, "served": served, "storage": i == 0,
                   "schema": {"openAPIV3Schema": {"type": "object"}}})
        })
        .collect();
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": versions,
        },
    });
    if group.ends_with(".k8s.io") {
        crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"});
    }
    h.storage
        .lock()
        .create(&h.resource("customresourcedefinitions"), None, crd, false)
        .expect("the CRD is stored")
        .as_ref()
        .clone()
}

#[test]
fn every_served_version_of_a_stored_crd_gets_a_local_apiservice_before_it_is_served() {
    let h = harness();
    store_crd(&h, "example.org", &[("v1", true), ("v2alpha1", false)]);
    register_crds(&h);
    let v1 = h
        .get("apiservices", None, "v1.example.org")
        .expect("the served version's APIService");
    assert_eq!(
        v1["spec"],
        json!({"group": "example.org", "version": "v1",
               "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(v1["metadata"]["labels"][MANAGED_LABEL], "true");
    assert_eq!(v1["status"]["conditions"][0]["type"], "Available");
    assert_eq!(v1["status"]["conditions"][0]["status"], "True");
    assert!(h.get("apiservices", None, "v2alpha1.example.org").is_none());
}

#[test]
fn a_version_no_longer_served_and_a_deleted_crd_lose_their_apiservices() {
    let h = harness();
    let mut crd = store_crd(&h, "example.org", &[("v1", true), ("v2", true)]);
    register_crds(&h);
    assert!(h.get("apiservices", None, "v2.example.org").is_some());
    crd["spec"]["versions"][1]["served"] = json!(false);
    h.update("customresourcedefinitions", crd, Subresource::Main);
    register_crds(&h);
    assert!(h.get("apiservices", None, "v1.example.org").is_some());
    assert!(h.get("apiservices", None, "v2.example.org").is_none());
    h.delete(
        "customresourcedefinitions",
        None,
        "things.example.org",
        DeleteOptions::default(),
    )
    .expect("deleted");
    register_crds(&h);
    // A terminating CRD is still a CRD: its objects are being deleted.
    let mut terminating = h
        .get("customresourcedefinitions", None, "things.example.org")
        .expect("kept by its cleanup finalizer");
    assert!(h.get("apiservices", None, "v1.example.org").is_some());
    terminating["metadata"]["finalizers"] = json!([]);
    h.update("customresourcedefinitions", terminating, Subresource::Main);
    register_crds(&h);
    assert!(
        h.get("customresourcedefinitions", None, "things.example.org")
            .is_none()
    );
    assert!(h.get("apiservices", None, "v1.example.org").is_none());
}

#[test]
fn a_group_version_with_built_in_types_keeps_its_built_in_apiservice() {
    let h = harness();
    let before = h
        .get("apiservices", None, "v1.networking.k8s.io")
        .expect("built in");
    store_crd(&h, "networking.k8s.io", &[("v1", true)]);
    register_crds(&h);
    let after = h
        .get("apiservices", None, "v1.networking.k8s.io")
        .expect("still there");
    assert_eq!(after["spec"], before["spec"]);
    assert_eq!(after["metadata"]["labels"][MANAGED_LABEL], "onstart");
}

#[test]
fn the_controller_registers_the_crds_group_versions_again_when_it_starts_over() {
    let mut h = harness();
    store_crd(&h, "example.org", &[("v1", true)]);
    h.settle();
    assert!(
        h.get("apiservices", None, "v1.example.org").is_none(),
        "a CRD's write is followed by its reconcile, which registers"
    );
    h.resync();
    h.settle();
    let v1 = h
        .get("apiservices", None, "v1.example.org")
        .expect("registered");
    assert_eq!(v1["status"]["conditions"][0]["status"], "True");
}
