//! The processor: the listeners of an informer's handlers (client-go's `sharedProcessor`),
//! each with its own buffer and task ([`Listener`]).
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

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use informer_core::{Handler, Indexer, Notification};
use kube::Resource;
use parking_lot::{Mutex, MutexGuard};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::handler_options::{HandlerOptions, Overflow};
use super::listener::{Item, Listener};

/// Buffers larger than this many items are shrunk once drained, so that a burst (a relist
/// of a large cache) does not keep its memory.
pub(super) const MAX_IDLE_CAPACITY: usize = 8192;

/// Fewer released notifications than this are freed at once where they are released; more
/// are freed on the decode pool ([`release`]).
const FREE_LATER_FROM: usize = 8;

/// Lets go of notifications nobody needs any more (delivered, or with no listener), and of
/// the last references they may hold to replaced and deleted objects. A run of those that
/// free an object (a busy informer) is freed on the decode pool, beside the informer's
/// tasks (see `crate::pool`); a few are freed at once, so that a quiet informer wakes no
/// thread for them. Notifications that free nothing (another handler, the cache or the
/// caller still holds their objects) are dropped at once: a reference count each, less than
/// a thread's wake-up.
pub(super) fn release<K: Send + Sync + 'static>(released: &mut Vec<Notification<K>>) {
    released.retain(frees_an_object);
    if released.len() >= FREE_LATER_FROM {
        let garbage = std::mem::replace(released, Vec::with_capacity(released.len()));
        crate::pool::free_later(garbage);
    } else {
        released.clear();
    }
}

/// Whether dropping `n` frees an object: it holds the only reference left to one. Two
/// handlers releasing clones of one notification at the same moment may both see the other's
/// reference; the object is then freed by the later drop, on its thread, which is correct,
/// only not beside the informer.
fn frees_an_object<K>(n: &Notification<K>) -> bool {
    let last = |object: &Arc<K>| Arc::strong_count(object) == 1;
    match n {
        Notification::Add { object, .. } => last(object),
        Notification::Update { old, new } => last(old) || last(new),
        Notification::Delete(deleted) => deleted.object().is_some_and(last),
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
    /// Receives resync notifications (and a relist's unchanged objects): chosen by the last
    /// [`Processor::should_resync`]; `true` until the first one, as client-go's `addListener`
    /// marks a new listener, so that with no resync period anywhere (no check ever runs)
    /// every handler gets a relist's unchanged objects, as there.
    syncing: bool,
}

pub(super) struct State<K> {
    entries: Vec<Entry<K>>,
    /// Where listener tasks are spawned; `Some` while running.
    runtime: Option<Handle>,
    /// Set once the informer has stopped: listeners added later are closed at once.
    stopped: bool,
}

/// The distribution side: the list of listeners behind the distribution lock.
pub(crate) struct Processor<K> {
    pub(super) state: Mutex<State<K>>,
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
    /// Notifications no listener takes (an informer with no handler, a resync update no
    /// listener is due for): the last references to replaced and deleted objects.
    released: Vec<Notification<K>>,
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
        let mut targets = self.state.entries.iter_mut().filter(|e| !sync || e.syncing);
        let Some(mut last) = targets.next() else {
            self.released.push(n);
            return;
        };
        for next in targets {
            last.staged.push(Item {
                notification: n.clone(),
                initial,
            });
            last = next;
        }
        last.staged.push(Item {
            notification: n,
            initial,
        });
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
        release(&mut self.released);
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
            released: Vec::new(),
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
            listener.close(false);
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
            syncing: true,
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
    /// `synced`: whether the informer has synced (see [`Listener::close`]).
    pub(crate) async fn remove(&self, listener: &Arc<Listener<K>>, synced: bool) {
        if let Some(task) = self.detach(listener, synced) {
            let _ = task.await;
        }
    }

    /// Removes `listener` without waiting: it gets no notification from now on, and its
    /// task (returned, if it has one) ends after the call in progress.
    pub(crate) fn detach(
        &self,
        listener: &Arc<Listener<K>>,
        synced: bool,
    ) -> Option<tokio::task::JoinHandle<()>> {
        {
            let mut state = self.state.lock();
            let before = state.entries.len();
            state.entries.retain(|e| e.listener.id != listener.id);
            if state.entries.len() < before && listener.policy.limit(Overflow::Block).is_some() {
                self.blocking.fetch_sub(1, Ordering::AcqRel);
            }
        }
        listener.close(synced);
        self.resync_changed.notify_one();
        listener.task.lock().take()
    }

    /// Closes every listener without waiting for their tasks; listeners added afterwards
    /// are closed at once. `synced`: whether the informer had synced.
    pub(crate) fn close_all(&self, synced: bool) -> Vec<Arc<Listener<K>>> {
        let listeners: Vec<Arc<Listener<K>>> = {
            let mut state = self.state.lock();
            state.stopped = true;
            state.runtime = None;
            state.entries.iter().map(|e| e.listener.clone()).collect()
        };
        for l in &listeners {
            l.close(synced);
        }
        listeners
    }

    /// Stops every listener and waits until all their tasks have ended. Listeners added
    /// afterwards are closed at once.
    pub(crate) async fn stop(&self, synced: bool) {
        let listeners = self.close_all(synced);
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

    /// The resync period of `listener` (after clamping), `None` without one or once removed.
    pub(crate) fn resync_of(&self, listener: &Listener<K>) -> Option<Duration> {
        self.state
            .lock()
            .entries
            .iter()
            .find(|e| e.listener.id == listener.id)
            .and_then(|e| e.resync)
    }

    /// The number of registered listeners.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().entries.len()
    }
}

#[cfg(test)]
mod tests;
