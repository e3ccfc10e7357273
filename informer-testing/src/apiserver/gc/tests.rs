use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::{Harness, owner_ref};
use crate::apiserver::storage::DeleteOutcome;

const NS: Option<&str> = Some("ns");

fn harness() -> Harness<GarbageCollector> {
    Harness::new(|_| GarbageCollector::default())
}

fn with(propagation: Propagation) -> DeleteOptions {
    DeleteOptions {
        propagation: Some(propagation),
        ..DeleteOptions::default()
    }
}

/// A ConfigMap owned by `owners`, the first its controller (the API server refuses two).
fn dependent(h: &Harness<GarbageCollector>, name: &str, owners: &[&Value], block: bool) -> Value {
    let refs: Vec<Value> = owners
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut reference = owner_ref(o, block);
            reference["controller"] = json!(i == 0);
            reference
        })
        .collect();
    h.create("configmaps", NS, name, json!({"ownerReferences": refs}))
}

/// A ConfigMap owned by `owner` and held by the finalizer `example.com/hold`.
fn held(h: &Harness<GarbageCollector>, name: &str, owner: &Value, block: bool) -> Value {
    h.create(
        "configmaps",
        NS,
        name,
        json!({"ownerReferences": [owner_ref(owner, block)], "finalizers": ["example.com/hold"]}),
    )
}

fn finalizers_of(object: &Value) -> Vec<String> {
    finalizer_names(object)
}

#[test]
fn background_deletion_deletes_dependents_whose_owners_are_all_gone() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    dependent(&h, "a", &[&owner], true);
    dependent(&h, "b", &[&owner], false);
    h.settle();
    assert!(
        h.get("configmaps", NS, "a").is_some(),
        "owned, not collected"
    );
    let outcome = h
        .delete("deployments", NS, "web", DeleteOptions::default())
        .unwrap();
    assert!(
        matches!(outcome, DeleteOutcome::Deleted(_)),
        "the owner goes at once"
    );
    h.settle();
    assert!(h.get("configmaps", NS, "a").is_none());
    assert!(h.get("configmaps", NS, "b").is_none());
}

#[test]
fn a_dependent_with_another_owner_keeps_it_and_loses_the_dangling_reference() {
    let mut h = harness();
    let first = h.create("deployments", NS, "first", json!({}));
    let second = h.create("deployments", NS, "second", json!({}));
    dependent(&h, "shared", &[&first, &second], true);
    h.delete("deployments", NS, "first", with(Propagation::Background))
        .unwrap();
    h.settle();
    let shared = h.get("configmaps", NS, "shared").expect("still owned");
    let refs = shared["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["name"], "second");
}

#[test]
fn foreground_deletion_keeps_the_owner_until_its_blocking_dependents_are_gone() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    held(&h, "held", &owner, true);
    dependent(&h, "free", &[&owner], true);
    let outcome = h
        .delete("deployments", NS, "web", with(Propagation::Foreground))
        .unwrap();
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("the owner stays visible");
    };
    assert!(is_deleting(&marked));
    assert_eq!(finalizers_of(&marked), [FOREGROUND]);
    h.settle();
    assert!(h.get("configmaps", NS, "free").is_none());
    let held_now = h
        .get("configmaps", NS, "held")
        .expect("its finalizer holds it");
    assert!(is_deleting(&held_now), "marked for deletion");
    assert!(
        h.get("deployments", NS, "web").is_some(),
        "the owner waits for its blocking dependent"
    );
    // The dependent's finalizer goes: so does it, then the owner.
    let mut release = held_now.clone();
    release["metadata"]["finalizers"] = json!([]);
    h.update("configmaps", release, Subresource::Main);
    h.settle();
    assert!(h.get("configmaps", NS, "held").is_none());
    assert!(h.get("deployments", NS, "web").is_none());
}

#[test]
fn foreground_deletion_does_not_wait_for_dependents_that_do_not_block() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    held(&h, "held", &owner, false);
    h.delete("deployments", NS, "web", with(Propagation::Foreground))
        .unwrap();
    h.settle();
    assert!(h.get("deployments", NS, "web").is_none());
    let held = h
        .get("configmaps", NS, "held")
        .expect("held by its finalizer");
    assert!(is_deleting(&held), "deleted all the same");
}

