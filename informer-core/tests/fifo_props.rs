//! Property tests of the two FIFOs: random sequences of operations on a small key space,
//! checked step by step against a simple model of each FIFO, and end to end: applying
//! everything popped to a store gives the state that applying the operations directly gives.
//!
//! Some pops run operations *inside* `process`, before the popped batch is applied to the
//! store, which is the window in which the FIFO must not trust the (stale) store.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use futures::FutureExt;
use informer_core::fifo::{Delta, DeltaFifo, Fifo, RealFifo};
use informer_core::store::{ReplaceDiff, Store, StoreOp};
use informer_core::{Deleted, KeyError, ObjectKey, StoreError};
use parking_lot::Mutex;
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// Test objects and a known-objects store

#[derive(Debug)]
struct Obj {
    name: String,
    v: u32,
}

fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    Ok(ObjectKey::new(Some("ns"), &o.name))
}

fn name(k: u8) -> String {
    format!("k{k}")
}

fn obj(k: u8, v: u32) -> Arc<Obj> {
    Arc::new(Obj { name: name(k), v })
}

/// The consumer's cache and the FIFO's known objects: ordered, so `list_keys` is sorted by
/// name and the models can predict the order of tombstones and syncs.
#[derive(Default)]
struct MapStore {
    map: Mutex<BTreeMap<ObjectKey, Arc<Obj>>>,
}

impl MapStore {
    fn snapshot(&self) -> BTreeMap<String, u32> {
        let map = self.map.lock();
        map.values().map(|o| (o.name.clone(), o.v)).collect()
    }
}

