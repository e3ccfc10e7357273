//! Read-your-own-writes for controllers (Kubernetes' KEP-5647, on by default): a reconcile
//! never runs on a cache older than the controller's own last writes for that key.
//!
//! ```text
//! reconcile(P) --create/update/patch/delete--> tracking client --> API server
//!                                   |  response: kind, key, resourceVersion R
//!                                   v
//!                     gate: P wrote (resource, R)   [and the object itself, if primary]
//! worker takes P --> gate.check(P): every cache the writes touched has reached R?
//!                      yes --> forget the record, reconcile
//!                      no  --> requeue P with the rate limiter (stale_sync_skips_total)
//! ```
//!
//! - `Gate`: the records (per reconciled key: the newest resource version written per
//!   resource), and the check the workers make before each reconcile. With no write pending,
//!   the check is one atomic load.
//! - Echoes: each recorded write also expects its watch event (object key and resource
//!   version). When it arrives after the key it was written for has already been reconciled
//!   with the write in the cache, the controller's handler does not queue that key again
//!   for it: one write, at most one reconcile of its own. With no echo expected, the
//!   handler's check is one atomic load per event.
//! - `client.rs`: the `kube::Client` a controller hands to its reconciles, which passes every
//!   request on and records the writes' answers.
//!
//! What a write is attributed to: the key being reconciled when the request was made (a
//! task-local the runner sets around each reconcile), so a write made outside a reconcile
//! (or on a task the reconcile spawned) is not recorded.

mod client;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use informer_core::parse_label_selector;
use informer_core::resource_version::as_u64;
use informer_core::{ObjectKey, Queue};
use kube::Resource;
use parking_lot::Mutex;

use crate::factory::InformerParams;
use crate::informer::{Reached, StoreVersion};
use kube::core::{Selector, SelectorExt};

pub(crate) use client::{ReconcileScope, tracking_client};

/// Records beyond this many are swept of those whose caches caught up, so that keys never
/// reconciled again (say, a primary object another reconcile wrote, filtered out by the
/// controller's filters) do not pile up.
const SWEEP_ABOVE: usize = 4096;

/// How long a write's watch event is expected. One that comes later (or whose event reached
/// the handler before the write's answer reached the client) is not recognised as an echo:
/// it queues its key once more, which is harmless.
const ECHO_TTL: Duration = Duration::from_secs(10);

/// A kind of object as the API names it in URLs: group (`""` for core) and plural.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ResourceId {
    pub(crate) group: String,
    pub(crate) plural: String,
}

impl ResourceId {
    /// The resource of `K`.
    pub(crate) fn of<K: Resource<DynamicType: Default>>() -> Self {
        let dt = K::DynamicType::default();
        Self {
            group: K::group(&dt).into_owned(),
            plural: K::plural(&dt).into_owned(),
        }
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.plural)
        } else {
            write!(f, "{}.{}", self.plural, self.group)
        }
    }
}

/// Whether a cache still holds the object at a key with a given UID.
pub(crate) type Holds = Arc<dyn Fn(&ObjectKey, &str) -> bool + Send + Sync>;

/// Whether a cache holds an object (of any UID) at a key now.
pub(crate) type Present = Arc<dyn Fn(&ObjectKey) -> bool + Send + Sync>;

/// One cache of the controller: its resource, how far it has got, what it holds, and which
/// objects it can hold.
pub(crate) struct Cache {
    pub(crate) resource: ResourceId,
    pub(crate) version: Arc<StoreVersion>,
    pub(crate) holds: Holds,
    pub(crate) scope: CacheScope,
}

/// Which objects of its resource a cache can hold: its namespace and label selector. A
/// write the cache can never see as an event is not waited for there (the write's event
/// never comes; only a bookmark, a minute later on a real server, would move the cache past
/// it).
#[derive(Clone, Default)]
pub(crate) struct CacheScope {
    /// `None`: every namespace.
    namespace: Option<String>,
    /// `None`: no selector.
    labels: Option<Selector>,
    /// Whether the cache holds an object now (an object in it is waited for whatever its
    /// new labels: the write's event removes it).
    present: Option<Present>,
}

