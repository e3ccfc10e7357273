use super::*;
use crate::apiserver::resource::Registry;

fn pods() -> Arc<ResourceType> {
    Registry::builtin().by_path("", "v1", "pods").unwrap()
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name, "labels": {"app": "x"}}, "spec": {"nodeName": "n1"}})
}

#[test]
fn uids_look_like_uuids() {
    let uid = new_uid();
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4");
    assert_ne!(uid, new_uid());
}

#[test]
fn create_sets_server_fields() {
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let created = store.create(&pods(), Some("ns"), pod("a"), false).unwrap();
    assert_eq!(created["kind"], "Pod");
    assert_eq!(created["metadata"]["namespace"], "ns");
    assert_eq!(created["metadata"]["resourceVersion"], "1");
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(created["metadata"]["uid"].is_string());
    assert_eq!(created["status"]["phase"], "Pending");
    let err = store
        .create(&pods(), Some("ns"), pod("a"), false)
        .unwrap_err();
    assert_eq!(err.code(), 409);
    let err = store
        .create(&pods(), Some("ns"), json!({"metadata": {}}), false)
        .unwrap_err();
    assert_eq!(err.code(), 422);
    let generated = store
        .create(
            &pods(),
            Some("ns"),
            json!({"metadata": {"generateName": "w-"}}),
            false,
        )
        .unwrap();
    assert!(
        generated["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("w-")
    );
}

#[test]
fn update_conflicts_and_generation() {
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let rt = pods();
    let created = store.create(&rt, Some("ns"), pod("a"), false).unwrap();
    let mut stale = created.as_ref().clone();
    let mut change = created.as_ref().clone();
    change["metadata"]["labels"]["app"] = json!("y");
    let updated = store
        .update(&rt, Some("ns"), "a", change, Subresource::Main, false)
        .unwrap();
    assert_eq!(
        updated["metadata"]["generation"], 1,
        "labels don't bump generation"
    );
    stale["spec"]["nodeName"] = json!("n2");
    let err = store
        .update(&rt, Some("ns"), "a", stale, Subresource::Main, false)
        .unwrap_err();
    assert_eq!(err.code(), 409);
    let mut spec = updated.as_ref().clone();
    spec["spec"]["activeDeadlineSeconds"] = json!(60);
    spec["status"]["phase"] = json!("Running");
    let updated = store
        .update(&rt, Some("ns"), "a", spec, Subresource::Main, false)
        .unwrap();
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(
        updated["status"]["phase"], "Pending",
        "status is ignored on the main resource"
    );
    let mut status = updated.as_ref().clone();
    status["status"]["phase"] = json!("Running");
    status["spec"]["nodeName"] = json!("ignored");
    let updated = store
        .update(&rt, Some("ns"), "a", status, Subresource::Status, false)
        .unwrap();
    assert_eq!(updated["status"]["phase"], "Running");
    assert_eq!(updated["spec"]["nodeName"], "n1");
    assert_eq!(updated["spec"]["activeDeadlineSeconds"], 60);
    assert_eq!(updated["metadata"]["generation"], 2);
    // No-op updates don't bump the revision.
    let rv = store.revision();
    store
        .update(
            &rt,
            Some("ns"),
            "a",
            updated.as_ref().clone(),
            Subresource::Main,
            false,
        )
        .unwrap();
    assert_eq!(store.revision(), rv);
}

#[test]
fn finalizers_delay_deletion() {
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let rt = pods();
    let mut body = pod("a");
    body["metadata"]["finalizers"] = json!(["example.com/f"]);
    store.create(&rt, Some("ns"), body, false).unwrap();
    let outcome = store
        .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), false)
        .unwrap();
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("expected pending deletion");
    };
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let mut cleared = marked.as_ref().clone();
    cleared["metadata"]["finalizers"] = json!([]);
    store
        .update(&rt, Some("ns"), "a", cleared, Subresource::Main, false)
        .unwrap();
    assert_eq!(store.get(&rt, Some("ns"), "a").unwrap_err().code(), 404);
}

