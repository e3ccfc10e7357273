//! Workers waiting in `get`: the parked list (under the queue's lock), the timer duty (one
//! parked worker sleeps until the earliest deadline), and the [`Get`] future itself.

use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep, sleep_until};

use super::state::State;
use super::{After, Engine};

/// What the lock holder says to workers that do not hold the lock.
#[derive(Default)]
pub(super) struct Signals {
    /// Whether any item is ready: a hint for workers spinning before they park (they take
    /// the lock to take an item, and again before parking).
    ready: AtomicBool,
}

impl Signals {
    /// Says whether any item is ready (under the lock, when that changes).
    #[inline]
    pub(super) fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Release);
    }

    /// Whether an item was ready when last looked at (without the lock: a hint).
    #[inline]
    pub(super) fn has_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}

/// A parked `get`.
pub(super) struct Parked {
    pub(super) id: u64,
    pub(super) waker: Waker,
}

impl<T> State<T> {
    /// If slot `id` now has the earliest deadline, makes sure a parked worker sleeps until it.
    pub(super) fn rearm_if_earliest(&mut self, id: u32, deadline: Instant, out: &mut After<T>) {
        if self.heap.peek().is_none_or(|e| e.slot != id) {
            return;
        }
        match self.timer {
            None => self.wake_one(out),
            Some((owner, armed)) if deadline < armed => {
                if let Some(waker) = self.take_waiter(owner) {
                    out.wake(waker);
                }
                // A non-parked owner is running and re-reads the heap before parking.
            }
            Some(_) => {}
        }
    }

    /// An item became ready: wakes one parked worker, unless the spinning workers are enough
    /// to take every ready item (each spinner takes the lock and an item before it stops).
    #[inline]
    pub(super) fn wake_for_item(&mut self, out: &mut After<T>) {
        if self.waiters.is_empty() || self.ready_count <= self.spinners {
            return;
        }
        // Items come while workers are parked: spinning would have caught this one.
        self.spin = true;
        self.wake_one_parked(out);
    }

    /// Wakes one parked worker, preferring one that is not the timer owner.
    #[inline]
    pub(super) fn wake_one(&mut self, out: &mut After<T>) {
        if self.waiters.is_empty() {
            return;
        }
        self.wake_one_parked(out);
    }

    #[inline(never)]
    fn wake_one_parked(&mut self, out: &mut After<T>) {
        let skip_owner = self.waiters.len() > 1
            && matches!((self.timer, self.waiters.front()), (Some((owner, _)), Some(p)) if p.id == owner);
        if let Some(p) = self.waiters.remove(usize::from(skip_owner)) {
            out.wake(p.waker);
        }
    }

    /// Removes parked worker `id` and returns its waker, if it is still parked (not woken).
    pub(super) fn take_waiter(&mut self, id: u64) -> Option<Waker> {
        let at = self.waiters.iter().position(|p| p.id == id)?;
        self.waiters.remove(at).map(|p| p.waker)
    }

    /// Removes parked worker `id`; whether it was still parked (not woken).
    pub(super) fn unpark(&mut self, id: u64) -> bool {
        self.take_waiter(id).is_some()
    }

    /// Worker `id` stops waiting: hands its timer duty over, if it had it.
    pub(super) fn leave(&mut self, id: u64, out: &mut After<T>) {
        if matches!(self.timer, Some((owner, _)) if owner == id) {
            self.timer = None;
            if !self.heap.is_empty() {
                self.wake_one(out);
            }
        }
    }

    /// Whether parked worker `id` must sleep until the earliest deadline, and which.
    pub(super) fn timer_duty(&mut self, id: u64) -> Option<Instant> {
        let earliest = self.heap.peek().map(|e| e.deadline);
        match (earliest, self.timer) {
            (None, Some((owner, _))) if owner == id => {
                self.timer = None;
                None
            }
            (None, _) => None,
            (Some(d), None) => {
                self.timer = Some((id, d));
                Some(d)
            }
            (Some(d), Some((owner, armed))) if owner == id || d < armed => {
                self.timer = Some((id, d));
                Some(d)
            }
            (Some(_), Some(_)) => None,
        }
    }
}

/// The future of `get`: an item and its priority, or `None` once shut down and empty.
///
/// Cancel safe: dropping it before it completes loses no item (a wake-up it received is
/// passed on to another waiting worker).
pub(crate) struct Get<'a, T> {
    engine: &'a Engine<T>,
    /// Set once parked.
    waiter: Option<u64>,
    /// The timer, while this worker owns the timer duty (kept for reuse).
    sleep: Option<Pin<Box<Sleep>>>,
    /// Consecutive timer firings without progress (guards against a busy loop).
    spins: u8,
    /// Whether this worker is counted in `State::spinners` (it spins, the lock released).
    spinning: bool,
    /// When this worker's spin ends, once it has begun.
    spin_until: Option<std::time::Instant>,
}

/// How long a worker that finds nothing spins before it parks. Parking costs the worker's
/// thread a context switch (when it has nothing else to run) and the one that wakes it a
/// system call, so when items come every few microseconds (a busy producer) a short spin
/// catches them instead.
const SPIN: Duration = Duration::from_micros(20);

/// How many times a spinning worker looks at the ready hint before it lets the other tasks of
/// its thread run (about a microsecond).
const SPIN_LOOKS: u32 = 32;

