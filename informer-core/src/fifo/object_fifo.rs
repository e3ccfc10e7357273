//! [`ObjectFifo`]: a queue of keys holding only the latest object of each (client-go's plain
//! `FIFO`).

use std::collections::BTreeMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Consumers, Delta, FastMap, Fifo, PopState, take_next};
use crate::error::{FifoError, KeyError};
use crate::key::{KeyFn, ObjectKey, resource_key};

/// A queue of keys in which each key holds only the most recent object given for it:
/// client-go's plain `FIFO` (`tools/cache/fifo.go`).
///
/// Use it when every object must be processed once, in its latest state, and deleted objects
/// not at all: several adds or updates of one key before it is popped are processed once,
/// with the newest object. Unlike [`DeltaFifo`](super::DeltaFifo) and
/// [`RealFifo`](super::RealFifo) it keeps no history, so it cannot feed an informer's cache
/// (deletes are not handed out); it is the queue client-go's own reflector tests list and
/// watch into, and a simple work queue of objects.
///
/// # Guarantees
/// - **Latest object per key.** [`add`](Fifo::add) and [`update`](Fifo::update) (one
///   operation, as in client-go) queue the key at the back if it is not queued; if it is,
///   the key keeps its place and its object is replaced. A popped key is no longer queued:
///   adding it again queues it at the back.
/// - **Deletes remove.** [`delete`](Fifo::delete) takes the key out of the queue; nothing of
///   it is handed out. Adding it again later queues it at the back.
/// - **`add_if_not_present`** ([`add_if_not_present`](ObjectFifo::add_if_not_present))
///   queues an object only if its key is not queued; a queued object is left as it is. A
///   consumer that failed to process an object puts it back with it without overwriting a
///   newer object that arrived meanwhile.
/// - **Relists** ([`replace`](Fifo::replace)) drop everything queued and queue the listed
///   objects, in list order (for a key listed twice, the last object at the first place).
///   The resource version is not used.
/// - **Resyncs** ([`resync`](Fifo::resync)) change nothing: every object held is already
///   queued, which is what client-go's `Resync` restores. Bookmarks are ignored.
/// - **Pop order.** [`pop_with`](ObjectFifo::pop_with) waits until a key is queued (or the
///   FIFO is closed), removes the key at the front and hands its object to `process`,
///   outside the FIFO's lock, so producers never wait for a slow consumer. Through the
///   [`Fifo`] trait, [`pop`](Fifo::pop) hands the object as a one-item batch
///   `[Delta::Updated(obj)]` (the FIFO does not know whether it was an add or an update).
/// - **`has_synced`** is false until something fills the FIFO. It turns true once every
///   object queued by the first [`replace`](Fifo::replace) has been popped *and* its
///   `process` call has returned, or has been deleted; at once if an add, update,
///   `add_if_not_present` or delete came first (client-go's rule), or if the first list is
///   empty. `process` is told whether its object belongs to that first list (client-go's
///   `isInInitialList`). Once true it stays true.
/// - **One consumer at a time.** Concurrent pops are serialized: `process` calls never
///   overlap, and each object is handed out once.
/// - **Close.** After [`close`](Fifo::close) every push (add, update, delete, replace, ...)
///   fails with [`FifoError::Closed`]; what is queued is still handed out, then a pop (and
///   every pop waiting) fails with [`FifoError::Closed`].
///
/// # Differs from client-go
/// - Pushes after `close` fail (client-go's `FIFO` still takes them; its `Heap` does not).
/// - `process` runs outside the lock (client-go runs it under the lock), so it may call
///   back into the FIFO, for example [`add_if_not_present`](ObjectFifo::add_if_not_present)
///   to retry an object. Its result is what `pop_with` returns.
/// - A key deleted and added again goes to the back (client-go leaves the deleted key in
///   its queue, and the re-added object pops at the old place).
/// - [`list`](ObjectFifo::list) and [`list_keys`](ObjectFifo::list_keys) are in queue order,
///   and `replace` queues in list order (client-go: in map order).
/// - A second `replace` before the first list was processed becomes the first list (client-go
///   keeps counting the first list's length across the next list's items).
/// - If `process` panics, its object is lost and, if it belonged to the first list,
///   `has_synced` stays false.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::fifo::{Fifo, ObjectFifo};
/// use informer_core::{KeyError, ObjectKey};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// fn key(o: &(String, u32)) -> Result<ObjectKey, KeyError> {
///     Ok(ObjectKey::cluster(&o.0))
/// }
/// let fifo = ObjectFifo::with_key_fn(key);
/// fifo.add(Arc::new(("a".into(), 1))).unwrap();
/// fifo.add(Arc::new(("b".into(), 1))).unwrap();
/// fifo.update(Arc::new(("a".into(), 2))).unwrap(); // `a` keeps its place, newest object
/// assert_eq!(fifo.len(), 2);
///
/// let first = fifo.pop_with(|obj, _in_initial_list| obj).await.unwrap();
/// assert_eq!(*first, ("a".to_string(), 2));
/// fifo.delete(Arc::new(("b".into(), 0))).unwrap(); // `b` is never handed out
/// assert!(fifo.is_empty());
/// # }
/// ```
pub struct ObjectFifo<K> {
    key_fn: KeyFn<K>,
    state: Mutex<State<K>>,
    /// Wakes consumers waiting in a pop: when the queue goes from empty to non-empty, when
    /// the pop slot is released while another consumer waits, and on close.
    notify: Notify,
}

