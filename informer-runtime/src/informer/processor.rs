//! The processor: one buffer and one task per handler (client-go's `sharedProcessor` and
//! `processorListener`).
//!
//! The informer loop applies each popped batch to the cache and hands every resulting
//! [`Notification`] to [`Processor::distribute`] while it holds the *distribution lock*.
//! Distribution only appends to per-handler buffers, so it never waits for a handler. Each
//! handler's task drains its own buffer and calls the handler, so a slow handler delays only
//! itself.
//!
//! Lock order (never taken the other way round): distribution lock → a listener's buffer lock.
//! The locks do not poison (`parking_lot`): every critical section leaves its data consistent
//! at every point where user code (a store or key function) could panic.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use informer_core::{Deleted, Handler, Indexer, Notification, ObjectKey};
use kube::Resource;
use parking_lot::{Mutex, MutexGuard};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::panic;

/// The shortest resync period a handler can ask for (client-go's `minimumResyncPeriod`).
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// A handler is flushed ([`Handler::flush`]) at least once per this many notifications.
const FLUSH_EVERY: usize = 256;

/// Buffers larger than this many items are shrunk once drained, so that a burst (a relist
/// of a large cache) does not keep its memory.
const MAX_IDLE_CAPACITY: usize = 8192;

/// What a handler's buffer does when the handler falls behind.
///
/// ```
/// use std::num::NonZeroUsize;
/// use informer_runtime::informer::{BufferPolicy, Overflow};
///
/// let policy = BufferPolicy::bounded(NonZeroUsize::new(1024).unwrap(), Overflow::Coalesce);
/// assert_eq!(policy.capacity(), Some(1024));
/// assert_eq!(BufferPolicy::default(), BufferPolicy::Unbounded);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BufferPolicy {
    /// Every notification is buffered until the handler takes it, however far it falls
    /// behind (client-go's behaviour). A handler that stops forever grows its buffer forever:
    /// watch [`HandlerStats::pending`](crate::informer::HandlerStats::pending).
    #[default]
    Unbounded,
    /// At most about `capacity` notifications are buffered; what happens beyond is `overflow`.
    Bounded {
        /// The number of notifications (buffered plus being handled) at which the buffer
        /// counts as full.
        capacity: NonZeroUsize,
        /// What happens when the buffer is full.
        overflow: Overflow,
    },
}

impl BufferPolicy {
    /// A bounded buffer of `capacity` notifications with the given overflow policy.
    pub fn bounded(capacity: NonZeroUsize, overflow: Overflow) -> Self {
        BufferPolicy::Bounded { capacity, overflow }
    }

    /// The capacity, or `None` when unbounded.
    pub fn capacity(&self) -> Option<usize> {
        match self {
            BufferPolicy::Unbounded => None,
            BufferPolicy::Bounded { capacity, .. } => Some(capacity.get()),
        }
    }

    fn limit(&self, overflow: Overflow) -> Option<usize> {
        match self {
            BufferPolicy::Bounded {
                capacity,
                overflow: o,
            } if *o == overflow => Some(capacity.get()),
            _ => None,
        }
    }
}

/// What a [bounded](BufferPolicy::Bounded) buffer does when it is full.
///
/// Neither policy ever loses the *net* change of an object, and neither lets one handler
/// hold up the notifications of the others that are already distributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Backpressure. Every notification is buffered; once the informer loop has handed a
    /// popped batch to every handler, it waits until each `Block` handler's buffer is below
    /// its capacity before it pops the next batch.
    ///
    /// - The capacity is a soft bound: a buffer may exceed it by the notifications of one
    ///   batch (a relist is one batch, and a handler added late receives the whole cache at
    ///   once).
    /// - While the loop waits, the cache does not change and no other handler receives
    ///   *new* notifications (they still drain what they have): this handler slows the
    ///   whole informer down to its pace. Events keep accumulating in the FIFO meanwhile.
    /// - Removing the handler or stopping the informer releases the wait.
    Block,
    /// Coalescing (drop and resync per key). When the buffer is full, later notifications
    /// are not buffered: they are merged per object key into one pending net change. When
    /// the handler has handled everything buffered before, it receives, for each such key,
    /// one notification computed from the cache at that moment (atomically with respect to
    /// new events):
    ///
    /// | the handler last saw | the cache now holds | it receives |
    /// | --- | --- | --- |
    /// | nothing | `obj` | `Add { obj, .. }` |
    /// | `old` | `obj` | `Update { old, new: obj }` |
    /// | `old` | nothing | the last merged `Delete` (or a `FinalStateUnknown` one) |
    /// | nothing | nothing | nothing (created and deleted while merged) |
    ///
    /// So the handler never holds up the others or the cache, never loses a key or a delete,
    /// and its stream, replayed per key, still ends in the cache's state; what it loses is
    /// the intermediate versions and the order *across* keys. Memory is bounded by the
    /// number of distinct keys. Merged notifications are counted in
    /// [`HandlerStats::coalesced`](crate::informer::HandlerStats::coalesced). Once
    /// coalescing has started, every notification is merged until the handler catches up.
    Coalesce,
}

