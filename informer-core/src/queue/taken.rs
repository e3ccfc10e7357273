//! [`take`]: an item of a queue that is marked done when dropped, Go's
//! `defer queue.Done(item)` for async workers.

use std::ops::Deref;

use super::Queue;

/// An item a worker took from a queue, marked [`done`](Queue::done) when this is dropped:
/// when the worker finishes with it, returns early, panics, or is itself dropped (a task
/// cancelled at the end of a leader's term, a `select!` that took another branch, a
/// timeout). A worker calling `get` and `done` by hand that is dropped in between leaves the
/// item marked as in process for ever: the queue never hands it out again, and an add of it
/// waits behind that `done`.
///
/// Everything else a worker does with the item is as with `get` (`forget`,
/// `add_rate_limited`, an add while it is processed, which queues it again once it is done).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use informer_core::queue::{WorkQueue, take};
/// use informer_core::Queue;
///
/// let queue = WorkQueue::<String>::new();
/// queue.add("default/web".into());
/// let worker = async {
///     while let Some(key) = take(&queue).await {
///         // sync(&key).await: a dropped or panicking worker still marks `key` done
///         queue.forget(&key);
///     }
/// };
/// // The worker is dropped mid-item (say, a timeout): the key is not stranded.
/// let _ = tokio::time::timeout(std::time::Duration::from_millis(10), worker).await;
/// queue.add("default/web".into());
/// assert_eq!(queue.try_get().as_deref(), Some("default/web"));
/// # }
/// ```
#[must_use = "dropping it marks the item done at once"]
pub struct Taken<'q, T, Q: Queue<T> + ?Sized> {
    queue: &'q Q,
    item: T,
}

/// Waits for an item of `queue` (as [`Queue::get`]), handed out as a [`Taken`] that marks it
/// done when dropped. `None` once the queue is shut down and empty.
pub async fn take<T, Q>(queue: &Q) -> Option<Taken<'_, T, Q>>
where
    Q: Queue<T> + ?Sized,
{
    let item = queue.get().await?;
    Some(Taken { queue, item })
}

impl<T, Q: Queue<T> + ?Sized> Taken<'_, T, Q> {
    /// The item.
    pub fn item(&self) -> &T {
        &self.item
    }
}

impl<T, Q: Queue<T> + ?Sized> Deref for Taken<'_, T, Q> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: std::fmt::Debug, Q: Queue<T> + ?Sized> std::fmt::Debug for Taken<'_, T, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Taken").field(&self.item).finish()
    }
}

/// The item's own `Display` (a key logs as itself).
impl<T: std::fmt::Display, Q: Queue<T> + ?Sized> std::fmt::Display for Taken<'_, T, Q> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.item.fmt(f)
    }
}

impl<T, Q: Queue<T> + ?Sized> Drop for Taken<'_, T, Q> {
    fn drop(&mut self) {
        self.queue.done(&self.item);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::queue::WorkQueue;

    #[tokio::test]
    async fn a_taken_item_is_done_when_dropped() {
        let queue = WorkQueue::<&str>::new();
        queue.add("a");
        let taken = take(&queue).await.unwrap();
        assert_eq!(*taken, "a");
        queue.add("a");
        assert_eq!(queue.try_get(), None, "held while taken");
        drop(taken);
        assert_eq!(queue.try_get(), Some("a"), "queued again once done");
    }

    #[tokio::test]
    async fn a_worker_dropped_mid_item_leaves_it_free_to_be_handed_out() {
        let queue = Arc::new(WorkQueue::<&str>::new());
        queue.add("a");
        let worker = {
            let queue = queue.clone();
            async move {
                let _taken = take(&*queue).await;
                std::future::pending::<()>().await;
            }
        };
        assert!(
            tokio::time::timeout(Duration::from_millis(10), worker)
                .await
                .is_err()
        );
        queue.add("a");
        assert_eq!(queue.try_get(), Some("a"));
    }

    #[tokio::test]
    async fn through_dyn_queue_and_after_shutdown() {
        let queue: Box<dyn Queue<&str>> = Box::new(WorkQueue::new());
        queue.add("a");
        queue.shut_down();
        let taken = take(&*queue)
            .await
            .expect("queued items are still handed out");
        assert_eq!(taken.item(), &"a");
        drop(taken);
        assert!(take(&*queue).await.is_none());
    }
}
