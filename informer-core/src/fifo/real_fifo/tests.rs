use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;
use k8s_openapi::api::core::v1::Pod;

use super::*;
use crate::error::KeyError;
use crate::fifo::test_support::{MapStore, Obj, drain, obj, obj_key, pop_now, show_all, try_pop};

fn fifo() -> RealFifo<Obj> {
    RealFifo::with_key_fn(obj_key, None)
}

fn fifo_known(known: &[Arc<Obj>]) -> (Arc<RealFifo<Obj>>, Arc<MapStore>) {
    let store = MapStore::with(known);
    let dyn_store: Arc<dyn Store<Obj>> = store.clone();
    (
        Arc::new(RealFifo::with_key_fn(obj_key, Some(dyn_store))),
        store,
    )
}

/// Queues and pops an empty initial list, so that later batches are not cut at the end
/// of the initial population.
fn past_initial_list(f: &RealFifo<Obj>) {
    f.replace(vec![], "0".into()).unwrap();
    assert_eq!(pop_now(f), ["ReplacedAll[]@0"]);
    assert!(f.has_synced());
}

/// Pops every ready batch; for each, whether the FIFO had synced inside `process` and
/// after it returned.
fn synced_per_batch(f: &Arc<RealFifo<Obj>>) -> Vec<(bool, bool)> {
    let mut seen = Vec::new();
    while !f.is_empty() {
        let fifo = f.clone();
        let mut inside = None;
        f.pop(&mut |_| inside = Some(fifo.has_synced()))
            .now_or_never()
            .unwrap()
            .unwrap();
        seen.push((inside.unwrap(), f.has_synced()));
    }
    seen
}

/// Pops one ready batch, running `during` inside `process`.
fn pop_during(f: &RealFifo<Obj>, during: impl FnOnce() + Send) -> Vec<String> {
    let mut during = Some(during);
    let mut out = Vec::new();
    f.pop(&mut |batch| {
        if let Some(during) = during.take() {
            during();
        }
        out = show_all(&batch);
    })
    .now_or_never()
    .expect("a batch is ready")
    .expect("the FIFO is open");
    out
}

#[test]
fn fifo_is_object_safe() {
    fn _obj_safe(_: Arc<dyn Fifo<Obj>>) {}
    _obj_safe(Arc::new(fifo()));
}

#[test]
fn pop_keyed_hands_out_the_key_of_each_item() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.delete(obj("c", 3)).unwrap();
    f.bookmark("4".into()).unwrap();
    let mut popped = Vec::new();
    while !f.is_empty() {
        f.pop_keyed(&mut |batch, keys| {
            assert_eq!(batch.len(), keys.len());
            popped.extend(keys.into_iter().map(|k| k.map(|k| k.to_string())));
        })
        .now_or_never()
        .expect("a batch is ready")
        .expect("the FIFO is open");
    }
    let key = |s: &str| Some(s.to_owned());
    assert_eq!(popped, [None, key("ns/b"), key("ns/c"), None]);
}

