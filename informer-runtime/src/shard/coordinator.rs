//! [`ShardManager`]: this replica's holder of shard Leases, and its loop (renew, list,
//! rebalance, hand off).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::future::join_all;
use informer_core::ObjectKey;
use k8s_openapi::api::coordination::v1::Lease;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

use super::balance::{by_preference, member_lease_name, member_prefix, shard_lease_name, target};
use super::{ShardConfig, ShardConfigError, shard_of};
use crate::lease::RunningGuard;
use crate::lease::api::{KubeLeases, LeaseApi};
use crate::lease::lock::LeaseLock;
use crate::lease::record::Observed;

/// How many lease durations a membership record must stay unchanged before any
/// replica deletes it as the leftover of a dead replica.
const STALE_MEMBER_LEASE_DURATIONS: u32 = 3;

/// Holds a fair share of N shards, each guarded by its own Lease, and says which keys
/// this replica owns.
///
/// Cheap to clone (clones share the same state). Start it with [`ShardManager::run`];
/// ask [`ShardManager::owns`] for each key (a lock-free bit test), or follow the held
/// set with [`ShardManager::subscribe`]. See the [module documentation](super) for how
/// shards are shared and moved, and for the guarantees.
///
/// ```no_run
/// use informer_core::ObjectKey;
/// use informer_runtime::leader::CancellationToken;
/// use informer_runtime::shard::{ShardConfig, ShardManager};
///
/// # async fn demo(client: kube::Client) {
/// let shards = ShardManager::new(client, ShardConfig::new(16, "my-controller", "default", "pod-a"));
/// let shutdown = CancellationToken::new();
/// tokio::spawn({
///     let shards = shards.clone();
///     let shutdown = shutdown.clone();
///     async move { shards.run(shutdown).await }
/// });
/// let key = ObjectKey::new(Some("default"), "web-0");
/// if shards.owns(&key) {
///     // reconcile it
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct ShardManager {
    inner: Arc<Inner>,
}

struct Inner {
    api: Arc<dyn LeaseApi>,
    config: ShardConfig,
    /// Bit `i` is set while shard `i` is owned.
    bits: Box<[AtomicU64]>,
    held: watch::Sender<Vec<u32>>,
    running: AtomicBool,
}

impl std::fmt::Debug for ShardManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardManager")
            .field("config", &self.inner.config)
            .field("held", &*self.inner.held.borrow())
            .finish_non_exhaustive()
    }
}

impl ShardManager {
    /// A manager for `config.shards` shards in `config.namespace`, talking to the API
    /// server through `client`. It owns nothing until [`ShardManager::run`] acquires shards.
    ///
    /// # Panics
    /// If the config is invalid ([`ShardConfig::validate`]); this is a programmer
    /// error. Use [`ShardManager::try_new`] to get the error instead.
    ///
    /// ```no_run
    /// # use informer_runtime::shard::{ShardConfig, ShardManager};
    /// # fn demo(client: kube::Client) {
    /// let shards = ShardManager::new(client, ShardConfig::new(8, "ctl", "default", "pod-a"));
    /// assert!(shards.held().is_empty());
    /// # }
    /// ```
    pub fn new(client: kube::Client, config: ShardConfig) -> Self {
        match Self::try_new(client, config) {
            Ok(manager) => manager,
            Err(err) => panic!("invalid ShardConfig: {err}"),
        }
    }

    /// Like [`ShardManager::new`], returning the config error instead of panicking.
    ///
    /// # Errors
    /// [`ShardConfigError`] if [`ShardConfig::validate`] fails.
    ///
    /// ```no_run
    /// # use informer_runtime::shard::{ShardConfig, ShardManager};
    /// # fn demo(client: kube::Client) {
    /// assert!(ShardManager::try_new(client, ShardConfig::new(0, "ctl", "default", "pod-a")).is_err());
    /// # }
    /// ```
    pub fn try_new(client: kube::Client, config: ShardConfig) -> Result<Self, ShardConfigError> {
        Self::with_api(KubeLeases::in_namespace(client, &config.namespace), config)
    }

    pub(crate) fn with_api(
        api: Arc<dyn LeaseApi>,
        config: ShardConfig,
    ) -> Result<Self, ShardConfigError> {
        config.validate()?;
        let words = config.shards.div_ceil(64) as usize;
        Ok(Self {
            inner: Arc::new(Inner {
                api,
                bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
                config,
                held: watch::channel(Vec::new()).0,
                running: AtomicBool::new(false),
            }),
        })
    }

