//! [`ExpirationCache`]: a [`Store`] whose entries expire, client-go's `ExpirationCache`
//! (`tools/cache/expiration_cache.go`), with its [`ExpirationPolicy`] and the default
//! [`TtlPolicy`].

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube_core::Resource;
use parking_lot::RwLock;

use super::clock::{Clock, RealClock};
use super::{ReplaceDiff, Store, StoreOp};
use crate::error::{KeyError, StoreError};
use crate::key::{KeyFn, ObjectKey, resource_key};

/// One entry of an [`ExpirationCache`]: an object, its key, and when it was written.
/// client-go's `TimestampedEntry`.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Instant;
/// use informer_core::ObjectKey;
/// use informer_core::store::TimestampedEntry;
///
/// let entry = TimestampedEntry { key: ObjectKey::cluster("a"), object: Arc::new(1), timestamp: Instant::now() };
/// assert_eq!(*entry.object, 1);
/// ```
#[derive(Debug, Clone)]
pub struct TimestampedEntry<K> {
    /// The key the object is filed under.
    pub key: ObjectKey,
    /// The object, as given to the write.
    pub object: Arc<K>,
    /// The cache's clock when the object was last written (`add`, `update`, `replace` or
    /// `apply`).
    pub timestamp: Instant,
}

/// Decides when an entry of an [`ExpirationCache`] has expired. client-go's
/// `ExpirationPolicy`.
///
/// The cache asks with the time of its own [`Clock`] (read once per operation), so a policy
/// needs no clock of its own. A policy must not call into the cache that asks it (it is
/// asked under the cache's lock), and should be quick.
///
/// Any `Fn(&TimestampedEntry<K>, Instant) -> bool` is a policy. client-go's
/// `FakeExpirationPolicy` (every key expired but those in a set) is one closure:
///
/// ```
/// use std::collections::HashSet;
/// use std::sync::{Arc, Mutex};
/// use std::time::Duration;
/// use informer_core::ObjectKey;
/// use informer_core::store::{ExpirationCache, Store, TimestampedEntry};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let never_expire = Arc::new(Mutex::new(HashSet::from([ObjectKey::cluster("keep")])));
/// let set = never_expire.clone();
/// let cache = ExpirationCache::<ConfigMap>::new(Duration::ZERO).with_policy(
///     move |entry: &TimestampedEntry<ConfigMap>, _now| !set.lock().unwrap().contains(&entry.key),
/// );
/// for name in ["keep", "drop"] {
///     let mut cm = ConfigMap::default();
///     cm.metadata.name = Some(name.into());
///     cache.add(Arc::new(cm))?;
/// }
/// assert_eq!(cache.list_keys(), [ObjectKey::cluster("keep")]);
/// # Ok::<(), informer_core::StoreError>(())
/// ```
pub trait ExpirationPolicy<K>: Send + Sync {
    /// Whether `entry` has expired at `now`.
    fn is_expired(&self, entry: &TimestampedEntry<K>, now: Instant) -> bool;
}

impl<K, F> ExpirationPolicy<K> for F
where
    F: Fn(&TimestampedEntry<K>, Instant) -> bool + Send + Sync,
{
    fn is_expired(&self, entry: &TimestampedEntry<K>, now: Instant) -> bool {
        self(entry, now)
    }
}

/// Entries expire once they are older than a time to live. client-go's `TTLPolicy`.
///
/// An entry's age is the time since it was last written (a time before the write counts as
/// age zero). It has expired once its age is **more than** the TTL: an entry exactly the TTL
/// old is still live. A TTL of zero means entries never expire (client-go: a TTL `<= 0`).
///
/// ```
/// use std::sync::Arc;
/// use std::time::{Duration, Instant};
/// use informer_core::ObjectKey;
/// use informer_core::store::{ExpirationPolicy, TimestampedEntry, TtlPolicy};
///
/// let policy = TtlPolicy::new(Duration::from_secs(30));
/// let written = Instant::now();
/// let entry = TimestampedEntry { key: ObjectKey::cluster("a"), object: Arc::new(()), timestamp: written };
/// assert!(!policy.is_expired(&entry, written + Duration::from_secs(30)));
/// assert!(policy.is_expired(&entry, written + Duration::from_millis(30_001)));
/// assert!(!TtlPolicy::new(Duration::ZERO).is_expired(&entry, written + Duration::from_secs(3600)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TtlPolicy {
    ttl: Duration,
}

