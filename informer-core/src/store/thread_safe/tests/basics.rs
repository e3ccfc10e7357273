//! The basic store rules, and the built-in namespace index.

use super::*;

// ---------- basic store rules ----------

#[test]
fn add_then_get_returns_the_stored_object() {
    let store = node_store();
    let p = pod(Some("ns"), "a", Some("n1"));
    assert!(store.add(p.clone()).unwrap().is_none());
    assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &p));
    assert!(store.get(&key("ns", "b")).is_none());
    assert!(store.get(&ObjectKey::cluster("a")).is_none());
    assert_eq!(store.len(), 1);
    assert!(!store.is_empty());
    check_invariants(&store);
}

#[test]
fn add_returns_the_replaced_object_and_update_is_add() {
    let store = node_store();
    let v1 = pod(Some("ns"), "a", Some("n1"));
    let v2 = pod(Some("ns"), "a", Some("n1"));
    let v3 = pod(Some("ns"), "a", Some("n1"));
    store.add(v1.clone()).unwrap();
    assert!(Arc::ptr_eq(&store.add(v2.clone()).unwrap().unwrap(), &v1));
    assert!(Arc::ptr_eq(
        &store.update(v3.clone()).unwrap().unwrap(),
        &v2
    ));
    assert_eq!(store.len(), 1);
    assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &v3));
    check_invariants(&store);
}

#[test]
fn update_of_an_absent_key_inserts_it() {
    let store = node_store();
    assert!(store.update(pod(Some("ns"), "a", None)).unwrap().is_none());
    assert_eq!(store.len(), 1);
}

#[test]
fn delete_returns_the_removed_object_and_unindexes_it() {
    let store = node_store();
    let a = pod(Some("ns"), "a", Some("n1"));
    store.add(a.clone()).unwrap();
    store.add(pod(Some("ns"), "b", Some("n1"))).unwrap();
    assert!(Arc::ptr_eq(&store.delete(&key("ns", "a")).unwrap(), &a));
    assert!(store.get(&key("ns", "a")).is_none());
    assert_eq!(names(&store.by_index("node", "n1").unwrap()), ["b"]);
    assert_eq!(
        names(&store.by_index(NAMESPACE_INDEX, "ns").unwrap()),
        ["b"]
    );
    assert_eq!(store.len(), 1);
    check_invariants(&store);
}

#[test]
fn delete_of_an_absent_key_returns_none_and_changes_nothing() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    assert!(store.delete(&key("ns", "zz")).is_none());
    assert!(store.delete(&key("other", "a")).is_none());
    assert_eq!(store.len(), 1);
    check_invariants(&store);
}

#[test]
fn object_without_name_is_refused() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let mut nameless = Pod::default();
    nameless.metadata.namespace = Some("ns".into());
    let nameless = Arc::new(nameless);
    for result in [store.add(nameless.clone()), store.update(nameless.clone())] {
        assert!(matches!(
            result,
            Err(StoreError::Key(KeyError::MissingName { kind: "Pod" }))
        ));
    }
    let mut empty_name = (*nameless).clone();
    empty_name.metadata.name = Some(String::new());
    assert!(store.add(Arc::new(empty_name)).is_err());
    assert_eq!(store.len(), 1);
    assert_eq!(store.list_keys(), [key("ns", "a")]);
    check_invariants(&store);
}

#[test]
fn list_and_list_keys_hold_every_object_once() {
    let store = node_store();
    for i in 0..50 {
        store.add(pod(Some("ns"), &format!("p{i}"), None)).unwrap();
    }
    for i in 0..50 {
        store.add(pod(Some("ns"), &format!("p{i}"), None)).unwrap();
    }
    for i in (0..50).step_by(3) {
        store.delete(&key("ns", &format!("p{i}")));
    }
    let expected: Vec<String> = sorted(
        (0..50)
            .filter(|i| i % 3 != 0)
            .map(|i| format!("p{i}"))
            .collect(),
    );
    assert_eq!(names(&store.list()), expected);
    let keys: Vec<String> = sorted(
        store
            .list_keys()
            .iter()
            .map(|k| k.name().to_owned())
            .collect(),
    );
    assert_eq!(keys, expected);
    assert_eq!(store.len(), expected.len());
    check_invariants(&store);
}