    /// The config this manager was built with.
    ///
    /// ```no_run
    /// # fn demo(shards: informer_runtime::shard::ShardManager) {
    /// println!("{} shards", shards.config().shards);
    /// # }
    /// ```
    pub fn config(&self) -> &ShardConfig {
        &self.inner.config
    }

    /// Acquires, renews, hands off and (on cancel) releases shards until `cancel` fires.
    ///
    /// On cancel, every shard stops being owned at once (before anything is written);
    /// then, with `release_on_cancel`, the held shard Leases are released and the
    /// membership Lease deleted (each bounded by `renew_deadline`), and `run` returns.
    /// API errors are logged and retried every `retry_period`; they never end the loop.
    /// Dropping the future (aborting its task) drops every shard at once without
    /// writing anything (the Leases expire on their own).
    ///
    /// At most one `run` per manager at a time: a second concurrent call logs an error
    /// and returns at once.
    ///
    /// ```no_run
    /// # use informer_runtime::leader::CancellationToken;
    /// # async fn demo(shards: informer_runtime::shard::ShardManager) {
    /// let cancel = CancellationToken::new();
    /// cancel.cancel();
    /// shards.run(cancel).await; // returns at once: already cancelled
    /// assert!(shards.held().is_empty());
    /// # }
    /// ```
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &*self.inner;
        let Some(_running) = RunningGuard::enter(&inner.running) else {
            tracing::error!(
                prefix = %inner.config.lease_prefix,
                "ShardManager::run is already running for this manager; ignoring the second call"
            );
            return;
        };
        let mut run = Run::new(inner);
        let config = &inner.config;
        'run: loop {
            let start = Instant::now();
            tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run,
                () = run.tick() => {}
            }
            let next = start + config.timings.retry_period;
            loop {
                let deadline = run.earliest_deadline();
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => break 'run,
                    () = sleep_until(deadline.unwrap_or(next)), if deadline.is_some_and(|d| d < next) => {
                        run.enforce_deadlines();
                    }
                    () = sleep_until(next) => break,
                }
            }
        }
        run.shutdown().await;
    }

    /// Whether this replica owns `key` right now: `shard_of(key, shards)` is held and
    /// not being handed off. Lock-free; cheap enough to call for every key.
    ///
    /// ```no_run
    /// # use informer_core::ObjectKey;
    /// # fn demo(shards: informer_runtime::shard::ShardManager) {
    /// let owned = shards.owns(&ObjectKey::new(Some("default"), "web-0"));
    /// # let _ = owned; }
    /// ```
    pub fn owns(&self, key: &ObjectKey) -> bool {
        let shard = shard_of(key, self.inner.config.shards);
        self.inner.is_owned(shard)
    }

    /// The owned shards, ascending.
    ///
    /// ```no_run
    /// # fn demo(shards: informer_runtime::shard::ShardManager) {
    /// for shard in shards.held() { println!("own shard {shard}"); }
    /// # }
    /// ```
    pub fn held(&self) -> Vec<u32> {
        self.inner.held.borrow().clone()
    }

    /// A receiver of the owned shards (ascending), updated whenever the set changes.
    /// Shards are removed from the set only after they stopped being
    /// [owned](ShardManager::owns), and added only after they started.
    ///
    /// ```no_run
    /// # async fn demo(shards: informer_runtime::shard::ShardManager) {
    /// let mut held = shards.subscribe();
    /// while held.changed().await.is_ok() {
    ///     println!("now own {:?}", *held.borrow_and_update());
    /// }
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<Vec<u32>> {
        self.inner.held.subscribe()
    }
}

impl Inner {
    fn is_owned(&self, shard: u32) -> bool {
        let word = (shard / 64) as usize;
        self.bits
            .get(word)
            .is_some_and(|w| w.load(Ordering::Acquire) & (1u64 << (shard % 64)) != 0)
    }

    /// Makes `owned` (ascending) the owned set: bits first, then subscribers.
    fn publish(&self, owned: &[u32]) {
        let mut words = vec![0u64; self.bits.len()];
        for &s in owned {
            if let Some(w) = words.get_mut((s / 64) as usize) {
                *w |= 1u64 << (s % 64);
            }
        }
        for (bits, word) in self.bits.iter().zip(words) {
            bits.store(word, Ordering::Release);
        }
        self.held.send_if_modified(|held| {
            if held.as_slice() == owned {
                false
            } else {
                *held = owned.to_vec();
                true
            }
        });
    }
}

/// A shard this replica holds a Lease on.
#[derive(Clone, Copy, Debug)]
struct Term {
    /// When the last successful renewal (or the acquisition) was sent.
    last_renew: Instant,
    /// `Some` while being handed off: not owned, released at this time.
    release_at: Option<Instant>,
}

