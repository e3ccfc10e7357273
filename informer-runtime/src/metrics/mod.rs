//! Prometheus metrics of controllers, their queues and their informers, through the
//! [`prometheus-client`](https://docs.rs/prometheus-client) crate, with the names client-go
//! and controller-runtime use, so existing dashboards and alerts work.
//!
//! | metric | type | labels | what |
//! | --- | --- | --- | --- |
//! | `workqueue_depth` | gauge | `controller`, `name`, `priority` | keys waiting |
//! | `workqueue_adds_total` | counter | `controller`, `name` | keys that became ready |
//! | `workqueue_queue_duration_seconds` | histogram | `controller`, `name` | how long keys waited before a worker took them |
//! | `workqueue_work_duration_seconds` | histogram | `controller`, `name` | how long workers held keys |
//! | `workqueue_unfinished_work_seconds` | gauge | `controller`, `name` | sum of the running times of keys in flight |
//! | `workqueue_longest_running_processor_seconds` | gauge | `controller`, `name` | running time of the oldest key in flight |
//! | `workqueue_retries_total` | counter | `controller`, `name` | `add_after` and `add_rate_limited` calls |
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` | reconciles by result: `success`, `requeue_after` (`Action::RequeueAfter`), `requeue` (`Action::Requeue`), `error` |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` | failed reconciles (all kinds) |
//! | `controller_runtime_terminal_reconcile_errors_total` | counter | `controller` | failed reconciles not retried |
//! | `controller_runtime_reconcile_panics_total` | counter | `controller` | reconciles that panicked |
//! | `controller_runtime_reconcile_timeouts_total` | counter | `controller` | reconciles past the timeout |
//! | `controller_runtime_reconcile_time_seconds` | histogram | `controller` | reconcile durations |
//! | `controller_runtime_active_workers` | gauge | `controller` | workers reconciling now |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` | configured workers |
//! | `stale_sync_skips_total` | counter | `controller` | reconciles requeued because a cache had not yet seen the key's own writes (read-your-own-writes; client-go's name) |
//! | `informer_relists_total` | counter | `informer` | lists after the first one |
//! | `informer_watch_restarts_total` | counter | `informer` | watches after the first one |
//! | `informer_stale_refusals_total` | counter | `informer` | lists, events and bookmarks refused for being older than the cache (a lagging API server) |
//! | `store_resource_version` | gauge | `informer` | the resource version the cache has reached (client-go's `LastStoreSyncResourceVersion`) |
//! | `informer_handler_pending_notifications` | gauge | `informer`, `handler` | notifications buffered for a controller's handler |
//! | `leader_election_master_status` | gauge | `name` | 1 while this replica leads (with leader election) |
//! | `informer_shards_held` | gauge | `name` | the shards this replica holds now (with sharding; `name`: the shard Leases' prefix) |
//! | `informer_shards_total` | gauge | `name` | the shards the keys are spread over (with sharding) |
//! | `informer_shard_skipped_keys_total` | counter | `controller` | keys dropped without a reconcile: their shard is another replica's |
//! | `informer_shard_cancelled_reconciles_total` | counter | `controller` | reconciles dropped midway: the replica lost the key's shard or its leadership |
//!
//! The workqueue `name` and the `controller` label are the controller's name, or the name
//! of a queue of your own built with [`Metrics::work_queue`]. Workqueue
//! series carry both, as controller-runtime labels them (`controller` and `name`, the same
//! value), and `workqueue_depth` also `priority`: always `""` here, one series per queue
//! (controller-runtime's priority queue reports one series per priority). Informers
//! shared by several controllers are reported once. Values are read when scraped: recording
//! costs a few atomic operations per key, and nothing is allocated per event.
//!
//! With leader election, a standby keeps its caches and its queue warm (unlike
//! controller-runtime, whose standbys start no controller): on a standby `workqueue_depth`
//! counts every key waiting for leadership, and once it leads, `workqueue_queue_duration_seconds`
//! includes that wait. Alert on them where `leader_election_master_status` is 1
//! (`workqueue_depth * on(pod) group_left leader_election_master_status`, or by the
//! leader's pod), not on every replica.
//!
//! Not reported (a controller-runtime manager's registry has them): client-go's REST
//! client metrics (`rest_client_requests_total`, `rest_client_request_duration_seconds`),
//! the process collector's `process_*` and `leader_election_slowpath_total`.

#![warn(missing_docs)]

mod probe;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer_core::queue::{Order, OrderedQueue, QueueBuilder, QueueMetrics, QueueStats};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use parking_lot::Mutex;

pub use probe::{
    ControllerMetrics, ControllerProbe, ControllerSample, ControllerStats, InformerSample,
};

