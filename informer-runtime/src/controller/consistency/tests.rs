use http::{Method, Uri};
use std::collections::BTreeMap;

use std::collections::HashSet;

use parking_lot::Mutex;

use super::client::{
    deleted_status, namespace_of_path, parse_answer, parse_deleted_by_write, resource_of_path,
    written_resource,
};
use super::*;

fn res(group: &str, plural: &str) -> ResourceId {
    ResourceId {
        group: group.into(),
        plural: plural.into(),
    }
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

/// A cache that holds nothing.
fn holds_nothing() -> Holds {
    Arc::new(|_, _| false)
}

/// A gate over a primary cache of configmaps and a cache of secrets.
fn gate() -> (Gate, Arc<StoreVersion>, Arc<StoreVersion>) {
    let primary = Arc::new(StoreVersion::tracked());
    let secrets = Arc::new(StoreVersion::tracked());
    primary.set("10");
    secrets.set("10");
    let gate = Gate::new();
    gate.set_caches(vec![
        Cache {
            resource: res("", "configmaps"),
            version: primary.clone(),
            holds: holds_nothing(),
            scope: CacheScope::default(),
        },
        Cache {
            resource: res("", "secrets"),
            version: secrets.clone(),
            holds: holds_nothing(),
            scope: CacheScope::default(),
        },
    ]);
    (gate, primary, secrets)
}

#[test]
fn gate_lets_every_key_through_when_no_write_is_pending() {
    let (gate, _, _) = gate();
    assert_eq!(gate.pending(), 0);
    assert_eq!(gate.check(&key("a")), Ok(()));
}

#[test]
fn reconcile_waits_until_the_cache_of_the_written_kind_has_reached_the_write() {
    let (gate, _, secrets) = gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("child"), "15");
    assert_eq!(gate.pending(), 1);
    let stale = gate.check(&key("p")).unwrap_err();
    assert_eq!(
        stale,
        Stale {
            resource: res("", "secrets"),
            waiting: Waiting::Version {
                wrote: 15,
                read: Some(10)
            }
        }
    );
    // Other keys are not held.
    assert_eq!(gate.check(&key("q")), Ok(()));
    secrets.set("14");
    assert!(gate.check(&key("p")).is_err());
    secrets.set("15");
    assert_eq!(gate.check(&key("p")), Ok(()));
    assert_eq!(gate.pending(), 0, "a satisfied record is forgotten");
}

