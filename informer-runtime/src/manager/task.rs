//! [`Task`]: work of the user's that a [`Manager`](super::Manager) runs beside its
//! controllers (controller-runtime's `mgr.Add(runnable)`), and how the manager drives it.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::controller::{BoxError, DEFAULT_SHUTDOWN_TIMEOUT};
use crate::leader::{LeaderElector, LeaderState};

type RunFn =
    Arc<dyn Fn(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send + Sync>;

/// Work of yours that a [`Manager`](super::Manager) runs with its controllers, added with
/// [`Manager::add_task`](super::Manager::add_task): controller-runtime's `mgr.Add(runnable)`
/// with a `RunnableFunc`. The function gets a [`CancellationToken`] and runs until it is
/// cancelled (or until it has nothing left to do).
///
/// # Guarantees
/// - **When it starts:** once the caches of every controller of the manager, and every
///   other informer its factory holds when the manager starts, have synced (an informer
///   that stopped before syncing does not hold it back), as
///   controller-runtime starts its runnables after the cache. With
///   [`needs_leader_election`](Self::needs_leader_election) (the default, as in
///   controller-runtime) and [leader election](super::Manager::leader_election), only while
///   this replica leads: the function is called at the start of each term. Without leader
///   election it is called once.
/// - **How it stops:** on shutdown the token is cancelled and the task has its
///   [`shutdown_timeout`](Self::shutdown_timeout) to return, before the lease is released;
///   past it, its future is dropped. When a term ends, the token is cancelled and the future
///   dropped at once, before another replica can take the lease over (as reconciles are).
/// - **Failures are reported as a controller's are:** an `Err` or a panic is logged at
///   `error` (and printed on stderr while no `tracing` subscriber is installed); the manager
///   and its other controllers and tasks keep running, and
///   [`Manager::run`](super::Manager::run) still returns `Ok` at shutdown. A task that
///   returns, with `Ok` or not, is not called again (until the next term, for a task that
///   needs leader election). controller-runtime stops the whole manager on a runnable's
///   error instead; to do that, cancel the manager's token from the task.
///
/// # Workers of your own
/// A task running client-go style workers over a queue of its own runs them inside its
/// future (joined, say with `futures::future::join_all`), not `tokio::spawn`ed: a spawned
/// worker outlives the term that started it and keeps working while another replica leads.
/// Each worker takes items with [`take`](informer_core::queue::take), so that the item in
/// hand when the term ends (and the future is dropped) is marked done and handed out again
/// in the next term; and the queue is not shut down when the token is cancelled, since the
/// next term uses it again.
///
/// # Reading the caches
/// controller-runtime hands a runnable `mgr.GetCache()`; here, take a lister from the
/// manager's [`factory`](super::Manager::factory) (a cheap handle, clone it into the task).
/// Asking for the same type, namespace and selectors as a controller's informer
/// ([`InformerParams`](crate::factory::InformerParams)) shares that controller's cache; any
/// other identity is a new informer, which starts at once once the manager has started its
/// informers, and has synced when its
/// [`has_synced`](crate::informer::SharedIndexInformer::has_synced) says so. Keep the
/// [`InformerHandle`](crate::factory::InformerHandle) while you read: the last handle
/// dropped stops an informer no controller uses.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use informer_runtime::factory::InformerFactory;
/// use informer_runtime::manager::{Manager, Task};
/// use informer_runtime::CancellationToken;
///
/// let mut manager = Manager::with_factory(InformerFactory::without_client())
///     .without_http()
///     .handle_signals(false);
/// let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
/// manager
///     .add_task(Task::new("heartbeat", move |cancel: CancellationToken| {
///         let tx = tx.clone();
///         async move {
///             let mut tick = tokio::time::interval(Duration::from_millis(10));
///             loop {
///                 tokio::select! {
///                     _ = cancel.cancelled() => return Ok(()),
///                     _ = tick.tick() => { let _ = tx.send("beat"); }
///                 }
///             }
///         }
///     }))
///     .unwrap();
/// let stop = CancellationToken::new();
/// let run = tokio::spawn(manager.run(stop.clone()));
/// assert_eq!(rx.recv().await, Some("beat"));
/// stop.cancel();
/// run.await.unwrap().unwrap();
/// # }
/// ```
#[derive(Clone)]
pub struct Task {
    pub(crate) name: String,
    run: RunFn,
    pub(crate) needs_leader_election: bool,
    shutdown_timeout: Duration,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("name", &self.name)
            .field("needs_leader_election", &self.needs_leader_election)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

impl Task {
    /// A task named `name` (in logs; unique in a manager) that runs `run(token)`: a closure
    /// returning a future that ends when `token` is cancelled. `?` converts any error into
    /// [`BoxError`]. It needs leader election and has [`DEFAULT_SHUTDOWN_TIMEOUT`] (30 s) to
    /// stop, unless told otherwise.
    ///
    /// ```
    /// use informer_runtime::manager::Task;
    /// use informer_runtime::CancellationToken;
    ///
    /// let task = Task::new("report", |cancel: CancellationToken| async move {
    ///     cancel.cancelled().await;
    ///     Ok(())
    /// });
    /// assert_eq!(task.name(), "report");
    /// ```
    pub fn new<F, Fut>(name: impl Into<String>, run: F) -> Self
    where
        F: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            run: Arc::new(move |token| run(token).boxed()),
            needs_leader_election: true,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }

    /// Whether the task runs only while this replica leads (default: true, as
    /// controller-runtime's runnables that do not say otherwise). Without leader election it
    /// makes no difference; with [sharding](super::Manager::sharding), where no replica
    /// leads, a task that needs leader election is refused
    /// ([`ManagerError::TaskNeedsLeaderElection`](super::ManagerError::TaskNeedsLeaderElection)):
    /// set `false` to run it on every replica.
    ///
    /// ```
    /// use informer_runtime::manager::Task;
    /// use informer_runtime::CancellationToken;
    /// // Serves on every replica, leader or not.
    /// let task = Task::new("webhook", |cancel: CancellationToken| async move {
    ///     cancel.cancelled().await;
    ///     Ok(())
    /// })
    /// .needs_leader_election(false);
    /// # let _ = task;
    /// ```
    pub fn needs_leader_election(mut self, needs: bool) -> Self {
        self.needs_leader_election = needs;
        self
    }

    /// How long the task may take to return once its token is cancelled on shutdown
    /// (default [`DEFAULT_SHUTDOWN_TIMEOUT`], as controllers); past it, its future is
    /// dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::manager::Task;
    /// let task = Task::new("flush", |_cancel| async { Ok(()) })
    ///     .shutdown_timeout(Duration::from_secs(5));
    /// # let _ = task;
    /// ```
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// The task's name.
    ///
    /// ```
    /// use informer_runtime::manager::Task;
    /// assert_eq!(Task::new("gc", |_c| async { Ok(()) }).name(), "gc");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// How one run of a task ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// Returned `Ok` (by itself, or after its token was cancelled).
    Returned,
    Failed(BoxError),
    Panicked(String),
    /// Still running at the shutdown deadline: dropped.
    TimedOut,
    /// The term ended: dropped at once.
    LostLease,
    /// Shutdown came before the task started.
    NotStarted,
}

/// Drives `task` until `shutdown`: waits until the controllers' caches are done syncing
/// (`pending` reaches 0), then runs it once, or once per term of `elector`.
pub(crate) async fn drive(
    task: &Task,
    shutdown: &CancellationToken,
    elector: Option<&LeaderElector>,
    mut pending: watch::Receiver<usize>,
) {
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => return,
        waited = pending.wait_for(|n| *n == 0) => if waited.is_err() { return },
    }
    let Some(elector) = elector.filter(|_| task.needs_leader_election) else {
        let ended = run_once(task, shutdown, None).await;
        report(task, &ended);
        return;
    };
    let mut states: watch::Receiver<LeaderState> = elector.subscribe();
    loop {
        let term = states
            .borrow_and_update()
            .term()
            .filter(|t| !t.is_cancelled())
            .cloned();
        if let Some(term) = term {
            tracing::info!(task = %task.name, "leading: starting the task");
            let ended = run_once(task, shutdown, Some(&term)).await;
            report(task, &ended);
            if shutdown.is_cancelled() {
                return;
            }
            // Returned by itself: not again in this term.
            if !matches!(ended, Ended::LostLease) {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = term.cancelled() => {}
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = states.changed() => if changed.is_err() { return },
        }
    }
}

/// One call of the task: until it returns, `shutdown` (graceful, up to its timeout) or the
/// end of `term` (at once).
pub(crate) async fn run_once(
    task: &Task,
    shutdown: &CancellationToken,
    term: Option<&CancellationToken>,
) -> Ended {
    if shutdown.is_cancelled() {
        return Ended::NotStarted;
    }
    let never = CancellationToken::new();
    let term = term.unwrap_or(&never);
    let token = CancellationToken::new();
    // Cancels the task's token however this function ends (its future dropped included).
    let _cancel_on_exit = token.clone().drop_guard();
    let run = task.run.clone();
    let given = token.clone();
    let future = AssertUnwindSafe(async move { run(given).await }).catch_unwind();
    tokio::pin!(future);
    let ended = |result: Result<Result<(), BoxError>, Box<dyn std::any::Any + Send>>| match result {
        Ok(Ok(())) => Ended::Returned,
        Ok(Err(error)) => Ended::Failed(error),
        Err(payload) => Ended::Panicked(crate::panic::message(&*payload)),
    };
    tokio::select! {
        biased;
        _ = term.cancelled() => return Ended::LostLease,
        _ = shutdown.cancelled() => {}
        result = &mut future => return ended(result),
    }
    token.cancel();
    tokio::select! {
        biased;
        _ = term.cancelled() => Ended::LostLease,
        result = &mut future => ended(result),
        _ = tokio::time::sleep(task.shutdown_timeout) => Ended::TimedOut,
    }
}

/// Logs how a run of `task` ended; failures also on stderr while no `tracing` subscriber is
/// installed, as a controller's failures are.
fn report(task: &Task, ended: &Ended) {
    let name = &task.name;
    match ended {
        Ended::Returned => tracing::info!(task = %name, "task returned"),
        Ended::NotStarted => {}
        Ended::LostLease => tracing::info!(task = %name, "no longer leading: task stopped"),
        Ended::TimedOut => tracing::warn!(
            task = %name,
            timeout = ?task.shutdown_timeout,
            "task still running at the shutdown deadline; dropped it"
        ),
        Ended::Failed(error) => {
            tracing::error!(task = %name, %error, "task failed; it is not restarted");
            crate::fallback::report(format_args!("task {name} failed (not restarted): {error}"));
        }
        Ended::Panicked(message) => {
            tracing::error!(task = %name, panic = %message, "task panicked; it is not restarted");
            crate::fallback::report(format_args!(
                "task {name} panicked (not restarted): {message}"
            ));
        }
    }
}

#[cfg(test)]
mod tests;
