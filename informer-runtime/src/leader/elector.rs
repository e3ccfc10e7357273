//! The acquire / renew / step-down loop.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

use super::{LeaderCheckError, LeaderElectionConfig, LeaderState};
use crate::api_error::brief;
use crate::jitter::jitter;
use crate::lease::api::{KubeLeases, LeaseApi};
use crate::lease::lock::LeaseLock;
use crate::lease::{ConfigError, RunningGuard};

/// How far a standby stretches its wait between attempts, as a fraction of the retry period:
/// client-go's `JitterFactor` (its `acquire` loop is `wait.JitterUntil(.., RetryPeriod, 1.2,
/// ..)`), so a standby waits a uniform 1 to 2.2 retry periods, 1.6 on average. The validity
/// rule `renew_deadline > 1.2 × retry_period` is the same factor. Renewals are not jittered.
pub(crate) const STANDBY_JITTER: f64 = 1.2;

/// Runs leader election for one replica on one Lease.
///
/// Cheap to clone (clones share the same election). Start it with
/// [`LeaderElector::run`]; watch the outcome with [`LeaderElector::subscribe`] or
/// [`LeaderElector::is_leader`]. See the [module documentation](super) for the
/// guarantees.
///
/// The loop, every `retry_period` (a standby waits between 1 and 2.2 retry periods,
/// client-go's `JitterFactor` of 1.2):
/// - while leading: replace the Lease with a new `renewTime`, conditioned on the
///   `resourceVersion` of its own last write (if that fails, with a conflict or any
///   other error, it reads the Lease and retries once with the fresh version if the
///   record still names it, as client-go's fast path does); the term is
///   cancelled as soon as `renew_deadline` has passed since the last renewal that
///   succeeded was *sent* (an attempt still in flight is abandoned at that point), or at
///   once if the Lease turns out to be held by someone else;
/// - while standing by: read the Lease; create it if absent, take it over if it is free
///   or its record has not changed for `leaseDurationSeconds` on this replica's clock.
///
/// ```no_run
/// use informer_runtime::leader::{CancellationToken, LeaderElectionConfig, LeaderElector};
///
/// # async fn demo(client: kube::Client) {
/// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
/// let shutdown = CancellationToken::new();
/// let task = tokio::spawn({
///     let elector = elector.clone();
///     let shutdown = shutdown.clone();
///     async move { elector.run(shutdown).await }
/// });
/// // ...
/// shutdown.cancel(); // cancels the term, then releases the Lease
/// task.await.unwrap();
/// assert!(!elector.is_leader());
/// # }
/// ```
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