#[test]
fn snapshots_and_pagination() {
    let storage = Storage::new(Limits::with_history(100));
    let rt = pods();
    for name in ["a", "b", "c"] {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(name), false)
            .unwrap();
    }
    let request = |limit, token| ListRequest {
        filter: Filter::all(rt.clone(), None),
        version: ReadVersion::MostRecent,
        limit,
        continue_token: token,
    };
    let first = storage.list(&request(Some(2), None)).unwrap();
    assert_eq!(first.items.len(), 2);
    assert_eq!(first.revision, 3);
    assert_eq!(first.remaining, Some(1));
    storage
        .lock()
        .delete(&rt, Some("ns"), "c", &DeleteOptions::default(), false)
        .unwrap();
    storage
        .lock()
        .create(&rt, Some("ns"), pod("d"), false)
        .unwrap();
    let token = first.continue_token.unwrap();
    let token = ContinueToken::decode(&token.encode()).unwrap();
    let second = storage
        .list(&request(Some(2), Some(token.clone())))
        .unwrap();
    assert_eq!(
        names(&second.items),
        ["c"],
        "the snapshot at revision 3 still has c and not d"
    );
    assert!(second.continue_token.is_none());
    storage.lock().compact();
    let err = storage.list(&request(Some(2), Some(token))).unwrap_err();
    assert_eq!(err.code(), 410);
}

fn names(items: &[Object]) -> Vec<String> {
    items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn list_all(rt: &Arc<ResourceType>, version: ReadVersion) -> ListRequest {
    ListRequest {
        filter: Filter::all(rt.clone(), None),
        version,
        limit: None,
        continue_token: None,
    }
}

#[test]
fn exact_reads() {
    let storage = Storage::new(Limits::with_history(2));
    let rt = pods();
    for name in ["a", "b", "c", "d"] {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(name), false)
            .unwrap();
    }
    let list = |version| storage.list(&list_all(&rt, version));
    assert_eq!(
        names(&list(ReadVersion::Exact(3)).unwrap().items),
        ["a", "b", "c"]
    );
    assert_eq!(list(ReadVersion::Exact(1)).unwrap_err().code(), 410);
    assert_eq!(list(ReadVersion::Exact(9)).unwrap_err().code(), 504);
    assert_eq!(list(ReadVersion::NotOlderThan(9)).unwrap_err().code(), 504);
    assert_eq!(storage.snapshot().compacted_revision(), 2);
}

#[test]
fn reset_makes_every_earlier_version_too_old() {
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let rt = pods();
    store.create(&rt, Some("ns"), pod("a"), false).unwrap();
    let before = store.revision();
    store.reset();
    assert!(store.revision() > before);
    assert_eq!(store.get(&rt, Some("ns"), "a").unwrap_err().code(), 404);
    let filter = Filter::all(rt.clone(), None);
    let err = store
        .watch(filter.clone(), WatchStart::After(before))
        .err()
        .unwrap();
    assert_eq!(err.code(), 410);
    let revision = store.revision();
    assert!(store.watch(filter, WatchStart::After(revision)).is_ok());
}