#[test]
fn reconcile_waits_for_every_resource_it_wrote_and_the_newest_version_of_each() {
    let (gate, primary, secrets) = gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("c1"), "12");
    gate.wrote(&key("p"), &res("", "secrets"), &key("c2"), "14");
    gate.wrote(&key("p"), &res("", "configmaps"), &key("p"), "13");
    secrets.set("13");
    primary.set("13");
    assert_eq!(
        gate.check(&key("p")).unwrap_err().waiting,
        Waiting::Version {
            wrote: 14,
            read: Some(13)
        }
    );
    secrets.set("14");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn write_to_a_primary_object_holds_that_objects_own_reconcile() {
    let (gate, primary, _) = gate();
    // The reconcile of p writes another primary object, q.
    gate.wrote(&key("p"), &res("", "configmaps"), &key("q"), "11");
    assert!(gate.check(&key("q")).is_err());
    assert!(gate.check(&key("p")).is_err());
    primary.set("11");
    assert_eq!(gate.check(&key("q")), Ok(()));
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn cache_with_nothing_applied_holds_the_key() {
    let primary = Arc::new(StoreVersion::tracked());
    let gate = Gate::new();
    gate.set_caches(vec![Cache {
        resource: res("", "configmaps"),
        version: primary.clone(),
        holds: holds_nothing(),
        scope: CacheScope::default(),
    }]);
    gate.wrote(&key("p"), &res("", "configmaps"), &key("p"), "3");
    assert_eq!(
        gate.check(&key("p")).unwrap_err().waiting,
        Waiting::Version {
            wrote: 3,
            read: None
        }
    );
    primary.set("3");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn writes_of_uncached_kinds_opaque_versions_and_untracked_caches_are_not_waited_for() {
    let (gate, _, secrets) = gate();
    gate.wrote(&key("p"), &res("apps", "deployments"), &key("d"), "99");
    gate.wrote(&key("p"), &res("", "secrets"), &key("s"), "v99-opaque");
    assert_eq!(gate.pending(), 0);
    secrets.set("not-an-integer");
    gate.wrote(&key("p"), &res("", "secrets"), &key("s"), "99");
    assert_eq!(gate.pending(), 0);
    assert_eq!(gate.check(&key("p")), Ok(()));
    // A cache whose versions became opaque after the write stops holding the key.
    let (gate, _, secrets) = self::gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("s"), "99");
    secrets.set("opaque");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn gate_without_caches_records_nothing() {
    let gate = Gate::new();
    gate.wrote(&key("p"), &res("", "secrets"), &key("s"), "9");
    assert_eq!(gate.pending(), 0);
}

#[test]
fn records_of_keys_never_reconciled_again_are_swept_once_caught_up() {
    let (gate, _, secrets) = gate();
    for i in 0..=SWEEP_ABOVE {
        gate.wrote(&key(&format!("p{i}")), &res("", "secrets"), &key("s"), "11");
    }
    assert_eq!(gate.pending(), SWEEP_ABOVE + 1);
    secrets.set("11");
    gate.wrote(&key("last"), &res("", "secrets"), &key("s"), "12");
    assert_eq!(gate.pending(), 1, "only the record not caught up is kept");
}

#[test]
fn scope_is_only_needed_once_a_tracking_client_exists() {
    let gate = Arc::new(Gate::new());
    assert!(gate.scope(&key("p")).is_none());
    gate.clients.store(true, Ordering::Release);
    assert!(gate.scope(&key("p")).is_some());
}

#[test]
fn written_resource_is_the_resource_of_a_write_path() {
    let uri = |s: &str| s.parse::<Uri>().unwrap();
    assert_eq!(
        written_resource(&Method::POST, &uri("/api/v1/namespaces/ns/configmaps")),
        Some(res("", "configmaps"))
    );
    assert_eq!(
        written_resource(
            &Method::PUT,
            &uri("/apis/apps/v1/namespaces/ns/deployments/web/status")
        ),
        Some(res("apps", "deployments"))
    );
    assert_eq!(
        written_resource(&Method::PATCH, &uri("/api/v1/nodes/n1?fieldManager=x")),
        Some(res("", "nodes"))
    );
    assert_eq!(
        written_resource(&Method::DELETE, &uri("/apis/example.com/v1/widgets/w")),
        Some(res("example.com", "widgets"))
    );
    assert_eq!(
        written_resource(&Method::GET, &uri("/api/v1/namespaces/ns/configmaps/c")),
        None,
        "reads are not writes"
    );
    assert_eq!(
        written_resource(
            &Method::POST,
            &uri("/api/v1/namespaces/ns/configmaps?dryRun=All")
        ),
        None,
        "dry runs write nothing"
    );
}

#[test]
fn resource_of_path_tells_namespaces_from_namespaced_resources() {
    assert_eq!(
        resource_of_path("/api/v1/namespaces"),
        Some(res("", "namespaces"))
    );
    assert_eq!(
        resource_of_path("/api/v1/namespaces/team"),
        Some(res("", "namespaces"))
    );
    assert_eq!(
        resource_of_path("/api/v1/namespaces/team/finalize"),
        Some(res("", "namespaces"))
    );
    assert_eq!(
        resource_of_path("/api/v1/namespaces/team/pods/p/eviction"),
        Some(res("", "pods"))
    );
    assert_eq!(resource_of_path("/version"), None);
    assert_eq!(resource_of_path("/apis/apps"), None);
}

#[test]
fn answer_of_a_write_is_its_objects_key_and_version() {
    let object = br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","resourceVersion":"42","uid":"u"},"data":{"a":"b"}}"#;
    assert_eq!(parse_answer(object), Some((key("c"), "42".to_owned())));
    let cluster = br#"{"kind":"Node","metadata":{"name":"n1","resourceVersion":"7"}}"#;
    assert_eq!(
        parse_answer(cluster),
        Some((ObjectKey::cluster("n1"), "7".to_owned()))
    );
    let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"c"}}"#;
    assert_eq!(parse_answer(status), None);
    let list = br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"9"},"items":[]}"#;
    assert_eq!(parse_answer(list), None);
    assert_eq!(parse_answer(b"not json"), None);
    let no_version = br#"{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}"#;
    assert_eq!(parse_answer(no_version), None);
}

#[test]
fn answer_of_a_delete_done_at_once_is_a_status_with_the_objects_name_and_uid() {
    let status = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"c","kind":"configmaps","uid":"u-1"}}"#;
    assert_eq!(deleted_status(status), Some(("c".into(), "u-1".into())));
    let failure = br#"{"kind":"Status","status":"Failure","details":{"name":"c","uid":"u-1"}}"#;
    assert_eq!(deleted_status(failure), None);
    let no_uid = br#"{"kind":"Status","status":"Success","details":{"name":"c"}}"#;
    assert_eq!(deleted_status(no_uid), None);
    let object = br#"{"kind":"ConfigMap","metadata":{"name":"c","uid":"u-1"}}"#;
    assert_eq!(deleted_status(object), None);
}