/// client-go's workqueue duration buckets: 10 ns to 10 s, ×10 each.
pub(crate) fn work_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// controller-runtime's reconcile time buckets.
pub(crate) fn reconcile_time_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// The [`QueueMetrics`] hooks a controller installs in the queues it builds (and passes to
/// [`ControllerBuilder::queue_with`](crate::controller::ControllerBuilder::queue_with)): they
/// count adds (`workqueue_adds_total`) and time waits (`workqueue_queue_duration_seconds`).
/// The other workqueue metrics are measured by the runner, for any queue.
pub struct WorkqueueHooks {
    adds: AtomicU64,
    queue_duration: Histogram,
}

impl WorkqueueHooks {
    pub(crate) fn new() -> Self {
        Self {
            adds: AtomicU64::new(0),
            queue_duration: work_duration_histogram(),
        }
    }

    /// Keys that became ready so far.
    ///
    /// ```
    ///
    /// // Read through `Metrics`; the hooks count what queues report.
    /// let text = informer_runtime::metrics::Metrics::new().encode();
    /// assert!(text.contains("# TYPE workqueue_adds counter"));
    /// ```
    pub fn adds(&self) -> u64 {
        self.adds.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for WorkqueueHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkqueueHooks")
            .field("adds", &self.adds())
            .finish_non_exhaustive()
    }
}

impl QueueMetrics for WorkqueueHooks {
    fn added(&self) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    fn taken(&self, queue_duration: Duration) {
        self.queue_duration.observe(queue_duration.as_secs_f64());
    }
}

/// Whether this replica leads, for `leader_election_master_status`.
type LeaderFn = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Default)]
struct Inner {
    controllers: Mutex<Vec<Arc<dyn ControllerProbe>>>,
    /// Queues of the user's own ([`Metrics::work_queue`]).
    queues: Mutex<Vec<QueueProbe>>,
    leader: Mutex<Option<(String, LeaderFn)>>,
    /// With sharding: the Leases' prefix, the shards held now, and how many there are.
    shards: Mutex<Option<(String, ShardsFn, u32)>>,
}

/// How many shards this replica holds now.
type ShardsFn = Arc<dyn Fn() -> usize + Send + Sync>;

/// The hooks [`Metrics::work_queue`] installs in a queue of your own: what the runner
/// measures for a controller's queue (work durations, retries), the queue reports itself.
struct OwnQueueHooks {
    adds: AtomicU64,
    retries: AtomicU64,
    queue_duration: Histogram,
    work_duration: Histogram,
}

impl QueueMetrics for OwnQueueHooks {
    fn added(&self) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    fn taken(&self, queue_duration: Duration) {
        self.queue_duration.observe(queue_duration.as_secs_f64());
    }

    fn done(&self, work_duration: Duration) {
        self.work_duration.observe(work_duration.as_secs_f64());
    }

    fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }
}

/// A queue of the user's own, read at each scrape while it lives.
struct QueueProbe {
    name: Arc<str>,
    hooks: Arc<OwnQueueHooks>,
    /// The queue's counters and in-flight times; `None` once the queue is dropped.
    stats: Box<dyn Fn() -> Option<QueueStats> + Send + Sync>,
}

/// One queue's workqueue series at one scrape: a controller's or one of your own.
struct QueueSample {
    name: Arc<str>,
    depth: usize,
    adds: u64,
    retries: u64,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished_work: Duration,
    longest_running: Duration,
}

/// The metrics of any number of controllers, as one prometheus-client [`Collector`].
///
/// Add controllers with [`add_controller`](Self::add_controller) (the
/// [`Manager`](crate::manager::Manager) does it for its own), then either
/// [`register`](Self::register) it in a [`Registry`] that you serve, or
/// [`encode`](Self::encode) it directly. Values are read at each scrape; a `Metrics` is a
/// cheap handle (clones share the same controllers).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::Arc;
/// use informer_runtime::controller::{Action, Controller, reconciler_fn};
/// use informer_runtime::factory::{InformerFactory, InformerParams};
/// use informer_testing::MemoryListerWatcher;
/// use informer_runtime::metrics::Metrics;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let factory = InformerFactory::without_client();
/// let _source = factory.informer_from(InformerParams::all(), || Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
/// let controller = Controller::<ConfigMap>::builder(&factory)
///     .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async { Ok(Action::Done) }))
///     .unwrap();
///
/// let metrics = Metrics::new();
/// metrics.add_controller(&controller);
/// let mut registry = prometheus_client::registry::Registry::default();
/// metrics.register(&mut registry);
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_depth{controller="configmap",name="configmap",priority=""} 0"#));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<Arc<str>> = self.samples().into_iter().map(|c| c.name).collect();
        f.debug_struct("Metrics")
            .field("controllers", &names)
            .finish()
    }
}

