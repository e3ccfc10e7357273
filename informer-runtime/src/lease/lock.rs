//! One Lease used as a lock: client-go's `tryAcquireOrRenew` and `release`, with every
//! write conditioned on the observed `resourceVersion`.

use std::sync::Arc;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::api::{LeaseApi, is_conflict, is_not_found};
use super::record::{LeaseRecord, Observed};

/// A Lease used as a lock by one identity.
///
/// Invariant: every write is a create (fails if the Lease exists) or a replace
/// carrying the `resourceVersion` of the last observation (fails with 409 if anyone
/// wrote in between), so two identities can never both succeed in taking the lock
/// from the same observed state.
pub(crate) struct LeaseLock {
    api: Arc<dyn LeaseApi>,
    name: String,
    identity: Arc<str>,
    lease_seconds: i32,
    observed: Option<Observed>,
}

impl LeaseLock {
    pub(crate) fn new(
        api: Arc<dyn LeaseApi>,
        name: String,
        identity: Arc<str>,
        lease_seconds: i32,
    ) -> Self {
        Self {
            api,
            name,
            identity,
            lease_seconds,
            observed: None,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn observed(&self) -> Option<&Observed> {
        self.observed.as_ref()
    }

    /// The holder in the last observed record, if any.
    pub(crate) fn holder(&self) -> Option<&str> {
        self.observed.as_ref().and_then(Observed::holder)
    }

    /// Whether the last observed record names this identity as the holder
    /// (client-go's `IsLeader`).
    pub(crate) fn held_by_me(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|o| o.record.holder == *self.identity)
    }

    /// Records what a read (a get or a list) returned; `None` means the Lease does not exist.
    pub(crate) fn observe(&mut self, lease: Option<Lease>, now: Instant) {
        self.observed = lease.map(|lease| Observed::update(self.observed.take(), lease, now));
    }

    /// client-go's `tryAcquireOrRenew`: renews optimistically when this identity holds
    /// a valid lease, otherwise reads the Lease and acquires it if it is absent, free,
    /// expired (on this observer's clock) or already ours.
    ///
    /// `Ok(true)`: this identity holds the lease as of the write's response.
    /// `Ok(false)`: someone else holds it, or won a race for it.
    /// `Err`: the API failed; nothing is known.
    ///
    /// Validity is judged at the time the attempt started, before the read, as client-go
    /// does: a record seen to change is valid at least until the next attempt, even one
    /// with a lease duration of 0.
    pub(crate) async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let started = Instant::now();
        if self.held_by_me() && self.observed.as_ref().is_some_and(|o| o.is_valid(started)) {
            // Fast path: replace with the resourceVersion of our own last write.
            match self.write_over_observed().await {
                Ok(true) => return Ok(true),
                // Conflict: someone changed the Lease; fall back to reading it.
                Ok(false) => {}
                // Any other failure falls back to reading it too, as client-go's fast path
                // does: a transient error (or a write that succeeded but whose response was
                // lost) costs one read now, not a whole retry period of the renew deadline.
                Err(err) => tracing::warn!(
                    lease = %self.name,
                    error = %err,
                    "could not renew the lease from its last observation; reading it and trying again"
                ),
            }
        }
        let current = self.api.get(&self.name).await?;
        self.observe(current, Instant::now());
        self.acquire_observed_at(started).await
    }

    /// Acquires (or renews) from the last observation without reading first; used
    /// after a list has just observed the Lease.
    pub(crate) async fn acquire_observed(&mut self) -> Result<bool, kube::Error> {
        self.acquire_observed_at(Instant::now()).await
    }

    /// [`acquire_observed`](Self::acquire_observed), judging validity at `now`.
    async fn acquire_observed_at(&mut self, now: Instant) -> Result<bool, kube::Error> {
        match &self.observed {
            None => self.create().await,
            Some(o) if o.held_by_other(&self.identity, now) => Ok(false),
            Some(_) => self.write_over_observed().await,
        }
    }

    /// Gives the lease up if the last observation says this identity holds it:
    /// writes client-go's released record (no holder, one second) so another
    /// candidate can take it at once. `Ok(true)` if it was released by this call.
    pub(crate) async fn release(&mut self) -> Result<bool, kube::Error> {
        for attempt in 0..2 {
            if !self.held_by_me() {
                return Ok(false);
            }
            let Some(observed) = &self.observed else {
                return Ok(false);
            };
            let record = observed.record.released(Timestamp::now());
            let lease = with_record(&observed.lease, &record);
            match self.api.replace(&self.name, &lease).await {
                Ok(written) => {
                    self.observe(Some(written), Instant::now());
                    return Ok(true);
                }
                Err(err) if is_not_found(&err) => {
                    self.observed = None;
                    return Ok(false);
                }
                // Someone changed the Lease (perhaps only its labels): re-read it
                // once and release again if it is still ours.
                Err(err) if is_conflict(&err) && attempt == 0 => {
                    let current = self.api.get(&self.name).await?;
                    self.observe(current, Instant::now());
                }
                Err(err) if is_conflict(&err) => return Ok(false),
                Err(err) => return Err(err),
            }
        }
        Ok(false)
    }

    /// Deletes the Lease if it has not changed since it was observed (used for a
    /// replica's own membership Lease on shutdown, and for stale ones).
    pub(crate) async fn delete_observed(&mut self) -> Result<bool, kube::Error> {
        let Some(rv) = self
            .observed
            .as_ref()
            .and_then(|o| o.lease.metadata.resource_version.clone())
        else {
            return Ok(false);
        };
        match self.api.delete(&self.name, &rv).await {
            Ok(()) => {
                self.observed = None;
                Ok(true)
            }
            Err(err) if is_not_found(&err) => {
                self.observed = None;
                Ok(false)
            }
            Err(err) if is_conflict(&err) => Ok(false),
            Err(err) => Err(err),
        }
    }

    async fn create(&mut self) -> Result<bool, kube::Error> {
        let record = LeaseRecord::created(&self.identity, self.lease_seconds, Timestamp::now());
        let mut spec = LeaseSpec::default();
        record.write_to(&mut spec);
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        match self.api.create(&lease).await {
            Ok(written) => {
                self.observe(Some(written), Instant::now());
                Ok(true)
            }
            // Someone created it first: we lost the race (the next attempt reads it).
            Err(err) if is_conflict(&err) => Ok(false),
            Err(err) => Err(err),
        }
    }

    async fn write_over_observed(&mut self) -> Result<bool, kube::Error> {
        let Some(observed) = &self.observed else {
            return self.create().await;
        };
        let record = observed
            .record
            .next(&self.identity, self.lease_seconds, Timestamp::now());
        let lease = with_record(&observed.lease, &record);
        match self.api.replace(&self.name, &lease).await {
            Ok(written) => {
                self.observe(Some(written), Instant::now());
                Ok(true)
            }
            Err(err) if is_conflict(&err) => Ok(false),
            Err(err) if is_not_found(&err) => {
                self.observed = None;
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }
}

/// `lease` (metadata and resourceVersion included) with `record` written into its spec.
fn with_record(lease: &Lease, record: &LeaseRecord) -> Lease {
    let mut lease = lease.clone();
    record.write_to(lease.spec.get_or_insert_with(LeaseSpec::default));
    lease
}