impl fmt::Debug for CacheScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheScope")
            .field("namespace", &self.namespace)
            .field("labels", &self.labels)
            .finish_non_exhaustive()
    }
}

impl CacheScope {
    /// The scope of an informer with `params`, holding what `present` says it holds.
    pub(crate) fn new(params: &InformerParams, present: Present) -> Self {
        Self {
            namespace: params.namespace.clone(),
            labels: params
                .label_selector
                .as_deref()
                .and_then(|s| parse_label_selector(s).ok()),
            present: Some(present),
        }
    }

    /// Whether a write that left `object` with `labels` (`None`: not known) can reach this
    /// cache as an event. The namespace of an object never changes; its labels do, so an
    /// object whose new labels do not match counts only if the cache holds it now.
    fn may_see(&self, object: &ObjectKey, labels: Option<&BTreeMap<String, String>>) -> bool {
        if let Some(namespace) = &self.namespace
            && object.namespace() != Some(namespace.as_str())
        {
            return false;
        }
        match (&self.labels, labels) {
            (Some(selector), Some(labels)) if !selector.matches(labels) => {
                self.present.as_ref().is_some_and(|present| present(object))
            }
            _ => true,
        }
    }
}

/// What a key waits for: per cache (by index), the newest version written, and the objects
/// deleted (by key and UID) whose deletion answered with no version (a `Status`).
#[derive(Default, Debug)]
struct Record {
    waits: Vec<(usize, u64)>,
    deletes: Vec<(usize, ObjectKey, String)>,
}

impl Record {
    fn wrote(&mut self, cache: usize, rv: u64) {
        match self.waits.iter_mut().find(|(c, _)| *c == cache) {
            Some((_, newest)) => *newest = (*newest).max(rv),
            None => self.waits.push((cache, rv)),
        }
    }

    fn deleted(&mut self, cache: usize, object: &ObjectKey, uid: &str) {
        if !self
            .deletes
            .iter()
            .any(|(c, o, u)| *c == cache && o == object && u == uid)
        {
            self.deletes.push((cache, object.clone(), uid.to_owned()));
        }
    }
}

/// Why a key is not reconciled yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stale {
    /// The resource whose cache is behind.
    pub(crate) resource: ResourceId,
    /// What that cache has not seen yet.
    pub(crate) waiting: Waiting,
}

/// What a cache behind a key's writes has not seen yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// A write answered with this version; the cache has reached `read` (`None`: nothing).
    Version { wrote: u64, read: Option<u64> },
    /// The deletion of this object (answered with a `Status`, no version): the cache still
    /// holds it.
    Deletion { object: ObjectKey },
}

impl fmt::Display for Waiting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Waiting::Version {
                wrote,
                read: Some(read),
            } => write!(f, "wrote version {wrote}, cache at {read}"),
            Waiting::Version { wrote, read: None } => {
                write!(f, "wrote version {wrote}, cache not listed yet")
            }
            Waiting::Deletion { object } => write!(f, "deleted {object}, cache still holds it"),
        }
    }
}

/// A write whose watch event has not been seen yet.
#[derive(Debug)]
struct Echo {
    resource: ResourceId,
    /// The key whose reconcile made the write.
    owner: ObjectKey,
    /// When the write was recorded.
    at: Instant,
}

/// The records and the expected echoes, behind one lock.
#[derive(Default)]
struct Writes {
    records: HashMap<ObjectKey, Record>,
    /// By (written object, resource version).
    echoes: HashMap<(ObjectKey, u64), Echo>,
    /// When echoes past [`ECHO_TTL`] were last forgotten.
    expired: Option<Instant>,
}