impl Metrics {
    /// Metrics of no controller yet.
    ///
    /// ```
    /// # use informer_runtime::metrics::Metrics;
    /// let metrics = Metrics::new();
    /// assert!(metrics.encode().contains("# TYPE workqueue_depth gauge"));
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports `controller`'s metrics (its queue, reconciles, informers and handlers) from
    /// now on. Adding the same controller twice reports it once.
    pub fn add_controller(&self, controller: &impl ControllerMetrics) {
        let probe = controller.probe();
        let mut controllers = self.inner.controllers.lock();
        if !controllers.iter().any(|c| Arc::ptr_eq(c, &probe)) {
            controllers.push(probe);
        }
    }

    /// Builds the queue `builder` describes, named `name`, with hooks that report it under
    /// client-go's workqueue metrics (`workqueue_depth`, `workqueue_adds_total`, the queue
    /// and work durations, `workqueue_unfinished_work_seconds`,
    /// `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`), labelled
    /// `name` (and `controller`, the same value, as controller-runtime labels them), beside
    /// the controllers' queues: for workers of your own (client-go's
    /// `workqueue.NewTypedRateLimitingQueueWithConfig` with a `Name` and the global
    /// metrics provider). Its series go when the queue is dropped. Metrics hooks given to
    /// `builder` are replaced.
    ///
    /// ```
    /// use informer_core::queue::WorkQueue;
    /// use informer_core::Queue;
    /// use informer_runtime::metrics::Metrics;
    ///
    /// let metrics = Metrics::new();
    /// let queue = metrics.work_queue("foos", WorkQueue::<String>::builder());
    /// queue.add("default/a".to_string());
    /// let text = metrics.encode();
    /// assert!(text.contains(r#"workqueue_depth{controller="foos",name="foos",priority=""} 1"#));
    /// assert!(text.contains(r#"workqueue_adds_total{controller="foos",name="foos"} 1"#));
    /// ```
    pub fn work_queue<T, O>(
        &self,
        name: &str,
        builder: QueueBuilder<T, OrderedQueue<T, O>>,
    ) -> Arc<OrderedQueue<T, O>>
    where
        T: Clone + Eq + std::hash::Hash + Send + Sync + 'static,
        O: Order + 'static,
    {
        let hooks = Arc::new(OwnQueueHooks {
            adds: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            queue_duration: work_duration_histogram(),
            work_duration: work_duration_histogram(),
        });
        let queue = Arc::new(builder.name(name).metrics(hooks.clone()).build());
        let weak = Arc::downgrade(&queue);
        self.inner.queues.lock().push(QueueProbe {
            name: Arc::from(name),
            hooks,
            stats: Box::new(move || weak.upgrade().map(|queue| queue.stats())),
        });
        queue
    }

    /// The workqueue series of every controller and every queue of your own, read now.
    fn queue_samples(&self, controllers: &[ControllerSample]) -> Vec<QueueSample> {
        let mut samples: Vec<QueueSample> = controllers
            .iter()
            .map(|c| QueueSample {
                name: c.name.clone(),
                depth: c.stats.queue_depth,
                adds: c.hooks.adds(),
                retries: c.stats.retries,
                queue_duration: c.hooks.queue_duration.clone(),
                work_duration: c.work_duration.clone(),
                unfinished_work: c.unfinished_work,
                longest_running: c.longest_running,
            })
            .collect();
        let mut queues = self.inner.queues.lock();
        // A dropped queue is forgotten.
        queues.retain(|q| {
            let Some(stats) = (q.stats)() else {
                return false;
            };
            samples.push(QueueSample {
                name: q.name.clone(),
                depth: stats.depth,
                adds: q.hooks.adds.load(Ordering::Relaxed),
                retries: q.hooks.retries.load(Ordering::Relaxed),
                queue_duration: q.hooks.queue_duration.clone(),
                work_duration: q.hooks.work_duration.clone(),
                unfinished_work: stats.unfinished_work.unwrap_or_default(),
                longest_running: stats.longest_running.unwrap_or_default(),
            });
            true
        });
        samples
    }

    /// A sample of every controller, read now (not under the lock of the list, so that a
    /// probe may take its own locks).
    fn samples(&self) -> Vec<ControllerSample> {
        let probes = self.inner.controllers.lock().clone();
        probes.iter().map(|p| p.sample()).collect()
    }