struct Inner {
    api: Arc<dyn LeaseApi>,
    config: LeaderElectionConfig,
    state: watch::Sender<LeaderState>,
    running: AtomicBool,
    /// When the last renewal (or acquisition) that succeeded was seen to succeed, on tokio's
    /// clock; `None` before the first. Written before a term's `Leading` is published.
    last_renewed: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("state", &*self.inner.state.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `config.lease_name` in `config.namespace`, talking to the API
    /// server through `client`. Nothing happens until [`LeaderElector::run`].
    ///
    /// # Panics
    /// If the config is invalid ([`LeaderElectionConfig::validate`]); this is a
    /// programmer error. Use [`LeaderElector::try_new`] to get the error instead.
    ///
    /// ```no_run
    /// # use informer_runtime::leader::{LeaderElectionConfig, LeaderElector};
    /// # fn demo(client: kube::Client) {
    /// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
    /// assert!(!elector.is_leader());
    /// # }
    /// ```
    pub fn new(client: kube::Client, config: LeaderElectionConfig) -> Self {
        match Self::try_new(client, config) {
            Ok(elector) => elector,
            Err(err) => panic!("invalid LeaderElectionConfig: {err}"),
        }
    }

    /// Like [`LeaderElector::new`], returning the config error instead of panicking.
    ///
    /// # Errors
    /// [`ConfigError`] if [`LeaderElectionConfig::validate`] fails.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use informer_runtime::leader::{LeaderElectionConfig, LeaderElector};
    /// # fn demo(client: kube::Client) {
    /// let config = LeaderElectionConfig::new("lock", "default", "")
    ///     .with_timings(Duration::from_secs(15), Duration::from_secs(10), Duration::from_secs(2));
    /// assert!(LeaderElector::try_new(client, config).is_err(), "empty identity");
    /// # }
    /// ```
    pub fn try_new(
        client: kube::Client,
        config: LeaderElectionConfig,
    ) -> Result<Self, ConfigError> {
        Self::with_api(KubeLeases::in_namespace(client, &config.namespace), config)
    }

    pub(crate) fn with_api(
        api: Arc<dyn LeaseApi>,
        config: LeaderElectionConfig,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inner {
                api,
                config,
                state: watch::channel(LeaderState::Standby { holder: None }).0,
                running: AtomicBool::new(false),
                last_renewed: Mutex::new(None),
            }),
        })
    }

    /// The config this elector was built with.
    ///
    /// ```no_run
    /// # use informer_runtime::leader::{LeaderElectionConfig, LeaderElector};
    /// # fn demo(client: kube::Client) {
    /// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
    /// assert_eq!(elector.config().identity, "pod-a");
    /// # }
    /// ```
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.inner.config
    }

    /// Acquires, renews and (on cancel) releases the lease until `cancel` fires.
    ///
    /// Returns after `cancel` fires and, with `release_on_cancel`, after the release
    /// was written (or failed, or took longer than `renew_deadline`). The term token
    /// of a `Leading` state is a child of `cancel`, so it is cancelled the moment
    /// `cancel` is. API errors are logged and retried every `retry_period`; they never
    /// end the loop. Dropping the future (aborting its task) cancels the term at once
    /// without releasing the Lease.
    ///
    /// At most one `run` per elector at a time: a second concurrent call logs an error
    /// and returns at once. After `run` returns it can be called again.
    ///
    /// ```no_run
    /// # use informer_runtime::leader::{CancellationToken, LeaderElectionConfig, LeaderElector};
    /// # async fn demo(client: kube::Client) {
    /// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
    /// let cancel = CancellationToken::new();
    /// cancel.cancel();
    /// elector.run(cancel).await; // returns at once: already cancelled
    /// # }
    /// ```
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &*self.inner;
        let Some(_running) = RunningGuard::enter(&inner.running) else {
            tracing::error!(
                lease = %inner.config.lease_name,
                "LeaderElector::run is already running for this elector; ignoring the second call"
            );
            return;
        };
        let config = &inner.config;
        let mut lock = LeaseLock::new(
            inner.api.clone(),
            config.lease_name.clone(),
            Arc::from(config.identity.as_str()),
            config.timings.lease_seconds(),
        );
        let mut term = Term {
            state: &inner.state,
            last_renewed: &inner.last_renewed,
            token: None,
            last_renew: Instant::now(),
        };
        let mut acquire_failures = AcquireFailures::default();
        tracing::info!(
            lease = %config.lease_name,
            identity = %config.identity,
            "attempting to acquire the lease"
        );
        'run: loop {
            let start = Instant::now();
            let bound = term
                .deadline(config.timings.renew_deadline)
                .unwrap_or(start + config.timings.renew_deadline);
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run,
                result = timeout_at(bound, lock.try_acquire_or_renew()) => result,
            };
            match result {
                Ok(Ok(true)) => {
                    acquire_failures.succeeded();
                    term.renewed(start, &cancel, config);
                }
                Ok(Ok(false)) => {
                    acquire_failures.succeeded();
                    if term.is_leading() {
                        tracing::warn!(
                            lease = %config.lease_name,
                            identity = %config.identity,
                            holder = ?lock.holder(),
                            "lost the lease to another holder; stepping down"
                        );
                        term.step_down(lock.holder());
                    }
                }
                Ok(Err(err)) => {
                    if term.is_leading() {
                        tracing::warn!(lease = %config.lease_name, error = %err, "failed to renew the lease");
                    } else {
                        let hint = AcquireHint::of(&err);
                        acquire_failures.failed(config, &brief(&err), hint, Instant::now());
                    }
                }
                Err(_elapsed) => {
                    tracing::warn!(lease = %config.lease_name, "lease request timed out");
                }
            }
            term.check_deadline(config, lock.holder());
            if !term.is_leading() {
                term.publish_standby(lock.holder(), config);
            }
            let next = if term.is_leading() {
                start + config.timings.retry_period
            } else {
                Instant::now() + jitter(config.timings.retry_period, STANDBY_JITTER)
            };
            // Sleep until the next attempt, stepping down exactly at the renew
            // deadline if it comes first.
            loop {
                let deadline = term.deadline(config.timings.renew_deadline);
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => break 'run,
                    () = sleep_until(deadline.unwrap_or(next)), if deadline.is_some_and(|d| d < next) => {
                        term.check_deadline(config, lock.holder());
                        term.publish_standby(lock.holder(), config);
                    }
                    () = sleep_until(next) => break,
                }
            }
        }
        // Cancelled: the term token (a child of `cancel`) is already cancelled.
        term.step_down(lock.holder());
        if config.release_on_cancel && lock.held_by_me() {
            match timeout(config.timings.renew_deadline, lock.release()).await {
                Ok(Ok(true)) => tracing::info!(
                    lease = %config.lease_name,
                    identity = %config.identity,
                    "released the lease"
                ),
                Ok(Ok(false)) => {}
                Ok(Err(err)) => {
                    tracing::warn!(lease = %config.lease_name, error = %err, "failed to release the lease");
                }
                Err(_elapsed) => {
                    tracing::warn!(lease = %config.lease_name, "releasing the lease timed out");
                }
            }
        }
        term.publish_standby(lock.holder(), config);
    }

    /// A receiver of this elector's [`LeaderState`]; it sees every change from now on
    /// (intermediate states may be skipped if it does not keep up, as with any
    /// `watch` channel — the term token tells the truth about a term either way).
    ///
    /// The channel stays open when [`run`](Self::run) returns (it may be run again), so a
    /// loop over it ends on the token given to `run`, not on the channel:
    ///
    /// ```no_run
    /// # use informer_runtime::leader::{CancellationToken, LeaderElectionConfig, LeaderElector, LeaderState};
    /// # async fn demo(elector: LeaderElector, shutdown: CancellationToken) {
    /// let mut states = elector.subscribe();
    /// loop {
    ///     tokio::select! {
    ///         () = shutdown.cancelled() => break,
    ///         changed = states.changed() => if changed.is_err() { break },
    ///     }
    ///     if let LeaderState::Leading { term } = &*states.borrow_and_update() {
    ///         println!("leading until {:?} is cancelled", term);
    ///     }
    /// }
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.inner.state.subscribe()
    }

    /// Whether this replica leads right now (a term that is not cancelled).
    ///
    /// ```no_run
    /// # fn demo(elector: informer_runtime::leader::LeaderElector) {
    /// if elector.is_leader() { /* ... */ }
    /// # }
    /// ```
    pub fn is_leader(&self) -> bool {
        self.inner.state.borrow().is_leading()
    }

    /// The identity of the last observed leader (client-go's `GetLeader`), for logs and
    /// monitoring: this replica's identity while it leads, otherwise the holder named in
    /// the last Lease record it read. `None` before any record was read, when the Lease
    /// does not exist or names no holder (it was released), and after `run` returned
    /// having released it.
    ///
    /// The holder of a record is not a leader that is known to be alive: a standby reports
    /// the holder of an expired lease until it takes the lease over, as Go does. Right
    /// after this replica steps down it may still report itself, while
    /// [`is_leader`](Self::is_leader) is already `false`.
    ///
    /// ```no_run
    /// # fn demo(elector: informer_runtime::leader::LeaderElector) {
    /// match elector.leader() {
    ///     Some(leader) => println!("the leader is {leader}"),
    ///     None => println!("no leader observed yet"),
    /// }
    /// # }
    /// ```
    pub fn leader(&self) -> Option<String> {
        match &*self.inner.state.borrow() {
            LeaderState::Leading { .. } => Some(self.inner.config.identity.clone()),
            LeaderState::Standby { holder } => holder.clone(),
        }
    }

    /// A liveness check (client-go's `LeaderElector.Check`): fails when this replica still
    /// believes it leads but has not seen a renewal succeed for longer than the lease
    /// duration plus `max_tolerable_expired_lease`.
    ///
    /// A healthy leader never fails it: it renews every `retry_period` and steps down
    /// by itself once `renew_deadline` (shorter than the lease duration) has passed
    /// without a renewal. So a failure means the election loop is stuck (its task is
    /// no longer polled, say because a thread of the runtime is blocked) while other
    /// replicas may already have taken the lease over: serve it on `/healthz` so that
    /// kubelet restarts the process. A replica that does not lead (standby, stepped down,
    /// [`run`](Self::run) never started or returned) always passes. The elapsed time is
    /// read on tokio's clock, as the loop reads it; at exactly the limit the check still
    /// passes.
    ///
    /// # Errors
    /// [`LeaderCheckError`] (`failed election to renew leadership on lease <name>`) when
    /// leading and the last successful renewal is older than the limit.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use informer_runtime::leader::{LeaderElectionConfig, LeaderElector};
    /// # fn demo(client: kube::Client) {
    /// let elector = LeaderElector::new(client, LeaderElectionConfig::new("lock", "default", "pod-a"));
    /// assert!(elector.check(Duration::from_secs(20)).is_ok(), "not leading: passes");
    /// # }
    /// ```
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), LeaderCheckError> {
        let inner = &*self.inner;
        if !inner.state.borrow().is_leading() {
            return Ok(());
        }
        // A term publishes `Leading` only after it has stored its renewal time.
        let Some(last_renewed) = *inner
            .last_renewed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        else {
            return Ok(());
        };
        let since_renewal = Instant::now().saturating_duration_since(last_renewed);
        let limit = inner
            .config
            .timings
            .lease_duration
            .saturating_add(max_tolerable_expired_lease);
        if since_renewal > limit {
            return Err(LeaderCheckError {
                lease_name: inner.config.lease_name.clone(),
                since_renewal,
                limit,
            });
        }
        Ok(())
    }
}