#[test]
fn namespace_of_path_is_the_namespace_an_object_path_addresses() {
    assert_eq!(
        namespace_of_path("/api/v1/namespaces/ns/configmaps/c"),
        Some("ns")
    );
    assert_eq!(
        namespace_of_path("/apis/apps/v1/namespaces/shop/deployments/web/status"),
        Some("shop")
    );
    assert_eq!(namespace_of_path("/api/v1/namespaces/ns"), None);
    assert_eq!(namespace_of_path("/api/v1/nodes/n1"), None);
    assert_eq!(namespace_of_path("/apis/example.com/v1/zones/z"), None);
}

/// The (key, uid) pairs a test cache holds.
type Held = Arc<Mutex<HashSet<(ObjectKey, String)>>>;

/// A gate whose secrets cache holds the (key, uid) pairs in the returned set.
fn gate_over_held_secrets() -> (Gate, Held) {
    let held: Held = Arc::default();
    let version = Arc::new(StoreVersion::tracked());
    version.set("10");
    let in_cache = held.clone();
    let gate = Gate::new();
    gate.set_caches(vec![
        Cache {
            resource: res("", "configmaps"),
            version: version.clone(),
            holds: holds_nothing(),
            scope: CacheScope::default(),
        },
        Cache {
            resource: res("", "secrets"),
            version,
            holds: Arc::new(move |key, uid| {
                in_cache.lock().contains(&(key.clone(), uid.to_owned()))
            }),
            scope: CacheScope::default(),
        },
    ]);
    (gate, held)
}

#[test]
fn reconcile_after_a_delete_answered_with_a_status_waits_until_the_cache_lets_the_object_go() {
    let (gate, held) = gate_over_held_secrets();
    held.lock().insert((key("s"), "u-1".into()));
    gate.deleted(&key("p"), &res("", "secrets"), &key("s"), "u-1");
    assert_eq!(gate.pending(), 1);
    assert_eq!(
        gate.check(&key("p")),
        Err(Stale {
            resource: res("", "secrets"),
            waiting: Waiting::Deletion { object: key("s") },
        })
    );
    assert_eq!(gate.check(&key("q")), Ok(()), "other keys are not held");
    held.lock().clear();
    assert_eq!(gate.check(&key("p")), Ok(()));
    assert_eq!(gate.pending(), 0, "a satisfied record is forgotten");
}

#[test]
fn a_new_object_under_the_deleted_ones_name_does_not_hold_the_reconcile() {
    let (gate, held) = gate_over_held_secrets();
    held.lock().insert((key("s"), "u-2".into()));
    gate.deleted(&key("p"), &res("", "secrets"), &key("s"), "u-1");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn deletes_of_kinds_the_controller_does_not_cache_are_not_waited_for() {
    let (gate, _) = gate_over_held_secrets();
    gate.deleted(&key("p"), &res("apps", "deployments"), &key("d"), "u-1");
    assert_eq!(gate.pending(), 0);
    assert_eq!(gate.check(&key("p")), Ok(()));
}

/// What a handler queues for a change of `object` to `rv` that maps to `keys`: the keys it
/// leaves to its batch, then the key queued at once.
fn echo(gate: &Gate, resource: &ResourceId, object: &str, rv: &str, keys: &[&str]) -> Vec<String> {
    let mut keys: Vec<ObjectKey> = keys.iter().map(|k| key(k)).collect();
    let queue = informer_core::WorkQueue::<ObjectKey>::new();
    if gate.expects_echoes() {
        gate.take_echo(resource, &key(object), rv, &mut keys, &queue, 0);
    }
    keys.extend(std::iter::from_fn(|| queue.try_get()));
    keys.iter().map(ToString::to_string).collect()
}

#[test]
fn echo_of_a_write_already_reconciled_does_not_queue_its_owner_again() {
    let (gate, _, secrets) = gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("child"), "15");
    assert_eq!(gate.expected_echoes(), 1);
    // The cache gets the write, and p is reconciled (it sees the child)...
    secrets.set("15");
    assert_eq!(gate.check(&key("p")), Ok(()));
    // ...before the handler hears of the event: it does not queue p again, but queues any
    // other key the change maps to.
    assert_eq!(
        echo(&gate, &res("", "secrets"), "child", "15", &["p", "q"]),
        ["ns/q"]
    );
    assert_eq!(gate.expected_echoes(), 0, "an echo is expected once");
    // A later change of the child is not an echo.
    assert_eq!(
        echo(&gate, &res("", "secrets"), "child", "15", &["p"]),
        ["ns/p"]
    );
}

