//! The FIFO between the reflector and the cache.
//!
//! The reflector pushes what it sees (adds, updates, deletes, whole lists, resyncs,
//! bookmarks); the informer pops it and applies it to the [`Store`](crate::Store), then
//! notifies handlers. Two implementations keep client-go's two designs:
//!
//! - [`RealFifo`] (the default, as client-go's informers since 1.36): every event kept in
//!   order, no per-key merging; a relist is one atomic [`Delta::ReplacedAll`] item.
//! - [`DeltaFifo`]: deltas accumulate per key and pop together, oldest key first.
//!
//! Two more queues keep client-go's other building blocks of `tools/cache`, for code (and
//! ports of client-go's tests) that wants them; neither feeds an informer's cache:
//!
//! - [`ObjectFifo`] (client-go's plain `FIFO`): the latest object per key, in the order keys
//!   were queued; deletes take a key out. It implements [`Fifo`], so a reflector can fill it.
//! - [`Heap`] (client-go's `Heap`): one object per key, popped in the order of a `less`
//!   function.

mod delta_fifo;
mod heap;
mod object_fifo;
mod real_fifo;

use std::collections::HashSet;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;

use crate::error::FifoError;
use crate::handler::Deleted;
use crate::key::ObjectKey;

pub use delta_fifo::DeltaFifo;
pub use heap::Heap;
pub use object_fifo::ObjectFifo;
pub use real_fifo::RealFifo;

/// One change pushed by the reflector, popped by the informer.
#[derive(Debug)]
pub enum Delta<K> {
    /// The object was created (watch `ADDED`).
    Added(Arc<K>),
    /// The object changed (watch `MODIFIED`).
    Updated(Arc<K>),
    /// The object was deleted (watch `DELETED`), or found missing by a relist
    /// ([`Deleted::FinalStateUnknown`]).
    Deleted(Deleted<K>),
    /// The object was in a relist ([`DeltaFifo`] only: one per listed object).
    Replaced(Arc<K>),
    /// A resync: the cached object re-delivered, unchanged.
    Sync(Arc<K>),
    /// A whole relist at `resource_version` ([`RealFifo`] only): the consumer replaces its
    /// store in one step and derives adds, updates and deletes from the difference.
    ReplacedAll {
        /// Every object the list returned.
        objects: Vec<Arc<K>>,
        /// The list's resource version.
        resource_version: String,
    },
    /// The server's state has reached `resource_version` ([`RealFifo`] only).
    Bookmark {
        /// The bookmark's resource version.
        resource_version: String,
    },
    /// Part of a list still arriving ([`RealFifo`] only, see [`Fifo::list_part`]): the
    /// consumer caches these objects at once (an add, or an update of a cached object).
    ListPart(Vec<Arc<K>>),
    /// The end of a list that came in parts ([`RealFifo`] only): the consumer removes every
    /// cached object whose key is not in `listed` (each a delete with its last known state)
    /// and records the list's `resource_version`.
    ListEnd {
        /// The keys of every object of the list.
        listed: Arc<HashSet<ObjectKey>>,
        /// The list's resource version.
        resource_version: String,
    },
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(o.clone()),
            Delta::Updated(o) => Delta::Updated(o.clone()),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(o.clone()),
            Delta::Sync(o) => Delta::Sync(o.clone()),
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => Delta::ReplacedAll {
                objects: objects.clone(),
                resource_version: resource_version.clone(),
            },
            Delta::Bookmark { resource_version } => Delta::Bookmark {
                resource_version: resource_version.clone(),
            },
            Delta::ListPart(objects) => Delta::ListPart(objects.clone()),
            Delta::ListEnd {
                listed,
                resource_version,
            } => Delta::ListEnd {
                listed: listed.clone(),
                resource_version: resource_version.clone(),
            },
        }
    }
}

