//! The runner: workers taking keys from a [`Queue`], calling the [`KeyReconciler`], and acting
//! on its answer.
//!
//! ```text
//! queue --get--> worker --gate: own writes cached?--no--> add_rate_limited (stale_sync_skips)
//!                  | yes
//!                  +--cache.get(key)--> reconcile (catch_unwind, timeout, cancel)
//!                  |  Ok(Done)            -> forget
//!                  |  Ok(RequeueAfter(d)) -> forget + add_after(d)
//!                  |  Ok(Requeue)         -> add_rate_limited (backoff kept, not an error)
//!                  |  Err(e)              -> on_error(e) (the error policy; by default:)
//!                  |      transient       -> add_rate_limited
//!                  |      terminal        -> forget (logged, counted)
//!                  |  panic, timeout      -> add_rate_limited
//!                  \-> done(key)   (always, also when the reconcile is dropped)
//! ```

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use informer_core::queue::PRIORITY_LOW;
use informer_core::{ObjectKey, Queue, Store};
use parking_lot::Mutex;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::consistency::Gate;
use super::reconciler::{Action, KeyReconciler, ReconcileError, RunnerFailure};
use crate::fallback;
use crate::metrics::{
    ControllerStats, WorkqueueHooks, reconcile_time_histogram, work_duration_histogram,
};
use crate::panic;

/// Counters of a controller's runner, read as [`ControllerStats`].
#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub(crate) success: AtomicU64,
    pub(crate) requeue_after: AtomicU64,
    pub(crate) requeue: AtomicU64,
    pub(crate) errors: AtomicU64,
    pub(crate) terminal_errors: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) timeouts: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) skipped: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) stale_sync_skips: AtomicU64,
    pub(crate) active_workers: AtomicUsize,
}

fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// What a worker is doing right now (for `unfinished_work_seconds`, and to cancel the
/// reconcile of a key whose shard this replica lost).
pub(crate) struct Active {
    pub(crate) key: ObjectKey,
    pub(crate) started: Instant,
    pub(crate) cancel: CancellationToken,
}

/// The type-erased state of one controller's runner, shared with its metrics.
pub(crate) struct RunnerState {
    pub(crate) name: Arc<str>,
    pub(crate) queue: Arc<dyn Queue<ObjectKey>>,
    pub(crate) hooks: Arc<WorkqueueHooks>,
    pub(crate) counters: Counters,
    pub(crate) reconcile_time: Histogram,
    pub(crate) work_duration: Histogram,
    pub(crate) slots: Box<[Mutex<Option<Active>>]>,
}

impl RunnerState {
    pub(crate) fn new(
        name: Arc<str>,
        queue: Arc<dyn Queue<ObjectKey>>,
        hooks: Arc<WorkqueueHooks>,
        workers: usize,
    ) -> Self {
        Self {
            name,
            queue,
            hooks,
            counters: Counters::default(),
            reconcile_time: reconcile_time_histogram(),
            work_duration: work_duration_histogram(),
            slots: (0..workers).map(|_| Mutex::new(None)).collect(),
        }
    }

    pub(crate) fn workers(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn stats(&self) -> ControllerStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ControllerStats {
            successes: get(&c.success),
            requeues_after: get(&c.requeue_after),
            requeues: get(&c.requeue),
            errors: get(&c.errors),
            terminal_errors: get(&c.terminal_errors),
            panics: get(&c.panics),
            timeouts: get(&c.timeouts),
            retries: get(&c.retries),
            skipped: get(&c.skipped),
            cancelled: get(&c.cancelled),
            stale_sync_skips: get(&c.stale_sync_skips),
            active_workers: c.active_workers.load(Ordering::Relaxed),
            queue_depth: self.queue.len(),
        }
    }

    /// The sum of how long every in-flight reconcile has run, and the longest one.
    pub(crate) fn in_flight(&self) -> (Duration, Duration) {
        let now = Instant::now();
        let mut sum = Duration::ZERO;
        let mut longest = Duration::ZERO;
        for slot in self.slots.iter() {
            if let Some(active) = &*slot.lock() {
                let running = now.saturating_duration_since(active.started);
                sum += running;
                longest = longest.max(running);
            }
        }
        (sum, longest)
    }
}

/// Which keys this replica reconciles (sharding): a key is owned when its shard is held.
#[derive(Clone)]
pub(crate) struct Ownership {
    pub(crate) shards: u32,
    pub(crate) held: watch::Receiver<Vec<u32>>,
    pub(crate) shard_of: fn(&ObjectKey, u32) -> u32,
}