#[test]
fn echo_that_comes_before_the_owners_reconcile_queues_it() {
    let (gate, _, secrets) = gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("child"), "15");
    secrets.set("15");
    // The event reaches the handler first: this is the write's one reconcile.
    assert_eq!(
        echo(&gate, &res("", "secrets"), "child", "15", &["p"]),
        ["ns/p"]
    );
    assert_eq!(gate.expected_echoes(), 0);
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn change_other_than_the_write_itself_is_not_an_echo() {
    let (gate, _, secrets) = gate();
    gate.wrote(&key("p"), &res("", "secrets"), &key("child"), "15");
    secrets.set("16");
    assert_eq!(gate.check(&key("p")), Ok(()));
    // Someone else changed the child after the write (16): something else changed.
    assert_eq!(
        echo(&gate, &res("", "secrets"), "child", "16", &["p"]),
        ["ns/p"]
    );
    // The same key and version in another resource is not the write either.
    assert_eq!(
        echo(&gate, &res("", "configmaps"), "child", "15", &["p"]),
        ["ns/p"]
    );
    assert_eq!(gate.expected_echoes(), 1);
}

/// A gate over one cache of configmaps in namespace `ns` selecting `role=parent`, holding
/// the keys in `held`.
fn scoped_gate(held: &[&str]) -> (Gate, Arc<StoreVersion>) {
    let version = Arc::new(StoreVersion::tracked());
    version.set("10");
    let held: Vec<ObjectKey> = held.iter().map(|name| key(name)).collect();
    let params = crate::factory::InformerParams {
        namespace: Some("ns".into()),
        label_selector: Some("role=parent".into()),
        field_selector: None,
    };
    let gate = Gate::new();
    gate.set_caches(vec![Cache {
        resource: res("", "configmaps"),
        version: version.clone(),
        holds: holds_nothing(),
        scope: CacheScope::new(&params, Arc::new(move |k| held.contains(k))),
    }]);
    (gate, version)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_write_in_another_namespace_than_a_caches_is_not_waited_for_there() {
    let (gate, _) = scoped_gate(&[]);
    let elsewhere = ObjectKey::new(Some("mirror"), "copy");
    let parent = labels(&[("role", "parent")]);
    gate.wrote_labelled(
        &key("p"),
        &res("", "configmaps"),
        &elsewhere,
        "15",
        Some(&parent),
    );
    assert_eq!(gate.pending(), 0, "the cache can never see it");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn a_write_a_caches_selector_does_not_match_is_waited_for_only_if_the_cache_holds_it() {
    let (gate, version) = scoped_gate(&["was-parent"]);
    let other = labels(&[("role", "copy")]);
    gate.wrote_labelled(
        &key("p"),
        &res("", "configmaps"),
        &key("copy"),
        "15",
        Some(&other),
    );
    assert_eq!(
        gate.check(&key("p")),
        Ok(()),
        "never in the cache, and never will be"
    );
    // An object the cache holds leaves it with the write: its event is waited for.
    gate.wrote_labelled(
        &key("p"),
        &res("", "configmaps"),
        &key("was-parent"),
        "16",
        Some(&other),
    );
    assert!(gate.check(&key("p")).is_err());
    version.set("16");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn a_write_a_caches_selector_matches_is_waited_for() {
    let (gate, version) = scoped_gate(&[]);
    let parent = labels(&[("role", "parent")]);
    gate.wrote_labelled(
        &key("p"),
        &res("", "configmaps"),
        &key("new"),
        "15",
        Some(&parent),
    );
    assert!(gate.check(&key("p")).is_err());
    version.set("15");
    assert_eq!(gate.check(&key("p")), Ok(()));
}

#[test]
fn an_update_answer_that_emptied_the_finalizers_of_a_deleting_object_is_a_deletion() {
    let gone = br#"{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u1",
        "resourceVersion":"13","deletionTimestamp":"2026-01-01T00:00:00Z"}}"#;
    assert_eq!(
        parse_deleted_by_write(gone),
        Some((key("c"), "u1".to_owned()))
    );
    // A finalizer left, no deletion asked for, or a grace period still running: alive.
    let held = br#"{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u1",
        "deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["other"]}}"#;
    let live = br#"{"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns","uid":"u1"}}"#;
    let graceful = br#"{"kind":"Pod","metadata":{"name":"c","namespace":"ns","uid":"u1",
        "deletionTimestamp":"2026-01-01T00:00:00Z","deletionGracePeriodSeconds":30}}"#;
    for alive in [&held[..], &live[..], &graceful[..]] {
        assert_eq!(parse_deleted_by_write(alive), None);
    }
}