/// The queue between reflector and cache.
///
/// Producers call the push methods from the reflector; one consumer calls
/// [`pop`](Fifo::pop) in a loop. The processing closure runs outside the FIFO's lock; items
/// it is given are applied in order. `has_synced` reports whether everything from the first
/// [`replace`](Fifo::replace) has been processed (not merely handed out), or an event came
/// before any replace.
///
/// Object safe: `Arc<dyn Fifo<K>>` works.
#[async_trait]
pub trait Fifo<K>: Send + Sync {
    /// Queues an add.
    ///
    /// # Errors
    /// [`FifoError::Key`] if the object has no key, [`FifoError::Closed`] after
    /// [`close`](Fifo::close).
    fn add(&self, obj: Arc<K>) -> Result<(), FifoError>;

    /// Queues an update.
    ///
    /// # Errors
    /// As [`add`](Fifo::add).
    fn update(&self, obj: Arc<K>) -> Result<(), FifoError>;

    /// Queues a delete.
    ///
    /// # Errors
    /// As [`add`](Fifo::add).
    fn delete(&self, obj: Arc<K>) -> Result<(), FifoError>;

    /// Queues the result of a (re)list at `resource_version`: the listed objects and deletes
    /// of known objects missing from it.
    ///
    /// # Errors
    /// As [`add`](Fifo::add); on a key error nothing is queued.
    fn replace(&self, objects: Vec<Arc<K>>, resource_version: String) -> Result<(), FifoError>;

    /// Whether this FIFO takes a list in parts ([`list_part`](Fifo::list_part)), so that a
    /// reflector can hand over a large list while it is still being received instead of
    /// holding all of it. Default `false`.
    fn takes_list_parts(&self) -> bool {
        false
    }

    /// Queues part of a list still being received, to be cached at once. `first` starts a
    /// new list: parts queued since an earlier `first` that no [`replace`](Fifo::replace)
    /// ended belonged to a list that failed half-way, and are superseded. The list ends with
    /// `replace(rest, resource_version)`, whose objects are its last part: the list is then
    /// every part since the `first` one plus `rest`, and objects cached that it does not
    /// hold are deleted. Until that `replace` is processed, readers may see a cache that
    /// holds part of the list (the first list counts as synced only once it ends).
    ///
    /// # Errors
    /// [`FifoError::Unsupported`] unless [`takes_list_parts`](Fifo::takes_list_parts);
    /// otherwise as [`replace`](Fifo::replace).
    fn list_part(&self, objects: Vec<Arc<K>>, first: bool) -> Result<(), FifoError> {
        let _ = (objects, first);
        Err(FifoError::Unsupported("lists in parts"))
    }

    /// Ready once fewer than `max` items are queued or being processed (or the FIFO is
    /// closed); otherwise registers `cx`'s waker, woken when the consumer finishes a batch.
    /// A producer that can wait (a reflector handing over a large list in parts) uses it to
    /// stay at most `max` items ahead of a slower consumer. The default is always ready.
    fn poll_room(&self, cx: &mut Context<'_>, max: usize) -> Poll<()> {
        let _ = (cx, max);
        Poll::Ready(())
    }

    /// Queues a [`Delta::Sync`] of every object of the known-objects store that has nothing
    /// queued already.
    ///
    /// # Errors
    /// [`FifoError::Closed`] after [`close`](Fifo::close).
    fn resync(&self) -> Result<(), FifoError>;

    /// Queues a bookmark (a no-op for FIFOs that do not carry bookmarks).
    ///
    /// # Errors
    /// [`FifoError::Closed`] after [`close`](Fifo::close).
    fn bookmark(&self, resource_version: String) -> Result<(), FifoError>;

    /// Waits for items, removes the next batch and passes it to `process`, in order.
    ///
    /// # Errors
    /// [`FifoError::Closed`] once the FIFO is closed and empty.
    async fn pop(&self, process: &mut (dyn FnMut(Vec<Delta<K>>) + Send)) -> Result<(), FifoError>;

