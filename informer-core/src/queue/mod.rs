//! Workqueues: where handlers put keys and workers take them.
//!
//! [`WorkQueue`] is client-go's rate-limiting, delaying, deduplicating queue;
//! [`PriorityQueue`] is controller-runtime's priority queue with the same guarantees. Both
//! implement [`Queue`], so a controller can take either, or a user's own. They are one type,
//! [`OrderedQueue`], with two [`Order`]s: one definition of every method serves both.

// Files: `ordered_queue.rs`, the methods both queues share and their `Queue` impl;
// `work_queue.rs` and `priority.rs`, the two aliases with their guarantees (and the
// `*_with_priority` methods); `builder.rs`, the settings; `metrics.rs`, hooks and counters;
// `rate_limiter.rs`, the limiters; `engine/`, the state machine both run on (its `mod.rs`
// lists its parts).

mod builder;
mod engine;
mod metrics;
mod ordered_queue;
mod priority;
pub mod rate_limiter;
mod taken;
mod work_queue;
mod wrapper;

use std::time::Duration;

use async_trait::async_trait;

pub use builder::QueueBuilder;
pub use metrics::{QueueMetrics, QueueStats};
pub use ordered_queue::{Order, OrderedQueue, PriorityOrder, ReadyOrder};
pub use priority::PriorityQueue;
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter,
};
pub use taken::{Taken, take};
pub use work_queue::WorkQueue;
pub use wrapper::QueueWrapper;

/// Priority given to items that must not wait behind bulk work (the default).
pub const PRIORITY_NORMAL: i32 = 0;
/// Priority for bulk, probably no-op work: keys of the initial list and of resyncs.
pub const PRIORITY_LOW: i32 = -100;

