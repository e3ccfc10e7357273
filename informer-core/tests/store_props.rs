//! Property tests of `ThreadSafeStore` against a simple model: a `BTreeMap` of objects whose
//! indexes are recomputed from scratch. After every operation of a random sequence, every
//! observable of the store (the operation's result, `get`, `list`, `list_keys`, `len`,
//! `by_index`, `index_keys`, `list_index_values`, `index`, `index_names`,
//! `resource_version`) must equal the model's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use informer_core::store::{
    Indexer, Indexers, NAMESPACE_INDEX, ReplaceDiff, Store, StoreOp, ThreadSafeStore, index_fn,
};
use informer_core::{IndexError, KeyError, ObjectKey, StoreError};
use proptest::prelude::*;

// ---------- the test object: no Kubernetes type, a custom key function ----------

#[derive(Debug, Clone)]
struct Obj {
    /// 0 is cluster scoped.
    ns: u8,
    /// `None` has no key.
    name: Option<u8>,
    color: u8,
    /// May hold duplicates, may be empty.
    tags: Vec<u8>,
    generation: u8,
}

const NAMESPACES: u8 = 3;
const NAMES: u8 = 5;

fn namespace(ns: u8) -> String {
    if ns == 0 {
        String::new()
    } else {
        format!("ns{ns}")
    }
}

fn obj_key(obj: &Obj) -> Result<ObjectKey, KeyError> {
    let name = obj.name.ok_or(KeyError::MissingName { kind: "Obj" })?;
    Ok(ObjectKey::new(
        Some(&namespace(obj.ns)),
        &format!("o{name}"),
    ))
}

/// The index functions a test may register, by name.
const CATALOGUE: [&str; 3] = ["color", "tags", "parity"];

fn catalogue_fn(name: &str, obj: &Obj) -> Vec<String> {
    match name {
        "color" => vec![format!("c{}", obj.color)],
        "tags" => obj.tags.iter().map(|t| format!("t{t}")).collect(),
        "parity" if obj.generation.is_multiple_of(2) => vec!["even".to_owned()],
        _ => Vec::new(),
    }
}

fn catalogue_indexers(names: &[&'static str]) -> Indexers<Obj> {
    names
        .iter()
        .map(|&name| {
            (
                name.to_owned(),
                index_fn(move |obj: &Obj| catalogue_fn(name, obj)),
            )
        })
        .collect()
}

/// Every value any index can hold, plus one no index holds.
fn value_space() -> Vec<String> {
    let mut values: Vec<String> = (0..NAMESPACES).map(namespace).collect();
    values.extend((0..3).map(|c| format!("c{c}")));
    values.extend((0..4).map(|t| format!("t{t}")));
    values.push("even".into());
    values.push("nope".into());
    values
}

fn key_space() -> Vec<ObjectKey> {
    (0..NAMESPACES)
        .flat_map(|ns| {
            (0..NAMES).map(move |n| ObjectKey::new(Some(&namespace(ns)), &format!("o{n}")))
        })
        .collect()
}

// ---------- the model ----------

#[derive(Default)]
struct Model {
    objects: BTreeMap<ObjectKey, Arc<Obj>>,
    /// User indexes in registration order.
    indexes: Vec<&'static str>,
    resource_version: Option<String>,
}

impl Model {
    fn index_names(&self) -> Vec<String> {
        std::iter::once(NAMESPACE_INDEX)
            .chain(self.indexes.iter().copied())
            .map(str::to_owned)
            .collect()
    }

    fn values(&self, index: &str, obj: &Obj) -> BTreeSet<String> {
        if index == NAMESPACE_INDEX {
            return obj_key(obj)
                .map(|k| k.namespace().unwrap_or("").to_owned())
                .into_iter()
                .collect();
        }
        catalogue_fn(index, obj).into_iter().collect()
    }

    fn has_index(&self, index: &str) -> bool {
        index == NAMESPACE_INDEX || self.indexes.contains(&index)
    }

    fn by_index(&self, index: &str, value: &str) -> BTreeMap<ObjectKey, Arc<Obj>> {
        self.objects
            .iter()
            .filter(|(_, o)| self.values(index, o).contains(value))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect()
    }

    fn index_values(&self, index: &str) -> BTreeSet<String> {
        self.objects
            .values()
            .flat_map(|o| self.values(index, o))
            .collect()
    }

    fn index(&self, index: &str, probe: &Obj) -> BTreeMap<ObjectKey, Arc<Obj>> {
        let wanted = self.values(index, probe);
        self.objects
            .iter()
            .filter(|(_, o)| !self.values(index, o).is_disjoint(&wanted))
            .map(|(k, o)| (k.clone(), o.clone()))
            .collect()
    }
}

// ---------- operations ----------

#[derive(Debug, Clone)]
enum BatchOp {
    Upsert(Obj),
    Delete(u8, u8),
}

#[derive(Debug, Clone)]
enum Op {
    Add(Obj),
    Update(Obj),
    Delete(u8, u8),
    Replace(Vec<Obj>, u8),
    Apply(Vec<BatchOp>),
    /// Indexes of `CATALOGUE`, or `CATALOGUE.len()` for the namespace index (a clash).
    AddIndexers(Vec<usize>),
    SetResourceVersion(u8),
}

fn obj_strategy() -> impl Strategy<Value = Obj> {
    (
        0..NAMESPACES,
        prop::option::weighted(0.95, 0..NAMES),
        0..3u8,
        prop::collection::vec(0..4u8, 0..4),
        any::<u8>(),
    )
        .prop_map(|(ns, name, color, tags, generation)| Obj {
            ns,
            name,
            color,
            tags,
            generation,
        })
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => obj_strategy().prop_map(Op::Add),
        2 => obj_strategy().prop_map(Op::Update),
        3 => (0..NAMESPACES, 0..NAMES).prop_map(|(ns, n)| Op::Delete(ns, n)),
        1 => (prop::collection::vec(obj_strategy(), 0..10), any::<u8>())
            .prop_map(|(objs, rv)| Op::Replace(objs, rv)),
        2 => prop::collection::vec(
            prop_oneof![
                3 => obj_strategy().prop_map(BatchOp::Upsert),
                1 => (0..NAMESPACES, 0..NAMES).prop_map(|(ns, n)| BatchOp::Delete(ns, n)),
            ],
            0..6,
        )
        .prop_map(Op::Apply),
        1 => prop::collection::vec(0..=CATALOGUE.len(), 0..3).prop_map(Op::AddIndexers),
        1 => any::<u8>().prop_map(Op::SetResourceVersion),
    ]
}

