use std::time::Duration;

use futures::FutureExt;

use super::*;
use crate::fifo::test_support::{Obj, obj, obj_key};

/// A heap of test objects, the lowest version first.
fn heap() -> Heap<Obj> {
    Heap::with_key_fn(obj_key, |a: &Obj, b: &Obj| a.v < b.v)
}

fn show(o: &Obj) -> String {
    format!("{}@{}", o.name, o.v)
}

fn pop_now(h: &Heap<Obj>) -> String {
    show(
        &h.pop()
            .now_or_never()
            .expect("an object is ready")
            .expect("the heap is open"),
    )
}

fn drain(h: &Heap<Obj>) -> Vec<String> {
    let mut out = Vec::new();
    while !h.is_empty() {
        out.push(pop_now(h));
    }
    out
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("ns"), name)
}

/// Checks the heap order and the positions recorded in the slots.
fn assert_consistent(h: &Heap<Obj>) {
    let st = h.state.lock();
    for (i, &n) in st.heap.iter().enumerate() {
        assert_eq!(st.slot(n).pos, i, "slot {n} knows its position");
        assert_eq!(st.by_key[&st.slot(n).key], n);
        if i > 0 {
            assert!(
                !st.before(i, (i - 1) / 2),
                "position {i} is below its parent"
            );
        }
    }
    assert_eq!(st.by_key.len(), st.heap.len());
}

#[test]
fn pop_returns_objects_in_less_order() {
    let h = heap();
    for (name, v) in [("a", 5), ("b", 1), ("c", 9), ("d", 3), ("e", 7)] {
        h.add(obj(name, v)).unwrap();
    }
    assert_consistent(&h);
    assert_eq!(drain(&h), ["b@1", "d@3", "a@5", "e@7", "c@9"]);
}

#[test]
fn ties_pop_in_the_order_their_keys_arrived() {
    let h = heap();
    for name in ["c", "a", "d", "b"] {
        h.add(obj(name, 1)).unwrap();
    }
    h.add(obj("a", 1)).unwrap(); // replacing keeps `a`'s place among equals
    assert_eq!(drain(&h), ["c@1", "a@1", "d@1", "b@1"]);
}

#[test]
fn add_of_a_present_key_replaces_its_object_and_moves_it() {
    let h = heap();
    h.add(obj("a", 1)).unwrap();
    h.add(obj("b", 2)).unwrap();
    h.add(obj("c", 3)).unwrap();
    h.add(obj("a", 10)).unwrap();
    assert_eq!(h.len(), 3);
    assert_consistent(&h);
    h.update(obj("c", 0)).unwrap();
    assert_consistent(&h);
    assert_eq!(drain(&h), ["c@0", "b@2", "a@10"]);
}

#[test]
fn update_is_add() {
    let h = heap();
    h.update(obj("a", 2)).unwrap();
    h.update(obj("b", 1)).unwrap();
    assert_eq!(drain(&h), ["b@1", "a@2"]);
}

#[test]
fn add_if_not_present_keeps_a_present_object() {
    let h = heap();
    h.add(obj("a", 5)).unwrap();
    h.add_if_not_present(obj("a", 1)).unwrap();
    h.add_if_not_present(obj("b", 3)).unwrap();
    assert_eq!(drain(&h), ["b@3", "a@5"]);
}

#[test]
fn bulk_add_adds_every_object_the_last_of_a_key_winning() {
    let h = heap();
    h.add(obj("a", 5)).unwrap();
    h.bulk_add(vec![obj("b", 3), obj("a", 1), obj("c", 2), obj("b", 9)])
        .unwrap();
    assert_consistent(&h);
    assert_eq!(drain(&h), ["a@1", "c@2", "b@9"]);
}

#[test]
fn bulk_add_with_a_keyless_object_adds_nothing() {
    let h = heap();
    let out = h.bulk_add(vec![obj("a", 1), obj("", 2)]);
    assert!(matches!(out, Err(FifoError::Key(_))));
    assert!(h.is_empty());
}

#[test]
fn a_push_of_an_object_without_a_key_is_refused() {
    let h = heap();
    assert!(matches!(h.add(obj("", 1)), Err(FifoError::Key(_))));
    assert!(matches!(h.update(obj("", 1)), Err(FifoError::Key(_))));
    assert!(matches!(
        h.add_if_not_present(obj("", 1)),
        Err(FifoError::Key(_))
    ));
    assert!(h.delete(&obj("", 1)).is_err());
    assert!(h.get(&obj("", 1)).is_err());
    assert!(h.is_empty());
}

#[test]
fn delete_removes_the_key_whatever_the_object_and_returns_it() {
    let h = heap();
    for (name, v) in [("a", 5), ("b", 1), ("c", 9), ("d", 3), ("e", 7), ("f", 2)] {
        h.add(obj(name, v)).unwrap();
    }
    assert_eq!(
        h.delete(&Obj {
            name: "b".into(),
            v: 100
        })
        .unwrap(),
        Some(obj("b", 1))
    );
    assert_consistent(&h);
    assert_eq!(h.delete_by_key(&key("e")), Some(obj("e", 7)));
    assert_consistent(&h);
    assert_eq!(h.delete(&obj("b", 1)).unwrap(), None);
    assert_eq!(h.delete_by_key(&key("zz")), None);
    assert_eq!(drain(&h), ["f@2", "d@3", "a@5", "c@9"]);
}

#[test]
fn a_deleted_key_added_again_arrives_anew() {
    let h = heap();
    h.add(obj("a", 1)).unwrap();
    h.add(obj("b", 1)).unwrap();
    h.delete(&obj("a", 1)).unwrap();
    h.add(obj("a", 1)).unwrap();
    assert_eq!(drain(&h), ["b@1", "a@1"]);
}