fn drain(queue: &Queue<WatchMessage>) -> Vec<(EventType, String)> {
    std::iter::from_fn(|| queue.try_pop())
        .map(|m| match m {
            WatchMessage::Event(e, o) => (e, resource_version(&o)),
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

#[test]
fn watch_replays_history_and_filters() {
    let storage = Storage::new(Limits::with_history(100));
    let mut store = storage.lock();
    let rt = pods();
    store.create(&rt, Some("ns"), pod("a"), false).unwrap();
    let mut filter = Filter::all(rt.clone(), Some("ns".into()));
    filter.labels = LabelSelector::parse("app=x").unwrap();
    let watch = store.watch(filter, WatchStart::After(0)).ok().unwrap();
    let mut relabel = store.get(&rt, Some("ns"), "a").unwrap().as_ref().clone();
    relabel["metadata"]["labels"]["app"] = json!("other");
    store
        .update(&rt, Some("ns"), "a", relabel, Subresource::Main, false)
        .unwrap();
    assert_eq!(
        drain(&watch.queue),
        [
            (EventType::Added, "1".to_string()),
            (EventType::Deleted, "2".to_string())
        ]
    );
}

#[test]
fn objects_carry_their_json() {
    let storage = Storage::new(Limits::default());
    let created = storage
        .lock()
        .create(&pods(), Some("ns"), pod("a"), false)
        .unwrap();
    let parsed: Value = serde_json::from_slice(created.json()).unwrap();
    assert_eq!(parsed, *created);
    assert_eq!(created.bytes(), created.json().len());
}

#[test]
fn a_snapshot_is_unaffected_by_later_writes() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    storage
        .lock()
        .create(&rt, Some("ns"), pod("a"), false)
        .unwrap();
    let before = storage.snapshot();
    storage
        .lock()
        .create(&rt, Some("ns"), pod("b"), false)
        .unwrap();
    storage
        .lock()
        .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), false)
        .unwrap();
    assert!(before.get(&rt, Some("ns"), "a").is_ok());
    assert!(before.get(&rt, Some("ns"), "b").is_err());
    assert_eq!(before.revision, 1);
    let now = storage.snapshot();
    assert!(now.get(&rt, Some("ns"), "a").is_err());
    assert!(now.get(&rt, Some("ns"), "b").is_ok());
    // A Pod's delete is two writes: the mark, then the deletion.
    assert_eq!(storage.revision(), 4);
}

#[test]
fn a_namespace_list_reads_only_that_namespace() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    // "a-b" sorts before "a/", "a0" right after the range of "a".
    for ns in ["a", "a-b", "a0", "b"] {
        for name in ["x", "y"] {
            storage
                .lock()
                .create(&rt, Some(ns), pod(name), false)
                .unwrap();
        }
    }
    let request = |limit, continue_token| ListRequest {
        filter: Filter::all(rt.clone(), Some("a".into())),
        version: ReadVersion::MostRecent,
        limit,
        continue_token,
    };
    let all = storage.list(&request(None, None)).unwrap();
    assert_eq!(names(&all.items), ["x", "y"]);
    let first = storage.list(&request(Some(1), None)).unwrap();
    assert_eq!(names(&first.items), ["x"]);
    assert_eq!(first.remaining, Some(1), "counts only namespace a");
    let second = storage
        .list(&request(Some(1), first.continue_token))
        .unwrap();
    assert_eq!(names(&second.items), ["y"]);
    assert_eq!(second.continue_token, None);
    assert_eq!(second.remaining, None);
}

/// As the watch cache (`hasMoreListItems` of the unfiltered items) and etcd3 (`hasMore`: more
/// keys in the range) decide: a full page continues when any object follows it, whether or
/// not the selectors select it; the last page may then be empty.
#[test]
fn a_full_page_with_selectors_continues_when_any_object_follows_it() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    for name in ["a", "b", "c", "d"] {
        let mut body = pod(name);
        if name == "d" {
            body["metadata"]["labels"]["app"] = json!("y");
        }
        storage.lock().create(&rt, Some("ns"), body, false).unwrap();
    }
    let mut filter = Filter::all(rt.clone(), None);
    filter.labels = LabelSelector::parse("app=x").unwrap();
    let request = |limit, continue_token| ListRequest {
        filter: filter.clone(),
        version: ReadVersion::MostRecent,
        limit,
        continue_token,
    };
    let first = storage.list(&request(Some(2), None)).unwrap();
    assert_eq!(names(&first.items), ["a", "b"]);
    assert!(first.continue_token.is_some());
    assert_eq!(first.remaining, None, "no count with selectors");
    let second = storage
        .list(&request(Some(1), first.continue_token))
        .unwrap();
    assert_eq!(names(&second.items), ["c"]);
    assert!(second.continue_token.is_some(), "d follows, unselected");
    assert_eq!(second.remaining, None);
    let third = storage
        .list(&request(Some(1), second.continue_token))
        .unwrap();
    assert!(third.items.is_empty());
    assert_eq!(third.continue_token, None);
}