fn key_of(ns: u8, name: u8) -> ObjectKey {
    ObjectKey::new(Some(&namespace(ns)), &format!("o{name}"))
}

fn same(a: &Option<Arc<Obj>>, b: &Option<Arc<Obj>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// Keys the objects and checks they are the model's very `Arc`s.
fn assert_same_objects(
    what: &str,
    got: Vec<Arc<Obj>>,
    expected: &BTreeMap<ObjectKey, Arc<Obj>>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), expected.len(), "{}: count", what);
    let got: BTreeMap<ObjectKey, Arc<Obj>> = got
        .into_iter()
        .map(|o| (obj_key(&o).expect("stored objects have keys"), o))
        .collect();
    prop_assert_eq!(got.len(), expected.len(), "{}: each object once", what);
    for (k, o) in expected {
        let g = got.get(k);
        prop_assert!(
            g.is_some_and(|g| Arc::ptr_eq(g, o)),
            "{}: {} differs",
            what,
            k
        );
    }
    Ok(())
}

// ---------- applying an op to both ----------

fn run_op(store: &ThreadSafeStore<Obj>, model: &mut Model, op: Op) -> Result<(), TestCaseError> {
    match op {
        Op::Add(obj) | Op::Update(obj) => {
            let obj = Arc::new(obj);
            let got = store.add(obj.clone());
            match obj_key(&obj) {
                Err(e) => prop_assert_eq!(got.unwrap_err(), StoreError::Key(e)),
                Ok(k) => {
                    let prev = model.objects.insert(k, obj);
                    prop_assert!(
                        same(&got.unwrap(), &prev),
                        "add returns the replaced object"
                    );
                }
            }
        }
        Op::Delete(ns, n) => {
            let k = key_of(ns, n);
            let got = store.delete(&k);
            let prev = model.objects.remove(&k);
            prop_assert!(same(&got, &prev), "delete returns the removed object");
        }
        Op::Replace(objs, rv) => {
            let objs: Vec<Arc<Obj>> = objs.into_iter().map(Arc::new).collect();
            let got = store.replace(objs.clone(), &rv.to_string());
            let keys: Result<Vec<ObjectKey>, KeyError> = objs.iter().map(|o| obj_key(o)).collect();
            match keys {
                Err(e) => prop_assert_eq!(got.unwrap_err(), StoreError::Key(e)),
                Ok(keys) => {
                    let new: BTreeMap<ObjectKey, Arc<Obj>> = keys.into_iter().zip(objs).collect();
                    check_diff(got.unwrap(), &model.objects, &new)?;
                    model.objects = new;
                    model.resource_version = Some(rv.to_string());
                }
            }
        }
        Op::Apply(batch) => {
            let ops: Vec<StoreOp<Obj>> = batch
                .into_iter()
                .map(|op| match op {
                    BatchOp::Upsert(obj) => StoreOp::Upsert(Arc::new(obj)),
                    BatchOp::Delete(ns, n) => StoreOp::Delete(key_of(ns, n)),
                })
                .collect();
            let first_error = ops.iter().find_map(|op| match op {
                StoreOp::Upsert(obj) => obj_key(obj).err(),
                StoreOp::Delete(_) => None,
            });
            let model_ops: Vec<(ObjectKey, Option<Arc<Obj>>)> = ops
                .iter()
                .filter_map(|op| match op {
                    StoreOp::Upsert(obj) => obj_key(obj).ok().map(|k| (k, Some(obj.clone()))),
                    StoreOp::Delete(k) => Some((k.clone(), None)),
                })
                .collect();
            let got = store.apply(ops);
            match first_error {
                Some(e) => prop_assert_eq!(got.unwrap_err(), StoreError::Key(e)),
                None => {
                    let got = got.unwrap();
                    prop_assert_eq!(got.len(), model_ops.len());
                    for ((k, obj), got) in model_ops.into_iter().zip(got) {
                        let prev = match obj {
                            Some(obj) => model.objects.insert(k, obj),
                            None => model.objects.remove(&k),
                        };
                        prop_assert!(same(&got, &prev), "apply returns each previous object");
                    }
                }
            }
        }
        Op::AddIndexers(ids) => {
            let names: BTreeSet<&'static str> = ids
                .into_iter()
                .map(|i| CATALOGUE.get(i).copied().unwrap_or(NAMESPACE_INDEX))
                .collect();
            let names: Vec<&'static str> = names.into_iter().collect();
            let got = store.add_indexers(catalogue_indexers(&names));
            match names.iter().find(|n| model.has_index(n)) {
                // `names` is sorted, so this is the smallest clashing name.
                Some(clash) => prop_assert_eq!(got, Err(IndexError::Conflict((*clash).to_owned()))),
                None => {
                    prop_assert_eq!(got, Ok(()));
                    model.indexes.extend(names);
                }
            }
        }
        Op::SetResourceVersion(rv) => {
            store.set_resource_version(&rv.to_string());
            model.resource_version = Some(rv.to_string());
        }
    }
    Ok(())
}

