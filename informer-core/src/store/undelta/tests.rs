use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use proptest::prelude::*;

use super::*;
use crate::store::{ExpirationCache, index_fn};

#[derive(Debug, PartialEq, Eq)]
struct Obj {
    name: String,
    val: u32,
}

fn obj(name: &str, val: u32) -> Arc<Obj> {
    Arc::new(Obj {
        name: name.to_owned(),
        val,
    })
}

fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    if o.name.is_empty() {
        return Err(KeyError::MissingName { kind: "Obj" });
    }
    Ok(ObjectKey::cluster(&o.name))
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::cluster(name)
}

fn state(objs: &[Arc<Obj>]) -> Vec<(String, u32)> {
    let mut v: Vec<_> = objs.iter().map(|o| (o.name.clone(), o.val)).collect();
    v.sort();
    v
}

type Pushes = Arc<Mutex<Vec<Vec<(String, u32)>>>>;

/// A store recording every push, as its sorted state.
fn recording() -> (UndeltaStore<Obj>, Pushes) {
    let pushes: Pushes = Arc::default();
    let log = pushes.clone();
    let store = UndeltaStore::with_key_fn(obj_key, move |objs: Vec<Arc<Obj>>| {
        log.lock().unwrap().push(state(&objs));
    });
    (store, pushes)
}

fn s(items: &[(&str, u32)]) -> Vec<(String, u32)> {
    items.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()
}

#[test]
fn every_successful_write_pushes_the_whole_state_once() {
    let (store, pushes) = recording();
    store.add(obj("a", 1)).unwrap();
    store.update(obj("b", 1)).unwrap();
    store.update_with_key(key("a"), obj("a", 2)).unwrap();
    store.delete(&key("b"));
    store.replace(vec![obj("c", 1), obj("d", 1)], "5").unwrap();
    store
        .apply(vec![
            StoreOp::Upsert(obj("e", 1)),
            StoreOp::Delete(key("c")),
        ])
        .unwrap();
    assert_eq!(
        *pushes.lock().unwrap(),
        [
            s(&[("a", 1)]),
            s(&[("a", 1), ("b", 1)]),
            s(&[("a", 2), ("b", 1)]),
            s(&[("a", 2)]),
            s(&[("c", 1), ("d", 1)]),
            s(&[("d", 1), ("e", 1)]),
        ]
    );
}

#[test]
fn a_write_that_changes_nothing_still_pushes() {
    let (store, pushes) = recording();
    assert!(store.delete(&key("absent")).is_none());
    store.apply(Vec::new()).unwrap();
    assert_eq!(*pushes.lock().unwrap(), [s(&[]), s(&[])]);
}

#[test]
fn a_failed_write_changes_nothing_and_pushes_nothing() {
    let (store, pushes) = recording();
    store.add(obj("a", 1)).unwrap();
    assert!(store.add(obj("", 1)).is_err());
    assert!(store.replace(vec![obj("b", 1), obj("", 1)], "1").is_err());
    assert!(
        store
            .apply(vec![StoreOp::Delete(key("a")), StoreOp::Upsert(obj("", 1))])
            .is_err()
    );
    assert_eq!(pushes.lock().unwrap().len(), 1);
    assert_eq!(state(&store.list()), s(&[("a", 1)]));
}

#[test]
fn reads_resource_versions_and_indexes_push_nothing() {
    let pushed = Arc::new(AtomicBool::new(false));
    let flag = pushed.clone();
    let store = UndeltaStore::with_key_fn(obj_key, move |_: Vec<Arc<Obj>>| {
        flag.store(true, Ordering::SeqCst);
    });
    let _ = (store.get(&key("a")), store.list(), store.list_keys());
    let _ = (store.len(), store.is_empty(), store.resource_version());
    store.set_resource_version("3");
    store
        .add_indexers(
            [(
                "val".to_owned(),
                index_fn(|o: &Obj| vec![o.val.to_string()]),
            )]
            .into(),
        )
        .unwrap();
    let _ = store.by_index("val", "1").unwrap();
    assert!(!pushed.load(Ordering::SeqCst));
    assert_eq!(store.resource_version().as_deref(), Some("3"));
}

