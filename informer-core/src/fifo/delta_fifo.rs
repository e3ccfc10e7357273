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
///   replace, the keys queued at that moment form the initial population instead (client-go
///   reports synced at once there; this FIFO waits until they are processed, as the
///   [`Fifo::has_synced`] contract says). Inside `process`, `!has_synced()` is client-go's
///   `isInInitialList`.
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
        let queued = st.queue.len();
        st.sync.populate(queued);
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
        let queued = st.queue.len();
        st.sync.populate(queued);
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
mod tests {
    use std::future::Future;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::error::KeyError;
    use crate::fifo::test_support::{
        MapStore, Obj, drain, obj, obj_key, pop_now, show_all, try_pop,
    };

    /// Pops one ready key, running `during` inside `process`.
    fn pop_now_during(f: &DeltaFifo<Obj>, during: impl FnOnce() + Send) -> Vec<String> {
        let mut during = Some(during);
        let mut out = Vec::new();
        futures::FutureExt::now_or_never(f.pop(&mut |deltas| {
            if let Some(during) = during.take() {
                during();
            }
            out = show_all(&deltas);
        }))
        .expect("a key is ready")
        .expect("the FIFO is open");
        out
    }

    fn fifo() -> DeltaFifo<Obj> {
        DeltaFifo::with_key_fn(obj_key, None)
    }

    fn fifo_known(known: &[Arc<Obj>]) -> (Arc<DeltaFifo<Obj>>, Arc<MapStore>) {
        let store = MapStore::with(known);
        let dyn_store: Arc<dyn Store<Obj>> = store.clone();
        (
            Arc::new(DeltaFifo::with_key_fn(obj_key, Some(dyn_store))),
            store,
        )
    }

    #[test]
    fn fifo_is_object_safe() {
        fn _obj_safe(_: Arc<dyn Fifo<Obj>>) {}
        _obj_safe(Arc::new(fifo()));
    }

