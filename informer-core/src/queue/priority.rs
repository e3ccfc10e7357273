//! [`PriorityQueue`]: controller-runtime's priority queue, with every [`WorkQueue`] guarantee:
//! the alias, and the methods only a queue with priorities has.
//!
//! [`WorkQueue`]: super::WorkQueue

use std::hash::Hash;
use std::time::Duration;

use super::ordered_queue::{OrderedQueue, PriorityOrder};

/// A work queue that hands out higher-priority items first (controller-runtime's
/// `priorityqueue`), with every guarantee of [`WorkQueue`](super::WorkQueue).
///
/// The [`OrderedQueue`] that hands items out in [`PriorityOrder`]; the methods it shares with
/// [`WorkQueue`](super::WorkQueue) are documented there, and it adds the `*_with_priority`
/// ones below.
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
pub type PriorityQueue<T> = OrderedQueue<T, PriorityOrder>;

impl<T> OrderedQueue<T, PriorityOrder>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
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
}

#[cfg(test)]
mod tests;
