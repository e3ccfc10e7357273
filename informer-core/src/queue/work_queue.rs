//! [`WorkQueue`]: client-go's deduplicating, delaying, rate-limiting workqueue in one type.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::PRIORITY_NORMAL;
use super::engine::{Engine, QueueBuilder, impl_queue_for};
use super::metrics::QueueStats;
use super::rate_limiter::RateLimiter;

/// A FIFO work queue for controllers: client-go's `Type`, delaying queue and rate-limiting
/// queue in one.
///
/// Guarantees:
/// - **One worker per item.** Between [`get`](WorkQueue::get) returning an item and
///   [`done`](WorkQueue::done) for it, the item is not handed out again.
/// - **Re-added while processing: once more, after `done`.** Adding an item that is being
///   processed (any number of times) queues it once, at the back of the queue, when `done`
///   is called for it.
/// - **Deduplicated while waiting.** Adding an item that is already waiting does nothing; it
///   keeps its place.
/// - **FIFO.** Ready items are handed out in the order they became ready.
/// - **Delays.** [`add_after`](WorkQueue::add_after) makes an item ready after a delay (zero
///   means now). An item waits for one time only: an earlier time replaces a later one, a
///   later one never postpones it — so `add_after` of an item that is already ready does
///   nothing, and `add` of a delayed item makes it ready now. A delayed item joins the back of
///   the queue when its time passes, in deadline order. No task is spawned: a worker waiting
///   in `get` sleeps until the earliest deadline, so delayed items become ready while every
///   worker waits. [`len`](WorkQueue::len) counts ready items only.
/// - **Rate limiting.** [`add_rate_limited`](WorkQueue::add_rate_limited) is `add_after` with
///   the delay the [`RateLimiter`] gives (by default
///   [`default_controller_rate_limiter`](super::default_controller_rate_limiter));
///   [`forget`](WorkQueue::forget) resets the item's backoff.
/// - **Shutdown.** After [`shut_down`](WorkQueue::shut_down) adds are ignored, ready items are
///   still handed out, and `get` returns `None` once none is left. Delayed items are dropped
///   (items whose time has passed are kept). An item re-added while processing before the
///   shutdown is still queued at its `done`.
///
/// Not guaranteed: fairness between workers, or any order between an item's processing and
/// other items'. `done` for an item that is not being processed does nothing.
///
/// All methods take `&self`; share the queue between tasks with an `Arc`. Every operation
/// takes one short lock; waiting workers are woken one per ready item, and only when some
/// worker is waiting. Memory grows with the number of distinct items the queue holds at once
/// and is given back when the queue becomes idle.
///
/// # Panics
/// - [`get`](WorkQueue::get) uses a tokio timer while delayed items exist, so it must be
///   polled inside a tokio runtime with time enabled (as any `tokio::time::sleep`).
/// - Holding more than `u32::MAX - 1` distinct items at once panics (that is hundreds of
///   gigabytes of keys).
///
/// ```
/// use informer_core::queue::WorkQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue: WorkQueue<String> = WorkQueue::new();
/// queue.add("default/web-0".to_string());
/// queue.add("default/web-1".to_string());
/// queue.add("default/web-0".to_string()); // already waiting: deduplicated
/// assert_eq!(queue.len(), 2);
///
/// let key = queue.get().await.unwrap();
/// assert_eq!(key, "default/web-0");
/// queue.add(key.clone()); // being processed: queued again after `done`
/// assert_eq!(queue.len(), 1);
/// queue.done(&key);
/// assert_eq!(queue.len(), 2);
///
/// queue.shut_down();
/// assert_eq!(queue.get().await.as_deref(), Some("default/web-1"));
/// assert_eq!(queue.get().await.as_deref(), Some("default/web-0"));
/// assert_eq!(queue.get().await, None);
/// # }
/// ```
pub struct WorkQueue<T> {
    engine: Engine<T>,
}

