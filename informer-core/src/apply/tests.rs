use super::*;
use crate::store::Recording;
use crate::store::ThreadSafeStore;
use k8s_openapi::api::core::v1::ConfigMap;

fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = (!name.is_empty()).then(|| name.to_owned());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.resource_version = Some(rv.into());
    Arc::new(cm)
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

fn show(n: &Notification<ConfigMap>) -> String {
    let o = |o: &Arc<ConfigMap>| {
        format!(
            "{}@{}",
            o.metadata.name.as_deref().unwrap_or(""),
            o.metadata.resource_version.as_deref().unwrap_or("")
        )
    };
    match n {
        Notification::Add {
            object,
            is_initial_list,
        } => format!(
            "add {}{}",
            o(object),
            if *is_initial_list { " initial" } else { "" }
        ),
        Notification::Update { old, new } => format!("update {}->{}", o(old), o(new)),
        Notification::Delete(Deleted::Object(obj)) => format!("delete {}", o(obj)),
        Notification::Delete(Deleted::FinalStateUnknown { key, last_known }) => {
            format!(
                "gone {key} last={}",
                last_known.as_ref().map(o).unwrap_or_default()
            )
        }
    }
}

fn run(
    store: &ThreadSafeStore<ConfigMap>,
    deltas: Vec<Delta<ConfigMap>>,
    initial: bool,
) -> (Vec<String>, Result<(), StoreError>) {
    let mut seen = Vec::new();
    let result = apply_deltas(store, deltas, initial, &mut |n| seen.push(show(&n)));
    (seen, result)
}

#[test]
fn add_of_an_uncached_object_is_an_add_and_of_a_cached_one_an_update() {
    let store = ThreadSafeStore::new();
    let (seen, r) = run(
        &store,
        vec![Delta::Added(cm("a", "1")), Delta::Added(cm("a", "2"))],
        true,
    );
    r.unwrap();
    assert_eq!(seen, ["add a@1 initial", "update a@1->a@2"]);
    assert_eq!(
        store
            .get(&key("a"))
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("2")
    );
}

#[test]
fn sync_of_a_cached_object_is_an_update_from_the_cached_state() {
    let store = ThreadSafeStore::new();
    let obj = cm("a", "1");
    store.add(obj.clone()).unwrap();
    let (seen, _) = run(&store, vec![Delta::Sync(obj)], false);
    assert_eq!(seen, ["update a@1->a@1"]);
}

#[test]
fn observed_delete_is_notified_even_if_the_key_was_not_cached() {
    let store = ThreadSafeStore::new();
    store.add(cm("a", "1")).unwrap();
    let (seen, _) = run(
        &store,
        vec![
            Delta::Deleted(Deleted::Object(cm("a", "2"))),
            Delta::Deleted(Deleted::Object(cm("b", "3"))),
        ],
        false,
    );
    assert_eq!(seen, ["delete a@2", "delete b@3"]);
    assert!(store.is_empty());
}

#[test]
fn final_state_unknown_without_last_known_carries_the_cached_state() {
    let store = ThreadSafeStore::new();
    store.add(cm("a", "1")).unwrap();
    let (seen, _) = run(
        &store,
        vec![Delta::Deleted(Deleted::FinalStateUnknown {
            key: key("a"),
            last_known: None,
        })],
        false,
    );
    assert_eq!(seen, ["gone ns/a last=a@1"]);
}

#[test]
fn replaced_all_notifies_deletes_then_updates_then_adds() {
    let store = ThreadSafeStore::new();
    store.add(cm("old", "1")).unwrap();
    store.add(cm("kept", "1")).unwrap();
    let (seen, r) = run(
        &store,
        vec![Delta::ReplacedAll {
            objects: vec![cm("new", "5"), cm("kept", "5")],
            resource_version: "5".into(),
        }],
        false,
    );
    r.unwrap();
    assert_eq!(
        seen,
        [
            "gone ns/old last=old@1",
            "update kept@1->kept@5",
            "add new@5"
        ]
    );
    assert_eq!(store.resource_version().as_deref(), Some("5"));
    assert_eq!(store.len(), 2);
}

#[test]
fn list_parts_are_cached_at_once_and_the_list_end_deletes_what_the_list_lacks() {
    let store = ThreadSafeStore::new();
    store.add(cm("old", "1")).unwrap();
    store.add(cm("kept", "1")).unwrap();
    let (seen, r) = run(
        &store,
        vec![Delta::ListPart(vec![cm("new", "5"), cm("kept", "5")])],
        true,
    );
    r.unwrap();
    assert_eq!(seen, ["add new@5 initial", "update kept@1->kept@5"]);
    assert_eq!(store.len(), 3, "a part deletes nothing");
    assert_eq!(store.resource_version(), None, "a part is not the list");
    let listed = [key("new"), key("kept")].into_iter().collect();
    let (seen, r) = run(
        &store,
        vec![Delta::ListEnd {
            listed: Arc::new(listed),
            resource_version: "5".into(),
        }],
        false,
    );
    r.unwrap();
    assert_eq!(seen, ["gone ns/old last=old@1"]);
    assert_eq!(store.resource_version().as_deref(), Some("5"));
    assert_eq!(store.len(), 2);
}

