use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::Harness;
use crate::apiserver::storage::DeleteOutcome;

fn harness() -> Harness<NamespaceController> {
    let h = Harness::new(NamespaceController::new);
    h.create("namespaces", None, "team", json!({}));
    h
}

fn namespace(h: &Harness<NamespaceController>) -> Option<Value> {
    h.get("namespaces", None, "team")
}

fn condition<'a>(namespace: &'a Value, kind: &str) -> &'a Value {
    namespace["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no condition {kind} in {namespace}"))
}

#[test]
fn a_new_namespace_is_active_with_the_kubernetes_finalizer_and_its_name_label() {
    let h = harness();
    let team = namespace(&h).unwrap();
    assert_eq!(team["status"], json!({"phase": "Active"}));
    assert_eq!(team["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(team["metadata"]["labels"][NAME_LABEL], "team");
}

#[test]
fn updates_put_the_name_label_back_and_keep_spec_finalizers() {
    let h = harness();
    let mut team = namespace(&h).unwrap();
    team["metadata"]["labels"] = json!({NAME_LABEL: "other", "tier": "gold"});
    team["spec"]["finalizers"] = json!([]);
    let updated = h.update("namespaces", team, Subresource::Main);
    assert_eq!(updated["metadata"]["labels"][NAME_LABEL], "team");
    assert_eq!(updated["metadata"]["labels"]["tier"], "gold");
    assert_eq!(updated["spec"]["finalizers"], json!(["kubernetes"]));
}

#[test]
fn the_finalize_subresource_changes_spec_finalizers() {
    let h = harness();
    let mut team = namespace(&h).unwrap();
    team["spec"]["finalizers"] = json!(["kubernetes", "example.com/mine"]);
    let finalized = h.update("namespaces", team, Subresource::Finalize);
    assert_eq!(
        finalized["spec"]["finalizers"],
        json!(["kubernetes", "example.com/mine"])
    );
}

#[test]
fn deleting_a_namespace_marks_it_terminating_and_keeps_its_finalizer() {
    let h = harness();
    let outcome = h
        .delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("a namespace is only marked");
    };
    assert!(is_terminating(&marked));
    assert_eq!(marked["status"]["phase"], "Terminating");
    assert_eq!(marked["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(marked["metadata"].get("finalizers").is_none());
    let again = h
        .delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    let DeleteOutcome::Pending(again) = again else {
        panic!("still terminating");
    };
    assert_eq!(
        again["metadata"]["resourceVersion"], marked["metadata"]["resourceVersion"],
        "a second DELETE changes nothing"
    );
}

#[test]
fn deleting_a_namespace_with_propagation_adds_the_collector_s_finalizers() {
    let h = harness();
    let foreground = DeleteOptions {
        orphan_dependents: Some(false),
        ..DeleteOptions::default()
    };
    let DeleteOutcome::Pending(marked) = h.delete("namespaces", None, "team", foreground).unwrap()
    else {
        panic!("marked");
    };
    assert_eq!(
        marked["metadata"]["finalizers"],
        json!([gc::FOREGROUND]),
        "orphanDependents: false asks a namespace for foreground deletion"
    );
}

#[test]
fn a_terminating_namespace_goes_when_its_last_finalizer_does() {
    let h = harness();
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    let mut team = namespace(&h).unwrap();
    team["spec"]["finalizers"] = json!([]);
    h.storage
        .lock()
        .update(
            &h.resource("namespaces"),
            None,
            "team",
            team,
            Subresource::Finalize,
            false,
        )
        .unwrap();
    assert!(namespace(&h).is_none());
}

#[test]
fn creating_in_a_missing_namespace_is_not_found() {
    let h = harness();
    let store = h.storage.lock();
    let err = admit_create(
        &store,
        &h.registry,
        &h.resource("pods"),
        Some("nowhere"),
        "web",
    )
    .unwrap_err();
    assert_eq!(err.code(), 404);
    assert_eq!(err.message(), "namespaces \"nowhere\" not found");
}

#[test]
fn creating_in_a_terminating_namespace_is_forbidden_with_the_cause() {
    let h = harness();
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    let store = h.storage.lock();
    let err = admit_create(
        &store,
        &h.registry,
        &h.resource("deployments"),
        Some("team"),
        "web",
    )
    .unwrap_err();
    assert_eq!(err.code(), 403);
    let status = err.to_status();
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "deployments.apps \"web\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    assert_eq!(
        status["details"],
        json!({
            "name": "web", "group": "apps", "kind": "deployments",
            "causes": [{
                "reason": "NamespaceTerminating",
                "message": "namespace team is being terminated",
                "field": "metadata.namespace",
            }],
        })
    );
    assert!(
        admit_create(&store, &h.registry, &h.resource("namespaces"), None, "x").is_ok(),
        "cluster-scoped objects are not in a namespace"
    );
}

#[test]
fn the_immortal_namespaces_may_not_be_deleted() {
    let h = harness();
    let namespaces = h.resource("namespaces");
    for name in ["default", "kube-system", "kube-public"] {
        let err = admit_delete(&namespaces, name).unwrap_err();
        assert_eq!(err.code(), 403);
        assert_eq!(
            err.message(),
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
    assert!(admit_delete(&namespaces, "team").is_ok());
    assert!(admit_delete(&h.resource("pods"), "default").is_ok());
}

#[test]
fn the_controller_deletes_the_content_then_the_namespace() {
    let mut h = harness();
    h.create("configmaps", Some("team"), "settings", json!({}));
    h.create("widgets", Some("team"), "w", json!({}));
    h.create("configmaps", Some("other"), "kept", json!({}));
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    h.settle();
    assert!(namespace(&h).is_none());
    assert!(h.storage.snapshot().in_namespace("team").is_empty());
    assert!(h.get("configmaps", Some("other"), "kept").is_some());
}

#[test]
fn the_controller_waits_for_finalizers_and_says_so_in_the_conditions() {
    let mut h = harness();
    h.create(
        "configmaps",
        Some("team"),
        "held",
        json!({"finalizers": ["example.com/hold"]}),
    );
    h.create("pods", Some("team"), "p", json!({}));
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    h.settle();
    let team = namespace(&h).expect("held by the configmap's finalizer");
    assert_eq!(team["status"]["phase"], "Terminating");
    let remaining = condition(&team, "NamespaceContentRemaining");
    assert_eq!(remaining["status"], "True");
    assert_eq!(remaining["reason"], "SomeResourcesRemain");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    let finalizers = condition(&team, "NamespaceFinalizersRemaining");
    assert_eq!(finalizers["reason"], "SomeFinalizersRemain");
    assert_eq!(
        finalizers["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    let discovery = condition(&team, "NamespaceDeletionDiscoveryFailure");
    assert_eq!(
        (&discovery["status"], &discovery["reason"]),
        (&json!("False"), &json!("ResourcesDiscovered"))
    );
    assert!(h.get("pods", Some("team"), "p").is_none());
    let mut held = h.get("configmaps", Some("team"), "held").unwrap();
    assert!(gc::is_deleting(&held));
    held["metadata"]["finalizers"] = json!([]);
    h.update("configmaps", held, Subresource::Main);
    h.settle();
    assert!(namespace(&h).is_none());
}

#[test]
fn the_controller_deletes_large_namespaces_a_batch_at_a_time() {
    let mut h = harness();
    for i in 0..(DELETE_BATCH * 2 + 3) {
        h.create("configmaps", Some("team"), &format!("c{i}"), json!({}));
    }
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    h.settle();
    assert!(namespace(&h).is_none());
    assert!(h.storage.snapshot().in_namespace("team").is_empty());
}

#[test]
fn a_resync_finds_terminating_namespaces() {
    let mut h = harness();
    h.create("configmaps", Some("team"), "settings", json!({}));
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    h.forget_changes();
    h.controller = NamespaceController::new(&h.registry);
    h.resync();
    h.settle();
    assert!(namespace(&h).is_none());
}
