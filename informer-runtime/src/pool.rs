//! The decode pool: a few threads, shared by every informer of the process, that decode
//! what the API server sends while the informers apply what was decoded before, and free
//! the objects the informers let go of.
//!
//! Decoding is the largest cost of a watch (a pod takes about ten times longer to decode
//! than to cache and hand to its handlers). Decoding on the task that reads the response
//! would put it in series with everything after it on a busy runtime; here it runs beside.
//! Results are taken back in the order jobs were submitted (see `Ordered`), so nothing is
//! reordered.
//!
//! Freeing a replaced or deleted object costs about as much as decoding it (a k8s-openapi
//! Pod is a graph of a few hundred allocations). Informers hand what their handlers are
//! done with to [`free_later`], so that this too runs beside them, off the tasks that apply
//! events, and on the threads whose allocator gave the memory (a decode thread reuses what
//! it frees for its next objects, where memory freed on another thread comes back to it
//! later and colder).
//!
//! The threads start on first use: one per core the process may use
//! (`std::thread::available_parallelism`), at most [`MAX_THREADS`], or as many as the
//! environment variable [`THREADS_VAR`] says. Idle threads sleep on a condition variable.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

/// The most decode threads started by default.
pub(crate) const MAX_THREADS: usize = 8;

/// The environment variable that sets the number of decode threads (`0`: decode on the
/// task that reads the response, as if the pool did not exist).
pub(crate) const THREADS_VAR: &str = "INFORMER_DECODE_THREADS";

type Job = Box<dyn FnOnce() + Send>;

static JOBS: Mutex<VecDeque<Job>> = Mutex::new(VecDeque::new());
static READY: Condvar = Condvar::new();
static THREADS: OnceLock<usize> = OnceLock::new();

/// The number of decode threads (started on the first call); 0 if none could be started.
pub(crate) fn threads() -> usize {
    *THREADS.get_or_init(|| {
        let wanted = match std::env::var(THREADS_VAR).ok().map(|v| v.trim().parse()) {
            Some(Ok(n)) => n,
            Some(Err(_)) => {
                tracing::warn!("{THREADS_VAR} is not a number; using one decode thread per core");
                default_threads()
            }
            None => default_threads(),
        };
        let mut started = 0;
        for i in 0..wanted {
            let spawned = std::thread::Builder::new()
                .name(format!("informer-decode-{i}"))
                .spawn(work);
            match spawned {
                Ok(_) => started += 1,
                Err(e) => {
                    tracing::warn!(error = %e, started, "could not start a decode thread");
                    break;
                }
            }
        }
        started
    })
}

fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(MAX_THREADS)
}

/// Runs `job` on a decode thread (on the caller's thread if there is none) and returns its
/// result when done. A panicking job is logged and its result never comes
/// ([`Done::Lost`]). `hold` keeps a current-thread runtime's clock still while the job runs
/// (see [`Hold`]).
fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static, hold: &Arc<Hold>) -> Done<T> {
    if threads() == 0 {
        return match catch_unwind(AssertUnwindSafe(job)) {
            Ok(value) => Done::Ready(Some(value)),
            Err(_) => {
                tracing::error!("a decode job panicked");
                Done::Lost
            }
        };
    }
    let held = hold.enter();
    let (tx, rx) = oneshot::channel();
    submit(Box::new(move || {
        let _ = tx.send(job());
        // Let go only once the result is there (on a panic too: `held` is dropped).
        drop(held);
    }));
    Done::Pending(rx)
}

/// Keeps tokio's paused clock still while a stream's decode jobs run.
///
/// A paused clock (tests; only a current-thread runtime can pause) jumps to the next timer
/// whenever the runtime's one thread has nothing to do, unless work of its own blocking
/// pool runs: it does not wait for threads of ours. A paused test's sync of a 1 MB list took
/// 30-103 s of virtual time, firing every timer due meanwhile. So on a current-thread
/// runtime, while any job of the stream runs, one task of the runtime's blocking pool waits
/// for them (started when the stream's jobs go from none to some). The jobs themselves stay
/// on the decode threads, which free what they decode (running them on the blocking pool
/// instead cost a current-thread runtime a quarter of its I1 rate).
#[derive(Default)]
struct Hold {
    running: Mutex<usize>,
    idle: Condvar,
}

