//! What leader election ([`leader`](crate::leader)) and sharding ([`shard`](crate::shard))
//! share: a `coordination.k8s.io/v1` Lease used as a lock, with client-go's rules, and the
//! timings that make it safe ([`LeaseTimings`]).
//!
//! - `api.rs`: the five Lease calls, behind a trait (the real `kube::Api`, or a fake in
//!   tests);
//! - `record.rs`: the record kept in a Lease's spec and the pure rules about it (when a
//!   lease counts as expired, on the observer's own clock; what a renewal, a takeover, a
//!   creation and a release write);
//! - `lock.rs`: one Lease as a lock held by one identity (client-go's `tryAcquireOrRenew`
//!   and `release`), every write conditioned on the observed `resourceVersion`.

pub(crate) mod api;
#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod lock;
pub(crate) mod record;
#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// client-go's default lease duration (`LeaseDuration`): 15 s.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's default renew deadline (`RenewDeadline`): 10 s.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's default retry period (`RetryPeriod`): 2 s.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// How long a Lease lasts, how long its holder keeps trying to renew it, and how often it
/// does: the three timings of leader election and of every shard Lease.
///
/// The default is client-go's: 15 s lease, 10 s renew deadline, 2 s retry period. They must
/// satisfy `lease_duration > renew_deadline > 1.2 × retry_period > 0`
/// ([`validate`](Self::validate)): a holder that cannot renew gives the lease up (at the
/// renew deadline) before anyone else may take it over (after the lease duration), with
/// room for at least one retry. Sub-second timings are allowed (handy in tests); the lease
/// duration written to a Lease is rounded **up** to whole seconds.
///
/// How long a takeover takes, as with client-go:
/// - **the holder crashes** (or is cut off): a candidate takes over once it has seen the
///   Lease unchanged for `lease_duration`, at its next attempt. A standby waits 1 to 2.2
///   retry periods between attempts (client-go's jitter factor of 1.2), so it first sees the
///   last renewal up to 2.2 retry periods after it was written, and takes over up to 2.2
///   retry periods after `lease_duration` has passed from then: 15 to about 24 s after the
///   holder's last renewal by default;
/// - **the holder stops cleanly** (its run cancelled): it releases the Lease, and a candidate
///   takes it at its next attempt, at most 2.2 retry periods later (up to 4.4 s by default;
///   often well under a second, as that attempt may be imminent);
/// - **the holder cannot renew** but runs: it stops leading at `renew_deadline`, before
///   anyone else may lead, so that two never lead at once.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::lease::LeaseTimings;
///
/// let timings = LeaseTimings::default();
/// assert_eq!(timings.lease_duration, Duration::from_secs(15));
/// assert_eq!(timings.renew_deadline, Duration::from_secs(10));
/// assert_eq!(timings.retry_period, Duration::from_secs(2));
/// assert!(timings.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTimings {
    /// How long a candidate waits, after it last saw the Lease's record change, before it
    /// may take the Lease over. Written to the Lease as `leaseDurationSeconds`.
    pub lease_duration: Duration,
    /// How long after sending its last successful renewal the holder keeps the Lease
    /// without another success. Must be shorter than `lease_duration`.
    pub renew_deadline: Duration,
    /// How often the holder renews, and how often others try to acquire.
    pub retry_period: Duration,
}

impl Default for LeaseTimings {
    fn default() -> Self {
        Self::new(
            DEFAULT_LEASE_DURATION,
            DEFAULT_RENEW_DEADLINE,
            DEFAULT_RETRY_PERIOD,
        )
    }
}

impl LeaseTimings {
    /// The three timings, in the order client-go's `LeaderElectionConfig` lists them (not
    /// checked here: see [`validate`](Self::validate)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::lease::LeaseTimings;
    ///
    /// let timings = LeaseTimings::new(Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2));
    /// assert_eq!(timings, LeaseTimings::default());
    /// ```
    pub const fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Self {
        Self {
            lease_duration,
            renew_deadline,
            retry_period,
        }
    }