impl Writes {
    /// Forgets the echoes expected for longer than [`ECHO_TTL`] (at most once a second).
    fn expire_echoes(&mut self, now: Instant) {
        if self.echoes.is_empty()
            || self
                .expired
                .is_some_and(|t| now.saturating_duration_since(t) < Duration::from_secs(1))
        {
            return;
        }
        self.expired = Some(now);
        self.echoes
            .retain(|_, echo| now.saturating_duration_since(echo.at) < ECHO_TTL);
    }
}

/// The read-your-own-writes gate of one controller. See the module docs.
pub(crate) struct Gate {
    /// How many keys have a record: the only thing a check reads when nothing is pending.
    pending: AtomicUsize,
    /// How many echoes are expected: the only thing a handler reads when none is.
    echoes: AtomicUsize,
    writes: Mutex<Writes>,
    /// The controller's caches (set once, when it is built); `caches[0]` is the primary's.
    caches: OnceLock<Vec<Cache>>,
    /// Whether the controller's client was handed out (to a context, or for a reconciler):
    /// until then no write can be recorded, and reconciles need no scope.
    clients: AtomicBool,
}

impl fmt::Debug for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gate")
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Self {
            pending: AtomicUsize::new(0),
            echoes: AtomicUsize::new(0),
            writes: Mutex::new(Writes::default()),
            caches: OnceLock::new(),
            clients: AtomicBool::new(false),
        }
    }

    /// The scope to run the reconcile of `key` in, once the controller's client was handed
    /// out (before, no write can be recorded, and the reconcile runs as is).
    #[inline]
    pub(crate) fn scope(self: &Arc<Self>, key: &ObjectKey) -> Option<ReconcileScope> {
        self.clients
            .load(Ordering::Acquire)
            .then(|| ReconcileScope {
                gate: self.clone(),
                key: key.clone(),
            })
    }

    /// Sets the controller's caches, the primary's first (once; later calls are ignored).
    pub(crate) fn set_caches(&self, caches: Vec<Cache>) {
        let _ = self.caches.set(caches);
    }

    /// Records that the reconcile of `owner` wrote `object` of `resource`, and the server
    /// answered with resource version `rv`. Ignored for resources the controller does not
    /// cache, for opaque versions, and for caches whose version is not tracked.
    #[cfg(test)]
    pub(crate) fn wrote(
        &self,
        owner: &ObjectKey,
        resource: &ResourceId,
        object: &ObjectKey,
        rv: &str,
    ) {
        self.wrote_labelled(owner, resource, object, rv, None)
    }

    /// As `wrote`, with the labels the answer gave the object (`None`: not known): a cache
    /// that can never see the write as an event (another namespace; a selector the object
    /// does not match, and not holding it) is not waited for.
    pub(crate) fn wrote_labelled(
        &self,
        owner: &ObjectKey,
        resource: &ResourceId,
        object: &ObjectKey,
        rv: &str,
        labels: Option<&BTreeMap<String, String>>,
    ) {
        let Some(caches) = self.caches.get() else {
            return;
        };
        let Some(rv) = as_u64(rv) else {
            return;
        };
        let now = Instant::now();
        let mut writes = self.writes.lock();
        writes.expire_echoes(now);
        let Writes {
            records, echoes, ..
        } = &mut *writes;
        let mut any = false;
        for (index, cache) in caches.iter().enumerate() {
            if cache.resource != *resource
                || cache.version.get() == Reached::Untracked
                || !cache.scope.may_see(object, labels)
            {
                continue;
            }
            any = true;
            records.entry(owner.clone()).or_default().wrote(index, rv);
            // A reconcile of the written object reads it from the primary cache.
            if index == 0 && object != owner {
                records.entry(object.clone()).or_default().wrote(0, rv);
            }
        }
        if !any {
            return;
        }
        echoes.insert(
            (object.clone(), rv),
            Echo {
                resource: resource.clone(),
                owner: owner.clone(),
                at: now,
            },
        );
        if records.len() + echoes.len() > SWEEP_ABOVE {
            sweep(caches, records, echoes);
        }
        self.pending.store(records.len(), Ordering::Release);
        self.echoes.store(echoes.len(), Ordering::Release);
    }

    /// Records that the reconcile of `owner` deleted `object` of `resource`, whose answer was
    /// a `Status` with the deleted object's `uid` (no version to wait for): the reconciles of
    /// `owner` (and of `object` itself, if it is a primary) wait until every cache of
    /// `resource` no longer holds that object. Ignored for resources the controller does not
    /// cache.
    pub(crate) fn deleted(
        &self,
        owner: &ObjectKey,
        resource: &ResourceId,
        object: &ObjectKey,
        uid: &str,
    ) {
        let Some(caches) = self.caches.get() else {
            return;
        };
        let mut writes = self.writes.lock();
        let records = &mut writes.records;
        for (index, cache) in caches.iter().enumerate() {
            if cache.resource != *resource {
                continue;
            }
            records
                .entry(owner.clone())
                .or_default()
                .deleted(index, object, uid);
            if index == 0 && object != owner {
                records
                    .entry(object.clone())
                    .or_default()
                    .deleted(index, object, uid);
            }
        }
        self.pending.store(records.len(), Ordering::Release);
    }

    /// Whether `key` may be reconciled: `Ok` unless a write made by (or to) it is newer than
    /// a cache has reached. A satisfied record is forgotten.
    #[inline]
    pub(crate) fn check(&self, key: &ObjectKey) -> Result<(), Stale> {
        if self.pending.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        self.check_records(key)
    }

    #[inline(never)]
    fn check_records(&self, key: &ObjectKey) -> Result<(), Stale> {
        let Some(caches) = self.caches.get() else {
            return Ok(());
        };
        let mut writes = self.writes.lock();
        let records = &mut writes.records;
        let Some(record) = records.get(key) else {
            return Ok(());
        };
        if let Some(stale) = stale(caches, record) {
            return Err(stale);
        }
        records.remove(key);
        self.pending.store(records.len(), Ordering::Release);
        Ok(())
    }

    /// Whether any write's watch event is expected (one atomic load: what a handler checks
    /// per event before calling [`take_echo`](Self::take_echo)).
    #[inline]
    pub(crate) fn expects_echoes(&self) -> bool {
        self.echoes.load(Ordering::Acquire) != 0
    }

    /// Takes out of `keys` (what a handler on the cache of `resource` is about to queue for
    /// a change that left `object` at resource version `rv`) the key whose reconcile wrote
    /// exactly that — the change is the watch echo of that write — and queues it through
    /// `queue` now, under the gate's lock, unless that key has already been reconciled with
    /// the write in the cache (then the echo queues nothing: the controller knows about it).
    /// Queuing at once, rather than with the handler's next batch, keeps the decision and the
    /// queuing together: a worker releasing the key meanwhile would otherwise run it twice.
    /// Any other change queues as usual.
    #[inline(never)]
    pub(crate) fn take_echo(
        &self,
        resource: &ResourceId,
        object: &ObjectKey,
        rv: &str,
        keys: &mut Vec<ObjectKey>,
        queue: &dyn Queue<ObjectKey>,
        priority: i32,
    ) {
        let Some(rv) = as_u64(rv) else {
            return;
        };
        let mut writes = self.writes.lock();
        writes.expire_echoes(Instant::now());
        let entry = (object.clone(), rv);
        let is_echo = writes
            .echoes
            .get(&entry)
            .is_some_and(|echo| echo.resource == *resource);
        let echo = if is_echo {
            writes.echoes.remove(&entry)
        } else {
            None
        };
        self.echoes.store(writes.echoes.len(), Ordering::Release);
        let Some(echo) = echo else {
            return;
        };
        let before = keys.len();
        keys.retain(|k| *k != echo.owner);
        if keys.len() != before && writes.records.contains_key(&echo.owner) {
            queue.add_with_priority(echo.owner, priority);
        }
    }

    /// How many keys wait for their writes to be cached.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// How many watch events of writes are expected.
    #[cfg(test)]
    pub(crate) fn expected_echoes(&self) -> usize {
        self.echoes.load(Ordering::Acquire)
    }
}

