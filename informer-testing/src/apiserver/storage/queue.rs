//! The bounded queue between the store and one consumer (a watch stream or an internal
//! subscriber).
//!
//! The store pushes without waiting; the consumer pops asynchronously. A consumer that falls
//! too far behind (more items, or more bytes, waiting than its limits allow) is cut off, as
//! kube-apiserver's watch cache terminates a watcher whose buffer stays full: its queue is
//! emptied (the memory is returned at once) and the consumer sees the end of the stream. A
//! watch client then watches again from the last resource version it saw.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tokio::sync::Notify;

/// What an item costs in a queue's byte budget.
pub(crate) trait Weight {
    /// Roughly the bytes this item keeps alive or will send.
    fn bytes(&self) -> usize;
}

/// How far a consumer may fall behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backlog {
    /// Items waiting.
    pub events: usize,
    /// Bytes waiting (by [`Weight::bytes`]).
    pub bytes: usize,
}

/// Why a queue stopped accepting items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Closed by the server: the consumer gets what is queued, then the end.
    Ended,
    /// The consumer fell too far behind: what was queued is dropped.
    Overflowed,
}

struct State<T> {
    items: VecDeque<T>,
    bytes: usize,
    closed: Option<Closed>,
}

/// A single-consumer queue with a [`Backlog`] bound.
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    limit: Backlog,
}

/// A drained queue keeps at most this much capacity, so a burst's memory is returned.
const KEPT_CAPACITY: usize = 64;

impl<T: Weight> Queue<T> {
    pub(crate) fn new(limit: Backlog) -> Self {
        Self {
            state: Mutex::new(State {
                items: VecDeque::new(),
                bytes: 0,
                closed: None,
            }),
            notify: Notify::new(),
            limit,
        }
    }

    /// A queue that holds `items` and is already closed (it drains, then ends).
    pub(crate) fn finished(items: impl IntoIterator<Item = T>) -> Self {
        let queue = Self::new(Backlog {
            events: usize::MAX,
            bytes: usize::MAX,
        });
        for item in items {
            queue.push_unbounded(item);
        }
        queue.close();
        queue
    }

    /// Queues an item within the backlog limit. An item always fits an empty queue; one that
    /// would take the queue past its limit closes it as [`Closed::Overflowed`] instead.
    /// Returns why the queue is closed, if it is.
    pub(crate) fn push(&self, item: T) -> Result<(), Closed> {
        let mut state = self.state.lock();
        if let Some(closed) = state.closed {
            return Err(closed);
        }
        let bytes = item.bytes();
        if !state.items.is_empty()
            && (state.items.len() >= self.limit.events
                || state.bytes.saturating_add(bytes) > self.limit.bytes)
        {
            state.closed = Some(Closed::Overflowed);
            state.items = VecDeque::new();
            state.bytes = 0;
            drop(state);
            self.notify.notify_one();
            return Err(Closed::Overflowed);
        }
        state.items.push_back(item);
        state.bytes += bytes;
        drop(state);
        self.notify.notify_one();
        Ok(())
    }

    /// Queues an item whatever the backlog (a history replay, bounded by the history).
    pub(crate) fn push_unbounded(&self, item: T) {
        let mut state = self.state.lock();
        if state.closed.is_none() {
            state.bytes += item.bytes();
            state.items.push_back(item);
        }
        drop(state);
        self.notify.notify_one();
    }

    /// Stops accepting items; the consumer drains what is queued, then sees the end.
    pub(crate) fn close(&self) {
        let mut state = self.state.lock();
        if state.closed.is_none() {
            state.closed = Some(Closed::Ended);
        }
        drop(state);
        self.notify.notify_one();
    }

    /// The next item without waiting.
    pub(crate) fn try_pop(&self) -> Option<T> {
        let mut state = self.state.lock();
        let item = state.items.pop_front()?;
        state.bytes -= item.bytes();
        if state.items.is_empty() && state.items.capacity() > KEPT_CAPACITY {
            state.items.shrink_to(KEPT_CAPACITY);
        }
        Some(item)
    }

    /// The next item, waiting for one; `None` once the queue is closed and drained.
    /// Cancel-safe: an item is only taken when it is returned.
    pub(crate) async fn pop(&self) -> Option<T> {
        loop {
            if let Some(item) = self.try_pop() {
                return Some(item);
            }
            if self.state.lock().closed.is_some() {
                return None;
            }
            // A push after the check above leaves a permit, so this cannot miss it.
            self.notify.notified().await;
        }
    }

    /// Whether nothing is waiting and the queue is open.
    pub(crate) fn is_idle(&self) -> bool {
        let state = self.state.lock();
        state.items.is_empty() && state.closed.is_none()
    }

    /// Why the queue is closed, if it is.
    pub(crate) fn closed(&self) -> Option<Closed> {
        self.state.lock().closed
    }

    /// (items, bytes) waiting.
    pub(crate) fn backlog(&self) -> (usize, usize) {
        let state = self.state.lock();
        (state.items.len(), state.bytes)
    }
}

#[cfg(test)]
mod tests;
