use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::{ConfigError, LeaseTimings, RunningGuard, TimingsError, validate};

fn timings(lease: u64, renew: u64, retry: u64) -> LeaseTimings {
    LeaseTimings {
        lease_duration: Duration::from_millis(lease),
        renew_deadline: Duration::from_millis(renew),
        retry_period: Duration::from_millis(retry),
    }
}

#[test]
fn the_default_is_client_gos_and_valid() {
    assert_eq!(LeaseTimings::default(), timings(15_000, 10_000, 2_000));
    assert_eq!(LeaseTimings::default().validate(), Ok(()));
}

#[test]
fn the_renew_deadline_must_be_below_the_lease_duration() {
    assert!(matches!(
        timings(10_000, 10_000, 2_000).validate(),
        Err(TimingsError::RenewDeadlineNotBelowLeaseDuration { .. })
    ));
}

#[test]
fn the_renew_deadline_must_leave_room_for_a_retry() {
    assert!(matches!(
        timings(15_000, 2_400, 2_000).validate(),
        Err(TimingsError::RenewDeadlineTooShort { .. })
    ));
    assert_eq!(timings(15_000, 2_401, 2_000).validate(), Ok(()));
}

#[test]
fn the_retry_period_must_not_be_zero() {
    assert_eq!(
        timings(15_000, 10_000, 0).validate(),
        Err(TimingsError::ZeroRetryPeriod)
    );
}

#[test]
fn sub_second_timings_are_allowed() {
    assert_eq!(timings(1_000, 700, 100).validate(), Ok(()));
}

#[test]
fn lease_seconds_round_up_to_whole_seconds_and_at_least_one() {
    let seconds = |lease_duration| {
        LeaseTimings {
            lease_duration,
            ..LeaseTimings::default()
        }
        .lease_seconds()
    };
    assert_eq!(seconds(Duration::from_secs(15)), 15);
    assert_eq!(seconds(Duration::from_millis(600)), 1);
    assert_eq!(seconds(Duration::from_millis(1001)), 2);
    assert_eq!(seconds(Duration::ZERO), 1);
    assert_eq!(seconds(Duration::from_secs(u64::MAX)), i32::MAX);
}

#[test]
fn a_holder_needs_every_name_set_and_valid_timings() {
    let timings = LeaseTimings::default();
    assert_eq!(
        validate(&[("a", "x"), ("b", ""), ("c", "")], &timings),
        Err(ConfigError::Empty { field: "b" }),
        "the first empty name"
    );
    assert_eq!(validate(&[("a", "x")], &timings), Ok(()));
    let zero = LeaseTimings {
        retry_period: Duration::ZERO,
        ..timings
    };
    assert_eq!(
        validate(&[("a", "")], &zero),
        Err(ConfigError::Empty { field: "a" }),
        "names first"
    );
    assert_eq!(
        validate(&[("a", "x")], &zero),
        Err(ConfigError::Timings(TimingsError::ZeroRetryPeriod))
    );
}

#[test]
fn only_one_run_holds_the_guard_at_a_time() {
    let flag = AtomicBool::new(false);
    let first = RunningGuard::enter(&flag).expect("free");
    assert!(RunningGuard::enter(&flag).is_none(), "already running");
    drop(first);
    assert!(
        RunningGuard::enter(&flag).is_some(),
        "free again once dropped"
    );
}

/// client-go judges a lease at the time its attempt started, before the read: a holder's
/// record seen for the first time stays valid until the next attempt, even with a lease
/// duration of 0, which client-go itself writes for sub-second durations.
#[tokio::test(start_paused = true)]
async fn a_lease_seen_to_change_is_not_taken_before_the_next_attempt_even_at_zero_seconds() {
    use super::fake::FakeLeases;
    use super::lock::LeaseLock;
    use super::record::LeaseRecord;
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::sync::Arc;

    let store = FakeLeases::new();
    let mut spec = LeaseSpec::default();
    LeaseRecord::created("bing", 0, k8s_openapi::jiff::Timestamp::now()).write_to(&mut spec);
    store.put(Lease {
        metadata: ObjectMeta {
            name: Some("l".into()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
    });
    let mut lock = LeaseLock::new(store.clone(), "l".into(), Arc::from("baz"), 10);
    assert!(!lock.try_acquire_or_renew().await.unwrap(), "first sight");
    tokio::time::advance(Duration::from_millis(100)).await;
    assert!(
        lock.try_acquire_or_renew().await.unwrap(),
        "unchanged since: expired"
    );
    let held = store.lease("l").unwrap().spec.unwrap();
    assert_eq!(held.holder_identity.as_deref(), Some("baz"));
}
