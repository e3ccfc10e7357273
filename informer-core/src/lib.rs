//! The building blocks of an informer, with client-go's semantics: the traits every stage
//! implements and fast in-memory default implementations.
//!
//! Data flows through these pieces in this order (the runtime crate drives them):
//!
//! ```text
//! ListerWatcher<K> --list/watch--> reflector --Delta--> Fifo<K> --pop--> Store<K>/Indexer<K>
//!                                                                   \--Notification--> Handler<K>
//! Handler --ObjectKey--> Queue<ObjectKey> --get/done--> workers
//! ```
//!
//! | stage | trait | default implementation |
//! | --- | --- | --- |
//! | source | [`ListerWatcher`] | (in `informer-runtime`, over `kube::Api`) |
//! | reflector → cache | [`Fifo`] | [`RealFifo`] (in order), [`DeltaFifo`] (per key) |
//! | cache | [`Store`], [`Indexer`] | [`ThreadSafeStore`] |
//! | other stores (client-go's `ExpirationCache`, `UndeltaStore`) | [`Store`] | [`ExpirationCache`] (entries expire under a policy), [`UndeltaStore`] (the whole state pushed after each write) |
//! | change → key | [`Handler`] | closures, [`HandlerFns`], [`FilteringHandler`] (client-go's `FilteringResourceEventHandler`) |
//! | keys → workers | [`Queue`], [`RateLimiter`] | [`WorkQueue`], [`PriorityQueue`] |
//! | queues of objects (client-go's `FIFO`, `Heap`) | [`Fifo`] (`ObjectFifo` only) | [`ObjectFifo`] (latest object per key), [`Heap`] (by priority) |
//!
//! Every trait is object safe, so a custom backend can be passed as `Arc<dyn Trait<..>>`.
//! This crate spawns no task and opens no connection.
pub mod apply;
pub mod conformance;
pub mod error;
pub mod fifo;
pub mod handler;
pub mod key;
pub mod lister_watcher;
pub mod quantity;
pub mod queue;
pub mod resource_version;
pub mod selector;
pub mod store;

/// The attribute that implements the traits with `async` methods ([`Queue`],
/// [`ListerWatcher`]): put `#[async_trait]` on the `impl` block. Re-exported so that an
/// implementation needs no dependency of its own on `async-trait`.
///
/// ```
/// use std::time::Duration;
/// use informer_core::{Queue, WorkQueue, async_trait};
///
/// /// A queue that hands out what a `WorkQueue` does, counting the items it hands out.
/// struct Counting(WorkQueue<String>, std::sync::atomic::AtomicUsize);
///
/// #[async_trait]
/// impl Queue<String> for Counting {
///     fn add(&self, item: String) { self.0.add(item) }
///     async fn get(&self) -> Option<String> {
///         self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
///         self.0.get().await
///     }
///     fn done(&self, item: &String) { self.0.done(item) }
///     fn len(&self) -> usize { self.0.len() }
///     fn add_after(&self, item: String, delay: Duration) { self.0.add_after(item, delay) }
///     fn add_rate_limited(&self, item: String) { self.0.add_rate_limited(item) }
///     fn forget(&self, item: &String) { self.0.forget(item) }
///     fn num_requeues(&self, item: &String) -> u32 { self.0.num_requeues(item) }
///     fn shut_down(&self) { self.0.shut_down() }
///     async fn shut_down_with_drain(&self, drain_queued: bool) {
///         self.0.shut_down_with_drain(drain_queued).await
///     }
///     fn is_shutting_down(&self) -> bool { self.0.is_shutting_down() }
/// }
/// ```
pub use async_trait::async_trait;
pub use error::{FifoError, IndexError, KeyError, StoreError};
pub use fifo::{Delta, DeltaFifo, Fifo, Heap, ObjectFifo, RealFifo};
pub use handler::{Deleted, EnqueueKeys, FilteringHandler, Handler, HandlerFns, Notification};
pub use key::{KeyFn, ObjectKey, resource_key};
pub use lister_watcher::{ListWatchError, ListerWatcher, WatchStream};
pub use queue::{PriorityQueue, Queue, QueueWrapper, RateLimiter, WorkQueue};
pub use resource_version::ResourceVersion;
pub use selector::{SelectorParseError, parse_label_selector};
pub use store::{
    ExpirationCache, ExpirationPolicy, IndexFn, Indexer, Indexers, NAMESPACE_INDEX, Store, StoreOp,
    StoreWrapper, ThreadSafeStore, TtlPolicy, UndeltaStore, index_fn,
};
