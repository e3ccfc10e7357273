//! Property tests of [`ObjectFifo`] (client-go's plain `FIFO`) and [`Heap`] (client-go's
//! `Heap`): random sequences of operations on a small key space, checked step by step
//! against a simple model of each (a `Vec` in queue order; a `Vec` searched for its minimum).

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::FutureExt;
use informer_core::{Fifo, FifoError, Heap, KeyError, ObjectFifo, ObjectKey};
use proptest::prelude::*;

#[derive(Debug, PartialEq, Eq)]
struct Obj {
    name: String,
    v: u32,
}

/// The key of an object; an empty name has none.
fn obj_key(o: &Obj) -> Result<ObjectKey, KeyError> {
    if o.name.is_empty() {
        return Err(KeyError::MissingName { kind: "Obj" });
    }
    Ok(ObjectKey::new(Some("ns"), &o.name))
}

fn name(k: u8) -> String {
    format!("k{k}")
}

fn obj(k: u8, v: u32) -> Arc<Obj> {
    Arc::new(Obj { name: name(k), v })
}

fn keyless() -> Arc<Obj> {
    Arc::new(Obj {
        name: String::new(),
        v: 0,
    })
}

const KEYS: u8 = 6;

// ---------------------------------------------------------------------------------------
// ObjectFifo

#[derive(Debug, Clone)]
enum FifoOp {
    Add(u8, u32),
    Update(u8, u32),
    AddIfNotPresent(u8, u32),
    Delete(u8),
    Replace(Vec<(u8, u32)>),
    /// A push of an object without a key (an add, or a replace with one bad object).
    Keyless(bool),
    /// Pop, doing something from inside `process`.
    Pop(Inside),
    Resync,
    Close,
}

/// What a pop's `process` does besides returning the object.
#[derive(Debug, Clone)]
enum Inside {
    Nothing,
    /// Puts the object back with `add_if_not_present`.
    Requeue,
    /// A relist arrives while the object is processed.
    Replace(Vec<(u8, u32)>),
}

fn fifo_op() -> impl Strategy<Value = FifoOp> {
    let kv = (0..KEYS, 0..100u32);
    prop_oneof![
        4 => kv.clone().prop_map(|(k, v)| FifoOp::Add(k, v)),
        2 => kv.clone().prop_map(|(k, v)| FifoOp::Update(k, v)),
        2 => kv.clone().prop_map(|(k, v)| FifoOp::AddIfNotPresent(k, v)),
        2 => (0..KEYS).prop_map(FifoOp::Delete),
        1 => prop::collection::vec(kv.clone(), 0..5).prop_map(FifoOp::Replace),
        1 => any::<bool>().prop_map(FifoOp::Keyless),
        5 => Just(FifoOp::Pop(Inside::Nothing)),
        1 => Just(FifoOp::Pop(Inside::Requeue)),
        1 => prop::collection::vec(kv, 0..4).prop_map(|l| FifoOp::Pop(Inside::Replace(l))),
        1 => Just(FifoOp::Resync),
        1 => Just(FifoOp::Close),
    ]
}

/// The model: the queue as a `Vec`, and client-go's first list as the set of its keys
/// still queued.
#[derive(Default)]
struct FifoModel {
    queue: Vec<(u8, u32)>,
    populated: bool,
    initial: BTreeSet<u8>,
    closed: bool,
}

impl FifoModel {
    fn synced(&self) -> bool {
        self.populated && self.initial.is_empty()
    }

    fn push(&mut self, k: u8, v: u32, overwrite: bool) {
        self.populated = true;
        match self.queue.iter_mut().find(|(qk, _)| *qk == k) {
            Some(slot) if overwrite => slot.1 = v,
            Some(_) => {}
            None => self.queue.push((k, v)),
        }
    }

    fn delete(&mut self, k: u8) {
        self.populated = true;
        self.queue.retain(|(qk, _)| *qk != k);
        self.initial.remove(&k);
    }