struct Slot {
    lock: LeaseLock,
    term: Option<Term>,
}

/// The state of one `run`. Dropping it drops every shard (owned set emptied).
struct Run<'a> {
    inner: &'a Inner,
    identity: Arc<str>,
    slots: Vec<Slot>,
    member: LeaseLock,
    member_prefix: String,
    /// Other replicas' membership Leases, by name.
    members: HashMap<String, Observed>,
}

impl Drop for Run<'_> {
    fn drop(&mut self) {
        self.inner.publish(&[]);
    }
}

impl<'a> Run<'a> {
    fn new(inner: &'a Inner) -> Self {
        let config = &inner.config;
        let identity: Arc<str> = Arc::from(config.identity.as_str());
        let seconds = config.timings.lease_seconds();
        let slots = (0..config.shards)
            .map(|i| Slot {
                lock: LeaseLock::new(
                    inner.api.clone(),
                    shard_lease_name(&config.lease_prefix, i),
                    identity.clone(),
                    seconds,
                ),
                term: None,
            })
            .collect();
        let member = LeaseLock::new(
            inner.api.clone(),
            member_lease_name(&config.lease_prefix, &config.identity),
            identity.clone(),
            seconds,
        );
        Self {
            inner,
            identity,
            slots,
            member,
            member_prefix: member_prefix(&config.lease_prefix),
            members: HashMap::new(),
        }
    }