#[test]
fn history_is_bounded_by_bytes() {
    let limits = Limits {
        history_bytes: 10_000,
        ..Limits::default()
    };
    let storage = Storage::new(limits);
    let rt = pods();
    let mut body = pod("big");
    body["metadata"]["annotations"] = json!({"blob": "x".repeat(2_000)});
    let created = storage.lock().create(&rt, Some("ns"), body, false).unwrap();
    for i in 0..20 {
        let mut change = created.as_ref().clone();
        change["metadata"]["resourceVersion"] = json!(null);
        change["metadata"]["labels"]["i"] = json!(i.to_string());
        storage
            .lock()
            .update(&rt, Some("ns"), "big", change, Subresource::Main, false)
            .unwrap();
    }
    let stats = storage.stats();
    assert!(stats.history_bytes <= 10_000, "{stats:?}");
    assert!(stats.history_changes < 21, "{stats:?}");
    let compacted = storage.snapshot().compacted_revision();
    assert!(compacted > 1);
    let err = storage
        .list(&list_all(&rt, ReadVersion::Exact(compacted - 1)))
        .unwrap_err();
    assert_eq!(err.code(), 410, "compacted by bytes like by count");
}

#[test]
fn a_watch_past_its_backlog_is_closed_and_counted() {
    let limits = Limits {
        watch_backlog: Backlog {
            events: 3,
            bytes: usize::MAX,
        },
        ..Limits::default()
    };
    let storage = Storage::new(limits);
    let rt = pods();
    let filter = Filter::all(rt.clone(), None);
    let slow = storage
        .lock()
        .watch(filter.clone(), WatchStart::After(0))
        .ok()
        .unwrap();
    let fast = storage
        .lock()
        .watch(filter, WatchStart::After(0))
        .ok()
        .unwrap();
    for i in 0..5 {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(&format!("p{i}")), false)
            .unwrap();
        assert!(fast.queue.try_pop().is_some());
    }
    assert_eq!(slow.queue.closed(), Some(Closed::Overflowed));
    assert_eq!(slow.queue.backlog(), (0, 0), "its backlog is freed");
    let stats = storage.stats();
    assert_eq!(stats.watches, 1);
    assert_eq!(stats.slow_watches_closed, 1);
    assert_eq!(fast.queue.closed(), None);
}

#[test]
fn deleting_objects_returns_their_accounted_bytes() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    for i in 0..100 {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(&format!("p{i}")), false)
            .unwrap();
    }
    let full = storage.stats();
    assert_eq!(full.objects, 100);
    assert!(full.object_bytes > 100 * 50);
    for i in 0..100 {
        storage
            .lock()
            .delete(
                &rt,
                Some("ns"),
                &format!("p{i}"),
                &DeleteOptions::default(),
                false,
            )
            .unwrap();
    }
    storage.lock().compact();
    let empty = storage.stats();
    assert_eq!((empty.objects, empty.object_bytes), (0, 0));
    assert_eq!((empty.history_changes, empty.history_bytes), (0, 0));
    assert!(
        storage.snapshot().objects.is_empty(),
        "empty trees are dropped"
    );
}