/// The current term, if any. Dropping it (the `run` future dropped) cancels the term.
struct Term<'a> {
    state: &'a watch::Sender<LeaderState>,
    /// Where [`LeaderElector::check`] reads when the last renewal succeeded.
    last_renewed: &'a Mutex<Option<Instant>>,
    token: Option<CancellationToken>,
    /// When the last successful renewal (or the acquisition) was sent.
    last_renew: Instant,
}

impl Term<'_> {
    fn is_leading(&self) -> bool {
        self.token.is_some()
    }

    fn deadline(&self, renew_deadline: Duration) -> Option<Instant> {
        self.token
            .as_ref()
            .map(|_| self.last_renew + renew_deadline)
    }

    /// A write sent at `sent` succeeded: start a term if there is none.
    fn renewed(
        &mut self,
        sent: Instant,
        parent: &CancellationToken,
        config: &LeaderElectionConfig,
    ) {
        self.last_renew = sent;
        *self
            .last_renewed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
        if self.token.is_none() {
            let token = parent.child_token();
            self.token = Some(token.clone());
            tracing::info!(
                lease = %config.lease_name,
                identity = %config.identity,
                "acquired the lease; leading"
            );
            self.state
                .send_replace(LeaderState::Leading { term: token });
        }
    }

    fn check_deadline(&mut self, config: &LeaderElectionConfig, holder: Option<&str>) {
        if let Some(deadline) = self.deadline(config.timings.renew_deadline)
            && Instant::now() >= deadline
        {
            tracing::warn!(
                lease = %config.lease_name,
                identity = %config.identity,
                renew_deadline = ?config.timings.renew_deadline,
                "no renewal succeeded within the renew deadline; stepping down"
            );
            self.step_down(holder);
        }
    }

    /// Ends the term: cancel the token first, then publish `Standby`.
    fn step_down(&mut self, holder: Option<&str>) {
        if let Some(token) = self.token.take() {
            token.cancel();
            self.state.send_replace(LeaderState::Standby {
                holder: holder.map(str::to_owned),
            });
        }
    }

    /// Publishes `Standby` with the Lease's holder; logs a new leader (client-go's "new
    /// leader elected").
    fn publish_standby(&self, holder: Option<&str>, config: &LeaderElectionConfig) {
        if self.token.is_some() {
            return;
        }
        let changed = self.state.send_if_modified(|state| match state {
            LeaderState::Standby { holder: current } if current.as_deref() == holder => false,
            _ => {
                *state = LeaderState::Standby {
                    holder: holder.map(str::to_owned),
                };
                true
            }
        });
        if changed
            && let Some(holder) = holder
            && holder != config.identity
        {
            tracing::info!(
                lease = %config.lease_name,
                identity = %config.identity,
                leader = %holder,
                "new leader elected"
            );
        }
    }
}

