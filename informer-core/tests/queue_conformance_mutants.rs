//! `check_queue` rejects queues that break one rule each: deliberately broken wrappers
//! around `WorkQueue`, one per rule, each expected to fail naming its rule. The library's
//! queues, and a wrapper that forwards everything (as `examples/custom_backends.rs`'s does),
//! pass.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer_core::conformance::check_queue;
use informer_core::queue::{
    ItemExponentialFailureRateLimiter, PriorityQueue, QueueWrapper, RateLimiter, WorkQueue,
};
use informer_core::{ObjectKey, Queue};
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn the_library_queues_and_a_forwarding_wrapper_pass() {
    check_queue(WorkQueue::new).await;
    check_queue(PriorityQueue::new).await;
    check_queue(|| Forwarding(WorkQueue::new())).await;
}

/// Forwards everything but `try_get` (a wrapper's default: `None`).
struct Forwarding(WorkQueue<ObjectKey>);

impl QueueWrapper for Forwarding {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }
}

// ---- mutants tracking the items being processed ----

/// What a wrapper that tracks processing changes.
#[derive(Clone, Copy, PartialEq)]
enum Tracked {
    /// An add of an item being processed is lost.
    LosesReAdds,
    /// An add of an item being processed is kept by the wrapper and added to the inner queue
    /// at `done` (so, after a shutdown, the inner queue ignores it).
    ReAddsAtDone,
    /// `add_after` of an item being processed is an `add`: its delay is lost.
    ProcessingAddAfterIsAdd,
}

struct Tracking {
    inner: WorkQueue<ObjectKey>,
    how: Tracked,
    processing: Mutex<HashSet<ObjectKey>>,
    dirty: Mutex<HashSet<ObjectKey>>,
}

fn tracking(how: Tracked) -> impl Fn() -> Tracking {
    move || Tracking {
        inner: WorkQueue::new(),
        how,
        processing: Mutex::default(),
        dirty: Mutex::default(),
    }
}

impl QueueWrapper for Tracking {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.inner
    }
    fn add_with_priority(&self, item: ObjectKey, priority: i32) {
        if self.processing.lock().unwrap().contains(&item) {
            match self.how {
                Tracked::LosesReAdds => return,
                Tracked::ReAddsAtDone => {
                    if !self.inner.is_shutting_down() {
                        self.dirty.lock().unwrap().insert(item);
                    }
                    return;
                }
                Tracked::ProcessingAddAfterIsAdd => {}
            }
        }
        self.inner.add_with_priority(item, priority)
    }
    async fn get(&self) -> Option<ObjectKey> {
        let item = self.inner.get().await?;
        self.processing.lock().unwrap().insert(item.clone());
        Some(item)
    }
    fn done(&self, item: &ObjectKey) {
        self.processing.lock().unwrap().remove(item);
        self.inner.done(item);
        if self.dirty.lock().unwrap().remove(item) {
            self.inner.add(item.clone());
        }
    }
    fn add_after(&self, item: ObjectKey, delay: Duration) {
        if self.how == Tracked::ProcessingAddAfterIsAdd
            && self.processing.lock().unwrap().contains(&item)
        {
            return self.inner.add(item);
        }
        self.inner.add_after(item, delay)
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "is not handed out again before done, and is queued once after it")]
async fn losing_an_add_while_processing_fails() {
    check_queue(tracking(Tracked::LosesReAdds)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "re-added while processing before shut_down is handed out again")]
async fn dropping_a_re_add_whose_done_comes_after_shutdown_fails() {
    check_queue(tracking(Tracked::ReAddsAtDone)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "add_after of an item being processed hands it out again once")]
async fn ignoring_the_delay_of_an_item_being_processed_fails() {
    check_queue(tracking(Tracked::ProcessingAddAfterIsAdd)).await;
}

// ---- mutants whose delays are timers of their own ----

/// What a queue whose `add_after` runs a timer task changes.
#[derive(Clone, Copy, Default)]
struct TimerFlaws {
    /// Each `add_after` replaces the item's time, even with a later one.
    later_postpones: bool,
    /// `add` leaves the item's timer running: the item comes back when it fires.
    add_keeps_timer: bool,
    /// Timers still run after shutdown, and what they fire is handed out.
    hands_out_late: bool,
}

/// A queue whose `add_after` spawns a task that adds the item when its time comes.
struct Timers {
    inner: Arc<WorkQueue<ObjectKey>>,
    flaws: TimerFlaws,
    /// The time each delayed item waits for, with the timer's number.
    pending: Arc<Mutex<HashMap<ObjectKey, (Instant, u64)>>>,
    next: AtomicUsize,
    late: Arc<Mutex<Vec<ObjectKey>>>,
}

fn timers(flaws: TimerFlaws) -> impl Fn() -> Timers {
    move || Timers {
        inner: Arc::new(WorkQueue::new()),
        flaws,
        pending: Arc::default(),
        next: AtomicUsize::new(0),
        late: Arc::default(),
    }
}