#[test]
fn foreground_deletion_is_recursive() {
    let mut h = harness();
    let top = h.create("deployments", NS, "top", json!({}));
    let middle = h.create(
        "replicasets",
        NS,
        "middle",
        json!({"ownerReferences": [owner_ref(&top, true)]}),
    );
    held(&h, "bottom", &middle, true);
    h.delete("deployments", NS, "top", with(Propagation::Foreground))
        .unwrap();
    h.settle();
    let middle_now = h.get("replicasets", NS, "middle").expect("waits in turn");
    assert_eq!(
        finalizers_of(&middle_now),
        [FOREGROUND],
        "a dependent with dependents is deleted in the foreground"
    );
    assert!(h.get("deployments", NS, "top").is_some());
    let mut bottom = h.get("configmaps", NS, "bottom").unwrap();
    assert!(is_deleting(&bottom));
    bottom["metadata"]["finalizers"] = json!([]);
    h.update("configmaps", bottom, Subresource::Main);
    h.settle();
    assert!(h.get("replicasets", NS, "middle").is_none());
    assert!(h.get("deployments", NS, "top").is_none());
}

#[test]
fn owners_blocking_each_other_in_the_foreground_both_go() {
    let mut h = harness();
    let a = h.create("configmaps", NS, "a", json!({}));
    let b = dependent(&h, "b", &[&a], true);
    let mut a_owned = h.get("configmaps", NS, "a").unwrap();
    a_owned["metadata"]["ownerReferences"] = json!([owner_ref(&b, true)]);
    h.update("configmaps", a_owned, Subresource::Main);
    h.settle();
    assert!(
        h.get("configmaps", NS, "a").is_some(),
        "each owns the other"
    );
    h.delete("configmaps", NS, "a", with(Propagation::Foreground))
        .unwrap();
    h.settle();
    assert!(h.get("configmaps", NS, "a").is_none());
    assert!(h.get("configmaps", NS, "b").is_none());
}

#[test]
fn orphan_propagation_removes_the_references_then_the_owner() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    let other = h.create("deployments", NS, "other", json!({}));
    dependent(&h, "a", &[&owner], true);
    dependent(&h, "b", &[&owner, &other], true);
    let outcome = h
        .delete("deployments", NS, "web", with(Propagation::Orphan))
        .unwrap();
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("the owner waits for its dependents to be orphaned");
    };
    assert_eq!(finalizers_of(&marked), [ORPHAN]);
    h.settle();
    assert!(h.get("deployments", NS, "web").is_none());
    let a = h.get("configmaps", NS, "a").expect("orphaned, not deleted");
    assert!(
        a["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    let b = h.get("configmaps", NS, "b").unwrap();
    assert_eq!(b["metadata"]["ownerReferences"][0]["name"], "other");
    assert_eq!(
        b["metadata"]["ownerReferences"].as_array().unwrap().len(),
        1
    );
}

#[test]
fn orphan_dependents_true_orphans() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    dependent(&h, "a", &[&owner], true);
    let options = DeleteOptions {
        orphan_dependents: Some(true),
        ..DeleteOptions::default()
    };
    h.delete("deployments", NS, "web", options).unwrap();
    h.settle();
    assert!(h.get("deployments", NS, "web").is_none());
    assert!(h.get("configmaps", NS, "a").is_some());
}

#[test]
fn an_object_whose_owner_uid_does_not_exist_is_collected() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    let mut made_up = owner_ref(&owner, false);
    made_up["uid"] = json!("00000000-0000-4000-8000-000000000000");
    h.create(
        "configmaps",
        NS,
        "stray",
        json!({"ownerReferences": [made_up]}),
    );
    h.settle();
    assert!(
        h.get("configmaps", NS, "stray").is_none(),
        "a name with another UID is not its owner"
    );
    assert!(h.get("deployments", NS, "web").is_some());
}

