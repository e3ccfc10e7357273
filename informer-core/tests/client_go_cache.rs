//! client-go's own unit tests of `tools/cache` stores and FIFOs, ported onto this library's
//! API to find behaviour that differs from client-go (v0.36).
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case) and
//! says which one in its first comment. Where this library deliberately differs and
//! documents it, the test asserts the documented behaviour and says so.
//!
//! Sources: `store_test.go`, `index_test.go`, `thread_safe_store_test.go`,
//! `delta_fifo_test.go`, `the_real_fifo_test.go`, `object-names_test.go`. client-go's plain
//! `FIFO` and `Heap` (`fifo_test.go`, `heap_test.go`) are ported in `client_go_fifo.rs`; its
//! `ExpirationCache` and `UndeltaStore` (`expiration_cache_test.go`, `undelta_store_test.go`,
//! and `TestUndeltaStore` of `store_test.go`) in `client_go_store_extras.rs`.
//!
//! Not ported (Go-only or no counterpart):
//! - `TestDeltaFIFO_requeueOnPop`, `TestDeltaFIFO_addIfNotPresent`: `ErrRequeue` and
//!   `AddIfNotPresent` no longer exist in client-go v0.36 (nor here).
//! - `TestDeltaFIFO_KeyOf`, `TestRealFIFO_KeyOf`: `KeyOf` of an untyped `interface{}`
//!   (objects, `Deltas`, tombstones); here a tombstone carries its key in
//!   `Deleted::FinalStateUnknown` and keys are typed.
//! - `TestRealFIFO_transformer`, `TestDeltaFIFO_transformer`: this library's FIFOs take no
//!   transform function (the informer transforms objects before they reach the FIFO).
//! - `TestRealFIFO_PopBrokenItemsInBatch`: Go puts items whose key function fails straight
//!   into the FIFO's internal list and checks how `PopBatch` hands them out; here the key
//!   function runs when an item is pushed, and a push whose key fails is refused
//!   (`FifoError::Key`), so no keyless item can be queued.
//! - Benchmarks.

mod client_go {
    pub mod store_test;
}

use client_go::store_test::{StoreObj, do_test_store, store_obj, store_obj_key};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use informer_core::apply::{apply_deltas, apply_ordered_deltas};
use informer_core::store::{Indexer, Store, ThreadSafeStore, index_fn};
use informer_core::{
    Deleted, Delta, DeltaFifo, Fifo, FifoError, KeyError, Notification, ObjectKey, RealFifo,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

// ---------- the test objects ----------

/// client-go's `testFifoObject`: a name (its key) and a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Obj {
    name: String,
    val: i64,
}

/// client-go's `mkFifoObj`.
fn obj(name: &str, val: i64) -> Arc<Obj> {
    Arc::new(Obj {
        name: name.to_owned(),
        val,
    })
}

/// client-go's `testFifoObjectKeyFunc`: the name, cluster scoped.
fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::cluster(&o.name))
}

/// client-go's `literalListerGetter`: the consumer's store holding `objs`.
fn known(objs: &[Arc<Obj>]) -> Arc<dyn Store<Obj>> {
    let store = ThreadSafeStore::with_key_fn(obj_key);
    for o in objs {
        store.add(o.clone()).unwrap();
    }
    Arc::new(store)
}

fn show_obj(o: &Arc<Obj>) -> String {
    format!("{}@{}", o.name, o.val)
}

/// One delta as text: `Added(foo@10)`, `Gone(bar, bar@6)` (a tombstone), `ReplacedAll[..]@rv`.
fn show(delta: &Delta<Obj>) -> String {
    match delta {
        Delta::Added(o) => format!("Added({})", show_obj(o)),
        Delta::Updated(o) => format!("Updated({})", show_obj(o)),
        Delta::Replaced(o) => format!("Replaced({})", show_obj(o)),
        Delta::Sync(o) => format!("Sync({})", show_obj(o)),
        Delta::Deleted(Deleted::Object(o)) => format!("Deleted({})", show_obj(o)),
        Delta::Deleted(Deleted::FinalStateUnknown { key, last_known }) => format!(
            "Gone({key}, {})",
            last_known.as_ref().map_or("-".to_owned(), show_obj)
        ),
        Delta::ReplacedAll {
            objects,
            resource_version,
        } => format!(
            "ReplacedAll[{}]@{resource_version}",
            objects.iter().map(show_obj).collect::<Vec<_>>().join(",")
        ),
        Delta::Bookmark { resource_version } => format!("Bookmark({resource_version})"),
        Delta::ListPart(objects) => format!(
            "ListPart[{}]",
            objects.iter().map(show_obj).collect::<Vec<_>>().join(",")
        ),
        Delta::ListEnd {
            resource_version, ..
        } => format!("ListEnd@{resource_version}"),
    }
}

fn show_all(batch: &[Delta<Obj>]) -> Vec<String> {
    batch.iter().map(show).collect()
}

// Go's expected deltas, as this library's deltas.
fn added(o: &Arc<Obj>) -> Delta<Obj> {
    Delta::Added(o.clone())
}
fn deleted(o: &Arc<Obj>) -> Delta<Obj> {
    Delta::Deleted(Deleted::Object(o.clone()))
}
fn gone(o: &Arc<Obj>) -> Delta<Obj> {
    Delta::Deleted(Deleted::FinalStateUnknown {
        key: ObjectKey::cluster(&o.name),
        last_known: Some(o.clone()),
    })
}
fn replaced(o: &Arc<Obj>) -> Delta<Obj> {
    Delta::Replaced(o.clone())
}

// ---------- popping without waiting ----------

/// Pops one batch if one is ready, without waiting: `None` if `pop` would wait.
fn try_pop(fifo: &dyn Fifo<Obj>) -> Option<Result<Vec<Delta<Obj>>, FifoError>> {
    let mut out = None;
    let result = fifo.pop(&mut |batch| out = Some(batch)).now_or_never()?;
    Some(result.map(|()| out.expect("process is called on success")))
}

/// Pops one ready batch (client-go's `Pop` helper); panics if none is ready.
fn pop_raw(fifo: &dyn Fifo<Obj>) -> Vec<Delta<Obj>> {
    try_pop(fifo)
        .expect("a batch is ready")
        .expect("the FIFO is open")
}

fn pop_now(fifo: &dyn Fifo<Obj>) -> Vec<String> {
    show_all(&pop_raw(fifo))
}

/// client-go's `testPop`: the value of the newest delta's object of one pop.
fn test_pop(fifo: &dyn Fifo<Obj>) -> i64 {
    let batch = pop_raw(fifo);
    newest_val(&batch)
}

fn newest_val(batch: &[Delta<Obj>]) -> i64 {
    match batch.last().expect("a batch is never empty") {
        Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => o.val,
        Delta::Deleted(d) => d.object().expect("an object").val,
        other => panic!("no single object: {}", show(other)),
    }
}

/// Pops until the FIFO is empty.
fn drain_raw(fifo: &dyn Fifo<Obj>) -> Vec<Vec<Delta<Obj>>> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        out.push(pop_raw(fifo));
    }
    out
}

fn drain(fifo: &dyn Fifo<Obj>) -> Vec<Vec<String>> {
    drain_raw(fifo).iter().map(|b| show_all(b)).collect()
}

// ---------- what an informer makes of popped deltas ----------

fn show_note(n: &Notification<Obj>) -> (String, String) {
    match n {
        Notification::Add { object, .. } => {
            (object.name.clone(), format!("Add({})", show_obj(object)))
        }
        Notification::Update { old, new } => (
            new.name.clone(),
            format!("Update({} -> {})", show_obj(old), show_obj(new)),
        ),
        Notification::Delete(Deleted::Object(o)) => {
            (o.name.clone(), format!("Delete({})", show_obj(o)))
        }
        Notification::Delete(Deleted::FinalStateUnknown { key, last_known }) => (
            key.name().to_owned(),
            format!(
                "DeleteGone({})",
                last_known.as_ref().map_or("-".to_owned(), show_obj)
            ),
        ),
    }
}

