//! [`DeltaFifo`]: deltas accumulate per key and pop together (client-go's `DeltaFIFO`).

use std::collections::VecDeque;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{
    Consumers, Delta, FastMap, FastSet, Fifo, PopState, SyncCounter, state_after, take_next,
};
use crate::error::FifoError;
use crate::handler::Deleted;
use crate::key::{KeyFn, ObjectKey, resource_key};
use crate::store::Store;

/// Once the queue drains, its memory is given back if it grew beyond this many keys.
const SHRINK_ABOVE: usize = 4096;

/// A FIFO of keys, each holding every change (delta) queued for it since it was last popped:
/// client-go's `DeltaFIFO`.
///
/// # Guarantees
/// - **Per-key accumulation.** Deltas pushed for one key are kept together, oldest first;
///   [`pop`](Fifo::pop) hands all deltas of one key to `process` as one `Vec`, and nothing
///   of that key is left behind.
/// - **Order of keys.** Keys pop in the order they were first queued (a key pushed again
///   while queued keeps its place; a key pushed after it was popped goes to the back).
/// - **Delete dedup.** If the two newest deltas of a key are both deletes, only one is kept:
///   an observed delete ([`Deleted::Object`]) wins over a tombstone
///   ([`Deleted::FinalStateUnknown`]); of two observed deletes the older is kept, of two
///   tombstones the newer.
/// - **Deletes of unknown objects are dropped** (client-go's rule): a delete of a key that has
///   nothing queued is ignored if the known-objects store does not hold the key either, or
///   always if there is no known-objects store. The object was presumably already reported
///   deleted by a relist. Without a known-objects store this also drops deletes of objects
///   that were popped earlier, so an informer must pass its cache as known objects.
/// - **Relists** ([`replace`](Fifo::replace)) queue a [`Delta::Replaced`] per listed object,
///   then a [`Deleted::FinalStateUnknown`] tombstone for every key that is queued or known
///   but missing from the list — unless the key's newest queued delta is already a delete.
///   The tombstone's `last_known` is the newest queued object of the key, else the known
///   store's object. The resource version is not used.
/// - **Resyncs** ([`resync`](Fifo::resync)) queue a [`Delta::Sync`] of every known object
///   whose key has nothing queued (nothing without a known-objects store).
/// - **`has_synced`** turns true once every key queued by the first `replace` has been popped
///   *and* its `process` call has returned. If an add, update or delete comes before any
///   replace, there is no initial population: `has_synced` is true at once, and a later
///   first replace does not make one (as client-go's). Inside `process`, `!has_synced()` is
///   client-go's `isInInitialList`.
/// - **Consistent while processing.** `process` runs outside the FIFO's lock, so pushes never
///   wait for a slow consumer. While a key is being processed, the FIFO answers for that key
///   from the state the store will hold once `process` returns (the newest popped object, or
///   absent after a delete), never from the store's not-yet-updated state. So a delete racing
///   with the processing of the object's add is not lost, and a relist or resync never uses a
///   state older than what was popped.
/// - **One consumer at a time.** Concurrent `pop` calls are serialized: `process` calls never
///   overlap, and each key is handed out once.
/// - **Close.** After [`close`](Fifo::close) pushes fail with [`FifoError::Closed`]; what is
///   queued is still handed out, then `pop` fails with [`FifoError::Closed`].
///
/// # Does not
/// - carry bookmarks: [`bookmark`](Fifo::bookmark) is a no-op (the informer's store is not
///   told about resource versions through this FIFO);
/// - merge anything but two consecutive deletes: an add followed by an update pops as two
///   deltas;
/// - count items processed if `process` panics: those items are lost and `has_synced` stays
///   false if they belonged to the initial list.
///
/// The known-objects store must key objects with the same key function as this FIFO.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::fifo::{Delta, DeltaFifo, Fifo};
/// use k8s_openapi::api::core::v1::Pod;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let pod = |v: &str| {
///     let mut p = Pod::default();
///     p.metadata.name = Some("web-0".into());
///     p.metadata.namespace = Some("default".into());
///     p.metadata.resource_version = Some(v.into());
///     Arc::new(p)
/// };
/// let fifo = DeltaFifo::<Pod>::new(None);
/// fifo.add(pod("1")).unwrap();
/// fifo.update(pod("2")).unwrap();
/// assert_eq!(fifo.len(), 1); // one key
///
/// let mut popped = Vec::new();
/// fifo.pop(&mut |deltas| popped = deltas).await.unwrap();
/// assert!(matches!(&popped[..], [Delta::Added(_), Delta::Updated(_)]));
/// # }
/// ```
pub struct DeltaFifo<K> {
    key_fn: KeyFn<K>,
    known_objects: Option<Arc<dyn Store<K>>>,
    state: Mutex<State<K>>,
    /// Wakes consumers waiting in `pop`: when the queue goes from empty to non-empty, when the
    /// pop slot is released while another consumer waits, and on close.
    notify: Notify,
}

