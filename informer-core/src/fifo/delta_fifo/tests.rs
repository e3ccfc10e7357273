use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::error::KeyError;
use crate::fifo::test_support::{MapStore, Obj, drain, obj, obj_key, pop_now, show_all, try_pop};

/// Pops one ready key, running `during` inside `process`.
fn pop_now_during(f: &DeltaFifo<Obj>, during: impl FnOnce() + Send) -> Vec<String> {
    let mut during = Some(during);
    let mut out = Vec::new();
    futures::FutureExt::now_or_never(f.pop(&mut |deltas| {
        if let Some(during) = during.take() {
            during();
        }
        out = show_all(&deltas);
    }))
    .expect("a key is ready")
    .expect("the FIFO is open");
    out
}

fn fifo() -> DeltaFifo<Obj> {
    DeltaFifo::with_key_fn(obj_key, None)
}

fn fifo_known(known: &[Arc<Obj>]) -> (Arc<DeltaFifo<Obj>>, Arc<MapStore>) {
    let store = MapStore::with(known);
    let dyn_store: Arc<dyn Store<Obj>> = store.clone();
    (
        Arc::new(DeltaFifo::with_key_fn(obj_key, Some(dyn_store))),
        store,
    )
}

#[test]
fn fifo_is_object_safe() {
    fn _obj_safe(_: Arc<dyn Fifo<Obj>>) {}
    _obj_safe(Arc::new(fifo()));
}

#[test]
fn pop_returns_all_deltas_of_a_key_oldest_first() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(pop_now(&f), ["Added(a@1)", "Updated(a@2)", "Deleted(a@3)"]);
    assert!(f.is_empty());
}

#[test]
fn keys_pop_in_first_queued_order() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.add(obj("c", 1)).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(a@1)", "Updated(a@2)"],
            vec!["Added(b@1)"],
            vec!["Added(c@1)"]
        ]
    );
}

#[test]
fn key_pushed_again_after_pop_goes_to_the_back() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(pop_now(&f), ["Added(a@1)"]);
    f.update(obj("a", 2)).unwrap();
    assert_eq!(drain(&f), [vec!["Added(b@1)"], vec!["Updated(a@2)"]]);
}

#[test]
fn len_counts_keys_not_deltas() {
    let f = fifo();
    for v in 0..5 {
        f.update(obj("a", v)).unwrap();
    }
    f.add(obj("b", 0)).unwrap();
    assert_eq!(f.len(), 2);
}

#[test]
fn two_consecutive_observed_deletes_collapse_keeping_the_older() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.delete(obj("a", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);
}

#[test]
fn two_consecutive_deletes_collapse_real_object_wins() {
    // A relist tombstones `a`; the observed delete that follows replaces the tombstone.
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.replace(vec![], "5".into()).unwrap();
    f.delete(obj("a", 2)).unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);

    // An observed delete followed by a relist without the object: no tombstone added.
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.delete(obj("a", 2)).unwrap();
    f.replace(vec![], "5".into()).unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);
}

#[test]
fn deletes_separated_by_another_delta_are_kept() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.delete(obj("a", 1)).unwrap();
    f.add(obj("a", 2)).unwrap();
    f.delete(obj("a", 2)).unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(a@1)", "Added(a@2)", "Deleted(a@2)"]);
}

#[test]
fn delete_of_object_neither_known_nor_queued_is_dropped() {
    let (f, _) = fifo_known(&[obj("known", 1)]);
    f.delete(obj("stranger", 1)).unwrap();
    assert!(f.is_empty());
    f.delete(obj("known", 2)).unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(known@2)"]);
}

#[test]
fn delete_without_known_objects_is_dropped_unless_queued() {
    let f = fifo();
    f.delete(obj("a", 1)).unwrap();
    assert!(f.is_empty());
    f.add(obj("b", 1)).unwrap();
    f.delete(obj("b", 2)).unwrap();
    assert_eq!(pop_now(&f), ["Added(b@1)", "Deleted(b@2)"]);
}

