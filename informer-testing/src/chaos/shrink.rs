//! Shrinking a failing schedule: delta debugging (Zeller and Hildebrandt, "Simplifying and
//! Isolating Failure-Inducing Input", TSE 2002) over the schedule's steps.
//!
//! A candidate (a subsequence of the steps) *fails* if one of a few runs of it fails the
//! same way as the original; timing is not fully deterministic, so one passing run does not
//! prove a candidate passes. Hints (say, the schedule without its pauses) are tried first;
//! then ddmin proper, the candidates of a round running concurrently. The search stops at a
//! budget of runs, keeping the smallest failing schedule found so far.
//!
//! Candidates run concurrently, so a schedule that fails only under that load can be taken;
//! [`confirm`] then replays what was taken one run at a time, as a user's replay or a pasted
//! regression test runs it, stepping back to a larger schedule that fails when replayed.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use futures::StreamExt as _;

/// The outcome of shrinking.
pub(crate) struct Shrunk<T> {
    /// The indices kept (in order).
    pub kept: Vec<usize>,
    /// Every candidate taken, in the order taken (each a subset of the one before; the
    /// last is `kept`). Empty when nothing smaller than the input failed.
    pub path: Vec<Vec<usize>>,
    /// What the last failing run of `kept` gave.
    pub evidence: T,
    /// Runs made.
    pub runs: usize,
    /// Whether the budget ran out first.
    pub exhausted: bool,
}

/// How candidates are tried.
pub(crate) struct Budget {
    /// Runs per candidate before it counts as passing.
    pub attempts: usize,
    /// Runs in all.
    pub runs: usize,
    /// Candidates at once.
    pub concurrency: usize,
}

/// Shrinks `items` (indices of a failing schedule whose failing run gave `evidence`),
/// trying `hints` (subsets of `items`) first.
///
/// `test(candidate)` runs a candidate once and returns `Some(evidence)` if it failed the
/// same way.
pub(crate) async fn ddmin<T, F, Fut>(
    items: Vec<usize>,
    evidence: T,
    hints: Vec<Vec<usize>>,
    budget: &Budget,
    test: F,
) -> Shrunk<T>
where
    F: Fn(Vec<usize>) -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let runs = AtomicUsize::new(0);
    let refused = AtomicBool::new(false);
    let mut kept = items;
    let mut path = Vec::new();
    let mut evidence = evidence;
    let try_candidate = |candidate: Vec<usize>| {
        let (test, runs, refused) = (&test, &runs, &refused);
        async move {
            for _ in 0..budget.attempts.max(1) {
                if runs.fetch_add(1, Ordering::Relaxed) >= budget.runs {
                    runs.fetch_sub(1, Ordering::Relaxed);
                    refused.store(true, Ordering::Relaxed);
                    return None;
                }
                if let Some(evidence) = test(candidate.clone()).await {
                    return Some(evidence);
                }
            }
            None
        }
    };
    let exhausted = |runs: &AtomicUsize| runs.load(Ordering::Relaxed) >= budget.runs;

    for hint in hints {
        if hint.is_empty() || hint.len() >= kept.len() || !hint.iter().all(|i| kept.contains(i)) {
            continue;
        }
        if let Some(found) = try_candidate(hint.clone()).await {
            path.push(hint.clone());
            kept = hint;
            evidence = found;
        }
    }

    let mut granularity = 2;
    // Whether ddmin ran to its end (no smaller failing schedule to find), rather than to
    // the budget.
    let mut finished = kept.len() < 2;
    while kept.len() >= 2 && !exhausted(&runs) {
        let chunks = split(&kept, granularity);
        // Subsets first, then (when they differ from the subsets) complements.
        let mut candidates: Vec<(Vec<usize>, bool)> =
            chunks.iter().map(|c| (c.clone(), true)).collect();
        if chunks.len() > 2 {
            for i in 0..chunks.len() {
                let complement: Vec<usize> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, c)| c.iter().copied())
                    .collect();
                candidates.push((complement, false));
            }
        }
        let mut found = None;
        for batch in candidates.chunks(budget.concurrency.max(1)) {
            let results: Vec<Option<T>> = futures::stream::iter(batch.iter())
                .map(|(candidate, _)| try_candidate(candidate.clone()))
                .buffered(budget.concurrency.max(1))
                .collect()
                .await;
            found = results
                .into_iter()
                .zip(batch)
                .find_map(|(result, (candidate, subset))| {
                    result.map(|evidence| (candidate.clone(), *subset, evidence))
                });
            if found.is_some() || exhausted(&runs) {
                break;
            }
        }
        match found {
            Some((candidate, subset, found)) => {
                path.push(candidate.clone());
                kept = candidate;
                evidence = found;
                granularity = if subset { 2 } else { (granularity - 1).max(2) };
            }
            None if exhausted(&runs) => break,
            None if granularity >= kept.len() => {
                finished = true;
                break;
            }
            None => granularity = (granularity * 2).min(kept.len()),
        }
    }
    finished |= kept.len() < 2;
    Shrunk {
        kept,
        path,
        evidence,
        runs: runs.load(Ordering::Relaxed),
        exhausted: refused.load(Ordering::Relaxed) || !finished,
    }
}

/// What replaying the shrunk schedules one run at a time found.
pub(crate) struct Confirmed<T> {
    /// The index in the candidates given of the one chosen.
    pub chosen: usize,
    /// Replays of the chosen candidate (they stop at the first that fails).
    pub runs: usize,
    /// What its failing replay gave (`None` if no replay failed).
    pub evidence: Option<T>,
    /// Runs made in all.
    pub total: usize,
}

/// Replays `candidates` (smallest first) one run after another, each up to `replays` times
/// until it fails, and chooses the first that fails. If none does, the first (smallest) is
/// chosen with no failing replay, which the report says.
pub(crate) async fn confirm<T, F, Fut>(
    candidates: &[Vec<usize>],
    replays: usize,
    test: F,
) -> Confirmed<T>
where
    F: Fn(Vec<usize>) -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let replays = replays.max(1);
    let mut total = 0;
    for (chosen, candidate) in candidates.iter().enumerate() {
        for run in 1..=replays {
            total += 1;
            if let Some(evidence) = test(candidate.clone()).await {
                return Confirmed {
                    chosen,
                    runs: run,
                    evidence: Some(evidence),
                    total,
                };
            }
        }
    }
    Confirmed {
        chosen: 0,
        runs: replays,
        evidence: None,
        total,
    }
}

/// `items` in `n` contiguous chunks of nearly equal length.
pub(crate) fn split(items: &[usize], n: usize) -> Vec<Vec<usize>> {
    let n = n.clamp(1, items.len().max(1));
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let end = start + (items.len() - start) / (n - i);
        chunks.push(items[start..end].to_vec());
        start = end;
    }
    chunks
}
