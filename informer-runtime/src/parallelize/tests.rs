use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::AtomicU32;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use super::*;

fn chunked(size: usize) -> ParallelizeOptions {
    ParallelizeOptions::default().with_chunk_size(size)
}

/// Runs `pieces` pieces and returns how often each ran.
fn visits(workers: usize, pieces: usize, options: ParallelizeOptions) -> Vec<u32> {
    let seen: Vec<AtomicU32> = (0..pieces).map(|_| AtomicU32::new(0)).collect();
    let ran = parallelize_until(None, workers, pieces, options, |p| {
        seen[p].fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(ran, pieces, "reported count");
    seen.into_iter().map(AtomicU32::into_inner).collect()
}

/// Waits, for at most 10 s, until `count` reaches `n`.
fn wait_for(count: &AtomicUsize, n: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while count.load(Ordering::SeqCst) < n {
        if Instant::now() > deadline {
            return false;
        }
        thread::yield_now();
    }
    true
}

#[test]
fn every_piece_runs_exactly_once() {
    for (workers, pieces, chunk) in [(1, 7, 1), (3, 100, 1), (3, 100, 7), (8, 5, 2), (2, 9, 100)] {
        assert!(
            visits(workers, pieces, chunked(chunk))
                .iter()
                .all(|&n| n == 1),
            "workers {workers}, pieces {pieces}, chunk {chunk}"
        );
    }
}

#[test]
fn no_pieces_run_nothing_and_refuse_nothing() {
    let called = AtomicBool::new(false);
    for workers in [0, 1, 4] {
        let ran = parallelize_until(None, workers, 0, ParallelizeOptions::default(), |_| {
            called.store(true, Ordering::SeqCst);
        });
        assert_eq!(ran, Ok(0));
    }
    assert!(!called.load(Ordering::SeqCst));
}

#[test]
fn zero_workers_for_some_pieces_are_refused_and_run_nothing() {
    let called = AtomicBool::new(false);
    let ran = parallelize_until(None, 0, 3, ParallelizeOptions::default(), |_| {
        called.store(true, Ordering::SeqCst);
    });
    assert_eq!(ran, Err(ParallelizeError::NoWorkers { pieces: 3 }));
    assert!(!called.load(Ordering::SeqCst));
    assert_eq!(
        ran.unwrap_err().to_string(),
        "no workers to run 3 pieces: parallelize_until needs workers >= 1"
    );
}

#[test]
fn a_chunk_size_of_zero_means_one() {
    assert_eq!(chunked(0).chunk_size(), 1);
    assert_eq!(ParallelizeOptions::default().chunk_size(), 1);
    assert!(visits(3, 10, chunked(0)).iter().all(|&n| n == 1));
}

#[test]
fn one_thread_runs_the_pieces_of_a_chunk_in_order() {
    let chunk = 10;
    let log: Mutex<Vec<(usize, ThreadId)>> = Mutex::default();
    parallelize_until(None, 4, 95, chunked(chunk), |p| {
        log.lock().unwrap().push((p, thread::current().id()));
    })
    .unwrap();
    let mut by_chunk: HashMap<usize, Vec<(usize, ThreadId)>> = HashMap::new();
    for (p, id) in log.into_inner().unwrap() {
        by_chunk.entry(p / chunk).or_default().push((p, id));
    }
    assert_eq!(by_chunk.len(), 10);
    for (c, runs) in by_chunk {
        let pieces: Vec<usize> = runs.iter().map(|(p, _)| *p).collect();
        let want: Vec<usize> = (c * chunk..((c + 1) * chunk).min(95)).collect();
        assert_eq!(pieces, want, "chunk {c} ran in order");
        assert!(
            runs.iter().all(|(_, id)| *id == runs[0].1),
            "chunk {c} on one thread"
        );
    }
}

#[test]
fn one_worker_runs_every_piece_in_order_on_the_calling_thread() {
    let caller = thread::current().id();
    let log: Mutex<Vec<(usize, ThreadId)>> = Mutex::default();
    parallelize_until(None, 1, 20, chunked(3), |p| {
        log.lock().unwrap().push((p, thread::current().id()));
    })
    .unwrap();
    let log = log.into_inner().unwrap();
    assert_eq!(
        log.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    assert!(log.iter().all(|(_, id)| *id == caller));
}

#[test]
fn workers_run_at_once_the_caller_among_them() {
    // Each piece waits until all four are running: only four threads at once let it end.
    let inside = AtomicUsize::new(0);
    let threads: Mutex<HashSet<ThreadId>> = Mutex::default();
    parallelize_until(None, 4, 4, ParallelizeOptions::default(), |_| {
        threads.lock().unwrap().insert(thread::current().id());
        inside.fetch_add(1, Ordering::SeqCst);
        assert!(wait_for(&inside, 4), "four pieces run at once");
    })
    .unwrap();
    let threads = threads.into_inner().unwrap();
    assert_eq!(threads.len(), 4);
    assert!(threads.contains(&thread::current().id()));
}

#[test]
fn no_more_threads_than_chunks_are_used() {
    let threads: Mutex<HashSet<ThreadId>> = Mutex::default();
    parallelize_until(None, 16, 30, chunked(10), |_| {
        threads.lock().unwrap().insert(thread::current().id());
        thread::sleep(Duration::from_millis(1));
    })
    .unwrap();
    let used = threads.into_inner().unwrap().len();
    assert!((1..=3).contains(&used), "3 chunks ran on {used} threads");
}

#[test]
fn a_token_cancelled_before_the_call_runs_nothing() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let called = AtomicBool::new(false);
    let ran = parallelize_until(Some(&cancel), 4, 100, chunked(5), |_| {
        called.store(true, Ordering::SeqCst);
    });
    assert_eq!(ran, Ok(0));
    assert!(!called.load(Ordering::SeqCst));
}

#[test]
fn after_cancel_no_piece_starts_and_running_pieces_finish() {
    let workers = 4;
    let cancel = CancellationToken::new();
    let started = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let ran = parallelize_until(
        Some(&cancel),
        workers,
        100_000,
        ParallelizeOptions::default(),
        |_| {
            let n = started.fetch_add(1, Ordering::SeqCst);
            if n == 50 {
                cancel.cancel();
            } else {
                thread::sleep(Duration::from_micros(200));
            }
            finished.fetch_add(1, Ordering::SeqCst);
        },
    )
    .unwrap();
    let (started, finished) = (started.into_inner(), finished.into_inner());
    assert_eq!(
        started, finished,
        "every piece that started finished before the return"
    );
    assert_eq!(ran, started, "the count is of pieces that ran");
    // The 51st cancels; each other worker may have just passed its check.
    assert!(started <= 51 + (workers - 1), "{started} pieces started");
}

#[test]
fn a_cancelled_worker_skips_the_rest_of_its_chunk() {
    let cancel = CancellationToken::new();
    let ran_pieces: Mutex<Vec<usize>> = Mutex::default();
    let ran = parallelize_until(Some(&cancel), 1, 100, chunked(10), |p| {
        ran_pieces.lock().unwrap().push(p);
        if p == 3 {
            cancel.cancel();
        }
    })
    .unwrap();
    assert_eq!(ran, 4);
    assert_eq!(ran_pieces.into_inner().unwrap(), [0, 1, 2, 3]);
}

#[test]
fn a_panicking_piece_stops_the_work_and_reaches_the_caller() {
    /// Marks that the panic has left the piece (dropped as it unwinds out).
    struct Unwound<'a>(&'a AtomicBool);
    impl Drop for Unwound<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let workers = 4;
    let unwound = AtomicBool::new(false);
    let started_after = AtomicUsize::new(0);
    let started = AtomicUsize::new(0);
    let finished = AtomicUsize::new(0);
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        parallelize_until(None, workers, 100_000, ParallelizeOptions::default(), |p| {
            if unwound.load(Ordering::SeqCst) {
                started_after.fetch_add(1, Ordering::SeqCst);
            }
            started.fetch_add(1, Ordering::SeqCst);
            if p == 40 {
                let _unwound = Unwound(&unwound);
                panic!("piece 40 fails");
            }
            thread::sleep(Duration::from_micros(100));
            finished.fetch_add(1, Ordering::SeqCst);
        })
    }));
    let payload = outcome.expect_err("the panic is resumed on the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"piece 40 fails"));
    let (started, finished) = (started.into_inner(), finished.into_inner());
    assert_eq!(
        finished,
        started - 1,
        "the others finished what they had started"
    );
    // Each other worker may have passed its check just before the panic left the piece, and
    // (rarely) once more in the few instructions before the flag is raised.
    let after = started_after.into_inner();
    assert!(
        after <= 2 * (workers - 1),
        "{after} pieces started after the panic"
    );
}