#[test]
fn pushes_follow_the_writes_in_order_each_with_its_own_state() {
    // Concurrent adds of distinct keys: the k-th push must hold exactly k objects (client-go
    // may push the same state twice here).
    let sizes: Arc<Mutex<Vec<usize>>> = Arc::default();
    let log = sizes.clone();
    let store = UndeltaStore::with_key_fn(obj_key, move |objs: Vec<Arc<Obj>>| {
        log.lock().unwrap().push(objs.len());
    });
    std::thread::scope(|scope| {
        for t in 0..4 {
            let store = &store;
            scope.spawn(move || {
                for i in 0..250 {
                    store.add(obj(&format!("t{t}-{i}"), 0)).unwrap();
                }
            });
        }
    });
    let sizes = sizes.lock().unwrap();
    assert_eq!(*sizes, (1..=1000).collect::<Vec<_>>());
}

#[test]
fn pushes_never_overlap() {
    let inside = Arc::new(AtomicBool::new(false));
    let overlapped = Arc::new(AtomicBool::new(false));
    let (flag, seen) = (inside.clone(), overlapped.clone());
    let store = UndeltaStore::with_key_fn(obj_key, move |_: Vec<Arc<Obj>>| {
        if flag.swap(true, Ordering::SeqCst) {
            seen.store(true, Ordering::SeqCst);
        }
        std::thread::yield_now();
        flag.store(false, Ordering::SeqCst);
    });
    std::thread::scope(|scope| {
        for t in 0..4 {
            let store = &store;
            scope.spawn(move || {
                for i in 0..200 {
                    store.add(obj(&format!("{}", i % 7), t)).unwrap();
                }
            });
        }
    });
    assert!(!overlapped.load(Ordering::SeqCst));
}

#[test]
fn reads_do_not_wait_for_a_push() {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let store = UndeltaStore::with_key_fn(obj_key, move |_: Vec<Arc<Obj>>| {
        entered_tx.send(()).unwrap();
        release_rx.lock().unwrap().recv().unwrap();
    });
    std::thread::scope(|scope| {
        scope.spawn(|| store.add(obj("a", 1)).unwrap());
        entered_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the push started");
        // The writer is inside its push, holding the push mutex: reads still answer, and
        // see the write.
        assert_eq!(store.get(&key("a")).map(|o| o.val), Some(1));
        assert_eq!(store.len(), 1);
        release_tx.send(()).unwrap();
    });
}

#[test]
fn the_push_function_may_read_the_store() {
    let me: Arc<OnceLock<Weak<UndeltaStore<Obj>>>> = Arc::default();
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let (cell, log) = (me.clone(), seen.clone());
    let store = Arc::new(UndeltaStore::with_key_fn(
        obj_key,
        move |_: Vec<Arc<Obj>>| {
            let store = cell.get().and_then(Weak::upgrade).expect("set below");
            log.lock().unwrap().push(store.len());
        },
    ));
    me.set(Arc::downgrade(&store)).unwrap();
    store.add(obj("a", 1)).unwrap();
    store.add(obj("b", 1)).unwrap();
    assert_eq!(*seen.lock().unwrap(), [1, 2]);
}

#[test]
fn a_panicking_push_reaches_the_writer_and_the_write_stays() {
    let fail = Arc::new(AtomicBool::new(true));
    let pushes: Pushes = Arc::default();
    let (flag, log) = (fail.clone(), pushes.clone());
    let store = UndeltaStore::with_key_fn(obj_key, move |objs: Vec<Arc<Obj>>| {
        assert!(!flag.load(Ordering::SeqCst), "push failed");
        log.lock().unwrap().push(state(&objs));
    });
    let outcome = catch_unwind(AssertUnwindSafe(|| store.add(obj("a", 1))));
    assert!(outcome.is_err());
    assert_eq!(state(&store.list()), s(&[("a", 1)]), "the write stays made");
    fail.store(false, Ordering::SeqCst);
    store.add(obj("b", 1)).unwrap();
    assert_eq!(*pushes.lock().unwrap(), [s(&[("a", 1), ("b", 1)])]);
}

