//! Registering indexes, reading them, and keeping them current through writes.

use super::*;

// ---------- registering indexes ----------

#[test]
fn add_indexers_indexes_existing_objects() {
    let store = ThreadSafeStore::<Pod>::new();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    store.add(pod(Some("ns"), "b", Some("n2"))).unwrap();
    store.add(labelled("ns", "c", &[("app", "web")])).unwrap();
    store
        .add_indexers(indexers(&[("node", node_of), ("label", label_values)]))
        .unwrap();
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
    assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["b"]);
    assert_eq!(names(&store.by_index("label", "web").unwrap()), ["c"]);
    assert_eq!(
        sorted(store.list_index_values("node").unwrap()),
        ["n1", "n2"]
    );
    check_invariants(&store);
    // Later writes keep the new indexes current.
    store.add(pod(Some("ns"), "d", Some("n1"))).unwrap();
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a", "d"]);
    check_invariants(&store);
}

#[test]
fn index_names_lists_namespace_then_added_names_in_order() {
    let store = ThreadSafeStore::<Pod>::new();
    store
        .add_indexers(indexers(&[("zeta", node_of), ("alpha", node_of)]))
        .unwrap();
    store.add_indexers(indexers(&[("mid", node_of)])).unwrap();
    assert_eq!(store.index_names(), ["namespace", "alpha", "zeta", "mid"]);
}

#[test]
fn index_name_clash_is_an_error_and_adds_nothing() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let err = store
        .add_indexers(indexers(&[("fresh", node_of), ("node", node_of)]))
        .unwrap_err();
    assert_eq!(err, IndexError::Conflict("node".into()));
    let err = store
        .add_indexers(indexers(&[(NAMESPACE_INDEX, node_of)]))
        .unwrap_err();
    assert_eq!(err, IndexError::Conflict(NAMESPACE_INDEX.into()));
    // With several clashes, the smallest name is reported (deterministic).
    let err = store
        .add_indexers(indexers(&[("node", node_of), (NAMESPACE_INDEX, node_of)]))
        .unwrap_err();
    assert_eq!(err, IndexError::Conflict(NAMESPACE_INDEX.into()));
    assert_eq!(store.index_names(), ["namespace", "node"]);
    assert!(matches!(
        store.by_index("fresh", "n1"),
        Err(IndexError::UnknownIndex(_))
    ));
    // The clashing index was not replaced either.
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
    check_invariants(&store);
}

#[test]
fn with_indexers_refuses_a_taken_name() {
    let result =
        ThreadSafeStore::<Pod>::new().with_indexers(indexers(&[(NAMESPACE_INDEX, node_of)]));
    assert_eq!(
        result.unwrap_err(),
        IndexError::Conflict(NAMESPACE_INDEX.into())
    );
}

#[test]
fn add_indexers_with_nothing_is_a_no_op() {
    let store = node_store();
    store.add_indexers(Indexers::new()).unwrap();
    assert_eq!(store.index_names(), ["namespace", "node"]);
}

// ---------- reading indexes ----------

#[test]
fn unknown_index_is_an_error() {
    let store = node_store();
    let p = pod(Some("ns"), "a", Some("n1"));
    store.add(p.clone()).unwrap();
    let unknown = || IndexError::UnknownIndex("nope".into());
    assert_eq!(store.by_index("nope", "n1").unwrap_err(), unknown());
    assert_eq!(store.index_keys("nope", "n1").unwrap_err(), unknown());
    assert_eq!(store.list_index_values("nope").unwrap_err(), unknown());
    assert_eq!(store.index("nope", &p).unwrap_err(), unknown());
}

#[test]
fn unknown_value_of_a_known_index_is_empty() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    assert!(store.by_index("node", "n9").unwrap().is_empty());
    assert!(store.index_keys("node", "n9").unwrap().is_empty());
    assert!(store.by_index(NAMESPACE_INDEX, "other").unwrap().is_empty());
}

#[test]
fn index_keys_match_by_index() {
    let store = node_store();
    for i in 0..20 {
        store
            .add(pod(
                Some(&format!("ns{}", i % 3)),
                &format!("p{i}"),
                Some(&format!("n{}", i % 4)),
            ))
            .unwrap();
    }
    for (index, value, count) in [
        ("node", "n1", 5),
        ("node", "n3", 5),
        (NAMESPACE_INDEX, "ns2", 6),
    ] {
        let objs = store.by_index(index, value).unwrap();
        let from_objs: Vec<ObjectKey> = sorted(
            objs.iter()
                .map(|o| ObjectKey::from_resource(&**o).unwrap())
                .collect(),
        );
        assert_eq!(sorted(store.index_keys(index, value).unwrap()), from_objs);
        assert_eq!(from_objs.len(), count);
    }
}