    /// As [`pop`](Fifo::pop), and also passes each item's key where the FIFO knows it:
    /// `keys[i]` is the key of `batch[i]`'s object, as this FIFO's key function computed it
    /// when the item was pushed, or `None`. The default knows no key ([`RealFifo`] knows the
    /// key of every item with a single object), so a custom FIFO need not implement it.
    ///
    /// # Errors
    /// As [`pop`](Fifo::pop).
    async fn pop_keyed(
        &self,
        process: &mut (dyn FnMut(Vec<Delta<K>>, Vec<Option<ObjectKey>>) + Send),
    ) -> Result<(), FifoError> {
        self.pop(&mut |batch: Vec<Delta<K>>| {
            let keys = vec![None; batch.len()];
            process(batch, keys)
        })
        .await
    }

    /// Whether the first [`replace`](Fifo::replace) has been processed completely; true at
    /// once if an add, update or delete came before any replace (client-go's
    /// `populated && initialPopulationCount == 0`: a FIFO fed by events only has no initial
    /// list to wait for).
    fn has_synced(&self) -> bool;

    /// The number of queued items (keys for [`DeltaFifo`], events for [`RealFifo`]).
    fn len(&self) -> usize;

    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes the FIFO: pushes are refused, a waiting [`pop`](Fifo::pop) returns
    /// [`FifoError::Closed`].
    fn close(&self);

    /// Whether [`close`](Fifo::close) was called.
    fn is_closed(&self) -> bool;
}

/// A hash map with a fast, per-instance seeded hasher, for the FIFOs' per-key bookkeeping.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A hash set with the same hasher as [`FastMap`].
pub(crate) type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The object a delta carries: the object itself, or for a delete its last known state.
/// `None` for [`Delta::ReplacedAll`], [`Delta::Bookmark`], [`Delta::ListPart`] and
/// [`Delta::ListEnd`], which carry no single object.
pub(crate) fn delta_object<K>(delta: &Delta<K>) -> Option<&Arc<K>> {
    match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            Some(obj)
        }
        Delta::Deleted(deleted) => deleted.object(),
        Delta::ReplacedAll { .. }
        | Delta::Bookmark { .. }
        | Delta::ListPart(_)
        | Delta::ListEnd { .. } => None,
    }
}

/// The state an object will have in the consumer's store once `delta` has been applied:
/// `None` if the delta removes it (or carries no single object).
pub(crate) fn state_after<K>(delta: &Delta<K>) -> Option<&Arc<K>> {
    match delta {
        Delta::Deleted(_) => None,
        other => delta_object(other),
    }
}

/// Tracks client-go's `populated` / `initialPopulationCount`, counting items as done only
/// once they have been *processed*, not merely popped.
///
/// `unpopped` is the number of initial items still queued (client-go's
/// `initialPopulationCount`); `unprocessed` additionally counts initial items handed to a
/// `process` call that has not returned yet.
#[derive(Debug, Default)]
pub(crate) struct SyncCounter {
    populated: bool,
    unpopped: usize,
    unprocessed: usize,
}

impl SyncCounter {
    /// Called after a replace: if nothing populated the FIFO before, the initial population
    /// is the `queued` items now in it (client-go's `initialPopulationCount`).
    pub(crate) fn populate(&mut self, queued: usize) {
        if !self.populated {
            self.populated = true;
            self.unpopped = queued;
            self.unprocessed = queued;
        }
    }

    /// Called after an add, update or delete: if nothing populated the FIFO before, it is
    /// populated with no initial population, so it has synced (client-go's `Add`, `Update`
    /// and `Delete` set `populated` and leave `initialPopulationCount` at 0; a replace after
    /// them does not make an initial population either).
    pub(crate) fn populate_by_event(&mut self) {
        self.populated = true;
    }

    /// How many items the next batch may hold without mixing items of the initial population
    /// with later ones, if that limits it.
    pub(crate) fn batch_limit(&self) -> Option<usize> {
        (self.unpopped > 0).then_some(self.unpopped)
    }