/// A job of a [`Hold`] in flight; dropping it ends the job.
struct Held(Option<Arc<Hold>>);

impl Hold {
    /// Counts a job in flight, on a current-thread runtime (nothing otherwise).
    fn enter(self: &Arc<Self>) -> Held {
        let runtime = match tokio::runtime::Handle::try_current() {
            Ok(runtime)
                if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread =>
            {
                runtime
            }
            _ => return Held(None),
        };
        let mut running = self.running.lock();
        *running += 1;
        if *running == 1 {
            let hold = self.clone();
            runtime.spawn_blocking(move || {
                let mut running = hold.running.lock();
                while *running > 0 {
                    hold.idle.wait(&mut running);
                }
            });
        }
        Held(Some(self.clone()))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(hold) = self.0.take() {
            let mut running = hold.running.lock();
            *running -= 1;
            if *running == 0 {
                hold.idle.notify_all();
            }
        }
    }
}

/// Drops `garbage` on a decode thread, without waiting (at once on the caller's thread if
/// the pool has no thread). For what an informer lets go of: the last references to
/// replaced and deleted objects, batched. A `Drop` that panics is caught and logged, as any
/// job's panic is.
pub(crate) fn free_later<T: Send + 'static>(garbage: Vec<T>) {
    free_later_on(threads(), garbage);
}

fn free_later_on<T: Send + 'static>(threads: usize, garbage: Vec<T>) {
    if garbage.is_empty() {
        return;
    }
    if threads == 0 {
        drop(garbage);
        return;
    }
    submit(Box::new(move || drop(garbage)));
}

#[cfg(test)]
thread_local! {
    /// How many jobs this thread has submitted, for tests of what goes to the pool.
    pub(crate) static SUBMITTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Queues `job` behind the others and wakes an idle decode thread for it.
fn submit(job: Job) {
    #[cfg(test)]
    SUBMITTED.with(|n| n.set(n.get() + 1));
    JOBS.lock().push_back(job);
    READY.notify_one();
}

/// How many items one worker takes at a time in [`map_parallel`].
const MAP_CHUNK: usize = 16;

/// `f` applied to every item, the work shared between the calling thread and the decode
/// threads; results in the items' order. Blocks the caller until every item is done, but
/// the caller works meanwhile: it takes chunks until none is left, then waits only for those
/// the decode threads took (so a busy pool never holds it up for long). For work done on a
/// runtime's worker that would take a few milliseconds on one thread (encoding a list's
/// objects for a compact cache).
pub(crate) fn map_parallel<T, R, F>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send + Sync + 'static,
    R: Send + 'static,
    F: Fn(&T) -> R + Send + Sync + 'static,
{
    let n = items.len();
    let helpers = threads().min(n.div_ceil(MAP_CHUNK).saturating_sub(1));
    if helpers == 0 {
        return items.iter().map(f).collect();
    }
    let shared = Arc::new(Shared {
        results: (0..n).map(|_| Mutex::new(None)).collect(),
        items,
        f,
        next: AtomicUsize::new(0),
        done: Mutex::new(0),
        all_done: Condvar::new(),
    });
    for _ in 0..helpers {
        let shared = shared.clone();
        submit(Box::new(move || shared.work()));
    }
    shared.work();
    let mut done = shared.done.lock();
    while *done < n {
        shared.all_done.wait(&mut done);
    }
    drop(done);
    shared
        .results
        .iter()
        .map(|r| {
            r.lock()
                .take()
                .unwrap_or_else(|| panic!("map_parallel: the function panicked on an item"))
        })
        .collect()
}

/// The work of one [`map_parallel`] call.
struct Shared<T, R, F> {
    items: Vec<T>,
    f: F,
    results: Vec<Mutex<Option<R>>>,
    /// The first item no worker has taken.
    next: AtomicUsize,
    /// How many items are done.
    done: Mutex<usize>,
    all_done: Condvar,
}

impl<T, R, F: Fn(&T) -> R> Shared<T, R, F> {
    /// Takes chunks of items until none is left.
    fn work(&self) {
        let n = self.items.len();
        loop {
            let start = self.next.fetch_add(MAP_CHUNK, Ordering::Relaxed);
            if start >= n {
                return;
            }
            let end = (start + MAP_CHUNK).min(n);
            // A panic leaves its item without a result (the caller then panics) but is
            // counted as done, so that the caller never waits forever.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                for i in start..end {
                    *self.results[i].lock() = Some((self.f)(&self.items[i]));
                }
            }));
            let mut done = self.done.lock();
            *done += end - start;
            if *done == n {
                self.all_done.notify_all();
            }
        }
    }
}

