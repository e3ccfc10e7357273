use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;

use super::*;
use crate::fifo::test_support::{Obj, obj, obj_key, show_all};

fn fifo() -> ObjectFifo<Obj> {
    ObjectFifo::with_key_fn(obj_key)
}

/// Pops one ready object as `name@v`, with its `in_initial_list` flag; panics if none is
/// ready.
fn pop_now(f: &ObjectFifo<Obj>) -> (String, bool) {
    f.pop_with(|o, initial| (format!("{}@{}", o.name, o.v), initial))
        .now_or_never()
        .expect("an object is ready")
        .expect("the FIFO is open")
}

/// Pops every queued object as `name@v`.
fn drain(f: &ObjectFifo<Obj>) -> Vec<String> {
    let mut out = Vec::new();
    while !f.is_empty() {
        out.push(pop_now(f).0);
    }
    out
}

fn queued(f: &ObjectFifo<Obj>) -> Vec<String> {
    f.list()
        .iter()
        .map(|o| format!("{}@{}", o.name, o.v))
        .collect()
}

#[test]
fn fifo_is_object_safe() {
    fn _obj_safe(_: Arc<dyn Fifo<Obj>>) {}
    _obj_safe(Arc::new(fifo()));
}

#[test]
fn adds_pop_in_the_order_keys_were_queued() {
    let f = fifo();
    for name in ["c", "a", "b"] {
        f.add(obj(name, 1)).unwrap();
    }
    assert_eq!(drain(&f), ["c@1", "a@1", "b@1"]);
}

#[test]
fn add_of_a_queued_key_keeps_its_place_with_the_newest_object() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.add(obj("a", 2)).unwrap();
    f.add(obj("a", 3)).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(drain(&f), ["a@3", "b@1"]);
}

#[test]
fn update_is_add() {
    let f = fifo();
    f.update(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    assert_eq!(drain(&f), ["a@2", "b@1"]);
}

#[test]
fn a_popped_key_added_again_goes_to_the_back() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(pop_now(&f).0, "a@1");
    f.add(obj("a", 2)).unwrap();
    assert_eq!(drain(&f), ["b@1", "a@2"]);
}

#[test]
fn delete_takes_the_key_out_of_the_queue() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.delete(obj("a", 0)).unwrap();
    f.delete(obj("never-queued", 0)).unwrap();
    assert_eq!(f.len(), 1);
    assert!(f.get_by_key(&ObjectKey::new(Some("ns"), "a")).is_none());
    assert_eq!(drain(&f), ["b@1"]);
}

#[test]
fn a_deleted_key_added_again_goes_to_the_back() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.delete(obj("a", 1)).unwrap();
    f.add(obj("a", 2)).unwrap();
    assert_eq!(drain(&f), ["b@1", "a@2"]);
}

#[test]
fn add_if_not_present_keeps_a_queued_object_and_queues_an_absent_one() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add_if_not_present(obj("a", 2)).unwrap();
    f.add_if_not_present(obj("b", 1)).unwrap();
    assert_eq!(drain(&f), ["a@1", "b@1"]);
}

#[test]
fn replace_drops_everything_queued_and_queues_the_list_in_order() {
    let f = fifo();
    f.add(obj("x", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.replace(vec![obj("c", 2), obj("b", 2), obj("a", 2)], "5".into())
        .unwrap();
    assert_eq!(drain(&f), ["c@2", "b@2", "a@2"]);
}

#[test]
fn replace_with_a_key_listed_twice_keeps_the_last_object_at_the_first_place() {
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 1), obj("a", 2)], "1".into())
        .unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(drain(&f), ["a@2", "b@1"]);
}

#[test]
fn a_push_of_an_object_without_a_key_is_refused_and_changes_nothing() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    let keyless = || obj("", 1);
    assert!(matches!(f.add(keyless()), Err(FifoError::Key(_))));
    assert!(matches!(f.update(keyless()), Err(FifoError::Key(_))));
    assert!(matches!(f.delete(keyless()), Err(FifoError::Key(_))));
    assert!(matches!(
        f.add_if_not_present(keyless()),
        Err(FifoError::Key(_))
    ));
    assert!(matches!(
        f.replace(vec![obj("b", 1), keyless()], "1".into()),
        Err(FifoError::Key(_))
    ));
    assert!(
        f.get(&Obj {
            name: String::new(),
            v: 0
        })
        .is_err()
    );
    assert_eq!(queued(&f), ["a@1"]);
}

#[test]
fn resync_and_bookmark_change_nothing() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(pop_now(&f).0, "a@1");
    f.resync().unwrap();
    f.bookmark("7".into()).unwrap();
    assert_eq!(queued(&f), ["b@1"]);
}

#[test]
fn reads_see_the_queued_objects_in_queue_order() {
    let f = fifo();
    f.add(obj("b", 1)).unwrap();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    assert_eq!(queued(&f), ["b@2", "a@1"]);
    let keys: Vec<String> = f.list_keys().iter().map(ToString::to_string).collect();
    assert_eq!(keys, ["ns/b", "ns/a"]);
    assert_eq!(
        f.get(&Obj {
            name: "b".into(),
            v: 0
        })
        .unwrap(),
        Some(obj("b", 2))
    );
    assert_eq!(
        f.get_by_key(&ObjectKey::new(Some("ns"), "a")),
        Some(obj("a", 1))
    );
    assert_eq!(f.get_by_key(&ObjectKey::new(Some("ns"), "c")), None);
}