impl TtlPolicy {
    /// Entries expire once older than `ttl`; never if `ttl` is zero.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::store::TtlPolicy;
    ///
    /// assert_eq!(TtlPolicy::new(Duration::from_secs(5)).ttl(), Duration::from_secs(5));
    /// ```
    pub const fn new(ttl: Duration) -> Self {
        Self { ttl }
    }

    /// The time to live; zero means entries never expire.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::store::TtlPolicy;
    ///
    /// assert!(TtlPolicy::new(Duration::ZERO).ttl().is_zero());
    /// ```
    pub const fn ttl(&self) -> Duration {
        self.ttl
    }
}

impl<K> ExpirationPolicy<K> for TtlPolicy {
    fn is_expired(&self, entry: &TimestampedEntry<K>, now: Instant) -> bool {
        !self.ttl.is_zero() && now.saturating_duration_since(entry.timestamp) > self.ttl
    }
}

/// A [`Store`] whose entries expire: client-go's `ExpirationCache` (`NewTTLStore`,
/// `NewExpirationStore`, and with [`with_clock`](Self::with_clock) `NewFakeExpirationStore`).
///
/// Every write stamps what it writes with the time of the cache's [`Clock`]; an
/// [`ExpirationPolicy`] ([`TtlPolicy`] unless [`with_policy`](Self::with_policy) sets another)
/// decides from that stamp when an entry has expired.
///
/// # Guarantees
/// - **An expired entry is never read.** Every read asks the policy about each entry it
///   looks at, with the clock's time read once at the start of that read:
///   [`get`](Store::get) about the one key, [`list`](Store::list),
///   [`list_keys`](Store::list_keys), [`len`](Store::len) and [`is_empty`](Store::is_empty)
///   about every entry. An entry the policy calls expired is left out of the result and
///   counts for nothing. (Unlike client-go, whose `ListKeys` lists expired keys too.)
/// - **Expired entries are removed when read.** The read that finds an entry expired removes
///   it before it returns, unless a write replaced the entry in the meantime (the new one
///   is kept). Nothing removes an entry in the background (this crate runs no task): an
///   expired entry keeps its memory until a read looks at it (`get` of its key, `list`,
///   `list_keys`, `len`, `is_empty`) or a write overwrites or deletes it (`replace` drops
///   every entry it does not list).
/// - **A write restarts the clock of what it writes.** [`add`](Store::add),
///   [`update`](Store::update), [`update_with_key`](Store::update_with_key),
///   [`replace`](Store::replace) and [`apply`](Store::apply) stamp each object they write
///   with the clock's time (one reading per call, shared by every object of a `replace` or
///   `apply`); `replace` restamps objects that did not change.
/// - **Writes see expired entries as absent.** What a write returns as replaced or deleted
///   (and the [`ReplaceDiff`] of a `replace`) holds only entries that had not expired at
///   that write's time: overwriting an expired entry is an add, deleting one returns `None`.
///   Writes never remove other entries because they expired.
/// - As every [`Store`]: each method is atomic (one lock for its whole effect; the removal
///   of what a read found expired takes a second, short write lock and removes only what
///   the policy called expired); reads share the lock; a write with an object without a
///   key changes nothing. The policy is asked before a write changes anything, so a policy
///   that panics leaves the cache as it was (the panic reaches the caller).
///
/// # Cost
/// Reads evaluate the policy under a shared lock: `get` once, `list`, `list_keys` and `len`
/// once per entry (`len` is O(n), not O(1) as in [`ThreadSafeStore`](super::ThreadSafeStore)).
/// A read that found something expired takes the write lock once to remove it. There are no
/// indexes: this is a [`Store`], not an [`Indexer`](super::Indexer), as in client-go.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_core::ObjectKey;
/// use informer_core::store::{ExpirationCache, FakeClock, Store};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let clock = FakeClock::new();
/// let cache = ExpirationCache::<ConfigMap>::new(Duration::from_secs(60)).with_clock(clock.clone());
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cache.add(Arc::new(cm))?;
///
/// let key = ObjectKey::cluster("settings");
/// clock.advance(Duration::from_secs(60));
/// assert!(cache.get(&key).is_some()); // exactly the TTL old: still live
/// clock.advance(Duration::from_millis(1));
/// assert!(cache.get(&key).is_none()); // older than the TTL: expired, and removed
/// assert!(cache.list_keys().is_empty());
/// # Ok::<(), informer_core::StoreError>(())
/// ```
pub struct ExpirationCache<K> {
    key_fn: KeyFn<K>,
    /// Whether `key_fn` is `resource_key` (set by [`ExpirationCache::new`]).
    resource_keyed: bool,
    policy: Arc<dyn ExpirationPolicy<K>>,
    clock: Arc<dyn Clock>,
    state: RwLock<State<K>>,
}

