//! Tests of the compact store, one per guarantee; the reference is `ThreadSafeStore`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use informer_core::store::{ThreadSafeStore, index_fn};
use informer_core::{Indexer, Indexers, NAMESPACE_INDEX, ObjectKey, Store, StoreOp};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

use super::*;

/// Twelve realistic pods from the shared benchmark generator
/// (`gen_pods.py --count 12 --start 5000`), one JSON object per line.
const PODS_JSONL: &str = include_str!("../../testdata/pods.jsonl");

fn cm(ns: &str, name: &str, value: &str) -> Arc<ConfigMap> {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some(ns.into());
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    Arc::new(c)
}

fn value_index() -> Indexers<ConfigMap> {
    [(
        "value".to_owned(),
        index_fn(|c: &ConfigMap| {
            c.data
                .as_ref()
                .and_then(|d| d.get("v").cloned())
                .into_iter()
                .collect()
        }),
    )]
    .into()
}

fn values(objs: &[Arc<ConfigMap>]) -> BTreeSet<String> {
    objs.iter()
        .map(|c| {
            format!(
                "{}/{}={}",
                c.metadata.namespace.as_deref().unwrap_or(""),
                c.metadata.name.as_deref().unwrap_or(""),
                c.data
                    .as_ref()
                    .and_then(|d| d.get("v").cloned())
                    .unwrap_or_default()
            )
        })
        .collect()
}

fn opt_value(o: &Option<Arc<ConfigMap>>) -> Option<ConfigMap> {
    o.as_ref().map(|c| (**c).clone())
}

/// A small deterministic generator (no extra dependency).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn assert_same(
    reference: &ThreadSafeStore<ConfigMap>,
    compact: &CompactStore<ConfigMap>,
    step: usize,
) {
    assert_eq!(
        values(&reference.list()),
        values(&compact.list()),
        "list at step {step}"
    );
    assert_eq!(reference.len(), compact.len());
    let mut keys_r = reference.list_keys();
    let mut keys_c = compact.list_keys();
    keys_r.sort();
    keys_c.sort();
    assert_eq!(keys_r, keys_c);
    for index in [NAMESPACE_INDEX, "value"] {
        let mut vr = reference.list_index_values(index).unwrap();
        let mut vc = compact.list_index_values(index).unwrap();
        vr.sort();
        vc.sort();
        assert_eq!(vr, vc, "values of {index} at step {step}");
        for v in vr {
            assert_eq!(
                values(&reference.by_index(index, &v).unwrap()),
                values(&compact.by_index(index, &v).unwrap()),
                "{index}={v} at step {step}"
            );
        }
    }
    assert_eq!(reference.resource_version(), compact.resource_version());
}

