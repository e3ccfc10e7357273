//! How a handler is registered ([`HandlerOptions`]: resync period, [`BufferPolicy`] and
//! [`Overflow`], name) and what it reports ([`HandlerStats`]).

use std::num::NonZeroUsize;
use std::time::Duration;

/// The shortest resync period a handler can ask for (client-go's `minimumResyncPeriod`).
pub const MIN_RESYNC_PERIOD: Duration = Duration::from_secs(1);

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

    /// The capacity, if the policy is bounded with `overflow`.
    pub(super) fn limit(&self, overflow: Overflow) -> Option<usize> {
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
