//! A [`Listener`]: one handler's buffer, counters and task (client-go's
//! `processorListener`). The [`Processor`] hands it notifications; its task drains them
//! into the handler, so a slow handler delays only itself. When its
//! [`Overflow::Coalesce`] buffer is full, later notifications are merged per key and
//! delivered as net changes read from the cache.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use informer_core::{Deleted, Handler, Indexer, Notification, ObjectKey};
use kube::Resource;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::handler_options::{BufferPolicy, HandlerOptions, HandlerStats, Overflow};
use super::processor::{MAX_IDLE_CAPACITY, Processor, release};
use crate::panic;

/// A handler is flushed ([`Handler::flush`]) at least once per this many notifications.
const FLUSH_EVERY: usize = 256;

/// One buffered notification; `initial` counts the initial-list adds it stands for.
pub(super) struct Item<K> {
    pub(super) notification: Notification<K>,
    pub(super) initial: usize,
}

/// Notifications merged for one key while coalescing.
struct Merged<K> {
    /// What the handler last saw of the object before the first merged notification.
    before: Option<Arc<K>>,
    /// The first merged notification, when it was a delete: the handler must still see
    /// it if the object was created again (its final state is not something the handler
    /// ever saw, so it cannot stand as the `old` of an update).
    deleted_first: Option<Deleted<K>>,
    /// The last merged notification.
    last: Notification<K>,
    /// Initial-list adds merged into this entry.
    initial: usize,
}

struct Buffer<K> {
    items: VecDeque<Item<K>>,
    /// `Some` while coalescing (only with [`Overflow::Coalesce`]).
    merged: Option<HashMap<ObjectKey, Merged<K>>>,
}

/// The per-handler half of the processor: buffer, counters, task.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    name: Arc<str>,
    handler: Arc<dyn Handler<K>>,
    pub(super) policy: BufferPolicy,
    buffer: Mutex<Buffer<K>>,
    /// Wakes the task: items were buffered, or the listener was closed.
    wake: Notify,
    /// Wakes a distributor waiting for room ([`Overflow::Block`]).
    room: Notify,
    /// Wakes waiters of [`Listener::wait_initial`] when the last initial add was handled.
    initial_done: Notify,
    pending: AtomicUsize,
    pending_initial: AtomicUsize,
    delivered: AtomicU64,
    panics: AtomicU64,
    coalesced: AtomicU64,
    closed: AtomicBool,
    /// Whether the handler had synced when it was closed (see [`Listener::synced`]).
    synced_at_close: AtomicBool,
    pub(super) task: Mutex<Option<JoinHandle<()>>>,
}

