//! [`OrderedQueue`]: the one type behind [`WorkQueue`] and [`PriorityQueue`]. It holds the
//! methods the two share and their [`Queue`] implementation; the [`Order`] parameter says
//! whether priorities count. The work itself is done by the queue engine.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::builder::QueueBuilder;
use super::engine::Engine;
use super::metrics::QueueStats;
use super::rate_limiter::RateLimiter;
#[cfg(doc)]
use super::{
    ItemExponentialFailureRateLimiter, PRIORITY_LOW, PriorityQueue, WorkQueue,
    default_controller_rate_limiter,
};
use super::{PRIORITY_NORMAL, Queue};

/// The order in which an [`OrderedQueue`] hands out ready items: [`ReadyOrder`] (a
/// [`WorkQueue`]) or [`PriorityOrder`] (a [`PriorityQueue`]).
///
/// Sealed: these two are the only orders.
pub trait Order: sealed::Sealed {
    /// Whether items keep the priority they are added with (otherwise every item has
    /// [`PRIORITY_NORMAL`]).
    const PRIORITIES: bool;
}

/// Items are handed out in the order they became ready; priorities are ignored. The order of
/// a [`WorkQueue`].
#[derive(Debug)]
pub enum ReadyOrder {}

/// Items are handed out highest priority first, and in the order they became ready within
/// one priority. The order of a [`PriorityQueue`].
#[derive(Debug)]
pub enum PriorityOrder {}

impl Order for ReadyOrder {
    const PRIORITIES: bool = false;
}

impl Order for PriorityOrder {
    const PRIORITIES: bool = true;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ReadyOrder {}
    impl Sealed for super::PriorityOrder {}
}

/// A deduplicating, delaying, rate-limiting work queue whose ready items come out in the
/// [`Order`] `O`. Use it through its two names: [`WorkQueue`] (`OrderedQueue<T, ReadyOrder>`)
/// and [`PriorityQueue`] (`OrderedQueue<T, PriorityOrder>`); their docs state the
/// guarantees.
///
/// The methods below serve both; a [`PriorityQueue`] also has the `*_with_priority` methods.
pub struct OrderedQueue<T, O> {
    pub(super) engine: Engine<T>,
    order: PhantomData<fn() -> O>,
}

impl<T, O> OrderedQueue<T, O> {
    pub(super) fn from_engine(engine: Engine<T>) -> Self {
        Self {
            engine,
            order: PhantomData,
        }
    }
}

