//! [`RealFifo`]: every event kept in order, relists as one atomic item (client-go's
//! `RealFIFO` with atomic replace and batch pop).

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::num::NonZeroU64;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use async_trait::async_trait;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Consumers, Delta, FastMap, Fifo, PopState, SyncCounter, take_next};
use crate::error::FifoError;
use crate::handler::Deleted;
use crate::key::{KeyFn, ObjectKey, resource_key};
use crate::store::Store;

/// The per-key map is swept of keys with nothing queued once it holds more than this many
/// keys and more than twice as many as after the previous sweep.
const MIN_SWEEP: usize = 1024;

/// Once the queue drains, its memory is given back if it grew beyond this many items.
const SHRINK_ABOVE: usize = 4096;

/// A FIFO that keeps every event as its own item, in order: client-go's `RealFIFO`, in its
/// newest form (atomic replace, batch pop).
///
/// # Guarantees
/// - **Every event, in order.** Adds, updates, deletes, resyncs and bookmarks are queued as
///   separate items and handed out in the order they were pushed; nothing is merged or
///   dropped (a delete of an object the FIFO never saw is queued too).
/// - **Atomic relists.** [`replace`](Fifo::replace) queues exactly one
///   [`Delta::ReplacedAll`] item holding the whole list. The consumer replaces its store with
///   it in one step (for example with [`Store::replace`]) and derives adds, updates and
///   deletes from the difference; since every item queued before it has been applied by
///   then, the difference also covers objects that vanished while the watch was down. No
///   tombstones are queued, and no bookmark after the list (client-go queues both): the
///   item carries the list's resource version itself.
/// - **Lists in parts** ([`list_part`](Fifo::list_part)): each part is one
///   [`Delta::ListPart`] item, and the `replace` that ends the list queues its objects as a
///   last part and a [`Delta::ListEnd`] carrying the keys of the whole list, so the consumer
///   deletes what the list does not hold. Parts do not count for `has_synced`: the first
///   list is the initial population once its `replace` is queued.
/// - **Resyncs** ([`resync`](Fifo::resync)) queue a [`Delta::Sync`] of every object of the
///   known-objects store whose key has no item queued or being processed. While a
///   `ReplacedAll` is queued or being processed, a resync queues nothing: the relist
///   re-delivers every object anyway, and a `Sync` behind it could bring back an object it
///   removes. Without a known-objects store, a resync queues nothing.
/// - **Bookmarks** ([`bookmark`](Fifo::bookmark)) queue a [`Delta::Bookmark`] item.
/// - **Batches.** [`pop`](Fifo::pop) hands `process` a batch: the longest run of items from
///   the front such that
///   1. it holds at most [`batch_size`](RealFifo::batch_size) items;
///   2. no two items have the same key (the batch stops before the second item of a key), so
///      the items of a batch can be applied to a store in any order, or as one
///      [`Store::apply`] call;
///   3. a [`Delta::ReplacedAll`], [`Delta::ListPart`] or [`Delta::ListEnd`] is always alone
///      in its batch;
///   4. a [`Delta::Bookmark`] is the last item of its batch (so a consumer may apply the
///      batch's changes, then record the bookmark's resource version);
///   5. it does not mix items of the initial population (see below) with later items.
///
///   With a batch size of 1 this is client-go's one-item `Pop`.
/// - **`has_synced`** turns true once the first `ReplacedAll` and every item queued before it
///   have been processed (popped *and* `process` returned). If an add, update or delete comes
///   before any replace, there is no initial population: `has_synced` is true at once, and a
///   later first replace does not make one (as client-go's). Thanks to rule 5, inside
///   `process`, `!has_synced()` is client-go's `isInInitialList` for the whole batch.
/// - **Consistent while processing.** `process` runs outside the FIFO's lock, so pushes never
///   wait for a slow consumer; keys of a batch being processed count as queued for
///   `resync`, so a resync never re-delivers a state older than what was popped.
/// - **One consumer at a time.** Concurrent `pop` calls are serialized: `process` calls never
///   overlap, and each item is handed out once.
/// - **Close.** After [`close`](Fifo::close) pushes fail with [`FifoError::Closed`]; what is
///   queued is still handed out, then `pop` fails with [`FifoError::Closed`].
///
/// # Does not
/// - look at the known-objects store except in [`resync`](Fifo::resync);
/// - validate resource versions;
/// - count items processed if `process` panics: those items are lost and `has_synced` stays
///   false if they belonged to the initial population.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::fifo::{Delta, Fifo, RealFifo};
/// use k8s_openapi::api::core::v1::Pod;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let pod = |name: &str| {
///     let mut p = Pod::default();
///     p.metadata.name = Some(name.into());
///     Arc::new(p)
/// };
/// let fifo = RealFifo::<Pod>::new(None);
/// fifo.replace(vec![pod("a"), pod("b")], "10".into()).unwrap();
/// fifo.add(pod("c")).unwrap();
/// fifo.update(pod("c")).unwrap();
/// assert_eq!(fifo.len(), 3);
///
/// let mut batches = Vec::new();
/// while !fifo.is_empty() {
///     fifo.pop(&mut |batch| batches.push(batch.len())).await.unwrap();
/// }
/// // The relist alone; then `c` twice, never twice in one batch.
/// assert_eq!(batches, [1, 1, 1]);
/// assert!(fifo.has_synced());
/// # }
/// ```
pub struct RealFifo<K> {
    key_fn: KeyFn<K>,
    known_objects: Option<Arc<dyn Store<K>>>,
    state: Mutex<State<K>>,
    /// Wakes consumers waiting in `pop`: when the queue goes from empty to non-empty, when the
    /// pop slot is released while another consumer waits, and on close.
    notify: Notify,
}

