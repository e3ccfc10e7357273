//! The checker: follows every change the server commits, in order, keeps the [`Cluster`]
//! in step, runs the invariants on each committed state, attributes each change to its
//! author, and enforces the Lease rule (no writes after the Lease passed to another holder).

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;

use super::cluster::Cluster;
use super::report::{Failure, Trace};
use crate::apiserver::{Change, EventType, Subscription};

/// A named check of a state: `Ok` or what is wrong.
pub(crate) type CheckFn = Arc<dyn Fn(&Cluster) -> Result<(), String> + Send + Sync>;

/// A named invariant or the convergence check.
#[derive(Clone)]
pub(crate) struct Check {
    pub name: String,
    pub check: CheckFn,
}

impl Check {
    /// Runs the check; a panic counts as a failure with its message.
    pub(crate) fn run(&self, cluster: &Cluster) -> Result<(), String> {
        match catch_unwind(AssertUnwindSafe(|| (self.check)(cluster))) {
            Ok(result) => result,
            Err(panic) => Err(format!("panicked: {}", panic_message(&*panic))),
        }
    }
}

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The users whose requests are a controller's: `replica-<i>.<n>`.
pub(crate) const CONTROLLER_PREFIX: &str = "replica-";
/// The author of the world's changes.
pub(crate) const WORLD: &str = "world";
/// The author of the harness's own changes (the Lease it takes over).
pub(crate) const HARNESS: &str = "chaos";

pub(crate) fn is_controller(actor: Option<&str>) -> bool {
    actor.is_some_and(|a| a.starts_with(CONTROLLER_PREFIX))
}

