use std::sync::Arc;
use std::time::Duration;

use tokio::time::advance;

use super::*;
use crate::queue::{PRIORITY_LOW, PRIORITY_NORMAL, Queue};

const MS: Duration = Duration::from_millis(1);

fn drain(q: &PriorityQueue<&'static str>) -> Vec<(&'static str, i32)> {
    std::iter::from_fn(|| {
        let (item, prio) = q.try_get_with_priority()?;
        q.done(&item);
        Some((item, prio))
    })
    .collect()
}

fn names(v: Vec<(&'static str, i32)>) -> Vec<&'static str> {
    v.into_iter().map(|(n, _)| n).collect()
}

#[test]
fn higher_priority_first() {
    let q = PriorityQueue::new();
    q.add_with_priority("low", PRIORITY_LOW);
    q.add_with_priority("normal", PRIORITY_NORMAL);
    q.add_with_priority("high", 10);
    assert_eq!(
        drain(&q),
        [("high", 10), ("normal", 0), ("low", PRIORITY_LOW)]
    );
}

#[test]
fn fifo_within_priority() {
    let q = PriorityQueue::new();
    for (item, prio) in [
        ("l1", -1),
        ("n1", 0),
        ("l2", -1),
        ("n2", 0),
        ("n3", 0),
        ("l3", -1),
    ] {
        q.add_with_priority(item, prio);
    }
    assert_eq!(names(drain(&q)), ["n1", "n2", "n3", "l1", "l2", "l3"]);
}

#[test]
fn readd_with_higher_priority_moves_up() {
    let q = PriorityQueue::new();
    q.add_with_priority("a", PRIORITY_LOW);
    q.add_with_priority("b", PRIORITY_LOW);
    q.add_with_priority("n", PRIORITY_NORMAL);
    q.add_with_priority("b", PRIORITY_NORMAL);
    assert_eq!(q.len(), 3);
    assert_eq!(
        drain(&q),
        [("n", 0), ("b", 0), ("a", PRIORITY_LOW)],
        "b moved to the back of the normal priority"
    );
}

#[test]
fn readd_with_lower_priority_keeps_the_higher_one() {
    let q = PriorityQueue::new();
    q.add_with_priority("a", 5);
    q.add_with_priority("b", 0);
    q.add_with_priority("a", PRIORITY_LOW);
    assert_eq!(drain(&q), [("a", 5), ("b", 0)]);
}

#[test]
fn low_priority_flood_does_not_starve_normal() {
    let q: PriorityQueue<String> = PriorityQueue::new();
    for i in 0..10_000 {
        q.add_with_priority(format!("ns/list-{i}"), PRIORITY_LOW);
    }
    // A worker is busy with one of the bulk keys when a real change arrives.
    let first = q.try_get().unwrap();
    q.add("ns/changed".to_string());
    assert_eq!(q.try_get().as_deref(), Some("ns/changed"));
    q.done(&first);
    assert_eq!(q.len(), 9_999);
}

#[tokio::test(start_paused = true)]
async fn earliest_ready_time_kept() {
    let q = PriorityQueue::new();
    q.add_after("a", 10 * MS);
    q.add_after("a", 100 * MS);
    q.add_after_with_priority("b", 100 * MS, 1);
    q.add_after_with_priority("b", 20 * MS, PRIORITY_LOW);
    advance(10 * MS).await;
    assert_eq!(drain(&q), [("a", 0)]);
    advance(10 * MS).await;
    assert_eq!(drain(&q), [("b", 1)], "earliest time and highest priority");
}

#[tokio::test(start_paused = true)]
async fn delayed_items_join_by_priority() {
    let q = PriorityQueue::new();
    q.add_with_priority("low-now", PRIORITY_LOW);
    q.add_after_with_priority("normal-later", 10 * MS, PRIORITY_NORMAL);
    advance(10 * MS).await;
    assert_eq!(names(drain(&q)), ["normal-later", "low-now"]);
}

#[test]
fn priority_resets_after_the_item_is_handed_out() {
    let q = PriorityQueue::new();
    q.add_with_priority("a", 10);
    assert_eq!(drain(&q), [("a", 10)]);
    q.add_with_priority("a", PRIORITY_LOW);
    assert_eq!(drain(&q), [("a", PRIORITY_LOW)]);
}

#[test]
fn readd_while_processing_keeps_highest_priority_for_after_done() {
    let q = PriorityQueue::new();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add_with_priority("a", PRIORITY_LOW);
    q.add_with_priority("a", 3);
    q.add_with_priority("a", 1);
    q.add_with_priority("b", 2);
    assert_eq!(q.try_get(), Some("b"));
    q.done(&"b");
    q.done(&a);
    assert_eq!(drain(&q), [("a", 3)]);
}

#[test]
fn item_added_twice_before_get_is_handed_out_once() {
    let q = PriorityQueue::new();
    q.add("a");
    q.add_with_priority("a", 4);
    q.add("a");
    assert_eq!(drain(&q), [("a", 4)]);
}

#[test]
fn item_is_never_handed_to_two_workers() {
    let q = PriorityQueue::new();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add_with_priority("a", 100);
    assert_eq!(q.try_get(), None);
    q.done(&a);
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test]
async fn shutdown_hands_out_queued_items_by_priority_then_none() {
    let q = PriorityQueue::new();
    q.add_with_priority("low", PRIORITY_LOW);
    q.add("normal");
    q.shut_down();
    q.add_with_priority("late", 100);
    assert_eq!(q.get().await, Some("normal"));
    assert_eq!(q.get().await, Some("low"));
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn delayed_item_ready_while_workers_wait() {
    let q = Arc::new(PriorityQueue::new());
    let worker = {
        let q = q.clone();
        tokio::spawn(async move { q.get_with_priority().await })
    };
    tokio::task::yield_now().await;
    q.add_after_with_priority("a", Duration::from_secs(3), 7);
    assert_eq!(worker.await.unwrap(), Some(("a", 7)));
}

#[test]
fn trait_add_with_priority_is_honoured() {
    let q: Arc<dyn Queue<&'static str>> = Arc::new(PriorityQueue::new());
    q.add_with_priority("low", PRIORITY_LOW);
    q.add("normal");
    assert_eq!(q.len(), 2);
    let q2 = PriorityQueue::new();
    Queue::add_with_priority(&q2, "low", PRIORITY_LOW);
    Queue::add(&q2, "normal");
    assert_eq!(names(drain(&q2)), ["normal", "low"]);
}

#[test]
fn many_distinct_priorities_keep_order() {
    let q: PriorityQueue<i32> = PriorityQueue::new();
    for p in [5, -3, 12, 0, 7, -50, 12, 3, 100, -1, 2, 9] {
        q.add_with_priority(p, p);
    }
    let mut got = Vec::new();
    while let Some(x) = q.try_get() {
        got.push(x);
        q.done(&x);
    }
    assert_eq!(got, [100, 12, 9, 7, 5, 3, 2, 0, -1, -3, -50]);
}

#[tokio::test]
async fn shut_down_during_a_drain_ends_the_drain_at_once() {
    let q = Arc::new(PriorityQueue::new());
    q.add_with_priority("a", 5);
    q.add_with_priority("b", PRIORITY_LOW);
    let _a = q.get().await.unwrap(); // in flight, never done
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { Queue::shut_down_with_drain(&*q, true).await })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(!drain.is_finished(), "a is in flight, b is queued");
    Queue::shut_down(&*q);
    tokio::time::timeout(Duration::from_secs(10), drain)
        .await
        .expect("a forced shutdown ends the drain")
        .unwrap();
}
