//! [`PriorityQueue`]: controller-runtime's priority queue, with every [`WorkQueue`] guarantee.
//!
//! [`WorkQueue`]: super::WorkQueue

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::PRIORITY_NORMAL;
use super::engine::{Engine, QueueBuilder, impl_queue_for};
use super::metrics::QueueStats;
use super::rate_limiter::RateLimiter;

/// A work queue that hands out higher-priority items first (controller-runtime's
/// `priorityqueue`), with every guarantee of [`WorkQueue`](super::WorkQueue).
///
/// A controller adds the keys of its initial list and of resyncs with
/// [`PRIORITY_LOW`](super::PRIORITY_LOW), and keys of real changes with
/// [`PRIORITY_NORMAL`](super::PRIORITY_NORMAL) (what [`add`](PriorityQueue::add) uses), so a
/// change is reconciled promptly even while thousands of probably-no-op startup keys wait.
///
/// Guarantees, beyond [`WorkQueue`](super::WorkQueue)'s (one worker per item, re-add while
/// processing queued once after `done`, deduplication, delays, rate limiting, shutdown and
/// drain):
/// - **Highest priority first; FIFO within a priority.** Ready items are handed out by
///   priority, highest first, and in the order they became ready within one priority.
/// - **One entry per item.** An item waiting several times over keeps the highest priority
///   it was added with and the earliest ready time. Raising the priority of a ready item moves
///   it to the back of its new priority; a lower priority never demotes it.
/// - **Priorities are per waiting period.** Once an item is handed out, its next add starts
///   from that add's priority. An item re-added while processing is queued after `done` with
///   the highest priority it was re-added with.
///
/// Not guaranteed: that low-priority items are ever handed out while higher-priority items
/// keep arriving (priorities are strict). Priorities are meant to be a handful of levels:
/// each distinct priority with waiting items costs a step when an item is handed out.
///
/// # Panics
/// As [`WorkQueue`](super::WorkQueue): `get` needs a tokio runtime with time enabled while
/// delayed items exist; more than `u32::MAX - 1` distinct items at once panic.
///
/// ```
/// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue: PriorityQueue<String> = PriorityQueue::new();
/// queue.add_with_priority("default/from-list".to_string(), PRIORITY_LOW);
/// queue.add("default/changed".to_string());
/// assert_eq!(queue.get().await.as_deref(), Some("default/changed"));
/// assert_eq!(queue.get().await.as_deref(), Some("default/from-list"));
/// # }
/// ```
pub struct PriorityQueue<T> {
    engine: Engine<T>,
}

impl_queue_for!(PriorityQueue);