    /// Reports `leader_election_master_status{name}`: 1 while `leading()` is true.
    pub(crate) fn set_leader_status(&self, name: String, leading: LeaderFn) {
        *self.inner.leader.lock() = Some((name, leading));
    }

    /// Reports `informer_shards_held{name}` (`held()`) and `informer_shards_total{name}`.
    pub(crate) fn set_shard_status(&self, name: String, held: ShardsFn, total: u32) {
        *self.inner.shards.lock() = Some((name, held, total));
    }

    /// Registers these metrics in `registry` (as a collector, so controllers added later are
    /// reported too).
    ///
    /// ```
    /// # use informer_runtime::metrics::Metrics;
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// Metrics::new().register(&mut registry);
    /// ```
    pub fn register(&self, registry: &mut Registry) {
        registry.register_collector(Box::new(self.clone()));
    }

    /// These metrics alone in the OpenMetrics text format (with the final `# EOF`).
    ///
    /// ```
    /// # use informer_runtime::metrics::Metrics;
    /// let text = Metrics::new().encode();
    /// assert!(text.ends_with("# EOF\n"));
    /// ```
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        self.register(&mut registry);
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

/// A counter family per controller: name, help, and the counter among the stats.
type CounterFamily = (&'static str, &'static str, fn(&ControllerStats) -> u64);

/// Encodes one family: a descriptor, then one sample per label set.
fn family<L, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    samples: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result
where
    L: prometheus_client::encoding::EncodeLabelSet,
    M: EncodeMetric,
{
    let mut metric = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, value) in samples {
        value.encode(metric.encode_family(&labels)?)?;
    }
    Ok(())
}

struct HistogramRef<'a>(&'a Histogram);

impl EncodeMetric for HistogramRef<'_> {
    fn encode(&self, encoder: prometheus_client::encoding::MetricEncoder) -> fmt::Result {
        self.0.encode(encoder)
    }
    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

impl Collector for Metrics {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let controllers = self.samples();
        let e = &mut encoder;
        // controller-runtime labels each queue series with the controller's name twice, as
        // `controller` and `name` (in Go's label order), and its depth by priority too.
        let queues = self.queue_samples(&controllers);
        let by_name = |q: &QueueSample| {
            [
                ("controller".to_owned(), q.name.to_string()),
                ("name".to_owned(), q.name.to_string()),
            ]
        };
        let by_priority = |q: &QueueSample| {
            [
                ("controller".to_owned(), q.name.to_string()),
                ("name".to_owned(), q.name.to_string()),
                ("priority".to_owned(), String::new()),
            ]
        };
        let by_controller = |c: &ControllerSample| [("controller".to_owned(), c.name.to_string())];
        let counter = |v: u64| ConstCounter::new(v);
        let gauge = |v: usize| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
        let seconds = |d: Duration| ConstGauge::new(d.as_secs_f64());

        // Workqueue (client-go names).
        family(
            e,
            "workqueue_depth",
            "Current depth of workqueue",
            MetricType::Gauge,
            queues.iter().map(|q| (by_priority(q), gauge(q.depth))),
        )?;
        family(
            e,
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            MetricType::Counter,
            queues.iter().map(|q| (by_name(q), counter(q.adds))),
        )?;
        family(
            e,
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            MetricType::Histogram,
            queues
                .iter()
                .map(|q| (by_name(q), HistogramRef(&q.queue_duration))),
        )?;
        family(
            e,
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            MetricType::Histogram,
            queues
                .iter()
                .map(|q| (by_name(q), HistogramRef(&q.work_duration))),
        )?;
        family(
            e,
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            MetricType::Gauge,
            queues
                .iter()
                .map(|q| (by_name(q), seconds(q.unfinished_work))),
        )?;
        family(
            e,
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            MetricType::Gauge,
            queues
                .iter()
                .map(|q| (by_name(q), seconds(q.longest_running))),
        )?;
        family(
            e,
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            MetricType::Counter,
            queues.iter().map(|q| (by_name(q), counter(q.retries))),
        )?;

