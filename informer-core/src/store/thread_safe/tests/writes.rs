//! Whole-store writes (`replace`, `apply`) and writes that fail inside an index function.

use super::*;

// ---------- replace ----------

#[test]
fn replace_reports_added_updated_deleted() {
    let store = node_store();
    let a1 = pod(Some("ns"), "a", Some("n1"));
    let b1 = pod(Some("ns"), "b", Some("n1"));
    store.add(a1.clone()).unwrap();
    store.add(b1.clone()).unwrap();
    let a2 = pod(Some("ns"), "a", Some("n2"));
    let c1 = pod(Some("ns"), "c", Some("n1"));
    let diff = store.replace(vec![a2.clone(), c1.clone()], "10").unwrap();
    assert_eq!(diff.added.len(), 1);
    assert!(Arc::ptr_eq(&diff.added[0], &c1));
    assert_eq!(diff.updated.len(), 1);
    assert!(Arc::ptr_eq(&diff.updated[0].0, &a1) && Arc::ptr_eq(&diff.updated[0].1, &a2));
    assert_eq!(diff.deleted.len(), 1);
    assert_eq!(diff.deleted[0].0, key("ns", "b"));
    assert!(Arc::ptr_eq(&diff.deleted[0].1, &b1));
    assert_eq!(names(&store.list()), ["a", "c"]);
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["c"]);
    assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
    check_invariants(&store);
}

#[test]
fn replace_with_nothing_empties_the_store() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let diff = store.replace(Vec::new(), "3").unwrap();
    assert_eq!(diff.deleted.len(), 1);
    assert!(store.is_empty());
    assert!(store.list_index_values("node").unwrap().is_empty());
    check_invariants(&store);
}

#[test]
fn replace_with_duplicate_keys_keeps_the_last() {
    let store = node_store();
    let old = pod(Some("ns"), "u", Some("n0"));
    store.add(old.clone()).unwrap();
    let a1 = pod(Some("ns"), "a", Some("n1"));
    let a2 = pod(Some("ns"), "a", Some("n2"));
    let u1 = pod(Some("ns"), "u", Some("n1"));
    let u2 = pod(Some("ns"), "u", Some("n3"));
    let diff = store
        .replace(vec![a1, u1, a2.clone(), u2.clone()], "5")
        .unwrap();
    assert_eq!(diff.added.len(), 1);
    assert!(Arc::ptr_eq(&diff.added[0], &a2));
    assert_eq!(diff.updated.len(), 1);
    assert!(Arc::ptr_eq(&diff.updated[0].0, &old) && Arc::ptr_eq(&diff.updated[0].1, &u2));
    assert!(diff.deleted.is_empty());
    assert_eq!(store.len(), 2);
    assert_eq!(
        sorted(store.list_index_values("node").unwrap()),
        ["n2", "n3"]
    );
    check_invariants(&store);
}

#[test]
fn replace_refuses_a_keyless_object_and_changes_nothing() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    store.set_resource_version("1");
    let result = store.replace(
        vec![pod(Some("ns"), "b", None), Arc::new(Pod::default())],
        "2",
    );
    assert!(matches!(result, Err(StoreError::Key(_))));
    assert_eq!(store.list_keys(), [key("ns", "a")]);
    assert_eq!(store.resource_version().as_deref(), Some("1"));
    check_invariants(&store);
}

#[test]
fn replace_and_set_resource_version_record_the_resource_version() {
    let store = node_store();
    assert_eq!(store.resource_version(), None);
    store
        .replace(vec![pod(Some("ns"), "a", None)], "7")
        .unwrap();
    assert_eq!(store.resource_version().as_deref(), Some("7"));
    store.set_resource_version("8");
    assert_eq!(store.resource_version().as_deref(), Some("8"));
    store.add(pod(Some("ns"), "b", None)).unwrap();
    assert_eq!(
        store.resource_version().as_deref(),
        Some("8"),
        "add keeps it"
    );
}