impl<T, O> OrderedQueue<T, O>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
    O: Order,
{
    /// A queue with [`default_controller_rate_limiter`] (a [`PriorityQueue`] too, where
    /// controller-runtime uses only the per-item exponential part: pass
    /// [`ItemExponentialFailureRateLimiter`] to get that).
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<String> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// let queue: PriorityQueue<String> = PriorityQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A queue whose `add_rate_limited` (and, on a [`PriorityQueue`],
    /// `add_rate_limited_with_priority`) asks `limiter` for delays.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::queue::{
    ///     ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, PriorityQueue, WorkQueue,
    /// };
    ///
    /// let queue: WorkQueue<String> = WorkQueue::with_rate_limiter(Arc::new(
    ///     ItemFastSlowRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10), 3),
    /// ));
    /// let priorities: PriorityQueue<String> =
    ///     PriorityQueue::with_rate_limiter(Arc::new(ItemExponentialFailureRateLimiter::default()));
    /// # let _ = (queue, priorities);
    /// ```
    pub fn with_rate_limiter(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::builder().rate_limiter(limiter).build()
    }

    /// Configures a queue: rate limiter, name, metrics hooks.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<String> = WorkQueue::builder().name("pods").build();
    /// assert_eq!(queue.name(), Some("pods"));
    /// let queue: PriorityQueue<String> = PriorityQueue::builder().name("pods").build();
    /// assert_eq!(queue.name(), Some("pods"));
    /// ```
    pub fn builder() -> QueueBuilder<T, Self> {
        QueueBuilder::new()
    }

    /// Queues `item` unless it is already waiting; if it is being processed, queues it once
    /// more after [`done`](Self::done). A delayed item becomes ready now. Ignored after
    /// shutdown. On a [`PriorityQueue`], this is
    /// [`add_with_priority`](OrderedQueue::add_with_priority) with [`PRIORITY_NORMAL`].
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.add("a");
    /// assert_eq!(queue.len(), 1);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.try_get_with_priority(), Some(("a", 0)));
    /// ```
    pub fn add(&self, item: T) {
        self.engine.add(item, PRIORITY_NORMAL, None)
    }

    /// Queues every item of `items`, in order, exactly as [`add`](Self::add) (with
    /// [`PRIORITY_NORMAL`]) for each would, but taking the queue's lock once per few dozen
    /// items instead of once per item.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_batch(vec!["a", "b", "a"]);
    /// assert_eq!(queue.len(), 2);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_batch(vec!["a", "b", "a"]);
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn add_batch(&self, items: Vec<T>) {
        self.engine.add_batch(items, PRIORITY_NORMAL)
    }

    /// Queues `item` once `delay` has passed (now if `delay` is zero). If the item is already
    /// waiting for an earlier time (or is ready), that time stays; an earlier time replaces a
    /// later one. Counts as a retry in [`stats`](Self::stats). Ignored after shutdown. On a
    /// [`PriorityQueue`], this is
    /// [`add_after_with_priority`](OrderedQueue::add_after_with_priority) with
    /// [`PRIORITY_NORMAL`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add_after("a", Duration::from_secs(10));
    /// assert_eq!(queue.len(), 0); // not ready yet
    /// assert_eq!(queue.get().await, Some("a")); // waits 10 s (paused clock here)
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_after("a", Duration::from_secs(1));
    /// assert_eq!(queue.len(), 0);
    /// assert_eq!(queue.get().await, Some("a"));
    /// # }
    /// ```
    pub fn add_after(&self, item: T, delay: Duration) {
        self.engine.add(item, PRIORITY_NORMAL, Some(delay))
    }

    /// Queues `item` after the delay the rate limiter gives it (which records a failure). On a
    /// [`PriorityQueue`], this is
    /// [`add_rate_limited_with_priority`](OrderedQueue::add_rate_limited_with_priority) with
    /// [`PRIORITY_NORMAL`].
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 2);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn add_rate_limited(&self, item: T) {
        self.engine.add_rate_limited(item, PRIORITY_NORMAL)
    }

    /// Waits for an item and hands it out (on a [`PriorityQueue`], the highest-priority ready
    /// item); the caller must call [`done`](Self::done) with it when finished. `None` once the
    /// queue is shut down and no item is ready.
    ///
    /// Returns without waiting when an item is ready, unless the task has spent its tokio
    /// budget (every few calls spend a unit of it; see [`cooperate`](super::cooperate)): then
    /// it yields to the thread's other tasks once first, so a loop whose items are always
    /// ready cannot hold its thread. Cancel safe: dropping the future before it completes
    /// loses no item.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add(7);
    /// let item = queue.get().await.unwrap();
    /// // ... process ...
    /// queue.done(&item);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// let a = queue.get().await.unwrap();
    /// queue.done(&a);
    /// # }
    /// ```
    pub async fn get(&self) -> Option<T> {
        super::cooperate().await;
        // An item ready: no need for the waiting future.
        if let Some((item, _)) = self.engine.try_get() {
            return Some(item);
        }
        self.engine.get().await.map(|(item, _)| item)
    }

    /// Hands out a ready item without waiting (on a [`PriorityQueue`], the highest-priority
    /// one), or `None` if none is ready.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// assert_eq!(queue.try_get(), None);
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), Some("a"));
    ///
    /// let queue = PriorityQueue::new();
    /// assert_eq!(queue.try_get(), None);
    /// queue.add(1);
    /// assert_eq!(queue.try_get(), Some(1));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        self.engine.try_get().map(|(item, _)| item)
    }

    /// Marks `item` processed: it may be handed out again, and if it was added while being
    /// processed it is queued now (at the back; on a [`PriorityQueue`], at the back of the
    /// highest priority it was re-added with). Does nothing if `item` is not being processed.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// let a = queue.try_get().unwrap();
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), None); // never two workers on one item
    /// queue.done(&a);
    /// assert_eq!(queue.try_get(), Some("a"));
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

    /// The number of ready items: not those being processed, nor delayed ones whose time has
    /// not come.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.add_after("b", Duration::from_secs(1));
    /// assert_eq!(queue.len(), 1);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.len(), 1);
    /// # }
    /// ```
    pub fn len(&self) -> usize {
        self.engine.len()
    }

    /// Whether no item is ready.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert!(queue.is_empty());
    /// let queue: PriorityQueue<u8> = PriorityQueue::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resets `item`'s backoff in the rate limiter (call it when the item succeeded).
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.forget(&"a");
    /// assert_eq!(queue.num_requeues(&"a"), 0);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// queue.forget(&"a");
    /// assert_eq!(queue.num_requeues(&"a"), 0);
    /// ```
    pub fn forget(&self, item: &T) {
        self.engine.forget(item)
    }

    /// How many times `item` went through [`add_rate_limited`](Self::add_rate_limited) (or,
    /// on a [`PriorityQueue`], `add_rate_limited_with_priority`) since it was last forgotten
    /// (as the rate limiter counts it).
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    ///
    /// let queue = PriorityQueue::new();
    /// queue.add_rate_limited("a");
    /// assert_eq!(queue.num_requeues(&"a"), 1);
    /// ```
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.engine.num_requeues(item)
    }

    /// Stops accepting items, drops delayed ones and wakes every waiting worker; ready items
    /// are still handed out (on a [`PriorityQueue`], by priority), then `get` returns `None`.
    /// Idempotent. A [`shut_down_with_drain`](Self::shut_down_with_drain) waiting meanwhile
    /// returns at once (client-go's forced shutdown: the second Ctrl-C).
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// queue.shut_down();
    /// queue.add("b"); // ignored
    /// assert_eq!(queue.try_get(), Some("a"));
    /// assert_eq!(queue.try_get(), None);
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

    /// Shuts down, then waits until no item is being processed — and, if `drain_queued`,
    /// until every ready item has been handed out and done too; or until
    /// [`shut_down`](Self::shut_down) is called meanwhile, which ends the wait at once (a forced
    /// shutdown). Needs running workers to finish: with `drain_queued` and no worker left, it
    /// waits until a forced shutdown.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
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
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::new();
    /// queue.shut_down_with_drain(true).await; // nothing in flight
    /// # }
    /// ```
    pub async fn shut_down_with_drain(&self, drain_queued: bool) {
        self.engine.shut_down_with_drain(drain_queued).await
    }

    /// Whether [`shut_down`](Self::shut_down) was called.
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// queue.shut_down();
    /// assert!(queue.is_shutting_down());
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
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue = WorkQueue::new();
    /// queue.add("a");
    /// assert_eq!(queue.stats().adds_total, 1);
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
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::new();
    /// assert_eq!(queue.name(), None);
    ///
    /// let queue: PriorityQueue<u8> = PriorityQueue::builder().name("x").build();
    /// assert_eq!(queue.name(), Some("x"));
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.engine.name()
    }
}