#[test]
fn the_default_pop_keyed_knows_no_key() {
    struct Plain(RealFifo<Obj>);
    #[async_trait]
    impl Fifo<Obj> for Plain {
        fn add(&self, obj: Arc<Obj>) -> Result<(), FifoError> {
            self.0.add(obj)
        }
        fn update(&self, obj: Arc<Obj>) -> Result<(), FifoError> {
            self.0.update(obj)
        }
        fn delete(&self, obj: Arc<Obj>) -> Result<(), FifoError> {
            self.0.delete(obj)
        }
        fn replace(&self, objects: Vec<Arc<Obj>>, rv: String) -> Result<(), FifoError> {
            self.0.replace(objects, rv)
        }
        fn resync(&self) -> Result<(), FifoError> {
            self.0.resync()
        }
        fn bookmark(&self, rv: String) -> Result<(), FifoError> {
            self.0.bookmark(rv)
        }
        async fn pop(
            &self,
            process: &mut (dyn FnMut(Vec<Delta<Obj>>) + Send),
        ) -> Result<(), FifoError> {
            self.0.pop(process).await
        }
        fn has_synced(&self) -> bool {
            self.0.has_synced()
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn close(&self) {
            self.0.close()
        }
        fn is_closed(&self) -> bool {
            self.0.is_closed()
        }
    }
    let f = Plain(fifo());
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    let mut keys_seen = Vec::new();
    while !f.is_empty() {
        f.pop_keyed(&mut |batch, keys| {
            assert_eq!(batch.len(), keys.len());
            keys_seen.extend(keys);
        })
        .now_or_never()
        .expect("a batch is ready")
        .expect("the FIFO is open");
    }
    assert_eq!(keys_seen, [None, None]);
}

#[test]
fn events_kept_in_order_without_merging() {
    let f = fifo().with_batch_size(1);
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.delete(obj("a", 3)).unwrap();
    f.delete(obj("a", 3)).unwrap(); // not collapsed either
    assert_eq!(f.len(), 5);
    assert_eq!(
        drain(&f).concat(),
        [
            "Added(a@1)",
            "Added(b@1)",
            "Updated(a@2)",
            "Deleted(a@3)",
            "Deleted(a@3)"
        ]
    );
}

#[test]
fn delete_of_unknown_object_is_queued() {
    let (f, _) = fifo_known(&[]);
    f.delete(obj("stranger", 1)).unwrap();
    assert_eq!(drain(&*f), [vec!["Deleted(stranger@1)"]]);
}

#[test]
fn replace_is_one_replaced_all_item() {
    let (f, _) = fifo_known(&[obj("gone", 1)]);
    f.add(obj("a", 1)).unwrap();
    f.replace(vec![obj("b", 1), obj("c", 1)], "42".into())
        .unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(
        drain(&*f),
        [vec!["Added(a@1)"], vec!["ReplacedAll[b@1,c@1]@42"]]
    );
}

#[test]
fn replace_with_empty_list_is_one_item_too() {
    let f = fifo();
    f.replace(vec![], "1".into()).unwrap();
    assert_eq!(drain(&f), [vec!["ReplacedAll[]@1"]]);
}

#[test]
fn replace_refuses_the_whole_list_if_an_object_has_no_key() {
    let f = fifo();
    let err = f.replace(vec![obj("a", 1), obj("", 1)], "1".into());
    assert!(matches!(
        err,
        Err(FifoError::Key(KeyError::MissingName { .. }))
    ));
    assert!(f.is_empty());
    assert!(!f.has_synced());
}

#[test]
fn list_parts_are_items_and_the_replace_ending_them_queues_a_last_part_and_the_end() {
    let f = fifo();
    assert!(f.takes_list_parts());
    f.list_part(vec![obj("a", 1), obj("b", 1)], true).unwrap();
    f.list_part(vec![obj("c", 1)], false).unwrap();
    f.replace(vec![obj("d", 1)], "9".into()).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["ListPart[a@1,b@1]"],
            vec!["ListPart[c@1]"],
            vec!["ListPart[d@1]"],
            vec!["ListEnd[a,b,c,d]@9"],
        ]
    );
}

#[test]
fn a_first_part_supersedes_the_parts_of_a_list_that_never_ended() {
    let f = fifo();
    f.list_part(vec![obj("a", 1), obj("b", 1)], true).unwrap(); // this list failed
    f.list_part(vec![obj("b", 2)], true).unwrap();
    f.replace(vec![], "9".into()).unwrap();
    // Both parts are applied, in order; the end lists only the second list's keys, so the
    // consumer deletes `a`.
    assert_eq!(
        drain(&f),
        [
            vec!["ListPart[a@1,b@1]"],
            vec!["ListPart[b@2]"],
            vec!["ListEnd[b]@9"],
        ]
    );
    // A later replace is an ordinary atomic relist again.
    f.replace(vec![obj("c", 1)], "10".into()).unwrap();
    assert_eq!(drain(&f), [vec!["ReplacedAll[c@1]@10"]]);
}

