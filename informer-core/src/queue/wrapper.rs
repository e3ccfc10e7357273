//! [`QueueWrapper`]: a queue made by wrapping another, writing only what changes, without
//! `async-trait`.

use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;

use super::{PRIORITY_NORMAL, Queue};

/// A queue that wraps another [`Queue`] and changes some of what it does (counts, logs,
/// drops or reorders keys): implement [`inner`](Self::inner) and the methods you change;
/// every other method forwards to the inner queue. Every type implementing it is a
/// [`Queue`] (hand it to `#[controller(queue = ...)]` or `ControllerBuilder::queue` as
/// `Arc<dyn Queue<T>>`). Its async methods are plain `async fn`s: no `async-trait` needed.
///
/// **Every add goes through [`add_with_priority`](Self::add_with_priority)**, with its
/// priority: [`Queue::add`] comes with [`PRIORITY_NORMAL`], and batches
/// ([`add_batch_with_priority`](Self::add_batch_with_priority)) item by item unless you
/// override them too. So a wrapper that overrides one method sees every add, and cannot drop
/// a priority by forwarding to the inner queue's `add`. (There is no `add` to override: a
/// wrapper writing one is told so by the compiler.)
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer_core::queue::{PRIORITY_LOW, PriorityQueue, QueueWrapper};
/// use informer_core::{ObjectKey, Queue};
///
/// /// Counts adds, and the keys handed to workers.
/// struct Counting(PriorityQueue<ObjectKey>, Arc<AtomicUsize>, Arc<AtomicUsize>);
///
/// impl QueueWrapper for Counting {
///     type Item = ObjectKey;
///     fn inner(&self) -> &dyn Queue<ObjectKey> {
///         &self.0
///     }
///     fn add_with_priority(&self, key: ObjectKey, priority: i32) {
///         self.1.fetch_add(1, Ordering::Relaxed);
///         self.0.add_with_priority(key, priority) // the priority is kept
///     }
///     async fn get(&self) -> Option<ObjectKey> {
///         let key = self.0.get().await?;
///         self.2.fetch_add(1, Ordering::Relaxed);
///         Some(key)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let (adds, gets) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
/// let queue: Arc<dyn Queue<ObjectKey>> =
///     Arc::new(Counting(PriorityQueue::new(), adds.clone(), gets.clone()));
/// queue.add_with_priority(ObjectKey::new(Some("ns"), "resync"), PRIORITY_LOW);
/// queue.add(ObjectKey::new(Some("ns"), "change")); // comes through add_with_priority
/// assert_eq!(queue.get().await.unwrap().name(), "change", "low priority waits");
/// assert_eq!((adds.load(Ordering::Relaxed), gets.load(Ordering::Relaxed)), (2, 1));
/// # }
/// ```
///
/// On the wrapper's own type (not through `dyn Queue`), a method both traits have is
/// ambiguous: call it as `Queue::len(&wrapper)`.
pub trait QueueWrapper: Send + Sync {
    /// The items queued.
    type Item: Send + 'static;

    /// The queue wrapped.
    fn inner(&self) -> &dyn Queue<Self::Item>;

    /// Every add, with its priority (`Queue::add` comes with [`PRIORITY_NORMAL`]).
    /// Forwards by default.
    fn add_with_priority(&self, item: Self::Item, priority: i32) {
        self.inner().add_with_priority(item, priority)
    }

    /// Adds of batches: by default, item by item through
    /// [`add_with_priority`](Self::add_with_priority). Override it (forwarding to the inner
    /// queue's) to keep one lock per batch.
    fn add_batch_with_priority(&self, items: Vec<Self::Item>, priority: i32) {
        for item in items {
            self.add_with_priority(item, priority);
        }
    }

    /// [`Queue::get`]. Forwards by default.
    fn get(&self) -> impl Future<Output = Option<Self::Item>> + Send {
        self.inner().get()
    }

