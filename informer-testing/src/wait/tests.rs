use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;

#[tokio::test(start_paused = true)]
async fn a_check_already_true_returns_without_sleeping() {
    let start = tokio::time::Instant::now();
    eventually("true", async || true).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_check_is_polled_until_it_holds() {
    let polls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    eventually("the fifth poll", async || {
        polls.fetch_add(1, Ordering::Relaxed) == 4
    })
    .await;
    assert_eq!(polls.load(Ordering::Relaxed), 5);
    assert_eq!(start.elapsed(), POLL * 4);
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out after 1s waiting until the sky falls")]
async fn a_check_that_never_holds_fails_naming_what_it_waited_for() {
    eventually_within("the sky falls", Duration::from_secs(1), async || false).await;
}

#[tokio::test(start_paused = true)]
async fn the_last_check_is_at_the_limit() {
    let polls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    // True only at the limit itself: still in time.
    eventually_within("at the limit", Duration::from_millis(50), async || {
        polls.fetch_add(1, Ordering::Relaxed);
        start.elapsed() >= Duration::from_millis(50)
    })
    .await;
    assert_eq!(polls.load(Ordering::Relaxed), 4, "at 0, 20, 40 and 50 ms");
}