impl QueueWrapper for Timers {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &*self.inner
    }
    fn add_with_priority(&self, item: ObjectKey, priority: i32) {
        if !self.flaws.add_keeps_timer {
            self.pending.lock().unwrap().remove(&item);
        }
        self.inner.add_with_priority(item, priority)
    }
    async fn get(&self) -> Option<ObjectKey> {
        match self.inner.get().await {
            Some(item) => Some(item),
            None => self.late.lock().unwrap().pop(),
        }
    }
    fn add_after(&self, item: ObjectKey, delay: Duration) {
        if delay.is_zero() {
            return self.inner.add(item);
        }
        let deadline = Instant::now() + delay;
        let number = self.next.fetch_add(1, Ordering::Relaxed) as u64;
        {
            let mut pending = self.pending.lock().unwrap();
            if let Some((earlier, _)) = pending.get(&item)
                && *earlier <= deadline
                && !self.flaws.later_postpones
            {
                return;
            }
            pending.insert(item.clone(), (deadline, number));
        }
        let (inner, pending, late) = (self.inner.clone(), self.pending.clone(), self.late.clone());
        let keeps_timer = self.flaws.add_keeps_timer;
        let hands_out_late = self.flaws.hands_out_late;
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            let fires = {
                let mut pending = pending.lock().unwrap();
                match pending.get(&item) {
                    Some((_, n)) if *n == number => {
                        pending.remove(&item);
                        true
                    }
                    _ => keeps_timer,
                }
            };
            if !fires {
                return;
            }
            if inner.is_shutting_down() {
                if hands_out_late {
                    late.lock().unwrap().push(item);
                }
            } else {
                inner.add(item);
            }
        });
    }
    fn shut_down(&self) {
        if !self.flaws.hands_out_late {
            self.pending.lock().unwrap().clear();
        }
        self.inner.shut_down()
    }
}

#[tokio::test(start_paused = true)]
async fn a_timer_queue_without_flaws_passes() {
    check_queue(timers(TimerFlaws::default())).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "a later time never postpones an earlier one")]
async fn a_later_add_after_postponing_an_earlier_one_fails() {
    check_queue(timers(TimerFlaws {
        later_postpones: true,
        ..TimerFlaws::default()
    }))
    .await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "an item waits for one time only")]
async fn an_add_that_leaves_the_timer_running_fails() {
    check_queue(timers(TimerFlaws {
        add_keeps_timer: true,
        ..TimerFlaws::default()
    }))
    .await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "delayed items are dropped at shutdown")]
async fn handing_out_delayed_items_after_shutdown_fails() {
    check_queue(timers(TimerFlaws {
        hands_out_late: true,
        ..TimerFlaws::default()
    }))
    .await;
}

// ---- a mutant that promotes delayed items only when a worker asks ----

/// A queue that keeps delayed items in a list of its own and moves the due ones to the
/// inner queue only in `get` (and, if `len_promotes`, in `len`; if `shut_down_promotes`, at
/// shutdown).
struct Lazy {
    inner: WorkQueue<ObjectKey>,
    pending: Mutex<Vec<(Instant, ObjectKey)>>,
    len_promotes: bool,
    shut_down_promotes: bool,
}

fn lazy(len_promotes: bool, shut_down_promotes: bool) -> impl Fn() -> Lazy {
    move || Lazy {
        inner: WorkQueue::new(),
        pending: Mutex::default(),
        len_promotes,
        shut_down_promotes,
    }
}

impl Lazy {
    /// Adds the due items to the inner queue; the earliest time still to come.
    fn promote(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut pending = self.pending.lock().unwrap();
        let (due, later): (Vec<_>, Vec<_>) = pending.drain(..).partition(|(at, _)| *at <= now);
        *pending = later;
        let next = pending.iter().map(|(at, _)| *at).min();
        drop(pending);
        for (_, item) in due {
            self.inner.add(item);
        }
        next
    }
}

impl QueueWrapper for Lazy {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.inner
    }
    fn add_with_priority(&self, item: ObjectKey, priority: i32) {
        self.pending.lock().unwrap().retain(|(_, k)| *k != item);
        self.inner.add_with_priority(item, priority)
    }
    async fn get(&self) -> Option<ObjectKey> {
        loop {
            let next = self.promote();
            if let Some(item) = self.inner.try_get() {
                return Some(item);
            }
            match next {
                Some(at) if !self.inner.is_shutting_down() => tokio::select! {
                    item = self.inner.get() => return item,
                    () = tokio::time::sleep_until(at) => {}
                },
                _ => return self.inner.get().await,
            }
        }
    }
    fn len(&self) -> usize {
        if self.len_promotes {
            self.promote();
        }
        self.inner.len()
    }
    fn add_after(&self, item: ObjectKey, delay: Duration) {
        if self.inner.is_shutting_down() {
            return;
        }
        if delay.is_zero() {
            return QueueWrapper::add_with_priority(self, item, 0);
        }
        let at = Instant::now() + delay;
        let mut pending = self.pending.lock().unwrap();
        match pending.iter_mut().find(|(_, k)| *k == item) {
            Some((earlier, _)) => *earlier = (*earlier).min(at),
            None => pending.push((at, item)),
        }
    }
    fn shut_down(&self) {
        if self.shut_down_promotes {
            self.promote();
        }
        self.pending.lock().unwrap().clear();
        self.inner.shut_down()
    }
}

