use std::sync::Mutex;

use super::*;
use crate::queue::{PRIORITY_LOW, PriorityQueue};

/// Records every add it sees, with its priority, and changes nothing else.
struct Recording {
    inner: PriorityQueue<&'static str>,
    adds: Mutex<Vec<(&'static str, i32)>>,
}

impl Recording {
    fn new() -> Self {
        Self {
            inner: PriorityQueue::new(),
            adds: Mutex::new(Vec::new()),
        }
    }
}

impl QueueWrapper for Recording {
    type Item = &'static str;
    fn inner(&self) -> &dyn Queue<&'static str> {
        &self.inner
    }
    fn add_with_priority(&self, item: &'static str, priority: i32) {
        self.adds.lock().unwrap().push((item, priority));
        self.inner.add_with_priority(item, priority)
    }
}

#[test]
fn every_add_reaches_add_with_priority_with_its_priority() {
    let q = Recording::new();
    Queue::add(&q, "a");
    Queue::add_batch(&q, vec!["b"]);
    Queue::add_batch_with_priority(&q, vec!["c", "d"], PRIORITY_LOW);
    Queue::add_with_priority(&q, "e", PRIORITY_LOW);
    assert_eq!(
        *q.adds.lock().unwrap(),
        [
            ("a", PRIORITY_NORMAL),
            ("b", PRIORITY_NORMAL),
            ("c", PRIORITY_LOW),
            ("d", PRIORITY_LOW),
            ("e", PRIORITY_LOW)
        ]
    );
}

#[tokio::test]
async fn a_wrapper_keeps_the_inner_queues_priorities() {
    let q = Recording::new();
    Queue::add_with_priority(&q, "resync", PRIORITY_LOW);
    Queue::add(&q, "change");
    assert_eq!(Queue::get(&q).await, Some("change"), "low priority waits");
    Queue::done(&q, &"change");
    assert_eq!(Queue::get(&q).await, Some("resync"));
}

#[tokio::test]
async fn what_a_wrapper_does_not_override_is_the_inner_queues() {
    let q = Recording::new();
    Queue::add(&q, "a");
    assert_eq!(Queue::len(&q), 1);
    let item = Queue::get(&q).await.unwrap();
    Queue::add(&q, "a");
    assert_eq!(
        Queue::len(&q),
        0,
        "being processed: queued again after done"
    );
    Queue::done(&q, &item);
    assert_eq!(Queue::len(&q), 1);
    Queue::add_rate_limited(&q, "b");
    assert_eq!(Queue::num_requeues(&q, &"b"), 1);
    Queue::forget(&q, &"b");
    assert_eq!(Queue::num_requeues(&q, &"b"), 0);
    Queue::shut_down(&q);
    assert!(Queue::is_shutting_down(&q));
}

/// Forwards `try_get` (its `get` forwards too).
struct Forwarding(PriorityQueue<&'static str>);

impl QueueWrapper for Forwarding {
    type Item = &'static str;
    fn inner(&self) -> &dyn Queue<&'static str> {
        &self.0
    }
    fn try_get(&self) -> Option<&'static str> {
        Queue::try_get(&self.0)
    }
}

#[test]
fn a_wrapper_hands_out_through_get_unless_it_forwards_try_get() {
    let queue: Box<dyn Queue<&'static str>> = Box::new(Recording::new());
    queue.add("a");
    assert_eq!(
        queue.try_get(),
        None,
        "the default: every hand-out through get"
    );
    assert_eq!(queue.len(), 1);
    let queue: Box<dyn Queue<&'static str>> = Box::new(Forwarding(PriorityQueue::new()));
    queue.add("a");
    assert_eq!(queue.try_get(), Some("a"));
}