/// A work queue for controllers.
///
/// Guarantees every implementation must keep:
/// - an item is never held by two workers at once: between [`get`](Queue::get) (or
///   [`try_get`](Queue::try_get)) returning it and [`done`](Queue::done) for it, it is not
///   handed out again, however many workers wait;
/// - an item added while it is being processed is queued again once, after
///   [`done`](Queue::done); also when the add came before [`shut_down`](Queue::shut_down)
///   and the `done` after it (the add was accepted before the shutdown: the key is handed
///   out once more while the queue empties);
/// - an item added several times before a worker takes it is handed out once;
/// - [`add_batch`](Queue::add_batch) and
///   [`add_batch_with_priority`](Queue::add_batch_with_priority) do exactly what the adds
///   one by one would; [`try_get`](Queue::try_get) keeps `get`'s guarantees (or always
///   answers `None`);
/// - after `shut_down`, adds of every kind are ignored, queued items are still handed out,
///   and [`get`](Queue::get) returns `None` once the queue is empty;
/// - `shut_down` may be called more than once (a controller calls it when it stops and again
///   when it is dropped); the calls after the first change nothing;
/// - [`shut_down_with_drain(false)`](Queue::shut_down_with_drain) returns once no item is
///   being processed, whatever is still queued; `shut_down_with_drain(true)` also waits
///   until the queued items are handed out and done; a `shut_down` meanwhile ends either.
///
/// What the library's queues also do, and a controller expects of a queue of your own
/// (a queue may differ, and should say so):
/// - an item waits for one time only: [`add`](Queue::add) of an item waiting for an
///   [`add_after`](Queue::add_after) time makes it ready now and drops that time (it is not
///   handed out again when the time comes, as it would be in client-go); of two `add_after`
///   times the earlier wins, and a later time never postpones an earlier one;
/// - `add_after` (or [`add_rate_limited`](Queue::add_rate_limited)) of an item being
///   processed does not hand it out before its `done`: it is queued once, when both its
///   time has passed and it is done (the delay counts from the call, not from the `done`);
/// - `add_rate_limited` hands the item back after the rate limiter's delay (it is
///   `add_after` with that delay), and records the failure even after shutdown, when the
///   item itself is dropped (client-go's `AddRateLimited`: `num_requeues` is then 1);
/// - [`len`](Queue::len) counts a delayed item as soon as its time has passed, before any
///   worker's `get` looked (a controller reports `len` as its queue depth, the
///   `workqueue_depth` metric);
/// - delayed items still waiting at shutdown are dropped, and are not handed out when their
///   time passes, including an item being processed that was re-added with a delay (a
///   stopping controller does not wait for retries); an item whose time passed before the
///   shutdown is queued, so it is handed out;
/// - [`forget`](Queue::forget) after a success resets the backoff that
///   [`add_rate_limited`](Queue::add_rate_limited) grows.
///
/// Test a queue of your own with [`conformance::check_queue`](crate::conformance::check_queue),
/// which checks each of these rules on fresh queues (its docs list them), but not the two
/// points below.
///
/// # What a controller hands a queue of your own
///
/// - **Metrics hooks.** The trait has no method for them: a controller hands its
///   [`QueueMetrics`] hooks to whatever builds its queue (the `Arc<dyn QueueMetrics>`
///   argument of the function named by `#[controller(queue = f)]` and of
///   `ControllerBuilder::queue_with`; `ControllerBuilder::queue_metrics()` returns them for
///   `ControllerBuilder::queue`), and the queue calls them itself. A controller's hooks count
///   [`added`](QueueMetrics::added) and time [`taken`](QueueMetrics::taken)
///   (`workqueue_adds_total`, `workqueue_queue_duration_seconds`); it measures the other
///   workqueue metrics itself. A queue that wraps a [`WorkQueue`] or [`PriorityQueue`]
///   installs them in it with [`QueueBuilder::metrics`] (as `examples/custom_backends.rs`
///   does); a queue that does neither leaves those two metrics at zero.
/// - **Priorities.** A controller adds the keys of its initial list and of resyncs (and of
///   the shards it gains) with [`PRIORITY_LOW`], through
///   [`add_with_priority`](Queue::add_with_priority) and
///   [`add_batch_with_priority`](Queue::add_batch_with_priority), and the keys of real
///   changes with [`PRIORITY_NORMAL`]. The default methods drop the priority, as a
///   [`WorkQueue`] does: a queue that does not override them hands keys out in arrival
///   order, and loses what `#[controller(queue = "priority")]`
///   (`ControllerBuilder::priority_queue`) gives, that the initial list and resyncs wait
///   behind real changes (so that after a restart a fresh change does not wait behind
///   thousands of no-op reconciles). To keep it, hand out the highest priority first, or
///   wrap a [`PriorityQueue`] with [`QueueWrapper`].
///
/// # Implementing it
///
/// Object safe: `Arc<dyn Queue<T>>` works. `get` and `shut_down_with_drain` are `async`
/// through `async_trait`: an implementation puts [`#[async_trait]`](crate::async_trait)
/// (`#[informer::async_trait]` through the `informer` crate) on its `impl` block; it is
/// re-exported, so no dependency of your own is needed. Without it, writing `async fn get`
/// fails with E0195, "lifetime parameters or bounds on method `get` do not match the trait
/// declaration" ("lifetimes do not match method in trait"). To change a few methods of a
/// library queue, [`QueueWrapper`] needs neither; [`WorkQueue`] and [`PriorityQueue`] are
/// the implementations to read.
///
/// ```compile_fail,E0195
/// use std::time::Duration;
/// use informer_core::{Queue, WorkQueue};
///
/// struct Mine(WorkQueue<String>);
///
/// impl Queue<String> for Mine { // `#[async_trait]` missing
///     fn add(&self, item: String) { self.0.add(item) }
///     async fn get(&self) -> Option<String> { self.0.get().await }
///     fn done(&self, item: &String) { self.0.done(item) }
///     fn len(&self) -> usize { self.0.len() }
///     fn add_after(&self, item: String, delay: Duration) { self.0.add_after(item, delay) }
///     fn add_rate_limited(&self, item: String) { self.0.add_rate_limited(item) }
///     fn forget(&self, item: &String) { self.0.forget(item) }
///     fn num_requeues(&self, item: &String) -> u32 { self.0.num_requeues(item) }
///     fn shut_down(&self) { self.0.shut_down() }
///     async fn shut_down_with_drain(&self, drain: bool) { self.0.shut_down_with_drain(drain).await }
///     fn is_shutting_down(&self) -> bool { self.0.is_shutting_down() }
/// }
/// ```
#[async_trait]
pub trait Queue<T>: Send + Sync {
    /// Queues `item` unless it is already waiting.
    fn add(&self, item: T);

    /// Queues `item` with a priority. Queues without priorities ignore it; see
    /// [`PriorityQueue`] for one that honours it.
    fn add_with_priority(&self, item: T, priority: i32) {
        let _ = priority;
        self.add(item)
    }

    /// Queues every item of `items`, in order, exactly as calling [`add`](Queue::add) for each
    /// would. Queues may take their lock once per batch (or per part of one) instead of once
    /// per item; the default calls `add` for each item.
    fn add_batch(&self, items: Vec<T>) {
        for item in items {
            self.add(item);
        }
    }

    /// Queues every item of `items` with `priority`, in order, exactly as calling
    /// [`add_with_priority`](Queue::add_with_priority) for each would (the default does).
    ///
    /// ```
    /// use informer_core::Queue;
    /// use informer_core::queue::{PRIORITY_LOW, PriorityQueue};
    ///
    /// let queue = PriorityQueue::<&str>::new();
    /// queue.add_batch_with_priority(vec!["a", "b", "a"], PRIORITY_LOW);
    /// assert_eq!(queue.len(), 2);
    /// ```
    fn add_batch_with_priority(&self, items: Vec<T>, priority: i32) {
        for item in items {
            self.add_with_priority(item, priority);
        }
    }