/// What the lock guards.
struct State<K> {
    entries: HashMap<ObjectKey, Slot<K>>,
    /// The write number of the next entry written.
    next_seq: u64,
    resource_version: Option<String>,
}

/// An entry and the number of the write that made it, so that a read removing what it found
/// expired can tell that entry from a newer one under the same key.
struct Slot<K> {
    entry: TimestampedEntry<K>,
    seq: u64,
}

impl<K> Slot<K> {
    /// A new entry, numbered with `next_seq`, which moves on.
    fn new(next_seq: &mut u64, key: ObjectKey, object: Arc<K>, timestamp: Instant) -> Self {
        let seq = *next_seq;
        *next_seq += 1;
        Self {
            entry: TimestampedEntry {
                key,
                object,
                timestamp,
            },
            seq,
        }
    }
}

impl<K: Resource> ExpirationCache<K> {
    /// An empty cache of Kubernetes objects, keyed by [`resource_key`], whose entries expire
    /// once older than `ttl` ([`TtlPolicy`]; never if `ttl` is zero), on the system's clock.
    /// client-go's `NewTTLStore(MetaNamespaceKeyFunc, ttl)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_core::store::{ExpirationCache, Store};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let cache = ExpirationCache::<Pod>::new(Duration::from_secs(300));
    /// assert!(cache.is_empty());
    /// assert!(cache.keys_by_resource_key());
    /// ```
    pub fn new(ttl: Duration) -> Self {
        Self {
            resource_keyed: true,
            ..Self::with_key_fn(resource_key::<K>, ttl)
        }
    }
}

