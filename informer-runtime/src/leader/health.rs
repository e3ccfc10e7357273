//! The liveness side of leader election: [`LeaderElector::check`]'s error, and
//! [`HealthzAdaptor`], a check that can be registered before its elector exists (client-go's
//! `healthzadaptor.go`).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::LeaderElector;

/// How long past the lease duration a leader may go without a renewal before
/// [`LeaderElector::check`] fails, as kube-controller-manager and kube-scheduler configure
/// client-go's `NewLeaderHealthzAdaptor`: 20 seconds.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(informer_runtime::leader::DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE, Duration::from_secs(20));
/// ```
pub const DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE: Duration = Duration::from_secs(20);

/// A leader that has not renewed its lease for too long: [`LeaderElector::check`] failed.
///
/// Displays as client-go's error, `failed election to renew leadership on lease <name>`;
/// the fields say by how much.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::leader::LeaderCheckError;
/// let error = LeaderCheckError {
///     lease_name: "lock".into(),
///     since_renewal: Duration::from_secs(40),
///     limit: Duration::from_secs(35),
/// };
/// assert_eq!(error.to_string(), "failed election to renew leadership on lease lock");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {lease_name}")]
pub struct LeaderCheckError {
    /// The Lease's name ([`LeaderElectionConfig::lease_name`](super::LeaderElectionConfig::lease_name)).
    pub lease_name: String,
    /// How long ago the last renewal was seen to succeed (tokio's clock).
    pub since_renewal: Duration,
    /// The limit it passed: the lease duration plus the tolerance.
    pub limit: Duration,
}

/// A leader-election health check that exists before its elector: client-go's
/// `HealthzAdaptor`. Register it on `/healthz` at start-up (under [`HealthzAdaptor::NAME`]),
/// build the elector later and [`set_leader_elector`](Self::set_leader_elector): until then,
/// and whenever the elector does not lead, [`check`](Self::check) passes; afterwards it is
/// [`LeaderElector::check`] with the adaptor's tolerance.
///
/// Cheap to clone; clones share the elector slot. A
/// [`Manager`](crate::manager::Manager) with leader election registers the same check by
/// itself; this is for an elector run outside a manager.
///
/// ```
/// # async fn demo(client: kube::Client) -> Result<(), informer_runtime::manager::ManagerError> {
/// use informer_runtime::factory::InformerFactory;
/// use informer_runtime::leader::{
///     DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE, HealthzAdaptor, LeaderElectionConfig, LeaderElector,
/// };
/// use informer_runtime::manager::Manager;
///
/// let adaptor = HealthzAdaptor::new(DEFAULT_MAX_TOLERABLE_EXPIRED_LEASE);
/// let mut manager = Manager::with_factory(InformerFactory::new(client.clone()));
/// manager.add_healthz_check(HealthzAdaptor::NAME, {
///     let adaptor = adaptor.clone();
///     move || adaptor.check().map_err(Into::into)
/// })?;
/// assert!(adaptor.check().is_ok(), "no elector yet: passes");
/// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
/// adaptor.set_leader_elector(elector);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HealthzAdaptor {
    elector: Arc<Mutex<Option<LeaderElector>>>,
    max_tolerable_expired_lease: Duration,
}

impl HealthzAdaptor {
    /// The check's name, as client-go's adaptor and kube-controller-manager name it.
    ///
    /// ```
    /// assert_eq!(informer_runtime::leader::HealthzAdaptor::NAME, "leaderElection");
    /// ```
    pub const NAME: &'static str = "leaderElection";

    /// An adaptor with no elector yet that, once it has one, tolerates
    /// `max_tolerable_expired_lease` past the lease duration without a renewal
    /// (client-go's `NewLeaderHealthzAdaptor(timeout)`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_runtime::leader::HealthzAdaptor;
    /// let adaptor = HealthzAdaptor::new(Duration::from_secs(20));
    /// assert!(adaptor.leader_elector().is_none());
    /// assert_eq!(adaptor.max_tolerable_expired_lease(), Duration::from_secs(20));
    /// ```
    pub fn new(max_tolerable_expired_lease: Duration) -> Self {
        Self {
            elector: Arc::new(Mutex::new(None)),
            max_tolerable_expired_lease,
        }
    }

    /// Ties `elector` to this adaptor (and its clones), replacing any earlier one.
    ///
    /// ```no_run
    /// # use informer_runtime::leader::{HealthzAdaptor, LeaderElectionConfig, LeaderElector};
    /// # fn demo(client: kube::Client) {
    /// let adaptor = HealthzAdaptor::new(std::time::Duration::from_secs(20));
    /// adaptor.set_leader_elector(LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a")));
    /// assert!(adaptor.leader_elector().is_some());
    /// # }
    /// ```
    pub fn set_leader_elector(&self, elector: LeaderElector) {
        *self.slot() = Some(elector);
    }

    /// The elector set with [`set_leader_elector`](Self::set_leader_elector), if any.
    ///
    /// ```
    /// let adaptor = informer_runtime::leader::HealthzAdaptor::new(std::time::Duration::ZERO);
    /// assert!(adaptor.leader_elector().is_none());
    /// ```
    pub fn leader_elector(&self) -> Option<LeaderElector> {
        self.slot().clone()
    }

    /// The tolerance given to [`new`](Self::new).
    ///
    /// ```
    /// use std::time::Duration;
    /// let adaptor = informer_runtime::leader::HealthzAdaptor::new(Duration::from_secs(5));
    /// assert_eq!(adaptor.max_tolerable_expired_lease(), Duration::from_secs(5));
    /// ```
    pub fn max_tolerable_expired_lease(&self) -> Duration {
        self.max_tolerable_expired_lease
    }

    /// Passes without an elector; otherwise [`LeaderElector::check`] with the tolerance.
    ///
    /// # Errors
    /// [`LeaderCheckError`] from the elector's check.
    ///
    /// ```
    /// let adaptor = informer_runtime::leader::HealthzAdaptor::new(std::time::Duration::ZERO);
    /// assert!(adaptor.check().is_ok());
    /// ```
    pub fn check(&self) -> Result<(), LeaderCheckError> {
        // The elector is cloned out so that its check does not run under the slot's lock.
        match self.leader_elector() {
            Some(elector) => elector.check(self.max_tolerable_expired_lease),
            None => Ok(()),
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<LeaderElector>> {
        self.elector.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