/// The client a controller's reconciles get ([`ControllerContext::client`]): the factory's
/// client, wrapped to record writes when read-your-own-writes is on. The wrapper is made on
/// first use, inside the runtime (kube's client spawns a task).
///
/// [`ControllerContext::client`]: crate::controller::ControllerContext::client
pub(crate) struct ReconcileClient {
    plain: Option<kube::Client>,
    gate: Option<Arc<Gate>>,
    tracking: OnceLock<kube::Client>,
}

impl ReconcileClient {
    pub(crate) fn new(plain: Option<kube::Client>, gate: Option<Arc<Gate>>) -> Self {
        Self {
            plain,
            gate,
            tracking: OnceLock::new(),
        }
    }

    /// Marks the client as handed out to reconciles (a context holds it): from now on every
    /// reconcile runs in a scope that attributes its writes.
    pub(crate) fn handed_out(&self) {
        if let Some(gate) = &self.gate {
            gate.clients.store(true, Ordering::Release);
        }
    }

    /// The client (`None` without one). Outside a Tokio runtime, where no reconcile runs,
    /// the plain client.
    pub(crate) fn get(&self) -> Option<&kube::Client> {
        let plain = self.plain.as_ref()?;
        let Some(gate) = &self.gate else {
            return Some(plain);
        };
        if let Some(tracking) = self.tracking.get() {
            return Some(tracking);
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Some(plain);
        }
        Some(
            self.tracking
                .get_or_init(|| tracking_client(plain.clone(), gate.clone())),
        )
    }
}