#[test]
fn compact_store_behaves_like_thread_safe_store_under_random_operations() {
    for seed in 1..=4u64 {
        let mut rng = Lcg(seed);
        let reference = ThreadSafeStore::<ConfigMap>::new();
        let compact =
            CompactStore::<ConfigMap>::with_key_fn(informer_core::resource_key::<ConfigMap>, 4);
        reference.add_indexers(value_index()).unwrap();
        compact.add_indexers(value_index()).unwrap();
        let random_cm = |rng: &mut Lcg| {
            cm(
                &format!("ns{}", rng.next(3)),
                &format!("o{}", rng.next(12)),
                &format!("v{}", rng.next(5)),
            )
        };
        for step in 0..400 {
            match rng.next(10) {
                0..=4 => {
                    let obj = random_cm(&mut rng);
                    let r = reference.add(obj.clone()).unwrap();
                    let c = compact.add(obj).unwrap();
                    assert_eq!(opt_value(&r), opt_value(&c), "old of add at step {step}");
                }
                5 | 6 => {
                    let key = ObjectKey::new(
                        Some(&format!("ns{}", rng.next(3))),
                        &format!("o{}", rng.next(12)),
                    );
                    assert_eq!(
                        opt_value(&reference.delete(&key)),
                        opt_value(&compact.delete(&key))
                    );
                }
                7 => {
                    let objs: Vec<_> = (0..rng.next(10)).map(|_| random_cm(&mut rng)).collect();
                    let rv = step.to_string();
                    let r = reference.replace(objs.clone(), &rv).unwrap();
                    let c = compact.replace(objs, &rv).unwrap();
                    assert_eq!(values(&r.added), values(&c.added), "added at step {step}");
                    let pairs = |d: &informer_core::store::ReplaceDiff<ConfigMap>| {
                        d.updated
                            .iter()
                            .map(|(o, n)| {
                                (
                                    values(std::slice::from_ref(o)),
                                    values(std::slice::from_ref(n)),
                                )
                            })
                            .collect::<BTreeSet<_>>()
                    };
                    assert_eq!(pairs(&r), pairs(&c), "updated at step {step}");
                    let gone = |d: &informer_core::store::ReplaceDiff<ConfigMap>| {
                        d.deleted
                            .iter()
                            .map(|(k, o)| (k.clone(), values(std::slice::from_ref(o))))
                            .collect::<BTreeSet<_>>()
                    };
                    assert_eq!(gone(&r), gone(&c), "deleted at step {step}");
                }
                8 => {
                    let batch = || {
                        let mut rng = Lcg(seed * 1000 + step as u64);
                        (0..4)
                            .map(|_| {
                                if rng.next(3) == 0 {
                                    StoreOp::Delete(ObjectKey::new(
                                        Some(&format!("ns{}", rng.next(3))),
                                        &format!("o{}", rng.next(12)),
                                    ))
                                } else {
                                    StoreOp::Upsert(random_cm(&mut rng))
                                }
                            })
                            .collect::<Vec<_>>()
                    };
                    let r = reference.apply(batch()).unwrap();
                    let c = compact.apply(batch()).unwrap();
                    let r: Vec<_> = r.iter().map(opt_value).collect();
                    let c: Vec<_> = c.iter().map(opt_value).collect();
                    assert_eq!(r, c, "apply at step {step}");
                }
                _ => {
                    let ns = format!("ns{}", rng.next(3));
                    let probe = cm(&ns, "probe", &format!("v{}", rng.next(5)));
                    assert_eq!(
                        values(&reference.index("value", &probe).unwrap()),
                        values(&compact.index("value", &probe).unwrap())
                    );
                    reference.set_resource_version(&step.to_string());
                    compact.set_resource_version(&step.to_string());
                }
            }
            assert_same(&reference, &compact, step);
        }
    }
}

#[test]
fn hot_cache_returns_the_same_object_until_it_is_written() {
    let store = CompactStore::<ConfigMap>::new();
    let key = ObjectKey::new(Some("ns"), "a");
    let written = cm("ns", "a", "1");
    store.add(written.clone()).unwrap();
    let first = store.get(&key).unwrap();
    assert!(Arc::ptr_eq(&first, &written), "a written object is hot");
    store.add(cm("ns", "a", "2")).unwrap();
    let second = store.get(&key).unwrap();
    assert_eq!(
        second.data.as_ref().unwrap()["v"],
        "2",
        "a write replaces the hot object"
    );
    store.delete(&key);
    assert!(store.get(&key).is_none());
}

#[test]
fn reads_decode_when_the_hot_cache_is_disabled() {
    let store = CompactStore::<ConfigMap>::with_key_fn(informer_core::resource_key::<ConfigMap>, 0);
    let written = cm("ns", "a", "1");
    store.add(written.clone()).unwrap();
    let read = store.get(&ObjectKey::new(Some("ns"), "a")).unwrap();
    assert!(!Arc::ptr_eq(&read, &written));
    assert_eq!(*read, *written);
    assert_eq!(store.stats().decodes, 1);
    assert_eq!(store.stats().hot_objects, 0);
}

#[test]
fn hot_cache_keeps_at_most_its_capacity() {
    let store = CompactStore::<ConfigMap>::with_key_fn(informer_core::resource_key::<ConfigMap>, 8);
    for i in 0..100 {
        store.add(cm("ns", &format!("o{i}"), "1")).unwrap();
        let _ = store.get(&ObjectKey::new(Some("ns"), &format!("o{}", i / 2)));
    }
    assert!(store.stats().hot_objects <= 8);
    assert_eq!(store.len(), 100);
}