#[test]
fn a_namespaced_owner_in_another_namespace_is_absent_and_reported() {
    let mut h = harness();
    let owner = h.create("deployments", Some("other"), "web", json!({}));
    dependent(&h, "cross", &[&owner], false);
    h.settle();
    assert!(
        h.get("configmaps", NS, "cross").is_none(),
        "the owner does not exist in the dependent's namespace"
    );
    assert!(h.get("deployments", Some("other"), "web").is_some());
    let events = h.storage.snapshot().in_namespace("ns");
    let reported: Vec<&Value> = events
        .iter()
        .map(|(_, e)| e.as_ref())
        .filter(|e| e["reason"] == "OwnerRefInvalidNamespace")
        .collect();
    assert_eq!(reported.len(), 1, "{events:?}");
    assert_eq!(reported[0]["type"], "Warning");
    assert_eq!(reported[0]["involvedObject"]["name"], "cross");
    let uid = owner["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        reported[0]["message"],
        format!(
            "ownerRef [apps/v1/Deployment, namespace: ns, name: web, uid: {uid}] does not exist in namespace \"ns\""
        )
    );
}

#[test]
fn a_cluster_scoped_owner_may_own_namespaced_dependents() {
    let mut h = harness();
    let zone = h.create("zones", None, "eu", json!({}));
    dependent(&h, "in-zone", &[&zone], false);
    h.settle();
    assert!(h.get("configmaps", NS, "in-zone").is_some());
    h.delete("zones", None, "eu", DeleteOptions::default())
        .unwrap();
    h.settle();
    assert!(h.get("configmaps", NS, "in-zone").is_none());
}

#[test]
fn a_cluster_scoped_dependent_of_a_namespaced_kind_is_left_alone() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    h.create(
        "zones",
        None,
        "eu",
        json!({"ownerReferences": [owner_ref(&owner, false)]}),
    );
    h.delete("deployments", NS, "web", DeleteOptions::default())
        .unwrap();
    h.settle();
    assert!(h.get("zones", None, "eu").is_some(), "unresolvable, kept");
    let reported = h.storage.snapshot().in_namespace("default");
    assert!(
        reported
            .iter()
            .any(|(_, e)| e["reason"] == "OwnerRefInvalidNamespace"),
        "reported in the default namespace"
    );
}

#[test]
fn an_owner_of_a_kind_the_server_does_not_serve_leaves_the_dependent() {
    let mut h = harness();
    h.create(
        "configmaps",
        NS,
        "unknown-owner",
        json!({"ownerReferences": [{
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "name": "h",
            "uid": "00000000-0000-4000-8000-000000000001"
        }]}),
    );
    h.settle();
    assert!(h.get("configmaps", NS, "unknown-owner").is_some());
}

#[test]
fn a_dependent_with_finalizers_is_marked_and_waits_for_them() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    held(&h, "held", &owner, false);
    h.delete("deployments", NS, "web", DeleteOptions::default())
        .unwrap();
    h.settle();
    let held = h
        .get("configmaps", NS, "held")
        .expect("its finalizer holds it");
    assert!(is_deleting(&held));
    assert_eq!(finalizers_of(&held), ["example.com/hold"]);
}

#[test]
fn custom_resources_are_owners_and_dependents() {
    let mut h = harness();
    let widget = h.create("widgets", NS, "w", json!({}));
    let child = h.create(
        "widgets",
        NS,
        "child",
        json!({"ownerReferences": [owner_ref(&widget, true)]}),
    );
    dependent(&h, "grandchild", &[&child], true);
    h.delete("widgets", NS, "w", with(Propagation::Foreground))
        .unwrap();
    h.settle();
    assert!(h.get("widgets", NS, "w").is_none());
    assert!(h.get("widgets", NS, "child").is_none());
    assert!(h.get("configmaps", NS, "grandchild").is_none());
}

#[test]
fn a_resync_finds_work_from_before_the_collector_watched() {
    let mut h = harness();
    let owner = h.create("deployments", NS, "web", json!({}));
    dependent(&h, "a", &[&owner], false);
    h.delete("deployments", NS, "web", DeleteOptions::default())
        .unwrap();
    // The collector lost these changes (as when its subscription ends).
    h.forget_changes();
    h.controller = GarbageCollector::default();
    h.resync();
    h.settle();
    assert!(h.get("configmaps", NS, "a").is_none());
}