impl<K> fmt::Debug for Listener<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .field("pending", &self.pending.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> Listener<K> {
    pub(super) fn new(id: u64, handler: Arc<dyn Handler<K>>, opts: &HandlerOptions) -> Self {
        let name: Arc<str> = match &opts.name {
            Some(n) => Arc::from(n.as_str()),
            None => Arc::from(format!("handler-{id}")),
        };
        Self {
            id,
            name,
            handler,
            policy: opts.buffer,
            buffer: Mutex::new(Buffer {
                items: VecDeque::new(),
                merged: None,
            }),
            wake: Notify::new(),
            room: Notify::new(),
            initial_done: Notify::new(),
            pending: AtomicUsize::new(0),
            pending_initial: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            coalesced: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            synced_at_close: AtomicBool::new(false),
            task: Mutex::new(None),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn stats(&self) -> HandlerStats {
        HandlerStats {
            pending: self.pending.load(Ordering::Acquire),
            delivered: self.delivered.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
            coalesced: self.coalesced.load(Ordering::Relaxed),
        }
    }

    /// Whether every initial add given to this listener so far has been handled.
    pub(crate) fn initial_handled(&self) -> bool {
        self.pending_initial.load(Ordering::Acquire) == 0
    }

    /// Whether the handler has synced, given whether the informer has (`upstream`): it has
    /// handled every initial add of a synced informer. Once closed (removed or stopped),
    /// what it was when it was closed, as client-go's sync tracker keeps its answer.
    pub(crate) fn synced(&self, upstream: bool) -> bool {
        if self.is_closed() {
            self.synced_at_close.load(Ordering::Acquire)
        } else {
            upstream && self.initial_handled()
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waits until [`initial_handled`](Self::initial_handled) or the listener is closed.
    pub(crate) async fn wait_initial(&self) {
        loop {
            let notified = self.initial_done.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            if self.initial_handled() || self.is_closed() {
                return;
            }
            notified.await;
        }
    }

    /// Buffers (or, when coalescing, merges) `items` in order, leaving `items` empty (its
    /// capacity is kept for the next batch). Called with the distribution lock held: one
    /// buffer lock, one counter update and at most one wake-up per batch.
    pub(super) fn push_all(&self, items: &mut Vec<Item<K>>, store: &dyn Indexer<K>) {
        if items.is_empty() {
            return;
        }
        if self.is_closed() {
            items.clear();
            return;
        }
        let initial: usize = items.iter().map(|i| i.initial).sum();
        let mut buf = self.buffer.lock();
        if initial > 0 {
            self.pending_initial.fetch_add(initial, Ordering::AcqRel);
        }
        let was_empty = buf.items.is_empty();
        let added = match self.policy.limit(Overflow::Coalesce) {
            None => {
                let n = items.len();
                buf.items.extend(items.drain(..));
                n
            }
            Some(capacity) => {
                let pending = self.pending.load(Ordering::Acquire);
                let (mut added, mut merged) = (0, 0u64);
                for item in items.drain(..) {
                    // A notification without a key (impossible for objects that came out of
                    // the store) is buffered rather than lost.
                    if (buf.merged.is_some() || pending + added >= capacity)
                        && let Some(key) = item.notification.key_with(|o| store.key_of(o).ok())
                    {
                        let map = buf.merged.get_or_insert_with(HashMap::new);
                        merge(map, key, item.notification, item.initial);
                        merged += 1;
                        continue;
                    }
                    buf.items.push_back(item);
                    added += 1;
                }
                if merged > 0 {
                    self.coalesced.fetch_add(merged, Ordering::Relaxed);
                }
                added
            }
        };
        if added > 0 {
            self.pending.fetch_add(added, Ordering::AcqRel);
        }
        drop(buf);
        if was_empty && added > 0 {
            // The task only sleeps after finding the buffer empty; a permit is kept if it
            // is not sleeping yet.
            self.wake.notify_one();
        }
    }

    /// Whether the distributor must wait for this listener ([`Overflow::Block`], full).
    pub(super) fn is_full_blocking(&self) -> bool {
        match self.policy.limit(Overflow::Block) {
            Some(capacity) => !self.is_closed() && self.pending.load(Ordering::Acquire) >= capacity,
            None => false,
        }
    }

    /// Waits until this [`Overflow::Block`] listener has room or is closed.
    pub(super) async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            let mut notified = pin!(notified);
            notified.as_mut().enable();
            if !self.is_full_blocking() {
                return;
            }
            notified.await;
        }
    }

    /// Stops delivery: discards what is buffered; the call in progress (if any) completes,
    /// then the task ends.
    /// Closes the listener: it gets no notification from now on, and what is buffered is
    /// dropped. `upstream_synced`: whether the informer had synced (what
    /// [`synced`](Self::synced) answers from now on is decided here).
    pub(crate) fn close(&self, upstream_synced: bool) {
        if !self.is_closed() {
            let synced = upstream_synced && self.initial_handled();
            self.synced_at_close.store(synced, Ordering::Release);
        }
        self.closed.store(true, Ordering::Release);
        let mut buf = self.buffer.lock();
        let dropped = buf.items.len();
        buf.items.clear();
        buf.merged = None;
        drop(buf);
        self.sub_pending(dropped);
        self.wake.notify_one();
        self.room.notify_waiters();
        self.initial_done.notify_waiters();
    }

    fn sub_pending(&self, n: usize) {
        if n == 0 {
            return;
        }
        let before = self.pending.fetch_sub(n, Ordering::AcqRel);
        if let Some(capacity) = self.policy.limit(Overflow::Block)
            && before >= capacity
            && before - n < capacity
        {
            self.room.notify_waiters();
        }
    }

    fn sub_initial(&self, n: usize) {
        if n > 0 && self.pending_initial.fetch_sub(n, Ordering::AcqRel) == n {
            self.initial_done.notify_waiters();
        }
    }

    /// Calls the handler for one item, catching a panic. Returns the item's count of
    /// initial adds, to be settled once the run is flushed ([`Self::settle`]).
    /// The notification is then pushed to `done`.
    fn deliver(
        &self,
        item: Item<K>,
        store: &dyn Indexer<K>,
        done: &mut Vec<Notification<K>>,
    ) -> usize {
        let Item {
            notification,
            initial,
        } = item;
        let handler = &self.handler;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler.notify(&notification))) {
            self.panics.fetch_add(1, Ordering::Relaxed);
            let key = notification
                .key_with(|o| store.key_of(o).ok())
                .map(|k| k.to_string())
                .unwrap_or_else(|| "<no key>".to_owned());
            tracing::error!(
                handler = %self.name,
                key = %key,
                kind = notification.kind(),
                panic = %panic::message(&*payload),
                "event handler panicked; the panic was caught and the handler keeps receiving later events"
            );
        }
        done.push(notification);
        initial
    }

    /// Ends a run of `delivered` notifications (holding `initial` initial adds): lets the
    /// handler finish deferred work ([`Handler::flush`]), then counts them as handled. So an
    /// initial add counts as handled (for the registration's `has_synced`) only once what
    /// the handler did with it has been flushed.
    fn settle(&self, delivered: usize, initial: usize) {
        if delivered == 0 {
            return;
        }
        let handler = &self.handler;
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| handler.flush())) {
            self.panics.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                handler = %self.name,
                panic = %panic::message(&*payload),
                "event handler panicked in flush; the panic was caught and the handler keeps receiving later events"
            );
        }
        self.delivered
            .fetch_add(delivered as u64, Ordering::Relaxed);
        self.sub_initial(initial);
        self.sub_pending(delivered);
    }

    /// Turns the merged notifications into one net notification per key, computed from the
    /// cache. Called by the task when its buffer is empty; takes the distribution lock so the
    /// cache read and the end of coalescing are atomic with respect to new notifications.
    fn flush_merged(&self, processor: &Processor<K>) {
        let _distribution = processor.state.lock();
        let mut buf = self.buffer.lock();
        let Some(merged) = buf.merged.take() else {
            return;
        };
        let mut dropped_initial = 0;
        for (key, m) in merged {
            let current = processor.store.get(&key);
            if let Some(deleted) = m.deleted_first {
                // The handler last saw the object before this delete: it gets the delete,
                // then the object's current state as a new add if it exists again.
                let (delete, add) = match current {
                    Some(object) => (
                        Notification::Delete(deleted),
                        Some(Notification::Add {
                            object,
                            is_initial_list: m.initial > 0,
                        }),
                    ),
                    None => match m.last {
                        n @ Notification::Delete(_) => (n, None),
                        _ => (Notification::Delete(deleted), None),
                    },
                };
                dropped_initial += self.requeue(&mut buf, Some(delete), 0);
                dropped_initial += self.requeue(&mut buf, add, m.initial);
                continue;
            }
            let net = match (m.before, current) {
                (None, None) => None,
                (None, Some(object)) => Some(Notification::Add {
                    object,
                    is_initial_list: m.initial > 0,
                }),
                (Some(old), Some(new)) => Some(Notification::Update { old, new }),
                (Some(old), None) => Some(match m.last {
                    n @ Notification::Delete(_) => n,
                    _ => Notification::Delete(Deleted::FinalStateUnknown {
                        key,
                        last_known: Some(old),
                    }),
                }),
            };
            dropped_initial += self.requeue(&mut buf, net, m.initial);
        }
        drop(buf);
        self.sub_initial(dropped_initial);
    }

    /// Buffers the net change of a merged key, standing for `initial` initial adds; with
    /// no change to deliver, returns those initial adds (dropped), 0 otherwise.
    fn requeue(
        &self,
        buf: &mut Buffer<K>,
        notification: Option<Notification<K>>,
        initial: usize,
    ) -> usize {
        let Some(notification) = notification else {
            return initial;
        };
        buf.items.push_back(Item {
            notification,
            initial,
        });
        self.pending.fetch_add(1, Ordering::AcqRel);
        0
    }

    /// The listener's task: drains the buffer into the handler until closed.
    pub(super) async fn run(self: Arc<Self>, processor: Arc<Processor<K>>) {
        let mut batch: VecDeque<Item<K>> = VecDeque::new();
        // Delivered notifications, let go of after each run (see `release`).
        let mut delivered_ones: Vec<Notification<K>> = Vec::new();
        loop {
            let coalescing = {
                let mut buf = self.buffer.lock();
                if self.is_closed() {
                    break;
                }
                std::mem::swap(&mut buf.items, &mut batch);
                batch.is_empty() && buf.merged.is_some()
            };
            if coalescing {
                self.flush_merged(&processor);
                continue;
            }
            if batch.is_empty() {
                self.wake.notified().await;
                continue;
            }
            let (mut delivered, mut initial) = (0, 0);
            while let Some(item) = batch.pop_front() {
                if self.is_closed() {
                    let skipped = batch.len() + 1;
                    batch.clear();
                    self.sub_pending(skipped);
                    break;
                }
                initial += self.deliver(item, &*processor.store, &mut delivered_ones);
                delivered += 1;
                if delivered == FLUSH_EVERY {
                    self.settle(delivered, initial);
                    release(&mut delivered_ones);
                    (delivered, initial) = (0, 0);
                }
            }
            self.settle(delivered, initial);
            release(&mut delivered_ones);
            if batch.capacity() > MAX_IDLE_CAPACITY {
                // Do not keep a burst's memory forever.
                batch.shrink_to(MAX_IDLE_CAPACITY / 8);
            }
            // Let other tasks on this worker run between batches.
            tokio::task::consume_budget().await;
        }
    }
}

fn merge<K>(
    merged: &mut HashMap<ObjectKey, Merged<K>>,
    key: ObjectKey,
    notification: Notification<K>,
    initial: usize,
) {
    match merged.get_mut(&key) {
        Some(m) => {
            m.last = notification;
            m.initial += initial;
        }
        None => {
            let (before, deleted_first) = match &notification {
                Notification::Add { .. } => (None, None),
                Notification::Update { old, .. } => (Some(old.clone()), None),
                Notification::Delete(d) => (None, Some(d.clone())),
            };
            merged.insert(
                key,
                Merged {
                    before,
                    deleted_first,
                    last: notification,
                    initial,
                },
            );
        }
    }
}