#[test]
fn a_store_wraps_any_store_and_keeps_its_keys() {
    let pushes: Arc<Mutex<usize>> = Arc::default();
    let count = pushes.clone();
    let store = UndeltaStore::with_store(
        ExpirationCache::<ConfigMap>::new(Duration::from_secs(60)),
        move |_: Vec<Arc<ConfigMap>>| *count.lock().unwrap() += 1,
    );
    assert!(store.keys_by_resource_key());
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c".into());
    store.add(Arc::new(cm)).unwrap();
    assert_eq!((store.len(), *pushes.lock().unwrap()), (1, 1));
    assert!(!UndeltaStore::with_key_fn(obj_key, |_: Vec<Arc<Obj>>| {}).keys_by_resource_key());
}

#[test]
fn indexes_are_the_wrapped_stores() {
    let store = UndeltaStore::with_key_fn(obj_key, |_: Vec<Arc<Obj>>| {});
    store
        .add_indexers(
            [(
                "val".to_owned(),
                index_fn(|o: &Obj| vec![o.val.to_string()]),
            )]
            .into(),
        )
        .unwrap();
    store.add(obj("a", 1)).unwrap();
    store.add(obj("b", 2)).unwrap();
    assert_eq!(state(&store.by_index("val", "1").unwrap()), s(&[("a", 1)]));
    assert_eq!(store.index_keys("val", "2").unwrap(), [key("b")]);
    let mut values = store.list_index_values("val").unwrap();
    values.sort();
    assert_eq!(values, ["1", "2"]);
    assert_eq!(
        state(&store.index("val", &obj("x", 2)).unwrap()),
        s(&[("b", 2)])
    );
    assert!(store.index_names().contains(&"val".to_owned()));
}

// ---------- against a model ----------

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u32),
    Delete(u8),
    Replace(Vec<(u8, u32)>),
    Apply(Vec<(u8, Option<u32>)>),
    /// An object without a key: refused.
    AddKeyless,
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0u8..5;
    prop_oneof![
        (name.clone(), 0u32..10).prop_map(|(n, v)| Op::Add(n, v)),
        name.clone().prop_map(Op::Delete),
        prop::collection::vec((name.clone(), 0u32..10), 0..5).prop_map(Op::Replace),
        prop::collection::vec((name, prop::option::of(0u32..10)), 0..5).prop_map(Op::Apply),
        Just(Op::AddKeyless),
        Just(Op::Read),
    ]
}

proptest! {
    #[test]
    fn each_write_pushes_the_models_state(ops in prop::collection::vec(op(), 1..40)) {
        let (store, pushes) = recording();
        let mut model: BTreeMap<String, u32> = BTreeMap::new();
        let mut writes = 0;
        for op in ops {
            match op {
                Op::Add(n, v) => {
                    store.add(obj(&format!("o{n}"), v)).unwrap();
                    model.insert(format!("o{n}"), v);
                }
                Op::Delete(n) => {
                    store.delete(&key(&format!("o{n}")));
                    model.remove(&format!("o{n}"));
                }
                Op::Replace(list) => {
                    store
                        .replace(list.iter().map(|&(n, v)| obj(&format!("o{n}"), v)).collect(), "1")
                        .unwrap();
                    model = list.iter().map(|&(n, v)| (format!("o{n}"), v)).collect();
                }
                Op::Apply(batch) => {
                    let ops = batch
                        .iter()
                        .map(|&(n, v)| match v {
                            Some(v) => StoreOp::Upsert(obj(&format!("o{n}"), v)),
                            None => StoreOp::Delete(key(&format!("o{n}"))),
                        })
                        .collect();
                    store.apply(ops).unwrap();
                    for (n, v) in batch {
                        match v {
                            Some(v) => { model.insert(format!("o{n}"), v); }
                            None => { model.remove(&format!("o{n}")); }
                        }
                    }
                }
                Op::AddKeyless => {
                    prop_assert!(store.add(obj("", 0)).is_err());
                    continue;
                }
                Op::Read => {
                    let _ = (store.list(), store.len());
                    continue;
                }
            }
            writes += 1;
            let pushes = pushes.lock().unwrap();
            prop_assert_eq!(pushes.len(), writes);
            let want: Vec<(String, u32)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(pushes.last().unwrap(), &want);
        }
        prop_assert_eq!(pushes.lock().unwrap().len(), writes);
    }
}
