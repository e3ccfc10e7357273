//! Waiting, in a test, for what a controller does: [`eventually`], and for what it must not
//! do: [`consistently`].
//!
//! A controller acts on its own time (its caches see a write, its queue hands the key to a
//! worker, its writes come back through a watch), so a test states what should come true
//! and polls until it does, with a limit that fails the test saying what never happened.
//! Gomega's `Eventually` and `Consistently`, as controller-runtime's envtest suites use them.
//!
//! Time is `tokio::time`'s, here and in the library (queues, requeues, resyncs, leases): a
//! test with paused time (`#[tokio::test(start_paused = true)]`, tokio's `test-util`
//! feature) runs a controller and a [`TestApiServer`](crate::TestApiServer) in virtual time,
//! so a `RequeueAfter` of an hour passes at once. A controller that reads the wall clock
//! (a schedule) should take its clock from its struct, so that the test can give it one
//! that follows `tokio::time::Instant` from a start of its choosing.

use std::time::Duration;

/// How long [`eventually`] waits before failing the test: 30 s, generous for a loaded
/// machine (the in-process server answers in milliseconds).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often [`eventually`] and [`consistently`] check: every 20 ms (of tokio time: with
/// paused time, a long [`consistently`] still makes a check per 20 ms of virtual time).
pub const POLL: Duration = Duration::from_millis(20);

/// Checks `check` at once, then every [`POLL`], until it returns `true`.
///
/// # Panics
/// When [`PATIENCE`] has passed first: `timed out after 30s waiting until <what>`. Time is
/// `tokio::time`'s, so a test with paused time waits in virtual time.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use informer_testing::eventually;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let polls = AtomicU32::new(0);
/// eventually("the third poll", async || polls.fetch_add(1, Ordering::Relaxed) == 2).await;
/// assert_eq!(polls.load(Ordering::Relaxed), 3);
/// # });
/// ```
pub async fn eventually(what: &str, check: impl AsyncFnMut() -> bool) {
    eventually_within(what, PATIENCE, check).await;
}

/// As [`eventually`], giving up after `limit`.
///
/// # Panics
/// When `limit` has passed before `check` returned `true`.
///
/// ```should_panic
/// use std::time::Duration;
/// use informer_testing::eventually_within;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// // panics: "timed out after 50ms waiting until pigs fly"
/// eventually_within("pigs fly", Duration::from_millis(50), async || false).await;
/// # });
/// ```
pub async fn eventually_within(what: &str, limit: Duration, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return;
        }
        let now = tokio::time::Instant::now();
        assert!(
            now < deadline,
            "timed out after {limit:?} waiting until {what}"
        );
        tokio::time::sleep(POLL.min(deadline - now)).await;
    }
}

/// Checks `check` at once, then every [`POLL`], for `period`, and fails the test the first
/// time it returns `false`: what a controller must not do (create a second Job, touch an
/// object it does not own) has not happened within `period` (Gomega's `Consistently`).
///
/// # Panics
/// When `check` returns `false`: `<what> stopped holding after <elapsed>`.
///
/// ```
/// use std::time::Duration;
/// use informer_testing::consistently;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let jobs: Vec<&str> = Vec::new(); // what the controller made
/// consistently("no Job is created", Duration::from_millis(100), async || jobs.is_empty()).await;
/// # });
/// ```
pub async fn consistently(what: &str, period: Duration, mut check: impl AsyncFnMut() -> bool) {
    let start = tokio::time::Instant::now();
    let end = start + period;
    loop {
        assert!(
            check().await,
            "{what} stopped holding after {:?}",
            start.elapsed()
        );
        let now = tokio::time::Instant::now();
        if now >= end {
            return;
        }
        tokio::time::sleep(POLL.min(end - now)).await;
    }
}

#[cfg(test)]
mod tests;