impl Store<Obj> for MapStore {
    fn add(&self, obj: Arc<Obj>) -> Result<Option<Arc<Obj>>, StoreError> {
        let key = obj_key(&obj)?;
        Ok(self.map.lock().insert(key, obj))
    }
    fn key_of(&self, obj: &Obj) -> Result<ObjectKey, KeyError> {
        obj_key(obj)
    }
    fn delete(&self, key: &ObjectKey) -> Option<Arc<Obj>> {
        self.map.lock().remove(key)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Obj>> {
        self.map.lock().get(key).cloned()
    }
    fn list(&self) -> Vec<Arc<Obj>> {
        self.map.lock().values().cloned().collect()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.map.lock().keys().cloned().collect()
    }
    fn len(&self) -> usize {
        self.map.lock().len()
    }
    fn replace(&self, objects: Vec<Arc<Obj>>, _rv: &str) -> Result<ReplaceDiff<Obj>, StoreError> {
        let mut new = BTreeMap::new();
        for o in objects {
            new.insert(obj_key(&o)?, o);
        }
        *self.map.lock() = new;
        Ok(ReplaceDiff::default())
    }
    fn resource_version(&self) -> Option<String> {
        None
    }
    fn set_resource_version(&self, _rv: &str) {}
    fn apply(&self, batch: Vec<StoreOp<Obj>>) -> Result<Vec<Option<Arc<Obj>>>, StoreError> {
        let mut map = self.map.lock();
        let mut out = Vec::new();
        for op in batch {
            out.push(match op {
                StoreOp::Upsert(o) => map.insert(obj_key(&o)?, o),
                StoreOp::Delete(k) => map.remove(&k),
            });
        }
        Ok(out)
    }
}

/// What a consumer does with a popped batch: apply it to its store, in order.
fn apply(store: &MapStore, batch: &[Delta<Obj>]) {
    for delta in batch {
        match delta {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                store.add(o.clone()).unwrap();
            }
            Delta::Deleted(Deleted::Object(o)) => {
                store.delete(&obj_key(o).unwrap());
            }
            Delta::Deleted(Deleted::FinalStateUnknown { key, .. }) => {
                store.delete(key);
            }
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => {
                store.replace(objects.clone(), resource_version).unwrap();
            }
            Delta::Bookmark { .. } => {}
            Delta::ListPart(_) | Delta::ListEnd { .. } => {
                unreachable!("these properties never list in parts")
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Events as plain values

type O = (String, u32);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Added(O),
    Updated(O),
    Deleted(O),
    Gone(String, Option<O>),
    Replaced(O),
    Sync(O),
    ReplacedAll(Vec<O>, String),
    Bookmark(String),
}

impl Ev {
    fn of(delta: &Delta<Obj>) -> Ev {
        let o = |o: &Arc<Obj>| (o.name.clone(), o.v);
        match delta {
            Delta::Added(x) => Ev::Added(o(x)),
            Delta::Updated(x) => Ev::Updated(o(x)),
            Delta::Replaced(x) => Ev::Replaced(o(x)),
            Delta::Sync(x) => Ev::Sync(o(x)),
            Delta::Deleted(Deleted::Object(x)) => Ev::Deleted(o(x)),
            Delta::Deleted(Deleted::FinalStateUnknown { key, last_known }) => {
                Ev::Gone(key.name().to_owned(), last_known.as_ref().map(o))
            }
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => Ev::ReplacedAll(objects.iter().map(o).collect(), resource_version.clone()),
            Delta::Bookmark { resource_version } => Ev::Bookmark(resource_version.clone()),
            Delta::ListPart(_) | Delta::ListEnd { .. } => {
                unreachable!("these properties never list in parts")
            }
        }
    }

    fn is_delete(&self) -> bool {
        matches!(self, Ev::Deleted(_) | Ev::Gone(..))
    }

    /// The object the store holds after this event, `None` if it removes the object.
    fn state_after(&self) -> Option<O> {
        match self {
            Ev::Added(o) | Ev::Updated(o) | Ev::Replaced(o) | Ev::Sync(o) => Some(o.clone()),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Operations

#[derive(Debug, Clone)]
enum Op {
    Add(u8, u32),
    Update(u8, u32),
    Delete(u8, u32),
    Replace(BTreeMap<u8, u32>),
    Resync,
    Bookmark(u32),
    /// Pop up to this many batches (fewer if the FIFO runs empty).
    Pop(usize),
    /// Pop one batch and run these operations inside `process`, before applying the batch.
    PopDuring(Vec<Op>),
}

const KEYS: u8 = 5;

fn push_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..KEYS, 0..1000u32).prop_map(|(k, v)| Op::Add(k, v)),
        4 => (0..KEYS, 0..1000u32).prop_map(|(k, v)| Op::Update(k, v)),
        3 => (0..KEYS, 0..1000u32).prop_map(|(k, v)| Op::Delete(k, v)),
        1 => prop::collection::btree_map(0..KEYS, 0..1000u32, 0..=KEYS as usize).prop_map(Op::Replace),
        1 => Just(Op::Resync),
        1 => (0..1000u32).prop_map(Op::Bookmark),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => push_op(),
        3 => (1..4usize).prop_map(Op::Pop),
        2 => prop::collection::vec(push_op(), 1..4).prop_map(Op::PopDuring),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..40)
}

fn initial_store() -> impl Strategy<Value = BTreeMap<u8, u32>> {
    prop::collection::btree_map(0..KEYS, 0..1000u32, 0..=KEYS as usize)
}

// ---------------------------------------------------------------------------------------
// Models

/// A model of a FIFO: what it holds and what it hands out, given the consumer's store.
trait Model: Send {
    fn add(&mut self, ev: Ev, name: String);
    fn delete(&mut self, o: O, store: &BTreeMap<String, u32>);
    fn replace(&mut self, list: Vec<O>, rv: String, store: &BTreeMap<String, u32>);
    fn resync(&mut self, store: &BTreeMap<String, u32>);
    fn bookmark(&mut self, rv: String);
    /// The next batch and how many of its items are initial; `None` if empty.
    fn pop(&mut self) -> Option<(Vec<Ev>, usize)>;
    /// The batch's `process` returned.
    fn finish(&mut self, initial: usize);
    fn len(&self) -> usize;
    fn has_synced(&self) -> bool;
}

/// client-go's populated / initialPopulationCount, counted when processed.
#[derive(Default)]
struct Synced {
    populated: bool,
    unpopped: usize,
    unprocessed: usize,
}

impl Synced {
    /// An add, update or delete: populated, with no initial population if it is the first.
    fn populate_by_event(&mut self) {
        self.populated = true;
    }
    /// A replace: if it is the first, the initial population is the `len` items queued.
    fn populate(&mut self, len: usize) {
        if !self.populated {
            self.populated = true;
            self.unpopped = len;
            self.unprocessed = len;
        }
    }
    fn popped(&mut self, n: usize) -> usize {
        let initial = n.min(self.unpopped);
        self.unpopped -= initial;
        initial
    }
    fn has_synced(&self) -> bool {
        self.populated && self.unprocessed == 0
    }
}

/// DeltaFifo: a list of keys in first-queued order, each with its events.
struct DeltaModel {
    with_known: bool,
    keys: Vec<(String, Vec<Ev>)>,
    in_flight: Option<(String, Option<O>)>,
    synced: Synced,
}

impl DeltaModel {
    fn new(with_known: bool) -> Self {
        Self {
            with_known,
            keys: Vec::new(),
            in_flight: None,
            synced: Synced::default(),
        }
    }

    fn queued(&self, name: &str) -> Option<&Vec<Ev>> {
        self.keys
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, evs)| evs)
    }

    fn queue(&mut self, name: &str, ev: Ev) {
        match self.keys.iter_mut().find(|(k, _)| k == name) {
            Some((_, evs)) => {
                let last = evs.last_mut().expect("never empty");
                if ev.is_delete() && last.is_delete() {
                    if matches!(last, Ev::Gone(..)) {
                        *last = ev;
                    }
                } else {
                    evs.push(ev);
                }
            }
            None => self.keys.push((name.to_owned(), vec![ev])),
        }
    }

    fn in_flight_is(&self, name: &str) -> bool {
        self.in_flight.as_ref().is_some_and(|(k, _)| k == name)
    }
}

impl Model for DeltaModel {
    fn add(&mut self, ev: Ev, name: String) {
        self.queue(&name, ev);
        self.synced.populate_by_event();
    }

