//! [`WorkQueue`]: client-go's deduplicating, delaying, rate-limiting workqueue in one type.

#[cfg(doc)]
use super::RateLimiter;
use super::ordered_queue::{OrderedQueue, ReadyOrder};

/// A FIFO work queue for controllers: client-go's `Type`, delaying queue and rate-limiting
/// queue in one.
///
/// The [`OrderedQueue`] that hands items out in [`ReadyOrder`]; its methods are documented
/// there (with [`PriorityQueue`](super::PriorityQueue), the other order, it shares them all).
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
pub type WorkQueue<T> = OrderedQueue<T, ReadyOrder>;

#[cfg(test)]
mod tests;