#[test]
fn replace_emits_replaced_and_tombstones_for_vanished_known_objects() {
    let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
    f.replace(vec![obj("a", 2), obj("c", 1)], "7".into())
        .unwrap();
    assert_eq!(
        drain(&*f),
        [
            vec!["Replaced(a@2)"],
            vec!["Replaced(c@1)"],
            vec!["Gone(b, b@1)"]
        ]
    );
}

#[test]
fn replace_tombstone_carries_last_known_state() {
    // The newest queued object wins over the store's.
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.update(obj("a", 2)).unwrap();
    f.replace(vec![], "7".into()).unwrap();
    assert_eq!(pop_now(&*f), ["Updated(a@2)", "Gone(a, a@2)"]);
}

#[test]
fn replace_without_known_objects_tombstones_queued_keys_missing_from_the_list() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.replace(vec![obj("b", 2)], "7".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(a@1)", "Gone(a, a@1)"],
            vec!["Added(b@1)", "Replaced(b@2)"]
        ]
    );
}

#[test]
fn replace_refuses_the_whole_list_if_an_object_has_no_key() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    let err = f.replace(vec![obj("b", 1), obj("", 1)], "7".into());
    assert!(matches!(
        err,
        Err(FifoError::Key(KeyError::MissingName { .. }))
    ));
    assert!(f.is_empty());
    assert!(!f.has_synced());
}

#[test]
fn resync_skips_keys_with_queued_deltas() {
    let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
    f.update(obj("a", 2)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&*f), [vec!["Updated(a@2)"], vec!["Sync(b@1)"]]);
}

#[test]
fn resync_without_known_objects_queues_nothing() {
    let f = fifo();
    f.resync().unwrap();
    assert!(f.is_empty());
}

#[test]
fn bookmark_is_a_no_op() {
    let f = fifo();
    f.bookmark("9".into()).unwrap();
    assert!(f.is_empty());
    assert!(!f.has_synced());
}

#[test]
fn has_synced_is_false_before_anything_is_pushed() {
    assert!(!fifo().has_synced());
}

#[test]
fn has_synced_after_first_list_is_processed_not_just_popped() {
    let (f, _) = fifo_known(&[]);
    f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
        .unwrap();
    f.add(obj("c", 1)).unwrap(); // after the list: not part of it
    assert!(!f.has_synced());
    // (has_synced inside `process`, has_synced after it returned), for a, b, c.
    for expected in [(false, false), (false, true), (true, true)] {
        let fifo = f.clone();
        let mut inside = None;
        futures::FutureExt::now_or_never(f.pop(&mut |_| inside = Some(fifo.has_synced())))
            .unwrap()
            .unwrap();
        assert_eq!((inside.unwrap(), f.has_synced()), expected);
    }
}

#[test]
fn has_synced_at_once_after_a_push_before_any_replace() {
    // client-go: `Add` sets `populated` and leaves `initialPopulationCount` at 0.
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    assert!(f.has_synced());
    f.replace(vec![obj("b", 1)], "1".into()).unwrap(); // not the first: no population
    assert!(f.has_synced());
}

#[test]
fn has_synced_with_empty_first_list_is_immediate() {
    let f = fifo();
    f.replace(vec![], "1".into()).unwrap();
    assert!(f.has_synced());
}

#[test]
fn object_without_name_is_refused() {
    let f = DeltaFifo::<Pod>::new(None);
    let nameless = Arc::new(Pod::default());
    for result in [
        f.add(nameless.clone()),
        f.update(nameless.clone()),
        f.delete(nameless.clone()),
        f.replace(vec![nameless], "1".into()),
    ] {
        assert!(matches!(
            result,
            Err(FifoError::Key(KeyError::MissingName { kind: "Pod" }))
        ));
    }
    assert!(f.is_empty());
}