// ---------- apply ----------

#[test]
fn apply_runs_ops_in_order_and_returns_previous_objects() {
    let store = node_store();
    let a0 = pod(Some("ns"), "a", Some("n0"));
    store.add(a0.clone()).unwrap();
    let a1 = pod(Some("ns"), "a", Some("n1"));
    let a2 = pod(Some("ns"), "a", Some("n2"));
    let b1 = pod(Some("ns"), "b", Some("n1"));
    let prev = store
        .apply(vec![
            StoreOp::Upsert(a1.clone()),
            StoreOp::Delete(key("ns", "a")),
            StoreOp::Delete(key("ns", "a")),
            StoreOp::Upsert(b1.clone()),
            StoreOp::Upsert(a2.clone()),
        ])
        .unwrap();
    assert_eq!(prev.len(), 5);
    assert!(Arc::ptr_eq(prev[0].as_ref().unwrap(), &a0));
    assert!(Arc::ptr_eq(prev[1].as_ref().unwrap(), &a1));
    assert!(prev[2].is_none() && prev[3].is_none() && prev[4].is_none());
    assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &a2));
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
    assert_eq!(names(&store.by_index("node", "n2").unwrap()), ["a"]);
    check_invariants(&store);
}

#[test]
fn apply_is_all_or_nothing_on_key_error() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let result = store.apply(vec![
        StoreOp::Delete(key("ns", "a")),
        StoreOp::Upsert(pod(Some("ns"), "b", Some("n1"))),
        StoreOp::Upsert(Arc::new(Pod::default())),
    ]);
    assert!(matches!(
        result,
        Err(StoreError::Key(KeyError::MissingName { .. }))
    ));
    assert_eq!(store.list_keys(), [key("ns", "a")]);
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["a"]);
    check_invariants(&store);
}

#[test]
fn apply_of_an_empty_batch_changes_nothing() {
    let store = node_store();
    assert!(store.apply(Vec::new()).unwrap().is_empty());
    assert!(store.is_empty());
}

// ---------- failures inside index functions ----------

#[test]
fn panicking_index_fn_leaves_the_store_unchanged() {
    fn picky(p: &Pod) -> Vec<String> {
        assert!(
            p.metadata.name.as_deref() != Some("boom"),
            "index function panicked"
        );
        node_of(p)
    }
    let store = Arc::new(
        ThreadSafeStore::<Pod>::new()
            .with_indexers(indexers(&[("node", picky)]))
            .unwrap(),
    );
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let boom = pod(Some("ns"), "boom", Some("n1"));
    type Attempt = Box<dyn Fn(&ThreadSafeStore<Pod>)>;
    let attempts: [Attempt; 3] = [
        Box::new({
            let boom = boom.clone();
            move |s| drop(s.add(boom.clone()))
        }),
        Box::new({
            let boom = boom.clone();
            move |s| drop(s.replace(vec![pod(Some("ns"), "c", None), boom.clone()], "9"))
        }),
        Box::new({
            let boom = boom.clone();
            move |s| {
                drop(s.apply(vec![
                    StoreOp::Delete(key("ns", "a")),
                    StoreOp::Upsert(boom.clone()),
                ]))
            }
        }),
    ];
    for attempt in &attempts {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| attempt(&store)));
        assert!(result.is_err());
        assert_eq!(store.list_keys(), [key("ns", "a")]);
        assert_eq!(store.resource_version(), None);
        check_invariants(&store);
    }
    // add_indexers over existing objects.
    let plain = node_store();
    plain.add(boom).unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        plain.add_indexers(indexers(&[("picky", picky)]))
    }));
    assert!(result.is_err());
    assert_eq!(plain.index_names(), ["namespace", "node"]);
    check_invariants(&plain);
    // The stores still work (parking_lot locks are not poisoned).
    store.add(pod(Some("ns"), "d", None)).unwrap();
    assert_eq!(store.len(), 2);
}