/// How a handler is registered: its resync period, buffer policy and name.
///
/// ```
/// use std::time::Duration;
/// use informer_runtime::informer::{BufferPolicy, HandlerOptions};
///
/// let opts = HandlerOptions::new()
///     .name("pod-controller")
///     .resync_period(Some(Duration::from_secs(300)))
///     .buffer(BufferPolicy::Unbounded);
/// assert_eq!(opts.resync, Some(Duration::from_secs(300)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    /// How often the handler receives every cached object again as an
    /// `Update { old, new }` with `old` and `new` the same object. `None` or zero: never.
    /// Periods below [`MIN_RESYNC_PERIOD`] are raised to it.
    pub resync: Option<Duration>,
    /// The handler's buffer policy.
    pub buffer: BufferPolicy,
    /// A name for logs (panics are logged with it); defaults to `handler-<n>`.
    pub name: Option<String>,
}

impl HandlerOptions {
    /// No resync, an unbounded buffer, a generated name.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the resync period (`None` or zero: no resync).
    pub fn resync_period(mut self, period: Option<Duration>) -> Self {
        self.resync = period;
        self
    }

    /// Sets the buffer policy.
    pub fn buffer(mut self, buffer: BufferPolicy) -> Self {
        self.buffer = buffer;
        self
    }

    /// Sets the name used in logs.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

/// Normalises a requested resync period: `None`/zero → no resync, below the minimum → the
/// minimum.
pub(crate) fn normalize_resync(period: Option<Duration>) -> Option<Duration> {
    match period {
        None => None,
        Some(p) if p.is_zero() => None,
        Some(p) if p < MIN_RESYNC_PERIOD => {
            tracing::warn!(
                requested = ?p,
                used = ?MIN_RESYNC_PERIOD,
                "resync period below the minimum; using the minimum"
            );
            Some(MIN_RESYNC_PERIOD)
        }
        Some(p) => Some(p),
    }
}

/// Counters of one handler, for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandlerStats {
    /// Notifications buffered or being handled right now.
    pub pending: usize,
    /// Notifications handed to the handler so far (including those it panicked on).
    pub delivered: u64,
    /// Calls of the handler that panicked.
    pub panics: u64,
    /// Notifications merged by [`Overflow::Coalesce`] instead of being buffered.
    pub coalesced: u64,
}