/// Each queued key has a sequence number (`seq`), given when it was queued; keys pop in
/// `seq` order.
struct State<K> {
    /// The queued keys by `seq`: the front of the queue first.
    order: BTreeMap<u64, ObjectKey>,
    /// The queued keys, each with its `seq` and latest object.
    items: FastMap<ObjectKey, Queued<K>>,
    /// The `seq` the next queued key gets.
    next_seq: u64,
    /// Something filled the FIFO: an add, update, delete or replace (client-go's
    /// `populated`).
    populated: bool,
    /// The first list: keys queued with a `seq` in this range.
    initial: std::ops::Range<u64>,
    /// The objects of the first list still queued or being processed.
    initial_left: usize,
    consumers: Consumers,
    closed: bool,
}

struct Queued<K> {
    seq: u64,
    obj: Arc<K>,
}

/// What one pop took from the front.
struct Taken<K> {
    key: ObjectKey,
    obj: Arc<K>,
    seq: u64,
    /// Whether the object belongs to the first list.
    initial: bool,
}

impl<K> State<K> {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_left == 0
    }

    fn is_initial(&self, seq: u64) -> bool {
        self.initial.contains(&seq)
    }

    /// Queues `obj` under `key`: at the back if the key is not queued; otherwise, if
    /// `overwrite`, in place of the queued object. Returns whether the queue went from empty
    /// to non-empty.
    fn push(&mut self, key: ObjectKey, obj: Arc<K>, overwrite: bool) -> bool {
        self.populated = true;
        match self.items.entry(key) {
            Entry::Occupied(mut queued) => {
                if overwrite {
                    queued.get_mut().obj = obj;
                }
                false
            }
            Entry::Vacant(slot) => {
                let seq = self.next_seq;
                self.next_seq += 1;
                self.order.insert(seq, slot.key().clone());
                slot.insert(Queued { seq, obj });
                self.items.len() == 1
            }
        }
    }

    /// Takes `key` out of the queue.
    fn remove(&mut self, key: &ObjectKey) {
        self.populated = true;
        if let Some(queued) = self.items.remove(key) {
            self.order.remove(&queued.seq);
            if self.is_initial(queued.seq) {
                self.initial_left -= 1;
            }
        }
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
        let (seq, key) = self.order.pop_first()?;
        let queued = self
            .items
            .remove(&key)
            .expect("every key in `order` is in `items`");
        Some(Taken {
            key,
            obj: queued.obj,
            seq,
            initial: self.is_initial(seq),
        })
    }
}

impl<K: Resource> ObjectFifo<K> {
    /// An empty FIFO keyed by `namespace/name` ([`resource_key`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let fifo = ObjectFifo::<Pod>::new();
    /// assert!(fifo.add(Arc::new(Pod::default())).is_err()); // no name, no key
    /// assert!(fifo.is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_key_fn(resource_key::<K>)
    }
}