#[test]
fn list_parts_do_not_sync_until_the_list_ends() {
    let f = Arc::new(fifo());
    f.list_part(vec![obj("a", 1)], true).unwrap();
    assert_eq!(pop_now(&*f), ["ListPart[a@1]"]);
    assert!(!f.has_synced(), "a part is not the whole list");
    f.replace(vec![obj("b", 1)], "2".into()).unwrap();
    f.add(obj("c", 1)).unwrap(); // after the list
    assert_eq!(
        synced_per_batch(&f),
        [(false, false), (false, true), (true, true)]
    );
}

#[test]
fn a_list_part_refuses_all_its_objects_if_one_has_no_key() {
    let f = fifo();
    assert!(matches!(
        f.list_part(vec![obj("a", 1), obj("", 1)], true),
        Err(FifoError::Key(_))
    ));
    assert!(f.is_empty());
}

#[test]
fn resync_queues_nothing_while_a_list_arrives_in_parts() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    past_initial_list(&f);
    f.list_part(vec![obj("a", 2)], true).unwrap();
    f.resync().unwrap();
    assert_eq!(f.len(), 1);
    f.replace(vec![], "3".into()).unwrap();
    f.resync().unwrap();
    assert_eq!(f.len(), 2, "the part and the end, no sync");
}

#[test]
fn bookmark_items_are_queued() {
    let f = fifo();
    f.bookmark("5".into()).unwrap();
    f.bookmark("6".into()).unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(drain(&f), [vec!["Bookmark(5)"], vec!["Bookmark(6)"]]);
}

#[test]
fn batch_holds_consecutive_items_of_distinct_keys() {
    let f = fifo();
    past_initial_list(&f);
    for name in ["a", "b", "c"] {
        f.add(obj(name, 1)).unwrap();
    }
    assert_eq!(drain(&f), [vec!["Added(a@1)", "Added(b@1)", "Added(c@1)"]]);
}

#[test]
fn batch_never_holds_two_items_for_one_key() {
    let f = fifo();
    past_initial_list(&f);
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.add(obj("c", 1)).unwrap();
    f.update(obj("c", 2)).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(a@1)", "Added(b@1)"],
            vec!["Updated(a@2)", "Added(c@1)"],
            vec!["Updated(c@2)"]
        ]
    );
}

#[test]
fn batch_respects_max_size() {
    let f = fifo().with_batch_size(4);
    past_initial_list(&f);
    for i in 0..10 {
        f.add(obj(&i.to_string(), 1)).unwrap();
    }
    let sizes: Vec<usize> = drain(&f).iter().map(Vec::len).collect();
    assert_eq!(sizes, [4, 4, 2]);
}

#[test]
fn with_batch_size_zero_counts_as_one() {
    let f = fifo().with_batch_size(0);
    assert_eq!(f.batch_size(), 1);
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(drain(&f).len(), 2);
}

#[test]
fn replaced_all_is_alone_in_its_batch() {
    let f = fifo();
    f.replace(vec![], "0".into()).unwrap();
    pop_now(&f); // the initial list
    f.add(obj("a", 1)).unwrap();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(
        drain(&f),
        [
            vec!["Added(a@1)".to_owned()],
            vec!["ReplacedAll[a@1]@1".to_owned()],
            vec!["Added(b@1)".to_owned()]
        ]
    );
}

#[test]
fn bookmark_ends_its_batch() {
    let f = fifo();
    f.replace(vec![], "0".into()).unwrap();
    pop_now(&f);
    f.add(obj("a", 1)).unwrap();
    f.bookmark("2".into()).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(
        drain(&f),
        [vec!["Added(a@1)", "Bookmark(2)"], vec!["Added(b@1)"]]
    );
}

#[test]
fn batch_does_not_mix_initial_items_with_later_ones() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into()).unwrap(); // the initial population: one item
    f.add(obj("b", 2)).unwrap();
    f.add(obj("c", 3)).unwrap();
    assert_eq!(pop_now(&f), ["ReplacedAll[a@1]@1"]);
    assert!(f.has_synced());
    assert_eq!(pop_now(&f), ["Added(b@2)", "Added(c@3)"]);
}

