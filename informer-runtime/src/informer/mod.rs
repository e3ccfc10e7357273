//! The shared index informer: a reflector filling a cache, and a processor notifying
//! handlers, each through its own buffer and task.
//!
//! ```text
//! ListerWatcher --> Reflector --Delta--> Fifo --pop batch--> apply_ordered_deltas --> Indexer (cache)
//!                                                                 \--Notification--> processor
//! processor --> [buffer + task] --> handler 1
//!           --> [buffer + task] --> handler 2 ...
//! ```
//!
//! - [`SharedIndexInformer`]: build ([`InformerBuilder`]), [`run`](SharedIndexInformer::run)
//!   with a cancellation token, add handlers, read the cache.
//! - [`HandlerRegistration`]: a handler's own `has_synced`, counters and removal.
//! - [`wait_for_cache_sync`], [`wait_for_named_cache_sync`]: waiting for several caches
//!   (informers, handler registrations) until a cancellation, as client-go's
//!   `WaitForCacheSync` and `WaitForNamedCacheSync`.
//! - [`HandlerOptions`], [`BufferPolicy`], [`Overflow`]: resync period and buffering of one
//!   handler.
//! - [`transform`]: functions applied to objects before they are cached
//!   ([`strip_managed_fields`](transform::strip_managed_fields)).

mod handler_options;
mod listener;
mod processor;
mod registration;
mod shared;
mod store_version;
mod sync;
pub mod transform;

pub use handler_options::{
    BufferPolicy, HandlerOptions, HandlerStats, MIN_RESYNC_PERIOD, Overflow,
};
pub use registration::HandlerRegistration;
pub use shared::{FifoKind, InformerBuilder, SharedIndexInformer};
pub use sync::{wait_for_cache_sync, wait_for_named_cache_sync};
pub use transform::Transform;

pub(crate) use store_version::{Reached, StoreVersion};

/// The token that stops [`SharedIndexInformer::run`] (re-exported from `tokio-util`).
pub use tokio_util::sync::CancellationToken;

/// The informer could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// [`SharedIndexInformer::run`] was called a second time. An informer runs once; build a
    /// new one (or ask the [`InformerFactory`](crate::factory::InformerFactory) again after
    /// the old one was released) to start over.
    #[error("this informer was already started; an informer runs only once")]
    AlreadyStarted,
    /// The reflector panicked (most likely in a transform, which must not panic), so the
    /// informer stopped. Fix the transform; the cache kept what it had.
    #[error("the informer stopped because its reflector panicked: {0}")]
    ReflectorPanicked(String),
    /// Applying a change to the cache panicked (a store of your own, or a type whose
    /// `Serialize` and `Deserialize` do not round-trip in a compact cache), so the informer
    /// stopped: its cache keeps what it had and no longer changes.
    #[error("the informer stopped because applying a change to its cache panicked: {0}")]
    CachePanicked(String),
    /// [`SharedIndexInformer::set_transform`] or
    /// [`set_watch_error_handler`](SharedIndexInformer::set_watch_error_handler) was called
    /// after the informer started (client-go's "informer has already started"), or a second
    /// time: give it before [`run`](SharedIndexInformer::run) (or the factory's `start`),
    /// once.
    #[error("cannot set the informer's {0}: {1}")]
    NotSettable(&'static str, &'static str),
}

/// Where an informer is in its life (published on a watch channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not run yet, or running and not synced yet.
    Listing,
    /// The first list is in the cache.
    Synced,
    /// `run` returned (or its future was dropped).
    Stopped,
}

#[cfg(test)]
mod tests;