/// The handler notifications (per key, in order) and the final cache content an informer
/// whose cache starts as `known` derives from `batches` (client-go's `processDeltas`, and
/// for a `ReplacedAll` its atomic replace).
type Effects = (BTreeMap<String, Vec<String>>, Vec<String>);

fn effects(known: &[Arc<Obj>], batches: Vec<Vec<Delta<Obj>>>) -> Effects {
    let store = ThreadSafeStore::with_key_fn(obj_key);
    for o in known {
        store.add(o.clone()).unwrap();
    }
    let mut per_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for batch in batches {
        apply_deltas(&store, batch, false, &mut |n| {
            let (key, text) = show_note(&n);
            per_key.entry(key).or_default().push(text);
        })
        .unwrap();
    }
    let mut content: Vec<String> = store.list().iter().map(show_obj).collect();
    content.sort();
    (per_key, content)
}

/// What client-go's deltas `go` (popped one by one) do to an informer's cache that starts as
/// `known`.
fn go_effects(known: &[Arc<Obj>], go: Vec<Delta<Obj>>) -> Effects {
    effects(known, go.into_iter().map(|d| vec![d]).collect())
}

fn delta_fifo(known_objs: Option<&[Arc<Obj>]>) -> DeltaFifo<Obj> {
    DeltaFifo::with_key_fn(obj_key, known_objs.map(known))
}

fn real_fifo(known_objs: &[Arc<Obj>]) -> RealFifo<Obj> {
    RealFifo::with_key_fn(obj_key, Some(known(known_objs)))
}

/// Two producers push 500 adds each on their own threads; one consumer pops all of them and
/// checks each producer's adds come out in order (client-go's `*_basic` tests).
async fn check_basic(fifo: Arc<dyn Fifo<Obj>>) {
    const AMOUNT: i64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    fifo.add(obj(&format!("{prefix}{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();
    let mut last = BTreeMap::from([('a', 0), ('b', 0)]);
    let mut seen = 0;
    while seen < 2 * AMOUNT {
        let mut batch = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), fifo.pop(&mut |b| batch = b))
            .await
            .expect("the producers push 1000 items")
            .unwrap();
        for delta in &batch {
            let Delta::Added(o) = delta else {
                panic!("unexpected delta {}", show(delta));
            };
            let prefix = o.name.chars().next().unwrap();
            let last = last.get_mut(&prefix).unwrap();
            assert!(o.val > *last, "got {} out of order, last was {last}", o.val);
            *last = o.val;
            seen += 1;
        }
    }
    for p in producers {
        p.join().unwrap();
    }
    assert!(fifo.is_empty());
}

/// Ten pops wait on an empty FIFO; closing it makes every one return `Closed`.
async fn check_pop_unblocks_when_closed(fifo: Arc<dyn Fifo<Obj>>) {
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let fifo = fifo.clone();
            tokio::spawn(async move {
                let mut process = |_: Vec<Delta<Obj>>| {};
                fifo.pop(&mut process).await
            })
        })
        .collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    fifo.close();
    for pop in pops {
        let result = tokio::time::timeout(Duration::from_millis(500), pop)
            .await
            .expect("pop returns after close")
            .unwrap();
        assert_eq!(result, Err(FifoError::Closed));
    }
}

// =====================================================================================
// store_test.go
// =====================================================================================

// Go: TestCache (doTestStore on NewStore)
#[test]
fn store_test_cache() {
    do_test_store(&ThreadSafeStore::with_key_fn(store_obj_key));
}

// Go: TestIndex (doTestIndex on NewIndexer with the "by_val" index)
#[test]
fn store_test_index() {
    let indexer = ThreadSafeStore::with_key_fn(store_obj_key)
        .with_indexers(
            [(
                "by_val".to_owned(),
                index_fn(|o: &StoreObj| vec![o.val.clone()]),
            )]
            .into(),
        )
        .unwrap();
    indexer.add(store_obj("a", "b")).unwrap();
    indexer.add(store_obj("c", "b")).unwrap();
    indexer.add(store_obj("e", "f")).unwrap();
    indexer.add(store_obj("g", "h")).unwrap();

    let expected = [("b", vec!["a", "c"]), ("f", vec!["e"]), ("h", vec!["g"])];
    for (val, ids) in expected {
        // Go indexes by an object with an empty id: `Index` needs no key.
        let found = indexer.index("by_val", &store_obj("", val)).unwrap();
        let mut found: Vec<&str> = found.iter().map(|o| o.id.as_str()).collect();
        found.sort_unstable();
        assert_eq!(found, ids, "index {val}");
    }
}

// =====================================================================================
// index_test.go
// =====================================================================================

fn pod(name: &str, labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some(name.to_owned());
    let map = |kv: &[(&str, &str)]| {
        (!kv.is_empty()).then(|| {
            kv.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        })
    };
    p.metadata.labels = map(labels);
    p.metadata.annotations = map(annotations);
    Arc::new(p)
}

fn pod_names(pods: &[Arc<Pod>]) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// client-go's `testUsersIndexFunc`: the comma-separated `users` annotation.
fn users(p: &Pod) -> Vec<String> {
    let users = p
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("users"))
        .cloned()
        .unwrap_or_default();
    users.split(',').map(str::to_owned).collect()
}

// Go: TestGetIndexFuncValues
#[test]
fn index_test_get_index_func_values() {
    let index = ThreadSafeStore::<Pod>::new()
        .with_indexers(
            [(
                "testmodes".to_owned(),
                index_fn(|p: &Pod| {
                    let foo = p.metadata.labels.as_ref().and_then(|l| l.get("foo"));
                    vec![foo.cloned().unwrap_or_default()]
                }),
            )]
            .into(),
        )
        .unwrap();
    index.add(pod("one", &[("foo", "bar")], &[])).unwrap();
    index.add(pod("two", &[("foo", "bar")], &[])).unwrap();
    index.add(pod("tre", &[("foo", "biz")], &[])).unwrap();

    let mut keys = index.list_index_values("testmodes").unwrap();
    keys.sort();
    assert_eq!(keys, ["bar", "biz"]);
}

// Go: TestMultiIndexKeys
#[test]
fn index_test_multi_index_keys() {
    let index = ThreadSafeStore::<Pod>::new()
        .with_indexers([("byUser".to_owned(), index_fn(users))].into())
        .unwrap();
    let pod1 = pod("one", &[], &[("users", "ernie,bert")]);
    let pod2 = pod("two", &[], &[("users", "bert,oscar")]);
    let pod3 = pod("tre", &[], &[("users", "ernie,elmo")]);
    index.add(pod1.clone()).unwrap();
    index.add(pod2.clone()).unwrap();
    index.add(pod3.clone()).unwrap();

    let expected = [
        ("ernie", vec!["one", "tre"]),
        ("bert", vec!["one", "two"]),
        ("elmo", vec!["tre"]),
        ("oscar", vec!["two"]),
    ];
    for (user, names) in expected {
        assert_eq!(
            pod_names(&index.by_index("byUser", user).unwrap()),
            names,
            "index {user}"
        );
    }
    // (An older version of the Go test) `Index` of pod1: ernie or bert, each pod once.
    assert_eq!(
        pod_names(&index.index("byUser", &pod1).unwrap()),
        ["one", "tre", "two"]
    );

    index.delete(&ObjectKey::from_resource(&*pod3).unwrap());
    assert_eq!(
        pod_names(&index.by_index("byUser", "ernie").unwrap()),
        ["one"]
    );
    assert!(index.by_index("byUser", "elmo").unwrap().is_empty());

    let mut copy_of_pod2 = (*pod2).clone();
    copy_of_pod2
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("users".into(), "oscar".into());
    index.update(Arc::new(copy_of_pod2)).unwrap();
    assert_eq!(
        pod_names(&index.by_index("byUser", "bert").unwrap()),
        ["one"]
    );
}