struct State<K> {
    /// The deltas of every queued key; never empty. A key is here iff it is in `queue`.
    items: FastMap<ObjectKey, Vec<Delta<K>>>,
    /// Queued keys in first-queued order, without duplicates.
    queue: VecDeque<ObjectKey>,
    /// The key whose deltas are being processed, if any.
    in_flight: Option<InFlight<K>>,
    sync: SyncCounter,
    consumers: Consumers,
    closed: bool,
}

/// A key handed to `process` that has not returned yet.
struct InFlight<K> {
    key: ObjectKey,
    /// The state the store will hold for `key` once processing returns: the newest popped
    /// object, or `None` if the newest popped delta was a delete.
    after: Option<Arc<K>>,
}

impl<K> State<K> {
    /// Appends `delta` to `key`'s deltas (collapsing two consecutive deletes); queues the key
    /// if it was not queued. Returns whether the queue went from empty to non-empty.
    fn queue_delta(&mut self, key: ObjectKey, delta: Delta<K>) -> bool {
        match self.items.entry(key) {
            Entry::Occupied(mut entry) => {
                let deltas = entry.get_mut();
                match delta {
                    Delta::Deleted(new) => match deltas.last_mut() {
                        // Two deletes in a row: keep the one with the most information. A
                        // tombstone gives way to whatever comes next; an observed delete stays.
                        Some(Delta::Deleted(old)) => {
                            if !old.is_observed() {
                                *old = new;
                            }
                        }
                        _ => deltas.push(Delta::Deleted(new)),
                    },
                    delta => deltas.push(delta),
                }
                false
            }
            Entry::Vacant(entry) => {
                self.queue.push_back(entry.key().clone());
                entry.insert(vec![delta]);
                self.queue.len() == 1
            }
        }
    }

    /// The in-flight record for `key`, if `key` is being processed.
    fn in_flight(&self, key: &ObjectKey) -> Option<&InFlight<K>> {
        self.in_flight.as_ref().filter(|f| f.key == *key)
    }

    /// Removes the front key and its deltas and marks the key in flight.
    /// Returns the deltas and how many initial-population items they count for.
    fn take_front(&mut self) -> Option<(Vec<Delta<K>>, usize)> {
        while let Some(key) = self.queue.pop_front() {
            // `items` and `queue` hold the same keys; a miss would be a bug, skip it rather
            // than hand out an empty batch.
            let Some(deltas) = self.items.remove(&key) else {
                continue;
            };
            if self.queue.is_empty() && self.items.capacity() > SHRINK_ABOVE {
                // Give back the memory of a large burst (a relist) once it has drained.
                self.items.shrink_to(0);
                self.queue.shrink_to(0);
            }
            let initial = self.sync.popped(1);
            let after = deltas.last().and_then(state_after).cloned();
            self.in_flight = Some(InFlight { key, after });
            return Some((deltas, initial));
        }
        None
    }
}