impl<K: Resource> Default for ObjectFifo<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> ObjectFifo<K> {
    /// An empty FIFO that keys objects with `key_fn` (client-go's `NewFIFO(keyFunc)`).
    /// `key_fn` runs once per pushed object, outside the FIFO's lock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert_eq!(fifo.len(), 1); // one key, one queued object
    /// ```
    pub fn with_key_fn(key_fn: KeyFn<K>) -> Self {
        Self {
            key_fn,
            state: Mutex::new(State {
                order: BTreeMap::new(),
                items: FastMap::default(),
                next_seq: 0,
                populated: false,
                initial: 0..0,
                initial_left: 0,
                consumers: Consumers::default(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    /// Queues `obj` unless its key is queued already, in which case nothing changes (the
    /// queued object is kept). A consumer retries an object it failed to process this way,
    /// without overwriting a newer object that was queued meanwhile.
    ///
    /// # Errors
    /// [`FifoError::Key`] if the object has no key, [`FifoError::Closed`] after
    /// [`close`](Fifo::close).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new(("a", 2))).unwrap();
    /// fifo.add_if_not_present(Arc::new(("a", 1))).unwrap(); // `a` is queued: kept as it is
    /// fifo.add_if_not_present(Arc::new(("b", 1))).unwrap();
    /// assert_eq!(fifo.list().iter().map(|o| **o).collect::<Vec<_>>(), [("a", 2), ("b", 1)]);
    /// ```
    pub fn add_if_not_present(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, false)
    }

    /// Waits until a key is queued, removes the one at the front and calls
    /// `process(object, in_initial_list)` with its object, outside the FIFO's lock;
    /// `in_initial_list` tells whether the object came with the first
    /// [`replace`](Fifo::replace) (client-go's `isInInitialList`). Returns what `process`
    /// returned. Pops are serialized: a second pop waits until this `process` has returned.
    ///
    /// Cancel safe: dropping the future before it completes takes nothing from the FIFO.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the FIFO is closed and empty; a pop waiting on an empty
    /// FIFO fails so when it is closed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{FifoError, KeyError, ObjectKey};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.replace(vec![Arc::new("a".to_string())], "1".into()).unwrap();
    /// let popped = fifo.pop_with(|obj, in_initial_list| (obj, in_initial_list)).await;
    /// assert_eq!(popped.unwrap(), (Arc::new("a".to_string()), true));
    /// assert!(fifo.has_synced());
    ///
    /// fifo.close();
    /// assert_eq!(fifo.pop_with(|obj, _| obj).await, Err(FifoError::Closed));
    /// # }
    /// ```
    pub async fn pop_with<R>(
        &self,
        process: impl FnOnce(Arc<K>, bool) -> R,
    ) -> Result<R, FifoError> {
        self.pop_keyed_with(|_key, obj, initial| process(obj, initial))
            .await
    }

    /// Every queued object, front first (client-go's `List`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new("b".to_string())).unwrap();
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert_eq!(fifo.list(), [Arc::new("b".to_string()), Arc::new("a".to_string())]);
    /// ```
    pub fn list(&self) -> Vec<Arc<K>> {
        let st = self.state.lock();
        st.order
            .values()
            .map(|key| st.items[key].obj.clone())
            .collect()
    }

    /// Every queued key, front first (client-go's `ListKeys`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new("b".to_string())).unwrap();
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert_eq!(fifo.list_keys(), [ObjectKey::cluster("b"), ObjectKey::cluster("a")]);
    /// ```
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.state.lock().order.values().cloned().collect()
    }

    /// The queued object with the key of `obj` (client-go's `Get`).
    ///
    /// # Errors
    /// [`KeyError`] if `obj` has no key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new(("a", 2))).unwrap();
    /// assert_eq!(fifo.get(&("a", 0)).unwrap(), Some(Arc::new(("a", 2))));
    /// assert_eq!(fifo.get(&("b", 0)).unwrap(), None);
    /// ```
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, KeyError> {
        let key = (self.key_fn)(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The queued object with this key (client-go's `GetByKey`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::{Fifo, ObjectFifo};
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// let fifo = ObjectFifo::with_key_fn(key);
    /// fifo.add(Arc::new("a".to_string())).unwrap();
    /// assert!(fifo.get_by_key(&ObjectKey::cluster("a")).is_some());
    /// assert!(fifo.get_by_key(&ObjectKey::cluster("b")).is_none());
    /// ```
    pub fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.state.lock().items.get(key).map(|q| q.obj.clone())
    }

    /// Computes the key outside the lock, then queues `obj` (see [`State::push`]).
    fn push(&self, obj: Arc<K>, overwrite: bool) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = st.push(key, obj, overwrite);
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    fn wake_if(&self, became_non_empty: bool) {
        if became_non_empty {
            self.notify.notify_one();
        }
    }

    /// Waits for a queued key, takes the front one and calls `process(key, obj, initial)`.
    async fn pop_keyed_with<R>(
        &self,
        process: impl FnOnce(ObjectKey, Arc<K>, bool) -> R,
    ) -> Result<R, FifoError> {
        let Taken {
            key,
            obj,
            seq,
            initial,
        } = take_next(&self.state, &self.notify).await?;
        let mut settle = Settle {
            fifo: self,
            seq,
            initial,
            processed: false,
        };
        let out = process(key, obj, initial);
        settle.processed = true;
        Ok(out)
    }
}

/// Settles a popped object when `process` returns (or unwinds): counts it for `has_synced`
/// (unless it unwound) and frees the pop slot.
struct Settle<'a, K> {
    fifo: &'a ObjectFifo<K>,
    seq: u64,
    initial: bool,
    processed: bool,
}

impl<K> Drop for Settle<'_, K> {
    fn drop(&mut self) {
        let mut st = self.fifo.state.lock();
        // A `replace` while `process` ran may have made a new first list; this object no
        // longer counts then.
        if self.processed && self.initial && st.is_initial(self.seq) {
            st.initial_left -= 1;
        }
        let wake = st.consumers.release();
        drop(st);
        if wake {
            self.fifo.notify.notify_one();
        }
    }
}

#[async_trait]
impl<K: Send + Sync + 'static> Fifo<K> for ObjectFifo<K> {
    /// Queues `obj` at the back, or replaces the queued object of its key in place.
    fn add(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, true)
    }

    /// The same as [`add`](Fifo::add) (as in client-go).
    fn update(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, true)
    }

