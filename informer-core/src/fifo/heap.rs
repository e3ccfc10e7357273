//! [`Heap`]: a thread-safe, keyed priority queue of objects (client-go's `Heap`).

use std::fmt;
use std::sync::Arc;

use kube_core::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::{Consumers, FastMap, PopState, take_next};
use crate::error::{FifoError, KeyError};
use crate::key::{KeyFn, ObjectKey, resource_key};

/// The order of a [`Heap`]: `less(a, b)` is true if `a` pops before `b`.
type LessFn<K> = Box<dyn Fn(&K, &K) -> bool + Send + Sync>;

/// A thread-safe priority queue of objects, one per key, ordered by a `less` function:
/// client-go's `Heap` (`tools/cache/heap.go`).
///
/// # Guarantees
/// - **One object per key.** [`add`](Heap::add) (and [`update`](Heap::update), the same
///   operation) inserts an object, or replaces the object of its key and moves it to where
///   its new priority puts it. [`add_if_not_present`](Heap::add_if_not_present) inserts only
///   if the key is absent, keeping a present object as it is.
/// - **Priority order.** [`pop`](Heap::pop) removes and returns an object `o` such that no
///   other held object `p` has `less(p, o)`; [`peek`](Heap::peek) returns that object without
///   removing it. `less` must be a strict weak order (as `<` on a field); otherwise the order
///   is unspecified, though every object is still handed out once.
/// - **Ties pop in arrival order.** Of objects that compare equal (neither is less), the one
///   whose key entered the heap first pops first; replacing a key's object keeps its place
///   among equals (client-go leaves ties unordered).
/// - **Bulk adds are atomic.** [`bulk_add`](Heap::bulk_add) adds a whole list under one lock:
///   a consumer sees all of it or none, and if one object has no key nothing is added
///   (client-go adds the objects before the bad one).
/// - **Deletes by key.** [`delete`](Heap::delete) removes the object with the key of the
///   given one, whatever its content, and returns it (`None` if the key is absent, where
///   client-go returns an error).
/// - **Blocking pop.** [`pop`](Heap::pop) waits until an object is there or the heap is
///   closed. Concurrent pops each get a different object.
/// - **Close.** After [`close`](Heap::close), adds fail with [`FifoError::Closed`] (deletes
///   and reads still work); what is held is still handed out, then `pop` (and every pop
///   waiting) fails with [`FifoError::Closed`].
///
/// `less` runs under the heap's lock: it must not call back into the heap.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::fifo::Heap;
/// use informer_core::{KeyError, ObjectKey};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// // (name, priority): the lowest priority pops first.
/// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
///     Ok(ObjectKey::cluster(o.0))
/// }
/// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
/// heap.add(Arc::new(("a", 10))).unwrap();
/// heap.add(Arc::new(("b", 1))).unwrap();
/// heap.add(Arc::new(("c", 5))).unwrap();
/// heap.update(Arc::new(("a", 0))).unwrap(); // `a` moves to the front
///
/// let mut popped = Vec::new();
/// while !heap.is_empty() {
///     popped.push(heap.pop().await.unwrap().0);
/// }
/// assert_eq!(popped, ["a", "b", "c"]);
/// # }
/// ```
pub struct Heap<K> {
    key_fn: KeyFn<K>,
    state: Mutex<State<K>>,
    /// Wakes consumers waiting in `pop`: when the heap goes from empty to non-empty, when a
    /// pop finishes while another consumer waits, and on close.
    notify: Notify,
}

/// A binary min-heap of slot numbers over a slab of entries; each entry knows its position
/// in the heap, so a key's entry is found, moved or removed in O(log n) without searching.
struct State<K> {
    less: LessFn<K>,
    /// The entries; `None` slots are free (listed in `free`).
    slots: Vec<Option<Slot<K>>>,
    free: Vec<usize>,
    /// Slot numbers in heap order: `heap[0]` pops next.
    heap: Vec<usize>,
    /// Each key's slot number.
    by_key: FastMap<ObjectKey, usize>,
    /// The arrival number the next new key gets (ties pop in arrival order).
    next_seq: u64,
    consumers: Consumers,
    closed: bool,
}

struct Slot<K> {
    key: ObjectKey,
    obj: Arc<K>,
    /// When the key entered the heap.
    seq: u64,
    /// The slot's index in `State::heap`.
    pos: usize,
}

impl<K> State<K> {
    fn slot(&self, n: usize) -> &Slot<K> {
        self.slots[n]
            .as_ref()
            .expect("a slot in the heap is occupied")
    }

    fn slot_mut(&mut self, n: usize) -> &mut Slot<K> {
        self.slots[n]
            .as_mut()
            .expect("a slot in the heap is occupied")
    }