/// Looks at the ready hint [`SPIN_LOOKS`] times; whether an item may be ready (or the queue
/// is shutting down).
fn spin_for_ready<T>(engine: &Engine<T>) -> bool {
    for _ in 0..SPIN_LOOKS {
        if engine.signals.has_ready() || engine.shutting_down.load(Ordering::Acquire) {
            return true;
        }
        std::hint::spin_loop();
    }
    false
}

/// Lets every other task of this worker thread run before this one is polled again: tokio's
/// `yield_now` defers the wake-up until the thread has nothing else to do (its run queue
/// empty, nothing to steal). A spinning worker thus never holds up the task that would
/// produce its item (on a two-core machine, often the one queued behind it).
fn yield_to_others(cx: &mut Context<'_>) {
    let yielded = std::pin::pin!(tokio::task::yield_now());
    // The first poll registers the deferred wake-up and is pending; the future itself holds
    // nothing more.
    let _ = yielded.poll(cx);
}

/// Whether spinning can help here: on a multi-threaded tokio runtime (on a current-thread one
/// nothing else runs while this worker spins; elsewhere, park as before).
fn may_spin() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread)
}

impl<'a, T> Get<'a, T> {
    pub(super) fn new(engine: &'a Engine<T>) -> Self {
        Self {
            engine,
            waiter: None,
            sleep: None,
            spins: 0,
            spinning: false,
            spin_until: None,
        }
    }
}

impl<T> Future for Get<'_, T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    type Output = Option<(T, i32)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut spun = false;
        loop {
            let mut st = this.engine.lock_for_worker();
            if this.spinning {
                // Back from spinning: an item pushed meanwhile counted on this worker.
                st.spinners -= 1;
                this.spinning = false;
            }
            if this.waiter.is_none() && st.plain() {
                // The common case: an item is ready (or none, and the queue is shut down).
                if let Some((_, taken)) = st.pop_ready() {
                    return Poll::Ready(Some(taken));
                }
                if st.shutting_down {
                    return Poll::Ready(None);
                }
            }
            let mut after = After::default();
            if let Some(id) = this.waiter {
                st.unpark(id);
            }
            let taken = st.take(&mut after);
            if taken.is_some() || st.shutting_down {
                if let Some(id) = this.waiter.take() {
                    st.leave(id, &mut after);
                }
                drop(st);
                this.engine.finish(after);
                return Poll::Ready(taken);
            }
            if !spun && st.spin && may_spin() {
                // Nothing ready: spin a moment before parking. Each poll looks at the ready
                // hint for about a microsecond, then yields to the thread's other tasks and
                // stays counted as a spinner (items then wake nobody) until polled again.
                spun = true;
                let until = *this
                    .spin_until
                    .get_or_insert_with(|| std::time::Instant::now() + SPIN);
                st.spinners += 1;
                this.spinning = true;
                drop(st);
                this.engine.finish(after);
                if spin_for_ready(this.engine) {
                    continue;
                }
                if std::time::Instant::now() < until {
                    yield_to_others(cx);
                    return Poll::Pending;
                }
                // Nothing came: the queue is idle, park at once from now on (until an item
                // has to wake a parked worker again).
                this.spin_until = None;
                this.engine.lock().spin = false;
                continue;
            }
            this.spin_until = None;
            let id = match this.waiter {
                Some(id) => id,
                None => {
                    let id = st.next_waiter_id;
                    st.next_waiter_id += 1;
                    this.waiter = Some(id);
                    id
                }
            };
            st.waiters.push_back(Parked {
                id,
                waker: cx.waker().clone(),
            });
            let arm = st.timer_duty(id);
            drop(st);
            this.engine.finish(after);
            let Some(deadline) = arm else {
                return Poll::Pending;
            };
            let sleep = match &mut this.sleep {
                Some(sleep) => {
                    if sleep.deadline() != deadline {
                        sleep.as_mut().reset(deadline);
                    }
                    sleep
                }
                None => this.sleep.insert(Box::pin(sleep_until(deadline))),
            };
            if sleep.as_mut().poll(cx).is_pending() {
                this.spins = 0;
                return Poll::Pending;
            }
            // The deadline passed: loop to move the due items. Should the clock disagree
            // with the timer, yield instead of spinning.
            this.spins += 1;
            if this.spins > 2 {
                this.spins = 0;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
    }
}

impl<T> Drop for Get<'_, T> {
    fn drop(&mut self) {
        if !self.spinning && self.waiter.is_none() {
            return;
        }
        let mut after = After::<T>::default();
        {
            let mut st = self.engine.lock();
            if self.spinning {
                // Dropped while spinning: items made ready meanwhile counted on this worker
                // to take one and woke nobody; a parked worker takes it instead.
                st.spinners -= 1;
                if st.ready_count > st.spinners {
                    st.wake_one(&mut after);
                }
            }
            if let Some(id) = self.waiter.take() {
                if !st.unpark(id) && st.ready_count > 0 {
                    // Woken for an item it will not take: pass the wake-up on.
                    st.wake_one(&mut after);
                }
                st.leave(id, &mut after);
            }
        }
        // `Engine::finish` needs the queue's item bounds, which a `Drop` cannot add.
        for w in after.wake_first.into_iter().chain(after.wake_rest) {
            w.wake();
        }
    }
}

#[cfg(test)]
mod tests;
