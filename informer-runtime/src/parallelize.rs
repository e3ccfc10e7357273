//! [`parallelize_until`]: run many independent pieces of work on a few threads, stopping
//! early when cancelled. client-go's `workqueue.ParallelizeUntil` (`util/workqueue/parallelizer.go`).
//!
//! It blocks the calling thread (which works too) until every piece has run or the work was
//! cancelled, on scoped std threads: the work may borrow from the caller's stack. It needs no
//! tokio runtime; from async code, call it inside `tokio::task::spawn_blocking`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;

use thiserror::Error;
use tokio_util::sync::CancellationToken;

/// How [`parallelize_until`] hands out pieces. client-go's `workqueue.Options`.
///
/// ```
/// use informer_runtime::parallelize::ParallelizeOptions;
///
/// assert_eq!(ParallelizeOptions::default().chunk_size(), 1);
/// assert_eq!(ParallelizeOptions::default().with_chunk_size(64).chunk_size(), 64);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParallelizeOptions {
    /// As given; 0 (the default) means 1.
    chunk_size: usize,
}

impl ParallelizeOptions {
    /// Hands out pieces `chunk_size` at a time: a worker takes the next chunk of consecutive
    /// pieces and runs them in order before it takes another. 0 means 1, as in client-go.
    /// client-go's `WithChunkSize`.
    ///
    /// Worth it when there are many more pieces than workers and each is small: workers then
    /// contend once per chunk, not once per piece.
    ///
    /// ```
    /// use informer_runtime::parallelize::ParallelizeOptions;
    ///
    /// assert_eq!(ParallelizeOptions::default().with_chunk_size(0).chunk_size(), 1);
    /// ```
    #[must_use]
    pub const fn with_chunk_size(mut self, chunk_size: usize) -> Self {
        self.chunk_size = chunk_size;
        self
    }

    /// The number of pieces in a chunk: at least 1.
    ///
    /// ```
    /// use informer_runtime::parallelize::ParallelizeOptions;
    ///
    /// assert_eq!(ParallelizeOptions::default().with_chunk_size(13).chunk_size(), 13);
    /// ```
    pub const fn chunk_size(&self) -> usize {
        if self.chunk_size == 0 {
            1
        } else {
            self.chunk_size
        }
    }
}

/// What [`parallelize_until`] refuses to run.
///
/// ```
/// use informer_runtime::parallelize::{parallelize_until, ParallelizeError, ParallelizeOptions};
///
/// let refused = parallelize_until(None, 0, 10, ParallelizeOptions::default(), |_| {});
/// assert_eq!(refused, Err(ParallelizeError::NoWorkers { pieces: 10 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParallelizeError {
    /// `workers` was 0 while there were pieces to run (client-go silently runs none).
    #[error("no workers to run {pieces} pieces: parallelize_until needs workers >= 1")]
    NoWorkers {
        /// The pieces that were to run.
        pieces: usize,
    },
}