#[test]
fn keyless_object_is_refused_and_nothing_changes() {
    let store = CompactStore::<ConfigMap>::new();
    store.add(cm("ns", "a", "1")).unwrap();
    assert!(store.add(Arc::new(ConfigMap::default())).is_err());
    assert!(
        store
            .replace(
                vec![cm("ns", "b", "1"), Arc::new(ConfigMap::default())],
                "9"
            )
            .is_err()
    );
    assert!(
        store
            .apply(vec![
                StoreOp::Delete(ObjectKey::new(Some("ns"), "a")),
                StoreOp::Upsert(Arc::new(ConfigMap::default()))
            ])
            .is_err()
    );
    assert_eq!(values(&store.list()), BTreeSet::from(["ns/a=1".to_owned()]));
    assert_eq!(store.resource_version(), None);
}

#[test]
fn add_indexers_indexes_stored_objects_and_rejects_conflicts() {
    let store = CompactStore::<ConfigMap>::new();
    store.add(cm("ns", "a", "x")).unwrap();
    store.add(cm("ns", "b", "y")).unwrap();
    store.add_indexers(value_index()).unwrap();
    assert_eq!(
        values(&store.by_index("value", "x").unwrap()),
        BTreeSet::from(["ns/a=x".to_owned()])
    );
    assert!(matches!(
        store.add_indexers(value_index()),
        Err(informer_core::IndexError::Conflict(_))
    ));
    assert!(matches!(
        store.by_index("nope", "x"),
        Err(informer_core::IndexError::UnknownIndex(_))
    ));
    assert_eq!(store.index_names(), [NAMESPACE_INDEX, "value"]);
}

#[test]
fn realistic_pods_take_a_fraction_of_their_json_size() {
    let pods: Vec<Pod> = PODS_JSONL
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let json_bytes: usize = PODS_JSONL.lines().map(str::len).sum();
    let store = CompactStore::<Pod>::with_key_fn(informer_core::resource_key::<Pod>, 0);
    for pod in &pods {
        store.add(Arc::new(pod.clone())).unwrap();
    }
    // The first pod is the dictionary; measure the others.
    let first = store.encode(&pods[0]).len();
    let per_pod = (store.stats().encoded_bytes - first) / (pods.len() - 1);
    for pod in &pods {
        let key = informer_core::resource_key(pod).unwrap();
        assert_eq!(*store.get(&key).unwrap(), *pod, "decoded exactly as stored");
    }
    // Read latency is measured in the benches (M1), not asserted here.
    println!(
        "compact store: {per_pod} encoded bytes per pod (JSON: {} bytes)",
        json_bytes / pods.len()
    );
    assert!(per_pod < 2048, "{per_pod} bytes per pod");
}