    /// Checks `lease_duration > renew_deadline > 1.2 × retry_period > 0`, as client-go's
    /// `NewLeaderElector` does.
    ///
    /// # Errors
    /// The first [`TimingsError`] found.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::lease::{LeaseTimings, TimingsError};
    ///
    /// let timings = LeaseTimings { renew_deadline: Duration::from_secs(20), ..LeaseTimings::default() };
    /// assert!(matches!(timings.validate(), Err(TimingsError::RenewDeadlineNotBelowLeaseDuration { .. })));
    /// ```
    pub fn validate(&self) -> Result<(), TimingsError> {
        let Self {
            lease_duration,
            renew_deadline,
            retry_period,
        } = *self;
        if retry_period.is_zero() {
            return Err(TimingsError::ZeroRetryPeriod);
        }
        if lease_duration <= renew_deadline {
            return Err(TimingsError::RenewDeadlineNotBelowLeaseDuration {
                lease_duration,
                renew_deadline,
            });
        }
        if renew_deadline <= retry_period.mul_f64(1.2) {
            return Err(TimingsError::RenewDeadlineTooShort {
                renew_deadline,
                retry_period,
            });
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written to a Lease: the lease duration rounded up to
    /// whole seconds (so observers never wait less than the holder promised), at least 1.
    pub(crate) fn lease_seconds(&self) -> i32 {
        let d = self.lease_duration;
        let whole = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        i32::try_from(whole.max(1)).unwrap_or(i32::MAX)
    }
}

/// [`LeaseTimings`] that would let a holder that cannot renew overlap with the next one.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::lease::TimingsError;
///
/// assert_eq!(TimingsError::ZeroRetryPeriod.to_string(), "retry_period must be longer than zero");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimingsError {
    /// `renew_deadline` is not shorter than `lease_duration`, so a holder could still
    /// believe it holds the Lease after another replica took it over.
    #[error(
        "renew_deadline ({renew_deadline:?}) must be shorter than lease_duration ({lease_duration:?}), \
         or a deposed holder could overlap with the next one"
    )]
    RenewDeadlineNotBelowLeaseDuration {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// `renew_deadline` leaves no room for a retry (it must exceed 1.2 × `retry_period`).
    #[error(
        "renew_deadline ({renew_deadline:?}) must be longer than 1.2 × retry_period ({retry_period:?}), \
         or a single failed renewal deposes the holder"
    )]
    RenewDeadlineTooShort {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// `retry_period` is zero.
    #[error("retry_period must be longer than zero")]
    ZeroRetryPeriod,
}

/// Settings of a Lease holder (a [`LeaderElectionConfig`](crate::leader::LeaderElectionConfig),
/// or the Lease part of a [`ShardConfig`](crate::shard::ShardConfig)) that cannot work.
///
/// ```
/// use informer_runtime::lease::ConfigError;
/// let err = ConfigError::Empty { field: "identity" };
/// assert_eq!(err.to_string(), "identity must not be empty");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A name that must be set is empty.
    #[error("{field} must not be empty")]
    Empty {
        /// The field's name.
        field: &'static str,
    },
    /// The timings could let a deposed holder overlap with the next one.
    #[error(transparent)]
    Timings(#[from] TimingsError),
}

/// Checks a Lease holder's settings: every name in `names` (field, value) set, in order,
/// then the timings.
pub(crate) fn validate(
    names: &[(&'static str, &str)],
    timings: &LeaseTimings,
) -> Result<(), ConfigError> {
    if let Some((field, _)) = names.iter().find(|(_, value)| value.is_empty()) {
        return Err(ConfigError::Empty { field });
    }
    Ok(timings.validate()?)
}

/// Marks a `run` loop (of a leader elector or a shard manager) as running for as long as it
/// lives, so that a second concurrent `run` of the same handle can be refused.
pub(crate) struct RunningGuard<'a>(&'a AtomicBool);

impl<'a> RunningGuard<'a> {
    /// The guard, or `None` if `flag` says a run is already going.
    pub(crate) fn enter(flag: &'a AtomicBool) -> Option<Self> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Self(flag))
    }
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}