    fn replace(&mut self, list: &[(u8, u32)]) {
        let first_list = !self.synced();
        self.queue.clear();
        for &(k, v) in list {
            self.push(k, v, true);
        }
        self.populated = true;
        if first_list {
            self.initial = self.queue.iter().map(|(k, _)| *k).collect();
        }
    }

    /// The front object and whether it is of the first list; the caller settles it.
    fn take(&mut self) -> Option<(u8, u32, bool)> {
        if self.queue.is_empty() {
            return None;
        }
        let (k, v) = self.queue.remove(0);
        Some((k, v, self.initial.contains(&k)))
    }
}

fn queued(fifo: &ObjectFifo<Obj>) -> Vec<(String, u32)> {
    fifo.list().iter().map(|o| (o.name.clone(), o.v)).collect()
}

fn model_queued(m: &FifoModel) -> Vec<(String, u32)> {
    m.queue.iter().map(|&(k, v)| (name(k), v)).collect()
}

/// Runs `op` on the FIFO and the model and checks they agree.
fn fifo_step(fifo: &ObjectFifo<Obj>, m: &mut FifoModel, op: &FifoOp) -> Result<(), TestCaseError> {
    let closed = || Err(FifoError::Closed);
    match op {
        FifoOp::Add(k, v) | FifoOp::Update(k, v) | FifoOp::AddIfNotPresent(k, v) => {
            let out = match op {
                FifoOp::Add(..) => fifo.add(obj(*k, *v)),
                FifoOp::Update(..) => fifo.update(obj(*k, *v)),
                _ => fifo.add_if_not_present(obj(*k, *v)),
            };
            if m.closed {
                prop_assert_eq!(out, closed());
            } else {
                prop_assert_eq!(out, Ok(()));
                m.push(*k, *v, !matches!(op, FifoOp::AddIfNotPresent(..)));
            }
        }
        FifoOp::Delete(k) => {
            let out = fifo.delete(obj(*k, 0));
            if m.closed {
                prop_assert_eq!(out, closed());
            } else {
                prop_assert_eq!(out, Ok(()));
                m.delete(*k);
            }
        }
        FifoOp::Replace(list) => {
            let objects = list.iter().map(|&(k, v)| obj(k, v)).collect();
            let out = fifo.replace(objects, "1".into());
            if m.closed {
                prop_assert_eq!(out, closed());
            } else {
                prop_assert_eq!(out, Ok(()));
                m.replace(list);
            }
        }
        FifoOp::Keyless(in_replace) => {
            let out = if *in_replace {
                fifo.replace(vec![obj(0, 1), keyless()], "1".into())
            } else {
                fifo.add(keyless())
            };
            prop_assert!(matches!(out, Err(FifoError::Key(_))), "{:?}", out);
        }
        FifoOp::Pop(inside) => {
            let out = fifo
                .pop_with(|o, initial| {
                    let pushed =
                        match inside {
                            Inside::Nothing => None,
                            Inside::Requeue => Some(fifo.add_if_not_present(o.clone())),
                            Inside::Replace(list) => Some(fifo.replace(
                                list.iter().map(|&(k, v)| obj(k, v)).collect(),
                                "2".into(),
                            )),
                        };
                    (o.name.clone(), o.v, initial, pushed)
                })
                .now_or_never();
            match m.take() {
                Some((k, v, initial)) => {
                    let pushed = match inside {
                        Inside::Nothing => None,
                        _ if m.closed => Some(closed()),
                        _ => Some(Ok(())),
                    };
                    prop_assert_eq!(out, Some(Ok((name(k), v, initial, pushed))));
                    // The popped object still counts for the first list until `process`
                    // returns, unless a relist made a new first list meanwhile.
                    let mut new_first_list = false;
                    match inside {
                        _ if m.closed => {}
                        Inside::Nothing => {}
                        Inside::Requeue => m.push(k, v, false),
                        Inside::Replace(list) => {
                            new_first_list = !m.synced();
                            m.replace(list);
                        }
                    }
                    if !new_first_list {
                        m.initial.remove(&k);
                    }
                }
                None if m.closed => prop_assert_eq!(out, Some(Err(FifoError::Closed))),
                None => prop_assert!(out.is_none(), "a pop on an empty FIFO waits"),
            }
        }
        FifoOp::Resync => {
            let out = fifo.resync();
            prop_assert_eq!(out, if m.closed { closed() } else { Ok(()) });
        }
        FifoOp::Close => {
            fifo.close();
            m.closed = true;
        }
    }
    prop_assert_eq!(queued(fifo), model_queued(m));
    prop_assert_eq!(fifo.len(), m.queue.len());
    prop_assert_eq!(fifo.has_synced(), m.synced());
    prop_assert_eq!(fifo.is_closed(), m.closed);
    for k in 0..KEYS {
        let got = fifo
            .get_by_key(&ObjectKey::new(Some("ns"), &name(k)))
            .map(|o| o.v);
        let want = m.queue.iter().find(|(qk, _)| *qk == k).map(|(_, v)| *v);
        prop_assert_eq!(got, want);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Heap

#[derive(Debug, Clone)]
enum HeapOp {
    Add(u8, u32),
    AddIfNotPresent(u8, u32),
    /// A bulk add; `true` adds an object without a key at the end (refused whole).
    BulkAdd(Vec<(u8, u32)>, bool),
    Delete(u8),
    Pop,
    Close,
}

fn heap_op() -> impl Strategy<Value = HeapOp> {
    // Few priorities, so that ties are common.
    let kv = (0..KEYS, 0..4u32);
    prop_oneof![
        5 => kv.clone().prop_map(|(k, v)| HeapOp::Add(k, v)),
        2 => kv.clone().prop_map(|(k, v)| HeapOp::AddIfNotPresent(k, v)),
        1 => (prop::collection::vec(kv, 0..5), prop::bool::weighted(0.2))
            .prop_map(|(l, bad)| HeapOp::BulkAdd(l, bad)),
        2 => (0..KEYS).prop_map(HeapOp::Delete),
        5 => Just(HeapOp::Pop),
        1 => Just(HeapOp::Close),
    ]
}

/// The model: `(key, priority, arrival)` in no order; the minimum by priority, then arrival,
/// pops first.
#[derive(Default)]
struct HeapModel {
    items: Vec<(u8, u32, u64)>,
    next_seq: u64,
    closed: bool,
}

impl HeapModel {
    fn add(&mut self, k: u8, v: u32, overwrite: bool) {
        match self.items.iter_mut().find(|(ik, ..)| *ik == k) {
            Some(item) if overwrite => item.1 = v,
            Some(_) => {}
            None => {
                self.items.push((k, v, self.next_seq));
                self.next_seq += 1;
            }
        }
    }

    fn front(&self) -> Option<usize> {
        (0..self.items.len()).min_by_key(|&i| (self.items[i].1, self.items[i].2))
    }
}

fn heap_step(heap: &Heap<Obj>, m: &mut HeapModel, op: &HeapOp) -> Result<(), TestCaseError> {
    let closed = || Err(FifoError::Closed);
    match op {
        HeapOp::Add(k, v) | HeapOp::AddIfNotPresent(k, v) => {
            let overwrite = matches!(op, HeapOp::Add(..));
            let out = if overwrite {
                heap.add(obj(*k, *v))
            } else {
                heap.add_if_not_present(obj(*k, *v))
            };
            if m.closed {
                prop_assert_eq!(out, closed());
            } else {
                prop_assert_eq!(out, Ok(()));
                m.add(*k, *v, overwrite);
            }
        }
        HeapOp::BulkAdd(list, bad) => {
            let mut objects: Vec<_> = list.iter().map(|&(k, v)| obj(k, v)).collect();
            if *bad {
                objects.push(keyless());
            }
            let out = heap.bulk_add(objects);
            if *bad {
                prop_assert!(matches!(out, Err(FifoError::Key(_))), "{:?}", out);
            } else if m.closed {
                prop_assert_eq!(out, closed());
            } else {
                prop_assert_eq!(out, Ok(()));
                for &(k, v) in list {
                    m.add(k, v, true);
                }
            }
        }
        HeapOp::Delete(k) => {
            let got = heap.delete(&obj(*k, 0)).unwrap().map(|o| o.v);
            let want = m
                .items
                .iter()
                .position(|(ik, ..)| ik == k)
                .map(|i| m.items.swap_remove(i).1);
            prop_assert_eq!(got, want);
        }
        HeapOp::Pop => {
            let out = heap
                .pop()
                .now_or_never()
                .map(|r| r.map(|o| (o.name.clone(), o.v)));
            match m.front() {
                Some(i) => {
                    let (k, v, _) = m.items.remove(i);
                    prop_assert_eq!(out, Some(Ok((name(k), v))));
                }
                None if m.closed => prop_assert_eq!(out, Some(Err(FifoError::Closed))),
                None => prop_assert!(out.is_none(), "a pop on an empty heap waits"),
            }
        }
        HeapOp::Close => {
            heap.close();
            m.closed = true;
        }
    }
    prop_assert_eq!(heap.len(), m.items.len());
    prop_assert_eq!(heap.is_closed(), m.closed);
    let peek = heap.peek().map(|o| (o.name.clone(), o.v));
    let want = m.front().map(|i| (name(m.items[i].0), m.items[i].1));
    prop_assert_eq!(peek, want);
    let mut listed: Vec<_> = heap.list().iter().map(|o| (o.name.clone(), o.v)).collect();
    listed.sort();
    let mut expected: Vec<_> = m.items.iter().map(|&(k, v, _)| (name(k), v)).collect();
    expected.sort();
    prop_assert_eq!(listed, expected);
    let mut keys: Vec<_> = heap
        .list_keys()
        .iter()
        .map(|k| k.name().to_owned())
        .collect();
    keys.sort();
    let mut want_keys: Vec<_> = m.items.iter().map(|&(k, ..)| name(k)).collect();
    want_keys.sort();
    prop_assert_eq!(keys, want_keys);
    for k in 0..KEYS {
        let got = heap.get(&obj(k, 0)).unwrap().map(|o| o.v);
        let want = m.items.iter().find(|(ik, ..)| *ik == k).map(|&(_, v, _)| v);
        prop_assert_eq!(got, want);
    }
    Ok(())
}

proptest! {
    /// ObjectFifo: every step matches the model (queue order, objects, pops with their
    /// first-list flag, `has_synced`, close).
    #[test]
    fn object_fifo_matches_model(ops in prop::collection::vec(fifo_op(), 0..60)) {
        let fifo = ObjectFifo::with_key_fn(obj_key);
        let mut model = FifoModel::default();
        for op in &ops {
            fifo_step(&fifo, &mut model, op)?;
        }
    }

    /// Heap: every step matches the model (pop and peek order with ties in arrival order,
    /// contents, deletes, all-or-nothing bulk adds, close).
    #[test]
    fn heap_matches_model(ops in prop::collection::vec(heap_op(), 0..80)) {
        let heap = Heap::with_key_fn(obj_key, |a: &Obj, b: &Obj| a.v < b.v);
        let mut model = HeapModel::default();
        for op in &ops {
            heap_step(&heap, &mut model, op)?;
        }
    }

    /// Heap: whatever was added, draining pops in (priority, arrival) order.
    #[test]
    fn heap_drains_sorted(adds in prop::collection::vec((0..40u8, 0..10u32), 0..200)) {
        let heap = Heap::with_key_fn(obj_key, |a: &Obj, b: &Obj| a.v < b.v);
        let mut model = HeapModel::default();
        for &(k, v) in &adds {
            heap.add(obj(k, v)).unwrap();
            model.add(k, v, true);
        }
        model.items.sort_by_key(|&(_, v, seq)| (v, seq));
        let mut popped = Vec::new();
        while let Some(o) = heap.pop().now_or_never() {
            let o = o.unwrap();
            popped.push((o.name.clone(), o.v));
        }
        let want: Vec<_> = model.items.iter().map(|&(k, v, _)| (name(k), v)).collect();
        prop_assert_eq!(popped, want);
    }
}