// =====================================================================================
// thread_safe_store_test.go
// =====================================================================================

/// An object stored under `key` with value `val` (Go's `store.Add(key, val)`).
#[derive(Debug)]
struct Kv {
    key: String,
    val: String,
}

fn kv(key: &str, val: &str) -> Arc<Kv> {
    Arc::new(Kv {
        key: key.to_owned(),
        val: val.to_owned(),
    })
}

fn kv_key(o: &Kv) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::cluster(&o.key))
}

fn kv_store(f: fn(&Kv) -> Vec<String>) -> ThreadSafeStore<Kv> {
    ThreadSafeStore::with_key_fn(kv_key)
        .with_indexers([("testIndexer".to_owned(), index_fn(f))].into())
        .unwrap()
}

/// The keys filed under `value` in `testIndexer`, sorted (Go's `indices[..][value].List()`).
fn filed(store: &ThreadSafeStore<Kv>, value: &str) -> Vec<String> {
    let mut keys: Vec<String> = store
        .index_keys("testIndexer", value)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    keys.sort();
    keys
}

// Go: TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex
#[test]
fn thread_safe_store_test_thread_safe_store_delete_removes_empty_sets_from_index() {
    let store = kv_store(|o| vec![o.val.clone()]);
    store.add(kv("testKey", "testKey")).unwrap();
    assert_eq!(filed(&store, "testKey"), ["testKey"]);

    store.delete(&ObjectKey::cluster("testKey"));
    // The empty set is gone: the value is no longer listed.
    assert!(filed(&store, "testKey").is_empty());
    assert!(store.list_index_values("testIndexer").unwrap().is_empty());
}

// Go: TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex
#[test]
fn thread_safe_store_test_thread_safe_store_add_keeps_non_empty_set_post_delete_from_index() {
    let store = kv_store(|_| vec!["testIndex".to_owned()]);
    store.add(kv("retain", "retain")).unwrap();
    store.add(kv("delete", "delete")).unwrap();
    assert_eq!(filed(&store, "testIndex"), ["delete", "retain"]);

    store.delete(&ObjectKey::cluster("delete"));
    assert_eq!(
        store.list_index_values("testIndexer").unwrap(),
        ["testIndex"]
    );
    assert_eq!(filed(&store, "testIndex"), ["retain"]);
}

// Go: TestThreadSafeStoreIndexingFunctionsWithMultipleValues
#[test]
fn thread_safe_store_test_thread_safe_store_indexing_functions_with_multiple_values() {
    let store = kv_store(|o| o.val.split(',').map(str::to_owned).collect());
    let check = |foo: &[&str], bar: &[&str], baz: &[&str]| {
        assert_eq!(filed(&store, "foo"), foo, "foo");
        assert_eq!(filed(&store, "bar"), bar, "bar");
        assert_eq!(filed(&store, "baz"), baz, "baz");
    };

    store.add(kv("key1", "foo")).unwrap();
    store.add(kv("key2", "bar")).unwrap();
    check(&["key1"], &["key2"], &[]);

    store.update(kv("key2", "foo,bar")).unwrap();
    check(&["key1", "key2"], &["key2"], &[]);

    store.update(kv("key1", "foo,bar")).unwrap();
    check(&["key1", "key2"], &["key1", "key2"], &[]);

    store.add(kv("key3", "foo,bar,baz")).unwrap();
    check(
        &["key1", "key2", "key3"],
        &["key1", "key2", "key3"],
        &["key3"],
    );

    store.update(kv("key1", "foo")).unwrap();
    check(&["key1", "key2", "key3"], &["key2", "key3"], &["key3"]);

    store.update(kv("key2", "bar")).unwrap();
    check(&["key1", "key3"], &["key2", "key3"], &["key3"]);

    store.delete(&ObjectKey::cluster("key1"));
    check(&["key3"], &["key2", "key3"], &["key3"]);

    store.delete(&ObjectKey::cluster("key3"));
    check(&[], &["key2"], &[]);
}

/// A ConfigMap named `name` at resource version `rv`: an object with metadata, as Go's
/// `&metav1.ObjectMeta{ResourceVersion: rv}` (filed under `key`).
fn config_map(name: &str, rv: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.resource_version = Some(rv.to_owned());
    Arc::new(cm)
}

/// Applies one batch in order, as the informer applies a `RealFifo`'s batch: the store's
/// resource version advances to the batch's last (client-go's `threadSafeMap` sets it on
/// every write with an object).
fn apply_in_order(store: &ThreadSafeStore<ConfigMap>, batch: Vec<Delta<ConfigMap>>) {
    let keys = vec![None; batch.len()];
    apply_ordered_deltas(store, batch, keys, false, &mut |_| {}).unwrap();
}

// Go: TestThreadSafeStoreRV. Documented difference (`Store::resource_version`): Go's
// `threadSafeMap` records the version of every object it is given, so a resync or one page
// of a list moves it too; here the store records what the informer's step tells it
// (`apply::apply_ordered_deltas`, the equivalent of Go's `Add`/`Update`/`DeleteWithObject`
// and `Transaction` as the informer calls them), and `replace` takes the list's version.
// Go's "add a non-meta object" step has no counterpart: every object here has metadata.
#[test]
fn thread_safe_store_test_thread_safe_store_rv() {
    // "Initial state": Go's "" is `None`.
    let store = ThreadSafeStore::<ConfigMap>::new();
    assert_eq!(store.resource_version(), None);

    // "Add Update and Delete"
    let store = ThreadSafeStore::<ConfigMap>::new();
    let rv = |store: &ThreadSafeStore<ConfigMap>| store.resource_version().unwrap_or_default();
    apply_in_order(&store, vec![Delta::Added(config_map("key1", "10"))]);
    assert_eq!(rv(&store), "10");
    // An object with the same version.
    apply_in_order(&store, vec![Delta::Added(config_map("key3", "10"))]);
    assert_eq!(
        rv(&store),
        "10",
        "expected RV to remain 10 after adding same RV"
    );
    apply_in_order(&store, vec![Delta::Updated(config_map("key4", "20"))]);
    assert_eq!(rv(&store), "20");
    // Delete an earlier object with a newer version.
    apply_in_order(
        &store,
        vec![Delta::Deleted(Deleted::Object(config_map("key4", "30")))],
    );
    assert_eq!(rv(&store), "30", "expected RV to become 30 after deletion");
    apply_in_order(&store, vec![Delta::Added(config_map("key6", "40"))]);
    assert_eq!(rv(&store), "40");
    // A delete without an object (Go's `Delete(key)`) leaves the version.
    store.delete(&ObjectKey::cluster("key6"));
    assert_eq!(rv(&store), "40", "expected RV to remain 40 after delete");
    // Go's `Transaction`: the version of its last object.
    apply_in_order(
        &store,
        vec![
            Delta::Updated(config_map("key9", "40")),
            Delta::Updated(config_map("key10", "30")),
            Delta::Updated(config_map("key11", "50")),
        ],
    );
    assert_eq!(rv(&store), "50", "expected RV to be 50 after transaction");

    // "Replace"
    let store = ThreadSafeStore::<ConfigMap>::new();
    apply_in_order(&store, vec![Delta::Added(config_map("key1", "10"))]);
    assert_eq!(rv(&store), "10", "setup failed");
    store
        .replace(
            vec![config_map("key3", "40"), config_map("key2", "30")],
            "50",
        )
        .unwrap();
    assert_eq!(rv(&store), "50", "expected RV to be 50 after Replace()");

    // "Delete"
    let store = ThreadSafeStore::<ConfigMap>::new();
    apply_in_order(&store, vec![Delta::Added(config_map("key1", "10"))]);
    assert_eq!(rv(&store), "10", "setup failed");
    apply_in_order(
        &store,
        vec![Delta::Deleted(Deleted::Object(config_map("key1", "20")))],
    );
    assert_eq!(rv(&store), "20", "expected RV to be 20 after Delete()");
}

