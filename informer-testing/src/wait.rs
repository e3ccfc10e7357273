//! Waiting, in a test, for what a controller does: [`eventually`].
//!
//! A controller acts on its own time (its caches see a write, its queue hands the key to a
//! worker, its writes come back through a watch), so a test states what should come true
//! and polls until it does, with a limit that fails the test saying what never happened.
//! Gomega's `Eventually`, as controller-runtime's envtest suites use it.

use std::time::Duration;

/// How long [`eventually`] waits before failing the test: generous, for a loaded machine
/// (the in-process server answers in milliseconds).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often [`eventually`] checks.
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

#[cfg(test)]
mod tests;