fn check_diff(
    diff: ReplaceDiff<Obj>,
    old: &BTreeMap<ObjectKey, Arc<Obj>>,
    new: &BTreeMap<ObjectKey, Arc<Obj>>,
) -> Result<(), TestCaseError> {
    let added: BTreeMap<ObjectKey, Arc<Obj>> = new
        .iter()
        .filter(|(k, _)| !old.contains_key(*k))
        .map(|(k, o)| (k.clone(), o.clone()))
        .collect();
    assert_same_objects("replace: added", diff.added, &added)?;
    let updated_new: BTreeMap<ObjectKey, Arc<Obj>> = new
        .iter()
        .filter(|(k, _)| old.contains_key(*k))
        .map(|(k, o)| (k.clone(), o.clone()))
        .collect();
    let updated_old: BTreeMap<ObjectKey, Arc<Obj>> = updated_new
        .keys()
        .map(|k| (k.clone(), old[k].clone()))
        .collect();
    let (got_old, got_new): (Vec<_>, Vec<_>) = diff.updated.into_iter().unzip();
    assert_same_objects("replace: updated (old)", got_old, &updated_old)?;
    assert_same_objects("replace: updated (new)", got_new, &updated_new)?;
    let deleted: BTreeMap<ObjectKey, Arc<Obj>> = old
        .iter()
        .filter(|(k, _)| !new.contains_key(*k))
        .map(|(k, o)| (k.clone(), o.clone()))
        .collect();
    for (k, o) in &diff.deleted {
        prop_assert_eq!(&obj_key(o).unwrap(), k, "deleted key matches its object");
    }
    let got_deleted = diff.deleted.into_iter().map(|(_, o)| o).collect();
    assert_same_objects("replace: deleted", got_deleted, &deleted)
}

// ---------- comparing every observable ----------