// =====================================================================================
// delta_fifo_test.go
// =====================================================================================

// Go: TestDeltaFIFO_basic
#[tokio::test]
async fn delta_fifo_test_basic() {
    check_basic(Arc::new(delta_fifo(None))).await;
}

// Go: TestDeltaFIFO_replaceWithDeleteDeltaIn
#[test]
fn delta_fifo_test_replace_with_delete_delta_in() {
    let old = obj("foo", 1);
    let new = obj("foo", 2);
    let f = delta_fifo(Some(std::slice::from_ref(&old)));
    f.delete(old).unwrap();
    f.replace(vec![new], String::new()).unwrap();
    // Documented difference: a relist always queues `Replaced` (client-go's
    // `EmitDeltaTypeReplaced: true`, what its informers use); Go's test expects `Sync`.
    assert_eq!(pop_now(&f), ["Deleted(foo@1)", "Replaced(foo@2)"]);
}

// Go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
#[test]
fn delta_fifo_test_replace_makes_deletions_for_objects_only_in_queue() {
    let o = obj("foo", 2);
    let v2 = obj("foo", 3);
    type Ops = Box<dyn Fn(&DeltaFifo<Obj>)>;
    let rep = |f: &DeltaFifo<Obj>, objs: &[&Arc<Obj>], rv: &str| {
        f.replace(objs.iter().map(|o| (*o).clone()).collect(), rv.into())
            .unwrap();
    };
    let cases: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "Added object should be deleted on Replace",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec!["Added(foo@2)", "Gone(foo, foo@2)"],
        ),
        (
            "Replaced object should have only a single Delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[&o], "0");
                    rep(f, &[], "0");
                }
            }),
            vec!["Added(foo@2)", "Replaced(foo@2)", "Gone(foo, foo@2)"],
        ),
        (
            "Deleted object should have only a single Delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec!["Added(foo@2)", "Deleted(foo@2)"],
        ),
        (
            // Documented difference: `Replaced` where Go (without EmitDeltaTypeReplaced)
            // expects `Sync`.
            "Synced objects should have a single delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[&o], "0");
                    rep(f, &[&o], "0");
                    rep(f, &[], "0");
                }
            }),
            vec![
                "Added(foo@2)",
                "Replaced(foo@2)",
                "Replaced(foo@2)",
                "Gone(foo, foo@2)",
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[], "0");
                    rep(f, &[], "1");
                }
            }),
            vec!["Added(foo@2)", "Gone(foo, foo@2)"],
        ),
        (
            "Added and deleted and added object should be deleted",
            Box::new({
                let o = o.clone();
                let v2 = v2.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    f.add(v2.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec![
                "Added(foo@2)",
                "Deleted(foo@2)",
                "Added(foo@3)",
                "Gone(foo, foo@3)",
            ],
        ),
    ];
    for (name, ops, want) in cases {
        // With a (empty) known-objects store, then without one.
        for f in [delta_fifo(Some(&[])), delta_fifo(None)] {
            ops(&f);
            assert_eq!(pop_now(&f), want, "{name}");
            assert!(f.is_empty(), "{name}: no extra deltas");
        }
    }
}

// Go: TestDeltaFIFO_addUpdate
#[test]
fn delta_fifo_test_add_update() {
    let f = delta_fifo(None);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    // Go: `List()` is the newest object of the one key, `ListKeys()` is ["foo"].
    assert_eq!(f.len(), 1);

    assert_eq!(test_pop(&f), 15);
    assert!(try_pop(&f).is_none(), "a second value");
    assert!(f.is_empty(), "item did not get removed");
}

// Go: TestDeltaFIFO_enqueueingNoLister
#[test]
fn delta_fifo_test_enqueueing_no_lister() {
    let f = delta_fifo(None);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.add(obj("qux", 17)).unwrap();
    f.delete(obj("qux", 18)).unwrap();
    // This delete does not enqueue anything because baz doesn't exist.
    f.delete(obj("baz", 20)).unwrap();

    for want in [10, 15, 18] {
        assert_eq!(test_pop(&f), want);
    }
    assert!(f.is_empty());
}

// Go: TestDeltaFIFO_enqueueingWithLister
#[test]
fn delta_fifo_test_enqueueing_with_lister() {
    let f = delta_fifo(Some(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    // This delete does enqueue the deletion, because "baz" is in the known objects.
    f.delete(obj("baz", 20)).unwrap();

    for want in [10, 15, 20] {
        assert_eq!(test_pop(&f), want);
    }
    assert!(f.is_empty());
}

// Go: TestDeltaFIFO_addReplace
#[test]
fn delta_fifo_test_add_replace() {
    let f = delta_fifo(None);
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "0".into()).unwrap();

    assert_eq!(test_pop(&f), 15);
    assert!(try_pop(&f).is_none(), "a second value");
    assert!(f.is_empty(), "item did not get removed");
}

// Go: TestDeltaFIFO_ResyncNonExisting
#[test]
fn delta_fifo_test_resync_non_existing() {
    let f = delta_fifo(Some(&[obj("foo", 5)]));
    f.delete(obj("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop_now(&f), ["Deleted(foo@10)"]);
}

// Go: TestDeltaFIFO_Resync
#[test]
fn delta_fifo_test_resync() {
    let f = delta_fifo(Some(&[obj("foo", 5)]));
    f.resync().unwrap();
    assert_eq!(pop_now(&f), ["Sync(foo@5)"]);
}

// Go: TestDeltaFIFO_DeleteExistingNonPropagated
#[test]
fn delta_fifo_test_delete_existing_non_propagated() {
    let f = delta_fifo(Some(&[]));
    f.add(obj("foo", 5)).unwrap();
    f.delete(obj("foo", 6)).unwrap();
    assert_eq!(pop_now(&f), ["Added(foo@5)", "Deleted(foo@6)"]);
}

// Go: TestDeltaFIFO_ReplaceMakesDeletions
#[test]
fn delta_fifo_test_replace_makes_deletions() {
    // Documented difference throughout: `Replaced` where Go (without
    // EmitDeltaTypeReplaced) expects `Sync`.
    let three = [obj("foo", 5), obj("bar", 6), obj("baz", 7)];

    // A pre-existing delete.
    let f = delta_fifo(Some(&three));
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Deleted(baz@10)"],
            vec!["Replaced(foo@5)"],
            // "bar" had no delete event and is not in the list: a tombstone with the right
            // object.
            vec!["Gone(bar, bar@6)"],
        ]
    );

    // An add instead of a delete.
    let f = delta_fifo(Some(&three));
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(baz@10)", "Gone(baz, baz@10)"],
            vec!["Replaced(foo@5)"],
            vec!["Gone(bar, bar@6)"],
        ]
    );

    // Deleting and recreating the object in the queue, then deleting it by a replace.
    let f = delta_fifo(Some(&three));
    f.delete(obj("bar", 6)).unwrap();
    f.add(obj("bar", 100)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            // "bar" has a newer object in the queue than in the store: the tombstone
            // carries the newest queued one.
            vec!["Deleted(bar@6)", "Added(bar@100)", "Gone(bar, bar@100)"],
            vec!["Replaced(foo@5)"],
            vec!["Gone(baz, baz@7)"],
        ]
    );

    // Syncing first, so that the delete uses the latest version.
    let f = delta_fifo(Some(&three));
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into())
        .unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Replaced(bar@100)", "Gone(bar, bar@100)"],
            vec!["Replaced(foo@5)", "Replaced(foo@5)"],
            vec!["Gone(baz, baz@7)"],
        ]
    );

    // Without a known-objects store.
    let f = delta_fifo(None);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(baz@10)", "Gone(baz, baz@10)"],
            vec!["Replaced(foo@5)"],
        ]
    );
}

// Go: TestDeltaFIFO_ReplaceMakesDeletionsReplaced
#[test]
fn delta_fifo_test_replace_makes_deletions_replaced() {
    let f = delta_fifo(Some(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 6)], "0".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Deleted(baz@10)"],
            vec!["Replaced(foo@6)"],
            vec!["Gone(bar, bar@6)"],
        ]
    );
}

