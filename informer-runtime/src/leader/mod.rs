//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics.
//!
//! Several replicas of a controller run a [`LeaderElector`] on the same Lease; at most
//! one of them is [`LeaderState::Leading`] at a time, and its leadership is a *term*: a
//! [`CancellationToken`] that is cancelled when the term ends. Leader-only work runs
//! under the term token and stops when it is cancelled.
//!
//! # Guarantees
//!
//! - **At most one leader, assuming clocks run at the same rate.** Every write carries
//!   the observed `resourceVersion` (a concurrent writer gets 409 Conflict and loses).
//!   A candidate takes over a lease only after it has seen the *same* record, unchanged,
//!   for the record's `leaseDurationSeconds` on its **own** clock (client-go's rule: the
//!   remote `renewTime` is never compared with the local clock, so clock *offsets*
//!   between machines do not matter). A leader that has not completed a renewal within
//!   `renew_deadline` of *sending* it cancels its term; since
//!   `renew_deadline < lease_duration`, the term is cancelled before any other replica
//!   can take the lease over.
//! - **Release on clean shutdown.** When `run`'s cancellation token fires, the term is
//!   cancelled first, then (with `release_on_cancel`, the default) the Lease is written
//!   with no holder and a one-second duration, so a standby takes over at its next retry
//!   instead of waiting for the lease to expire. The release is one request, conditioned on
//!   the `resourceVersion` of the leader's own last write (client-go reads the Lease first);
//!   on a conflict it reads the Lease once and releases only if the record still names it.
//! - **Crash safety.** If the task running [`LeaderElector::run`] is dropped or aborted,
//!   the term is cancelled at once (nothing is written; the lease expires on its own).
//! - **A stuck leader is visible.** [`LeaderElector::check`] (client-go's `Check`) fails
//!   while this replica believes it leads but has seen no renewal succeed for longer than
//!   the lease duration plus a tolerance: its loop is no longer running, yet its term was
//!   never cancelled. Served on `/healthz` as `leaderElection` ([`HealthzAdaptor`]; a
//!   [`Manager`](crate::manager::Manager) with leader election does it by itself), it gets
//!   the process restarted.
//!
//! # Caveats
//!
//! - Cancelling the term token *asks* leader-only work to stop; work that ignores the
//!   token can still be running when another replica takes over. Stop promptly.
//! - A standby that starts up waits a full lease duration before taking over a lease
//!   whose holder crashed, because it cannot know how old the record is (client-go does
//!   the same).
//! - Identities must be unique per process: two electors with the same identity both
//!   consider themselves the holder (client-go's behaviour, which lets a restarted pod
//!   with the same name resume at once).
//!
//! The Lease itself (its record, the lock, the timings) is [`lease`](crate::lease), shared
//! with sharding.
//!
//! # Example
//!
//! ```no_run
//! use informer_runtime::leader::{CancellationToken, LeaderElectionConfig, LeaderElector, LeaderState};
//!
//! # async fn reconcile_everything(_stop: CancellationToken) {}
//! # async fn demo(client: kube::Client) {
//! let config = LeaderElectionConfig::new("my-controller", "default", "pod-a");
//! let elector = LeaderElector::new(client, config);
//! let shutdown = CancellationToken::new();
//! tokio::spawn({
//!     let elector = elector.clone();
//!     let shutdown = shutdown.clone();
//!     async move { elector.run(shutdown).await }
//! });
//! let mut states = elector.subscribe();
//! loop {
//!     let state = states.borrow_and_update().clone();
//!     if let LeaderState::Leading { term } = state {
//!         // Leader-only work (client-go's OnStartedLeading); returns once `term` is
//!         // cancelled: lost, or shut down.
//!         reconcile_everything(term).await;
//!     }
//!     // The channel outlives `run` (which may be called again), so it does not end the
//!     // loop: the shutdown does, as RunOrDie returns when its context is done.
//!     tokio::select! {
//!         () = shutdown.cancelled() => break,
//!         changed = states.changed() => if changed.is_err() { break },
//!     }
//! }
//! # }
//! ```

mod elector;
mod health;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use elector::LeaderElector;
pub use health::{DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE, HealthzAdaptor, LeaderCheckError};
pub use tokio_util::sync::CancellationToken;

use crate::lease::{ConfigError, LeaseTimings};