impl<K: Resource> DeltaFifo<K> {
    /// An empty FIFO keyed by `namespace/name` ([`resource_key`]).
    ///
    /// `known_objects` is the consumer's cache (an informer passes its store): it decides
    /// which objects a relist reports deleted, which deletes are dropped, and what a resync
    /// re-delivers. See the type's documentation.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{DeltaFifo, Fifo};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let fifo = DeltaFifo::<Pod>::new(None);
    /// assert!(fifo.is_empty());
    /// assert!(fifo.add(Arc::new(Pod::default())).is_err()); // no name, no key
    /// ```
    pub fn new(known_objects: Option<Arc<dyn Store<K>>>) -> Self {
        Self::with_key_fn(resource_key::<K>, known_objects)
    }
}

impl<K> DeltaFifo<K> {
    /// An empty FIFO that keys objects with `key_fn`.
    ///
    /// `key_fn` runs once per pushed object, outside the FIFO's lock. The known-objects store,
    /// if any, must key objects the same way.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{DeltaFifo, Fifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = DeltaFifo::with_key_fn(key, None);
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert_eq!(fifo.len(), 1);
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>, known_objects: Option<Arc<dyn Store<K>>>) -> Self {
        Self {
            key_fn,
            known_objects,
            state: Mutex::new(State {
                items: FastMap::default(),
                queue: VecDeque::new(),
                in_flight: None,
                sync: SyncCounter::default(),
                consumers: Consumers::default(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    fn wake_if(&self, became_non_empty: bool) {
        if became_non_empty {
            self.notify.notify_one();
        }
    }

    /// Whether the consumer will hold an object under `key` once what is in flight has been
    /// processed, for a key with nothing queued (client-go's `knownObjects.GetByKey`).
    fn known_unqueued(&self, st: &State<K>, key: &ObjectKey) -> bool {
        match &self.known_objects {
            None => false,
            Some(store) => match st.in_flight(key) {
                Some(f) => f.after.is_some(),
                None => store.get(key).is_some(),
            },
        }
    }

    fn push(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = st.queue_delta(key, make(obj));
        st.sync.populate_by_event();
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Waits for a key, pops it and passes its deltas to `process`.
    async fn pop_with<F: FnOnce(Vec<Delta<K>>)>(&self, process: F) -> Result<(), FifoError> {
        let (deltas, initial) = take_next(&self.state, &self.notify).await?;
        let mut settle = Settle {
            state: &self.state,
            notify: &self.notify,
            initial,
            processed: false,
        };
        process(deltas);
        settle.processed = true;
        Ok(())
    }
}

impl<K> PopState for State<K> {
    type Taken = (Vec<Delta<K>>, usize);

    fn consumers(&mut self) -> &mut Consumers {
        &mut self.consumers
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    fn take(&mut self) -> Option<Self::Taken> {
        self.take_front()
    }
}

/// Ends the in-flight state of a popped key when `process` returns (or unwinds).
struct Settle<'a, K> {
    state: &'a Mutex<State<K>>,
    notify: &'a Notify,
    initial: usize,
    processed: bool,
}

impl<K> Drop for Settle<'_, K> {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        st.in_flight = None;
        if self.processed {
            st.sync.processed(self.initial);
        }
        let wake = st.consumers.release();
        drop(st);
        if wake {
            self.notify.notify_one();
        }
    }
}

#[async_trait]
impl<K: Send + Sync + 'static> Fifo<K> for DeltaFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, Delta::Added)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, Delta::Updated)
    }

    /// Queues a delete, or drops it if the key has nothing queued and is not known (see the
    /// type's documentation).
    fn delete(&self, obj: Arc<K>) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = if st.items.contains_key(&key) || self.known_unqueued(&st, &key) {
            st.queue_delta(key, Delta::Deleted(Deleted::Object(obj)))
        } else {
            false
        };
        st.sync.populate_by_event();
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: String) -> Result<(), FifoError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let was_empty = st.queue.is_empty();
        let mut listed = FastSet::with_capacity_and_hasher(keys.len(), Default::default());
        for (key, obj) in keys.into_iter().zip(objects) {
            listed.insert(key.clone());
            st.queue_delta(key, Delta::Replaced(obj));
        }

        // Queued keys missing from the list: a tombstone with the newest queued object,
        // unless the newest delta already is a delete. These keys stay where they are.
        let State {
            items,
            queue,
            in_flight,
            ..
        } = &mut *st;
        for key in queue.iter() {
            if listed.contains(key) {
                continue;
            }
            let Some(deltas) = items.get_mut(key) else {
                continue;
            };
            let last_known = match deltas.last() {
                Some(Delta::Deleted(_)) => continue,
                newest => newest.and_then(state_after).cloned(),
            };
            deltas.push(Delta::Deleted(Deleted::FinalStateUnknown {
                key: key.clone(),
                last_known,
            }));
        }

        // The key being processed, if it has nothing queued: its state is the popped one.
        let in_flight_key = in_flight.as_ref().map(|f| f.key.clone());
        if let Some(f) = in_flight.as_ref()
            && !listed.contains(&f.key)
            && !items.contains_key(&f.key)
            && let Some(obj) = f.after.clone()
        {
            let key = f.key.clone();
            let tombstone = Deleted::FinalStateUnknown {
                key: key.clone(),
                last_known: Some(obj),
            };
            st.queue_delta(key, Delta::Deleted(tombstone));
        }

        // Known keys with nothing queued, missing from the list: a tombstone with the
        // store's object.
        if let Some(store) = &self.known_objects {
            for key in store.list_keys() {
                if listed.contains(&key)
                    || st.items.contains_key(&key)
                    || in_flight_key.as_ref() == Some(&key)
                {
                    continue;
                }
                let last_known = store.get(&key);
                let tombstone = Deleted::FinalStateUnknown {
                    key: key.clone(),
                    last_known,
                };
                st.queue_delta(key, Delta::Deleted(tombstone));
            }
        }

        let queued = st.queue.len();
        st.sync.populate(queued);
        drop(st);
        self.wake_if(was_empty && queued > 0);
        Ok(())
    }

    fn resync(&self) -> Result<(), FifoError> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let Some(store) = &self.known_objects else {
            return Ok(());
        };
        let was_empty = st.queue.is_empty();
        // The key being processed counts as known with its popped state.
        let in_flight = st
            .in_flight
            .as_ref()
            .map(|f| (f.key.clone(), f.after.clone()));
        if let Some((key, Some(obj))) = &in_flight
            && !st.items.contains_key(key)
        {
            st.queue_delta(key.clone(), Delta::Sync(obj.clone()));
        }
        for key in store.list_keys() {
            if st.items.contains_key(&key) || in_flight.as_ref().is_some_and(|(k, _)| *k == key) {
                continue;
            }
            if let Some(obj) = store.get(&key) {
                st.queue_delta(key, Delta::Sync(obj));
            }
        }
        let non_empty = !st.queue.is_empty();
        drop(st);
        self.wake_if(was_empty && non_empty);
        Ok(())
    }

    /// A no-op: a `DeltaFifo` carries no bookmarks (client-go's `DeltaFIFO` has none either).
    ///
    /// # Errors
    /// [`FifoError::Closed`] after [`close`](Fifo::close).
    fn bookmark(&self, _resource_version: String) -> Result<(), FifoError> {
        if self.state.lock().closed {
            return Err(FifoError::Closed);
        }
        Ok(())
    }

    /// Waits for a key, removes it and passes all its deltas, oldest first, to `process`.
    async fn pop(&self, process: &mut (dyn FnMut(Vec<Delta<K>>) + Send)) -> Result<(), FifoError> {
        self.pop_with(process).await
    }

    fn has_synced(&self) -> bool {
        self.state.lock().sync.has_synced()
    }

    /// The number of queued keys.
    fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("DeltaFifo")
            .field("queued_keys", &st.queue.len())
            .field("in_flight", &st.in_flight.as_ref().map(|i| &i.key))
            .field("has_synced", &st.sync.has_synced())
            .field("closed", &st.closed)
            .field("has_known_objects", &self.known_objects.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests;