#[test]
fn a_popped_object_is_no_longer_held_while_processed() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    let held = f
        .pop_with(|_, _| f.get_by_key(&ObjectKey::new(Some("ns"), "a")))
        .now_or_never()
        .unwrap()
        .unwrap();
    assert_eq!(held, None);
}

#[test]
fn has_synced_is_false_until_something_fills_the_fifo() {
    let f = fifo();
    assert!(!f.has_synced());
    f.resync().unwrap();
    f.bookmark("1".into()).unwrap();
    assert!(!f.has_synced());
}

#[test]
fn has_synced_at_once_when_an_event_comes_before_any_replace() {
    let events: [fn(&ObjectFifo<Obj>); 4] = [
        |f| f.add(obj("a", 1)).unwrap(),
        |f| f.update(obj("a", 1)).unwrap(),
        |f| f.delete(obj("a", 1)).unwrap(),
        |f| f.add_if_not_present(obj("a", 1)).unwrap(),
    ];
    for event in events {
        let f = fifo();
        event(&f);
        assert!(f.has_synced());
        // A later first replace makes no first list.
        f.replace(vec![obj("b", 1)], "1".into()).unwrap();
        assert!(f.has_synced());
        assert_eq!(pop_now(&f), ("b@1".into(), false));
    }
}

#[test]
fn an_empty_first_list_is_synced_at_once() {
    let f = fifo();
    f.replace(vec![], "1".into()).unwrap();
    assert!(f.has_synced());
}

#[test]
fn the_first_list_is_synced_once_every_object_has_been_processed() {
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
        .unwrap();
    f.add(obj("c", 1)).unwrap();
    assert_eq!(pop_now(&f), ("a@1".into(), true));
    assert!(!f.has_synced());
    // Inside `process` of the last object of the list, not synced yet; after it, synced.
    let inside = f
        .pop_with(|_, initial| (initial, f.has_synced()))
        .now_or_never()
        .unwrap()
        .unwrap();
    assert_eq!(inside, (true, false));
    assert!(f.has_synced());
    assert_eq!(pop_now(&f), ("c@1".into(), false));
}

#[test]
fn an_update_of_a_listed_object_keeps_it_in_the_first_list() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    f.update(obj("a", 2)).unwrap();
    assert!(!f.has_synced());
    assert_eq!(pop_now(&f), ("a@2".into(), true));
    assert!(f.has_synced());
}

#[test]
fn a_deleted_object_of_the_first_list_counts_as_processed() {
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
        .unwrap();
    f.delete(obj("b", 1)).unwrap();
    assert!(!f.has_synced());
    assert_eq!(pop_now(&f), ("a@1".into(), true));
    assert!(f.has_synced());
}

#[test]
fn a_replace_before_the_first_list_is_processed_becomes_the_first_list() {
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
        .unwrap();
    assert_eq!(pop_now(&f), ("a@1".into(), true));
    f.replace(vec![obj("c", 1)], "2".into()).unwrap();
    assert!(!f.has_synced());
    assert_eq!(pop_now(&f), ("c@1".into(), true));
    assert!(f.has_synced());
}

#[test]
fn an_object_processed_while_a_new_first_list_arrives_does_not_count_for_it() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    f.pop_with(|_, initial| {
        assert!(initial);
        f.replace(vec![obj("b", 1)], "2".into()).unwrap();
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert!(!f.has_synced(), "`b` of the new first list is still queued");
    assert_eq!(pop_now(&f), ("b@1".into(), true));
    assert!(f.has_synced());
}

#[test]
fn a_replace_after_sync_makes_no_first_list() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    assert_eq!(pop_now(&f), ("a@1".into(), true));
    f.replace(vec![obj("b", 1)], "2".into()).unwrap();
    assert!(f.has_synced());
    assert_eq!(pop_now(&f), ("b@1".into(), false));
}

#[test]
fn an_object_whose_process_panics_is_lost_and_the_first_list_stays_unsynced() {
    let f = Arc::new(fifo());
    f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
        .unwrap();
    let g = f.clone();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        g.pop_with(|_, _| panic!("process failed"))
            .now_or_never()
            .unwrap()
            .unwrap();
    }));
    assert!(unwound.is_err());
    assert_eq!(queued(&f), ["b@1"]);
    // The pop slot was released: the next pop proceeds.
    assert_eq!(pop_now(&f), ("b@1".into(), true));
    assert!(!f.has_synced());
}

#[test]
fn pop_with_returns_what_process_returns() {
    let f = fifo();
    f.add(obj("a", 7)).unwrap();
    let v = f.pop_with(|o, _| o.v * 2).now_or_never().unwrap();
    assert_eq!(v, Ok(14));
}