/// One buffered notification; `initial` counts the initial-list adds it stands for.
struct Item<K> {
    notification: Notification<K>,
    initial: usize,
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
    policy: BufferPolicy,
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
    task: Mutex<Option<JoinHandle<()>>>,
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
    fn new(id: u64, handler: Arc<dyn Handler<K>>, opts: &HandlerOptions) -> Self {
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
    fn push_all(&self, items: &mut Vec<Item<K>>, store: &dyn Indexer<K>) {
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
    fn is_full_blocking(&self) -> bool {
        match self.policy.limit(Overflow::Block) {
            Some(capacity) => !self.is_closed() && self.pending.load(Ordering::Acquire) >= capacity,
            None => false,
        }
    }

    /// Waits until this [`Overflow::Block`] listener has room or is closed.
    async fn wait_for_room(&self) {
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
    pub(crate) fn close(&self) {
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
    fn deliver(&self, item: Item<K>, store: &dyn Indexer<K>) -> usize {
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
                buf.items.push_back(Item {
                    notification: delete,
                    initial: 0,
                });
                self.pending.fetch_add(1, Ordering::AcqRel);
                match add {
                    Some(notification) => {
                        buf.items.push_back(Item {
                            notification,
                            initial: m.initial,
                        });
                        self.pending.fetch_add(1, Ordering::AcqRel);
                    }
                    None => dropped_initial += m.initial,
                }
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
            match net {
                Some(notification) => {
                    buf.items.push_back(Item {
                        notification,
                        initial: m.initial,
                    });
                    self.pending.fetch_add(1, Ordering::AcqRel);
                }
                None => dropped_initial += m.initial,
            }
        }
        drop(buf);
        self.sub_initial(dropped_initial);
    }

    /// The listener's task: drains the buffer into the handler until closed.
    async fn run(self: Arc<Self>, processor: Arc<Processor<K>>) {
        let mut batch: VecDeque<Item<K>> = VecDeque::new();
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
                initial += self.deliver(item, &*processor.store);
                delivered += 1;
                if delivered == FLUSH_EVERY {
                    self.settle(delivered, initial);
                    (delivered, initial) = (0, 0);
                }
            }
            self.settle(delivered, initial);
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

/// A registered listener and its resync schedule.
struct Entry<K> {
    listener: Arc<Listener<K>>,
    /// Notifications of the batch being distributed, handed over when the distribution
    /// lock is released (the vector is reused from batch to batch).
    staged: Vec<Item<K>>,
    resync: Option<Duration>,
    next_resync: Instant,
    /// Chosen by the last [`Processor::should_resync`]: receives resync notifications.
    syncing: bool,
}

pub(crate) struct State<K> {
    entries: Vec<Entry<K>>,
    /// Where listener tasks are spawned; `Some` while running.
    runtime: Option<Handle>,
    /// Set once the informer has stopped: listeners added later are closed at once.
    stopped: bool,
}

/// The distribution side: the list of listeners behind the distribution lock.
pub(crate) struct Processor<K> {
    state: Mutex<State<K>>,
    pub(crate) store: Arc<dyn Indexer<K>>,
    next_id: AtomicU64,
    /// How many registered listeners use [`Overflow::Block`] (the loop skips the room check
    /// when none does).
    blocking: AtomicUsize,
    /// Wakes the resync timer when the set of resync schedules changed.
    pub(crate) resync_changed: Notify,
}

/// The distribution lock, held while a popped batch is applied to the cache and its
/// notifications are distributed.
pub(crate) struct Distributor<'a, K: Resource + Send + Sync + 'static> {
    state: MutexGuard<'a, State<K>>,
    store: &'a dyn Indexer<K>,
}

impl<K: Resource + Send + Sync + 'static> Distributor<'_, K> {
    /// Hands `n` to every listener (a resync update only to the listeners whose resync is
    /// due). Listeners receive the batch's notifications, in order, when the distributor is
    /// dropped, still under the distribution lock.
    pub(crate) fn distribute(&mut self, n: Notification<K>) {
        let sync = n.is_resync();
        let initial = usize::from(matches!(
            n,
            Notification::Add {
                is_initial_list: true,
                ..
            }
        ));
        let mut targets = self
            .state
            .entries
            .iter_mut()
            .filter(|e| !sync || e.syncing)
            .peekable();
        while let Some(entry) = targets.next() {
            if targets.peek().is_some() {
                entry.staged.push(Item {
                    notification: n.clone(),
                    initial,
                });
            } else {
                entry.staged.push(Item {
                    notification: n,
                    initial,
                });
                break;
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> Drop for Distributor<'_, K> {
    fn drop(&mut self) {
        let store = self.store;
        for entry in &mut self.state.entries {
            entry.listener.push_all(&mut entry.staged, store);
            if entry.staged.capacity() > MAX_IDLE_CAPACITY {
                entry.staged.shrink_to(MAX_IDLE_CAPACITY / 8);
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> Processor<K> {
    pub(crate) fn new(store: Arc<dyn Indexer<K>>) -> Self {
        Self {
            state: Mutex::new(State {
                entries: Vec::new(),
                runtime: None,
                stopped: false,
            }),
            store,
            next_id: AtomicU64::new(1),
            blocking: AtomicUsize::new(0),
            resync_changed: Notify::new(),
        }
    }

    /// Takes the distribution lock.
    pub(crate) fn distributor(&self) -> Distributor<'_, K> {
        Distributor {
            state: self.state.lock(),
            store: &*self.store,
        }
    }

    /// Registers a listener. If the processor is running, the listener first receives the
    /// current cache as initial adds, atomically with respect to new notifications (the
    /// distribution lock is held while the cache is read), and its task starts at once.
    pub(crate) fn add(
        self: &Arc<Self>,
        handler: Arc<dyn Handler<K>>,
        opts: &HandlerOptions,
        resync: Option<Duration>,
    ) -> Arc<Listener<K>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let listener = Arc::new(Listener::new(id, handler, opts));
        let mut state = self.state.lock();
        if state.stopped {
            listener.close();
            return listener;
        }
        if let Some(runtime) = state.runtime.clone() {
            let mut replay: Vec<Item<K>> = self
                .store
                .list()
                .into_iter()
                .map(|object| Item {
                    notification: Notification::Add {
                        object,
                        is_initial_list: true,
                    },
                    initial: 1,
                })
                .collect();
            listener.push_all(&mut replay, &*self.store);
            self.spawn(&runtime, &listener);
        }
        if listener.policy.limit(Overflow::Block).is_some() {
            self.blocking.fetch_add(1, Ordering::AcqRel);
        }
        state.entries.push(Entry {
            listener: listener.clone(),
            staged: Vec::new(),
            resync,
            next_resync: Instant::now() + resync.unwrap_or_default(),
            syncing: false,
        });
        drop(state);
        if resync.is_some() {
            self.resync_changed.notify_one();
        }
        listener
    }

    fn spawn(self: &Arc<Self>, runtime: &Handle, listener: &Arc<Listener<K>>) {
        let task = runtime.spawn(listener.clone().run(self.clone()));
        *listener.task.lock() = Some(task);
    }

    /// Starts the tasks of the listeners registered so far; later ones start on `add`.
    pub(crate) fn start(self: &Arc<Self>, runtime: Handle) {
        let mut state = self.state.lock();
        if state.stopped || state.runtime.is_some() {
            return;
        }
        for e in &state.entries {
            self.spawn(&runtime, &e.listener);
        }
        state.runtime = Some(runtime);
    }

    /// Unregisters a listener, closes it and waits until its task has ended.
    pub(crate) async fn remove(&self, listener: &Arc<Listener<K>>) {
        {
            let mut state = self.state.lock();
            let before = state.entries.len();
            state.entries.retain(|e| e.listener.id != listener.id);
            if state.entries.len() < before && listener.policy.limit(Overflow::Block).is_some() {
                self.blocking.fetch_sub(1, Ordering::AcqRel);
            }
        }
        listener.close();
        self.resync_changed.notify_one();
        let task = listener.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Closes every listener without waiting for their tasks; listeners added afterwards
    /// are closed at once.
    pub(crate) fn close_all(&self) -> Vec<Arc<Listener<K>>> {
        let listeners: Vec<Arc<Listener<K>>> = {
            let mut state = self.state.lock();
            state.stopped = true;
            state.runtime = None;
            state.entries.iter().map(|e| e.listener.clone()).collect()
        };
        for l in &listeners {
            l.close();
        }
        listeners
    }

    /// Stops every listener and waits until all their tasks have ended. Listeners added
    /// afterwards are closed at once.
    pub(crate) async fn stop(&self) {
        let listeners = self.close_all();
        for l in &listeners {
            let task = l.task.lock().take();
            if let Some(task) = task {
                let _ = task.await;
            }
        }
    }

    /// Waits until every [`Overflow::Block`] listener is below its capacity.
    pub(crate) async fn wait_for_room(&self) {
        if self.blocking.load(Ordering::Acquire) == 0 {
            return;
        }
        loop {
            let full: Vec<Arc<Listener<K>>> = self
                .state
                .lock()
                .entries
                .iter()
                .filter(|e| e.listener.is_full_blocking())
                .map(|e| e.listener.clone())
                .collect();
            if full.is_empty() {
                return;
            }
            for l in full {
                l.wait_for_room().await;
            }
        }
    }

    /// client-go's `shouldResync`: marks the listeners whose resync is due at `now` (and
    /// only those) as syncing, schedules their next resync, and says whether any is due.
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let mut state = self.state.lock();
        let mut any = false;
        for e in &mut state.entries {
            e.syncing = false;
            if let Some(period) = e.resync
                && now >= e.next_resync
            {
                e.syncing = true;
                e.next_resync = now + period;
                any = true;
            }
        }
        any
    }

    /// The earliest time a listener's resync is due, if any listener has a resync period.
    pub(crate) fn next_resync(&self) -> Option<Instant> {
        self.state
            .lock()
            .entries
            .iter()
            .filter(|e| e.resync.is_some())
            .map(|e| e.next_resync)
            .min()
    }

    /// The number of registered listeners.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().entries.len()
    }
}