#[test]
fn list_index_values_lists_each_value_once() {
    let store = node_store();
    for i in 0..10 {
        store
            .add(pod(
                Some("ns"),
                &format!("p{i}"),
                Some(&format!("n{}", i % 3)),
            ))
            .unwrap();
    }
    store.add(pod(Some("ns"), "nodeless", None)).unwrap();
    assert_eq!(
        sorted(store.list_index_values("node").unwrap()),
        ["n0", "n1", "n2"]
    );
}

#[test]
fn multi_valued_index_files_the_object_under_every_value_once() {
    let store = item_store();
    store.add(item("ns", "a", &["red", "blue", "red"])).unwrap();
    store.add(item("ns", "b", &["blue"])).unwrap();
    assert_eq!(store.by_index("tag", "red").unwrap().len(), 1);
    assert_eq!(store.index_keys("tag", "blue").unwrap().len(), 2);
    assert_eq!(
        sorted(store.list_index_values("tag").unwrap()),
        ["blue", "red"]
    );
    check_invariants(&store);
}

#[test]
fn object_with_no_value_is_in_no_set_of_that_index() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", None)).unwrap();
    assert!(store.list_index_values("node").unwrap().is_empty());
    assert_eq!(store.by_index(NAMESPACE_INDEX, "ns").unwrap().len(), 1);
    check_invariants(&store);
}

#[test]
fn index_returns_objects_sharing_any_value_once() {
    let store = item_store();
    store.add(item("ns", "a", &["red", "blue"])).unwrap();
    store.add(item("ns", "b", &["blue"])).unwrap();
    store.add(item("ns", "c", &["green"])).unwrap();
    let probe = item("elsewhere", "probe", &["red", "blue", "blue", "black"]);
    let found = store.index("tag", &probe).unwrap();
    let mut found: Vec<&str> = found.iter().map(|i| i.name).collect();
    found.sort_unstable();
    assert_eq!(found, ["a", "b"]);
    assert_eq!(
        store
            .index("tag", &item("x", "y", &["green"]))
            .unwrap()
            .len(),
        1
    );
    assert!(store.index("tag", &item("x", "y", &[])).unwrap().is_empty());
}

#[test]
fn index_on_the_namespace_index_uses_the_key() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", None)).unwrap();
    store.add(pod(Some("ns"), "b", None)).unwrap();
    store.add(pod(None, "c", None)).unwrap();
    let probe = pod(Some("ns"), "not-stored", None);
    assert_eq!(
        names(&store.index(NAMESPACE_INDEX, &probe).unwrap()),
        ["a", "b"]
    );
    assert_eq!(
        names(&store.index(NAMESPACE_INDEX, &pod(None, "x", None)).unwrap()),
        ["c"]
    );
    // A keyless object has no namespace value.
    let nameless = Arc::new(Pod::default());
    assert!(store.index(NAMESPACE_INDEX, &nameless).unwrap().is_empty());
}

// ---------- keeping indexes current ----------

#[test]
fn update_moves_object_between_index_values() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    store.add(pod(Some("ns"), "b", Some("n1"))).unwrap();
    store.add(pod(Some("ns"), "a", Some("n2"))).unwrap();
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
    assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
    store.add(pod(Some("ns"), "a", None)).unwrap();
    assert!(store.by_index("node", "n2").unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn update_with_unchanged_index_values_serves_the_new_object() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let v2 = pod(Some("ns"), "a", Some("n1"));
    store.add(v2.clone()).unwrap();
    assert!(Arc::ptr_eq(&store.by_index("node", "n1").unwrap()[0], &v2));
    assert!(Arc::ptr_eq(
        &store.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
        &v2
    ));
    assert!(Arc::ptr_eq(&store.index("node", &v2).unwrap()[0], &v2));
    check_invariants(&store);
}

#[test]
fn update_with_unchanged_index_values_does_not_refile() {
    let store = item_store();
    for name in ["a", "b", "c"] {
        store.add(item("ns", name, &["red", "blue"])).unwrap();
    }
    let links_of_a = |store: &ThreadSafeStore<Item>| {
        let inner = store.inner.read();
        let slot = inner
            .slot_of(&key("ns", "a"), store.hash_key(&key("ns", "a")))
            .unwrap();
        inner.entries[slot as usize].as_ref().unwrap().links.clone()
    };
    let before = links_of_a(&store);
    // Same values in another order and with a duplicate: the same set of values.
    store
        .add(item("ns", "a", &["blue", "red", "blue"]))
        .unwrap();
    assert_eq!(
        links_of_a(&store),
        before,
        "same values: same places in the index"
    );
    store.add(item("ns", "a", &["blue", "green"])).unwrap();
    assert_ne!(links_of_a(&store), before);
    check_invariants(&store);
}