impl_queue_for!(WorkQueue);

impl<T> WorkQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// A queue with [`default_controller_rate_limiter`](super::default_controller_rate_limiter).
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<String> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A queue whose `add_rate_limited` asks `limiter` for delays.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::queue::{ItemFastSlowRateLimiter, WorkQueue};
    ///
    /// let queue: WorkQueue<String> = WorkQueue::with_rate_limiter(Arc::new(
    ///     ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 3),
    /// ));
    /// # let _ = queue;
    /// ```
    pub fn with_rate_limiter(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::builder().rate_limiter(limiter).build()
    }

    /// Configures a queue: rate limiter, name, metrics hooks.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<String> = WorkQueue::builder().name("pods").build();
    /// assert_eq!(queue.name(), Some("pods"));
    /// ```
    pub fn builder() -> QueueBuilder<T, Self> {
        QueueBuilder::new()
    }

    /// Queues `item` unless it is already waiting; if it is being processed, queues it once
    /// more after [`done`](WorkQueue::done). A delayed item becomes ready now. Ignored after
    /// shutdown.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.add("a");
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn add(&self, item: T) {
        self.engine.add(item, PRIORITY_NORMAL, None)
    }

    /// Queues every item of `items`, in order, exactly as [`add`](WorkQueue::add) for each
    /// would, but taking the queue's lock once per few dozen items instead of once per item.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_batch(vec!["a", "b", "a"]);
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn add_batch(&self, items: Vec<T>) {
        self.engine.add_batch(items, PRIORITY_NORMAL)
    }

    /// Queues `item` once `delay` has passed (now if `delay` is zero). If the item is already
    /// waiting for an earlier time (or is ready), that time stays; an earlier time replaces a
    /// later one. Counts as a retry in [`stats`](WorkQueue::stats). Ignored after shutdown.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add_after("a", Duration::from_secs(10));
    /// assert_eq!(queue.len(), 0); // not ready yet
    /// assert_eq!(queue.get().await, Some("a")); // waits 10 s (paused clock here)
    /// # }
    /// ```
    pub fn add_after(&self, item: T, delay: Duration) {
        self.engine.add(item, PRIORITY_NORMAL, Some(delay))
    }

    /// Queues `item` after the delay the rate limiter gives it (which records a failure).
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 2);
    /// ```
    pub fn add_rate_limited(&self, item: T) {
        self.engine.add_rate_limited(item, PRIORITY_NORMAL)
    }

    /// Waits for an item and hands it out; the caller must call [`done`](WorkQueue::done)
    /// with it when finished. `None` once the queue is shut down and no item is ready.
    ///
    /// Returns without waiting when an item is ready. Cancel safe: dropping the future before
    /// it completes loses no item.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add(7);
    /// let item = queue.get().await.unwrap();
    /// // ... process ...
    /// queue.done(&item);
    /// # }
    /// ```
    pub async fn get(&self) -> Option<T> {
        self.engine.get().await.map(|(item, _)| item)
    }

    /// Hands out a ready item without waiting, or `None` if none is ready.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// assert_eq!(queue.try_get(), None);
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), Some("a"));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        self.engine.try_get().map(|(item, _)| item)
    }

    /// Marks `item` processed: it may be handed out again, and if it was added while being
    /// processed it is queued now (at the back). Does nothing if `item` is not being
    /// processed.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// let a = queue.try_get().unwrap();
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), None); // never two workers on one item
    /// queue.done(&a);
    /// assert_eq!(queue.try_get(), Some("a"));
    /// ```
    pub fn done(&self, item: &T) {
        self.engine.done(item)
    }

    /// The number of ready items: not those being processed, nor delayed ones whose time has
    /// not come.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::WorkQueue;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.add_after("b", Duration::from_secs(1));
    /// assert_eq!(queue.len(), 1);
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.engine.len()
    }

    /// Whether no item is ready.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resets `item`'s backoff in the rate limiter (call it when the item succeeded).
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.forget(&"a");
    /// assert_eq!(queue.num_requeues(&"a"), 0);
    /// ```
    pub fn forget(&self, item: &T) {
        self.engine.forget(item)
    }

    /// How many times `item` went through [`add_rate_limited`](WorkQueue::add_rate_limited)
    /// since it was last forgotten (as the rate limiter counts it).
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.engine.num_requeues(item)
    }

    /// Stops accepting items, drops delayed ones and wakes every waiting worker; ready items
    /// are still handed out, then `get` returns `None`. Idempotent.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.shut_down();
    /// queue.add("b"); // ignored
    /// assert_eq!(queue.try_get(), Some("a"));
    /// assert_eq!(queue.try_get(), None);
    /// ```
    pub fn shut_down(&self) {
        self.engine.shut_down()
    }

    /// Shuts down, then waits until no item is being processed — and, if `drain_queued`,
    /// until every ready item has been handed out and done too. Needs running workers to
    /// finish: with `drain_queued` and no worker left, it waits forever.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::queue::WorkQueue;
    ///
    /// # #[tokio::main]
    /// # async fn main() {
    /// let queue = Arc::new(WorkQueue::new());
    /// queue.add(1);
    /// let worker = {
    ///     let queue = queue.clone();
    ///     tokio::spawn(async move {
    ///         while let Some(item) = queue.get().await {
    ///             queue.done(&item);
    ///         }
    ///     })
    /// };
    /// queue.shut_down_with_drain(true).await;
    /// worker.await.unwrap();
    /// # }
    /// ```
    pub async fn shut_down_with_drain(&self, drain_queued: bool) {
        self.engine.shut_down_with_drain(drain_queued).await
    }

    /// Whether [`shut_down`](WorkQueue::shut_down) was called.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// queue.shut_down();
    /// assert!(queue.is_shutting_down());
    /// ```
    pub fn is_shutting_down(&self) -> bool {
        self.engine.is_shutting_down()
    }

    /// A snapshot of the queue's counters, for metrics. See [`QueueStats`].
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.stats().adds_total, 1);
    /// ```
    pub fn stats(&self) -> QueueStats {
        self.engine.stats()
    }

    /// The name given with [`QueueBuilder::name`].
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert_eq!(queue.name(), None);
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.engine.name()
    }
}