/// Forgets the records whose caches caught up, and the expected echoes whose cache is past
/// them and whose owner was reconciled since (their event came unnoticed, or never will:
/// outside the cache's selector). Missing an echo costs at most one extra reconcile.
fn sweep(
    caches: &[Cache],
    records: &mut HashMap<ObjectKey, Record>,
    echoes: &mut HashMap<(ObjectKey, u64), Echo>,
) {
    records.retain(|_, record| stale(caches, record).is_some());
    echoes.retain(|(_, rv), echo| {
        if records.contains_key(&echo.owner) {
            return true;
        }
        // Kept while a cache of its resource has not reached it.
        caches
            .iter()
            .filter(|c| c.resource == echo.resource)
            .any(|c| match c.version.get() {
                Reached::Nothing => true,
                Reached::At(n) => n < *rv,
                Reached::Untracked => false,
            })
    });
}

/// The first cache of `record` that has not reached what was written, if any.
fn stale(caches: &[Cache], record: &Record) -> Option<Stale> {
    let deletion = record.deletes.iter().find_map(|(index, object, uid)| {
        let cache = &caches[*index];
        (cache.holds)(object, uid).then(|| Stale {
            resource: cache.resource.clone(),
            waiting: Waiting::Deletion {
                object: object.clone(),
            },
        })
    });
    if deletion.is_some() {
        return deletion;
    }
    record.waits.iter().find_map(|&(index, wrote)| {
        let cache = &caches[index];
        let read = match cache.version.get() {
            Reached::At(n) if n >= wrote => return None,
            // Not tracked (any more): nothing to wait for.
            Reached::Untracked => return None,
            Reached::At(n) => Some(n),
            Reached::Nothing => None,
        };
        Some(Stale {
            resource: cache.resource.clone(),
            waiting: Waiting::Version { wrote, read },
        })
    })
}

#[cfg(test)]
mod tests;