#[test]
fn index_fn_is_called_once_per_written_object() {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let store = ThreadSafeStore::<Pod>::new()
        .with_indexers(
            [(
                "node".to_owned(),
                index_fn(|p: &Pod| {
                    CALLS.fetch_add(1, Ordering::SeqCst);
                    node_of(p)
                }),
            )]
            .into(),
        )
        .unwrap();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    store.add(pod(Some("ns"), "a", Some("n2"))).unwrap();
    assert_eq!(CALLS.load(Ordering::SeqCst), 3);
    store.delete(&key("ns", "a"));
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        3,
        "delete calls no index function"
    );
}

#[test]
fn empty_index_value_set_is_removed() {
    let store = node_store();
    store
        .add(pod(Some("ns"), "a", Some("ip-10-0-0-1")))
        .unwrap();
    store
        .add(pod(Some("ns"), "b", Some("ip-10-0-0-2")))
        .unwrap();
    store
        .add(pod(Some("ns"), "a", Some("ip-10-0-0-3")))
        .unwrap();
    assert_eq!(
        sorted(store.list_index_values("node").unwrap()),
        ["ip-10-0-0-2", "ip-10-0-0-3"]
    );
    store.delete(&key("ns", "b"));
    assert_eq!(store.list_index_values("node").unwrap(), ["ip-10-0-0-3"]);
    store.delete(&key("ns", "a"));
    assert!(store.list_index_values("node").unwrap().is_empty());
    assert!(store.list_index_values(NAMESPACE_INDEX).unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn freed_storage_is_reused() {
    let store = node_store();
    store.add(pod(Some("ns"), "stable", Some("n0"))).unwrap();
    for i in 0..1000 {
        let name = format!("short-lived-{i}");
        store
            .add(pod(
                Some(&format!("ns-{i}")),
                &name,
                Some(&format!("ip-{i}")),
            ))
            .unwrap();
        store.delete(&key(&format!("ns-{i}"), &name)).unwrap();
    }
    let inner = store.inner.read();
    assert!(inner.entries.len() <= 2, "slots are reused");
    assert!(inner.by_key.len() == 1);
    for index in &inner.indexes {
        assert!(
            index.sets.len() <= 2,
            "value ids are reused in {}",
            index.name
        );
        assert_eq!(index.lookup.len(), 1);
    }
}

#[test]
fn deleting_members_keeps_the_others_filed() {
    // Exercises the swap-remove fix-up: delete from the front, the middle and the end.
    let store = node_store();
    for i in 0..10 {
        store
            .add(pod(Some("ns"), &format!("p{i}"), Some("n")))
            .unwrap();
    }
    for i in [0, 5, 9, 1] {
        store.delete(&key("ns", &format!("p{i}")));
        check_invariants(&store);
    }
    assert_eq!(
        names(&store.by_index("node", "n").unwrap()),
        ["p2", "p3", "p4", "p6", "p7", "p8"]
    );
}

#[test]
fn internal_layout_stays_consistent_under_random_churn() {
    let store = item_store();
    store
        .add_indexers(
            [(
                "first".to_owned(),
                index_fn(|i: &Item| {
                    i.tags
                        .first()
                        .map(|t| (*t).to_owned())
                        .into_iter()
                        .collect()
                }),
            )]
            .into(),
        )
        .unwrap();
    const NAMES: [&str; 12] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"];
    const NSS: [&str; 3] = ["x", "y", ""];
    const TAGS: [&str; 5] = ["t0", "t1", "t2", "t3", "t4"];
    let mut rng = StdRng::seed_from_u64(7);
    let random_item = |rng: &mut StdRng| {
        let tags: Vec<&'static str> = (0..rng.random_range(0..4))
            .map(|_| TAGS[rng.random_range(0..5)])
            .collect();
        item(
            NSS[rng.random_range(0..3)],
            NAMES[rng.random_range(0..12)],
            &tags,
        )
    };
    for round in 0..400 {
        match rng.random_range(0..10) {
            0..=5 => {
                store.add(random_item(&mut rng)).unwrap();
            }
            6..=7 => {
                let k = key(NSS[rng.random_range(0..3)], NAMES[rng.random_range(0..12)]);
                store.delete(&k);
            }
            8 => {
                let objs = (0..rng.random_range(0..15))
                    .map(|_| random_item(&mut rng))
                    .collect();
                store.replace(objs, &round.to_string()).unwrap();
            }
            _ => {
                let batch = (0..rng.random_range(0..6))
                    .map(|_| {
                        if rng.random_bool(0.7) {
                            StoreOp::Upsert(random_item(&mut rng))
                        } else {
                            StoreOp::Delete(key(
                                NSS[rng.random_range(0..3)],
                                NAMES[rng.random_range(0..12)],
                            ))
                        }
                    })
                    .collect();
                store.apply(batch).unwrap();
            }
        }
        check_invariants(&store);
    }
}
