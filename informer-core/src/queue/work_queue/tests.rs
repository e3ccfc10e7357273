use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::{advance, timeout};

use super::*;
use crate::queue::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, Queue, QueueMetrics,
};

const MS: Duration = Duration::from_millis(1);

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new()
}

fn drain<T>(q: &WorkQueue<T>) -> Vec<T>
where
    T: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
{
    std::iter::from_fn(|| {
        let item = q.try_get()?;
        q.done(&item);
        Some(item)
    })
    .collect()
}

/// A worker task waiting in `get`.
fn spawn_get(q: &Arc<WorkQueue<&'static str>>) -> tokio::task::JoinHandle<Option<&'static str>> {
    let q = q.clone();
    tokio::spawn(async move { q.get().await })
}

/// Lets spawned tasks run (on a current-thread runtime).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[test]
fn queue_is_object_safe() {
    let q: Arc<dyn Queue<String>> = Arc::new(WorkQueue::<String>::new());
    q.add("a".into());
    assert_eq!(q.len(), 1);
    let p: Arc<dyn Queue<String>> = Arc::new(crate::queue::PriorityQueue::<String>::new());
    assert!(p.is_empty());
}

#[test]
fn fifo_order() {
    let q = queue();
    for item in ["c", "a", "d", "b"] {
        q.add(item);
    }
    assert_eq!(drain(&q), ["c", "a", "d", "b"]);
}

#[test]
fn item_added_twice_before_get_is_handed_out_once() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.add("a");
    assert_eq!(q.len(), 2);
    assert_eq!(drain(&q), ["a", "b"]);
}

#[test]
fn string_handed_out_reuses_the_buffer_of_a_forgotten_one() {
    let q = WorkQueue::<String>::new();
    let first = String::from("ns-1/pod-1");
    let buffer = first.as_ptr();
    q.add(first);
    let got = q.try_get().expect("ready");
    q.done(&got);
    q.add("ns-2/pod-2".into());
    let second = q.try_get().expect("ready");
    assert_eq!(second, "ns-2/pod-2");
    assert_eq!(
        second.as_ptr(),
        buffer,
        "copied into the forgotten item's buffer"
    );
    q.done(&second);
}

#[test]
fn strings_requeued_while_processing_keep_their_values() {
    let q = WorkQueue::<String>::new();
    let keys: Vec<String> = (0..40).map(|i| format!("ns/pod-{i}")).collect();
    for round in 0..4 {
        for k in &keys {
            q.add(k.clone());
        }
        for k in &keys {
            let item = q.try_get().expect("ready");
            assert_eq!(&item, k, "round {round}");
            if round % 2 == 1 {
                q.add(item.clone());
            }
            q.done(&item);
        }
        if round % 2 == 1 {
            assert_eq!(drain(&q), keys, "round {round}: requeued once each");
        }
        assert!(q.is_empty());
    }
}

#[test]
fn item_is_never_handed_to_two_workers() {
    let q = queue();
    q.add("a");
    assert_eq!(q.try_get(), Some("a"));
    q.add("a");
    q.add("a");
    assert_eq!(q.try_get(), None);
    assert_eq!(q.len(), 0);
}

#[test]
fn item_added_while_processing_is_requeued_after_done() {
    let q = queue();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add("a");
    q.add("a");
    assert_eq!(q.len(), 0);
    q.done(&a);
    assert_eq!(q.len(), 1);
    assert_eq!(drain(&q), ["a"]);
}

#[test]
fn requeued_item_goes_to_the_back() {
    let q = queue();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add("a");
    q.add("b");
    q.add("c");
    q.done(&a);
    assert_eq!(drain(&q), ["b", "c", "a"]);
}

#[test]
fn done_for_an_item_not_processed_does_nothing() {
    let q = queue();
    q.done(&"ghost");
    q.add("a");
    q.done(&"a"); // waiting, not processing
    assert_eq!(q.len(), 1);
    assert_eq!(drain(&q), ["a"]);
    q.done(&"a"); // already done
    assert_eq!(q.try_get(), None);
}