#[test]
fn events_are_deleted_without_propagation() {
    let h = harness();
    let events = h.resource("events");
    // A valid core Event names its involved object in its own namespace.
    let event = json!({
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
    });
    let event = h
        .storage
        .lock()
        .create(&events, NS, event, false)
        .unwrap()
        .as_ref()
        .clone();
    let options = with(Propagation::Foreground);
    assert_eq!(deletion_finalizers(&events, &event, &options), None);
}

#[test]
fn deletion_finalizers_follow_the_options_then_the_object_then_the_default() {
    let h = harness();
    let pods = h.resource("configmaps");
    let plain = json!({"metadata": {"finalizers": ["example.com/x"]}});
    let orphaning = json!({"metadata": {"finalizers": [ORPHAN]}});
    let names = |v: Option<Vec<Value>>| {
        v.map(|fs| {
            fs.iter()
                .map(|f| f.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
    };
    let options = |propagation: Option<Propagation>, orphan: Option<bool>| DeleteOptions {
        propagation,
        orphan_dependents: orphan,
        ..DeleteOptions::default()
    };
    // Background by default: nothing added.
    assert_eq!(
        names(deletion_finalizers(&pods, &plain, &options(None, None))),
        None
    );
    assert_eq!(
        names(deletion_finalizers(
            &pods,
            &plain,
            &options(Some(Propagation::Foreground), None)
        )),
        Some(vec!["example.com/x".into(), FOREGROUND.into()])
    );
    // An orphan finalizer already there decides when the request does not.
    assert_eq!(
        names(deletion_finalizers(&pods, &orphaning, &options(None, None))),
        None
    );
    // The request overrides it.
    assert_eq!(
        names(deletion_finalizers(
            &pods,
            &orphaning,
            &options(Some(Propagation::Background), None)
        )),
        Some(vec![])
    );
    // orphanDependents wins; false means background, not foreground.
    assert_eq!(
        names(deletion_finalizers(
            &pods,
            &plain,
            &options(None, Some(true))
        )),
        Some(vec!["example.com/x".into(), ORPHAN.into()])
    );
    assert_eq!(
        names(deletion_finalizers(
            &pods,
            &orphaning,
            &options(None, Some(false))
        )),
        Some(vec![])
    );
}

#[test]
fn propagation_policies_parse_by_their_names() {
    for policy in Propagation::ALL {
        assert_eq!(Propagation::parse(policy.as_str()), Some(policy));
    }
    assert_eq!(Propagation::parse("background"), None);
}

#[test]
fn jobs_and_replication_controllers_orphan_their_dependents_by_default() {
    let h = harness();
    let plain = json!({"metadata": {}});
    let unspecified = DeleteOptions::default();
    for plural in ["jobs", "replicationcontrollers"] {
        let resource = h.resource(plural);
        assert_eq!(
            deletion_finalizers(&resource, &plain, &unspecified),
            Some(vec![json!(ORPHAN)]),
            "{plural}"
        );
        assert_eq!(
            deletion_finalizers(&resource, &plain, &with(Propagation::Background)),
            None,
            "{plural}"
        );
        // A foreground finalizer already there decides before the default.
        let foreground = json!({"metadata": {"finalizers": [FOREGROUND]}});
        assert_eq!(
            deletion_finalizers(&resource, &foreground, &unspecified),
            None
        );
    }
    let deployments = h.resource("deployments");
    assert_eq!(
        deletion_finalizers(&deployments, &plain, &unspecified),
        None
    );
}

#[test]
fn only_a_job_deleted_without_a_policy_is_warned_of_its_pods() {
    let h = harness();
    let jobs = h.resource("jobs");
    assert_eq!(
        delete_warnings(&jobs, &DeleteOptions::default()),
        [JOB_PODS_KEPT]
    );
    assert!(delete_warnings(&jobs, &with(Propagation::Orphan)).is_empty());
    let controllers = h.resource("replicationcontrollers");
    assert!(delete_warnings(&controllers, &DeleteOptions::default()).is_empty());
}