#[test]
fn ordered_list_parts_leave_the_store_version_to_the_list_end() {
    let store = ThreadSafeStore::new();
    let part = vec![Delta::ListPart(vec![cm("a", "3")])];
    let set = apply_ordered_deltas(&store, part, vec![None], true, &mut |_| {}).unwrap();
    assert_eq!(set, None);
    let end = vec![Delta::ListEnd {
        listed: Arc::new([key("a")].into_iter().collect()),
        resource_version: "7".into(),
    }];
    let set = apply_ordered_deltas(&store, end, vec![None], true, &mut |_| {}).unwrap();
    assert_eq!(set.as_deref(), Some("7"));
}

#[test]
fn bookmark_records_the_resource_version() {
    let store = ThreadSafeStore::<ConfigMap>::new();
    let (seen, _) = run(
        &store,
        vec![Delta::Bookmark {
            resource_version: "42".into(),
        }],
        false,
    );
    assert!(seen.is_empty());
    assert_eq!(store.resource_version().as_deref(), Some("42"));
}

#[test]
fn keyed_deltas_use_the_given_keys_and_notify_as_unkeyed_ones() {
    let store = ThreadSafeStore::new();
    store.add(cm("gone", "1")).unwrap();
    let deltas = vec![
        Delta::Added(cm("a", "1")),
        Delta::Updated(cm("a", "2")),
        Delta::Deleted(Deleted::Object(cm("gone", "3"))),
        Delta::Added(cm("b", "4")),
    ];
    let keys = vec![Some(key("a")), Some(key("a")), Some(key("gone")), None];
    let mut seen = Vec::new();
    apply_keyed_deltas(&store, deltas, keys, false, &mut |n| seen.push(show(&n))).unwrap();
    assert_eq!(
        seen,
        ["add a@1", "update a@1->a@2", "delete gone@3", "add b@4"]
    );
    assert_eq!(sorted(store.list_keys()), [key("a"), key("b")]);
}

#[test]
fn keyed_deltas_ignore_keys_for_a_store_keyed_otherwise() {
    fn by_rv(cm: &ConfigMap) -> Result<ObjectKey, crate::KeyError> {
        Ok(ObjectKey::cluster(
            cm.metadata.resource_version.as_deref().unwrap_or("none"),
        ))
    }
    let store = ThreadSafeStore::with_key_fn(by_rv);
    let mut seen = Vec::new();
    apply_keyed_deltas(
        &store,
        vec![Delta::Added(cm("a", "7"))],
        vec![Some(key("a"))],
        false,
        &mut |n| seen.push(show(&n)),
    )
    .unwrap();
    assert_eq!(seen, ["add a@7"]);
    assert_eq!(store.list_keys(), [ObjectKey::cluster("7")]);
}

fn sorted(mut keys: Vec<ObjectKey>) -> Vec<ObjectKey> {
    keys.sort();
    keys
}

#[test]
fn a_keyless_object_is_skipped_and_reported_without_losing_the_rest() {
    let store = ThreadSafeStore::new();
    let (seen, r) = run(
        &store,
        vec![Delta::Added(cm("", "1")), Delta::Added(cm("b", "2"))],
        false,
    );
    assert!(matches!(r, Err(StoreError::Key(_))));
    assert_eq!(seen, ["add b@2"]);
    assert_eq!(store.len(), 1);
}

fn ordered(store: &ThreadSafeStore<ConfigMap>, batch: Vec<Delta<ConfigMap>>) -> Option<String> {
    let keys = vec![None; batch.len()];
    apply_ordered_deltas(store, batch, keys, false, &mut |_| {}).unwrap()
}

#[test]
fn store_resource_version_advances_with_every_applied_object_delete_and_bookmark() {
    let store = ThreadSafeStore::<ConfigMap>::new();
    let list = Delta::ReplacedAll {
        objects: vec![cm("a", "3")],
        resource_version: "5".into(),
    };
    assert_eq!(ordered(&store, vec![list]).as_deref(), Some("5"));
    assert_eq!(store.resource_version().as_deref(), Some("5"));
    // An applied object: its version.
    ordered(&store, vec![Delta::Added(cm("b", "6"))]);
    assert_eq!(store.resource_version().as_deref(), Some("6"));
    ordered(&store, vec![Delta::Updated(cm("a", "7"))]);
    assert_eq!(store.resource_version().as_deref(), Some("7"));
    // A delete: the deleted object's (final) version.
    ordered(&store, vec![Delta::Deleted(Deleted::Object(cm("b", "8")))]);
    assert_eq!(store.resource_version().as_deref(), Some("8"));
    // A bookmark.
    ordered(
        &store,
        vec![Delta::Bookmark {
            resource_version: "9".into(),
        }],
    );
    assert_eq!(store.resource_version().as_deref(), Some("9"));
    // A batch: its last version.
    let set = ordered(
        &store,
        vec![
            Delta::Added(cm("c", "10")),
            Delta::Updated(cm("c", "11")),
            Delta::Added(cm("d", "12")),
        ],
    );
    assert_eq!(set.as_deref(), Some("12"));
    assert_eq!(store.resource_version().as_deref(), Some("12"));
}