#[tokio::test]
async fn informer_runs_on_a_compact_store() {
    use crate::informer::{CancellationToken, SharedIndexInformer};
    use crate::test_support::eventually;
    use informer_core::Notification;
    use informer_testing::MemoryListerWatcher;
    use std::sync::Mutex;

    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create((*cm("default", "a", "1")).clone());
    source.create((*cm("default", "b", "1")).clone());
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .store(Arc::new(CompactStore::<ConfigMap>::new()))
        .build();
    let seen = Arc::new(Mutex::new(BTreeMap::<String, String>::new()));
    let s = seen.clone();
    informer.add_handler(
        move |n: &Notification<ConfigMap>| {
            let mut s = s.lock().unwrap();
            match n {
                Notification::Add { object: o, .. } | Notification::Update { new: o, .. } => {
                    s.insert(
                        o.metadata.name.clone().unwrap(),
                        o.data.as_ref().unwrap()["v"].clone(),
                    );
                }
                Notification::Delete(d) => {
                    let name = match d {
                        informer_core::Deleted::Object(o) => o.metadata.name.clone().unwrap(),
                        informer_core::Deleted::FinalStateUnknown { key, .. } => {
                            key.name().to_owned()
                        }
                    };
                    s.remove(&name);
                }
            }
        },
        None,
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    assert!(informer.wait_for_sync().await);
    source.update((*cm("default", "a", "2")).clone());
    source.delete(&ObjectKey::new(Some("default"), "b"));
    source.create((*cm("default", "c", "1")).clone());
    let expected = BTreeMap::from([
        ("a".to_owned(), "2".to_owned()),
        ("c".to_owned(), "1".to_owned()),
    ]);
    eventually("the handler saw every change", || {
        *seen.lock().unwrap() == expected
    })
    .await;
    assert_eq!(
        values(&informer.lister().list()),
        BTreeSet::from(["default/a=2".to_owned(), "default/c=1".to_owned()])
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[test]
fn a_large_write_is_encoded_in_parallel_and_reads_back_the_same() {
    let pods: Vec<Arc<Pod>> = (0..200)
        .map(|i| {
            let line = PODS_JSONL.lines().nth(i % 12).unwrap();
            let mut pod: Pod = serde_json::from_str(line).unwrap();
            pod.metadata.name = Some(format!("pod-{i}"));
            Arc::new(pod)
        })
        .collect();
    let store = CompactStore::<Pod>::with_key_fn(resource_key::<Pod>, 0);
    let replaced = store
        .apply(pods.iter().cloned().map(StoreOp::Upsert).collect())
        .unwrap();
    assert!(replaced.iter().all(Option::is_none));
    for pod in &pods {
        let key = ObjectKey::from_resource(&**pod).unwrap();
        assert_eq!(*store.get(&key).unwrap(), **pod);
    }
    // A relist of the same objects, encoded in parallel too, reports them updated.
    let diff = store.replace(pods.clone(), "9").unwrap();
    assert_eq!(diff.updated.len(), 200);
}

#[test]
fn a_batch_returns_the_objects_it_replaces_decoded_ahead_and_in_order() {
    // Twenty cold objects replaced in one batch are decoded before the lock, in parallel;
    // a key written twice in the batch gets its first write back, not the prefetched one.
    let store = CompactStore::<ConfigMap>::with_key_fn(resource_key::<ConfigMap>, 0);
    let first: Vec<StoreOp<ConfigMap>> = (0..20)
        .map(|i| StoreOp::Upsert(cm("ns", &format!("c{i}"), "old")))
        .collect();
    store.apply(first).unwrap();
    let decodes = store.stats().decodes;
    let mut batch: Vec<StoreOp<ConfigMap>> = (0..20)
        .map(|i| StoreOp::Upsert(cm("ns", &format!("c{i}"), "new")))
        .collect();
    batch.push(StoreOp::Upsert(cm("ns", "c3", "newer")));
    batch.push(StoreOp::Delete(ObjectKey::new(Some("ns"), "c4")));
    let replaced = store.apply(batch).unwrap();
    let olds: Vec<Option<String>> = replaced
        .iter()
        .map(|old| opt_value(old).and_then(|c| c.data?.get("v").cloned()))
        .collect();
    let mut expected = vec![Some("old".to_string()); 20];
    expected.push(Some("new".into()));
    expected.push(Some("new".into()));
    assert_eq!(olds, expected);
    assert_eq!(
        store.stats().decodes - decodes,
        22,
        "each replaced object decoded once (the hot cache is off)"
    );
    let c3 = store.get(&ObjectKey::new(Some("ns"), "c3")).unwrap();
    assert_eq!(c3.data.as_ref().unwrap()["v"], "newer");
    assert!(store.get(&ObjectKey::new(Some("ns"), "c4")).is_none());
}

#[test]
fn a_read_decodes_vectors_at_their_final_size() {
    let store = CompactStore::<Pod>::with_key_fn(resource_key::<Pod>, 0);
    let pod: Pod = serde_json::from_str(PODS_JSONL.lines().next().unwrap()).unwrap();
    let key = ObjectKey::from_resource(&pod).unwrap();
    store.add(Arc::new(pod)).unwrap();
    let read = store.get(&key).unwrap();
    let containers = &read.spec.as_ref().unwrap().containers;
    assert_eq!(containers.len(), containers.capacity());
}

#[test]
fn the_compact_store_passes_the_store_conformance_check() {
    informer_core::conformance::check_store(CompactStore::<ConfigMap>::new);
    // Every read a decode: no hot objects.
    informer_core::conformance::check_store(|| {
        CompactStore::<ConfigMap>::with_key_fn(informer_core::resource_key::<ConfigMap>, 0)
    });
}