#[async_trait]
impl<T, O> Queue<T> for OrderedQueue<T, O>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
    O: Order,
{
    fn add(&self, item: T) {
        self.engine.add(item, PRIORITY_NORMAL, None)
    }

    fn add_with_priority(&self, item: T, priority: i32) {
        self.engine.add(item, priority, None)
    }

    fn add_batch(&self, items: Vec<T>) {
        self.engine.add_batch(items, PRIORITY_NORMAL)
    }

    fn add_batch_with_priority(&self, items: Vec<T>, priority: i32) {
        self.engine.add_batch(items, priority)
    }

    async fn get(&self) -> Option<T> {
        OrderedQueue::get(self).await
    }

    fn try_get(&self) -> Option<T> {
        self.engine.try_get().map(|(item, _)| item)
    }

    fn done(&self, item: &T) {
        self.engine.done(item)
    }

    fn len(&self) -> usize {
        self.engine.len()
    }

    fn add_after(&self, item: T, delay: Duration) {
        self.engine.add(item, PRIORITY_NORMAL, Some(delay))
    }

    fn add_rate_limited(&self, item: T) {
        self.engine.add_rate_limited(item, PRIORITY_NORMAL)
    }

    fn forget(&self, item: &T) {
        self.engine.forget(item)
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.engine.num_requeues(item)
    }

    fn shut_down(&self) {
        self.engine.shut_down()
    }

    async fn shut_down_with_drain(&self, drain_queued: bool) {
        self.engine.shut_down_with_drain(drain_queued).await
    }

    fn is_shutting_down(&self) -> bool {
        self.engine.is_shutting_down()
    }
}

impl<T, O> Default for OrderedQueue<T, O>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
    O: Order,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T, O> fmt::Debug for OrderedQueue<T, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.engine.fmt(f)
    }
}