impl Ownership {
    pub(crate) fn owns(&self, key: &ObjectKey) -> bool {
        let shard = (self.shard_of)(key, self.shards);
        self.held.borrow().contains(&shard)
    }
}

/// How a reconcile ended.
enum Outcome {
    Done(Action),
    /// The error, and what its error policy decided.
    Failed(ReconcileError, Action),
    Panicked(String),
    TimedOut(Duration),
    Cancelled,
}

/// Runs the workers of one controller.
pub(crate) struct Runner<K> {
    pub(crate) state: Arc<RunnerState>,
    pub(crate) reconciler: Arc<dyn KeyReconciler<K>>,
    pub(crate) cache: Arc<dyn Store<K>>,
    /// Read-your-own-writes (`None`: turned off for this controller).
    pub(crate) gate: Option<Arc<Gate>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) shutdown_timeout: Duration,
}

/// Marks a key in flight in a worker's slot; on drop (also when the reconcile future is
/// dropped) clears the slot, records the work duration and marks the key done. A key whose
/// reconcile did not finish is queued again, so that a later run (say, after this replica
/// leads again) reconciles it.
struct InFlight<'a> {
    state: &'a RunnerState,
    slot: usize,
    key: ObjectKey,
    started: Instant,
    finished: bool,
}

impl<'a> InFlight<'a> {
    fn start(
        state: &'a RunnerState,
        slot: usize,
        key: ObjectKey,
        cancel: CancellationToken,
    ) -> Self {
        let started = Instant::now();
        *state.slots[slot].lock() = Some(Active {
            key: key.clone(),
            started,
            cancel,
        });
        state
            .counters
            .active_workers
            .fetch_add(1, Ordering::Relaxed);
        Self {
            state,
            slot,
            key,
            started,
            finished: false,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        *self.state.slots[self.slot].lock() = None;
        self.state
            .counters
            .active_workers
            .fetch_sub(1, Ordering::Relaxed);
        self.state
            .work_duration
            .observe(self.started.elapsed().as_secs_f64());
        if !self.finished {
            // Added while processing: queued again once done.
            self.state.queue.add(self.key.clone());
        }
        self.state.queue.done(&self.key);
    }
}

impl<K: Send + Sync + 'static> Runner<K> {
    /// Runs the workers until `graceful` or `hard` is cancelled, or until the queue is shut
    /// down and empty.
    ///
    /// - `graceful`: stop taking keys; reconciles in flight finish, for at most the shutdown
    ///   timeout (or until `hard`), then they are dropped.
    /// - `hard`: stop taking keys and drop the reconciles in flight at once (their keys are
    ///   queued again).
    ///
    /// When this returns no worker is running. If keys remain queued, one line says how many.
    pub(crate) async fn run_workers(
        self: &Arc<Self>,
        graceful: &CancellationToken,
        hard: &CancellationToken,
        ownership: Option<Ownership>,
    ) {
        let name = &self.state.name;
        let stop = CancellationToken::new();
        // The held set is read here, before any worker drops a key as not owned, so that
        // every later gain is seen by the watcher.
        let watcher = ownership.clone().map(|o| {
            let mut held = o.held.clone();
            let before = held.borrow_and_update().clone();
            tokio::spawn(self.clone().watch_ownership(o, held, before, stop.clone()))
        });
        let mut workers = JoinSet::new();
        for slot in 0..self.state.workers() {
            workers.spawn(self.clone().worker(slot, stop.clone(), ownership.clone()));
        }
        tracing::info!(controller = %name, workers = self.state.workers(), "workers started");

        let graceful_stop = tokio::select! {
            _ = graceful.cancelled() => true,
            _ = hard.cancelled() => false,
            _ = join_all(&mut workers) => true,
        };
        stop.cancel();
        if graceful_stop && !workers.is_empty() {
            let deadline = tokio::time::sleep(self.shutdown_timeout);
            tokio::select! {
                _ = join_all(&mut workers) => {}
                _ = deadline => {
                    let in_flight = self.state.counters.active_workers.load(Ordering::Relaxed);
                    tracing::warn!(
                        controller = %name,
                        in_flight,
                        timeout = ?self.shutdown_timeout,
                        "reconciles still running at the shutdown deadline; dropping them"
                    );
                }
                _ = hard.cancelled() => {}
            }
        }
        workers.abort_all();
        join_all(&mut workers).await;
        if let Some(watcher) = watcher {
            watcher.abort();
            let _ = watcher.await;
        }
        let remaining = self.state.queue.len();
        if remaining > 0 {
            tracing::info!(
                controller = %name,
                remaining,
                "workers stopped; {remaining} keys remain queued",
            );
        } else {
            tracing::info!(controller = %name, "workers stopped");
        }
    }

