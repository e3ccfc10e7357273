use std::hash::BuildHasher;

use super::*;
use crate::queue::{PriorityQueue, WorkQueue};

/// Whether an `add` of `item` at `priority` would be answered without the queue's lock.
fn answered_without_lock<O>(
    queue: &crate::queue::OrderedQueue<&'static str, O>,
    item: &'static str,
    priority: i32,
) -> bool {
    let engine = &queue.engine;
    let hash = engine.hasher.hash_one(item);
    engine.published.waiting(hash, &item, priority)
}

#[test]
fn a_priority_is_stored_rounded_down_or_not_at_all() {
    let answers_at = |stored: i32, asked: i32| answers(status(7, true, stored), 7, asked);
    assert!(answers_at(0, 0));
    assert!(answers_at(5, -100));
    assert!(!answers_at(0, 5));
    // Above i16::MAX: stored as i16::MAX, still answers adds up to that.
    assert!(answers_at(i32::MAX, i32::from(i16::MAX)));
    assert!(!answers_at(i32::MAX, i32::MAX));
    // Below i16::MIN: never answered here.
    assert!(!answers_at(i32::MIN, i32::MIN));
}

#[test]
fn a_status_answers_only_its_own_generation_while_waiting() {
    assert!(answers(status(3, true, 0), 3, 0));
    assert!(!answers(status(3, true, 0), 2, 0));
    assert!(!answers(status(3, false, 0), 3, 0));
    assert_eq!(
        unpack(pack(MAX_PUBLISHED_ID - 1, GEN_MASK)),
        (MAX_PUBLISHED_ID - 1, GEN_MASK)
    );
}

#[test]
fn every_publishable_slot_has_its_own_status_word() {
    let mut last = None;
    for id in (0..MAX_PUBLISHED_ID)
        .step_by(61)
        .chain([MAX_PUBLISHED_ID - 1])
    {
        let (chunk, at) = Statuses::locate(id);
        assert!(chunk < CHUNKS && at < BASE << chunk, "id {id}");
        if let Some((c, a)) = last {
            assert!((chunk, at) > (c, a), "ids map in order");
        }
        last = Some((chunk, at));
    }
    let statuses = Statuses::default();
    assert!(statuses.get(100).is_none(), "no chunk before a publication");
    statuses.get_or_make(100).store(9, Ordering::Relaxed);
    assert_eq!(statuses.get(100).unwrap().load(Ordering::Relaxed), 9);
    assert_eq!(statuses.get(101).unwrap().load(Ordering::Relaxed), 0);
}

#[test]
fn an_item_added_once_is_not_published() {
    let queue = WorkQueue::new();
    queue.add("a");
    assert_eq!(queue.engine.published.len(), 0);
    assert!(!answered_without_lock(&queue, "a", 0));
}

#[test]
fn an_add_that_finds_the_item_waiting_publishes_it() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("a");
    assert_eq!(queue.engine.published.len(), 1);
    assert!(answered_without_lock(&queue, "a", 0));
    assert!(!answered_without_lock(&queue, "b", 0));
    queue.add("a");
    assert_eq!(queue.len(), 1);
}

#[test]
fn a_handed_out_item_is_added_again_under_the_lock() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("a");
    let a = queue.try_get().unwrap();
    assert!(!answered_without_lock(&queue, "a", 0), "being processed");
    queue.add("a");
    assert_eq!(queue.try_get(), None, "never two workers on one item");
    assert!(
        answered_without_lock(&queue, "a", 0),
        "re-added while processing"
    );
    queue.add("a");
    queue.done(&a);
    assert_eq!(queue.try_get(), Some("a"), "once more after done");
    queue.done(&"a");
    assert_eq!(queue.try_get(), None);
}

#[test]
fn an_item_that_comes_back_is_published_again_at_once() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("a");
    let a = queue.try_get().unwrap();
    queue.done(&a);
    assert!(
        !answered_without_lock(&queue, "a", 0),
        "the queue no longer holds it"
    );
    queue.add("a");
    assert!(answered_without_lock(&queue, "a", 0));
    assert_eq!(queue.try_get(), Some("a"));
    assert_eq!(queue.try_get(), None);
}

#[test]
fn a_delayed_item_is_not_answered_without_the_lock() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("a");
    let a = queue.try_get().unwrap();
    queue.add_after("a", std::time::Duration::from_secs(60));
    queue.done(&a);
    assert!(
        !answered_without_lock(&queue, "a", 0),
        "delayed, not waiting"
    );
    queue.add("a");
    assert_eq!(
        queue.try_get(),
        Some("a"),
        "an add makes a delayed item ready now"
    );
}

#[test]
fn an_add_at_a_higher_priority_takes_the_lock_and_raises_it() {
    let queue = PriorityQueue::new();
    queue.add_with_priority("a", 0);
    queue.add_with_priority("a", 0);
    queue.add_with_priority("b", 1);
    assert!(answered_without_lock(&queue, "a", -5));
    assert!(!answered_without_lock(&queue, "a", 5));
    queue.add_with_priority("a", 5);
    assert!(
        answered_without_lock(&queue, "a", 5),
        "the status follows the raise"
    );
    assert_eq!(queue.try_get_with_priority(), Some(("a", 5)));
}

#[test]
fn a_batch_answers_its_leading_waiting_items_without_the_lock_in_order() {
    let queue = WorkQueue::new();
    queue.add("a");
    queue.add("a");
    queue.add_batch(vec!["a", "b", "a", "c"]);
    assert_eq!(queue.len(), 3);
    assert_eq!(queue.try_get(), Some("a"));
    assert_eq!(queue.try_get(), Some("b"));
    assert_eq!(queue.try_get(), Some("c"));
}

#[test]
fn stale_entries_are_swept_and_an_idle_queue_forgets_them() {
    let published = Published::<u32>::default();
    let hasher = foldhash::fast::RandomState::default();
    for id in 0..4u32 {
        published.publish(id, hasher.hash_one(id), &id, true, 0);
    }
    assert_eq!(published.len(), 4);
    // Slot 1 moved on to another publication; slots 2 and 3 are no longer published.
    published.publish(1, hasher.hash_one(99u32), &99, true, 0);
    published.sweep(|id| id < 2);
    assert_eq!(published.len(), 2, "0 and 99 stay");
    assert!(published.waiting(hasher.hash_one(0u32), &0, 0));
    assert!(published.waiting(hasher.hash_one(99u32), &99, 0));
    assert!(!published.waiting(hasher.hash_one(1u32), &1, 0));
    assert!(!published.should_sweep(0));
    published.clear();
    assert_eq!(published.len(), 0);
    assert!(!published.waiting(hasher.hash_one(0u32), &0, 0));
}