#[test]
fn peek_shows_the_next_object_without_removing_it() {
    let h = heap();
    assert_eq!(h.peek(), None);
    h.add(obj("a", 2)).unwrap();
    h.add(obj("b", 1)).unwrap();
    assert_eq!(h.peek(), Some(obj("b", 1)));
    assert_eq!(h.len(), 2);
    assert_eq!(pop_now(&h), "b@1");
    assert_eq!(h.peek(), Some(obj("a", 2)));
}

#[test]
fn reads_see_every_held_object() {
    let h = heap();
    h.add(obj("a", 2)).unwrap();
    h.add(obj("b", 1)).unwrap();
    let list = sorted(h.list().iter().map(|o| show(o)).collect());
    assert_eq!(list, ["a@2", "b@1"]);
    let keys = sorted(h.list_keys().iter().map(ToString::to_string).collect());
    assert_eq!(keys, ["ns/a", "ns/b"]);
    assert_eq!(h.get(&obj("a", 0)).unwrap(), Some(obj("a", 2)));
    assert_eq!(h.get(&obj("c", 0)).unwrap(), None);
    assert_eq!(h.get_by_key(&key("b")), Some(obj("b", 1)));
    assert_eq!(h.get_by_key(&key("c")), None);
}

#[test]
fn freed_slots_are_reused() {
    let h = heap();
    for round in 0..3 {
        for i in 0..10 {
            h.add(obj(&format!("k{i}"), round * 10 + i)).unwrap();
        }
        for i in (0..10).step_by(2) {
            h.delete_by_key(&key(&format!("k{i}")));
        }
        assert_consistent(&h);
    }
    assert!(h.state.lock().slots.len() <= 10);
    assert_eq!(h.len(), 5);
    drain(&h);
    assert!(
        h.state.lock().slots.is_empty(),
        "an empty heap keeps no slab"
    );
}

#[tokio::test]
async fn pop_waits_until_an_object_is_added() {
    let h = Arc::new(heap());
    let g = h.clone();
    let popper = tokio::spawn(async move { g.pop().await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!popper.is_finished());
    h.add(obj("a", 1)).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(5), popper)
        .await
        .expect("the pop wakes")
        .unwrap();
    assert_eq!(out, Ok(obj("a", 1)));
}

#[tokio::test]
async fn waiting_pops_each_get_a_different_object() {
    let h = Arc::new(heap());
    let poppers: Vec<_> = (0..3)
        .map(|_| {
            let g = h.clone();
            tokio::spawn(async move { g.pop().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    h.bulk_add(vec![obj("a", 1), obj("b", 2), obj("c", 3)])
        .unwrap();
    let mut got = Vec::new();
    for popper in poppers {
        let o = tokio::time::timeout(Duration::from_secs(5), popper)
            .await
            .expect("every pop wakes")
            .unwrap()
            .unwrap();
        got.push(show(&o));
    }
    assert_eq!(sorted(got), ["a@1", "b@2", "c@3"]);
}

#[test]
fn a_dropped_pop_takes_nothing() {
    let h = heap();
    assert!(h.pop().now_or_never().is_none());
    h.add(obj("a", 1)).unwrap();
    assert_eq!(drain(&h), ["a@1"]);
}

#[test]
fn after_close_adds_fail_deletes_work_and_what_is_held_is_handed_out() {
    let h = heap();
    h.add(obj("a", 1)).unwrap();
    h.add(obj("b", 2)).unwrap();
    h.close();
    assert!(h.is_closed());
    assert_eq!(h.add(obj("c", 1)), Err(FifoError::Closed));
    assert_eq!(h.update(obj("a", 5)), Err(FifoError::Closed));
    assert_eq!(h.add_if_not_present(obj("c", 1)), Err(FifoError::Closed));
    assert_eq!(h.bulk_add(vec![obj("c", 1)]), Err(FifoError::Closed));
    assert_eq!(h.delete(&obj("b", 0)).unwrap(), Some(obj("b", 2)));
    assert_eq!(pop_now(&h), "a@1");
    assert_eq!(h.pop().now_or_never().unwrap(), Err(FifoError::Closed));
}

#[tokio::test]
async fn close_wakes_every_waiting_pop_with_closed() {
    let h = Arc::new(heap());
    let poppers: Vec<_> = (0..4)
        .map(|_| {
            let g = h.clone();
            tokio::spawn(async move { g.pop().await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    h.close();
    for popper in poppers {
        let out = tokio::time::timeout(Duration::from_secs(5), popper)
            .await
            .expect("close wakes the pop")
            .unwrap();
        assert_eq!(out, Err(FifoError::Closed));
    }
}

#[test]
fn a_panicking_less_leaves_the_heap_usable() {
    let h = Heap::with_key_fn(obj_key, |a: &Obj, b: &Obj| {
        assert!(a.v != 13 && b.v != 13, "unlucky");
        a.v < b.v
    });
    h.add(obj("a", 1)).unwrap();
    h.add(obj("b", 2)).unwrap();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.add(obj("c", 13))));
    assert!(unwound.is_err());
    // The object that was being placed is held; every object is still handed out once.
    h.delete(&obj("c", 0)).unwrap();
    let mut got = Vec::new();
    while !h.is_empty() {
        got.push(show(&h.pop().now_or_never().unwrap().unwrap()));
    }
    assert_eq!(got, ["a@1", "b@2"]);
}

#[test]
fn debug_shows_the_state() {
    let h = heap();
    h.add(obj("a", 1)).unwrap();
    assert_eq!(format!("{h:?}"), "Heap { len: 1, closed: false }");
}