/// Runs `work(piece)` for every piece in `0..pieces` on up to `workers` threads, the
/// calling thread being one of them, until every piece has run or `cancel` is cancelled.
/// client-go's `workqueue.ParallelizeUntil(ctx, workers, pieces, doWorkPiece, opts...)`.
///
/// Returns the number of pieces that ran: `pieces`, unless cancelled or a piece panicked.
///
/// # Guarantees
/// - **Each piece runs at most once**, and exactly once if nothing cancels and no piece
///   panics.
/// - **Chunks.** Pieces are handed out a chunk at a time
///   ([`with_chunk_size`](ParallelizeOptions::with_chunk_size); one piece by default), in
///   increasing order; one thread runs the pieces of a chunk in increasing order. Nothing
///   orders pieces of different chunks.
/// - **Threads.** `min(workers, chunks) - 1` scoped threads are started (none for one
///   worker or one chunk) and all have ended when this returns: no work runs after it.
///   A thread that cannot be started is logged and left out; the others, and the calling
///   thread, take its share.
/// - **Cancellation.** Each worker checks `cancel` before each piece. Once it is cancelled,
///   no piece starts; the pieces already running finish, and this returns when they have.
///   Which pieces ran is then not a prefix of `0..pieces`: each worker stops in its own
///   chunk (as in client-go). A token cancelled before the call runs nothing.
/// - **Panics.** A piece that panics stops the work as a cancellation does: once the panic
///   has unwound out of the piece, no piece starts (pieces may still start while the panic
///   hook prints). Once every worker has stopped, the panic is resumed on the calling
///   thread (the first one seen, if several pieces panicked). client-go crashes the process.
///
/// # Errors
/// [`ParallelizeError::NoWorkers`] if `workers` is 0 and `pieces` is not (nothing runs).
/// With no pieces, nothing runs and nothing is refused.
///
/// # Examples
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use informer_runtime::parallelize::{parallelize_until, ParallelizeOptions};
///
/// let squares: Vec<AtomicU64> = (0..1000).map(|_| AtomicU64::new(0)).collect();
/// let options = ParallelizeOptions::default().with_chunk_size(50);
/// let ran = parallelize_until(None, 4, squares.len(), options, |i| {
///     squares[i].store((i * i) as u64, Ordering::Relaxed);
/// })?;
/// assert_eq!(ran, 1000);
/// assert_eq!(squares[999].load(Ordering::Relaxed), 998_001);
/// # Ok::<(), informer_runtime::parallelize::ParallelizeError>(())
/// ```
///
/// Stopping early:
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer_runtime::CancellationToken;
/// use informer_runtime::parallelize::{parallelize_until, ParallelizeOptions};
///
/// let cancel = CancellationToken::new();
/// let started = AtomicUsize::new(0);
/// let ran = parallelize_until(Some(&cancel), 2, 1_000_000, ParallelizeOptions::default(), |_| {
///     if started.fetch_add(1, Ordering::SeqCst) == 10 {
///         cancel.cancel();
///     }
/// })?;
/// assert_eq!(ran, started.load(Ordering::SeqCst));
/// assert!(ran <= 12); // the piece that cancelled, and at most one running beside it
/// # Ok::<(), informer_runtime::parallelize::ParallelizeError>(())
/// ```
pub fn parallelize_until<F>(
    cancel: Option<&CancellationToken>,
    workers: usize,
    pieces: usize,
    options: ParallelizeOptions,
    work: F,
) -> Result<usize, ParallelizeError>
where
    F: Fn(usize) + Sync,
{
    if pieces == 0 {
        return Ok(0);
    }
    if workers == 0 {
        return Err(ParallelizeError::NoWorkers { pieces });
    }
    let chunk_size = options.chunk_size();
    let chunks = pieces.div_ceil(chunk_size);
    let shared = Shared {
        cancel,
        pieces,
        chunk_size,
        chunks,
        next_chunk: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
        work: &work,
    };
    let workers = workers.min(chunks);
    thread::scope(|scope| {
        let threads: Vec<_> = (1..workers)
            .filter_map(|i| {
                thread::Builder::new()
                    .name(format!("parallelize-{i}"))
                    .spawn_scoped(scope, || shared.run())
                    .inspect_err(|e| {
                        tracing::warn!(error = %e, "could not start a parallelize_until worker; the others take its share");
                    })
                    .ok()
            })
            .collect();
        let mut ran = 0;
        let mut panic: Option<Box<dyn Any + Send>> = None;
        let results = std::iter::once(catch_unwind(AssertUnwindSafe(|| shared.run())))
            .chain(threads.into_iter().map(|t| t.join()));
        for result in results {
            match result {
                Ok(n) => ran += n,
                Err(payload) => {
                    panic.get_or_insert(payload);
                }
            }
        }
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
        Ok(ran)
    })
}

/// What the workers of one call share.
struct Shared<'a, F> {
    cancel: Option<&'a CancellationToken>,
    pieces: usize,
    chunk_size: usize,
    chunks: usize,
    /// The next chunk to hand out (goes past `chunks` once all are out).
    next_chunk: AtomicUsize,
    /// Set when a piece panicked: no piece starts after it.
    panicked: AtomicBool,
    work: &'a F,
}

impl<F: Fn(usize) + Sync> Shared<'_, F> {
    /// One worker: takes chunks until none is left or the work stops; returns how many
    /// pieces it ran.
    fn run(&self) -> usize {
        let _stop_others = StopOnPanic(&self.panicked);
        let mut ran = 0;
        loop {
            let chunk = self.next_chunk.fetch_add(1, Ordering::Relaxed);
            if chunk >= self.chunks {
                break;
            }
            let start = chunk * self.chunk_size;
            let end = (start + self.chunk_size).min(self.pieces);
            for piece in start..end {
                if self.stopped() {
                    return ran;
                }
                (self.work)(piece);
                ran += 1;
            }
        }
        ran
    }

    fn stopped(&self) -> bool {
        self.panicked.load(Ordering::SeqCst) || self.cancel.is_some_and(|c| c.is_cancelled())
    }
}

/// Tells the other workers to stop if dropped while its thread panics.
struct StopOnPanic<'a>(&'a AtomicBool);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests;
