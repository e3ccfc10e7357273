//! client-go's unit tests of `workqueue.ParallelizeUntil` (`util/workqueue/parallelizer_test.go`,
//! v0.36), ported onto [`parallelize_until`] to find behaviour that differs from client-go.
//!
//! Each test is named after the Go test it ports (`<go file>_<go test>` in snake case) and
//! says which one in its first comment.
//!
//! Adaptations: `ParallelizeUntil(ctx, workers, pieces, f, WithChunkSize(c))` is
//! `parallelize_until(None, workers, pieces, ParallelizeOptions::default().with_chunk_size(c), f)`
//! (no context: `context.Background()` is never cancelled); it returns how many pieces ran,
//! which the ports check too.
//!
//! Not ported: the timing of `BenchmarkParallelizeUntil` (a benchmark); its check of the
//! results is ported as a test.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use informer_runtime::parallelize::{ParallelizeOptions, parallelize_until};

/// client-go's `testCase`.
struct TestCase {
    pieces: usize,
    workers: usize,
    chunk_size: usize,
}

/// client-go's `cases`.
const CASES: [TestCase; 4] = [
    TestCase {
        pieces: 1000,
        workers: 10,
        chunk_size: 1,
    },
    TestCase {
        pieces: 1000,
        workers: 10,
        chunk_size: 10,
    },
    TestCase {
        pieces: 1000,
        workers: 10,
        chunk_size: 100,
    },
    TestCase {
        pieces: 999,
        workers: 10,
        chunk_size: 13,
    },
];

impl TestCase {
    fn name(&self) -> String {
        format!(
            "pieces:{},workers:{},chunkSize:{}",
            self.pieces, self.workers, self.chunk_size
        )
    }

    fn options(&self) -> ParallelizeOptions {
        ParallelizeOptions::default().with_chunk_size(self.chunk_size)
    }
}

// Go: TestParallelizeUntil
#[test]
fn parallelizer_test_parallelize_until() {
    for tc in &CASES {
        let seen: Vec<AtomicI32> = (0..tc.pieces).map(|_| AtomicI32::new(0)).collect();
        let ran = parallelize_until(None, tc.workers, tc.pieces, tc.options(), |p| {
            seen[p].fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        assert_eq!(ran, tc.pieces, "{}", tc.name());
        let seen: Vec<i32> = seen.into_iter().map(AtomicI32::into_inner).collect();
        let want_seen = vec![1; tc.pieces];
        assert_eq!(seen, want_seen, "bad number of visits, {}", tc.name());
    }
}

/// client-go's `calPrime`.
fn cal_prime(p: usize) -> bool {
    if p <= 1 {
        return false;
    }
    let mut i = 2;
    while i * i <= p {
        if p.is_multiple_of(i) {
            return false;
        }
        i += 1;
    }
    true
}

// Go: BenchmarkParallelizeUntil (its check of the results, run once per case; no timing)
#[test]
fn parallelizer_test_benchmark_parallelize_until() {
    for tc in &CASES {
        let is_prime: Vec<AtomicBool> = (0..tc.pieces).map(|_| AtomicBool::new(false)).collect();
        parallelize_until(None, tc.workers, tc.pieces, tc.options(), |p| {
            is_prime[p].store(cal_prime(p), Ordering::Relaxed);
        })
        .unwrap();
        let want = [
            false, false, true, true, false, true, false, true, false, false, false, true,
        ];
        let got: Vec<bool> = is_prime[..want.len()]
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(got, want, "miscalculated isPrime, {}", tc.name());
    }
}
