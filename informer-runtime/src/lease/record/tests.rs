use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn lease(record: &LeaseRecord, rv: &str) -> Lease {
    let mut spec = LeaseSpec::default();
    record.write_to(&mut spec);
    Lease {
        metadata: ObjectMeta {
            name: Some("l".into()),
            resource_version: Some(rv.into()),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
    }
}

#[test]
fn missing_spec_reads_as_a_free_lease_with_zero_duration() {
    let record = LeaseRecord::from_lease(&Lease::default());
    assert!(record.is_free());
    assert_eq!(record.duration(), Duration::ZERO);
    assert_eq!(record.transitions, 0);
}

#[test]
fn negative_duration_counts_as_zero() {
    let record = LeaseRecord {
        lease_duration_seconds: -5,
        ..LeaseRecord::default()
    };
    assert_eq!(record.duration(), Duration::ZERO);
}

#[test]
fn record_round_trips_through_the_spec_and_keeps_other_fields() {
    let record = LeaseRecord::created("a", 15, ts(0)).next("b", 15, ts(3));
    let mut spec = LeaseSpec {
        strategy: Some("OldestEmulationVersion".into()),
        ..LeaseSpec::default()
    };
    record.write_to(&mut spec);
    assert_eq!(spec.strategy.as_deref(), Some("OldestEmulationVersion"));
    let back = LeaseRecord::from_lease(&Lease {
        spec: Some(spec),
        ..Lease::default()
    });
    assert_eq!(back, record);
}

#[test]
fn created_lease_starts_with_zero_transitions_and_both_times_now() {
    let r = LeaseRecord::created("a", 15, ts(0));
    assert_eq!(r.holder, "a");
    assert_eq!(r.lease_duration_seconds, 15);
    assert_eq!(r.transitions, 0);
    assert_eq!(r.acquire_time, Some(MicroTime(ts(0))));
    assert_eq!(r.renew_time, Some(MicroTime(ts(0))));
}

#[test]
fn renewal_keeps_acquire_time_and_transitions() {
    let r = LeaseRecord::created("a", 15, ts(0)).next("a", 15, ts(5));
    assert_eq!(r.acquire_time, Some(MicroTime(ts(0))));
    assert_eq!(r.renew_time, Some(MicroTime(ts(5))));
    assert_eq!(r.transitions, 0);
}

#[test]
fn takeover_increments_transitions_and_sets_acquire_time() {
    let r = LeaseRecord::created("a", 15, ts(0)).next("b", 10, ts(20));
    assert_eq!(r.holder, "b");
    assert_eq!(r.lease_duration_seconds, 10);
    assert_eq!(r.acquire_time, Some(MicroTime(ts(20))));
    assert_eq!(r.renew_time, Some(MicroTime(ts(20))));
    assert_eq!(r.transitions, 1);
}

#[test]
fn acquiring_a_released_lease_counts_as_a_transition() {
    let released = LeaseRecord::created("a", 15, ts(0)).released(ts(1));
    assert_eq!(released.next("b", 15, ts(2)).transitions, 1);
    // ... and so does the old holder taking it back.
    assert_eq!(released.next("a", 15, ts(2)).transitions, 1);
}

#[test]
fn release_clears_holder_sets_one_second_and_keeps_transitions() {
    let held = LeaseRecord::created("a", 15, ts(0)).next("b", 15, ts(1));
    let released = held.released(ts(9));
    assert!(released.is_free());
    assert_eq!(released.lease_duration_seconds, 1);
    assert_eq!(released.transitions, 1);
    assert_eq!(released.renew_time, Some(MicroTime(ts(9))));
    assert_eq!(released.acquire_time, Some(MicroTime(ts(9))));
}

#[test]
fn transitions_saturate_instead_of_overflowing() {
    let r = LeaseRecord {
        holder: "a".into(),
        transitions: i32::MAX,
        ..LeaseRecord::default()
    };
    assert_eq!(r.next("b", 1, ts(0)).transitions, i32::MAX);
}

#[tokio::test(start_paused = true)]
async fn lease_is_valid_until_duration_after_the_observed_change() {
    let t0 = Instant::now();
    let rec = LeaseRecord::created("a", 2, ts(-3600)); // remote time far in the past
    let obs = Observed::update(None, lease(&rec, "1"), t0);
    assert!(obs.is_valid(t0));
    assert!(obs.is_valid(t0 + Duration::from_millis(1999)));
    assert!(!obs.is_valid(t0 + Duration::from_secs(2)));
}

#[tokio::test(start_paused = true)]
async fn unchanged_record_keeps_the_observed_time() {
    let t0 = Instant::now();
    let rec = LeaseRecord::created("a", 2, ts(0));
    let first = Observed::update(None, lease(&rec, "1"), t0);
    // Same record, even with another resourceVersion (say, a label was edited).
    let again = Observed::update(Some(first), lease(&rec, "7"), t0 + Duration::from_secs(1));
    assert_eq!(again.at, t0);
    assert_eq!(again.lease.metadata.resource_version.as_deref(), Some("7"));
}

#[tokio::test(start_paused = true)]
async fn changed_record_resets_the_observed_time() {
    let t0 = Instant::now();
    let rec = LeaseRecord::created("a", 2, ts(0));
    let first = Observed::update(None, lease(&rec, "1"), t0);
    let renewed = rec.next("a", 2, ts(1));
    let t1 = t0 + Duration::from_secs(1);
    let again = Observed::update(Some(first), lease(&renewed, "2"), t1);
    assert_eq!(again.at, t1);
    assert!(again.is_valid(t0 + Duration::from_millis(2500)));
}

#[tokio::test(start_paused = true)]
async fn only_a_valid_lease_of_someone_else_blocks_acquisition() {
    let t0 = Instant::now();
    let held = Observed::update(None, lease(&LeaseRecord::created("a", 2, ts(0)), "1"), t0);
    assert!(held.held_by_other("b", t0));
    assert!(!held.held_by_other("a", t0), "own lease never blocks");
    assert!(
        !held.held_by_other("b", t0 + Duration::from_secs(2)),
        "expired"
    );
    let free = Observed::update(
        None,
        lease(&LeaseRecord::created("a", 2, ts(0)).released(ts(1)), "2"),
        t0,
    );
    assert!(
        !free.held_by_other("b", t0),
        "a released lease is free at once"
    );
    assert_eq!(free.holder(), None);
    assert_eq!(held.holder(), Some("a"));
}