    fn delete(&mut self, o: O, store: &BTreeMap<String, u32>) {
        let name = o.0.clone();
        let known = self.with_known
            && match &self.in_flight {
                Some((k, after)) if *k == name => after.is_some(),
                _ => store.contains_key(&name),
            };
        if self.queued(&name).is_some() || known {
            self.queue(&name, Ev::Deleted(o));
        }
        self.synced.populate_by_event();
    }

    fn replace(&mut self, list: Vec<O>, _rv: String, store: &BTreeMap<String, u32>) {
        let listed: HashSet<String> = list.iter().map(|(n, _)| n.clone()).collect();
        for o in list {
            let n = o.0.clone();
            self.queue(&n, Ev::Replaced(o));
        }
        for (k, evs) in self.keys.iter_mut() {
            let last = evs.last().expect("never empty").clone();
            if !listed.contains(k) && !last.is_delete() {
                evs.push(Ev::Gone(k.clone(), last.state_after()));
            }
        }
        if let Some((k, Some(o))) = self.in_flight.clone()
            && !listed.contains(&k)
            && self.queued(&k).is_none()
        {
            self.queue(&k, Ev::Gone(k.clone(), Some(o)));
        }
        if self.with_known {
            for (k, v) in store {
                if listed.contains(k) || self.queued(k).is_some() || self.in_flight_is(k) {
                    continue;
                }
                self.queue(k, Ev::Gone(k.clone(), Some((k.clone(), *v))));
            }
        }
        self.synced.populate(self.keys.len());
    }

    fn resync(&mut self, store: &BTreeMap<String, u32>) {
        if !self.with_known {
            return;
        }
        if let Some((k, Some(o))) = self.in_flight.clone()
            && self.queued(&k).is_none()
        {
            self.queue(&k, Ev::Sync(o));
        }
        for (k, v) in store {
            if self.queued(k).is_some() || self.in_flight_is(k) {
                continue;
            }
            self.queue(k, Ev::Sync((k.clone(), *v)));
        }
    }

    fn bookmark(&mut self, _rv: String) {}

    fn pop(&mut self) -> Option<(Vec<Ev>, usize)> {
        if self.keys.is_empty() {
            return None;
        }
        let (k, evs) = self.keys.remove(0);
        let initial = self.synced.popped(1);
        self.in_flight = Some((k, evs.last().and_then(Ev::state_after)));
        Some((evs, initial))
    }

    fn finish(&mut self, initial: usize) {
        self.in_flight = None;
        self.synced.unprocessed -= initial;
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn has_synced(&self) -> bool {
        self.synced.has_synced()
    }
}

/// RealFifo: a plain list of events, batched by the documented rules.
struct RealModel {
    with_known: bool,
    batch_size: usize,
    items: VecDeque<(Option<String>, Ev)>,
    in_flight_keys: HashSet<String>,
    in_flight_replace: bool,
    synced: Synced,
}

impl RealModel {
    fn new(with_known: bool, batch_size: usize) -> Self {
        Self {
            with_known,
            batch_size,
            items: VecDeque::new(),
            in_flight_keys: HashSet::new(),
            in_flight_replace: false,
            synced: Synced::default(),
        }
    }
}

impl Model for RealModel {
    fn add(&mut self, ev: Ev, name: String) {
        self.items.push_back((Some(name), ev));
        self.synced.populate_by_event();
    }

    fn delete(&mut self, o: O, _store: &BTreeMap<String, u32>) {
        let name = o.0.clone();
        self.add(Ev::Deleted(o), name);
    }