impl<K> ExpirationCache<K> {
    /// An empty cache of any object type, keyed by `key_fn`, whose entries expire once older
    /// than `ttl` ([`TtlPolicy`]; never if `ttl` is zero), on the system's clock. client-go's
    /// `NewTTLStore`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::{KeyError, ObjectKey};
    /// use informer_core::store::{ExpirationCache, Store};
    ///
    /// fn key(name: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(name))
    /// }
    /// let cache = ExpirationCache::with_key_fn(key, Duration::from_secs(10));
    /// cache.add(Arc::new("a".to_owned()))?;
    /// assert_eq!(cache.len(), 1);
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>, ttl: Duration) -> Self {
        Self {
            key_fn,
            resource_keyed: false,
            policy: Arc::new(TtlPolicy::new(ttl)),
            clock: Arc::new(RealClock),
            state: RwLock::new(State {
                entries: HashMap::new(),
                next_seq: 0,
                resource_version: None,
            }),
        }
    }

    /// Replaces the TTL policy the constructor set with `policy`, for a cache being built.
    /// client-go's `NewExpirationStore`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::ObjectKey;
    /// use informer_core::store::{ExpirationCache, Store, TimestampedEntry};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// // Objects in the namespace "scratch" expire at once; the others never.
    /// let cache = ExpirationCache::<ConfigMap>::new(Duration::ZERO)
    ///     .with_policy(|e: &TimestampedEntry<ConfigMap>, _now| e.key.namespace() == Some("scratch"));
    /// for ns in ["scratch", "kept"] {
    ///     let mut cm = ConfigMap::default();
    ///     cm.metadata.name = Some("c".into());
    ///     cm.metadata.namespace = Some(ns.into());
    ///     cache.add(Arc::new(cm))?;
    /// }
    /// assert_eq!(cache.list_keys(), [ObjectKey::new(Some("kept"), "c")]);
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn with_policy(mut self, policy: impl ExpirationPolicy<K> + 'static) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// Replaces the system's clock with `clock` (a [`FakeClock`](super::FakeClock) in tests),
    /// for a cache being built: the clock that stamps writes and that reads ask the policy
    /// with. client-go's `NewFakeExpirationStore`'s clock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use informer_core::store::{ExpirationCache, FakeClock, Store};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let clock = FakeClock::new();
    /// let cache = ExpirationCache::<ConfigMap>::new(Duration::from_secs(1)).with_clock(clock.clone());
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("c".into());
    /// cache.add(Arc::new(cm))?;
    /// clock.advance(Duration::from_secs(2));
    /// assert_eq!(cache.len(), 0);
    /// # Ok::<(), informer_core::StoreError>(())
    /// ```
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    fn expired(&self, slot: &Slot<K>, now: Instant) -> bool {
        self.policy.is_expired(&slot.entry, now)
    }

    /// The object of `slot` if it has not expired at `now`.
    fn live(&self, slot: Option<&Slot<K>>, now: Instant) -> Option<Arc<K>> {
        slot.filter(|slot| !self.expired(slot, now))
            .map(|slot| slot.entry.object.clone())
    }

    /// Removes the entries a read found expired, unless a write replaced them since.
    fn purge(&self, expired: &[(ObjectKey, u64)]) {
        if expired.is_empty() {
            return;
        }
        let mut state = self.state.write();
        for (key, seq) in expired {
            if let Entry::Occupied(slot) = state.entries.entry(key.clone())
                && slot.get().seq == *seq
            {
                slot.remove();
            }
        }
    }

    /// Visits every live entry under the shared lock, then removes the expired ones.
    fn read_all(&self, mut visit: impl FnMut(&TimestampedEntry<K>)) {
        let now = self.clock.now();
        let mut expired = Vec::new();
        {
            let state = self.state.read();
            for slot in state.entries.values() {
                if self.expired(slot, now) {
                    expired.push((slot.entry.key.clone(), slot.seq));
                } else {
                    visit(&slot.entry);
                }
            }
        }
        self.purge(&expired);
    }

    fn insert(&self, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
        let now = self.clock.now();
        let mut state = self.state.write();
        // The policy is asked before anything changes: if it panics, nothing has.
        let previous = self.live(state.entries.get(&key), now);
        let State {
            entries, next_seq, ..
        } = &mut *state;
        entries.insert(key.clone(), Slot::new(next_seq, key, obj, now));
        previous
    }
}

impl<K> fmt::Debug for ExpirationCache<K> {
    /// The number of entries (expired ones not yet removed included) and the resource
    /// version; asks the policy nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.read();
        f.debug_struct("ExpirationCache")
            .field("entries", &state.entries.len())
            .field("resource_version", &state.resource_version)
            .finish_non_exhaustive()
    }
}

/// Which list of a [`ReplaceDiff`] holds a key a `replace` wrote, and where.
#[derive(Clone, Copy)]
enum Mark {
    Added(usize),
    Updated(usize),
}

impl<K: Send + Sync> Store<K> for ExpirationCache<K> {
    fn add(&self, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        let key = (self.key_fn)(&obj)?;
        Ok(self.insert(key, obj))
    }

    fn key_of(&self, obj: &K) -> Result<ObjectKey, KeyError> {
        (self.key_fn)(obj)
    }

    fn update_with_key(&self, key: ObjectKey, obj: Arc<K>) -> Result<Option<Arc<K>>, StoreError> {
        Ok(self.insert(key, obj))
    }

    fn keys_by_resource_key(&self) -> bool {
        self.resource_keyed
    }

    fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let now = self.clock.now();
        let mut state = self.state.write();
        let previous = self.live(state.entries.get(key), now);
        state.entries.remove(key);
        previous
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let now = self.clock.now();
        let seq = {
            let state = self.state.read();
            let slot = state.entries.get(key)?;
            if !self.expired(slot, now) {
                return Some(slot.entry.object.clone());
            }
            slot.seq
        };
        self.purge(&[(key.clone(), seq)]);
        None
    }

    fn list(&self) -> Vec<Arc<K>> {
        let mut objects = Vec::new();
        self.read_all(|entry| objects.push(entry.object.clone()));
        objects
    }

    fn list_keys(&self) -> Vec<ObjectKey> {
        let mut keys = Vec::new();
        self.read_all(|entry| keys.push(entry.key.clone()));
        keys
    }

    fn len(&self) -> usize {
        let mut len = 0;
        self.read_all(|_| len += 1);
        len
    }

    fn replace(
        &self,
        objects: Vec<Arc<K>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<K>, StoreError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let now = self.clock.now();
        let mut state = self.state.write();
        // Everything is worked out before anything changes: if the policy panics, nothing has.
        let mut next_seq = state.next_seq;
        let mut written: HashMap<ObjectKey, (Slot<K>, Mark)> = HashMap::with_capacity(keys.len());
        let mut diff = ReplaceDiff::default();
        for (key, obj) in keys.into_iter().zip(objects) {
            let slot = Slot::new(&mut next_seq, key.clone(), obj.clone(), now);
            match written.entry(key) {
                // A key listed twice: the last object wins, reported once.
                Entry::Occupied(mut seen) => {
                    let (stored, mark) = seen.get_mut();
                    *stored = slot;
                    match *mark {
                        Mark::Added(i) => diff.added[i] = obj,
                        Mark::Updated(i) => diff.updated[i].1 = obj,
                    }
                }
                Entry::Vacant(vacant) => {
                    let mark = match self.live(state.entries.get(vacant.key()), now) {
                        Some(previous) => {
                            diff.updated.push((previous, obj));
                            Mark::Updated(diff.updated.len() - 1)
                        }
                        None => {
                            diff.added.push(obj);
                            Mark::Added(diff.added.len() - 1)
                        }
                    };
                    vacant.insert((slot, mark));
                }
            }
        }
        for (key, slot) in &state.entries {
            if !written.contains_key(key)
                && let Some(object) = self.live(Some(slot), now)
            {
                diff.deleted.push((key.clone(), object));
            }
        }
        state.entries = written
            .into_iter()
            .map(|(key, (slot, _))| (key, slot))
            .collect();
        state.next_seq = next_seq;
        state.resource_version = Some(resource_version.to_owned());
        Ok(diff)
    }

    fn resource_version(&self) -> Option<String> {
        self.state.read().resource_version.clone()
    }

    fn set_resource_version(&self, resource_version: &str) {
        let mut state = self.state.write();
        match &mut state.resource_version {
            Some(rv) => {
                rv.clear();
                rv.push_str(resource_version);
            }
            None => state.resource_version = Some(resource_version.to_owned()),
        }
    }

    fn apply(&self, batch: Vec<StoreOp<K>>) -> Result<Vec<Option<Arc<K>>>, StoreError> {
        let keyed = batch
            .into_iter()
            .map(|op| match op {
                StoreOp::Upsert(obj) => Ok(((self.key_fn)(&obj)?, Some(obj))),
                StoreOp::Delete(key) => Ok((key, None)),
            })
            .collect::<Result<Vec<_>, KeyError>>()?;
        let now = self.clock.now();
        let mut state = self.state.write();
        // Everything is worked out before anything changes: if the policy panics, nothing has.
        let mut next_seq = state.next_seq;
        // The batch's last write of each key so far: the entry written, or `None` (deleted).
        let mut last: HashMap<ObjectKey, Option<Slot<K>>> = HashMap::new();
        let mut previous = Vec::with_capacity(keyed.len());
        for (key, obj) in keyed {
            previous.push(match last.get(&key) {
                Some(written) => self.live(written.as_ref(), now),
                None => self.live(state.entries.get(&key), now),
            });
            let slot = obj.map(|obj| Slot::new(&mut next_seq, key.clone(), obj, now));
            last.insert(key, slot);
        }
        state.next_seq = next_seq;
        for (key, slot) in last {
            match slot {
                Some(slot) => state.entries.insert(key, slot),
                None => state.entries.remove(&key),
            };
        }
        Ok(previous)
    }
}

#[cfg(test)]
mod tests;