/// Items are numbered by a sequence number (`seq`) starting at 1: the item at index `i` of
/// `items` has seq `head + i`.
struct State<K> {
    items: VecDeque<Item<K>>,
    /// The maximum number of items per batch (at least 1).
    batch_size: usize,
    /// The seq of `items[0]` (one more than the number of items ever popped).
    head: u64,
    /// Every item with a seq below this has been processed; items from `settled` to `head`
    /// are being processed.
    settled: u64,
    /// For each key, the seq of its newest item. A key has an item queued or being processed
    /// iff its seq is at least `settled`; older entries are swept lazily.
    last_seq: FastMap<ObjectKey, u64>,
    /// `last_seq` is swept when it grows beyond this.
    sweep_at: usize,
    /// `ReplacedAll`, `ListPart` and `ListEnd` items queued or being processed.
    replaced_all: usize,
    /// The keys of the parts of the list being received, since its first part.
    listing: Option<HashSet<ObjectKey>>,
    /// A producer waiting for room ([`Fifo::poll_room`]), woken as batches settle.
    room: Option<Waker>,
    sync: SyncCounter,
    consumers: Consumers,
    closed: bool,
}

struct Item<K> {
    /// The seq of the previous item with the same key, if one was pushed since the key was
    /// last swept. Used for batching: the previous item is in the current batch iff its seq is
    /// at least the batch's first seq.
    prev: Option<NonZeroU64>,
    /// The key of the item's object (`None` for `ReplacedAll` and `Bookmark`).
    key: Option<ObjectKey>,
    delta: Delta<K>,
}

/// What a pop took from the front, to settle once `process` returns.
struct Taken<K> {
    batch: Vec<Delta<K>>,
    /// The key of each item of `batch`.
    keys: Vec<Option<ObjectKey>>,
    /// The seq after the batch's last item.
    end: u64,
    /// How many of the batch's items belong to the initial population.
    initial: usize,
    /// Whether the batch is a `ReplacedAll`.
    replaced_all: bool,
}

impl<K> State<K> {
    fn next_seq(&self) -> u64 {
        self.head + self.items.len() as u64
    }

    /// Whether `key` has an item queued or being processed.
    fn has_pending(&self, key: &ObjectKey) -> bool {
        self.last_seq
            .get(key)
            .is_some_and(|&seq| seq >= self.settled)
    }

    /// Queues an item for `key`. Returns whether the queue went from empty to non-empty.
    fn push_keyed(&mut self, key: ObjectKey, delta: Delta<K>) -> bool {
        let seq = self.next_seq();
        let prev = self.last_seq.insert(key.clone(), seq);
        if prev.is_none() && self.last_seq.len() > self.sweep_at {
            self.sweep();
        }
        self.push(Item {
            prev: prev.and_then(NonZeroU64::new),
            key: Some(key),
            delta,
        })
    }