#[test]
fn has_synced_is_false_before_anything_is_pushed() {
    let f = fifo();
    assert!(!f.has_synced());
    f.bookmark("1".into()).unwrap(); // a bookmark does not populate
    assert!(!f.has_synced());
}

#[test]
fn has_synced_only_after_last_initial_item_processed() {
    let f = Arc::new(fifo());
    f.bookmark("1".into()).unwrap();
    f.replace(vec![obj("a", 1)], "2".into()).unwrap();
    f.add(obj("b", 1)).unwrap(); // after the list: not part of it
    assert_eq!(
        synced_per_batch(&f),
        [(false, false), (false, true), (true, true)]
    );
}

#[test]
fn has_synced_at_once_after_a_push_before_any_replace() {
    // client-go: `Delete` sets `populated` and leaves `initialPopulationCount` at 0.
    let f = fifo();
    f.delete(obj("a", 1)).unwrap();
    assert!(f.has_synced());
    f.replace(vec![obj("b", 1)], "1".into()).unwrap(); // not the first: no population
    assert!(f.has_synced());
}

#[test]
fn has_synced_not_counting_a_batch_in_flight_before_the_first_replace() {
    // A bookmark popped before the first list is not part of the initial population,
    // even though its processing ends after the list was queued.
    let f = Arc::new(fifo());
    f.bookmark("1".into()).unwrap();
    let fifo = f.clone();
    pop_during(&f, move || {
        fifo.replace(vec![obj("a", 1)], "2".into()).unwrap()
    });
    assert!(!f.has_synced());
    pop_now(&*f);
    assert!(f.has_synced());
}

#[test]
fn resync_skips_keys_with_queued_items() {
    let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
    past_initial_list(&f);
    f.update(obj("a", 2)).unwrap();
    f.resync().unwrap();
    assert_eq!(drain(&*f), [vec!["Updated(a@2)", "Sync(b@1)"]]);
}

#[test]
fn resync_skips_keys_being_processed() {
    let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
    f.update(obj("a", 2)).unwrap();
    let fifo = f.clone();
    assert_eq!(
        pop_during(&f, move || fifo.resync().unwrap()),
        ["Updated(a@2)"]
    );
    assert_eq!(drain(&*f), [vec!["Sync(b@1)"]]);
}

#[test]
fn resync_queues_nothing_while_a_relist_is_pending() {
    let (f, _) = fifo_known(&[obj("a", 1)]);
    f.replace(vec![], "1".into()).unwrap();
    f.resync().unwrap();
    assert_eq!(f.len(), 1);
    // Nor while it is being processed.
    let fifo = f.clone();
    pop_during(&f, move || fifo.resync().unwrap());
    assert!(f.is_empty());
    // Afterwards it does again.
    f.resync().unwrap();
    assert_eq!(drain(&*f), [vec!["Sync(a@1)"]]);
}

#[test]
fn resync_without_known_objects_queues_nothing() {
    let f = fifo();
    f.resync().unwrap();
    assert!(f.is_empty());
}

#[test]
fn object_without_name_is_refused() {
    let f = RealFifo::<Pod>::new(None);
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
    let f = fifo().with_batch_size(1);
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.close();
    assert_eq!(drain(&f), [vec!["Added(a@1)"], vec!["Added(b@1)"]]);
    assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
}

#[test]
fn len_counts_items() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.bookmark("3".into()).unwrap();
    f.replace(vec![obj("a", 2), obj("b", 1)], "4".into())
        .unwrap();
    assert_eq!(f.len(), 4);
}

#[test]
fn key_map_is_swept_of_processed_keys() {
    let f = fifo();
    for i in 0..5 * MIN_SWEEP {
        f.add(obj(&i.to_string(), 1)).unwrap();
        pop_now(&f);
    }
    assert!(f.state.lock().last_seq.len() <= MIN_SWEEP + 1);
}

