//! The ready items, in the order they are handed out: one intrusive FIFO [`List`] per
//! priority, chained through the slots' `prev`/`next` links, highest priority first. A
//! [`WorkQueue`](crate::queue::WorkQueue) only ever has one.

use super::slots::{NIL, Slot};

/// At most this many empty priority lists are kept around for reuse.
const MAX_IDLE_BUCKETS: usize = 8;

/// An intrusive doubly linked list through the slots' `prev`/`next`.
#[derive(Clone, Copy, Debug)]
pub(super) struct List {
    pub(super) head: u32,
    tail: u32,
}

impl List {
    pub(super) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    fn is_empty(&self) -> bool {
        self.head == NIL
    }

    pub(super) fn push_back<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        slots[id as usize].prev = self.tail;
        slots[id as usize].next = NIL;
        if self.tail == NIL {
            self.head = id;
        } else {
            slots[self.tail as usize].next = id;
        }
        self.tail = id;
    }

    pub(super) fn unlink<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let (prev, next) = (slots[id as usize].prev, slots[id as usize].next);
        if prev == NIL {
            self.head = next;
        } else {
            slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slots[next as usize].prev = prev;
        }
        slots[id as usize].prev = NIL;
        slots[id as usize].next = NIL;
    }

    pub(super) fn pop_front<T>(&mut self, slots: &mut [Slot<T>]) -> Option<u32> {
        let id = self.head;
        if id == NIL {
            return None;
        }
        self.unlink(slots, id);
        Some(id)
    }
}

/// One FIFO list per priority, highest priority first.
#[derive(Debug, Default)]
pub(super) struct ReadyLists {
    /// Sorted by priority, descending. Usually one or two entries.
    buckets: Vec<(i32, List)>,
}

impl ReadyLists {
    #[inline]
    fn bucket(&mut self, priority: i32) -> &mut List {
        // Fast path: the highest priority (for a `WorkQueue`, the only one).
        if self.buckets.first().is_some_and(|&(p, _)| p == priority) {
            return &mut self.buckets[0].1;
        }
        self.bucket_slow(priority)
    }

    #[inline(never)]
    fn bucket_slow(&mut self, priority: i32) -> &mut List {
        let at = self
            .buckets
            .iter()
            .position(|&(p, _)| p <= priority)
            .unwrap_or(self.buckets.len());
        if self.buckets.get(at).is_none_or(|&(p, _)| p != priority) {
            self.buckets.insert(at, (priority, List::EMPTY));
        }
        &mut self.buckets[at].1
    }

    pub(super) fn push_back<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let priority = slots[id as usize].priority;
        self.bucket(priority).push_back(slots, id);
    }

    pub(super) fn unlink<T>(&mut self, slots: &mut [Slot<T>], id: u32) {
        let priority = slots[id as usize].priority;
        self.bucket(priority).unlink(slots, id);
    }

    /// Pops the first ready slot, and says which slot of its list is first now (`NIL` if
    /// none), for the caller to prefetch.
    #[inline]
    pub(super) fn pop_front<T>(&mut self, slots: &mut [Slot<T>]) -> Option<(u32, u32)> {
        // Fast path: the highest priority has an item (a `WorkQueue`'s one list).
        match self.buckets.first_mut() {
            Some((_, list)) if !list.is_empty() => {
                let id = list.head;
                let next = slots[id as usize].next;
                list.head = next;
                if next == NIL {
                    list.tail = NIL;
                } else {
                    slots[next as usize].prev = NIL;
                }
                slots[id as usize].next = NIL;
                Some((id, next))
            }
            _ => self.pop_front_slow(slots).map(|id| (id, NIL)),
        }
    }

    #[inline(never)]
    fn pop_front_slow<T>(&mut self, slots: &mut [Slot<T>]) -> Option<u32> {
        let id = self
            .buckets
            .iter_mut()
            .find(|(_, list)| !list.is_empty())
            .and_then(|(_, list)| list.pop_front(slots));
        if self.buckets.len() > MAX_IDLE_BUCKETS {
            self.buckets.retain(|(_, list)| !list.is_empty());
        }
        id
    }
}