    async fn worker(
        self: Arc<Self>,
        slot: usize,
        stop: CancellationToken,
        ownership: Option<Ownership>,
    ) {
        loop {
            if stop.is_cancelled() {
                return;
            }
            // A ready key without `get`'s (boxed) future; wait only when none is ready.
            let key = match self.state.queue.try_get() {
                Some(key) => key,
                None => tokio::select! {
                    biased;
                    _ = stop.cancelled() => return,
                    key = self.state.queue.get() => match key {
                        Some(key) => key,
                        None => return,
                    },
                },
            };
            self.process(slot, key, ownership.as_ref()).await;
            // With keys always ready (`try_get` above) and a reconcile that never waits (cache
            // reads only), this loop would stay in one poll, holding its thread: the API
            // server's tasks, the informers' and this worker's own cancellation would never
            // run. Spend the task's budget as `get` does.
            informer_core::queue::cooperate().await;
        }
    }

    /// Reconciles one key and acts on the outcome.
    async fn process(&self, slot: usize, key: ObjectKey, ownership: Option<&Ownership>) {
        let state = &*self.state;
        let cancel = CancellationToken::new();
        let mut in_flight = InFlight::start(state, slot, key.clone(), cancel.clone());
        if ownership.is_some_and(|o| !o.owns(&key)) {
            state.queue.forget(&key);
            inc(&state.counters.skipped);
            in_flight.finished = true;
            return;
        }
        if let Some(gate) = &self.gate
            && let Err(stale) = gate.check(&key)
        {
            // The cache has not seen this key's own last writes: acting now could undo or
            // repeat them. Try again later (the write's watch event usually comes first).
            inc(&state.counters.stale_sync_skips);
            tracing::debug!(
                controller = %state.name,
                %key,
                resource = %stale.resource,
                waiting = %stale.waiting,
                "cache older than this key's own writes; requeued",
            );
            state.queue.add_rate_limited(key);
            in_flight.finished = true;
            return;
        }
        let obj = self.cache.get(&key);
        let started = Instant::now();
        let outcome = self.call(&key, obj, &cancel).await;
        if !matches!(outcome, Outcome::Cancelled) {
            state
                .reconcile_time
                .observe(started.elapsed().as_secs_f64());
        }
        self.act(&key, outcome);
        in_flight.finished = true;
    }