    fn replace(&mut self, list: Vec<O>, rv: String, _store: &BTreeMap<String, u32>) {
        self.items.push_back((None, Ev::ReplacedAll(list, rv)));
        self.synced.populate(self.items.len());
    }

    fn resync(&mut self, store: &BTreeMap<String, u32>) {
        let replace_pending = self.in_flight_replace
            || self
                .items
                .iter()
                .any(|(_, ev)| matches!(ev, Ev::ReplacedAll(..)));
        if !self.with_known || replace_pending {
            return;
        }
        for (k, v) in store {
            let queued = self.items.iter().any(|(key, _)| key.as_ref() == Some(k));
            if queued || self.in_flight_keys.contains(k) {
                continue;
            }
            self.items
                .push_back((Some(k.clone()), Ev::Sync((k.clone(), *v))));
        }
    }

    fn bookmark(&mut self, rv: String) {
        self.items.push_back((None, Ev::Bookmark(rv)));
    }

    fn pop(&mut self) -> Option<(Vec<Ev>, usize)> {
        if self.items.is_empty() {
            return None;
        }
        let mut limit = self.batch_size;
        if self.synced.unpopped > 0 {
            limit = limit.min(self.synced.unpopped);
        }
        let mut keys = HashSet::new();
        let mut n = 0;
        for (key, ev) in &self.items {
            if n == limit {
                break;
            }
            match (key, ev) {
                (_, Ev::ReplacedAll(..)) => {
                    if n == 0 {
                        n = 1;
                    }
                    break;
                }
                (_, Ev::Bookmark(_)) => {
                    n += 1;
                    break;
                }
                (Some(k), _) => {
                    if !keys.insert(k.clone()) {
                        break;
                    }
                    n += 1;
                }
                (None, _) => unreachable!("keyed events have keys"),
            }
        }
        let batch: Vec<(Option<String>, Ev)> = self.items.drain(..n).collect();
        self.in_flight_keys = batch.iter().filter_map(|(k, _)| k.clone()).collect();
        self.in_flight_replace = matches!(batch[0].1, Ev::ReplacedAll(..));
        Some((
            batch.into_iter().map(|(_, ev)| ev).collect(),
            self.synced.popped(n),
        ))
    }

    fn finish(&mut self, initial: usize) {
        self.in_flight_keys.clear();
        self.in_flight_replace = false;
        self.synced.unprocessed -= initial;
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn has_synced(&self) -> bool {
        self.synced.has_synced()
    }
}

// ---------------------------------------------------------------------------------------
// The harness

struct Run<'a> {
    fifo: &'a dyn Fifo<Obj>,
    store: &'a MapStore,
    model: Box<dyn Model + 'a>,
    /// The ops applied directly to a map: what the store must end up as.
    direct: BTreeMap<String, u32>,
}

impl Run<'_> {
    fn push(&mut self, op: &Op) {
        let store = self.store.snapshot();
        match op {
            Op::Add(k, v) | Op::Update(k, v) => {
                let (result, ev) = if matches!(op, Op::Add(..)) {
                    (self.fifo.add(obj(*k, *v)), Ev::Added((name(*k), *v)))
                } else {
                    (self.fifo.update(obj(*k, *v)), Ev::Updated((name(*k), *v)))
                };
                result.unwrap();
                self.model.add(ev, name(*k));
                self.direct.insert(name(*k), *v);
            }
            Op::Delete(k, v) => {
                self.fifo.delete(obj(*k, *v)).unwrap();
                self.model.delete((name(*k), *v), &store);
                self.direct.remove(&name(*k));
            }
            Op::Replace(list) => {
                let objs = list.iter().map(|(k, v)| obj(*k, *v)).collect();
                self.fifo.replace(objs, "rv".into()).unwrap();
                let list: Vec<O> = list.iter().map(|(k, v)| (name(*k), *v)).collect();
                self.direct = list.iter().cloned().collect();
                self.model.replace(list, "rv".into(), &store);
            }
            Op::Resync => {
                self.fifo.resync().unwrap();
                self.model.resync(&store);
            }
            Op::Bookmark(rv) => {
                self.fifo.bookmark(rv.to_string()).unwrap();
                self.model.bookmark(rv.to_string());
            }
            Op::Pop(_) | Op::PopDuring(_) => unreachable!("not a push"),
        }
    }