#[test]
fn initial_events_come_from_the_snapshot_the_watch_started_at() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    for i in 0..(SCAN_BATCH + 10) {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(&format!("p{i:04}")), false)
            .unwrap();
    }
    let mut filter = Filter::all(rt.clone(), Some("ns".into()));
    filter.fields = FieldSelector::parse("metadata.name=p0260").unwrap();
    let start = WatchStart::Now {
        initial_events: true,
        end_bookmark: true,
    };
    let mut watch = storage.lock().watch(filter, start).ok().unwrap();
    storage
        .lock()
        .create(&rt, Some("ns"), pod("late"), false)
        .unwrap();
    let initial = watch.initial.as_mut().unwrap();
    assert!(
        matches!(initial.next(), Initial::Scanning),
        "a batch without a match"
    );
    let Initial::Event(found) = initial.next() else {
        panic!("expected the match");
    };
    assert_eq!(found["metadata"]["name"], "p0260");
    assert!(matches!(
        initial.next(),
        Initial::End { revision, bookmark: true } if revision == (SCAN_BATCH + 10) as u64
    ));
}

#[test]
fn subscriptions_see_every_change_of_every_type_in_order() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    storage
        .lock()
        .create(&rt, Some("ns"), pod("a"), false)
        .unwrap();
    let from_start = storage.subscribe(Some(0)).ok().unwrap();
    let from_now = storage.subscribe(None).ok().unwrap();
    let namespaces = Registry::builtin().by_path("", "v1", "namespaces").unwrap();
    storage
        .lock()
        .create(&namespaces, None, json!({"metadata": {"name": "n"}}), false)
        .unwrap();
    let revisions = |s: &Subscription| {
        std::iter::from_fn(|| s.try_next())
            .map(|c| c.revision)
            .collect::<Vec<_>>()
    };
    assert_eq!(revisions(&from_start), [1, 2]);
    assert_eq!(revisions(&from_now), [2]);
    drop(from_now);
    storage
        .lock()
        .create(&rt, Some("ns"), pod("b"), false)
        .unwrap();
    assert_eq!(
        storage.lock().subscribers.len(),
        1,
        "a dropped subscription is forgotten"
    );
    storage.lock().compact();
    assert_eq!(storage.subscribe(Some(0)).err().unwrap().code(), 410);
}

#[test]
fn dependents_are_found_by_owner_uid() {
    let storage = Storage::new(Limits::default());
    let rt = pods();
    let owner = storage
        .lock()
        .create(&rt, Some("ns"), pod("owner"), false)
        .unwrap();
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    let owned = |name: &str| {
        let mut body = pod(name);
        body["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": uid}]);
        body
    };
    storage
        .lock()
        .create(&rt, Some("ns"), owned("b"), false)
        .unwrap();
    let a = storage
        .lock()
        .create(&rt, Some("ns"), owned("a"), false)
        .unwrap();
    let keys = |refs: Vec<ObjectRef>| {
        refs.into_iter()
            .map(|r| r.key.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(storage.lock().dependents(&uid)), ["ns/a", "ns/b"]);
    let mut orphan = a.as_ref().clone();
    orphan["metadata"]["ownerReferences"] = json!([]);
    storage
        .lock()
        .update(&rt, Some("ns"), "a", orphan, Subresource::Main, false)
        .unwrap();
    assert_eq!(keys(storage.lock().dependents(&uid)), ["ns/b"]);
    storage
        .lock()
        .delete(&rt, Some("ns"), "b", &DeleteOptions::default(), false)
        .unwrap();
    assert!(storage.lock().dependents(&uid).is_empty());
    assert!(
        storage.lock().owners.is_empty(),
        "an owner without dependents is forgotten"
    );
    let (at, found) = storage.lock().object_by_uid(&uid).unwrap();
    assert_eq!(at.resource, rt.key());
    assert_eq!(found["metadata"]["name"], "owner");
}

#[test]
fn a_namespace_s_objects_are_found_across_types() {
    let storage = Storage::new(Limits::default());
    let registry = Registry::builtin();
    let configmaps = registry.by_path("", "v1", "configmaps").unwrap();
    storage
        .lock()
        .create(&pods(), Some("a"), pod("p"), false)
        .unwrap();
    storage
        .lock()
        .create(&pods(), Some("a0"), pod("p"), false)
        .unwrap();
    storage
        .lock()
        .create(
            &configmaps,
            Some("a"),
            json!({"metadata": {"name": "c"}}),
            false,
        )
        .unwrap();
    let found = storage.snapshot().in_namespace("a");
    let mut names: Vec<_> = found
        .iter()
        .map(|(_, o)| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["c", "p"]);
}