    fn push(&mut self, item: Item<K>) -> bool {
        self.items.push_back(item);
        self.items.len() == 1
    }

    /// Forgets keys whose items have all been processed. Amortized O(1) per new key: a sweep
    /// of n keys happens only after at least n/2 new keys were added since the last one.
    fn sweep(&mut self) {
        let settled = self.settled;
        self.last_seq.retain(|_, seq| *seq >= settled);
        self.sweep_at = (2 * self.last_seq.len()).max(MIN_SWEEP);
        self.last_seq.shrink_to(self.sweep_at);
    }

    /// Removes the next batch (see the batching rules on [`RealFifo`]).
    fn take_batch(&mut self) -> Option<Taken<K>> {
        if self.items.is_empty() {
            return None;
        }
        let start = self.head;
        let mut limit = self.batch_size.min(self.items.len());
        if let Some(initial) = self.sync.batch_limit() {
            limit = limit.min(initial);
        }
        let mut n = 0;
        for item in self.items.iter().take(limit) {
            match &item.delta {
                Delta::ReplacedAll { .. } | Delta::ListPart(_) | Delta::ListEnd { .. } => {
                    if n == 0 {
                        n = 1;
                    }
                    break;
                }
                Delta::Bookmark { .. } => {
                    n += 1;
                    break;
                }
                _ => {
                    if item.prev.is_some_and(|prev| prev.get() >= start) {
                        break;
                    }
                    n += 1;
                }
            }
        }
        // The front item always qualifies (its key's previous item, if any, was popped
        // earlier), so `n >= 1`.
        let mut keys = Vec::with_capacity(n);
        let batch: Vec<Delta<K>> = self
            .items
            .drain(..n)
            .map(|item| {
                keys.push(item.key);
                item.delta
            })
            .collect();
        if self.items.is_empty() && self.items.capacity() > SHRINK_ABOVE {
            // Give back the memory of a large burst once it has drained.
            self.items.shrink_to(0);
        }
        self.head += n as u64;
        let replaced_all = matches!(
            batch.first(),
            Some(Delta::ReplacedAll { .. } | Delta::ListPart(_) | Delta::ListEnd { .. })
        );
        Some(Taken {
            batch,
            keys,
            end: self.head,
            initial: self.sync.popped(n),
            replaced_all,
        })
    }
}

impl<K: Resource> RealFifo<K> {
    /// An empty FIFO keyed by `namespace/name` ([`resource_key`]), with the
    /// [default batch size](Self::DEFAULT_BATCH_SIZE).
    ///
    /// `known_objects` is the consumer's cache (an informer passes its store); it is only
    /// read by [`resync`](Fifo::resync).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, RealFifo};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let fifo = RealFifo::<Pod>::new(None);
    /// assert_eq!(fifo.batch_size(), RealFifo::<Pod>::DEFAULT_BATCH_SIZE);
    /// assert!(fifo.add(Arc::new(Pod::default())).is_err()); // no name, no key
    /// ```
    pub fn new(known_objects: Option<Arc<dyn Store<K>>>) -> Self {
        Self::with_key_fn(resource_key::<K>, known_objects)
    }
}

impl<K> RealFifo<K> {
    /// The default maximum number of items per [`pop`](Fifo::pop): 256.
    ///
    /// Batching keeps every ordering guarantee (see the batching rules on [`RealFifo`]), so
    /// the only question is size. Per-batch costs (the lock, the consumer's wake-up, one
    /// `Vec`, one store write lock) are already negligible per item at a few dozen items;
    /// much larger batches only hold the store's write lock longer against readers and delay
    /// the first notification of the batch. client-go uses 1000; 256 keeps store write-lock
    /// hold times short while amortizing nearly all per-batch cost. Use
    /// [`with_batch_size(1)`](Self::with_batch_size) for client-go's one-item `Pop`.
    ///
    /// ```
    /// use informer_core::fifo::RealFifo;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// assert_eq!(RealFifo::<Pod>::new(None).batch_size(), RealFifo::<Pod>::DEFAULT_BATCH_SIZE);
    /// ```
    pub const DEFAULT_BATCH_SIZE: usize = 256;

