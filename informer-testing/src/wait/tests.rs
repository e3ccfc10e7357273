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

#[tokio::test(start_paused = true)]
async fn consistently_checks_for_the_whole_period_at_each_poll() {
    let polls = AtomicU32::new(0);
    let start = tokio::time::Instant::now();
    consistently("it holds", POLL * 3, async || {
        polls.fetch_add(1, Ordering::Relaxed);
        true
    })
    .await;
    assert_eq!(polls.load(Ordering::Relaxed), 4, "at 0, 1, 2 and 3 polls");
    assert_eq!(start.elapsed(), POLL * 3);
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "no second Job stopped holding after 40ms")]
async fn consistently_fails_the_first_time_the_check_does_not_hold() {
    let polls = AtomicU32::new(0);
    consistently("no second Job", Duration::from_secs(1), async || {
        polls.fetch_add(1, Ordering::Relaxed) < 2
    })
    .await;
}