#[tokio::test]
async fn a_subscription_waits_for_the_next_change_and_ends_at_a_reset() {
    let storage = Storage::new(Limits::default());
    let subscription = storage.subscribe(None).ok().unwrap();
    let waiter = tokio::spawn(async move {
        let first = subscription.next().await.map(|c| c.revision);
        (first, subscription.next().await.map(|c| c.revision))
    });
    tokio::task::yield_now().await;
    storage
        .lock()
        .create(&pods(), Some("ns"), pod("a"), false)
        .unwrap();
    storage.lock().reset();
    assert_eq!(waiter.await.unwrap(), (Some(1), None));
}

fn configmaps() -> Arc<ResourceType> {
    Registry::builtin().by_path("", "v1", "configmaps").unwrap()
}

/// The changes a subscription has received so far.
fn received(subscription: &Subscription) -> Vec<Arc<Change>> {
    std::iter::from_fn(|| subscription.try_next()).collect()
}

#[test]
fn a_pod_delete_is_graceful_with_period_0_marked_then_deleted() {
    // The Pod strategy's `CheckGracefulDelete` makes every Pod delete graceful (period 0
    // here, even for a scheduled Pod: no kubelet runs), `rest.BeforeDelete` marks it and
    // `updateForGracefulDeletionAndFinalizers` writes the mark before the delete.
    let storage = Storage::new(Limits::with_history(100));
    let rt = pods();
    let created = storage
        .lock()
        .create(&rt, Some("ns"), pod("a"), false)
        .unwrap();
    assert_eq!(created["spec"]["nodeName"], "n1", "scheduled");
    let before = storage.revision();
    let subscription = storage.subscribe(Some(before)).unwrap();
    let outcome = storage
        .lock()
        .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), false)
        .unwrap();
    let DeleteOutcome::Deleted(answer) = outcome else {
        panic!("a Pod without finalizers is deleted: {outcome:?}");
    };
    let changes = received(&subscription);
    let events: Vec<(EventType, u64)> = changes.iter().map(|c| (c.event, c.revision)).collect();
    assert_eq!(
        events,
        [
            (EventType::Modified, before + 1),
            (EventType::Deleted, before + 2)
        ]
    );
    let marked = &changes[0].object;
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 2);
    assert_eq!(
        marked["metadata"]["resourceVersion"],
        (before + 1).to_string()
    );
    // The DELETED event carries the marked Pod at the deletion's revision; so does the answer.
    let deleted = &changes[1].object;
    let mut expected = marked.as_ref().clone();
    expected["metadata"]["resourceVersion"] = json!((before + 2).to_string());
    assert_eq!(deleted.as_ref(), &expected);
    assert_eq!(changes[1].previous.as_deref(), Some(marked.as_ref()));
    assert_eq!(answer.as_ref(), &expected);
    assert_eq!(storage.get(&rt, Some("ns"), "a").unwrap_err().code(), 404);
}

#[test]
fn a_dry_run_pod_delete_writes_nothing_and_answers_the_marked_pod() {
    let storage = Storage::new(Limits::with_history(100));
    let rt = pods();
    let created = storage
        .lock()
        .create(&rt, Some("ns"), pod("a"), false)
        .unwrap();
    let before = storage.revision();
    let subscription = storage.subscribe(Some(before)).unwrap();
    let outcome = storage
        .lock()
        .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), true)
        .unwrap();
    let DeleteOutcome::Deleted(answer) = outcome else {
        panic!("expected a (dry-run) deletion: {outcome:?}");
    };
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(answer["metadata"]["generation"], 2);
    assert_eq!(storage.revision(), before);
    assert!(received(&subscription).is_empty());
    assert_eq!(
        storage.get(&rt, Some("ns"), "a").unwrap().as_ref(),
        created.as_ref()
    );
}