impl Drop for Term<'_> {
    fn drop(&mut self) {
        if let Some(token) = self.token.take() {
            token.cancel();
            self.state
                .send_replace(LeaderState::Standby { holder: None });
        }
    }
}

/// How often a replica that keeps failing to read or take its Lease says so.
const ACQUIRE_REPORT_EVERY: Duration = Duration::from_secs(60);

/// Failed attempts to acquire the Lease (a request that failed, not a Lease held by another
/// replica), reported as client-go's "error retrieving resource lock" is, but at most once a
/// minute: a replica that can never lead (RBAC forbids Leases, the API is not served) would
/// otherwise wait in silence, its controllers idle and its probes healthy.
#[derive(Default)]
struct AcquireFailures {
    /// Failures since the last success.
    count: u64,
    /// When they were last reported.
    reported: Option<Instant>,
}

/// What a failed attempt's report adds to the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AcquireHint {
    None,
    /// A 403: the access the replica needs.
    Forbidden,
    /// A 404 that is not of the namespace: the API server serves no Leases.
    NotServed,
}

impl AcquireHint {
    fn of(error: &kube::Error) -> Self {
        match error {
            kube::Error::Api(s) if s.code == 403 => Self::Forbidden,
            kube::Error::Api(s)
                if s.code == 404 && s.details.as_ref().is_none_or(|d| d.kind != "namespaces") =>
            {
                Self::NotServed
            }
            _ => Self::None,
        }
    }
}