    /// Whether the entry at heap position `i` pops before the one at `j`.
    fn before(&self, i: usize, j: usize) -> bool {
        let (a, b) = (self.slot(self.heap[i]), self.slot(self.heap[j]));
        if (self.less)(&a.obj, &b.obj) {
            return true;
        }
        !(self.less)(&b.obj, &a.obj) && a.seq < b.seq
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        let (si, sj) = (self.heap[i], self.heap[j]);
        self.slot_mut(si).pos = i;
        self.slot_mut(sj).pos = j;
    }

    /// Moves the entry at position `i` up while it pops before its parent; returns whether
    /// it moved.
    fn sift_up(&mut self, mut i: usize) -> bool {
        let start = i;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.before(i, parent) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
        i != start
    }

    /// Moves the entry at position `i` down while a child pops before it.
    fn sift_down(&mut self, mut i: usize) {
        loop {
            let left = 2 * i + 1;
            if left >= self.heap.len() {
                break;
            }
            let right = left + 1;
            let child = if right < self.heap.len() && self.before(right, left) {
                right
            } else {
                left
            };
            if !self.before(child, i) {
                break;
            }
            self.swap(i, child);
            i = child;
        }
    }

    /// Restores the heap order around position `i` after its entry changed.
    fn fix(&mut self, i: usize) {
        if !self.sift_up(i) {
            self.sift_down(i);
        }
    }

    /// Inserts `obj` under `key`, or (if `overwrite`) replaces the object of a present key.
    /// Returns whether the heap went from empty to non-empty.
    fn insert(&mut self, key: ObjectKey, obj: Arc<K>, overwrite: bool) -> bool {
        if let Some(&n) = self.by_key.get(&key) {
            if overwrite {
                let slot = self.slot_mut(n);
                slot.obj = obj;
                let pos = slot.pos;
                self.fix(pos);
            }
            return false;
        }
        let pos = self.heap.len();
        let slot = Slot {
            key: key.clone(),
            obj,
            seq: self.next_seq,
            pos,
        };
        self.next_seq += 1;
        let n = match self.free.pop() {
            Some(n) => {
                self.slots[n] = Some(slot);
                n
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        };
        self.by_key.insert(key, n);
        self.heap.push(n);
        self.sift_up(pos);
        self.heap.len() == 1
    }

    /// Removes the entry at heap position `i`.
    fn remove_at(&mut self, i: usize) -> Arc<K> {
        let last = self.heap.len() - 1;
        if i != last {
            self.swap(i, last);
        }
        let n = self.heap.pop().expect("the heap holds position i");
        let slot = self.slots[n]
            .take()
            .expect("a slot in the heap is occupied");
        self.free.push(n);
        self.by_key.remove(&slot.key);
        if i < self.heap.len() {
            self.fix(i);
        }
        if self.heap.is_empty() {
            // Nothing is held: forget the free list rather than keep a large slab.
            self.slots.clear();
            self.free.clear();
        }
        slot.obj
    }
}

impl<K> PopState for State<K> {
    type Taken = Arc<K>;

    fn consumers(&mut self) -> &mut Consumers {
        &mut self.consumers
    }