// Go: TestDeltaFIFO_ReplaceDeltaType
#[test]
fn delta_fifo_test_replace_delta_type() {
    let f = delta_fifo(Some(&[obj("foo", 5)]));
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    assert_eq!(drain(&f), [vec!["Replaced(foo@5)"]]);
}

// Go: TestDeltaFIFO_UpdateResyncRace
#[test]
fn delta_fifo_test_update_resync_race() {
    let f = delta_fifo(Some(&[obj("foo", 5)]));
    f.update(obj("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Updated(foo@6)"]]);
}

// Go: TestDeltaFIFO_HasSyncedCorrectOnDeletion
#[test]
fn delta_fifo_test_has_synced_correct_on_deletion() {
    let f = delta_fifo(Some(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]));
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();

    let mut popped = Vec::new();
    while !f.is_empty() {
        assert!(
            !f.has_synced(),
            "HasSynced before the initial list is popped"
        );
        popped.push(pop_now(&f));
    }
    assert!(f.has_synced());
    // Go's order of the two tombstones is its known-objects lister's order; this store lists
    // keys in no particular order, so compare the tombstones as a set.
    assert_eq!(popped[0], ["Replaced(foo@5)"]);
    let mut tombstones: Vec<_> = popped[1..].to_vec();
    tombstones.sort();
    assert_eq!(
        tombstones,
        [vec!["Gone(bar, bar@6)"], vec!["Gone(baz, baz@7)"]]
    );
}

// Go: TestDeltaFIFO_detectLineJumpers
#[test]
fn delta_fifo_test_detect_line_jumpers() {
    let f = delta_fifo(None);
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();

    assert_eq!(test_pop(&f), 13);
    f.add(obj("foo", 14)).unwrap(); // foo must not jump back in line
    assert_eq!(test_pop(&f), 1);
    assert_eq!(test_pop(&f), 30);
    assert_eq!(test_pop(&f), 14);
}

/// One `HasSynced` case: the actions, then the expected answer.
fn has_synced_cases<F: Fifo<Obj>>(new: impl Fn() -> F, cases: Vec<(Vec<&str>, bool)>) {
    for (i, (actions, want)) in cases.into_iter().enumerate() {
        let f = new();
        for action in &actions {
            match *action {
                "add a" => f.add(obj("a", 1)).unwrap(),
                "replace []" => f.replace(vec![], "0".into()).unwrap(),
                "replace [a b]" => f
                    .replace(vec![obj("a", 1), obj("b", 2)], "0".into())
                    .unwrap(),
                "replace [a a]" => f
                    .replace(vec![obj("a", 1), obj("a", 2)], "0".into())
                    .unwrap(),
                "pop" => {
                    pop_raw(&f);
                }
                other => unreachable!("{other}"),
            }
        }
        assert_eq!(f.has_synced(), want, "case {i}: {actions:?}");
    }
}

// Go: TestDeltaFIFO_HasSynced
#[test]
fn delta_fifo_test_has_synced() {
    has_synced_cases(
        || delta_fifo(None),
        vec![
            (vec![], false),
            (vec!["add a"], true),
            (vec!["replace []"], true),
            (vec!["replace [a b]"], false),
            (vec!["replace [a b]", "pop"], false),
            (vec!["replace [a b]", "pop", "pop"], true),
            // Duplicate keys in a list: one key, one pop.
            (vec!["replace [a a]", "pop"], true),
        ],
    );
}

// Go: TestDeltaFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn delta_fifo_test_pop_should_unblock_when_closed() {
    check_pop_unblocks_when_closed(Arc::new(delta_fifo(Some(&[obj("foo", 5)])))).await;
}

// =====================================================================================
// the_real_fifo_test.go
//
// Documented difference for every test with a `Replace`: this library's `RealFifo` is
// client-go's `RealFIFO` with `AtomicEvents` (what client-go's informers use when the
// AtomicFIFO gate is on): a relist is one `ReplacedAll` item, without tombstones; the
// consumer derives deletes from the difference. Go's tests (written for the non-atomic
// mode) expect per-object `Replaced` items and `DeletedFinalStateUnknown` tombstones. So
// these ports assert the documented items, and then that an informer applying them makes
// the same handler notifications (per key, in order) and the same cache as one applying
// Go's expected items.
// =====================================================================================

// Go: TestRealFIFO_basic
#[tokio::test]
async fn the_real_fifo_test_basic() {
    check_basic(Arc::new(real_fifo(&[]))).await;
}

// Go: TestRealFIFO_replaceWithDeleteDeltaIn
#[test]
fn the_real_fifo_test_replace_with_delete_delta_in() {
    let old = obj("foo", 1);
    let new = obj("foo", 2);
    let known_objs = [old.clone()];
    let f = real_fifo(&known_objs);
    f.delete(old.clone()).unwrap();
    f.replace(vec![new.clone()], String::new()).unwrap();
    let got = drain_raw(&f);
    assert_eq!(
        got.iter().map(|b| show_all(b)).collect::<Vec<_>>(),
        [vec!["Deleted(foo@1)"], vec!["ReplacedAll[foo@2]@"]]
    );
    assert_eq!(
        effects(&known_objs, got),
        go_effects(&known_objs, vec![deleted(&old), replaced(&new)])
    );
}

// Go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
#[test]
fn the_real_fifo_test_replace_makes_deletions_for_objects_only_in_queue() {
    let o = obj("foo", 2);
    let v2 = obj("foo", 3);
    type Ops = Box<dyn Fn(&RealFifo<Obj>)>;
    let rep = |f: &RealFifo<Obj>, objs: &[&Arc<Obj>], rv: &str| {
        f.replace(objs.iter().map(|o| (*o).clone()).collect(), rv.into())
            .unwrap();
    };
    // (name, operations, the library's batches, Go's expected items)
    type Case = (&'static str, Ops, Vec<Vec<&'static str>>, Vec<Delta<Obj>>);
    let cases: Vec<Case> = vec![
        (
            "Added object should be deleted on Replace",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec![vec!["Added(foo@2)"], vec!["ReplacedAll[]@0"]],
            vec![added(&o), gone(&o)],
        ),
        // (Go comments out "Replaced object should have only a single Delete".)
        (
            "Deleted object should have only a single Delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec![
                vec!["Added(foo@2)"],
                vec!["Deleted(foo@2)"],
                vec!["ReplacedAll[]@0"],
            ],
            vec![added(&o), deleted(&o)],
        ),
        (
            "Synced objects should have a single delete",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[&o], "0");
                    rep(f, &[&o], "0");
                    rep(f, &[], "0");
                }
            }),
            vec![
                vec!["Added(foo@2)"],
                vec!["ReplacedAll[foo@2]@0"],
                vec!["ReplacedAll[foo@2]@0"],
                vec!["ReplacedAll[]@0"],
            ],
            vec![added(&o), replaced(&o), replaced(&o), gone(&o)],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    rep(f, &[], "0");
                    rep(f, &[], "1");
                }
            }),
            vec![
                vec!["Added(foo@2)"],
                vec!["ReplacedAll[]@0"],
                vec!["ReplacedAll[]@1"],
            ],
            vec![added(&o), gone(&o)],
        ),
        (
            "Added and deleted and added object should be deleted",
            Box::new({
                let o = o.clone();
                let v2 = v2.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.delete(o.clone()).unwrap();
                    f.add(v2.clone()).unwrap();
                    rep(f, &[], "0");
                }
            }),
            vec![
                vec!["Added(foo@2)"],
                vec!["Deleted(foo@2)"],
                vec!["Added(foo@3)"],
                vec!["ReplacedAll[]@0"],
            ],
            vec![added(&o), deleted(&o), added(&v2), gone(&v2)],
        ),
        // Documented difference (`RealFifo`: "Bookmarks queue a `Delta::Bookmark` item";
        // it has no mode without them): Go's non-atomic `RealFIFO` drops the bookmark.
        // Applied, the bookmark changes nothing a handler or the cache sees, as Go's.
        (
            "Bookmark object should not be added without atomic",
            Box::new(move |f| {
                f.bookmark("123".into()).unwrap();
                rep(f, &[], "0");
                rep(f, &[], "1");
            }),
            vec![
                vec!["Bookmark(123)"],
                vec!["ReplacedAll[]@0"],
                vec!["ReplacedAll[]@1"],
            ],
            vec![],
        ),
    ];
    for (name, ops, want, go) in cases {
        let f = real_fifo(&[]);
        ops(&f);
        let got = drain_raw(&f);
        assert_eq!(
            got.iter().map(|b| show_all(b)).collect::<Vec<_>>(),
            want,
            "{name}"
        );
        assert!(f.is_empty(), "{name}: no extra deltas");
        assert_eq!(effects(&[], got), go_effects(&[], go), "{name}");
    }
}