impl<T> PriorityQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// A queue with [`default_controller_rate_limiter`](super::default_controller_rate_limiter)
    /// (the same default as [`WorkQueue`](super::WorkQueue); controller-runtime uses only the
    /// per-item exponential part — pass
    /// [`ItemExponentialFailureRateLimiter`](super::ItemExponentialFailureRateLimiter) to get that).
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<String> = PriorityQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A queue whose rate-limited adds ask `limiter` for delays.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::queue::{ItemExponentialFailureRateLimiter, PriorityQueue};
    ///
    /// let queue: PriorityQueue<String> =
    ///     PriorityQueue::with_rate_limiter(Arc::new(ItemExponentialFailureRateLimiter::default()));
    /// # let _ = queue;
    /// ```
    pub fn with_rate_limiter(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::builder().rate_limiter(limiter).build()
    }

    /// Configures a queue: rate limiter, name, metrics hooks.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<String> = PriorityQueue::builder().name("pods").build();
    /// assert_eq!(queue.name(), Some("pods"));
    /// ```
    pub fn builder() -> QueueBuilder<T, Self> {
        QueueBuilder::new()
    }

    /// [`add_with_priority`](PriorityQueue::add_with_priority) with
    /// [`PRIORITY_NORMAL`](super::PRIORITY_NORMAL).
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.try_get_with_priority(), Some(("a", 0)));
    /// ```
    pub fn add(&self, item: T) {
        self.engine.add(item, PRIORITY_NORMAL, None)
    }

    /// Queues every item of `items`, in order, exactly as [`add`](PriorityQueue::add) with [`PRIORITY_NORMAL`](super::PRIORITY_NORMAL) for each
    /// would, but taking the queue's lock once per few dozen items instead of once per item.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_batch(vec!["a", "b", "a"]);
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn add_batch(&self, items: Vec<T>) {
        self.engine.add_batch(items, PRIORITY_NORMAL)
    }

    /// Queues `item` with `priority`, now. If it is already waiting it stays waiting once,
    /// with the higher of the two priorities (raising it moves it to the back of its new
    /// priority) and ready now. If it is being processed, it is queued once more after
    /// [`done`](PriorityQueue::done). Ignored after shutdown.
    ///
    /// ```
    /// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_with_priority("a", PRIORITY_LOW);
    /// queue.add_with_priority("b", PRIORITY_LOW);
    /// queue.add("b"); // raised to normal
    /// assert_eq!(queue.try_get(), Some("b"));
    /// ```
    pub fn add_with_priority(&self, item: T, priority: i32) {
        self.engine.add(item, priority, None)
    }

    /// [`add_after_with_priority`](PriorityQueue::add_after_with_priority) with
    /// [`PRIORITY_NORMAL`](super::PRIORITY_NORMAL).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::PriorityQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = PriorityQueue::new();
    /// queue.add_after("a", Duration::from_secs(1));
    /// assert_eq!(queue.len(), 0);
    /// assert_eq!(queue.get().await, Some("a"));
    /// # }
    /// ```
    pub fn add_after(&self, item: T, delay: Duration) {
        self.engine.add(item, PRIORITY_NORMAL, Some(delay))
    }

    /// Queues `item` with `priority` once `delay` has passed (now if zero). An item waits for
    /// its earliest ready time and with its highest priority; see
    /// [`WorkQueue::add_after`](super::WorkQueue::add_after).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = PriorityQueue::new();
    /// queue.add_after_with_priority("a", Duration::from_secs(1), PRIORITY_LOW);
    /// assert_eq!(queue.get_with_priority().await, Some(("a", PRIORITY_LOW)));
    /// # }
    /// ```
    pub fn add_after_with_priority(&self, item: T, delay: Duration, priority: i32) {
        self.engine.add(item, priority, Some(delay))
    }

    /// [`add_rate_limited_with_priority`](PriorityQueue::add_rate_limited_with_priority) with
    /// [`PRIORITY_NORMAL`](super::PRIORITY_NORMAL).
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn add_rate_limited(&self, item: T) {
        self.engine.add_rate_limited(item, PRIORITY_NORMAL)
    }

    /// Queues `item` with `priority` after the delay the rate limiter gives it.
    ///
    /// ```
    /// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited_with_priority("a", PRIORITY_LOW);
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn add_rate_limited_with_priority(&self, item: T, priority: i32) {
        self.engine.add_rate_limited(item, priority)
    }

    /// Waits for the highest-priority ready item; `None` once shut down and none is ready.
    /// The caller must call [`done`](PriorityQueue::done) with it. Cancel safe.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// let a = queue.get().await.unwrap();
    /// queue.done(&a);
    /// # }
    /// ```
    pub async fn get(&self) -> Option<T> {
        self.engine.get().await.map(|(item, _)| item)
    }

    /// [`get`](PriorityQueue::get), also returning the priority the item waited with.
    ///
    /// ```
    /// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = PriorityQueue::new();
    /// queue.add_with_priority("a", PRIORITY_LOW);
    /// assert_eq!(queue.get_with_priority().await, Some(("a", PRIORITY_LOW)));
    /// # }
    /// ```
    pub async fn get_with_priority(&self) -> Option<(T, i32)> {
        self.engine.get().await
    }

    /// Hands out the highest-priority ready item without waiting, or `None`.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// assert_eq!(queue.try_get(), None);
    /// queue.add(1);
    /// assert_eq!(queue.try_get(), Some(1));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        self.engine.try_get().map(|(item, _)| item)
    }

    /// [`try_get`](PriorityQueue::try_get), also returning the item's priority.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_with_priority(1, 7);
    /// assert_eq!(queue.try_get_with_priority(), Some((1, 7)));
    /// ```
    pub fn try_get_with_priority(&self) -> Option<(T, i32)> {
        self.engine.try_get()
    }

    /// Marks `item` processed; if it was added while being processed it is queued now, at the
    /// back of its priority. Does nothing if `item` is not being processed.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// let a = queue.try_get().unwrap();
    /// queue.add_with_priority("a", 5);
    /// queue.done(&a);
    /// assert_eq!(queue.try_get_with_priority(), Some(("a", 5)));
    /// ```
    pub fn done(&self, item: &T) {
        self.engine.done(item)
    }

    /// The number of ready items (not those being processed or still delayed).
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.engine.len()
    }

    /// Whether no item is ready.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resets `item`'s backoff in the rate limiter.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.forget(&"a");
    /// assert_eq!(queue.num_requeues(&"a"), 0);
    /// ```
    pub fn forget(&self, item: &T) {
        self.engine.forget(item)
    }

    /// How many rate-limited adds of `item` the rate limiter counted since it was forgotten.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.engine.num_requeues(item)
    }

    /// Stops accepting items, drops delayed ones, wakes every waiting worker; ready items are
    /// still handed out (by priority), then `get` returns `None`.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// queue.shut_down();
    /// queue.add("b");
    /// assert_eq!(queue.try_get(), Some("a"));
    /// assert_eq!(queue.try_get(), None);
    /// ```
    pub fn shut_down(&self) {
        self.engine.shut_down()
    }

    /// Shuts down, then waits until no item is being processed (and, if `drain_queued`,
    /// until no item is ready either). See
    /// [`WorkQueue::shut_down_with_drain`](super::WorkQueue::shut_down_with_drain).
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue: PriorityQueue<u8> = PriorityQueue::new();
    /// queue.shut_down_with_drain(true).await; // nothing in flight
    /// # }
    /// ```
    pub async fn shut_down_with_drain(&self, drain_queued: bool) {
        self.engine.shut_down_with_drain(drain_queued).await
    }

    /// Whether [`shut_down`](PriorityQueue::shut_down) was called.
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::new();
    /// assert!(!queue.is_shutting_down());
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.engine.is_shutting_down()
    }

    /// A snapshot of the queue's counters, for metrics. See [`QueueStats`].
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.stats().depth, 1);
    /// ```
    pub fn stats(&self) -> QueueStats {
        self.engine.stats()
    }

    /// The name given with [`QueueBuilder::name`].
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::builder().name("x").build();
    /// assert_eq!(queue.name(), Some("x"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.engine.name()
    }
}

impl<T> QueueBuilder<T, PriorityQueue<T>>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// Builds the [`PriorityQueue`].
    ///
    /// ```
    /// use informer_core::queue::PriorityQueue;
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::builder().build();
    /// # let _ = queue;
    /// ```
    pub fn build(self) -> PriorityQueue<T> {
        PriorityQueue {
            engine: Engine::new(self, true),
        }
    }
}

impl<T> Default for PriorityQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::advance;

    use super::*;
    use crate::queue::{PRIORITY_LOW, Queue};

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
}