/// Settings of a [`LeaderElector`]: which Lease, who we are, and the [`LeaseTimings`].
///
/// [`LeaderElectionConfig::new`] gives client-go's defaults (15 s lease, 10 s renew
/// deadline, 2 s retry, release on cancel); [`LeaderElectionConfig::for_client`] also picks
/// the namespace and identity as controller-runtime does (the pod's namespace, the host name
/// with a random suffix). The timings must satisfy
/// `lease_duration > renew_deadline > 1.2 × retry_period > 0`
/// ([`LeaderElectionConfig::validate`]); see [`LeaseTimings`].
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::leader::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::new("my-controller", "default", "pod-a");
/// assert_eq!(config.timings.lease_duration, Duration::from_secs(15));
/// assert_eq!(config.timings.renew_deadline, Duration::from_secs(10));
/// assert_eq!(config.timings.retry_period, Duration::from_secs(2));
/// assert!(config.release_on_cancel);
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// This replica's identity, unique among the candidates (usually the pod name).
    pub identity: String,
    /// The lease duration, renew deadline and retry period. A standby waits a random 1 to
    /// 2.2 retry periods between attempts (client-go's jitter factor of 1.2); a leader renews
    /// every retry period.
    pub timings: LeaseTimings,
    /// Whether a clean shutdown releases the Lease so another replica takes over at once.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// A config with client-go's default timings and release on cancel.
    ///
    /// ```
    /// let config = informer_runtime::leader::LeaderElectionConfig::new("lock", "kube-system", "node-1");
    /// assert_eq!(config.lease_name, "lock");
    /// ```
    pub fn new(
        lease_name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            timings: LeaseTimings::default(),
            release_on_cancel: true,
        }
    }

    /// A config for the Lease `lease_name` with controller-runtime's defaults for the rest:
    /// the Lease in the client's default namespace (the pod's own namespace in a cluster,
    /// read from its service account; the kubeconfig context's namespace outside), and an
    /// identity of the host name (the pod name in a cluster) joined with `_` to a random
    /// suffix, unique per process; client-go's timings, release on cancel.
    ///
    /// ```
    /// # async fn demo(client: kube::Client) {
    /// use informer_runtime::leader::LeaderElectionConfig;
    /// let config = LeaderElectionConfig::for_client("my-controller", &client);
    /// assert_eq!(config.namespace, client.default_namespace());
    /// assert!(config.identity.contains('_'));
    /// # }
    /// ```
    pub fn for_client(lease_name: impl Into<String>, client: &kube::Client) -> Self {
        Self::new(lease_name, client.default_namespace(), default_identity())
    }

    /// Replaces the three timings (not checked here; see [`LeaderElectionConfig::validate`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::leader::LeaderElectionConfig;
    /// let config = LeaderElectionConfig::new("lock", "default", "a").with_timings(
    ///     Duration::from_millis(1000),
    ///     Duration::from_millis(700),
    ///     Duration::from_millis(100),
    /// );
    /// assert!(config.validate().is_ok());
    /// ```
    pub fn with_timings(
        mut self,
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Self {
        self.timings = LeaseTimings::new(lease_duration, renew_deadline, retry_period);
        self
    }

    /// Checks the config as client-go's `NewLeaderElector` does: names not empty and
    /// valid [`LeaseTimings`].
    ///
    /// # Errors
    /// The first [`ConfigError`] found.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::lease::{ConfigError, TimingsError};
    /// use informer_runtime::leader::LeaderElectionConfig;
    /// let mut config = LeaderElectionConfig::new("lock", "default", "a");
    /// config.timings.renew_deadline = Duration::from_secs(20);
    /// assert!(matches!(
    ///     config.validate(),
    ///     Err(ConfigError::Timings(TimingsError::RenewDeadlineNotBelowLeaseDuration { .. }))
    /// ));
    /// ```
    pub fn validate(&self) -> Result<(), ConfigError> {
        let names = [
            ("lease_name", self.lease_name.as_str()),
            ("namespace", &self.namespace),
            ("identity", &self.identity),
        ];
        crate::lease::validate(&names, &self.timings)
    }
}

/// Where a [`LeaderElector`] stands, as published by [`LeaderElector::subscribe`].
///
/// `Leading` carries the term's token: it is cancelled when the term ends (renewal
/// failed for `renew_deadline`, the lease was lost, `run` was cancelled or dropped),
/// *before* the state changes back to `Standby` and before any other replica can take
/// the lease. A new term always has a new token.
///
/// ```
/// use informer_runtime::leader::{CancellationToken, LeaderState};
/// let state = LeaderState::Leading { term: CancellationToken::new() };
/// assert!(state.is_leading());
/// state.term().unwrap().cancel();
/// assert!(!state.is_leading(), "a cancelled term no longer leads");
/// assert_eq!(LeaderState::Standby { holder: Some("pod-b".into()) }.holder(), Some("pod-b"));
/// ```
#[derive(Clone, Debug)]
pub enum LeaderState {
    /// Not leading.
    Standby {
        /// The holder named in the last observed record, if any (possibly an expired
        /// one, or this replica itself right after it stepped down).
        holder: Option<String>,
    },
    /// Leading until `term` is cancelled.
    Leading {
        /// Cancelled when this term ends.
        term: CancellationToken,
    },
}

impl LeaderState {
    /// `Leading` with a term that is not cancelled yet.
    ///
    /// ```
    /// use informer_runtime::leader::LeaderState;
    /// assert!(!LeaderState::Standby { holder: None }.is_leading());
    /// ```
    pub fn is_leading(&self) -> bool {
        matches!(self, LeaderState::Leading { term } if !term.is_cancelled())
    }

    /// The term's token when `Leading`.
    ///
    /// ```
    /// use informer_runtime::leader::LeaderState;
    /// assert!(LeaderState::Standby { holder: None }.term().is_none());
    /// ```
    pub fn term(&self) -> Option<&CancellationToken> {
        match self {
            LeaderState::Leading { term } => Some(term),
            LeaderState::Standby { .. } => None,
        }
    }

    /// The observed holder when `Standby`.
    ///
    /// ```
    /// use informer_runtime::leader::LeaderState;
    /// assert_eq!(LeaderState::Standby { holder: None }.holder(), None);
    /// ```
    pub fn holder(&self) -> Option<&str> {
        match self {
            LeaderState::Standby { holder } => holder.as_deref(),
            LeaderState::Leading { .. } => None,
        }
    }
}

/// This process's default identity: the host name (a pod's name in a cluster), `_`, and a
/// random suffix, as controller-runtime's `hostname_<uuid>`.
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}_{:016x}", rand::random::<u64>())
}
