use std::cell::Cell;
use std::time::Duration;

use kube::core::Status;
use tokio::time::Instant;

use super::*;

fn api_error(code: u16, reason: &str) -> kube::Error {
    kube::Error::Api(Box::new(Status::failure("failed", reason).with_code(code)))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn backoff(steps: u32, duration: Duration, factor: f64) -> RetryBackoff {
    RetryBackoff {
        steps,
        duration,
        factor,
        jitter: 0.0,
        cap: None,
    }
}

/// Runs `on_error` with an attempt that fails with a retriable error `failures` times, then
/// succeeds; returns the result, the attempts made and the (paused) time it took.
async fn run_failing(b: RetryBackoff, failures: u32) -> (Result<u32, u32>, u32, Duration) {
    let attempts = Cell::new(0);
    let start = Instant::now();
    let result = on_error(
        b,
        |_: &u32| true,
        || {
            attempts.set(attempts.get() + 1);
            let n = attempts.get();
            async move { if n <= failures { Err(n) } else { Ok(n) } }
        },
    )
    .await;
    (result, attempts.get(), start.elapsed())
}

#[test]
fn delays_are_one_fewer_than_steps() {
    let d: Vec<_> = backoff(5, ms(10), 1.0).delays().collect();
    assert_eq!(d, [ms(10); 4]);
}

#[test]
fn delays_grow_by_the_factor_after_each_sleep() {
    let d: Vec<_> = backoff(4, ms(10), 5.0).delays().collect();
    assert_eq!(d, [ms(10), ms(50), ms(250)]);
}

#[test]
fn a_zero_factor_keeps_the_delay() {
    let d: Vec<_> = backoff(3, ms(7), 0.0).delays().collect();
    assert_eq!(d, [ms(7), ms(7)]);
}

#[test]
fn a_negative_or_nan_factor_is_treated_as_zero() {
    assert_eq!(
        backoff(3, ms(7), -2.0).delays().collect::<Vec<_>>(),
        [ms(7); 2]
    );
    assert_eq!(
        backoff(3, ms(7), f64::NAN).delays().collect::<Vec<_>>(),
        [ms(7); 2]
    );
}

#[test]
fn passing_the_cap_ends_retrying() {
    let b = RetryBackoff {
        cap: Some(ms(30)),
        ..backoff(10, ms(10), 2.0)
    };
    // 10, 20; the next (40) passes the cap: client-go sets Steps to 0 there.
    assert_eq!(b.delays().collect::<Vec<_>>(), [ms(10)]);
    let reaching = RetryBackoff {
        cap: Some(ms(40)),
        ..backoff(10, ms(10), 2.0)
    };
    assert_eq!(reaching.delays().collect::<Vec<_>>(), [ms(10), ms(20)]);
}

#[test]
fn a_zero_cap_is_no_cap() {
    let b = RetryBackoff {
        cap: Some(Duration::ZERO),
        ..backoff(3, ms(10), 2.0)
    };
    assert_eq!(b.delays().collect::<Vec<_>>(), [ms(10), ms(20)]);
}

#[test]
fn zero_steps_is_one_attempt_without_delay() {
    assert_eq!(backoff(0, ms(10), 1.0).delays().count(), 0);
    assert_eq!(backoff(1, ms(10), 1.0).delays().count(), 0);
}

#[test]
fn the_defaults_are_client_gos() {
    assert_eq!(RetryBackoff::default(), RetryBackoff::DEFAULT_RETRY);
    assert_eq!(
        RetryBackoff::DEFAULT_BACKOFF,
        RetryBackoff {
            steps: 4,
            duration: ms(10),
            factor: 5.0,
            jitter: 0.1,
            cap: None
        }
    );
}

#[tokio::test(start_paused = true)]
async fn success_at_first_attempt_does_not_sleep() {
    let (result, attempts, took) = run_failing(backoff(5, ms(10), 1.0), 0).await;
    assert_eq!((result, attempts, took), (Ok(1), 1, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn retriable_errors_are_retried_after_each_delay() {
    let (result, attempts, took) = run_failing(backoff(4, ms(10), 5.0), 3).await;
    assert_eq!((result, attempts, took), (Ok(4), 4, ms(10 + 50 + 250)));
}

#[tokio::test(start_paused = true)]
async fn the_last_retriable_error_is_returned_when_steps_run_out() {
    let (result, attempts, took) = run_failing(backoff(3, ms(10), 1.0), 100).await;
    assert_eq!((result, attempts, took), (Err(3), 3, ms(20)));
}

#[tokio::test(start_paused = true)]
async fn a_non_retriable_error_is_returned_at_once() {
    let attempts = Cell::new(0);
    let result: Result<(), &str> = on_error(
        backoff(5, ms(10), 1.0),
        |e: &&str| *e == "again",
        || {
            attempts.set(attempts.get() + 1);
            async { Err("fatal") }
        },
    )
    .await;
    assert_eq!((result, attempts.get()), (Err("fatal"), 1));
}

#[tokio::test(start_paused = true)]
async fn jitter_stretches_each_sleep_by_at_most_its_factor() {
    let b = RetryBackoff {
        jitter: 0.5,
        ..backoff(3, ms(100), 1.0)
    };
    let (_, attempts, took) = run_failing(b, 2).await;
    assert_eq!(attempts, 3);
    assert!(took >= ms(200) && took < ms(300), "{took:?}");
}

#[tokio::test(start_paused = true)]
async fn retry_on_conflict_retries_conflicts_only() {
    let attempts = Cell::new(0);
    let result: Result<u32, kube::Error> = retry_on_conflict(backoff(5, ms(1), 1.0), || {
        attempts.set(attempts.get() + 1);
        let n = attempts.get();
        async move {
            match n {
                1 | 2 => Err(api_error(409, "Conflict")),
                _ => Err(api_error(409, "AlreadyExists")),
            }
        }
    })
    .await;
    assert!(matches!(result, Err(kube::Error::Api(s)) if s.reason == "AlreadyExists"));
    assert_eq!(attempts.get(), 3);
}

#[test]
fn a_conflict_is_reason_conflict_or_409_with_an_unknown_reason() {
    assert!(is_conflict(&api_error(409, "Conflict")));
    assert!(is_conflict(&api_error(409, "")));
    assert!(is_conflict(&api_error(409, "SomethingNew")));
    // client-go checks the reason first: a Conflict reason is a conflict whatever the code.
    assert!(is_conflict(&api_error(500, "Conflict")));
    assert!(!is_conflict(&api_error(409, "AlreadyExists")));
    assert!(!is_conflict(&api_error(404, "NotFound")));
    assert!(!is_conflict(&api_error(400, "")));
    assert!(!is_conflict(&std::io::Error::other("409 Conflict")));
}

#[test]
fn a_conflict_is_found_through_the_source_chain() {
    #[derive(Debug, thiserror::Error)]
    #[error("updating status")]
    struct Wrapper(#[source] kube::Error);

    assert!(is_conflict(&Wrapper(api_error(409, "Conflict"))));
    assert!(!is_conflict(&Wrapper(api_error(409, "AlreadyExists"))));
    let boxed: Box<dyn StdError + Send + Sync> = Box::new(Wrapper(api_error(409, "Conflict")));
    assert!(boxed.is_conflict());
}

#[test]
fn a_reconcile_error_wrapping_a_conflict_is_a_conflict() {
    assert!(ReconcileError::from(api_error(409, "Conflict")).is_conflict());
    assert!(!ReconcileError::transient("409").is_conflict());
}
