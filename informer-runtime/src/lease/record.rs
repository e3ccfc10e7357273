//! The holder's record kept in a Lease's spec (client-go's `LeaderElectionRecord`, used by
//! leader election and by every shard Lease), and the pure decisions made about it.
//!
//! Everything here is free of I/O so the rules can be unit tested one by one: when a lease
//! counts as expired (on the observer's own clock, like client-go), what a renewal, a
//! takeover, a creation and a release write. Times are k8s-openapi `MicroTime`s over jiff
//! `Timestamp`s, so their RFC 3339 form is k8s-openapi's.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// The fields of a `LeaseSpec` that leader election and sharding read and write
/// (client-go's `LeaderElectionRecord`). An empty `holder` means the lease is free.
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
    /// lease duration yet. A record is valid at the instant it was observed whatever its
    /// duration: client-go observes after the time it judges at, so a record it has just
    /// seen change is valid even with a duration of 0 (with a clock that does not move
    /// between the two, as tokio's paused one, only this rule says so).
    pub(crate) fn is_valid(&self, now: Instant) -> bool {
        self.at >= now || self.at + self.record.duration() > now
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
mod tests;