/// The replica of a controller user: `replica-2.5` is replica 2.
pub(crate) fn replica_of(user: &str) -> Option<usize> {
    user.strip_prefix(CONTROLLER_PREFIX)?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The leader-election Lease a run watches: namespace and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaseRef {
    pub namespace: String,
    pub name: String,
}

/// What the checker knows of the Lease.
#[derive(Default)]
pub(crate) struct LeaseState {
    /// The holder identity each user wrote for itself.
    identities: HashMap<String, String>,
    /// The current holder identity (`""`: free or no Lease).
    pub holder: String,
    /// The user holding it, if a controller incarnation does.
    pub holder_user: Option<String>,
    /// Users that lost it: their identity and the revision it passed to another holder.
    lost: HashMap<String, (String, u64)>,
    /// When the Lease last changed.
    pub changed_at: Option<Instant>,
    /// Its `leaseDurationSeconds`.
    pub duration: Duration,
    /// Its `resourceVersion`.
    pub resource_version: String,
    /// The Lease as last seen.
    pub object: Option<Value>,
}

/// What the checker has seen, shared with the run.
pub(crate) struct Observed {
    pub cluster: Cluster,
    pub failure: Option<Failure>,
    /// When anything other than a Lease last changed.
    pub last_change: Instant,
    /// When anything (a Lease included) last changed.
    pub last_any_change: Instant,
    /// Changes made by controllers (Leases aside).
    pub controller_changes: u64,
    /// The last few of them, described.
    pub recent_controller_changes: VecDeque<String>,
    /// The revisions of each replica's last writes (Leases aside), oldest first.
    pub replica_writes: HashMap<usize, VecDeque<u64>>,
    pub lease: LeaseState,
}

impl Observed {
    pub(crate) fn new() -> Self {
        let now = Instant::now();
        Self {
            cluster: Cluster::default(),
            failure: None,
            last_change: now,
            last_any_change: now,
            controller_changes: 0,
            recent_controller_changes: VecDeque::new(),
            replica_writes: HashMap::new(),
            lease: LeaseState::default(),
        }
    }

    /// Records a failure unless one is recorded already.
    pub(crate) fn fail(&mut self, failure: Failure) {
        if self.failure.is_none() {
            self.failure = Some(failure);
        }
    }
}

/// The checker's inputs.
pub(crate) struct Checker {
    pub observed: Arc<Mutex<Observed>>,
    pub invariants: Arc<[Check]>,
    pub lease: Option<LeaseRef>,
    pub trace: Arc<Trace>,
    /// Tells the run the revision the checker reached.
    pub revisions: watch::Sender<u64>,
    /// Changes up to this revision (the setup's) are not traced.
    pub traced_after: u64,
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `MODIFIED ReplicaSet default/web-rs @12`.
pub(crate) fn describe_change(change: &Change) -> String {
    let object: &Value = &change.object;
    let namespace = text(object, "/metadata/namespace");
    let name = text(object, "/metadata/name");
    let place = if namespace.is_empty() {
        name.to_string()
    } else {
        format!("{namespace}/{name}")
    };
    let event = match change.event {
        EventType::Added => "created",
        EventType::Modified if object.pointer("/metadata/deletionTimestamp").is_some() => {
            "updated (deleting)"
        }
        EventType::Modified => "updated",
        EventType::Deleted => "deleted",
    };
    format!(
        "{event} {} {place} @{}",
        text(object, "/kind"),
        change.revision
    )
}

impl Checker {
    /// Follows the subscription until it ends (the run drops the server) or a failure is
    /// recorded.
    pub(crate) async fn follow(self, subscription: Subscription) {
        while let Some(change) = subscription.next().await {
            let revision = change.revision;
            let stop = self.apply(&change);
            self.revisions.send_replace(revision);
            if stop {
                return;
            }
        }
    }

    /// Applies one change; returns whether a failure was recorded.
    pub(crate) fn apply(&self, change: &Change) -> bool {
        let object: &Value = &change.object;
        let actor = change.actor.as_deref();
        // Lease renewals are not changes of the world; the leader-election Lease is followed.
        let is_lease = text(object, "/kind") == "Lease";
        let is_election = is_lease
            && self.lease.as_ref().is_some_and(|lease| {
                text(object, "/metadata/namespace") == lease.namespace
                    && text(object, "/metadata/name") == lease.name
            });
        let description = describe_change(change);
        // The world and the harness trace their own steps; setup is not traced.
        if change.revision > self.traced_after && !matches!(actor, Some(WORLD | HARNESS)) {
            self.trace.record(
                actor.unwrap_or("server").to_string(),
                format!("committed: {description}"),
            );
        }
        let mut observed = self.observed.lock();
        match change.event {
            EventType::Deleted => observed.cluster.remove(object),
            EventType::Added | EventType::Modified => {
                observed.cluster.put(Arc::new(object.clone()));
            }
        }
        observed.cluster.set_revision(change.revision);
        let now = Instant::now();
        observed.last_any_change = now;
        if !is_lease {
            observed.last_change = now;
        }
        if is_controller(actor) && !is_lease {
            observed.controller_changes += 1;
            let recent = &mut observed.recent_controller_changes;
            if recent.len() == 5 {
                recent.pop_front();
            }
            recent.push_back(format!("{} {description}", actor.unwrap_or("")));
            if let Some(replica) = actor.and_then(replica_of) {
                let writes = observed.replica_writes.entry(replica).or_default();
                if writes.len() == 8 {
                    writes.pop_front();
                }
                writes.push_back(change.revision);
            }
        }
        if is_election {
            self.follow_lease(&mut observed, change, now);
        }
        if let (Some(user), false) = (actor, is_lease)
            && let Some((identity, lost_at)) = observed.lease.lost.get(user).cloned()
        {
            observed.fail(Failure::WriteAfterLeaseLoss {
                user: user.to_string(),
                identity,
                lost_at,
                write: description.clone(),
            });
        }
        for invariant in self.invariants.iter() {
            if let Err(message) = invariant.run(&observed.cluster) {
                self.trace.record(
                    "check",
                    format!("invariant {:?} broken: {message}", invariant.name),
                );
                observed.fail(Failure::Invariant {
                    name: invariant.name.clone(),
                    message,
                    revision: change.revision,
                });
                break;
            }
        }
        observed.failure.is_some()
    }

    /// The Lease rules: who holds it, and who lost it to another holder.
    fn follow_lease(&self, observed: &mut Observed, change: &Change, now: Instant) {
        let object: &Value = &change.object;
        let actor = change.actor.as_deref();
        let lease = &mut observed.lease;
        let holder = if change.event == EventType::Deleted {
            String::new()
        } else {
            text(object, "/spec/holderIdentity").to_string()
        };
        if is_controller(actor) && !holder.is_empty() {
            lease
                .identities
                .insert(actor.unwrap_or("").to_string(), holder.clone());
        }
        if let Some(previous) = lease.holder_user.clone() {
            let identity = lease.identities.get(&previous).cloned().unwrap_or_default();
            if identity != holder {
                self.trace.record(
                    "check",
                    format!(
                        "{previous} (holder {identity:?}) lost the lease to {holder:?} at revision {}",
                        change.revision
                    ),
                );
                lease.lost.insert(previous, (identity, change.revision));
            }
        }
        lease.holder_user = match actor {
            Some(user) if is_controller(actor) && lease.identities.get(user) == Some(&holder) => {
                Some(user.to_string())
            }
            _ => lease
                .holder_user
                .clone()
                .filter(|u| lease.identities.get(u) == Some(&holder)),
        };
        if let Some(user) = &lease.holder_user {
            lease.lost.remove(user);
        }
        lease.holder = holder;
        lease.changed_at = Some(now);
        lease.duration = Duration::from_secs(
            object
                .pointer("/spec/leaseDurationSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        );
        lease.resource_version = text(object, "/metadata/resourceVersion").to_string();
        lease.object = (change.event != EventType::Deleted).then(|| object.clone());
    }
}