#[test]
fn a_pod_delete_with_finalizers_only_marks_it_once() {
    let storage = Storage::new(Limits::with_history(100));
    let rt = pods();
    let mut body = pod("a");
    body["metadata"]["finalizers"] = json!(["example.com/f"]);
    storage.lock().create(&rt, Some("ns"), body, false).unwrap();
    let before = storage.revision();
    let subscription = storage.subscribe(Some(before)).unwrap();
    let delete = || {
        storage
            .lock()
            .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), false)
            .unwrap()
    };
    let DeleteOutcome::Pending(marked) = delete() else {
        panic!("a Pod with finalizers stays");
    };
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 2);
    // Deleting again changes nothing.
    let DeleteOutcome::Pending(again) = delete() else {
        panic!("a Pod with finalizers stays");
    };
    assert_eq!(again.as_ref(), marked.as_ref());
    let events: Vec<EventType> = received(&subscription).iter().map(|c| c.event).collect();
    assert_eq!(events, [EventType::Modified]);
}

#[test]
fn other_types_without_finalizers_are_deleted_in_one_write() {
    let storage = Storage::new(Limits::with_history(100));
    let rt = configmaps();
    storage
        .lock()
        .create(&rt, Some("ns"), json!({"metadata": {"name": "c"}}), false)
        .unwrap();
    let subscription = storage.subscribe(Some(storage.revision())).unwrap();
    let DeleteOutcome::Deleted(deleted) = storage
        .lock()
        .delete(&rt, Some("ns"), "c", &DeleteOptions::default(), false)
        .unwrap()
    else {
        panic!("deleted");
    };
    assert!(deleted["metadata"].get("deletionTimestamp").is_none());
    let events: Vec<EventType> = received(&subscription).iter().map(|c| c.event).collect();
    assert_eq!(events, [EventType::Deleted]);
}

#[test]
fn an_exact_list_older_than_the_history_is_expired_in_etcds_words() {
    // `CacheDelegator.GetList` falls back to etcd, whose compacted error is
    // `The resourceVersion for the provided list is too old.`; watches keep the watch
    // cache's `too old resource version: X (Y)`.
    let storage = Storage::new(Limits::with_history(2));
    let rt = pods();
    for name in ["a", "b", "c", "d"] {
        storage
            .lock()
            .create(&rt, Some("ns"), pod(name), false)
            .unwrap();
    }
    let err = storage
        .list(&list_all(&rt, ReadVersion::Exact(1)))
        .unwrap_err();
    assert_eq!(err.code(), 410);
    assert_eq!(err.reason(), super::super::StatusReason::Expired);
    assert_eq!(
        err.message(),
        "The resourceVersion for the provided list is too old."
    );
    let Err(err) = storage
        .lock()
        .watch(Filter::all(rt.clone(), None), WatchStart::After(1))
    else {
        panic!("a watch from a compacted version is refused");
    };
    assert_eq!(err.message(), "too old resource version: 1 (3)");
}

#[tokio::test(start_paused = true)]
async fn a_read_waits_for_a_revision_not_reached_yet_up_to_its_timeout() {
    let storage = Arc::new(Storage::new(Limits::with_history(100)));
    let current = storage.revision();
    let waiter = tokio::spawn({
        let storage = storage.clone();
        async move {
            storage
                .wait_for_revision(current + 1, Duration::from_secs(3))
                .await
        }
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    storage
        .lock()
        .create(&pods(), Some("ns"), pod("a"), false)
        .unwrap();
    assert!(waiter.await.unwrap(), "the commit wakes the wait");
    assert!(
        storage
            .wait_for_revision(current + 1, Duration::from_secs(3))
            .await,
        "a revision reached already"
    );
    let start = tokio::time::Instant::now();
    assert!(
        !storage
            .wait_for_revision(current + 100, Duration::from_secs(3))
            .await
    );
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}