    fn is_closed(&self) -> bool {
        self.closed
    }

    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    fn take(&mut self) -> Option<Arc<K>> {
        (!self.heap.is_empty()).then(|| self.remove_at(0))
    }
}

impl<K: Resource> Heap<K> {
    /// An empty heap keyed by `namespace/name` ([`resource_key`]), ordered by `less`
    /// (`less(a, b)`: `a` pops before `b`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// // The oldest Pod first.
    /// let heap = Heap::<Pod>::new(|a, b| a.metadata.creation_timestamp < b.metadata.creation_timestamp);
    /// assert!(heap.add(Arc::new(Pod::default())).is_err()); // no name, no key
    /// assert!(heap.is_empty());
    /// ```
    pub fn new(less: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Self::with_key_fn(resource_key::<K>, less)
    }
}

impl<K> Heap<K> {
    /// An empty heap that keys objects with `key_fn` and orders them by `less`
    /// (client-go's `NewHeap(keyFn, lessFn)`). `key_fn` runs outside the heap's lock.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(s: &String) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(s))
    /// }
    /// // The longest string first.
    /// let heap = Heap::with_key_fn(key, |a: &String, b: &String| a.len() > b.len());
    /// heap.add(Arc::new("ab".to_string())).unwrap();
    /// heap.add(Arc::new("abc".to_string())).unwrap();
    /// assert_eq!(*heap.peek().unwrap(), "abc");
    /// ```
    pub fn with_key_fn(
        key_fn: KeyFn<K>,
        less: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            key_fn,
            state: Mutex::new(State {
                less: Box::new(less),
                slots: Vec::new(),
                free: Vec::new(),
                heap: Vec::new(),
                by_key: FastMap::default(),
                next_seq: 0,
                consumers: Consumers::default(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    /// Inserts `obj`, or replaces the object held under its key and moves it to where its
    /// new priority puts it.
    ///
    /// # Errors
    /// [`FifoError::Key`] if the object has no key, [`FifoError::Closed`] after
    /// [`close`](Heap::close).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 1))).unwrap();
    /// heap.add(Arc::new(("b", 2))).unwrap();
    /// heap.add(Arc::new(("a", 3))).unwrap();
    /// assert_eq!(heap.len(), 2);
    /// assert_eq!(*heap.peek().unwrap(), ("b", 2));
    /// ```
    pub fn add(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, true)
    }

    /// The same as [`add`](Heap::add) (as in client-go): an absent key is inserted.
    ///
    /// # Errors
    /// As [`add`](Heap::add).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.update(Arc::new(("a", 1))).unwrap();
    /// assert_eq!(heap.len(), 1);
    /// ```
    pub fn update(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, true)
    }

    /// Adds every object of `objects` as [`add`](Heap::add) does, under one lock, so that a
    /// consumer sees all of them or none (for a key given twice, the last object counts).
    ///
    /// # Errors
    /// [`FifoError::Key`] if an object has no key (then nothing is added),
    /// [`FifoError::Closed`] after [`close`](Heap::close).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     if o.0.is_empty() {
    ///         return Err(KeyError::MissingName { kind: "pair" });
    ///     }
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// assert!(heap.bulk_add(vec![Arc::new(("a", 1)), Arc::new(("", 2))]).is_err());
    /// assert!(heap.is_empty()); // all or nothing
    /// heap.bulk_add(vec![Arc::new(("a", 3)), Arc::new(("b", 2)), Arc::new(("a", 1))]).unwrap();
    /// assert_eq!(*heap.peek().unwrap(), ("a", 1));
    /// ```
    pub fn bulk_add(&self, objects: Vec<Arc<K>>) -> Result<(), FifoError> {
        let keys = objects
            .iter()
            .map(|obj| (self.key_fn)(obj))
            .collect::<Result<Vec<_>, _>>()?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let was_empty = st.heap.is_empty();
        for (key, obj) in keys.into_iter().zip(objects) {
            st.insert(key, obj, true);
        }
        let woke = was_empty && !st.heap.is_empty();
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    /// Inserts `obj` unless its key is present, in which case nothing changes. A consumer
    /// retries an object it popped this way without overwriting a newer one added meanwhile.
    ///
    /// # Errors
    /// As [`add`](Heap::add).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// heap.add_if_not_present(Arc::new(("a", 1))).unwrap();
    /// assert_eq!(*heap.peek().unwrap(), ("a", 5));
    /// ```
    pub fn add_if_not_present(&self, obj: Arc<K>) -> Result<(), FifoError> {
        self.push(obj, false)
    }

    /// Removes the object held under the key of `obj` (whatever its content) and returns
    /// it; `None` if the key is absent. Works after [`close`](Heap::close) too.
    ///
    /// # Errors
    /// [`KeyError`] if `obj` has no key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// assert_eq!(heap.delete(&("a", 0)).unwrap(), Some(Arc::new(("a", 5))));
    /// assert_eq!(heap.delete(&("a", 0)).unwrap(), None);
    /// ```
    pub fn delete(&self, obj: &K) -> Result<Option<Arc<K>>, KeyError> {
        let key = (self.key_fn)(obj)?;
        Ok(self.delete_by_key(&key))
    }

    /// Removes the object held under `key` and returns it; `None` if the key is absent.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// assert!(heap.delete_by_key(&ObjectKey::cluster("a")).is_some());
    /// assert!(heap.is_empty());
    /// ```
    pub fn delete_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut st = self.state.lock();
        let n = *st.by_key.get(key)?;
        let pos = st.slot(n).pos;
        Some(st.remove_at(pos))
    }

    /// Waits until an object is held, then removes and returns the one that pops first
    /// (client-go's `Pop`). Cancel safe: dropping the future before it completes takes
    /// nothing.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the heap is closed and empty; a pop waiting on an empty
    /// heap fails so when it is closed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{FifoError, KeyError, ObjectKey};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// heap.close();
    /// assert_eq!(*heap.pop().await.unwrap(), ("a", 5)); // what is held is still handed out
    /// assert_eq!(heap.pop().await, Err(FifoError::Closed));
    /// # }
    /// ```
    pub async fn pop(&self) -> Result<Arc<K>, FifoError> {
        let obj = take_next(&self.state, &self.notify).await?;
        // Free the pop slot at once: a heap pop has no processing step.
        if self.state.lock().consumers.release() {
            self.notify.notify_one();
        }
        Ok(obj)
    }

    /// The object that would pop next, left in place.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// assert!(heap.peek().is_none());
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// heap.add(Arc::new(("b", 2))).unwrap();
    /// assert_eq!(*heap.peek().unwrap(), ("b", 2));
    /// assert_eq!(heap.len(), 2);
    /// ```
    pub fn peek(&self) -> Option<Arc<K>> {
        let st = self.state.lock();
        let n = *st.heap.first()?;
        Some(st.slot(n).obj.clone())
    }

    /// The object held under the key of `obj` (client-go's `Get`).
    ///
    /// # Errors
    /// [`KeyError`] if `obj` has no key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// assert_eq!(heap.get(&("a", 0)).unwrap(), Some(Arc::new(("a", 5))));
    /// assert_eq!(heap.get(&("b", 0)).unwrap(), None);
    /// ```
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, KeyError> {
        let key = (self.key_fn)(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The object held under `key` (client-go's `GetByKey`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// assert!(heap.get_by_key(&ObjectKey::cluster("a")).is_some());
    /// ```
    pub fn get_by_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let st = self.state.lock();
        let n = *st.by_key.get(key)?;
        Some(st.slot(n).obj.clone())
    }

    /// Every object held, in no particular order (client-go's `List`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// heap.add(Arc::new(("b", 2))).unwrap();
    /// let mut list: Vec<_> = heap.list().iter().map(|o| **o).collect();
    /// list.sort();
    /// assert_eq!(list, [("a", 5), ("b", 2)]);
    /// ```
    pub fn list(&self) -> Vec<Arc<K>> {
        let st = self.state.lock();
        st.heap.iter().map(|&n| st.slot(n).obj.clone()).collect()
    }

    /// Every key held, in no particular order (client-go's `ListKeys`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// assert_eq!(heap.list_keys(), [ObjectKey::cluster("a")]);
    /// ```
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        let st = self.state.lock();
        st.heap.iter().map(|&n| st.slot(n).key.clone()).collect()
    }

    /// The number of objects held.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &(&'static str, u32)) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(o.0))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a.1 < b.1);
    /// heap.add(Arc::new(("a", 5))).unwrap();
    /// heap.add(Arc::new(("a", 6))).unwrap();
    /// assert_eq!(heap.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.state.lock().heap.len()
    }

    /// Whether nothing is held.
    ///
    /// ```
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &u32) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(&o.to_string()))
    /// }
    /// assert!(Heap::with_key_fn(key, |a, b| a < b).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the heap: adds fail with [`FifoError::Closed`], and once what is held has been
    /// popped, [`pop`](Heap::pop) fails with it, waking every pop that waits.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer_core::fifo::Heap;
    /// use informer_core::{FifoError, KeyError, ObjectKey};
    ///
    /// fn key(o: &u32) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(&o.to_string()))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a < b);
    /// heap.close();
    /// assert_eq!(heap.add(Arc::new(1)), Err(FifoError::Closed));
    /// ```
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`close`](Heap::close) was called.
    ///
    /// ```
    /// use informer_core::fifo::Heap;
    /// use informer_core::{KeyError, ObjectKey};
    ///
    /// fn key(o: &u32) -> Result<ObjectKey, KeyError> {
    ///     Ok(ObjectKey::cluster(&o.to_string()))
    /// }
    /// let heap = Heap::with_key_fn(key, |a, b| a < b);
    /// assert!(!heap.is_closed());
    /// heap.close();
    /// assert!(heap.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Computes the key outside the lock, then inserts (see [`State::insert`]).
    fn push(&self, obj: Arc<K>, overwrite: bool) -> Result<(), FifoError> {
        let key = (self.key_fn)(&obj)?;
        let mut st = self.state.lock();
        if st.closed {
            return Err(FifoError::Closed);
        }
        let woke = st.insert(key, obj, overwrite);
        drop(st);
        self.wake_if(woke);
        Ok(())
    }

    fn wake_if(&self, became_non_empty: bool) {
        if became_non_empty {
            self.notify.notify_one();
        }
    }
}

impl<K> fmt::Debug for Heap<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state.lock();
        f.debug_struct("Heap")
            .field("len", &st.heap.len())
            .field("closed", &st.closed)
            .finish()
    }
}

#[cfg(test)]
mod tests;