    fn config(&self) -> &'a ShardConfig {
        &self.inner.config
    }

    fn owned(&self) -> Vec<u32> {
        (0u32..)
            .zip(&self.slots)
            .filter(|(_, s)| s.term.is_some_and(|t| t.release_at.is_none()))
            .map(|(i, _)| i)
            .collect()
    }

    fn publish(&self) {
        self.inner.publish(&self.owned());
    }

    fn earliest_deadline(&self) -> Option<Instant> {
        let renew_deadline = self.config().timings.renew_deadline;
        self.slots
            .iter()
            .filter_map(|s| s.term.map(|t| t.last_renew + renew_deadline))
            .min()
    }

    /// `limit`, or the earliest renew deadline if that comes first, so no request
    /// keeps the loop from stepping down in time.
    fn bound(&self, limit: Instant) -> Instant {
        self.earliest_deadline().map_or(limit, |d| d.min(limit))
    }

    /// Drops every shard whose renew deadline has passed.
    fn enforce_deadlines(&mut self) {
        let now = Instant::now();
        let renew_deadline = self.config().timings.renew_deadline;
        let mut changed = false;
        for (i, slot) in (0u32..).zip(&mut self.slots) {
            if let Some(term) = slot.term
                && now >= term.last_renew + renew_deadline
            {
                tracing::warn!(
                    shard = i,
                    lease = %slot.lock.name(),
                    renew_deadline = ?renew_deadline,
                    "no renewal succeeded within the renew deadline; dropping the shard"
                );
                slot.term = None;
                changed = true;
            }
        }
        if changed {
            self.publish();
        }
    }

    async fn tick(&mut self) {
        let start = Instant::now();
        self.renew(start).await;
        self.enforce_deadlines();

        let bound = self.bound(Instant::now() + self.config().timings.renew_deadline);
        match timeout_at(bound, self.member.try_acquire_or_renew()).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::debug!(error = %err, "failed to renew the membership lease"),
            Err(_) => tracing::debug!("renewing the membership lease timed out"),
        }
        self.enforce_deadlines();

        let bound = self.bound(Instant::now() + self.config().timings.renew_deadline);
        let listed = timeout_at(bound, self.inner.api.list()).await;
        self.enforce_deadlines();
        let leases = match listed {
            Ok(Ok(leases)) => leases,
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "failed to list leases; not rebalancing");
                return;
            }
            Err(_) => {
                tracing::debug!("listing leases timed out; not rebalancing");
                return;
            }
        };
        self.observe(leases, Instant::now());
        self.rebalance().await;
        self.enforce_deadlines();
        self.finish_handoffs().await;
        self.collect_stale_members().await;
    }

    /// Renews every held shard (owned or being handed off) concurrently; each attempt
    /// is abandoned at that shard's renew deadline.
    async fn renew(&mut self, start: Instant) {
        let renew_deadline = self.config().timings.renew_deadline;
        let attempts = (0u32..).zip(&mut self.slots).filter_map(|(i, slot)| {
            let deadline = slot.term?.last_renew + renew_deadline;
            Some(async move {
                let result = timeout_at(deadline, slot.lock.try_acquire_or_renew()).await;
                (i, slot, result)
            })
        });
        let mut changed = false;
        for (i, slot, result) in join_all(attempts).await {
            match result {
                Ok(Ok(true)) => {
                    if let Some(term) = &mut slot.term {
                        term.last_renew = start;
                    }
                }
                Ok(Ok(false)) => {
                    tracing::warn!(
                        shard = i,
                        holder = ?slot.lock.holder(),
                        "lost the shard's lease to another holder"
                    );
                    slot.term = None;
                    changed = true;
                }
                Ok(Err(err)) => {
                    tracing::warn!(shard = i, error = %err, "failed to renew the shard's lease");
                }
                Err(_) => tracing::warn!(shard = i, "renewing the shard's lease timed out"),
            }
        }
        if changed {
            self.publish();
        }
    }

    /// Takes in the result of a list of the namespace's Leases.
    fn observe(&mut self, leases: Vec<Lease>, now: Instant) {
        let mut by_name: HashMap<String, Lease> = leases
            .into_iter()
            .filter_map(|l| Some((l.metadata.name.clone()?, l)))
            .collect();
        for slot in &mut self.slots {
            let lease = by_name.remove(slot.lock.name());
            slot.lock.observe(lease, now);
        }
        let own = by_name.remove(self.member.name());
        self.member.observe(own, now);
        let mut previous = std::mem::take(&mut self.members);
        for (name, lease) in by_name {
            if name.starts_with(&self.member_prefix) {
                let observed = Observed::update(previous.remove(&name), lease, now);
                self.members.insert(name, observed);
            }
        }
    }

    /// Sorted identities of the live replicas, this one included.
    fn live(&self, now: Instant) -> Vec<&str> {
        let mut live: BTreeSet<&str> = self
            .members
            .values()
            .filter(|o| !o.record.is_free() && o.is_valid(now))
            .map(|o| o.record.holder.as_str())
            .collect();
        live.insert(&self.identity);
        live.into_iter().collect()
    }

    async fn rebalance(&mut self) {
        let now = Instant::now();
        let config = self.config();
        let target = {
            let live = self.live(now);
            target(config.shards, &live, &self.identity) as usize
        };
        let owned = self.owned();
        if owned.len() > target {
            let mut excess = by_preference(&self.identity, owned.iter().copied());
            excess.reverse(); // least preferred first
            excess.truncate(owned.len() - target);
            for &shard in &excess {
                if let Some(Some(term)) = self.slots.get_mut(shard as usize).map(|s| &mut s.term) {
                    term.release_at = Some(now + config.handoff_delay);
                }
            }
            tracing::info!(shards = ?excess, target, "handing shards off to rebalance");
            self.publish();
        } else if owned.len() < target {
            let mut need = target - owned.len();
            // Keep shards that were being handed off, most preferred first.
            let handing_off = (0u32..)
                .zip(&self.slots)
                .filter(|(_, s)| s.term.is_some_and(|t| t.release_at.is_some()))
                .map(|(i, _)| i);
            for shard in by_preference(&self.identity, handing_off) {
                if need == 0 {
                    break;
                }
                if let Some(Some(term)) = self.slots.get_mut(shard as usize).map(|s| &mut s.term) {
                    term.release_at = None;
                    need -= 1;
                }
            }
            if need > 0 {
                self.acquire(need).await;
            }
            self.publish();
        }
        self.release_strays().await;
    }

    /// Tries to acquire up to `need` shards that are absent, free, expired, or still
    /// ours from an earlier attempt, in this replica's order of preference.
    async fn acquire(&mut self, need: usize) {
        let now = Instant::now();
        let identity = self.identity.clone();
        let free = (0u32..).zip(&self.slots).filter(|(_, s)| {
            s.term.is_none()
                && s.lock
                    .observed()
                    .is_none_or(|o| !o.held_by_other(&identity, now))
        });
        let (mine, others): (Vec<_>, Vec<_>) = free
            .map(|(i, s)| (i, s.lock.held_by_me()))
            .partition(|(_, mine)| *mine);
        let mut candidates: Vec<u32> = mine.into_iter().map(|(i, _)| i).collect();
        candidates.extend(by_preference(&identity, others.into_iter().map(|(i, _)| i)));
        candidates.truncate(need);
        if candidates.is_empty() {
            return;
        }
        let bound = self.bound(Instant::now() + self.config().timings.renew_deadline);
        let start = Instant::now();
        let attempts = (0u32..)
            .zip(&mut self.slots)
            .filter(|(i, _)| candidates.contains(i))
            .map(|(i, slot)| async move {
                let result = timeout_at(bound, slot.lock.acquire_observed()).await;
                (i, slot, result)
            });
        for (i, slot, result) in join_all(attempts).await {
            match result {
                Ok(Ok(true)) => {
                    tracing::info!(shard = i, lease = %slot.lock.name(), "acquired the shard");
                    slot.term = Some(Term {
                        last_renew: start,
                        release_at: None,
                    });
                }
                Ok(Ok(false)) => tracing::debug!(shard = i, "lost the race for the shard"),
                Ok(Err(err)) => {
                    tracing::debug!(shard = i, error = %err, "failed to acquire the shard")
                }
                Err(_) => tracing::debug!(shard = i, "acquiring the shard timed out"),
            }
        }
    }

    /// Releases Leases the last list shows as ours although we hold no term on them
    /// (a write that landed after it timed out, or a shard dropped at its deadline), so
    /// others need not wait for them to expire.
    async fn release_strays(&mut self) {
        let now = Instant::now();
        let bound = self.bound(now + self.config().timings.renew_deadline);
        let strays = self.slots.iter_mut().filter(|s| {
            s.term.is_none()
                && s.lock.held_by_me()
                && s.lock.observed().is_some_and(|o| o.is_valid(now))
        });
        let releases = strays.map(|slot| async move {
            let _ = timeout_at(bound, slot.lock.release()).await;
        });
        join_all(releases).await;
    }

    /// Releases the handed-off shards whose delay has passed.
    async fn finish_handoffs(&mut self) {
        let now = Instant::now();
        let bound = self.bound(now + self.config().timings.renew_deadline);
        let due = (0u32..).zip(&mut self.slots).filter_map(|(i, slot)| {
            let release_at = slot.term?.release_at?;
            if release_at > now {
                return None;
            }
            slot.term = None;
            Some(async move {
                match timeout_at(bound, slot.lock.release()).await {
                    Ok(Ok(_)) => tracing::info!(shard = i, "released the shard"),
                    Ok(Err(err)) => {
                        tracing::warn!(shard = i, error = %err, "failed to release the shard")
                    }
                    Err(_) => tracing::warn!(shard = i, "releasing the shard timed out"),
                }
            })
        });
        join_all(due).await;
    }

    /// Deletes membership Leases unchanged for several lease durations (replicas that
    /// died without cleaning up), each only if it is still unchanged.
    async fn collect_stale_members(&mut self) {
        let now = Instant::now();
        let lease_duration = self.config().timings.lease_duration;
        let stale: Vec<(String, String)> = self
            .members
            .iter()
            .filter(|(_, o)| {
                let wait = o.record.duration().max(lease_duration) * STALE_MEMBER_LEASE_DURATIONS;
                o.at + wait <= now
            })
            .filter_map(|(name, o)| {
                Some((name.clone(), o.lease.metadata.resource_version.clone()?))
            })
            .collect();
        for (name, rv) in stale {
            let bound = self.bound(Instant::now() + self.config().timings.renew_deadline);
            match timeout_at(bound, self.inner.api.delete(&name, &rv)).await {
                Ok(Ok(())) => {
                    tracing::info!(lease = %name, "deleted a stale membership lease");
                    self.members.remove(&name);
                }
                Ok(Err(err)) => {
                    tracing::debug!(lease = %name, error = %err, "failed to delete a stale membership lease")
                }
                Err(_) => {}
            }
        }
    }

    /// Cancelled: stop owning everything at once, then release and clean up.
    async fn shutdown(mut self) {
        let had_terms = self.slots.iter().any(|s| s.term.is_some());
        for slot in &mut self.slots {
            slot.term = None;
        }
        self.publish();
        let config = self.config();
        if !config.release_on_cancel {
            return;
        }
        let renew_deadline = config.timings.renew_deadline;
        let releases = self
            .slots
            .iter_mut()
            .filter(|s| s.lock.held_by_me())
            .map(|slot| async move {
                match timeout(renew_deadline, slot.lock.release()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(err)) => tracing::warn!(lease = %slot.lock.name(), error = %err, "failed to release the shard"),
                    Err(_) => tracing::warn!(lease = %slot.lock.name(), "releasing the shard timed out"),
                }
            });
        join_all(releases).await;
        if had_terms {
            tracing::info!(prefix = %config.lease_prefix, "released the held shards");
        }
        if self.member.held_by_me() {
            let _ = timeout(renew_deadline, self.member.delete_observed()).await;
        }
    }
}