#[test]
fn item_can_be_processed_again_after_done() {
    let q = queue();
    q.add("a");
    let a = q.try_get().unwrap();
    q.done(&a);
    q.add("a");
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn add_after_zero_is_immediate() {
    let q = queue();
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn add_after_is_ready_at_its_deadline() {
    let q = queue();
    q.add_after("a", 10 * MS);
    assert_eq!(q.len(), 0);
    assert_eq!(q.stats().delayed, 1);
    advance(9 * MS).await;
    assert_eq!(q.try_get(), None);
    advance(MS).await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn add_after_earlier_deadline_wins() {
    let q = queue();
    q.add_after("a", 100 * MS);
    q.add_after("a", 10 * MS);
    advance(10 * MS).await;
    assert_eq!(q.try_get(), Some("a"));
    assert_eq!(q.stats().delayed, 0);
}

#[tokio::test(start_paused = true)]
async fn add_after_later_deadline_never_postpones() {
    let q = queue();
    q.add_after("a", 10 * MS);
    q.add_after("a", 100 * MS);
    advance(10 * MS).await;
    assert_eq!(q.try_get(), Some("a"));
    // A ready item is not delayed by add_after either.
    q.add("b");
    q.add_after("b", 100 * MS);
    assert_eq!(q.try_get(), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn add_of_a_delayed_item_makes_it_ready_now() {
    let q = queue();
    q.add_after("a", 100 * MS);
    q.add("a");
    assert_eq!(q.try_get(), Some("a"));
    q.done(&"a");
    advance(200 * MS).await;
    assert_eq!(q.try_get(), None, "the delay was replaced, not kept");
}

#[tokio::test(start_paused = true)]
async fn delayed_items_join_the_back_in_deadline_order() {
    let q = queue();
    q.add_after("late", 20 * MS);
    q.add_after("early", 10 * MS);
    q.add_after("tie", 10 * MS);
    q.add("now");
    advance(30 * MS).await;
    q.add("after");
    assert_eq!(drain(&q), ["now", "early", "tie", "late", "after"]);
}

#[tokio::test(start_paused = true)]
async fn add_after_while_processing_is_requeued_after_done_and_deadline() {
    let q = queue();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add_after("a", 10 * MS);
    advance(20 * MS).await;
    assert_eq!(q.try_get(), None);
    q.done(&a);
    assert_eq!(q.try_get(), Some("a"));
    q.done(&"a");
    // Done before the deadline: waits for it.
    q.add("b");
    let b = q.try_get().unwrap();
    q.add_after("b", 10 * MS);
    q.done(&b);
    assert_eq!(q.try_get(), None);
    advance(10 * MS).await;
    assert_eq!(q.try_get(), Some("b"));
}

#[tokio::test(start_paused = true)]
async fn delayed_item_ready_while_workers_wait() {
    let q = Arc::new(queue());
    let start = tokio::time::Instant::now();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.map(|item| (item, start.elapsed())) })
        })
        .collect();
    settle().await;
    q.add_after("a", Duration::from_secs(5));
    q.add_after("b", Duration::from_secs(1));
    // Nobody adds anything else: the waiting workers must wake up by themselves.
    tokio::time::sleep(Duration::from_secs(60)).await;
    q.shut_down();
    let mut got = Vec::new();
    for w in workers {
        got.extend(timeout(Duration::from_secs(60), w).await.unwrap().unwrap());
    }
    got.sort();
    assert_eq!(
        got,
        [("a", Duration::from_secs(5)), ("b", Duration::from_secs(1))]
    );
}

#[tokio::test(start_paused = true)]
async fn earlier_deadline_added_while_worker_sleeps_wakes_it_earlier() {
    let q = Arc::new(queue());
    q.add_after("late", Duration::from_secs(100));
    let worker = {
        let q = q.clone();
        tokio::spawn(async move { (q.get().await, tokio::time::Instant::now()) })
    };
    settle().await;
    let start = tokio::time::Instant::now();
    q.add_after("soon", Duration::from_secs(1));
    let (item, at) = worker.await.unwrap();
    assert_eq!(item, Some("soon"));
    assert_eq!(at - start, Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn timer_duty_passes_on_when_the_sleeping_worker_is_cancelled() {
    let q = Arc::new(queue());
    q.add_after("a", Duration::from_secs(1));
    // The first waiter takes the timer duty, then is cancelled.
    let first = spawn_get(&q);
    settle().await;
    let second = spawn_get(&q);
    settle().await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());
    let got = timeout(Duration::from_secs(60), second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn cancelled_get_passes_its_wake_up_on() {
    let q = Arc::new(queue());
    let first = spawn_get(&q);
    settle().await;
    let second = spawn_get(&q);
    settle().await;
    // The add wakes the first waiter; it is cancelled before it runs.
    q.add("a");
    first.abort();
    let _ = first.await;
    let got = timeout(Duration::from_secs(60), second)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, Some("a"));
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q = Arc::new(queue());
    let worker = spawn_get(&q);
    settle().await;
    q.add("a");
    assert_eq!(worker.await.unwrap(), Some("a"));
}

#[test]
fn shutdown_ignores_adds() {
    let q = queue();
    q.shut_down();
    q.add("a");
    q.add_after("b", Duration::ZERO);
    q.add_rate_limited("c");
    assert_eq!(q.len(), 0);
    assert_eq!(
        q.num_requeues(&"c"),
        1,
        "the failure is counted, the item dropped (client-go)"
    );
    assert!(q.is_shutting_down());
}

#[tokio::test]
async fn shutdown_hands_out_queued_items_then_none() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.shut_down();
    assert_eq!(q.get().await, Some("a"));
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_delayed_items_but_keeps_due_ones() {
    let q = queue();
    q.add_after("due", 10 * MS);
    q.add_after("later", 100 * MS);
    advance(10 * MS).await;
    q.shut_down();
    assert_eq!(q.stats().delayed, 0);
    assert_eq!(q.get().await, Some("due"));
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_many_delayed_items_and_gives_memory_back() {
    let q: WorkQueue<u32> = WorkQueue::new();
    q.add(0);
    let zero = q.try_get().unwrap();
    q.add_after(0, Duration::from_secs(1)); // in flight and delayed
    for i in 1..70_000 {
        q.add_after(i, Duration::from_secs(u64::from(i % 7) + 1));
    }
    q.shut_down();
    let stats = q.stats();
    assert_eq!((stats.delayed, stats.depth, stats.in_flight), (0, 0, 1));
    q.done(&zero); // its delayed re-add was dropped too
    assert_eq!(q.try_get(), None);
    assert_eq!(q.get().await, None);
}

#[test]
fn shutdown_still_requeues_items_added_while_processing() {
    let q = queue();
    q.add("a");
    let a = q.try_get().unwrap();
    q.add("a");
    q.shut_down();
    q.done(&a);
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test]
async fn get_returns_none_to_all_waiters_on_shutdown() {
    let q = Arc::new(queue());
    let workers: Vec<_> = (0..4).map(|_| spawn_get(&q)).collect();
    settle().await;
    q.shut_down();
    for w in workers {
        assert_eq!(
            timeout(Duration::from_secs(10), w).await.unwrap().unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn shutdown_with_drain_waits_for_in_flight() {
    let q = Arc::new(queue());
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain(false).await })
    };
    settle().await;
    assert!(!drain.is_finished(), "a is still being processed");
    q.done(&a);
    timeout(Duration::from_secs(10), drain)
        .await
        .unwrap()
        .unwrap();
    // Queued items were not waited for, and are still handed out.
    assert_eq!(q.try_get(), Some("b"));
}

#[tokio::test]
async fn shut_down_during_a_drain_ends_the_drain_at_once() {
    let q = Arc::new(queue());
    q.add("a");
    q.add("b");
    let _a = q.get().await.unwrap(); // in flight, never done: the drain would wait forever
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain(true).await })
    };
    settle().await;
    assert!(!drain.is_finished(), "a is in flight, b is queued");
    q.shut_down(); // the second Ctrl-C
    timeout(Duration::from_secs(10), drain)
        .await
        .expect("a forced shutdown ends the drain")
        .unwrap();
    // A shut_down made before a drain does not cut that drain short.
    let q = Arc::new(queue());
    q.add("c");
    let c = q.get().await.unwrap();
    q.shut_down();
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain(false).await })
    };
    settle().await;
    assert!(!drain.is_finished(), "c is in flight");
    q.done(&c);
    timeout(Duration::from_secs(10), drain)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn shutdown_with_drain_queued_waits_for_queued() {
    let q = Arc::new(queue());
    q.add("a");
    q.add("b");
    let drain = {
        let q = q.clone();
        tokio::spawn(async move { q.shut_down_with_drain(true).await })
    };
    settle().await;
    assert!(!drain.is_finished());
    let a = q.get().await.unwrap();
    q.done(&a);
    settle().await;
    assert!(!drain.is_finished(), "b is still queued");
    let b = q.get().await.unwrap();
    settle().await;
    assert!(!drain.is_finished(), "b is in flight");
    q.done(&b);
    timeout(Duration::from_secs(10), drain)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shutdown_with_drain_returns_at_once_when_idle() {
    let q = queue();
    timeout(Duration::from_secs(10), q.shut_down_with_drain(true))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn rate_limited_add_uses_limiter_delay() {
    let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(Arc::new(
        ItemExponentialFailureRateLimiter::new(10 * MS, Duration::from_secs(1)),
    ));
    q.add_rate_limited("a");
    advance(9 * MS).await;
    assert_eq!(q.try_get(), None);
    advance(MS).await;
    assert_eq!(q.try_get(), Some("a"));
    q.done(&"a");
    q.add_rate_limited("a"); // second failure: 20 ms
    advance(19 * MS).await;
    assert_eq!(q.try_get(), None);
    advance(MS).await;
    assert_eq!(q.try_get(), Some("a"));
}

#[tokio::test(start_paused = true)]
async fn forget_resets_backoff() {
    let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(Arc::new(
        ItemExponentialFailureRateLimiter::new(10 * MS, Duration::from_secs(1)),
    ));
    for _ in 0..5 {
        q.add_rate_limited("a"); // 10 ms, then later deadlines that do not postpone it
    }
    advance(10 * MS).await;
    let a = q.try_get().unwrap();
    q.done(&a);
    q.forget(&a);
    assert_eq!(q.num_requeues(&a), 0);
    // Without `forget` this would wait 10 ms * 2^5.
    q.add_rate_limited("a");
    advance(9 * MS).await;
    assert_eq!(q.try_get(), None);
    advance(MS).await;
    assert_eq!(q.try_get(), Some("a"));
}

#[test]
fn num_requeues_counts_rate_limited_adds() {
    let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(Arc::new(ItemFastSlowRateLimiter::new(
        MS,
        Duration::from_secs(1),
        2,
    )));
    assert_eq!(q.num_requeues(&"a"), 0);
    q.add_rate_limited("a");
    q.add_rate_limited("a");
    q.add_rate_limited("a");
    assert_eq!(q.num_requeues(&"a"), 3);
    q.add("a"); // plain adds are not requeues
    assert_eq!(q.num_requeues(&"a"), 3);
    assert_eq!(q.stats().retries_total, 3);
}

#[test]
fn add_rate_limited_after_shutdown_counts_the_failure_and_drops_the_item() {
    let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(Arc::new(ItemFastSlowRateLimiter::new(
        MS,
        Duration::from_secs(1),
        2,
    )));
    q.shut_down();
    q.add_rate_limited("a");
    assert_eq!(
        q.num_requeues(&"a"),
        1,
        "client-go's AddRateLimited asks When first"
    );
    assert_eq!(q.len(), 0);
    assert_eq!(q.stats().delayed, 0);
    assert_eq!(
        q.stats().retries_total,
        0,
        "nothing is queued, so nothing is retried"
    );
}

#[derive(Default)]
struct Recorder {
    added: AtomicU64,
    taken: AtomicU64,
    done: AtomicU64,
    retried: AtomicU64,
    queue_nanos: AtomicU64,
    work_nanos: AtomicU64,
}

impl QueueMetrics for Recorder {
    fn added(&self) {
        self.added.fetch_add(1, Ordering::Relaxed);
    }
    fn taken(&self, d: Duration) {
        self.taken.fetch_add(1, Ordering::Relaxed);
        self.queue_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
    fn done(&self, d: Duration) {
        self.done.fetch_add(1, Ordering::Relaxed);
        self.work_nanos
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }
    fn retried(&self) {
        self.retried.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_hooks_see_adds_durations_and_retries() {
    let rec = Arc::new(Recorder::default());
    let q: WorkQueue<&str> = WorkQueue::builder().metrics(rec.clone()).build();
    q.add("a");
    q.add("a");
    q.add_after("b", 10 * MS);
    advance(30 * MS).await;
    let a = q.try_get().unwrap(); // queued 30 ms
    let b = q.try_get().unwrap(); // queued 20 ms (since its deadline)
    advance(5 * MS).await;
    let stats = q.stats();
    assert_eq!(stats.in_flight, 2);
    assert_eq!(stats.unfinished_work, Some(10 * MS));
    assert_eq!(stats.longest_running, Some(5 * MS));
    q.done(&a);
    advance(5 * MS).await;
    q.done(&b);
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    assert_eq!(load(&rec.added), 2);
    assert_eq!(load(&rec.taken), 2);
    assert_eq!(load(&rec.done), 2);
    assert_eq!(load(&rec.retried), 1);
    assert_eq!(load(&rec.queue_nanos), (50 * MS).as_nanos() as u64);
    assert_eq!(load(&rec.work_nanos), (15 * MS).as_nanos() as u64);
    let stats = q.stats();
    assert_eq!((stats.adds_total, stats.retries_total), (2, 1));
    assert_eq!(stats.unfinished_work, Some(Duration::ZERO));
    assert_eq!(stats.longest_running, Some(Duration::ZERO));
}

#[test]
fn stats_without_metrics_have_no_durations() {
    let q = queue();
    q.add("a");
    let _a = q.try_get();
    let stats = q.stats();
    assert_eq!((stats.depth, stats.in_flight), (0, 1));
    assert_eq!((stats.unfinished_work, stats.longest_running), (None, None));
}

#[test]
fn idle_queue_gives_memory_back_and_keeps_working() {
    // More items than an idle queue keeps slots for; each added twice, so that the second
    // add publishes it (answered without the lock next time) and the shrink forgets that.
    let q: WorkQueue<u32> = WorkQueue::new();
    for round in 0..3 {
        for i in 0..70_000 {
            q.add(i);
            q.add(i);
        }
        for i in 0..70_000 {
            let item = q.try_get().unwrap();
            assert_eq!(item, i, "round {round}");
            q.done(&item);
        }
        assert_eq!(q.try_get(), None);
    }
}

#[test]
fn trait_add_with_priority_is_ignored_by_the_fifo_queue() {
    let q = queue();
    Queue::add_with_priority(&q, "low", -100);
    Queue::add_with_priority(&q, "high", 100);
    assert_eq!(drain(&q), ["low", "high"]);
}

#[test]
fn add_batch_is_add_of_each_item_in_order() {
    // More items than one lock acquisition takes, with duplicates across chunks and an
    // item that is being processed.
    let q: WorkQueue<u32> = WorkQueue::new();
    q.add(7);
    assert_eq!(q.try_get(), Some(7));
    let items: Vec<u32> = (0..300).map(|i| (i * 7) % 200).collect();
    Queue::add_batch(&q, items.clone());
    let mut want: Vec<u32> = Vec::new();
    for &i in &items {
        if i != 7 && !want.contains(&i) {
            want.push(i);
        }
    }
    assert_eq!(q.len(), want.len());
    q.done(&7);
    want.push(7); // re-added while processing: queued at `done`
    let mut got = Vec::new();
    while let Some(i) = q.try_get() {
        q.done(&i);
        got.push(i);
    }
    assert_eq!(got, want);
    q.shut_down();
    q.add_batch(vec![1, 2]);
    assert_eq!(q.len(), 0);
}

/// Hooks that record nothing: installing them turns time tracking on.
struct NoHooks;

impl QueueMetrics for NoHooks {}

/// The same queue three ways: `add`, `get` and `done` take shortcuts when no item is delayed
/// and no hooks are installed, so the rules below are checked with and without them.
fn queues_on_every_path() -> Vec<(&'static str, WorkQueue<&'static str>)> {
    let delayed = queue();
    delayed.add_after("later", Duration::from_secs(3600));
    vec![
        ("plain", queue()),
        ("with a delayed item", delayed),
        (
            "with hooks",
            WorkQueue::builder().metrics(Arc::new(NoHooks)).build(),
        ),
    ]
}

#[tokio::test]
async fn item_added_twice_is_handed_out_once_on_every_path() {
    for (path, q) in queues_on_every_path() {
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2, "{path}");
        assert_eq!(q.get().await, Some("a"), "{path}");
        assert_eq!(q.get().await, Some("b"), "{path}");
        assert_eq!(q.try_get(), None, "{path}");
    }
}

#[tokio::test]
async fn item_added_while_processing_is_requeued_once_after_done_on_every_path() {
    for (path, q) in queues_on_every_path() {
        q.add("a");
        q.add("b");
        let a = q.get().await.unwrap();
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 1, "{path}: not queued while processing");
        q.done(&a);
        assert_eq!(q.len(), 2, "{path}");
        let b = q.get().await.unwrap();
        assert_eq!(b, "b", "{path}: the requeued item went to the back");
        q.done(&b);
        let a = q.get().await.unwrap();
        q.done(&a);
        assert_eq!(q.try_get(), None, "{path}: queued once");
        // Done and not added since: forgotten, so an add queues it again.
        q.add("a");
        assert_eq!(q.len(), 1, "{path}");
    }
}

#[tokio::test]
async fn drain_ends_when_the_last_item_in_flight_is_done_on_every_path() {
    for (path, q) in queues_on_every_path() {
        let q = Arc::new(q);
        q.add("a");
        let a = q.get().await.unwrap();
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shut_down_with_drain(false).await })
        };
        settle().await;
        assert!(!drain.is_finished(), "{path}: waits for the item in flight");
        q.done(&a);
        timeout(Duration::from_secs(10), drain)
            .await
            .unwrap_or_else(|_| panic!("{path}: the drain did not end"))
            .unwrap();
    }
}

#[test]
fn trait_try_get_hands_out_ready_items_without_waiting() {
    let q: Box<dyn Queue<&str>> = Box::new(queue());
    assert_eq!(q.try_get(), None);
    q.add("a");
    let a = q.try_get().unwrap();
    q.add("a");
    assert_eq!(q.try_get(), None, "never two workers on one item");
    q.done(&a);
    assert_eq!(q.try_get(), Some("a"));
    q.done(&"a");
    q.shut_down();
    assert_eq!(q.try_get(), None);
}

#[test]
fn a_worker_whose_items_are_always_ready_still_yields_its_thread() {
    // `get` spends the task's budget as tokio's channels do: a loop that always finds an
    // item (here its own, added again while processing) lets the thread's other tasks run.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let q = Arc::new(WorkQueue::<&'static str>::new());
        q.add("a");
        let handed = Arc::new(AtomicU64::new(0));
        let worker = {
            let (q, handed) = (q.clone(), handed.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    q.add(item);
                    q.done(&item);
                    handed.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // Runs only when the worker yields; the worker's items never run out.
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(handed.load(Ordering::Relaxed) > 0);
        q.shut_down();
        worker.abort();
    });
}