// Go: TestRealFIFO_addUpdate
#[tokio::test]
async fn the_real_fifo_test_add_update() {
    let f = real_fifo(&[]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    // Every item is kept; items of one key pop in separate batches.
    assert_eq!(f.len(), 3);
    assert_eq!(
        drain(&f),
        [
            vec!["Added(foo@10)"],
            vec!["Updated(foo@12)"],
            vec!["Deleted(foo@15)"]
        ]
    );
    assert!(try_pop(&f).is_none(), "a fourth value");
    f.close();
    assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
}

// Go: TestRealFIFO_enqueueingNoLister
#[test]
fn the_real_fifo_test_enqueueing_no_lister() {
    let f = real_fifo(&[]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.add(obj("qux", 17)).unwrap();
    f.delete(obj("qux", 18)).unwrap();
    // RealFIFO queues everything, even a delete of an unknown object.
    f.delete(obj("baz", 20)).unwrap();

    let vals: Vec<i64> = drain_raw(&f)
        .iter()
        .flat_map(|b| b.iter().map(|d| newest_val(std::slice::from_ref(d))))
        .collect();
    assert_eq!(vals, [10, 15, 17, 18, 20]);
    assert!(f.is_empty());
}

// Go: TestRealFIFO_enqueueingWithLister
#[test]
fn the_real_fifo_test_enqueueing_with_lister() {
    let f = real_fifo(&[obj("foo", 5), obj("bar", 6), obj("baz", 7)]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    f.delete(obj("baz", 20)).unwrap();

    let vals: Vec<i64> = drain_raw(&f)
        .iter()
        .flat_map(|b| b.iter().map(|d| newest_val(std::slice::from_ref(d))))
        .collect();
    assert_eq!(vals, [10, 15, 20]);
    assert!(f.is_empty());
}

// Go: TestRealFIFO_addReplace
#[tokio::test]
async fn the_real_fifo_test_add_replace() {
    let f = real_fifo(&[]);
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "0".into()).unwrap();
    // Go pops 10, then 15 (a `Replaced`); here the 15 comes in the relist's `ReplacedAll`.
    assert_eq!(
        drain(&f),
        [vec!["Added(foo@10)"], vec!["ReplacedAll[foo@15]@0"]]
    );
    assert!(try_pop(&f).is_none(), "a third value");
    f.close();
    assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
}

// Go: TestRealFIFO_ResyncNonExisting
#[test]
fn the_real_fifo_test_resync_non_existing() {
    let f = real_fifo(&[obj("foo", 5)]);
    f.delete(obj("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Deleted(foo@10)"]]);
}

// Go: TestRealFIFO_Resync
#[test]
fn the_real_fifo_test_resync() {
    let f = real_fifo(&[obj("foo", 5)]);
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Sync(foo@5)"]]);
}

// Go: TestRealFIFO_DeleteExistingNonPropagated
#[test]
fn the_real_fifo_test_delete_existing_non_propagated() {
    let f = real_fifo(&[]);
    f.add(obj("foo", 5)).unwrap();
    f.delete(obj("foo", 6)).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(drain(&f), [vec!["Added(foo@5)"], vec!["Deleted(foo@6)"]]);
}

// Go: TestRealFIFO_ReplaceMakesDeletions
#[test]
fn the_real_fifo_test_replace_makes_deletions() {
    let three = [obj("foo", 5), obj("bar", 6), obj("baz", 7)];
    let check = |f: &RealFifo<Obj>, known_objs: &[Arc<Obj>], want: Vec<Vec<&str>>, go| {
        let got = drain_raw(f);
        assert_eq!(got.iter().map(|b| show_all(b)).collect::<Vec<_>>(), want);
        assert_eq!(effects(known_objs, got), go_effects(known_objs, go));
    };

    // A pre-existing delete.
    let f = real_fifo(&three);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    check(
        &f,
        &three,
        vec![vec!["Deleted(baz@10)"], vec!["ReplacedAll[foo@5]@0"]],
        vec![
            deleted(&obj("baz", 10)),
            gone(&obj("bar", 6)),
            replaced(&obj("foo", 5)),
        ],
    );

    // An add instead of a delete.
    let f = real_fifo(&three);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    check(
        &f,
        &three,
        vec![vec!["Added(baz@10)"], vec!["ReplacedAll[foo@5]@0"]],
        vec![
            added(&obj("baz", 10)),
            gone(&obj("baz", 10)),
            gone(&obj("bar", 6)),
            replaced(&obj("foo", 5)),
        ],
    );

    // Deleting and recreating the object in the queue, then deleting it by a replace.
    let f = real_fifo(&three);
    f.delete(obj("bar", 6)).unwrap();
    f.add(obj("bar", 100)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    check(
        &f,
        &three,
        vec![
            vec!["Deleted(bar@6)"],
            vec!["Added(bar@100)"],
            vec!["ReplacedAll[foo@5]@0"],
        ],
        vec![
            deleted(&obj("bar", 6)),
            added(&obj("bar", 100)),
            gone(&obj("bar", 100)),
            gone(&obj("baz", 7)),
            replaced(&obj("foo", 5)),
        ],
    );

    // Syncing first, so that the delete uses the latest version.
    let f = real_fifo(&three);
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into())
        .unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    check(
        &f,
        &three,
        vec![
            vec!["ReplacedAll[bar@100,foo@5]@0"],
            vec!["ReplacedAll[foo@5]@0"],
        ],
        vec![
            gone(&obj("baz", 7)),
            replaced(&obj("bar", 100)),
            replaced(&obj("foo", 5)),
            gone(&obj("bar", 100)),
            replaced(&obj("foo", 5)),
        ],
    );

    // With an empty known-objects store.
    let f = real_fifo(&[]);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();
    check(
        &f,
        &[],
        vec![vec!["Added(baz@10)"], vec!["ReplacedAll[foo@5]@0"]],
        vec![
            added(&obj("baz", 10)),
            gone(&obj("baz", 10)),
            replaced(&obj("foo", 5)),
        ],
    );
}

// Go: TestRealFIFO_ReplaceMakesDeletionsReplaced
#[test]
fn the_real_fifo_test_replace_makes_deletions_replaced() {
    let three = [obj("foo", 5), obj("bar", 6), obj("baz", 7)];
    let f = real_fifo(&three);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 6)], "0".into()).unwrap();
    let got = drain_raw(&f);
    assert_eq!(
        got.iter().map(|b| show_all(b)).collect::<Vec<_>>(),
        [vec!["Deleted(baz@10)"], vec!["ReplacedAll[foo@6]@0"]]
    );
    assert_eq!(
        effects(&three, got),
        go_effects(
            &three,
            vec![
                deleted(&obj("baz", 10)),
                gone(&obj("bar", 6)),
                replaced(&obj("foo", 6)),
            ]
        )
    );
}

// Go: TestRealFIFO_UpdateResyncRace
#[test]
fn the_real_fifo_test_update_resync_race() {
    let f = real_fifo(&[obj("foo", 5)]);
    f.update(obj("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Updated(foo@6)"]]);
}