#[tokio::test(start_paused = true)]
async fn a_lazy_queue_that_promotes_in_len_and_at_shutdown_passes() {
    check_queue(lazy(true, true)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "len counts a delayed item once its time has passed")]
async fn a_len_that_misses_due_delayed_items_fails() {
    check_queue(lazy(false, true)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "an item whose add_after time passed before shut_down is still handed")]
async fn dropping_due_items_at_shutdown_fails() {
    check_queue(lazy(true, false)).await;
}

// ---- mutants of add_rate_limited ----

/// A queue whose `add_rate_limited` asks the limiter, then loses the item (`drops`), or
/// (`!drops`) skips the limiter after shutdown.
struct RateLimited {
    inner: WorkQueue<ObjectKey>,
    limiter: Arc<ItemExponentialFailureRateLimiter<ObjectKey>>,
    drops: bool,
}

fn rate_limited(drops: bool) -> impl Fn() -> RateLimited {
    move || {
        let limiter = Arc::new(ItemExponentialFailureRateLimiter::default());
        RateLimited {
            inner: WorkQueue::with_rate_limiter(limiter.clone()),
            limiter,
            drops,
        }
    }
}

impl QueueWrapper for RateLimited {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.inner
    }
    fn add_rate_limited(&self, item: ObjectKey) {
        if self.drops {
            let _ = self.limiter.when(&item);
        } else if !self.inner.is_shutting_down() {
            self.inner.add_rate_limited(item);
        }
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "add_rate_limited hands the item back after the limiter's delay")]
async fn an_add_rate_limited_that_only_counts_fails() {
    check_queue(rate_limited(true)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "add_rate_limited after shutdown counts the failure")]
async fn an_add_rate_limited_that_skips_the_limiter_after_shutdown_fails() {
    check_queue(rate_limited(false)).await;
}

// ---- mutants of shut_down_with_drain ----

/// A queue whose `shut_down_with_drain` ignores `drain_queued`, passing its own flag.
struct Drain(WorkQueue<ObjectKey>, bool);

impl QueueWrapper for Drain {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }
    async fn shut_down_with_drain(&self, _drain_queued: bool) {
        self.0.shut_down_with_drain(self.1).await
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "shut_down_with_drain(true) also waits until the queued items")]
async fn a_drain_that_ignores_queued_items_fails() {
    check_queue(|| Drain(WorkQueue::new(), false)).await;
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "shut_down_with_drain(false) waits for the items being processed, not")]
async fn a_drain_false_that_waits_for_queued_items_fails() {
    check_queue(|| Drain(WorkQueue::new(), true)).await;
}

// ---- mutants of try_get, add_batch, and of get under several workers ----

/// A `try_get` that hands the item out but leaves it queued.
struct TryGetLeavesItQueued(WorkQueue<ObjectKey>);

impl QueueWrapper for TryGetLeavesItQueued {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }
    fn try_get(&self) -> Option<ObjectKey> {
        let item = self.0.try_get()?;
        self.0.done(&item);
        self.0.add(item.clone());
        Some(item)
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "try_get keeps the guarantees of get")]
async fn a_try_get_that_hands_out_an_item_twice_fails() {
    check_queue(|| TryGetLeavesItQueued(WorkQueue::new())).await;
}

/// An `add_batch` that queues only the first item.
struct BatchKeepsFirst(WorkQueue<ObjectKey>);

impl QueueWrapper for BatchKeepsFirst {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }
    fn add_batch_with_priority(&self, items: Vec<ObjectKey>, priority: i32) {
        if let Some(first) = items.into_iter().next() {
            self.0.add_with_priority(first, priority);
        }
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "add_batch queues each item as add does")]
async fn an_add_batch_that_loses_items_fails() {
    check_queue(|| BatchKeepsFirst(WorkQueue::new())).await;
}

/// A `get` that, when other workers are waiting too, hands the item it got to the next
/// worker that asks as well: one item, two workers. One worker at a time never sees it.
#[derive(Default)]
struct SharesWithWaiters {
    inner: WorkQueue<ObjectKey>,
    waiting: AtomicUsize,
    shared: Mutex<Vec<ObjectKey>>,
}

impl QueueWrapper for SharesWithWaiters {
    type Item = ObjectKey;
    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.inner
    }
    async fn get(&self) -> Option<ObjectKey> {
        if let Some(item) = self.shared.lock().unwrap().pop() {
            return Some(item);
        }
        let waiting = Waiting::new(&self.waiting);
        let item = self.inner.get().await;
        let others = self.waiting.load(Ordering::SeqCst) - 1;
        drop(waiting);
        if let Some(item) = &item
            && others > 0
        {
            self.shared.lock().unwrap().push(item.clone());
        }
        item
    }
}

/// Counts a worker waiting in `get` until dropped (a `get` cancelled by a timeout too).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "never held by two workers at once (several workers)")]
async fn a_get_that_hands_one_item_to_two_waiting_workers_fails() {
    check_queue(SharesWithWaiters::default).await;
}
