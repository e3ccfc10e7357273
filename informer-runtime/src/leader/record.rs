//! The leader-election record kept in a Lease's spec, and the pure decisions made about it.
//!
//! Everything here is free of I/O so the rules can be unit tested one by one:
//! when a lease counts as expired (on the observer's own clock, like client-go),
//! what a renewal, a takeover, a creation and a release write.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// The fields of a `LeaseSpec` that leader election reads and writes (client-go's
/// `LeaderElectionRecord`). An empty `holder` means the lease is free.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LeaseRecord {
    pub(crate) holder: String,
    pub(crate) lease_duration_seconds: i32,
    pub(crate) acquire_time: Option<MicroTime>,
    pub(crate) renew_time: Option<MicroTime>,
    pub(crate) transitions: i32,
}

impl LeaseRecord {
    /// The record in a Lease (missing fields read as empty / zero, as in client-go).
    pub(crate) fn from_lease(lease: &Lease) -> Self {
        match &lease.spec {
            None => Self::default(),
            Some(spec) => Self {
                holder: spec.holder_identity.clone().unwrap_or_default(),
                lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
                acquire_time: spec.acquire_time.clone(),
                renew_time: spec.renew_time.clone(),
                transitions: spec.lease_transitions.unwrap_or(0),
            },
        }
    }

    /// Writes the record into a spec, leaving the spec's other fields (strategy,
    /// preferred holder) as they are.
    pub(crate) fn write_to(&self, spec: &mut LeaseSpec) {
        spec.holder_identity = Some(self.holder.clone());
        spec.lease_duration_seconds = Some(self.lease_duration_seconds);
        spec.acquire_time = self.acquire_time.clone();
        spec.renew_time = self.renew_time.clone();
        spec.lease_transitions = Some(self.transitions);
    }

    /// Whether nobody holds the lease (client-go: empty `holderIdentity`).
    pub(crate) fn is_free(&self) -> bool {
        self.holder.is_empty()
    }

    /// How long an observer waits, from the moment it saw this record, before the
    /// lease counts as expired. Negative durations count as zero.
    pub(crate) fn duration(&self) -> Duration {
        Duration::from_secs(u64::try_from(self.lease_duration_seconds).unwrap_or(0))
    }

    /// The record of a lease that `identity` creates: acquired and renewed now, no transitions yet.
    pub(crate) fn created(identity: &str, lease_seconds: i32, now: Timestamp) -> Self {
        Self {
            holder: identity.to_owned(),
            lease_duration_seconds: lease_seconds,
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            transitions: 0,
        }
    }

    /// The record `identity` writes over `self`: a renewal if it already holds the
    /// lease (acquire time and transitions kept), otherwise a takeover (acquired now,
    /// transitions + 1, as client-go counts every change of holder, a free lease included).
    pub(crate) fn next(&self, identity: &str, lease_seconds: i32, now: Timestamp) -> Self {
        let renewing = self.holder == identity;
        Self {
            holder: identity.to_owned(),
            lease_duration_seconds: lease_seconds,
            acquire_time: if renewing && self.acquire_time.is_some() {
                self.acquire_time.clone()
            } else {
                Some(MicroTime(now))
            },
            renew_time: Some(MicroTime(now)),
            transitions: if renewing {
                self.transitions
            } else {
                self.transitions.saturating_add(1)
            },
        }
    }

    /// The record a holder writes when it gives the lease up (client-go's
    /// `ReleaseOnCancel`): no holder, a one-second duration, transitions kept.
    pub(crate) fn released(&self, now: Timestamp) -> Self {
        Self {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            transitions: self.transitions,
        }
    }
}

/// `leaseDurationSeconds` for a configured lease duration: rounded up to whole
/// seconds (so observers never wait less than the holder promised), at least 1.
pub(crate) fn lease_seconds(lease_duration: Duration) -> i32 {
    let whole = lease_duration.as_secs() + u64::from(lease_duration.subsec_nanos() > 0);
    i32::try_from(whole.max(1)).unwrap_or(i32::MAX)
}

/// A Lease as last seen, with the local time at which its record was first seen in this form.
#[derive(Clone, Debug)]
pub(crate) struct Observed {
    pub(crate) lease: Lease,
    pub(crate) record: LeaseRecord,
    /// When this observer first saw `record` (its own clock). Expiry is measured from
    /// here, never from the remote `renewTime`, so clock skew between replicas is harmless.
    pub(crate) at: Instant,
}

impl Observed {
    /// The observation after seeing `lease` at `now`: the observed time moves only
    /// when the record changed (client-go compares the raw record the same way).
    pub(crate) fn update(previous: Option<Observed>, lease: Lease, now: Instant) -> Observed {
        let record = LeaseRecord::from_lease(&lease);
        let at = match previous {
            Some(prev) if prev.record == record => prev.at,
            _ => now,
        };
        Observed { lease, record, at }
    }

    /// client-go's `isLeaseValid`: the record has not been unchanged for its full
    /// lease duration yet.
    pub(crate) fn is_valid(&self, now: Instant) -> bool {
        self.at + self.record.duration() > now
    }

    /// Whether someone other than `identity` holds the lease and it has not expired.
    pub(crate) fn held_by_other(&self, identity: &str, now: Instant) -> bool {
        !self.record.is_free() && self.record.holder != identity && self.is_valid(now)
    }

    /// The holder, if any.
    pub(crate) fn holder(&self) -> Option<&str> {
        (!self.record.is_free()).then_some(self.record.holder.as_str())
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn lease_seconds_round_up_to_whole_seconds_and_at_least_one() {
        assert_eq!(lease_seconds(Duration::from_secs(15)), 15);
        assert_eq!(lease_seconds(Duration::from_millis(600)), 1);
        assert_eq!(lease_seconds(Duration::from_millis(1001)), 2);
        assert_eq!(lease_seconds(Duration::ZERO), 1);
        assert_eq!(lease_seconds(Duration::from_secs(u64::MAX)), i32::MAX);
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
}