#[test]
fn process_may_put_its_object_back_with_add_if_not_present() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.pop_with(|o, _| f.add_if_not_present(o).unwrap())
        .now_or_never()
        .unwrap()
        .unwrap();
    assert_eq!(queued(&f), ["b@1", "a@1"]);
}

#[tokio::test]
async fn pop_waits_until_a_key_is_queued() {
    let f = Arc::new(fifo());
    let g = f.clone();
    let popper = tokio::spawn(async move { g.pop_with(|o, _| o.v).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!popper.is_finished());
    f.add(obj("a", 3)).unwrap();
    let v = tokio::time::timeout(Duration::from_secs(5), popper)
        .await
        .expect("the pop wakes")
        .unwrap();
    assert_eq!(v, Ok(3));
}

#[test]
fn pops_are_serialized() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    let second_waited = f
        .pop_with(|_, _| f.pop_with(|o, _| o.v).now_or_never().is_none())
        .now_or_never()
        .unwrap()
        .unwrap();
    assert!(
        second_waited,
        "a pop waits while another one's process runs"
    );
    assert_eq!(drain(&f), ["b@1"]);
}

#[tokio::test]
async fn a_pop_waiting_for_the_slot_wakes_when_it_is_released() {
    let f = Arc::new(fifo());
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let g = f.clone();
    let first = std::thread::spawn(move || {
        // An object is queued: the pop completes without waiting, blocking in `process`.
        g.pop_with(|o, _| {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            o.v
        })
        .now_or_never()
        .expect("an object is ready")
    });
    started_rx.recv().unwrap();
    let g = f.clone();
    let second = tokio::spawn(async move { g.pop_with(|o, _| o.v).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!second.is_finished());
    release_tx.send(()).unwrap();
    assert_eq!(first.join().unwrap(), Ok(1));
    let v = tokio::time::timeout(Duration::from_secs(5), second)
        .await
        .expect("the second pop wakes")
        .unwrap();
    assert_eq!(v, Ok(2));
}

#[test]
fn a_dropped_pop_takes_nothing() {
    let f = fifo();
    assert!(f.pop_with(|o, _| o).now_or_never().is_none());
    f.add(obj("a", 1)).unwrap();
    assert_eq!(drain(&f), ["a@1"]);
}

#[test]
fn after_close_pushes_fail_and_what_is_queued_is_still_handed_out() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.close();
    assert!(f.is_closed());
    assert_eq!(f.add(obj("b", 1)), Err(FifoError::Closed));
    assert_eq!(f.update(obj("a", 2)), Err(FifoError::Closed));
    assert_eq!(f.add_if_not_present(obj("b", 1)), Err(FifoError::Closed));
    assert_eq!(f.delete(obj("a", 1)), Err(FifoError::Closed));
    assert_eq!(f.replace(vec![], "1".into()), Err(FifoError::Closed));
    assert_eq!(f.resync(), Err(FifoError::Closed));
    assert_eq!(f.bookmark("1".into()), Err(FifoError::Closed));
    assert_eq!(pop_now(&f).0, "a@1");
    let closed = f.pop_with(|o, _| o).now_or_never().unwrap();
    assert_eq!(closed, Err(FifoError::Closed));
}

#[tokio::test]
async fn close_wakes_every_waiting_pop_with_closed() {
    let f = Arc::new(fifo());
    let poppers: Vec<_> = (0..4)
        .map(|_| {
            let g = f.clone();
            tokio::spawn(async move { g.pop_with(|o, _| o).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    f.close();
    for popper in poppers {
        let out = tokio::time::timeout(Duration::from_secs(5), popper)
            .await
            .expect("close wakes the pop")
            .unwrap();
        assert_eq!(out, Err(FifoError::Closed));
    }
}

#[test]
fn through_the_fifo_trait_an_object_pops_as_one_update() {
    let f: Arc<dyn Fifo<Obj>> = Arc::new(fifo());
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    let mut batch = Vec::new();
    f.pop(&mut |b| batch = show_all(&b))
        .now_or_never()
        .unwrap()
        .unwrap();
    assert_eq!(batch, ["Updated(a@1)"]);
    let mut keys = Vec::new();
    f.pop_keyed(&mut |b, k| {
        assert_eq!(b.len(), 1);
        keys = k;
    })
    .now_or_never()
    .unwrap()
    .unwrap();
    assert_eq!(keys, [Some(ObjectKey::new(Some("ns"), "b"))]);
}

#[test]
fn through_the_fifo_trait_in_initial_list_is_has_synced() {
    // The trait's consumer reads `!has_synced()` inside `process`, as client-go's informer.
    let f = Arc::new(fifo());
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    let seen = AtomicBool::new(true);
    let g = f.clone();
    Fifo::pop(&*f, &mut |_| seen.store(g.has_synced(), Ordering::SeqCst))
        .now_or_never()
        .unwrap()
        .unwrap();
    assert!(!seen.load(Ordering::SeqCst));
    assert!(f.has_synced());
}

#[test]
fn debug_shows_the_state() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    assert_eq!(
        format!("{f:?}"),
        "ObjectFifo { queued: 1, has_synced: true, closed: false }"
    );
}
