//! [`QueueBuilder`]: the settings of a [`WorkQueue`] or [`PriorityQueue`] (rate limiter,
//! name, metrics hooks).

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use super::engine::Engine;
use super::metrics::QueueMetrics;
use super::ordered_queue::{Order, OrderedQueue};
use super::rate_limiter::RateLimiter;
#[cfg(doc)]
use super::{PriorityQueue, WorkQueue, default_controller_rate_limiter};

/// Configures a [`WorkQueue`] or a [`PriorityQueue`].
///
/// Created by `WorkQueue::builder()` or `PriorityQueue::builder()`; every setting is
/// optional.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_core::queue::{ItemExponentialFailureRateLimiter, WorkQueue};
///
/// let queue: WorkQueue<String> = WorkQueue::builder()
///     .name("pods")
///     .rate_limiter(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(10),
///         Duration::from_secs(60),
///     ))
///     .build();
/// assert_eq!(queue.name(), Some("pods"));
/// ```
pub struct QueueBuilder<T, Q> {
    pub(super) limiter: Option<Arc<dyn RateLimiter<T>>>,
    pub(super) name: Option<String>,
    pub(super) metrics: Option<Arc<dyn QueueMetrics>>,
    _queue: PhantomData<fn() -> Q>,
}

impl<T, Q> QueueBuilder<T, Q> {
    pub(crate) fn new() -> Self {
        Self {
            limiter: None,
            name: None,
            metrics: None,
            _queue: PhantomData,
        }
    }

    /// The limiter `add_rate_limited` asks for delays. Default:
    /// [`default_controller_rate_limiter`]. An `Arc<dyn RateLimiter<T>>` is a limiter too.
    ///
    /// ```
    /// use informer_core::queue::{BucketRateLimiter, WorkQueue};
    ///
    /// let queue: WorkQueue<u32> = WorkQueue::builder()
    ///     .rate_limiter(BucketRateLimiter::new(50.0, 300))
    ///     .build();
    /// # let _ = queue;
    /// ```
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiter = Some(Arc::new(limiter));
        self
    }

    /// A name for the queue, for metrics labels and logs. Default: none.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    ///
    /// let queue: WorkQueue<u32> = WorkQueue::builder().name("nodes").build();
    /// assert_eq!(queue.name(), Some("nodes"));
    /// ```
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Hooks called as items move through the queue; also turns on time tracking for
    /// `stats()`. Default: none (and the queue never reads the clock for metrics). See
    /// [`QueueMetrics`].
    pub fn metrics(mut self, metrics: Arc<dyn QueueMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

impl<T, Q> fmt::Debug for QueueBuilder<T, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("name", &self.name)
            .field("rate_limiter", &self.limiter.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

impl<T, O> QueueBuilder<T, OrderedQueue<T, O>>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
    O: Order,
{
    /// Builds the [`WorkQueue`] or [`PriorityQueue`].
    ///
    /// ```
    /// use informer_core::queue::{PriorityQueue, WorkQueue};
    ///
    /// let queue: WorkQueue<u8> = WorkQueue::builder().build();
    /// let priorities: PriorityQueue<u8> = PriorityQueue::builder().build();
    /// # let _ = (queue, priorities);
    /// ```
    pub fn build(self) -> OrderedQueue<T, O> {
        OrderedQueue::from_engine(Engine::new(self, O::PRIORITIES))
    }
}