        // Reconciles (controller-runtime names).
        let mut totals = Vec::with_capacity(controllers.len() * 4);
        for c in &controllers {
            for (result, value) in [
                ("success", c.stats.successes),
                ("requeue_after", c.stats.requeues_after),
                ("requeue", c.stats.requeues),
                ("error", c.stats.errors),
            ] {
                let labels = vec![
                    ("controller".to_owned(), c.name.to_string()),
                    ("result".to_owned(), result.to_owned()),
                ];
                totals.push((labels, counter(value)));
            }
        }
        family(
            e,
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            MetricType::Counter,
            totals,
        )?;
        let per_controller: [CounterFamily; 7] = [
            (
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                |s| s.errors,
            ),
            (
                "controller_runtime_terminal_reconcile_errors",
                "Total number of terminal reconciliation errors per controller",
                |s| s.terminal_errors,
            ),
            (
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                |s| s.panics,
            ),
            (
                "controller_runtime_reconcile_timeouts",
                "Total number of reconciliations that exceeded the timeout per controller",
                |s| s.timeouts,
            ),
            (
                // client-go's name (KEP-5647).
                "stale_sync_skips",
                "Total number of reconciles skipped and requeued because a cache had not yet seen the controller's own writes",
                |s| s.stale_sync_skips,
            ),
            (
                "informer_shard_skipped_keys",
                "Total number of keys dropped without a reconcile because their shard is held by another replica",
                |s| s.skipped,
            ),
            (
                "informer_shard_cancelled_reconciles",
                "Total number of reconciles dropped midway because the replica lost the key's shard or its leadership",
                |s| s.cancelled,
            ),
        ];
        for (name, help, value) in per_controller {
            family(
                e,
                name,
                help,
                MetricType::Counter,
                controllers
                    .iter()
                    .map(|c| (by_controller(c), counter(value(&c.stats)))),
            )?;
        }
        family(
            e,
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            MetricType::Histogram,
            controllers
                .iter()
                .map(|c| (by_controller(c), HistogramRef(&c.reconcile_time))),
        )?;
        family(
            e,
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            MetricType::Gauge,
            controllers
                .iter()
                .map(|c| (by_controller(c), gauge(c.stats.active_workers))),
        )?;
        family(
            e,
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            MetricType::Gauge,
            controllers
                .iter()
                .map(|c| (by_controller(c), gauge(c.workers))),
        )?;

        // Informers (each once, even when shared) and handlers.
        let mut informers: BTreeMap<&str, &InformerSample> = BTreeMap::new();
        let mut handlers = Vec::new();
        for informer in controllers.iter().flat_map(|c| &c.informers) {
            informers.entry(&informer.informer).or_insert(informer);
            if let Some(pending) = informer.pending {
                let labels = vec![
                    ("informer".to_owned(), informer.informer.clone()),
                    ("handler".to_owned(), informer.handler.clone()),
                ];
                handlers.push((labels, gauge(pending)));
            }
        }
        let by_informer = |id: &str| [("informer".to_owned(), id.to_owned())];
        family(
            e,
            "informer_relists",
            "Lists of an informer's reflector after its first one",
            MetricType::Counter,
            informers
                .iter()
                .map(|(id, s)| (by_informer(id), counter(s.relists))),
        )?;
        family(
            e,
            "informer_watch_restarts",
            "Watches of an informer's reflector after its first one",
            MetricType::Counter,
            informers
                .iter()
                .map(|(id, s)| (by_informer(id), counter(s.watch_restarts))),
        )?;
        family(
            e,
            "informer_stale_refusals",
            "Lists, watch events and bookmarks an informer's reflector refused for being older than its cache",
            MetricType::Counter,
            informers
                .iter()
                .map(|(id, s)| (by_informer(id), counter(s.stale_refusals))),
        )?;
        family(
            e,
            "store_resource_version",
            "The resource version an informer's cache has reached (client-go's LastStoreSyncResourceVersion)",
            MetricType::Gauge,
            informers.iter().filter_map(|(id, s)| {
                let rv = i64::try_from(s.store_resource_version?).ok()?;
                Some((by_informer(id), ConstGauge::new(rv)))
            }),
        )?;
        family(
            e,
            "informer_handler_pending_notifications",
            "Notifications buffered or being handled for a controller's event handler",
            MetricType::Gauge,
            handlers,
        )?;

        if let Some((name, held, total)) = &*self.inner.shards.lock() {
            let label = [("name".to_owned(), name.clone())];
            family(
                e,
                "informer_shards_held",
                "Number of shards this replica holds",
                MetricType::Gauge,
                [(
                    label.clone(),
                    ConstGauge::new(i64::try_from(held()).unwrap_or(i64::MAX)),
                )],
            )?;
            family(
                e,
                "informer_shards_total",
                "Number of shards the keys are spread over",
                MetricType::Gauge,
                [(label, ConstGauge::new(i64::from(*total)))],
            )?;
        }
        if let Some((name, leading)) = &*self.inner.leader.lock() {
            family(
                e,
                "leader_election_master_status",
                "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
                MetricType::Gauge,
                [(
                    [("name".to_owned(), name.clone())],
                    ConstGauge::new(i64::from(leading())),
                )],
            )?;
        }
        Ok(())
    }
}
