//! What a metrics layer reads from a queue: event hooks and a snapshot of counters.
//!
//! client-go's workqueue metrics map onto these as follows:
//!
//! | client-go metric | source |
//! | --- | --- |
//! | `workqueue_depth` | [`QueueStats::depth`], or `added - taken` from the hooks |
//! | `workqueue_adds_total` | [`QueueStats::adds_total`], or [`QueueMetrics::added`] |
//! | `workqueue_queue_duration_seconds` | [`QueueMetrics::taken`] |
//! | `workqueue_work_duration_seconds` | [`QueueMetrics::done`] |
//! | `workqueue_unfinished_work_seconds` | [`QueueStats::unfinished_work`] |
//! | `workqueue_longest_running_processor_seconds` | [`QueueStats::longest_running`] |
//! | `workqueue_retries_total` | [`QueueStats::retries_total`], or [`QueueMetrics::retried`] |

use std::time::Duration;

/// Hooks a queue calls as items move through it, for a metrics layer.
///
/// Installed with [`QueueBuilder::metrics`](crate::queue::QueueBuilder::metrics). Installing
/// hooks also turns on time tracking (the queue reads the clock on add, get and done); without
/// hooks the queue never reads the clock for metrics. Hooks are called after the queue's lock
/// is released, so they may call back into the queue, but they run on the caller's thread:
/// keep them cheap (increment a counter, observe a histogram).
///
/// Every method has an empty default, so an implementation picks what it needs.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// use informer_core::queue::{QueueMetrics, WorkQueue};
///
/// #[derive(Default)]
/// struct Adds(AtomicU64);
///
/// impl QueueMetrics for Adds {
///     fn added(&self) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let adds = Arc::new(Adds::default());
/// let queue: WorkQueue<String> = WorkQueue::builder().name("pods").metrics(adds.clone()).build();
/// queue.add("default/web-0".to_string());
/// queue.add("default/web-0".to_string()); // deduplicated: not an add
/// assert_eq!(adds.0.load(Ordering::Relaxed), 1);
/// ```
pub trait QueueMetrics: Send + Sync {
    /// An item became ready to be handed out (it was added, or its delay passed): client-go's
    /// `adds_total` and `depth + 1`. Adds of an item that is already waiting are not counted.
    /// An item that becomes ready again while it is being processed is counted when that
    /// happens; it enters the depth once it is done (client-go counts it the same way).
    fn added(&self) {}

    /// A worker took an item that waited `queue_duration` since it became ready: client-go's
    /// `queue_duration_seconds` and `depth - 1`.
    fn taken(&self, queue_duration: Duration) {
        let _ = queue_duration;
    }

    /// A worker finished an item it held for `work_duration`: client-go's
    /// `work_duration_seconds`.
    fn done(&self, work_duration: Duration) {
        let _ = work_duration;
    }

    /// `add_after` or `add_rate_limited` was called (before shutdown): client-go's
    /// `retries_total`.
    fn retried(&self) {}
}

/// A snapshot of a queue's state and counters, from `stats()` on
/// [`WorkQueue`](crate::queue::WorkQueue) or [`PriorityQueue`](crate::queue::PriorityQueue).
///
/// Counters start at zero when the queue is created and only grow. The two durations need
/// time tracking, which is on only when [`QueueMetrics`] hooks are installed; otherwise they
/// are `None`.
///
/// ```
/// use informer_core::queue::WorkQueue;
///
/// let queue: WorkQueue<&str> = WorkQueue::new();
/// queue.add("a");
/// queue.add("b");
/// let stats = queue.stats();
/// assert_eq!((stats.depth, stats.adds_total, stats.in_flight), (2, 2, 0));
/// assert_eq!(stats.unfinished_work, None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct QueueStats {
    /// Items ready to be handed out (what `len()` returns).
    pub depth: usize,
    /// Items waiting for their `add_after` / `add_rate_limited` delay (not in `depth`),
    /// including items being processed that will be queued again once both their delay has
    /// passed and they are done.
    pub delayed: usize,
    /// Items handed out and not yet done.
    pub in_flight: usize,
    /// How many times an item became ready (see [`QueueMetrics::added`]).
    pub adds_total: u64,
    /// How many `add_after` / `add_rate_limited` calls were accepted.
    pub retries_total: u64,
    /// The sum of how long every in-flight item has been processed so far (client-go's
    /// `unfinished_work_seconds`). `None` without time tracking.
    pub unfinished_work: Option<Duration>,
    /// How long the oldest in-flight item has been processed (client-go's
    /// `longest_running_processor_seconds`); zero when nothing is in flight. `None` without
    /// time tracking.
    pub longest_running: Option<Duration>,
}