    /// Takes the key of `obj` out of the queue (nothing if it is not queued).
    fn delete(&self, obj: Arc<K>) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        st.remove(&key);
        Ok(())
    }

    /// Drops everything queued and queues `objects` in their order (for a key listed twice,
    /// the last object at the first place). If the FIFO has not synced yet, they become the
    /// first list that `has_synced` waits for.
    fn replace(&self, objects: Vec<Arc<K>>, _resource_version: String) -> Result<(), FifoError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let was_empty = st.items.is_empty();
        let first_list = !st.has_synced();
        st.items.clear();
        st.order.clear();
        let start = st.next_seq;
        for (key, obj) in keys.into_iter().zip(objects) {
            st.push(key, obj, true);
        }
        st.populated = true;
        if first_list {
            st.initial = start..st.next_seq;
            st.initial_left = st.items.len();
        }
        let woke = was_empty && !st.items.is_empty();
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Changes nothing: every object held is queued already.
    fn resync(&self) -> Result<(), FifoError> {
        if self.state.lock().closed {
            return Err(FifoError::Closed);
        }
        Ok(())
    }

    /// Ignored: this FIFO carries no bookmarks.
    fn bookmark(&self, _resource_version: String) -> Result<(), FifoError> {
        if self.state.lock().closed {
            return Err(FifoError::Closed);
        }
        Ok(())
    }

    /// As [`pop_with`](ObjectFifo::pop_with), handing the object as `[Delta::Updated(obj)]`.
    async fn pop(&self, process: &mut (dyn FnMut(Vec<Delta<K>>) + Send)) -> Result<(), FifoError> {
        self.pop_keyed_with(|_key, obj, _initial| process(vec![Delta::Updated(obj)]))
            .await
    }

    /// As [`pop`](Fifo::pop), with the object's key.
    async fn pop_keyed(
        &self,
        process: &mut (dyn FnMut(Vec<Delta<K>>, Vec<Option<ObjectKey>>) + Send),
    ) -> Result<(), FifoError> {
        self.pop_keyed_with(|key, obj, _initial| {
            process(vec![Delta::Updated(obj)], vec![Some(key)])
        })
        .await
    }

    fn has_synced(&self) -> bool {
        self.state.lock().has_synced()
    }

    /// The number of queued keys.
    fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.state.lock().closed
    }
}

impl<K> fmt::Debug for ObjectFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("ObjectFifo")
            .field("queued", &st.items.len())
            .field("has_synced", &st.has_synced())
            .field("closed", &st.closed)
            .finish()
    }
}

#[cfg(test)]
mod tests;