// Go: TestRealFIFO_HasSyncedCorrectOnDeletion
#[test]
fn the_real_fifo_test_has_synced_correct_on_deletion() {
    let three = [obj("foo", 5), obj("bar", 6), obj("baz", 7)];
    let f = real_fifo(&three);
    f.replace(vec![obj("foo", 5)], "0".into()).unwrap();

    // Go pops three initial-list items (two tombstones, one `Replaced`); here one
    // `ReplacedAll` (documented), also handed out as part of the initial list.
    assert!(!f.has_synced());
    let mut batch = Vec::new();
    let mut initial = false;
    f.pop(&mut |b| {
        initial = !f.has_synced();
        batch = b;
    })
    .now_or_never()
    .expect("a batch is ready")
    .unwrap();
    assert!(initial, "expected initial list item");
    assert_eq!(show_all(&batch), ["ReplacedAll[foo@5]@0"]);
    assert!(f.has_synced());
    assert_eq!(
        effects(&three, vec![batch]),
        go_effects(
            &three,
            vec![
                gone(&obj("bar", 6)),
                gone(&obj("baz", 7)),
                replaced(&obj("foo", 5)),
            ]
        )
    );
}

// Go: TestRealFIFO_detectLineJumpers
#[test]
fn the_real_fifo_test_detect_line_jumpers() {
    // Batch size 1: client-go's one-item `Pop` (documented on `RealFifo::DEFAULT_BATCH_SIZE`).
    let f = real_fifo(&[]).with_batch_size(1);
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();

    // Every event is delivered, in order.
    assert_eq!(test_pop(&f), 10);
    f.add(obj("foo", 14)).unwrap(); // foo must not jump back in line
    for want in [1, 11, 13, 30, 14] {
        assert_eq!(test_pop(&f), want);
    }
}

// Go: TestRealFIFO_HasSynced
#[test]
fn the_real_fifo_test_has_synced() {
    // Documented differences (a relist is one `ReplacedAll` item, counted as the initial
    // population until processed, as client-go's AtomicEvents mode counts it):
    // - `replace []`: Go (non-atomic) is synced at once (nothing queued); here the empty
    //   `ReplacedAll` must be popped first.
    // - `replace [a b]`, one pop: Go needs two pops (two items); here one.
    // - `replace [a a]`: one pop here, where Go pops each duplicate.
    has_synced_cases(
        || real_fifo(&[]),
        vec![
            (vec![], false),
            (vec!["add a"], true),
            (vec!["replace []"], false),
            (vec!["replace []", "pop"], true),
            (vec!["replace [a b]"], false),
            (vec!["replace [a b]", "pop"], true),
            (vec!["replace [a a]", "pop"], true),
        ],
    );
}

// Go: TestRealFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn the_real_fifo_test_pop_should_unblock_when_closed() {
    check_pop_unblocks_when_closed(Arc::new(real_fifo(&[obj("foo", 5)]))).await;
}

/// Pops every ready batch, with whether it was handed out as part of the initial list
/// (`!has_synced()` inside `process`: client-go's `isInInitialList`).
fn drain_with_initial(f: &RealFifo<Obj>) -> Vec<(Vec<Delta<Obj>>, bool)> {
    let mut out = Vec::new();
    while !f.is_empty() {
        let mut got = None;
        f.pop(&mut |batch| got = Some((batch, !f.has_synced())))
            .now_or_never()
            .expect("a batch is ready")
            .expect("the FIFO is open");
        out.push(got.expect("process is called"));
    }
    out
}

// Go: TestRealFIFO_PopMultipleDeltaInBatch (with InOrderInformersBatchProcess). Documented
// difference (`RealFifo`, atomic relists and batching rule 3): Go's test runs the non-atomic
// `RealFIFO`, whose `Replace` queues one `Replaced` per listed object, batched like any
// other item; here the relist is one `ReplacedAll`, alone in its batch whatever the batch
// size. So the ports assert the documented batches, that the batches after the relist are
// Go's, that exactly the listed objects are handed out as the initial list, and that an
// informer applying them sees what it sees applying Go's batches.
#[test]
fn the_real_fifo_test_pop_multiple_delta_in_batch() {
    const UNLIMITED: usize = 999_999;
    let (o1, o2, o3, o4) = (
        obj("foo1", 5),
        obj("foo2", 5),
        obj("foo3", 5),
        obj("foo4", 5),
    );
    let upd = |o: &Arc<Obj>| Delta::Updated(o.clone());
    // (name, initial items, updates after the relist, batch size, the library's batches,
    // Go's expected batches)
    type Case = (
        &'static str,
        Vec<Arc<Obj>>,
        Vec<Arc<Obj>>,
        usize,
        Vec<Vec<&'static str>>,
        Vec<Vec<Delta<Obj>>>,
    );
    let cases: Vec<Case> = vec![
        (
            "non-split: pop unique items should work",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            UNLIMITED,
            vec![vec!["ReplacedAll[foo1@5,foo2@5,foo3@5]@123"]],
            vec![vec![replaced(&o1), replaced(&o2), replaced(&o3)]],
        ),
        (
            "split due to initial list: initial 2 items with 2 updates should have 2 batches",
            vec![o1.clone(), o2.clone()],
            vec![o3.clone(), o4.clone()],
            2,
            vec![
                vec!["ReplacedAll[foo1@5,foo2@5]@123"],
                vec!["Updated(foo3@5)", "Updated(foo4@5)"],
            ],
            vec![vec![replaced(&o1), replaced(&o2)], vec![upd(&o3), upd(&o4)]],
        ),
        (
            "split due to non-unique#1: update single item for multiple items should have separate batch",
            vec![o1.clone()],
            vec![o1.clone(), o1.clone()],
            UNLIMITED,
            vec![
                vec!["ReplacedAll[foo1@5]@123"],
                vec!["Updated(foo1@5)"],
                vec!["Updated(foo1@5)"],
            ],
            vec![vec![replaced(&o1)], vec![upd(&o1)], vec![upd(&o1)]],
        ),
        (
            "split due to non-unique#2: update 3 item for with non-unique item at the end should have separate batch",
            vec![o1.clone(), o2.clone()],
            vec![o2.clone(), o3.clone()],
            UNLIMITED,
            vec![
                vec!["ReplacedAll[foo1@5,foo2@5]@123"],
                vec!["Updated(foo2@5)", "Updated(foo3@5)"],
            ],
            vec![vec![replaced(&o1), replaced(&o2)], vec![upd(&o2), upd(&o3)]],
        ),
        (
            "split due to non-unique#3: update 3 item for with non-unique item in the mid should have separate batch",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o2.clone()],
            UNLIMITED,
            vec![
                vec!["ReplacedAll[foo1@5,foo2@5,foo3@5]@123"],
                vec!["Updated(foo2@5)"],
            ],
            vec![
                vec![replaced(&o1), replaced(&o2), replaced(&o3)],
                vec![upd(&o2)],
            ],
        ),
        (
            "split due to batch size#1: batching initial list should work",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![],
            2,
            vec![vec!["ReplacedAll[foo1@5,foo2@5,foo3@5]@123"]],
            vec![vec![replaced(&o1), replaced(&o2)], vec![replaced(&o3)]],
        ),
        (
            // Go's empty `Replace` queues nothing; here it is an empty `ReplacedAll`.
            "split due to batch size#2: batching incoming non-initial deltas should work",
            vec![],
            vec![o1.clone(), o2.clone(), o3.clone()],
            2,
            vec![
                vec!["ReplacedAll[]@123"],
                vec!["Updated(foo1@5)", "Updated(foo2@5)"],
                vec!["Updated(foo3@5)"],
            ],
            vec![vec![upd(&o1), upd(&o2)], vec![upd(&o3)]],
        ),
        (
            "split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size should have 3 batch",
            vec![o1.clone(), o2.clone(), o3.clone()],
            vec![o4.clone()],
            2,
            vec![
                vec!["ReplacedAll[foo1@5,foo2@5,foo3@5]@123"],
                vec!["Updated(foo4@5)"],
            ],
            vec![
                vec![replaced(&o1), replaced(&o2)],
                vec![replaced(&o3)],
                vec![upd(&o4)],
            ],
        ),
    ];
    for (name, initial, updates, batch_size, want, go) in cases {
        let f = real_fifo(&initial).with_batch_size(batch_size);
        f.replace(initial.clone(), "123".into()).unwrap();
        for o in &updates {
            f.update(o.clone()).unwrap();
        }
        let got = drain_with_initial(&f);
        assert_eq!(
            got.iter().map(|(b, _)| show_all(b)).collect::<Vec<_>>(),
            want,
            "{name}"
        );
        // The batches after the relist are Go's batches after its `Replaced` items.
        let go_later: Vec<Vec<String>> = go
            .iter()
            .filter(|b| !b.iter().any(|d| matches!(d, Delta::Replaced(_))))
            .map(|b| show_all(b))
            .collect();
        let later: Vec<Vec<String>> = got.iter().skip(1).map(|(b, _)| show_all(b)).collect();
        assert_eq!(later, go_later, "{name}: batches after the relist");
        // Exactly the listed objects are handed out as the initial list.
        let initial_objs: Vec<Arc<Obj>> = got
            .iter()
            .filter(|(_, init)| *init)
            .flat_map(|(b, _)| b.iter())
            .flat_map(|d| match d {
                Delta::ReplacedAll { objects, .. } => objects.clone(),
                other => panic!("{name}: {} in the initial list", show(other)),
            })
            .collect();
        assert_eq!(initial_objs, initial, "{name}: the initial list");
        assert!(f.has_synced(), "{name}");
        let batches = got.into_iter().map(|(b, _)| b).collect();
        assert_eq!(
            effects(&[], batches),
            effects(&[], go),
            "{name}: what an informer sees"
        );
        f.close();
    }
}