impl<T> QueueBuilder<T, WorkQueue<T>>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// Builds the [`WorkQueue`].
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::builder().build();
    /// # let _ = queue;
    /// ```
    pub fn build(self) -> WorkQueue<T> {
        WorkQueue {
            engine: Engine::new(self, false),
        }
    }
}

impl<T> Default for WorkQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt(f)
    }
}

#[cfg(test)]
mod tests {
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

    fn drain(q: &WorkQueue<&'static str>) -> Vec<&'static str> {
        std::iter::from_fn(|| {
            let item = q.try_get()?;
            q.done(&item);
            Some(item)
        })
        .collect()
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
        let first = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        settle().await;
        let second = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
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
        let first = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        settle().await;
        let second = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
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
        let worker = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
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
        assert_eq!(q.num_requeues(&"c"), 0);
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
        for i in 1..3000 {
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
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
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
        let q: WorkQueue<&str> = WorkQueue::with_rate_limiter(Arc::new(
            ItemFastSlowRateLimiter::new(MS, Duration::from_secs(1), 2),
        ));
        assert_eq!(q.num_requeues(&"a"), 0);
        q.add_rate_limited("a");
        q.add_rate_limited("a");
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 3);
        q.add("a"); // plain adds are not requeues
        assert_eq!(q.num_requeues(&"a"), 3);
        assert_eq!(q.stats().retries_total, 3);
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
        let q: WorkQueue<u32> = WorkQueue::new();
        for round in 0..3 {
            for i in 0..5000 {
                q.add(i);
            }
            for i in 0..5000 {
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
}
