//! Sharding: N shards, each guarded by its own Lease; a replica reconciles only the
//! keys whose stable hash falls in the shards it holds.
//!
//! [`shard_of`] maps a key to a shard with a hash that never changes.
//! [`ShardManager`] holds a fair share of the shards' Leases and moves shards between
//! replicas as they come and go.
//!
//! # How shards are shared
//!
//! Every replica keeps a *membership Lease* (`{lease_prefix}-member-{hash of identity}`)
//! renewed every `retry_period`; a replica counts as live while its membership record
//! keeps changing (observed on the observer's own clock, like leader election). Every
//! `retry_period` a replica lists the Leases of its namespace (one request), counts the
//! live replicas *m*, and aims at holding `N / m` shards, plus one for the first `N % m`
//! identities in sorted order (so the targets sum to N and the largest is
//! `ceil(N / m)`):
//! - above its target, it hands its least preferred shards off: they stop being
//!   [owned](ShardManager::owns) at once, stay renewed for `handoff_delay` so work in
//!   flight can finish, and are then released (written free), so another replica takes
//!   them at its next retry;
//! - below its target, it acquires shards whose Lease is absent, free, or expired,
//!   trying them in its own rendezvous-hash order, so replicas racing for free shards
//!   mostly try different ones.
//!
//! Each shard Lease is held exactly like a leader-election Lease (both build on
//! [`lease`](crate::lease); see [`leader`](crate::leader)): writes carry the observed `resourceVersion`; a holder
//! whose renewal has not succeeded within `renew_deadline` of sending it stops owning the
//! shard before anyone else can take it; a dead replica's shards expire after
//! `lease_duration` and the survivors pick them up. Shards are held by at most one
//! replica at a time (same clock-rate assumption as leader election); a shard may be held
//! by nobody for a while (between a crash and the lease's expiry).
//!
//! RBAC: `get`, `list`, `create`, `update` and `delete` on `leases` in the namespace
//! (delete is for membership Leases: its own on shutdown, and ones unchanged for three
//! lease durations).

mod balance;
mod coordinator;
#[cfg(test)]
mod tests;

use std::time::Duration;

use informer_core::ObjectKey;

use crate::lease::{ConfigError, DEFAULT_RETRY_PERIOD, LeaseTimings};

pub use coordinator::ShardManager;

/// The shard of `key` among `shards` shards: FNV-1a 64 of the key's string form
/// (`namespace/name`, or `name` when cluster scoped), modulo `shards`.
///
/// **Stable**: the same key and shard count give the same shard in every process,
/// on every platform and in every release of this crate (changing it would move keys
/// between replicas during a rolling upgrade). `shards == 0` is treated as 1.
///
/// ```
/// use informer_core::ObjectKey;
/// use informer_runtime::shard::shard_of;
///
/// let key = ObjectKey::new(Some("default"), "web-0");
/// assert_eq!(shard_of(&key, 16), 6); // fixed forever
/// assert!(shard_of(&key, 3) < 3);
/// assert_eq!(shard_of(&key, 1), 0);
/// ```
pub fn shard_of(key: &ObjectKey, shards: u32) -> u32 {
    let shards = u64::from(shards.max(1));
    // The remainder is below `shards`, which fits in u32.
    u32::try_from(balance::key_hash(key) % shards).unwrap_or(0)
}

/// Settings of a [`ShardManager`].
///
/// Shard `i`'s Lease is `{lease_prefix}-{i}`; membership Leases are
/// `{lease_prefix}-member-{16 hex digits}`. The [`LeaseTimings`] mean what they mean in
/// leader election and have the same defaults (15 s / 10 s / 2 s); `handoff_delay`
/// (default 2 s) is how long a shard that is handed off to another replica stays leased,
/// but not owned, before it is released.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::shard::ShardConfig;
///
/// let config = ShardConfig::new(16, "my-controller", "default", "pod-a");
/// assert_eq!(config.timings.lease_duration, Duration::from_secs(15));
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardConfig {
    /// The number of shards (at least 1). All replicas must agree on it.
    pub shards: u32,
    /// The prefix of the Lease names (a lowercase DNS name fragment).
    pub lease_prefix: String,
    /// The namespace of the Leases.
    pub namespace: String,
    /// This replica's identity, unique among the replicas.
    pub identity: String,
    /// The lease duration, renew deadline and retry period of every Lease; Leases are
    /// renewed, listed and rebalanced every retry period.
    pub timings: LeaseTimings,
    /// Whether a clean shutdown releases the held shards (and deletes the membership
    /// Lease) so other replicas take over at once.
    pub release_on_cancel: bool,
    /// How long a handed-off shard stays leased (but not owned) before it is released.
    pub handoff_delay: Duration,
}

impl ShardConfig {
    /// A config with client-go's default timings, a 2 s handoff delay and release on cancel.
    ///
    /// ```
    /// let config = informer_runtime::shard::ShardConfig::new(4, "ctl", "default", "pod-a");
    /// assert_eq!(config.shards, 4);
    /// ```
    pub fn new(
        shards: u32,
        lease_prefix: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        Self {
            shards,
            lease_prefix: lease_prefix.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            timings: LeaseTimings::default(),
            release_on_cancel: true,
            handoff_delay: DEFAULT_RETRY_PERIOD,
        }
    }

    /// Replaces the three lease timings (not `handoff_delay`; not checked here).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::shard::ShardConfig;
    /// let config = ShardConfig::new(4, "ctl", "default", "pod-a").with_timings(
    ///     Duration::from_secs(1),
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

    /// Checks the config: at least one shard, a valid lease prefix, non-empty namespace
    /// and identity, and valid [`LeaseTimings`].
    ///
    /// # Errors
    /// The first [`ShardConfigError`] found.
    ///
    /// ```
    /// use informer_runtime::shard::{ShardConfig, ShardConfigError};
    /// let config = ShardConfig::new(0, "ctl", "default", "pod-a");
    /// assert_eq!(config.validate(), Err(ShardConfigError::ZeroShards));
    /// ```
    pub fn validate(&self) -> Result<(), ShardConfigError> {
        if self.shards == 0 {
            return Err(ShardConfigError::ZeroShards);
        }
        if !balance::is_valid_prefix(&self.lease_prefix) {
            return Err(ShardConfigError::InvalidLeasePrefix {
                prefix: self.lease_prefix.clone(),
            });
        }
        let names = [
            ("namespace", self.namespace.as_str()),
            ("identity", &self.identity),
        ];
        Ok(crate::lease::validate(&names, &self.timings)?)
    }
}

/// An invalid [`ShardConfig`].
///
/// ```
/// use informer_runtime::shard::ShardConfigError;
/// assert_eq!(ShardConfigError::ZeroShards.to_string(), "shards must be at least 1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardConfigError {
    /// Zero shards.
    #[error("shards must be at least 1")]
    ZeroShards,
    /// A lease prefix that cannot start a Lease name.
    #[error(
        "lease prefix {prefix:?} must be a lowercase DNS name fragment ([a-z0-9] first and last, \
         [-a-z0-9.] between) of at most 229 characters"
    )]
    InvalidLeasePrefix {
        /// The rejected prefix.
        prefix: String,
    },
    /// The namespace or identity is empty, or the timings could let a replica that lost a
    /// shard overlap with its next holder.
    #[error(transparent)]
    Lease(#[from] ConfigError),
}