#[test]
fn new_keys_resources_by_namespace_and_name() {
    let f = DeltaFifo::<Pod>::new(None);
    let mut pod = Pod::default();
    pod.metadata.name = Some("web".into());
    pod.metadata.namespace = Some("prod".into());
    let pod = Arc::new(pod);
    f.add(pod.clone()).unwrap();
    f.update(pod).unwrap();
    assert_eq!(f.len(), 1);
    assert_eq!(
        format!("{:?}", f.state.lock().queue),
        "[ObjectKey(prod/web)]"
    );
}

#[test]
fn pushes_after_close_are_refused() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.close();
    assert!(f.is_closed());
    assert_eq!(f.add(obj("a", 1)), Err(FifoError::Closed));
    assert_eq!(f.update(obj("a", 1)), Err(FifoError::Closed));
    assert_eq!(f.delete(obj("a", 1)), Err(FifoError::Closed));
    assert_eq!(f.replace(vec![], "1".into()), Err(FifoError::Closed));
    assert_eq!(f.resync(), Err(FifoError::Closed));
    assert_eq!(f.bookmark("1".into()), Err(FifoError::Closed));
    assert!(f.is_empty());
}

#[test]
fn pop_after_close_drains_then_errors() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.close();
    assert_eq!(drain(&f), [vec!["Added(a@1)"], vec!["Added(b@1)"]]);
    assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
}

#[tokio::test]
async fn pop_waits_for_push() {
    let f = Arc::new(fifo());
    let consumer = f.clone();
    let task = tokio::spawn(async move {
        let mut got = Vec::new();
        consumer
            .pop(&mut |deltas| got = deltas)
            .await
            .map(|()| show_all(&got))
    });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!task.is_finished());
    f.add(obj("a", 1)).unwrap();
    assert_eq!(task.await.unwrap().unwrap(), ["Added(a@1)"]);
}