#[test]
fn reads_return_the_same_arc_no_copy() {
    let store = node_store();
    let p = pod(Some("ns"), "a", Some("n1"));
    store.add(p.clone()).unwrap();
    assert!(Arc::ptr_eq(&store.get(&key("ns", "a")).unwrap(), &p));
    assert!(Arc::ptr_eq(&store.list()[0], &p));
    assert!(Arc::ptr_eq(&store.by_index("node", "n1").unwrap()[0], &p));
    assert!(Arc::ptr_eq(
        &store.by_index(NAMESPACE_INDEX, "ns").unwrap()[0],
        &p
    ));
    assert!(Arc::ptr_eq(&store.index("node", &p).unwrap()[0], &p));
    let p2 = pod(Some("ns"), "a", Some("n1"));
    let diff = store.replace(vec![p2.clone()], "1").unwrap();
    assert!(Arc::ptr_eq(&diff.updated[0].0, &p));
    assert!(Arc::ptr_eq(&diff.updated[0].1, &p2));
    drop(diff);
    let prev = store.apply(vec![StoreOp::Delete(key("ns", "a"))]).unwrap();
    assert!(Arc::ptr_eq(prev[0].as_ref().unwrap(), &p2));
    // Nothing else holds the object: the store kept no copy or stray clone.
    assert_eq!(Arc::strong_count(&p2), 2); // `p2` and `prev`
}

#[test]
fn per_object_overhead_is_as_documented() {
    // The type's doc comment states these sizes.
    assert!(mem::size_of::<Option<Entry<Pod>>>() <= 80);
    assert!(mem::size_of::<Member<Pod>>() <= 16);
    assert!(mem::size_of::<ValueSet<Pod>>() <= 48);
}

#[test]
fn key_of_uses_the_key_fn() {
    let store = ThreadSafeStore::with_key_fn(item_key);
    assert_eq!(store.key_of(&item("ns", "x", &[])).unwrap(), key("ns", "x"));
    assert!(store.key_of(&item("ns", "", &[])).is_err());
}

#[test]
fn default_is_new() {
    let store = ThreadSafeStore::<Pod>::default();
    assert!(store.is_empty());
    assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
    assert_eq!(store.resource_version(), None);
}

#[test]
fn debug_shows_size_indexes_and_resource_version() {
    let store = node_store();
    store.add(pod(Some("ns"), "a", None)).unwrap();
    store.set_resource_version("42");
    let text = format!("{store:?}");
    assert_eq!(
        text,
        r#"ThreadSafeStore { len: 1, indexes: ["namespace", "node"], resource_version: Some("42"), .. }"#
    );
}

#[test]
fn store_is_object_safe() {
    let indexer: Arc<dyn Indexer<Pod>> = Arc::new(node_store());
    indexer.add(pod(Some("ns"), "a", Some("n1"))).unwrap();
    let store: Arc<dyn Store<Pod>> = Arc::new(ThreadSafeStore::<Pod>::new());
    store.add(pod(Some("ns"), "a", None)).unwrap();
    assert_eq!(indexer.by_index("node", "n1").unwrap().len(), 1);
    assert_eq!(store.len(), 1);
    fn takes_indexer(_: &dyn Indexer<Pod>) {}
    takes_indexer(&indexer); // Arc<dyn Indexer<K>> is an Indexer<K> too
}

// ---------- the namespace index ----------

#[test]
fn namespace_index_is_built_in_and_cluster_scoped_objects_are_under_empty_string() {
    let store = ThreadSafeStore::<Pod>::new();
    assert_eq!(store.index_names(), [NAMESPACE_INDEX]);
    store.add(pod(Some("a"), "x", None)).unwrap();
    store.add(pod(Some("b"), "y", None)).unwrap();
    store.add(pod(None, "z", None)).unwrap();
    store.add(pod(Some(""), "w", None)).unwrap();
    assert_eq!(names(&store.by_index(NAMESPACE_INDEX, "a").unwrap()), ["x"]);
    assert_eq!(
        names(&store.by_index(NAMESPACE_INDEX, "").unwrap()),
        ["w", "z"]
    );
    assert_eq!(
        sorted(store.list_index_values(NAMESPACE_INDEX).unwrap()),
        ["", "a", "b"]
    );
    check_invariants(&store);
}

#[test]
fn namespace_index_is_computed_from_the_key() {
    // The key function, not the object, decides the namespace.
    fn upper_key(item: &Item) -> Result<ObjectKey, KeyError> {
        Ok(ObjectKey::new(Some(&item.ns.to_uppercase()), item.name))
    }
    let store = ThreadSafeStore::with_key_fn(upper_key);
    store.add(item("shop", "a", &[])).unwrap();
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "SHOP").unwrap(),
        [key("SHOP", "a")]
    );
    assert!(store.by_index(NAMESPACE_INDEX, "shop").unwrap().is_empty());
}