    /// An empty FIFO that keys objects with `key_fn`, with the
    /// [default batch size](Self::DEFAULT_BATCH_SIZE).
    ///
    /// `key_fn` runs once per pushed object, outside the FIFO's lock. The known-objects store,
    /// if any, must key objects the same way.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, RealFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = RealFifo::with_key_fn(key, None);
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert_eq!(fifo.len(), 2); // every event is kept
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>, known_objects: Option<Arc<dyn Store<K>>>) -> Self {
        Self {
            key_fn,
            known_objects,
            state: Mutex::new(State {
                items: VecDeque::new(),
                batch_size: Self::DEFAULT_BATCH_SIZE,
                head: 1,
                settled: 1,
                last_seq: FastMap::default(),
                sweep_at: MIN_SWEEP,
                replaced_all: 0,
                listing: None,
                room: None,
                sync: SyncCounter::default(),
                consumers: Consumers::default(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    /// Sets the maximum number of items one [`pop`](Fifo::pop) hands out; 0 counts as 1.
    ///
    /// ```
    /// use informer_core::fifo::RealFifo;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let fifo = RealFifo::<Pod>::new(None).with_batch_size(1);
    /// assert_eq!(fifo.batch_size(), 1);
    /// assert_eq!(RealFifo::<Pod>::new(None).with_batch_size(0).batch_size(), 1);
    /// ```
    pub fn with_batch_size(self, batch_size: usize) -> Self {
        self.state.lock().batch_size = batch_size.max(1);
        self
    }

    /// The maximum number of items one [`pop`](Fifo::pop) hands out.
    ///
    /// ```
    /// use informer_core::fifo::RealFifo;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// assert_eq!(RealFifo::<Pod>::new(None).with_batch_size(64).batch_size(), 64);
    /// ```
    pub fn batch_size(&self) -> usize {
        self.state.lock().batch_size
    }

    /// The keys of `objects` (refused whole if one has none), and the state, locked and
    /// open.
    fn keys_then_lock(
        &self,
        objects: &[Arc<K>],
    ) -> Result<(Vec<ObjectKey>, parking_lot::MutexGuard<'_, State<K>>), FifoError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        Ok((keys, st))
    }

    fn wake_if(&self, became_non_empty: bool) {
        if became_non_empty {
            self.notify.notify_one();
        }
    }

    fn push(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = st.push_keyed(key, make(obj));
        st.sync.populate_by_event();
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Waits for items, removes the next batch and passes it to `process`.
    async fn pop_with<F: FnOnce(Vec<Delta<K>>, Vec<Option<ObjectKey>>)>(
        &self,
        process: F,
    ) -> Result<(), FifoError> {
        let Taken {
            batch,
            keys,
            end,
            initial,
            replaced_all,
        } = take_next(&self.state, &self.notify).await?;
        let mut settle = Settle {
            state: &self.state,
            notify: &self.notify,
            end,
            initial,
            replaced_all,
            processed: false,
        };
        process(batch, keys);
        settle.processed = true;
        Ok(())
    }
}

impl<K> PopState for State<K> {
    type Taken = Taken<K>;

    fn consumers(&mut self) -> &mut Consumers {
        &mut self.consumers
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    fn take(&mut self) -> Option<Taken<K>> {
        self.take_batch()
    }
}

/// Settles a popped batch when `process` returns (or unwinds).
struct Settle<'a, K> {
    state: &'a Mutex<State<K>>,
    notify: &'a Notify,
    end: u64,
    initial: usize,
    replaced_all: bool,
    processed: bool,
}

impl<K> Drop for Settle<'_, K> {
    fn drop(&mut self) {
        let mut st = self.state.lock();
        st.settled = st.settled.max(self.end);
        if self.replaced_all {
            st.replaced_all -= 1;
        }
        if self.processed {
            st.sync.processed(self.initial);
        }
        let wake = st.consumers.release();
        let room = st.room.take();
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        if let Some(room) = room {
            room.wake();
        }
    }
}

#[async_trait]
impl<K: Send + Sync + 'static> Fifo<K> for RealFifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, Delta::Added)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, Delta::Updated)
    }

    /// Queues a delete, whether or not the object is known (client-go's `RealFIFO` rule).
    fn delete(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, |obj| Delta::Deleted(Deleted::Object(obj)))
    }

    /// Queues one [`Delta::ReplacedAll`] item with every listed object; or, ending a list
    /// that came in parts, its last [`Delta::ListPart`] and a [`Delta::ListEnd`].
    fn replace(&self, objects: Vec<Arc<K>>, resource_version: String) -> Result<(), FifoError> {
        // Refuse the whole list if any object has no key, before anything is queued.
        let (keys, mut st) = self.keys_then_lock(&objects)?;
        let woke = match st.listing.take() {
            None => {
                st.replaced_all += 1;
                st.push(Item {
                    prev: None,
                    key: None,
                    delta: Delta::ReplacedAll {
                        objects,
                        resource_version,
                    },
                })
            }
            Some(mut listed) => {
                listed.extend(keys);
                let mut woke = false;
                if !objects.is_empty() {
                    st.replaced_all += 1;
                    woke |= st.push(Item {
                        prev: None,
                        key: None,
                        delta: Delta::ListPart(objects),
                    });
                }
                st.replaced_all += 1;
                woke |= st.push(Item {
                    prev: None,
                    key: None,
                    delta: Delta::ListEnd {
                        listed: Arc::new(listed),
                        resource_version,
                    },
                });
                woke
            }
        };
        let queued = st.items.len();
        st.sync.populate(queued);
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    fn takes_list_parts(&self) -> bool {
        true
    }

    /// Queues one [`Delta::ListPart`] item (nothing for an empty part, but a `first` one
    /// still starts a new list).
    fn list_part(&self, objects: Vec<Arc<K>>, first: bool) -> Result<(), FifoError> {
        let (keys, mut st) = self.keys_then_lock(&objects)?;
        let listing = match (first, st.listing.as_mut()) {
            (false, Some(listing)) => listing,
            _ => st.listing.insert(HashSet::with_capacity(keys.len())),
        };
        listing.extend(keys);
        if objects.is_empty() {
            return Ok(());
        }
        st.replaced_all += 1;
        let woke = st.push(Item {
            prev: None,
            key: None,
            delta: Delta::ListPart(objects),
        });
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Counts the items queued and those of the batch being processed.
    fn poll_room(&self, cx: &mut Context<'_>, max: usize) -> Poll<()> {
        let mut st = self.state.lock();
        let in_flight = (st.head - st.settled) as usize;
        if st.closed || st.items.len() + in_flight < max.max(1) {
            return Poll::Ready(());
        }
        match &mut st.room {
            Some(waker) => waker.clone_from(cx.waker()),
            room => *room = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn resync(&self) -> Result<(), FifoError> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let Some(store) = &self.known_objects else {
            return Ok(());
        };
        if st.replaced_all > 0 {
            return Ok(());
        }
        let mut woke = false;
        for key in store.list_keys() {
            if st.has_pending(&key) {
                continue;
            }
            if let Some(obj) = store.get(&key) {
                woke |= st.push_keyed(key, Delta::Sync(obj));
            }
        }
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    fn bookmark(&self, resource_version: String) -> Result<(), FifoError> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = st.push(Item {
            prev: None,
            key: None,
            delta: Delta::Bookmark { resource_version },
        });
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Waits for items, removes the next batch (see the batching rules on [`RealFifo`]) and
    /// passes it to `process`, oldest first.
    async fn pop(&self, process: &mut (dyn FnMut(Vec<Delta<K>>) + Send)) -> Result<(), FifoError> {
        self.pop_with(|batch, _keys| process(batch)).await
    }

    /// As [`pop`](Fifo::pop), with the key of every item that has a single object
    /// (`None` for `ReplacedAll` and `Bookmark`).
    async fn pop_keyed(
        &self,
        process: &mut (dyn FnMut(Vec<Delta<K>>, Vec<Option<ObjectKey>>) + Send),
    ) -> Result<(), FifoError> {
        self.pop_with(process).await
    }

    fn has_synced(&self) -> bool {
        self.state.lock().sync.has_synced()
    }

    /// The number of queued items.
    fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    fn close(&self) {
        let room = {
            let mut st = self.state.lock();
            st.closed = true;
            st.room.take()
        };
        self.notify.notify_waiters();
        if let Some(room) = room {
            room.wake();
        }
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("RealFifo")
            .field("queued", &st.items.len())
            .field("processing", &(st.head - st.settled))
            .field("batch_size", &st.batch_size)
            .field("has_synced", &st.sync.has_synced())
            .field("closed", &st.closed)
            .field("has_known_objects", &self.known_objects.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests;