#[tokio::test]
async fn close_wakes_a_waiting_pop() {
    let f = Arc::new(fifo());
    let consumer = f.clone();
    let task = tokio::spawn(async move { consumer.pop(&mut |_| {}).await });
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    f.close();
    assert_eq!(task.await.unwrap(), Err(FifoError::Closed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pops_never_overlap_and_hand_out_each_key_once() {
    const KEYS: usize = 2000;
    let f = Arc::new(fifo());
    let busy = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicUsize::new(0));
    let mut consumers = Vec::new();
    for _ in 0..3 {
        let (f, busy, seen) = (f.clone(), busy.clone(), seen.clone());
        consumers.push(tokio::spawn(async move {
            while f
                .pop(&mut |deltas| {
                    assert!(!busy.swap(true, Ordering::SeqCst), "process calls overlap");
                    seen.fetch_add(deltas.len(), Ordering::SeqCst);
                    busy.store(false, Ordering::SeqCst);
                })
                .await
                .is_ok()
            {}
        }));
    }
    let producer = {
        let f = f.clone();
        tokio::task::spawn_blocking(move || {
            for i in 0..KEYS {
                f.add(obj(&i.to_string(), 0)).unwrap();
            }
        })
    };
    producer.await.unwrap();
    f.close();
    for c in consumers {
        c.await.unwrap();
    }
    assert_eq!(seen.load(Ordering::SeqCst), KEYS);
}

/// A waker that records whether it was woken.
struct Flag(AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_consumer_waiting_for_the_pop_slot_is_woken_when_it_is_released() {
    let f = Arc::new(fifo());
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = std::task::Waker::from(flag.clone());
    let second = f.clone();
    let mut second_got = Vec::new();
    let mut second_pop = Box::pin(async move {
        second
            .pop(&mut |d| second_got = d)
            .await
            .map(|()| show_all(&second_got))
    });
    // While the first consumer processes `a`, the second one must wait for the slot,
    // although `b` is queued.
    let first = pop_now_during(&f, || {
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(second_pop.as_mut().poll(&mut cx).is_pending());
    });
    let mut cx = std::task::Context::from_waker(&waker);
    assert_eq!(first, ["Added(a@1)"]);
    assert!(
        flag.0.load(Ordering::SeqCst),
        "releasing the slot wakes the waiting consumer"
    );
    match second_pop.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(got) => assert_eq!(got.unwrap(), ["Added(b@1)"]),
        std::task::Poll::Pending => panic!("the second consumer should have taken b"),
    }
    assert_eq!(f.state.lock().consumers.waiting, 0);
}

#[test]
fn a_cancelled_pop_leaves_nothing_behind() {
    let f = fifo();
    let mut process = |_| panic!("nothing was queued");
    let mut waiting = Box::pin(f.pop(&mut process));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(f.state.lock().consumers.waiting, 1);
    drop(waiting);
    assert_eq!(f.state.lock().consumers.waiting, 0);
    f.add(obj("a", 1)).unwrap();
    assert_eq!(pop_now(&f), ["Added(a@1)"]);
}

#[test]
fn queue_memory_is_given_back_after_a_large_burst() {
    let f = fifo();
    for i in 0..2 * SHRINK_ABOVE {
        f.add(obj(&i.to_string(), 1)).unwrap();
    }
    drain(&f);
    let st = f.state.lock();
    assert!(st.items.capacity() < SHRINK_ABOVE);
    assert!(st.queue.capacity() < SHRINK_ABOVE);
}

#[test]
fn delete_while_the_add_is_processed_is_not_dropped() {
    // The store does not hold `a` yet while its add is processed; the delete must count
    // `a` as known anyway.
    let (f, store) = fifo_known(&[]);
    f.add(obj("a", 1)).unwrap();
    let fifo = f.clone();
    let popped = futures::FutureExt::now_or_never(f.pop(&mut |deltas| {
        fifo.delete(obj("a", 1)).unwrap();
        for d in deltas {
            if let Delta::Added(o) = d {
                store.add(o).unwrap();
            }
        }
    }));
    popped.unwrap().unwrap();
    assert_eq!(pop_now(&*f), ["Deleted(a@1)"]);
}

#[test]
fn delete_while_the_delete_is_processed_is_dropped() {
    let (f, _store) = fifo_known(&[obj("a", 1)]);
    f.delete(obj("a", 1)).unwrap();
    let fifo = f.clone();
    futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.delete(obj("a", 1)).unwrap()))
        .unwrap()
        .unwrap();
    assert!(f.is_empty());
}

#[test]
fn replace_while_processing_tombstones_the_popped_state() {
    let (f, _store) = fifo_known(&[obj("a", 1)]);
    f.update(obj("a", 2)).unwrap();
    let fifo = f.clone();
    futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.replace(vec![], "3".into()).unwrap()))
        .unwrap()
        .unwrap();
    assert_eq!(pop_now(&*f), ["Gone(a, a@2)"]);
}

#[test]
fn resync_while_processing_syncs_the_popped_state() {
    let (f, _store) = fifo_known(&[obj("a", 1), obj("b", 1)]);
    f.update(obj("a", 2)).unwrap();
    let fifo = f.clone();
    futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.resync().unwrap()))
        .unwrap()
        .unwrap();
    assert_eq!(drain(&*f), [vec!["Sync(a@2)"], vec!["Sync(b@1)"]]);
}

#[test]
fn debug_shows_the_queue_state() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    let text = format!("{f:?}");
    assert!(text.contains("queued_keys: 1"), "{text}");
}

#[test]
fn a_delta_fifo_takes_lists_whole_only() {
    let f = fifo();
    assert!(!f.takes_list_parts());
    assert!(matches!(
        f.list_part(vec![obj("a", 1)], true),
        Err(FifoError::Unsupported(_))
    ));
    assert!(f.is_empty());
}
