//! Readers and writers on several threads, and a model check against a `BTreeMap`.

use super::*;

// ---------- concurrency ----------

#[test]
fn concurrent_readers_do_not_block_each_other() {
    let store = Arc::new(node_store());
    let p = pod(Some("ns"), "a", Some("n1"));
    store.add(p.clone()).unwrap();
    // This thread is a reader in the middle of a long read...
    let held = store.inner.read();
    // ...while another thread runs every read. With a mutex, it would wait for `held`
    // and the answer would not come before the timeout.
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn({
        let store = store.clone();
        move || {
            let n = store.get(&key("ns", "a")).into_iter().count()
                + store.list().len()
                + store.list_keys().len()
                + store.len()
                + store.by_index("node", "n1").unwrap().len()
                + store.index_keys(NAMESPACE_INDEX, "ns").unwrap().len()
                + store.list_index_values("node").unwrap().len()
                + store.index("node", &p).unwrap().len()
                + store.index_names().len()
                + usize::from(store.resource_version().is_none());
            let _ = tx.send(n);
        }
    });
    let answer = rx.recv_timeout(Duration::from_secs(10));
    drop(held);
    reader.join().unwrap();
    assert_eq!(answer, Ok(11), "a reader waited for another reader");
}

#[test]
fn index_functions_of_a_write_do_not_block_readers() {
    // The index function of a write waits until a reader on another thread has read.
    // If the write held an exclusive lock while calling it, the read would wait for the
    // function and the function would time out.
    let (entered_tx, entered_rx) = mpsc::sync_channel::<()>(1);
    let (read_tx, read_rx) = mpsc::sync_channel::<()>(1);
    let entered_tx = parking_lot::Mutex::new(Some(entered_tx));
    let read_rx = parking_lot::Mutex::new(read_rx);
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = timed_out.clone();
    let slow = index_fn(move |p: &Pod| {
        if p.metadata.name.as_deref() == Some("slow") {
            if let Some(tx) = entered_tx.lock().take() {
                let _ = tx.send(());
            }
            if read_rx
                .lock()
                .recv_timeout(Duration::from_secs(10))
                .is_err()
            {
                flag.store(true, Ordering::SeqCst);
            }
        }
        node_of(p)
    });
    let store = Arc::new(
        ThreadSafeStore::<Pod>::new()
            .with_indexers([("slow".to_owned(), slow)].into())
            .unwrap(),
    );
    store.add(pod(Some("ns"), "fast", Some("n1"))).unwrap();
    let writer = std::thread::spawn({
        let store = store.clone();
        move || store.add(pod(Some("ns"), "slow", Some("n1"))).unwrap()
    });
    entered_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(
        store.by_index("slow", "n1").unwrap().len(),
        1,
        "the write is not visible yet"
    );
    read_tx.send(()).unwrap();
    writer.join().unwrap();
    assert!(
        !timed_out.load(Ordering::SeqCst),
        "the reader was blocked by the index function"
    );
    assert_eq!(store.by_index("slow", "n1").unwrap().len(), 2);
}

#[test]
fn readers_never_see_half_a_write() {
    let store = Arc::new(node_store());
    let set_a: Vec<Arc<Pod>> = (0..60)
        .map(|i| pod(Some("a"), &format!("a{i}"), Some("na")))
        .collect();
    let set_b: Vec<Arc<Pod>> = (0..30)
        .map(|i| pod(Some("b"), &format!("b{i}"), Some("nb")))
        .collect();
    store.replace(set_a.clone(), "0").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut checks = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let all = store.list();
                    assert!(
                        all.len() == 60 || all.len() == 30,
                        "torn list: {}",
                        all.len()
                    );
                    let ns: BTreeSet<_> =
                        all.iter().map(|p| p.metadata.namespace.clone()).collect();
                    assert_eq!(ns.len(), 1, "list mixes two contents");
                    let na = store.by_index("node", "na").unwrap().len();
                    assert!(na == 0 || na == 60, "torn index: {na}");
                    let nb = store.index_keys(NAMESPACE_INDEX, "b").unwrap().len();
                    assert!(nb == 0 || nb == 30, "torn namespace index: {nb}");
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for round in 0..150 {
        if round % 2 == 0 {
            store.replace(set_b.clone(), "b").unwrap();
        } else {
            // The same switch as one apply batch.
            let mut batch: Vec<StoreOp<Pod>> = set_b
                .iter()
                .map(|p| StoreOp::Delete(ObjectKey::from_resource(&**p).unwrap()))
                .collect();
            batch.extend(set_a.iter().cloned().map(StoreOp::Upsert));
            store.apply(batch).unwrap();
            continue;
        }
        let mut batch: Vec<StoreOp<Pod>> = set_a
            .iter()
            .map(|p| StoreOp::Delete(ObjectKey::from_resource(&**p).unwrap()))
            .collect();
        batch.extend(set_b.iter().cloned().map(StoreOp::Upsert));
        store.apply(batch).unwrap();
        store.replace(set_a.clone(), "a").unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    check_invariants(&*store);
}

#[test]
fn model_check_against_a_btreemap() {
    // A quick deterministic cross-check; tests/store_props.rs does the thorough one.
    let store = node_store();
    let mut model: BTreeMap<ObjectKey, Arc<Pod>> = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..300 {
        let name = format!("p{}", rng.random_range(0..20));
        let ns = format!("ns{}", rng.random_range(0..3));
        if rng.random_bool(0.7) {
            let p = pod(
                Some(&ns),
                &name,
                Some(&format!("n{}", rng.random_range(0..4))),
            );
            store.add(p.clone()).unwrap();
            model.insert(key(&ns, &name), p);
        } else {
            assert_eq!(
                store.delete(&key(&ns, &name)).is_some(),
                model.remove(&key(&ns, &name)).is_some()
            );
        }
        for n in 0..4 {
            let node = format!("n{n}");
            let expected: Vec<ObjectKey> = model
                .iter()
                .filter(|(_, p)| node_of(p) == [node.clone()])
                .map(|(k, _)| k.clone())
                .collect();
            assert_eq!(sorted(store.index_keys("node", &node).unwrap()), expected);
        }
    }
}