    #[test]
    fn pop_returns_all_deltas_of_a_key_oldest_first() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.update(obj("a", 2)).unwrap();
        f.delete(obj("a", 3)).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(pop_now(&f), ["Added(a@1)", "Updated(a@2)", "Deleted(a@3)"]);
        assert!(f.is_empty());
    }

    #[test]
    fn keys_pop_in_first_queued_order() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        f.update(obj("a", 2)).unwrap();
        f.add(obj("c", 1)).unwrap();
        assert_eq!(
            drain(&f),
            [
                vec!["Added(a@1)", "Updated(a@2)"],
                vec!["Added(b@1)"],
                vec!["Added(c@1)"]
            ]
        );
    }

    #[test]
    fn key_pushed_again_after_pop_goes_to_the_back() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        assert_eq!(pop_now(&f), ["Added(a@1)"]);
        f.update(obj("a", 2)).unwrap();
        assert_eq!(drain(&f), [vec!["Added(b@1)"], vec!["Updated(a@2)"]]);
    }

    #[test]
    fn len_counts_keys_not_deltas() {
        let f = fifo();
        for v in 0..5 {
            f.update(obj("a", v)).unwrap();
        }
        f.add(obj("b", 0)).unwrap();
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn two_consecutive_observed_deletes_collapse_keeping_the_older() {
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.delete(obj("a", 2)).unwrap();
        f.delete(obj("a", 3)).unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);
    }

    #[test]
    fn two_consecutive_deletes_collapse_real_object_wins() {
        // A relist tombstones `a`; the observed delete that follows replaces the tombstone.
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.replace(vec![], "5".into()).unwrap();
        f.delete(obj("a", 2)).unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);

        // An observed delete followed by a relist without the object: no tombstone added.
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.delete(obj("a", 2)).unwrap();
        f.replace(vec![], "5".into()).unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(a@2)"]);
    }

    #[test]
    fn deletes_separated_by_another_delta_are_kept() {
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.delete(obj("a", 1)).unwrap();
        f.add(obj("a", 2)).unwrap();
        f.delete(obj("a", 2)).unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(a@1)", "Added(a@2)", "Deleted(a@2)"]);
    }

    #[test]
    fn delete_of_object_neither_known_nor_queued_is_dropped() {
        let (f, _) = fifo_known(&[obj("known", 1)]);
        f.delete(obj("stranger", 1)).unwrap();
        assert!(f.is_empty());
        f.delete(obj("known", 2)).unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(known@2)"]);
    }

    #[test]
    fn delete_without_known_objects_is_dropped_unless_queued() {
        let f = fifo();
        f.delete(obj("a", 1)).unwrap();
        assert!(f.is_empty());
        f.add(obj("b", 1)).unwrap();
        f.delete(obj("b", 2)).unwrap();
        assert_eq!(pop_now(&f), ["Added(b@1)", "Deleted(b@2)"]);
    }

    #[test]
    fn replace_emits_replaced_and_tombstones_for_vanished_known_objects() {
        let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
        f.replace(vec![obj("a", 2), obj("c", 1)], "7".into())
            .unwrap();
        assert_eq!(
            drain(&*f),
            [
                vec!["Replaced(a@2)"],
                vec!["Replaced(c@1)"],
                vec!["Gone(b, b@1)"]
            ]
        );
    }

    #[test]
    fn replace_tombstone_carries_last_known_state() {
        // The newest queued object wins over the store's.
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.update(obj("a", 2)).unwrap();
        f.replace(vec![], "7".into()).unwrap();
        assert_eq!(pop_now(&*f), ["Updated(a@2)", "Gone(a, a@2)"]);
    }

    #[test]
    fn replace_without_known_objects_tombstones_queued_keys_missing_from_the_list() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        f.replace(vec![obj("b", 2)], "7".into()).unwrap();
        assert_eq!(
            drain(&f),
            [
                vec!["Added(a@1)", "Gone(a, a@1)"],
                vec!["Added(b@1)", "Replaced(b@2)"]
            ]
        );
    }

    #[test]
    fn replace_refuses_the_whole_list_if_an_object_has_no_key() {
        let (f, _) = fifo_known(&[obj("a", 1)]);
        let err = f.replace(vec![obj("b", 1), obj("", 1)], "7".into());
        assert!(matches!(
            err,
            Err(FifoError::Key(KeyError::MissingName { .. }))
        ));
        assert!(f.is_empty());
        assert!(!f.has_synced());
    }

    #[test]
    fn resync_skips_keys_with_queued_deltas() {
        let (f, _) = fifo_known(&[obj("a", 1), obj("b", 1)]);
        f.update(obj("a", 2)).unwrap();
        f.resync().unwrap();
        assert_eq!(drain(&*f), [vec!["Updated(a@2)"], vec!["Sync(b@1)"]]);
    }

    #[test]
    fn resync_without_known_objects_queues_nothing() {
        let f = fifo();
        f.resync().unwrap();
        assert!(f.is_empty());
    }

    #[test]
    fn bookmark_is_a_no_op() {
        let f = fifo();
        f.bookmark("9".into()).unwrap();
        assert!(f.is_empty());
        assert!(!f.has_synced());
    }

    #[test]
    fn has_synced_is_false_before_anything_is_pushed() {
        assert!(!fifo().has_synced());
    }

    #[test]
    fn has_synced_after_first_list_is_processed_not_just_popped() {
        let (f, _) = fifo_known(&[]);
        f.replace(vec![obj("a", 1), obj("b", 1)], "1".into())
            .unwrap();
        f.add(obj("c", 1)).unwrap(); // after the list: not part of it
        assert!(!f.has_synced());
        // (has_synced inside `process`, has_synced after it returned), for a, b, c.
        for expected in [(false, false), (false, true), (true, true)] {
            let fifo = f.clone();
            let mut inside = None;
            futures::FutureExt::now_or_never(f.pop(&mut |_| inside = Some(fifo.has_synced())))
                .unwrap()
                .unwrap();
            assert_eq!((inside.unwrap(), f.has_synced()), expected);
        }
    }

    #[test]
    fn has_synced_after_first_push_before_any_replace_is_processed() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        assert!(!f.has_synced());
        f.replace(vec![obj("b", 1)], "1".into()).unwrap(); // not the first: no new population
        pop_now(&f);
        assert!(f.has_synced());
    }

    #[test]
    fn has_synced_with_empty_first_list_is_immediate() {
        let f = fifo();
        f.replace(vec![], "1".into()).unwrap();
        assert!(f.has_synced());
    }

    #[test]
    fn object_without_name_is_refused() {
        let f = DeltaFifo::<Pod>::new(None);
        let nameless = Arc::new(Pod::default());
        for result in [
            f.add(nameless.clone()),
            f.update(nameless.clone()),
            f.delete(nameless.clone()),
            f.replace(vec![nameless], "1".into()),
        ] {
            assert!(matches!(
                result,
                Err(FifoError::Key(KeyError::MissingName { kind: "Pod" }))
            ));
        }
        assert!(f.is_empty());
    }

    #[test]
    fn new_keys_resources_by_namespace_and_name() {
        let f = DeltaFifo::<Pod>::new(None);
        let mut pod = Pod::default();
        pod.metadata.name = Some("web".into());
        pod.metadata.namespace = Some("prod".into());
        let pod = Arc::new(pod);
        f.add(pod.clone()).unwrap();
        f.update(pod).unwrap();
        assert_eq!(f.len(), 1);
        assert_eq!(
            format!("{:?}", f.state.lock().queue),
            "[ObjectKey(prod/web)]"
        );
    }

    #[test]
    fn pushes_after_close_are_refused() {
        let (f, _) = fifo_known(&[obj("a", 1)]);
        f.close();
        assert!(f.is_closed());
        assert_eq!(f.add(obj("a", 1)), Err(FifoError::Closed));
        assert_eq!(f.update(obj("a", 1)), Err(FifoError::Closed));
        assert_eq!(f.delete(obj("a", 1)), Err(FifoError::Closed));
        assert_eq!(f.replace(vec![], "1".into()), Err(FifoError::Closed));
        assert_eq!(f.resync(), Err(FifoError::Closed));
        assert_eq!(f.bookmark("1".into()), Err(FifoError::Closed));
        assert!(f.is_empty());
    }

    #[test]
    fn pop_after_close_drains_then_errors() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        f.close();
        assert_eq!(drain(&f), [vec!["Added(a@1)"], vec!["Added(b@1)"]]);
        assert!(matches!(try_pop(&f), Some(Err(FifoError::Closed))));
    }

    #[tokio::test]
    async fn pop_waits_for_push() {
        let f = Arc::new(fifo());
        let consumer = f.clone();
        let task = tokio::spawn(async move {
            let mut got = Vec::new();
            consumer
                .pop(&mut |deltas| got = deltas)
                .await
                .map(|()| show_all(&got))
        });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!task.is_finished());
        f.add(obj("a", 1)).unwrap();
        assert_eq!(task.await.unwrap().unwrap(), ["Added(a@1)"]);
    }

    #[tokio::test]
    async fn close_wakes_a_waiting_pop() {
        let f = Arc::new(fifo());
        let consumer = f.clone();
        let task = tokio::spawn(async move { consumer.pop(&mut |_| {}).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        f.close();
        assert_eq!(task.await.unwrap(), Err(FifoError::Closed));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_pops_never_overlap_and_hand_out_each_key_once() {
        const KEYS: usize = 2000;
        let f = Arc::new(fifo());
        let busy = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let mut consumers = Vec::new();
        for _ in 0..3 {
            let (f, busy, seen) = (f.clone(), busy.clone(), seen.clone());
            consumers.push(tokio::spawn(async move {
                while f
                    .pop(&mut |deltas| {
                        assert!(!busy.swap(true, Ordering::SeqCst), "process calls overlap");
                        seen.fetch_add(deltas.len(), Ordering::SeqCst);
                        busy.store(false, Ordering::SeqCst);
                    })
                    .await
                    .is_ok()
                {}
            }));
        }
        let producer = {
            let f = f.clone();
            tokio::task::spawn_blocking(move || {
                for i in 0..KEYS {
                    f.add(obj(&i.to_string(), 0)).unwrap();
                }
            })
        };
        producer.await.unwrap();
        f.close();
        for c in consumers {
            c.await.unwrap();
        }
        assert_eq!(seen.load(Ordering::SeqCst), KEYS);
    }

    /// A waker that records whether it was woken.
    struct Flag(AtomicBool);

    impl std::task::Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_consumer_waiting_for_the_pop_slot_is_woken_when_it_is_released() {
        let f = Arc::new(fifo());
        f.add(obj("a", 1)).unwrap();
        f.add(obj("b", 1)).unwrap();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let waker = std::task::Waker::from(flag.clone());
        let second = f.clone();
        let mut second_got = Vec::new();
        let mut second_pop = Box::pin(async move {
            second
                .pop(&mut |d| second_got = d)
                .await
                .map(|()| show_all(&second_got))
        });
        // While the first consumer processes `a`, the second one must wait for the slot,
        // although `b` is queued.
        let first = pop_now_during(&f, || {
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(second_pop.as_mut().poll(&mut cx).is_pending());
        });
        let mut cx = std::task::Context::from_waker(&waker);
        assert_eq!(first, ["Added(a@1)"]);
        assert!(
            flag.0.load(Ordering::SeqCst),
            "releasing the slot wakes the waiting consumer"
        );
        match second_pop.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(got) => assert_eq!(got.unwrap(), ["Added(b@1)"]),
            std::task::Poll::Pending => panic!("the second consumer should have taken b"),
        }
        assert_eq!(f.state.lock().consumers.waiting, 0);
    }

    #[test]
    fn a_cancelled_pop_leaves_nothing_behind() {
        let f = fifo();
        let mut process = |_| panic!("nothing was queued");
        let mut waiting = Box::pin(f.pop(&mut process));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        assert_eq!(f.state.lock().consumers.waiting, 1);
        drop(waiting);
        assert_eq!(f.state.lock().consumers.waiting, 0);
        f.add(obj("a", 1)).unwrap();
        assert_eq!(pop_now(&f), ["Added(a@1)"]);
    }

    #[test]
    fn queue_memory_is_given_back_after_a_large_burst() {
        let f = fifo();
        for i in 0..2 * SHRINK_ABOVE {
            f.add(obj(&i.to_string(), 1)).unwrap();
        }
        drain(&f);
        let st = f.state.lock();
        assert!(st.items.capacity() < SHRINK_ABOVE);
        assert!(st.queue.capacity() < SHRINK_ABOVE);
    }

    #[test]
    fn delete_while_the_add_is_processed_is_not_dropped() {
        // The store does not hold `a` yet while its add is processed; the delete must count
        // `a` as known anyway.
        let (f, store) = fifo_known(&[]);
        f.add(obj("a", 1)).unwrap();
        let fifo = f.clone();
        let popped = futures::FutureExt::now_or_never(f.pop(&mut |deltas| {
            fifo.delete(obj("a", 1)).unwrap();
            for d in deltas {
                if let Delta::Added(o) = d {
                    store.add(o).unwrap();
                }
            }
        }));
        popped.unwrap().unwrap();
        assert_eq!(pop_now(&*f), ["Deleted(a@1)"]);
    }

    #[test]
    fn delete_while_the_delete_is_processed_is_dropped() {
        let (f, _store) = fifo_known(&[obj("a", 1)]);
        f.delete(obj("a", 1)).unwrap();
        let fifo = f.clone();
        futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.delete(obj("a", 1)).unwrap()))
            .unwrap()
            .unwrap();
        assert!(f.is_empty());
    }

    #[test]
    fn replace_while_processing_tombstones_the_popped_state() {
        let (f, _store) = fifo_known(&[obj("a", 1)]);
        f.update(obj("a", 2)).unwrap();
        let fifo = f.clone();
        futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.replace(vec![], "3".into()).unwrap()))
            .unwrap()
            .unwrap();
        assert_eq!(pop_now(&*f), ["Gone(a, a@2)"]);
    }

    #[test]
    fn resync_while_processing_syncs_the_popped_state() {
        let (f, _store) = fifo_known(&[obj("a", 1), obj("b", 1)]);
        f.update(obj("a", 2)).unwrap();
        let fifo = f.clone();
        futures::FutureExt::now_or_never(f.pop(&mut |_| fifo.resync().unwrap()))
            .unwrap()
            .unwrap();
        assert_eq!(drain(&*f), [vec!["Sync(a@2)"], vec!["Sync(b@1)"]]);
    }

    #[test]
    fn debug_shows_the_queue_state() {
        let f = fifo();
        f.add(obj("a", 1)).unwrap();
        let text = format!("{f:?}");
        assert!(text.contains("queued_keys: 1"), "{text}");
    }
}