/// A decode thread: runs jobs, oldest first, forever.
fn work() {
    loop {
        let job = {
            let mut jobs = JOBS.lock();
            loop {
                if let Some(job) = jobs.pop_front() {
                    break job;
                }
                READY.wait(&mut jobs);
            }
        };
        if catch_unwind(AssertUnwindSafe(job)).is_err() {
            tracing::error!("a decode job panicked; its result is lost");
        }
    }
}

/// The result of a job given to [`run`].
pub(crate) enum Done<T> {
    /// Done already (run on the caller's thread); `None` once taken.
    Ready(Option<T>),
    /// Running on a decode thread.
    Pending(oneshot::Receiver<T>),
    /// The job panicked.
    Lost,
}

// No field is structurally pinned: the result is moved out, the receiver is `Unpin`.
impl<T> Unpin for Done<T> {}

impl<T> Done<T> {
    /// The result if the job is done, without waiting: `Some(None)` if it panicked.
    pub(crate) fn try_take(&mut self) -> Option<Option<T>> {
        match self {
            Done::Ready(value) => Some(value.take()),
            Done::Pending(rx) => match rx.try_recv() {
                Ok(value) => Some(Some(value)),
                Err(oneshot::error::TryRecvError::Empty) => None,
                Err(oneshot::error::TryRecvError::Closed) => Some(None),
            },
            Done::Lost => Some(None),
        }
    }
}

impl<T> Future for Done<T> {
    /// The job's result; `None` if it panicked.
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.get_mut() {
            Done::Ready(value) => Poll::Ready(value.take()),
            Done::Pending(rx) => Pin::new(rx).poll(cx).map(Result::ok),
            Done::Lost => Poll::Ready(None),
        }
    }
}

/// Jobs in the order they were submitted, their results taken in that order.
pub(crate) struct Ordered<T> {
    jobs: VecDeque<Done<T>>,
    hold: Arc<Hold>,
}

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Self {
            jobs: VecDeque::new(),
            hold: Arc::default(),
        }
    }
}

impl<T: Send + 'static> Ordered<T> {
    /// Submits `job` to the pool, behind the jobs submitted before.
    pub(crate) fn submit(&mut self, job: impl FnOnce() -> T + Send + 'static) {
        self.jobs.push_back(run(job, &self.hold));
    }

    /// Queues a result computed already, behind the jobs submitted before.
    pub(crate) fn push_done(&mut self, value: T) {
        self.jobs.push_back(Done::Ready(Some(value)));
    }

    /// Jobs whose result has not been taken.
    pub(crate) fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether every result has been taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The oldest job's result once it is done (`Some(None)` if it panicked); `Ready(None)`
    /// if no job is left.
    pub(crate) fn poll_front(&mut self, cx: &mut Context<'_>) -> Poll<Option<Option<T>>> {
        let Some(front) = self.jobs.front_mut() else {
            return Poll::Ready(None);
        };
        let value = std::task::ready!(Pin::new(front).poll(cx));
        self.jobs.pop_front();
        Poll::Ready(Some(value))
    }

    /// The oldest job's result if it is done, without waiting.
    pub(crate) fn try_front(&mut self) -> Option<Option<T>> {
        let value = self.jobs.front_mut()?.try_take()?;
        self.jobs.pop_front();
        Some(value)
    }

    /// Waits for the oldest job's result (`None` if no job is left; `Some(None)` if it
    /// panicked).
    pub(crate) async fn front(&mut self) -> Option<Option<T>> {
        std::future::poll_fn(|cx| self.poll_front(cx)).await
    }
}

#[cfg(test)]
mod tests;