    /// Waits for an item. `None` once the queue is shut down and empty.
    async fn get(&self) -> Option<T>;

    /// Hands out a ready item without waiting, with the same guarantees as
    /// [`get`](Queue::get); `None` if no item is ready, or if the queue does not offer this
    /// (the default, and a [`QueueWrapper`]'s unless it forwards
    /// it). Through `dyn Queue`, [`get`](Queue::get) boxes its future: a worker that tries
    /// this first pays for that only when it has to wait. So `None` does not prove the queue
    /// empty: a test asking "nothing is ready" should check [`len`](Queue::len), or wait on
    /// `get` with a timeout.
    ///
    /// ```
    /// use informer_core::Queue;
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: Box<dyn Queue<&str>> = Box::new(WorkQueue::new());
    /// assert_eq!(queue.try_get(), None);
    /// queue.add("a");
    /// assert_eq!(queue.try_get(), Some("a"));
    /// queue.done(&"a");
    /// ```
    fn try_get(&self) -> Option<T> {
        None
    }

    /// Marks `item` as processed, allowing it to be handed out again. A worker that may be
    /// dropped between `get` and `done` (cancelled, timed out, a task whose term ended)
    /// takes items with [`take`] instead, whose guard calls this when
    /// dropped.
    fn done(&self, item: &T);

    /// The number of items waiting: not counting items being processed, nor delayed items
    /// whose time has not come (a delayed item counts as soon as its time has passed, before
    /// any `get`).
    fn len(&self) -> usize;

    /// Whether no item is waiting.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues `item` after `delay`. If the item is already waiting for an earlier time (or is
    /// ready), that time stays; a later time never postpones it, and an earlier one replaces
    /// it. An item being processed is queued once both `delay` has passed and it is done.
    fn add_after(&self, item: T, delay: Duration);

    /// Queues `item` after the delay the rate limiter gives it. The rate limiter records the
    /// failure (its `when` is called) even when the queue is shutting down and drops the
    /// item, as client-go's `AddRateLimited` does.
    fn add_rate_limited(&self, item: T);

    /// Tells the rate limiter that `item` succeeded: its backoff is reset.
    fn forget(&self, item: &T);

    /// How many times `item` was requeued through [`add_rate_limited`](Queue::add_rate_limited)
    /// since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;

    /// Stops accepting items; waiting workers get `None` once the queue is empty. A
    /// [`shut_down_with_drain`](Queue::shut_down_with_drain) waiting meanwhile returns at once.
    fn shut_down(&self);

    /// Shuts down, then waits until every item being processed is done (and, if
    /// `drain_queued` is true, until every queued item has been handed out and done), or
    /// until [`shut_down`](Queue::shut_down) is called meanwhile (a forced shutdown: the wait
    /// ends at once).
    async fn shut_down_with_drain(&self, drain_queued: bool);

    /// Whether [`shut_down`](Queue::shut_down) was called.
    fn is_shutting_down(&self) -> bool;
}

/// How many calls of [`cooperate`] on a thread spend one unit of the running task's tokio
/// budget (128 units a poll), so that a task that never waits yields every 4,096 items. Each
/// yield costs a few microseconds (the task goes to the back of its thread's queue): a unit
/// per call cost Q1 (`benches/core.rs`, items that cost nothing to process) 8% of its
/// completions, one per 8 calls 4%; at this rate Q1 does not see it, and a worker whose
/// reconciles take 10 µs still lets its thread's other tasks run every 40 ms or so.
const COOP_EVERY: u32 = 32;

/// Makes a loop that never waits cooperative, as tokio's channels are: every 32
/// calls on this thread spend one unit of the task's budget, and a task whose budget is spent
/// yields to the thread's other tasks first. A worker whose every `get` finds an item ready
/// (a reconcile that reads only its cache) otherwise stays in one poll and holds its thread:
/// the thread's other tasks, timers and its own cancellation never run.
///
/// [`WorkQueue::get`] and [`PriorityQueue::get`] call it; so does a controller's worker loop
/// between keys.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// for _ in 0..10_000 {
///     // ... work that never waits ...
///     informer_core::queue::cooperate().await;
/// }
/// # }
/// ```
#[inline]
pub async fn cooperate() {
    if cooperation_due() {
        tokio::task::coop::consume_budget().await;
    }
}

/// Counts a call of [`cooperate`] on this thread; whether it is one that spends budget.
#[inline]
fn cooperation_due() -> bool {
    thread_local!(static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    CALLS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n.is_multiple_of(COOP_EVERY)
    })
}