    /// [`Queue::try_get`]. `None` by default (so that every hand-out goes through
    /// [`get`](Self::get), which a wrapper may change); a wrapper whose `get` forwards can
    /// forward this too, and spare its workers `get`'s boxed future when a key is ready.
    fn try_get(&self) -> Option<Self::Item> {
        None
    }

    /// [`Queue::done`]. Forwards by default.
    fn done(&self, item: &Self::Item) {
        self.inner().done(item)
    }

    /// [`Queue::len`]. Forwards by default.
    fn len(&self) -> usize {
        self.inner().len()
    }

    /// [`Queue::is_empty`]: whether [`len`](Self::len) is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`Queue::add_after`]. Forwards by default.
    fn add_after(&self, item: Self::Item, delay: Duration) {
        self.inner().add_after(item, delay)
    }

    /// [`Queue::add_rate_limited`]. Forwards by default.
    fn add_rate_limited(&self, item: Self::Item) {
        self.inner().add_rate_limited(item)
    }

    /// [`Queue::forget`]. Forwards by default.
    fn forget(&self, item: &Self::Item) {
        self.inner().forget(item)
    }

    /// [`Queue::num_requeues`]. Forwards by default.
    fn num_requeues(&self, item: &Self::Item) -> u32 {
        self.inner().num_requeues(item)
    }

    /// [`Queue::shut_down`]. Forwards by default.
    fn shut_down(&self) {
        self.inner().shut_down()
    }

    /// [`Queue::shut_down_with_drain`]. Forwards by default.
    fn shut_down_with_drain(&self, drain_queued: bool) -> impl Future<Output = ()> + Send {
        self.inner().shut_down_with_drain(drain_queued)
    }

    /// [`Queue::is_shutting_down`]. Forwards by default.
    fn is_shutting_down(&self) -> bool {
        self.inner().is_shutting_down()
    }
}

#[async_trait]
impl<W: QueueWrapper> Queue<W::Item> for W {
    fn add(&self, item: W::Item) {
        QueueWrapper::add_with_priority(self, item, PRIORITY_NORMAL)
    }

    fn add_with_priority(&self, item: W::Item, priority: i32) {
        QueueWrapper::add_with_priority(self, item, priority)
    }

    fn add_batch(&self, items: Vec<W::Item>) {
        QueueWrapper::add_batch_with_priority(self, items, PRIORITY_NORMAL)
    }

    fn add_batch_with_priority(&self, items: Vec<W::Item>, priority: i32) {
        QueueWrapper::add_batch_with_priority(self, items, priority)
    }

    async fn get(&self) -> Option<W::Item> {
        QueueWrapper::get(self).await
    }

    fn try_get(&self) -> Option<W::Item> {
        QueueWrapper::try_get(self)
    }

    fn done(&self, item: &W::Item) {
        QueueWrapper::done(self, item)
    }

    fn len(&self) -> usize {
        QueueWrapper::len(self)
    }

    fn is_empty(&self) -> bool {
        QueueWrapper::is_empty(self)
    }

    fn add_after(&self, item: W::Item, delay: Duration) {
        QueueWrapper::add_after(self, item, delay)
    }

    fn add_rate_limited(&self, item: W::Item) {
        QueueWrapper::add_rate_limited(self, item)
    }

    fn forget(&self, item: &W::Item) {
        QueueWrapper::forget(self, item)
    }

    fn num_requeues(&self, item: &W::Item) -> u32 {
        QueueWrapper::num_requeues(self, item)
    }

    fn shut_down(&self) {
        QueueWrapper::shut_down(self)
    }

    async fn shut_down_with_drain(&self, drain_queued: bool) {
        QueueWrapper::shut_down_with_drain(self, drain_queued).await
    }

    fn is_shutting_down(&self) -> bool {
        QueueWrapper::is_shutting_down(self)
    }
}

#[cfg(test)]
mod tests;
