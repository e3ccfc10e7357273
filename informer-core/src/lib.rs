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
