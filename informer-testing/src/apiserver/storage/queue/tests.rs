use super::*;

impl Weight for Vec<u8> {
    fn bytes(&self) -> usize {
        self.len()
    }
}

fn queue(events: usize, bytes: usize) -> Queue<Vec<u8>> {
    Queue::new(Backlog { events, bytes })
}

#[test]
fn a_queue_past_its_event_limit_overflows_and_drops_its_items() {
    let q = queue(2, usize::MAX);
    assert!(q.push(vec![1]).is_ok());
    assert!(q.push(vec![2]).is_ok());
    assert_eq!(q.push(vec![3]), Err(Closed::Overflowed));
    assert_eq!(q.backlog(), (0, 0), "the backlog is dropped");
    assert_eq!(q.try_pop(), None);
    assert_eq!(q.push(vec![4]), Err(Closed::Overflowed));
}

#[test]
fn a_queue_past_its_byte_limit_overflows() {
    let q = queue(100, 10);
    assert!(q.push(vec![0; 6]).is_ok());
    assert_eq!(q.backlog(), (1, 6));
    assert_eq!(q.push(vec![0; 5]), Err(Closed::Overflowed));
}

#[test]
fn an_item_larger_than_the_byte_limit_fits_an_empty_queue() {
    let q = queue(100, 10);
    assert!(q.push(vec![0; 50]).is_ok());
    assert_eq!(q.try_pop().map(|v| v.len()), Some(50));
    assert!(q.push(vec![0; 50]).is_ok());
}

#[test]
fn popping_frees_budget() {
    let q = queue(1, usize::MAX);
    assert!(q.push(vec![1]).is_ok());
    assert_eq!(q.try_pop(), Some(vec![1]));
    assert!(q.push(vec![2]).is_ok());
}

#[test]
fn replays_ignore_the_limit() {
    let q = queue(1, 1);
    for i in 0..10 {
        q.push_unbounded(vec![i; 4]);
    }
    assert_eq!(q.backlog(), (10, 40));
}

#[tokio::test]
async fn a_closed_queue_drains_then_ends() {
    let q = queue(10, usize::MAX);
    q.push(vec![1]).unwrap();
    q.close();
    assert_eq!(q.push(vec![2]), Err(Closed::Ended));
    assert_eq!(q.pop().await, Some(vec![1]));
    assert_eq!(q.pop().await, None);
    assert_eq!(q.closed(), Some(Closed::Ended));
}

#[tokio::test]
async fn pop_waits_for_a_push() {
    let q = std::sync::Arc::new(queue(10, usize::MAX));
    let consumer = tokio::spawn({
        let q = q.clone();
        async move { q.pop().await }
    });
    tokio::task::yield_now().await;
    q.push(vec![7]).unwrap();
    assert_eq!(consumer.await.unwrap(), Some(vec![7]));
    assert!(q.is_idle());
}

#[test]
fn a_finished_queue_holds_its_items_and_is_closed() {
    let q = Queue::finished([vec![1], vec![2]]);
    assert_eq!(q.closed(), Some(Closed::Ended));
    assert_eq!(q.backlog(), (2, 2));
}

#[test]
fn a_drained_queue_returns_its_capacity() {
    let q = queue(usize::MAX, usize::MAX);
    for _ in 0..10_000 {
        q.push(vec![0]).unwrap();
    }
    while q.try_pop().is_some() {}
    assert!(q.state.lock().items.capacity() <= KEPT_CAPACITY);
}