#[test]
fn store_resource_version_ignores_resyncs_and_relist_tombstones() {
    let store = ThreadSafeStore::<ConfigMap>::new();
    ordered(&store, vec![Delta::Added(cm("a", "10"))]);
    let set = ordered(
        &store,
        vec![
            Delta::Sync(cm("a", "10")),
            Delta::Sync(cm("b", "4")),
            Delta::Deleted(Deleted::FinalStateUnknown {
                key: key("b"),
                last_known: Some(cm("b", "4")),
            }),
        ],
    );
    assert_eq!(set, None);
    assert_eq!(store.resource_version().as_deref(), Some("10"));
    // The last versioned delta counts, even before an unversioned one.
    let set = ordered(
        &store,
        vec![Delta::Updated(cm("a", "11")), Delta::Sync(cm("b", "4"))],
    );
    assert_eq!(set.as_deref(), Some("11"));
}

#[test]
fn store_resource_version_advances_even_when_an_object_is_refused() {
    let store = ThreadSafeStore::<ConfigMap>::new();
    let batch = vec![Delta::Added(cm("a", "3")), Delta::Added(cm("", "4"))];
    let keys = vec![None, None];
    assert!(apply_ordered_deltas(&store, batch, keys, false, &mut |_| {}).is_err());
    assert_eq!(store.resource_version().as_deref(), Some("4"));
    assert_eq!(store.len(), 1);
}

/// Writes, deletes (observed and relist tombstones) and a resync, twice the same key.
fn mixed_deltas() -> Vec<Delta<ConfigMap>> {
    vec![
        Delta::Added(cm("a", "1")),
        Delta::Added(cm("b", "2")),
        Delta::Updated(cm("a", "3")),
        Delta::Deleted(Deleted::Object(cm("c", "4"))),
        Delta::Deleted(Deleted::FinalStateUnknown {
            key: key("b"),
            last_known: None,
        }),
        Delta::Sync(cm("a", "3")),
    ]
}

fn through(store: &dyn Store<ConfigMap>, deltas: Vec<Delta<ConfigMap>>) -> Vec<String> {
    let mut seen = Vec::new();
    apply_deltas(store, deltas, false, &mut |n| seen.push(show(&n))).unwrap();
    seen
}

#[test]
fn a_store_that_prefers_batches_gets_a_run_of_writes_in_one_apply_with_the_same_notifications() {
    let batching = Recording::new();
    let one_by_one = ThreadSafeStore::new();
    let seen = through(&batching, mixed_deltas());
    assert_eq!(seen, through(&one_by_one, mixed_deltas()));
    assert_eq!(
        seen,
        [
            "add a@1",
            "add b@2",
            "update a@1->a@3",
            "delete c@4",
            "gone ns/b last=b@2",
            "update a@3->a@3",
        ]
    );
    assert_eq!(batching.batches(), [6], "one apply for the run");
    assert_eq!(batching.inner.list_keys(), [key("a")]);
}

#[test]
fn a_refused_batch_is_written_one_by_one_with_the_same_notifications() {
    let refusing = Recording::refusing();
    let seen = through(&refusing, mixed_deltas());
    assert_eq!(seen, through(&ThreadSafeStore::new(), mixed_deltas()));
    assert_eq!(refusing.batches(), [6, 1, 1, 1, 1, 1, 1]);
}

#[test]
fn a_keyless_object_ends_a_run_and_is_skipped_and_reported() {
    let batching = Recording::new();
    let mut seen = Vec::new();
    let result = apply_deltas(
        &batching,
        vec![
            Delta::Added(cm("a", "1")),
            Delta::Added(cm("", "2")),
            Delta::Added(cm("b", "3")),
            Delta::Bookmark {
                resource_version: "4".into(),
            },
            Delta::Added(cm("c", "5")),
        ],
        false,
        &mut |n| seen.push(show(&n)),
    );
    assert!(matches!(result, Err(StoreError::Key(_))), "{result:?}");
    assert_eq!(seen, ["add a@1", "add b@3", "add c@5"]);
    // Runs end at the keyless object (written alone, and refused) and at the bookmark.
    assert_eq!(batching.batches(), [1, 1, 1, 1]);
    assert_eq!(batching.inner.resource_version().as_deref(), Some("4"));
}