    /// Calls the reconciler, catching panics, bounded by the timeout, cancelled by `cancel`.
    async fn call(
        &self,
        key: &ObjectKey,
        obj: Option<Arc<K>>,
        cancel: &CancellationToken,
    ) -> Outcome {
        let scope = self.gate.as_ref().and_then(|gate| gate.scope(key));
        let reconcile = async {
            // A failed reconcile's error policy runs in the same scope, timeout and
            // cancellation: its writes (a status saying why) are the key's own too.
            let run = async {
                match self.reconciler.reconcile(key, obj.clone()).await {
                    Ok(action) => Ok(action),
                    Err(error) => {
                        let decided = self.reconciler.on_error(key, obj, &error).await;
                        Err((error, decided))
                    }
                }
            };
            match scope {
                // Writes made through the controller's client are attributed to `key`.
                Some(scope) => scope.run(run).await,
                None => run.await,
            }
        };
        let reconcile = AssertUnwindSafe(reconcile).catch_unwind();
        let bounded = async {
            match self.timeout {
                Some(limit) => tokio::time::timeout(limit, reconcile)
                    .await
                    .map_err(|_| limit),
                None => Ok(reconcile.await),
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Outcome::Cancelled,
            result = bounded => match result {
                Err(limit) => Outcome::TimedOut(limit),
                Ok(Err(payload)) => Outcome::Panicked(panic::message(&*payload)),
                Ok(Ok(Ok(action))) => Outcome::Done(action),
                Ok(Ok(Err((error, decided)))) => Outcome::Failed(error, decided),
            },
        }
    }

    fn act(&self, key: &ObjectKey, outcome: Outcome) {
        let state = &*self.state;
        let queue = &*state.queue;
        let c = &state.counters;
        let name = &*state.name;
        match outcome {
            Outcome::Done(Action::Done) => {
                inc(&c.success);
                queue.forget(key);
            }
            Outcome::Done(Action::RequeueAfter(delay)) => {
                inc(&c.requeue_after);
                queue.forget(key);
                inc(&c.retries);
                queue.add_after(key.clone(), delay);
            }
            Outcome::Done(Action::Requeue) => {
                // controller-runtime's `Result{Requeue: true}`: through the rate limiter,
                // whose count for the key is kept (no `forget`), so the delay grows.
                inc(&c.requeue);
                tracing::debug!(
                    controller = name,
                    %key,
                    requeues = queue.num_requeues(key),
                    "reconcile asked to be requeued; queued again after the key's backoff",
                );
                self.retry(key);
            }
            Outcome::Failed(error, decided) => {
                inc(&c.errors);
                let terminal = error.is_terminal();
                if terminal {
                    inc(&c.terminal_errors);
                }
                let kind = if terminal { "terminal" } else { "transient" };
                match decided {
                    Action::Done => {
                        tracing::error!(
                            controller = name,
                            %key,
                            error = %error,
                            "reconcile failed ({kind}); not retrying",
                        );
                        fallback::report(format_args!(
                            "controller {name}: reconcile of {key} failed ({kind}, not retried): {error}"
                        ));
                        queue.forget(key);
                    }
                    Action::RequeueAfter(delay) => {
                        tracing::warn!(
                            controller = name,
                            %key,
                            error = %error,
                            ?delay,
                            "reconcile failed ({kind}); retrying after the error policy's delay",
                        );
                        fallback::report(format_args!(
                            "controller {name}: reconcile of {key} failed ({kind}, retried in {delay:?} as the error policy says): {error}"
                        ));
                        inc(&c.retries);
                        queue.add_after(key.clone(), delay);
                    }
                    Action::Requeue => {
                        let requeues = queue.num_requeues(key);
                        tracing::warn!(
                            controller = name,
                            %key,
                            error = %error,
                            requeues,
                            "reconcile failed ({kind}); retrying with backoff",
                        );
                        fallback::report(format_args!(
                            "controller {name}: reconcile of {key} failed (requeue {} with backoff since its last success, waits for the cache included): {error}",
                            requeues + 1
                        ));
                        self.retry(key);
                    }
                }
            }
            Outcome::Panicked(message) => {
                inc(&c.errors);
                inc(&c.panics);
                let error = RunnerFailure::Panicked(message);
                tracing::error!(
                    controller = name,
                    %key,
                    error = %error,
                    "reconcile panicked; retrying with backoff",
                );
                fallback::report(format_args!(
                    "controller {name}: reconcile of {key} failed: {error}; retrying with backoff"
                ));
                self.retry(key);
            }
            Outcome::TimedOut(limit) => {
                inc(&c.errors);
                inc(&c.timeouts);
                let error = RunnerFailure::TimedOut(limit);
                tracing::warn!(
                    controller = name,
                    %key,
                    error = %error,
                    "reconcile timed out; retrying with backoff",
                );
                fallback::report(format_args!(
                    "controller {name}: reconcile of {key} failed: {error}; retrying with backoff"
                ));
                self.retry(key);
            }
            Outcome::Cancelled => {
                inc(&c.cancelled);
                tracing::debug!(
                    controller = name,
                    %key,
                    "reconcile cancelled: this replica no longer owns the key",
                );
                queue.forget(key);
            }
        }
    }

    fn retry(&self, key: &ObjectKey) {
        inc(&self.state.counters.retries);
        self.state.queue.add_rate_limited(key.clone());
    }

    /// Follows the held shards: cancels reconciles of keys no longer owned, and queues every
    /// cached key of newly held shards (at low priority).
    async fn watch_ownership(
        self: Arc<Self>,
        ownership: Ownership,
        mut held: watch::Receiver<Vec<u32>>,
        mut before: Vec<u32>,
        stop: CancellationToken,
    ) {
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                changed = held.changed() => if changed.is_err() { return },
            }
            let now: Vec<u32> = held.borrow_and_update().clone();
            for slot in self.state.slots.iter() {
                if let Some(active) = &*slot.lock()
                    && !now.contains(&(ownership.shard_of)(&active.key, ownership.shards))
                {
                    active.cancel.cancel();
                }
            }
            let gained: Vec<u32> = now
                .iter()
                .copied()
                .filter(|s| !before.contains(s))
                .collect();
            if !gained.is_empty() {
                let mut queued = 0usize;
                for key in self.cache.list_keys() {
                    if gained.contains(&(ownership.shard_of)(&key, ownership.shards)) {
                        self.state.queue.add_with_priority(key, PRIORITY_LOW);
                        queued += 1;
                    }
                }
                tracing::info!(
                    controller = %self.state.name,
                    shards = ?gained,
                    queued,
                    "gained shards; queued their keys",
                );
            }
            before = now;
        }
    }
}

async fn join_all(set: &mut JoinSet<()>) {
    while let Some(ended) = set.join_next().await {
        if let Err(e) = ended
            && e.is_panic()
        {
            tracing::error!(
                panic = %panic::message(&*e.into_panic()),
                "a controller worker panicked",
            );
        }
    }
}