#[test]
fn sweep_keeps_keys_with_queued_items() {
    let f = fifo().with_batch_size(usize::MAX);
    f.replace(vec![], "0".into()).unwrap();
    pop_now(&f);
    f.add(obj("k", 1)).unwrap();
    // Enough new keys to sweep several times while `k` is queued.
    for i in 0..4 * MIN_SWEEP {
        f.add(obj(&i.to_string(), 1)).unwrap();
    }
    f.update(obj("k", 2)).unwrap();
    let batches = drain(&f);
    assert_eq!(batches.len(), 2, "k's two items must not share a batch");
    assert_eq!(batches[0].len(), 1 + 4 * MIN_SWEEP);
    assert_eq!(batches[1], ["Updated(k@2)"]);
}

#[test]
fn queue_memory_is_given_back_after_a_large_burst() {
    let f = fifo().with_batch_size(usize::MAX);
    past_initial_list(&f);
    for i in 0..2 * SHRINK_ABOVE {
        f.add(obj(&i.to_string(), 1)).unwrap();
    }
    drain(&f);
    assert!(f.state.lock().items.capacity() < SHRINK_ABOVE);
}

#[tokio::test]
async fn pop_waits_for_push() {
    let f = Arc::new(fifo());
    let consumer = f.clone();
    let task = tokio::spawn(async move {
        let mut got = Vec::new();
        consumer
            .pop(&mut |batch| got = batch)
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
async fn concurrent_producer_and_consumers_keep_order_and_lose_nothing() {
    const EVENTS: u32 = 20_000;
    let f = Arc::new(fifo());
    let busy = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut consumers = Vec::new();
    for _ in 0..2 {
        let (f, busy, seen) = (f.clone(), busy.clone(), seen.clone());
        consumers.push(tokio::spawn(async move {
            while f
                .pop(&mut |batch| {
                    assert!(!busy.swap(true, Ordering::SeqCst), "process calls overlap");
                    let mut seen = seen.lock();
                    for d in batch {
                        if let Delta::Added(o) = d {
                            seen.push((o.name.clone(), o.v));
                        }
                    }
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
            for v in 0..EVENTS {
                f.add(obj(&(v % 7).to_string(), v)).unwrap();
            }
        })
    };
    producer.await.unwrap();
    f.close();
    for c in consumers {
        c.await.unwrap();
    }
    let seen = seen.lock();
    assert_eq!(seen.len(), EVENTS as usize);
    assert!(
        seen.iter().map(|(_, v)| *v).eq(0..EVENTS),
        "events out of order"
    );
}

#[test]
fn debug_shows_the_queue_state() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    let text = format!("{f:?}");
    assert!(text.contains("queued: 1"), "{text}");
}

#[test]
fn poll_room_waits_while_max_items_are_queued_or_processed_and_wakes_as_batches_settle() {
    use std::task::{Context, Poll, Wake, Waker};
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let f = Arc::new(fifo());
    f.list_part(vec![obj("a", 1)], true).unwrap();
    assert_eq!(f.poll_room(&mut cx, 2), Poll::Ready(()));
    f.list_part(vec![obj("b", 1)], false).unwrap();
    assert_eq!(f.poll_room(&mut cx, 2), Poll::Pending, "two queued");
    // Popped but not processed yet: still counted.
    let (fifo, inner_waker) = (f.clone(), waker.clone());
    pop_during(&f, move || {
        let mut cx = Context::from_waker(&inner_waker);
        assert_eq!(fifo.poll_room(&mut cx, 2), Poll::Pending);
    });
    assert!(
        flag.0.load(Ordering::SeqCst),
        "woken once the batch settled"
    );
    assert_eq!(f.poll_room(&mut cx, 2), Poll::Ready(()));
    f.list_part(vec![obj("c", 1)], false).unwrap();
    flag.0.store(false, Ordering::SeqCst);
    assert_eq!(f.poll_room(&mut cx, 2), Poll::Pending);
    f.close();
    assert!(flag.0.load(Ordering::SeqCst), "woken on close");
    assert_eq!(f.poll_room(&mut cx, 2), Poll::Ready(()));
}