fn check_observables(
    store: &ThreadSafeStore<Obj>,
    model: &Model,
    probe: &Obj,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(store.len(), model.objects.len());
    prop_assert_eq!(store.is_empty(), model.objects.is_empty());
    for k in key_space() {
        prop_assert!(
            same(&store.get(&k), &model.objects.get(&k).cloned()),
            "get {}",
            k
        );
    }
    assert_same_objects("list", store.list(), &model.objects)?;
    let mut keys = store.list_keys();
    keys.sort();
    prop_assert_eq!(keys, model.objects.keys().cloned().collect::<Vec<_>>());
    prop_assert_eq!(store.index_names(), model.index_names());
    prop_assert_eq!(store.resource_version(), model.resource_version.clone());

    for index in model.index_names() {
        let mut values = store.list_index_values(&index).unwrap();
        values.sort();
        let expected: Vec<String> = model.index_values(&index).into_iter().collect();
        prop_assert_eq!(&values, &expected, "list_index_values {}", index);
        for value in value_space() {
            let what = format!("by_index({index}, {value:?})");
            let expected = model.by_index(&index, &value);
            assert_same_objects(&what, store.by_index(&index, &value).unwrap(), &expected)?;
            let mut keys = store.index_keys(&index, &value).unwrap();
            keys.sort();
            prop_assert_eq!(
                keys,
                expected.keys().cloned().collect::<Vec<_>>(),
                "index_keys"
            );
        }
        let what = format!("index({index}, probe)");
        assert_same_objects(
            &what,
            store.index(&index, probe).unwrap(),
            &model.index(&index, probe),
        )?;
    }
    for index in CATALOGUE.iter().copied().chain(["bogus"]) {
        if model.has_index(index) {
            continue;
        }
        let unknown = IndexError::UnknownIndex(index.to_owned());
        prop_assert_eq!(store.by_index(index, "c0").unwrap_err(), unknown.clone());
        prop_assert_eq!(store.index_keys(index, "c0").unwrap_err(), unknown.clone());
        prop_assert_eq!(store.list_index_values(index).unwrap_err(), unknown.clone());
        prop_assert_eq!(store.index(index, probe).unwrap_err(), unknown);
    }
    Ok(())
}

proptest! {
    #[test]
    fn store_matches_the_model(
        initial_indexes in prop::collection::vec(0..CATALOGUE.len(), 0..3),
        steps in prop::collection::vec((op_strategy(), obj_strategy()), 1..40),
    ) {
        // Start with some indexes (or none), so that both registration paths are covered:
        // before any object and over existing objects (an `AddIndexers` step).
        let store = ThreadSafeStore::with_key_fn(obj_key);
        let mut model = Model::default();
        run_op(&store, &mut model, Op::AddIndexers(initial_indexes))?;
        check_observables(&store, &model, &steps[0].1)?;
        for (op, probe) in steps {
            run_op(&store, &mut model, op)?;
            check_observables(&store, &model, &probe)?;
        }
    }
}

// ---------- a few of the same checks with Kubernetes pods ----------

mod pods {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodSpec};

    fn node_of(pod: &Pod) -> Vec<String> {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .into_iter()
            .collect()
    }

    fn pod(ns: Option<u8>, name: u8, node: Option<u8>) -> Arc<Pod> {
        let mut pod = Pod::default();
        pod.metadata.name = Some(format!("p{name}"));
        pod.metadata.namespace = ns.map(|n| format!("ns{n}"));
        pod.spec = Some(PodSpec {
            node_name: node.map(|n| format!("node{n}")),
            ..PodSpec::default()
        });
        Arc::new(pod)
    }

    proptest! {
        #[test]
        fn pod_store_indexes_by_node_and_namespace(
            writes in prop::collection::vec(
                (prop::option::of(0..3u8), 0..8u8, prop::option::of(0..3u8), any::<bool>()),
                1..60,
            ),
        ) {
            let store = ThreadSafeStore::<Pod>::new()
                .with_indexers([("node".to_owned(), index_fn(node_of))].into())
                .unwrap();
            let mut model: BTreeMap<ObjectKey, Arc<Pod>> = BTreeMap::new();
            for (ns, name, node, delete) in writes {
                let p = pod(ns, name, node);
                let k = ObjectKey::from_resource(&*p).unwrap();
                if delete {
                    prop_assert!(same_pod(&store.delete(&k), &model.remove(&k)));
                } else {
                    prop_assert!(same_pod(&store.add(p.clone()).unwrap(), &model.insert(k, p)));
                }
                for n in 0..3 {
                    let node = format!("node{n}");
                    let expected: Vec<ObjectKey> = model
                        .iter()
                        .filter(|(_, p)| node_of(p) == [node.clone()])
                        .map(|(k, _)| k.clone())
                        .collect();
                    let mut got = store.index_keys("node", &node).unwrap();
                    got.sort();
                    prop_assert_eq!(got, expected);
                }
                for ns in ["", "ns0", "ns1", "ns2"] {
                    let expected: Vec<ObjectKey> = model
                        .keys()
                        .filter(|k| k.namespace().unwrap_or("") == ns)
                        .cloned()
                        .collect();
                    let mut got: Vec<ObjectKey> = store
                        .by_index(NAMESPACE_INDEX, ns)
                        .unwrap()
                        .iter()
                        .map(|p| ObjectKey::from_resource(&**p).unwrap())
                        .collect();
                    got.sort();
                    prop_assert_eq!(got, expected);
                }
                prop_assert_eq!(store.len(), model.len());
            }
        }
    }

    fn same_pod(a: &Option<Arc<Pod>>, b: &Option<Arc<Pod>>) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