    /// Pops one batch, checks it against the model, runs `during` inside `process` and
    /// applies the batch to the store.
    fn pop(&mut self, during: &[Op]) -> Result<(), TestCaseError> {
        let fifo = self.fifo;
        let mut outcome = None;
        let popped = fifo
            .pop(&mut |batch| {
                let got: Vec<Ev> = batch.iter().map(Ev::of).collect();
                let expected = self.model.pop();
                let synced_inside = (fifo.has_synced(), self.model.has_synced());
                for op in during {
                    self.push(op);
                }
                apply(self.store, &batch);
                outcome = Some((got, expected, synced_inside));
            })
            .now_or_never();
        prop_assert!(
            popped.is_some(),
            "pop waited although the FIFO was not empty"
        );
        prop_assert_eq!(popped.unwrap(), Ok(()));
        let (got, expected, synced_inside) = outcome.expect("process ran");
        let (expected, initial) = expected.expect("the model has a batch too");
        prop_assert_eq!(got, expected);
        prop_assert_eq!(
            synced_inside.0,
            synced_inside.1,
            "has_synced inside process"
        );
        self.model.finish(initial);
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.fifo.len(), self.model.len());
        prop_assert_eq!(self.fifo.has_synced(), self.model.has_synced());
        Ok(())
    }

    fn run(&mut self, ops: &[Op]) -> Result<(), TestCaseError> {
        for op in ops {
            match op {
                Op::Pop(n) => {
                    for _ in 0..*n {
                        if self.fifo.is_empty() {
                            break;
                        }
                        self.pop(&[])?;
                    }
                }
                Op::PopDuring(during) => {
                    if !self.fifo.is_empty() {
                        self.pop(during)?;
                    }
                }
                push => self.push(push),
            }
            self.check()?;
        }
        // Drain, then the store must equal the directly applied operations.
        while !self.fifo.is_empty() {
            self.pop(&[])?;
            self.check()?;
        }
        prop_assert!(self.model.pop().is_none());
        Ok(())
    }
}

fn run(
    fifo: &dyn Fifo<Obj>,
    store: &MapStore,
    model: Box<dyn Model + '_>,
    ops: &[Op],
    check_end_state: bool,
) -> Result<(), TestCaseError> {
    let mut run = Run {
        fifo,
        store,
        model,
        direct: store.snapshot(),
    };
    run.run(ops)?;
    if check_end_state {
        prop_assert_eq!(
            store.snapshot(),
            run.direct,
            "store != directly applied ops"
        );
    }
    Ok(())
}

fn store_with(initial: &BTreeMap<u8, u32>) -> Arc<MapStore> {
    let store = Arc::new(MapStore::default());
    for (k, v) in initial {
        store.add(obj(*k, *v)).unwrap();
    }
    store
}

proptest! {
    /// DeltaFifo with the consumer's store as known objects: every pop matches the model,
    /// and the store ends up as if the operations had been applied directly.
    #[test]
    fn delta_fifo_with_known_objects_matches_model_and_store(
        initial in initial_store(),
        ops in ops(),
    ) {
        let store = store_with(&initial);
        let known: Arc<dyn Store<Obj>> = store.clone();
        let fifo = DeltaFifo::with_key_fn(obj_key, Some(known));
        run(&fifo, &store, Box::new(DeltaModel::new(true)), &ops, true)?;
    }

    /// DeltaFifo without known objects: every pop matches the model (the end state is not
    /// checked: without known objects deletes of popped objects are dropped by design).
    #[test]
    fn delta_fifo_without_known_objects_matches_model(ops in ops()) {
        let store = MapStore::default();
        let fifo = DeltaFifo::with_key_fn(obj_key, None);
        run(&fifo, &store, Box::new(DeltaModel::new(false)), &ops, false)?;
    }

    /// RealFifo (random batch size): every batch matches the model (a plain list of events
    /// batched by the documented rules), and the store ends up as if the operations had been
    /// applied directly.
    #[test]
    fn real_fifo_matches_model_and_store(
        initial in initial_store(),
        ops in ops(),
        batch_size in 1..6usize,
    ) {
        let store = store_with(&initial);
        let known: Arc<dyn Store<Obj>> = store.clone();
        let fifo = RealFifo::with_key_fn(obj_key, Some(known)).with_batch_size(batch_size);
        run(&fifo, &store, Box::new(RealModel::new(true, batch_size)), &ops, true)?;
    }

    /// RealFifo without known objects: resync is a no-op, everything else as above.
    #[test]
    fn real_fifo_without_known_objects_matches_model(
        ops in ops(),
        batch_size in 1..6usize,
    ) {
        let store = MapStore::default();
        let fifo = RealFifo::with_key_fn(obj_key, None).with_batch_size(batch_size);
        run(&fifo, &store, Box::new(RealModel::new(false, batch_size)), &ops, true)?;
    }
}
