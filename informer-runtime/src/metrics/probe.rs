//! What [`Metrics`](super::Metrics) reads of a controller, defined here so that the metrics
//! depend on no controller internals: a controller publishes a [`ControllerProbe`], and the
//! metrics read a [`ControllerSample`] from it at each scrape.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::histogram::Histogram;

use super::WorkqueueHooks;

/// A snapshot of a controller's counters (monotonic since the controller was built, except
/// `active_workers` and `queue_depth`).
///
/// `reconciles()` = `successes + requeues_after + requeues + errors`; `errors` includes
/// terminal errors, panics and timeouts.
///
/// ```
/// use informer_runtime::controller::ControllerStats;
/// let stats = ControllerStats::default();
/// assert_eq!(stats.reconciles(), 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ControllerStats {
    /// Reconciles that returned `Ok(Action::Done)`.
    pub successes: u64,
    /// Reconciles that returned `Ok(Action::RequeueAfter(_))`.
    pub requeues_after: u64,
    /// Reconciles that returned `Ok(Action::Requeue)` (queued again through the rate
    /// limiter, not counted as errors).
    pub requeues: u64,
    /// Failed reconciles: errors of both kinds, panics and timeouts.
    pub errors: u64,
    /// Failed reconciles that were terminal (`ErrorKind::Terminal`) (not
    /// retried).
    pub terminal_errors: u64,
    /// Reconciles that panicked (retried as transient errors).
    pub panics: u64,
    /// Reconciles that did not finish within the timeout (retried as transient errors).
    pub timeouts: u64,
    /// `add_after` and `add_rate_limited` calls of the runner (client-go's workqueue retries).
    pub retries: u64,
    /// Keys dropped without a reconcile because this replica does not hold their shard.
    pub skipped: u64,
    /// Reconciles dropped midway because the replica lost the key's shard or its leadership.
    pub cancelled: u64,
    /// Reconciles not run (the key requeued with backoff) because a cache had not yet seen
    /// the key's own last writes (read-your-own-writes; `stale_sync_skips_total`).
    pub stale_sync_skips: u64,
    /// Workers running a reconcile right now.
    pub active_workers: usize,
    /// Keys waiting in the queue right now.
    pub queue_depth: usize,
}

impl ControllerStats {
    /// Reconciles that ran to an answer (success, either requeue, or error).
    ///
    /// ```
    /// use informer_runtime::controller::ControllerStats;
    /// assert_eq!(ControllerStats::default().reconciles(), 0);
    /// ```
    pub fn reconciles(&self) -> u64 {
        self.successes + self.requeues_after + self.requeues + self.errors
    }
}

/// A controller whose metrics [`Metrics`](super::Metrics) can report:
/// [`Controller`](crate::controller::Controller) is one.
pub trait ControllerMetrics {
    /// The probe the metrics read at each scrape. Every call returns the same probe (the
    /// same `Arc`), so that a controller added twice is reported once.
    fn probe(&self) -> Arc<dyn ControllerProbe>;
}

/// Reads one controller's numbers for [`Metrics`](super::Metrics).
pub trait ControllerProbe: Send + Sync {
    /// The controller's numbers, read now (called once per scrape).
    fn sample(&self) -> ControllerSample;
}

/// One controller's numbers at one scrape: labels, counters, gauges and the histograms
/// (shared handles, read in place).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ControllerSample {
    /// The controller's name: the `controller` and workqueue `name` labels.
    pub name: Arc<str>,
    /// Configured workers (`controller_runtime_max_concurrent_reconciles`).
    pub workers: usize,
    /// Reconcile counters, active workers and queue depth.
    pub stats: ControllerStats,
    /// The hooks of the controller's queue (adds, queue durations).
    pub hooks: Arc<WorkqueueHooks>,
    /// How long workers held keys.
    pub work_duration: Histogram,
    /// How long reconciles took.
    pub reconcile_time: Histogram,
    /// The sum of the running times of the reconciles in flight.
    pub unfinished_work: Duration,
    /// The running time of the oldest reconcile in flight.
    pub longest_running: Duration,
    /// Each informer the controller watches, with the controller's handler on it.
    pub informers: Vec<InformerSample>,
}

/// One informer of a controller, with the controller's handler on it, at one scrape.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InformerSample {
    /// The informer (`informer` label); informers shared by several controllers are
    /// reported once.
    pub informer: String,
    /// The controller's handler on it (`handler` label).
    pub handler: String,
    /// Lists after the first one.
    pub relists: u64,
    /// Watches after the first one.
    pub watch_restarts: u64,
    /// Lists, watch events and bookmarks the reflector refused for being older than its
    /// cache (a lagging API server's answers; each is followed by a consistent list).
    pub stale_refusals: u64,
    /// Notifications buffered or being handled for the handler; `None` once the handler is
    /// removed.
    pub pending: Option<usize>,
    /// The resource version the informer's cache has reached (`store_resource_version`;
    /// `None` before its first list, or when it is not tracked).
    pub store_resource_version: Option<u64>,
}
