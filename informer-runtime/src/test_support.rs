//! What the unit tests of several modules share: waiting until a condition holds, in tokio
//! time or, off any runtime, on the thread; reading a metrics scrape. (The integration tests have theirs in
//! `tests/integration/support.rs`.)

use std::time::Duration;

/// How often a condition is checked.
const POLL: Duration = Duration::from_millis(2);

/// How long [`eventually`] waits before it gives up: generous, for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(10);

/// Checks `cond` every 2 ms of tokio time until it holds; panics naming `what` after 10 s.
pub(crate) async fn eventually(what: &str, cond: impl FnMut() -> bool) {
    eventually_within(PATIENCE, what, cond).await;
}

/// As [`eventually`], giving up after `limit` (say, of paused time that skips backoffs).
pub(crate) async fn eventually_within(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    eventually_async_within(limit, what, async || cond()).await;
}

/// As [`eventually`], for a condition that awaits.
pub(crate) async fn eventually_async(what: &str, cond: impl AsyncFnMut() -> bool) {
    eventually_async_within(PATIENCE, what, cond).await;
}

async fn eventually_async_within(limit: Duration, what: &str, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting until {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// As [`eventually`], off any runtime: checks `cond` every 2 ms of real time, sleeping the
/// thread in between; panics naming `what` after 10 s.
pub(crate) fn eventually_blocking(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out after {PATIENCE:?} waiting until {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// Runs `body` on a one-thread tokio runtime of its own thread and returns its output, or
/// panics with `what` if it has not finished within 60 s: for tests that a task which never
/// waits would hang (the thread is left behind, the test fails).
pub(crate) fn on_one_thread<T, F>(what: &str, body: impl FnOnce() -> F + Send + 'static) -> T
where
    F: std::future::Future<Output = T>,
    T: Send + 'static,
{
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a one-thread runtime");
        let _ = done_tx.send(rt.block_on(body()));
    });
    done_rx
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: did not finish within 60 s"))
}

/// The samples of an OpenMetrics text: `name{labels}` to its value.
pub(crate) fn samples(text: &str) -> std::collections::HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}