    /// Records that `n` items were popped from the front; returns how many of them belong to
    /// the initial population (to be passed to [`processed`](Self::processed) later).
    pub(crate) fn popped(&mut self, n: usize) -> usize {
        let initial = n.min(self.unpopped);
        self.unpopped -= initial;
        initial
    }

    /// Records that `initial` popped items of the initial population have been processed.
    pub(crate) fn processed(&mut self, initial: usize) {
        self.unprocessed = self.unprocessed.saturating_sub(initial);
    }

    /// client-go's `populated && initialPopulationCount == 0`, counting processed items.
    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.unprocessed == 0
    }
}

/// Who is popping: at most one consumer holds the pop slot, from taking a batch until its
/// `process` call has returned; others wait. Lives inside a FIFO's state, under its lock.
#[derive(Debug, Default)]
pub(crate) struct Consumers {
    /// A consumer has taken a batch and its `process` call has not returned yet.
    busy: bool,
    /// Consumers registered with the FIFO's `Notify`, waiting for items or for the slot.
    waiting: usize,
}

impl Consumers {
    /// Frees the slot after `process` returned (or unwound). Returns whether a waiting
    /// consumer must be woken (call `notify_one` after releasing the lock).
    pub(crate) fn release(&mut self) -> bool {
        self.busy = false;
        self.waiting > 0
    }
}

/// The consumer side of a FIFO's state, for [`take_next`].
pub(crate) trait PopState {
    /// What one pop removes.
    type Taken;
    fn consumers(&mut self) -> &mut Consumers;
    fn is_closed(&self) -> bool;
    fn is_empty(&self) -> bool;
    /// Removes the next batch, if any.
    fn take(&mut self) -> Option<Self::Taken>;
}

/// Waits until the pop slot is free and a batch is queued, then takes the batch and the slot.
/// The caller must call [`Consumers::release`] once `process` has returned.
///
/// No lost wake-ups: a consumer registers with `notify` while it holds the state lock, and
/// every change that can let a waiting consumer proceed notifies after changing the state
/// under that lock: a push onto an empty queue (`notify_one`), a released slot with
/// consumers waiting (`notify_one`), a close (`notify_waiters`). Cancel safe: nothing is
/// taken before the last await.
///
/// # Errors
/// [`FifoError::Closed`] once the FIFO is closed and empty.
pub(crate) async fn take_next<S: PopState>(
    state: &parking_lot::Mutex<S>,
    notify: &tokio::sync::Notify,
) -> Result<S::Taken, FifoError> {
    /// Counts this consumer in `Consumers::waiting` while armed; disarmed under the lock
    /// before returning, so its `Drop` only locks if the wait is cancelled.
    struct Registration<'a, S: PopState> {
        state: &'a parking_lot::Mutex<S>,
        armed: bool,
    }
    impl<S: PopState> Drop for Registration<'_, S> {
        fn drop(&mut self) {
            if self.armed {
                self.state.lock().consumers().waiting -= 1;
            }
        }
    }

    let mut registration = Registration {
        state,
        armed: false,
    };
    loop {
        let notified = notify.notified();
        let mut notified = std::pin::pin!(notified);
        {
            let mut st = state.lock();
            let busy = st.consumers().busy;
            let taken = if busy { None } else { st.take() };
            let outcome = match taken {
                Some(taken) => {
                    st.consumers().busy = true;
                    Some(Ok(taken))
                }
                None if st.is_closed() && st.is_empty() => Some(Err(FifoError::Closed)),
                None => None,
            };
            if let Some(outcome) = outcome {
                if registration.armed {
                    st.consumers().waiting -= 1;
                    registration.armed = false;
                }
                return outcome;
            }
            if !registration.armed {
                st.consumers().waiting += 1;
                registration.armed = true;
            }
            // Registered while the lock is held: any change after we release it wakes us.
            notified.as_mut().enable();
        }
        notified.await;
    }
}

#[cfg(test)]
pub(crate) mod test_support;