// Go: TestRealFIFO_ReplaceAtomic (`emitAtomicEvents` and `emitDeltaTypeBookmark` on: this
// library's `RealFifo` always runs so). Go pops one item at a time; the items are compared
// in order across batches.
#[test]
fn the_real_fifo_test_replace_atomic() {
    let o = obj("foo", 2);
    type Ops = Box<dyn Fn(&RealFifo<Obj>)>;
    let cases: Vec<(&str, Ops, Vec<&str>)> = vec![
        (
            "Base replace",
            Box::new(|f| f.replace(vec![], "123".into()).unwrap()),
            vec!["ReplacedAll[]@123"],
        ),
        (
            "Added object exists in deltas on Atomic Replace",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.replace(vec![], "123".into()).unwrap();
                }
            }),
            vec!["Added(foo@2)", "ReplacedAll[]@123"],
        ),
        (
            "Multiple replaces run in order",
            Box::new({
                let o = o.clone();
                move |f| {
                    f.add(o.clone()).unwrap();
                    f.replace(vec![o.clone()], "10".into()).unwrap();
                    f.replace(vec![o.clone()], "20".into()).unwrap();
                    f.replace(vec![], "56".into()).unwrap();
                }
            }),
            vec![
                "Added(foo@2)",
                "ReplacedAll[foo@2]@10",
                "ReplacedAll[foo@2]@20",
                "ReplacedAll[]@56",
            ],
        ),
        (
            "Bookmark object should not be included in Replace",
            Box::new(|f| {
                f.bookmark("123".into()).unwrap();
                f.replace(vec![], "1234".into()).unwrap();
            }),
            vec!["Bookmark(123)", "ReplacedAll[]@1234"],
        ),
    ];
    for (name, ops, want) in cases {
        let f = real_fifo(&[]);
        ops(&f);
        let got: Vec<String> = drain(&f).into_iter().flatten().collect();
        assert_eq!(got, want, "{name}");
        assert!(f.is_empty(), "{name}: no extra deltas");
    }
}

// Go: TestRealFIFO_ReplaceAtomicPop
#[tokio::test]
async fn the_real_fifo_test_replace_atomic_pop() {
    let f = real_fifo(&[]);
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "20".into()).unwrap();
    assert_eq!(pop_now(&f), ["Added(foo@10)"]);
    assert_eq!(pop_now(&f), ["ReplacedAll[foo@15]@20"]);
    assert!(try_pop(&f).is_none(), "a third value");
    assert!(f.is_empty(), "item did not get removed");
    f.close();
    assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
}

// Go: TestRealFIFO_ResyncAtomic. Documented difference (`RealFifo`, "Resyncs"): client-go's
// atomic `RealFIFO` queues one `SyncAll` item, on which the consumer re-delivers every object
// of its cache; here a resync queues a `Sync` of each object of the known-objects store
// (the consumer's cache) that has nothing queued or being processed. With the empty cache of
// Go's test, the resync queues nothing in both cases; in the second, Go's consumer would
// re-deliver `foo` after applying the add, which this library does not (`foo` has an item
// queued, and is not yet in the cache when the resync runs).
#[test]
fn the_real_fifo_test_resync_atomic() {
    let o = obj("foo", 2);
    // "Base resync": Go queues [SyncAll].
    let f = real_fifo(&[]);
    f.resync().unwrap();
    assert!(f.is_empty(), "Base resync");
    // "Added object exists in deltas on Atomic Resync": Go queues [Added, SyncAll].
    let f = real_fifo(&[]);
    f.add(o.clone()).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Added(foo@2)"]]);
    assert!(f.is_empty());
    // With the object cached and nothing queued for it, the resync re-delivers it, as Go's
    // consumer does on `SyncAll`.
    let f = real_fifo(std::slice::from_ref(&o));
    f.resync().unwrap();
    assert_eq!(drain(&f), [vec!["Sync(foo@2)"]]);
}

// =====================================================================================
// object-names_test.go (Go's `ObjectName` and `ParseObjectName` are `ObjectKey`, its
// `FromStr` and `Display`)
// =====================================================================================

// Go: TestObjectNames. Go draws 100 random 10-character strings over "abcdefghi/"; here a
// fixed-seed generator draws them, plus the edge cases. Documented difference (`ObjectKey`'s
// `FromStr`): a key with an empty name (`"ns/"`) is refused, where Go's
// `SplitMetaNamespaceKey` returns an empty name: no object has one. That is asserted.
#[test]
fn object_names_test_object_names() {
    const CHARS: &[u8] = b"abcdefghi/";
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // xorshift64
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut encoded: Vec<String> = (0..100)
        .map(|_| {
            (0..10)
                .map(|_| CHARS[(next() % CHARS.len() as u64) as usize] as char)
                .collect()
        })
        .collect();
    encoded.extend(
        [
            "abcdefghia",
            "/abcdefghi",
            "abcde/fghi",
            "abcdefghi/",
            "ab/cd/efgh",
            "//////////",
        ]
        .map(String::from),
    );
    for encoded_s in &encoded {
        let parts: Vec<&str> = encoded_s.split('/').collect();
        let parsed = encoded_s.parse::<ObjectKey>();
        let expect_error = parts.len() > 2;
        // The documented difference: an empty name does not parse.
        let empty_name = parts.len() == 2 && parts[1].is_empty();
        assert_eq!(
            parsed.is_err(),
            expect_error || empty_name,
            "wrong error for {encoded_s:?}: {parsed:?}"
        );
        let Ok(on) = parsed else { continue };
        let (namespace, name) = if parts.len() == 2 {
            (parts[0], parts[1])
        } else {
            ("", encoded_s.as_str())
        };
        assert_eq!(
            (on.namespace().unwrap_or(""), on.name()),
            (namespace, name),
            "parse failed for {encoded_s:?}"
        );
        let mut recoded = on.to_string();
        if encoded_s.starts_with('/') {
            recoded = format!("/{recoded}");
        }
        assert_eq!(encoded_s, &recoded, "Parse().String() was not identity");
    }
}