impl AcquireFailures {
    /// A failed attempt, reported with what `hint` says (the access needed, or that Leases
    /// are not served).
    fn failed(
        &mut self,
        config: &LeaderElectionConfig,
        error: &str,
        hint: AcquireHint,
        now: Instant,
    ) {
        self.count += 1;
        if self
            .reported
            .is_some_and(|at| now.saturating_duration_since(at) < ACQUIRE_REPORT_EVERY)
        {
            tracing::debug!(lease = %config.lease_name, %error, "failed to acquire the lease");
            return;
        }
        self.reported = Some(now);
        let (lease, namespace, failures) = (&config.lease_name, &config.namespace, self.count);
        let access = match hint {
            AcquireHint::Forbidden => format!(
                "; it needs get, create and update on leases.coordination.k8s.io in namespace {namespace}"
            ),
            AcquireHint::NotServed => "; the API server does not serve leases.coordination.k8s.io/v1 (a server of custom resources only, such as EnvTest's, has none)".to_string(),
            AcquireHint::None => String::new(),
        };
        let attempts = if failures == 1 { "attempt" } else { "attempts" };
        tracing::warn!(
            lease = %lease,
            namespace = %namespace,
            identity = %config.identity,
            failures,
            %error,
            "cannot acquire the leader election lease: this replica does not lead (its controllers and leader-only tasks wait){access}",
        );
        crate::fallback::report(format_args!(
            "leader election: cannot acquire lease {namespace}/{lease} ({failures} failed {attempts} so far): {error}; this replica does not lead until it can{access}"
        ));
    }

    fn succeeded(&mut self) {
        if self.count > 0 && self.reported.is_some() {
            tracing::info!(
                failures = self.count,
                "the leader election lease can be acquired again"
            );
        }
        *self = Self::default();
    }
}

#[cfg(test)]
mod hint_tests {
    use super::AcquireHint;
    use kube::core::{Status, response::StatusDetails};

    fn api_error(code: u16, details_kind: Option<&str>) -> kube::Error {
        let mut status = Status::failure("x", "NotFound");
        status.code = code;
        status.details = details_kind.map(|kind| {
            serde_json::from_value::<StatusDetails>(serde_json::json!({"kind": kind}))
                .expect("details")
        });
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn a_failed_acquisition_says_what_access_is_needed_or_that_leases_are_not_served() {
        assert_eq!(
            AcquireHint::of(&api_error(403, None)),
            AcquireHint::Forbidden
        );
        assert_eq!(
            AcquireHint::of(&api_error(404, None)),
            AcquireHint::NotServed,
            "a 404 of the Lease API itself (a CRD-only server)"
        );
        assert_eq!(
            AcquireHint::of(&api_error(404, Some("namespaces"))),
            AcquireHint::None,
            "a missing namespace says so itself"
        );
        assert_eq!(AcquireHint::of(&api_error(500, None)), AcquireHint::None);
    }
}
