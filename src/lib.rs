//! # informer
//!
//! client-go's informer machinery for Rust: a shared, indexed, always-current cache of
//! Kubernetes objects, event handlers, rate-limited workqueues and controllers, with every
//! stage behind a trait so any backend can be swapped.
//!
//! This crate is the facade: it re-exports [`informer_core`] (traits and in-memory building
//! blocks) and [`informer_runtime`] (what runs them), offers a [`prelude`], and with the
//! `testing` feature re-exports `informer_testing` as `informer::testing` (an in-process API
//! server to test controllers against).
//!
//! # What a cache costs: full objects, views, compact caches
//!
//! A k8s-openapi object holds every optional field inline: a cached Pod takes about 27 KB
//! decoded (37 KB with managed fields), where client-go's takes about 15 KB. Three ways to
//! cache, per informer:
//!
//! | cache | a Pod | a read | use it when |
//! | --- | --- | --- | --- |
//! | the full type, decoded (`ThreadSafeStore`, [`CachePolicy::Decoded`](runtime::factory::CachePolicy)) | ~27 KB | an `Arc` clone | you read much of each object, or hand it on whole |
//! | a [view] (`#[derive(View)]`: a struct of the fields you read) | ~1.2 KB | an `Arc` clone | you read a known handful of fields: smallest and fastest |
//! | the full type, compact ([`CompactStore`](runtime::compact_store::CompactStore), [`CachePolicy::Compact`](runtime::factory::CachePolicy)) | ~1.5 KB + hot objects | a decode (11–18 µs) unless hot | you need the full type but not its memory, and reads are rare next to API calls |
//!
//! Derived controllers and [`Manager::new`](runtime::Manager::new) cache compactly by
//! default (see [`derive`](mod@derive)); a factory of your own caches
//! decoded objects unless told otherwise
//! ([`InformerFactory::cache_policy`](runtime::InformerFactory::cache_policy)).
//!
//! ```
//! use informer::prelude::*;
//!
//! let queue: WorkQueue<ObjectKey> = WorkQueue::new();
//! queue.add(ObjectKey::new(Some("default"), "web"));
//! assert_eq!(queue.len(), 1);
//! ```

pub use informer_core as core;
pub use informer_runtime as runtime;

/// Test a controller without a cluster (feature `testing`): the in-process API server
/// [`TestApiServer`](testing::TestApiServer), its [`Faults`](testing::Faults), the chaos
/// harness [`Chaos`](testing::chaos::Chaos) (your controller under seeded fault schedules,
/// with invariants, convergence, shrinking and a replayable seed), the memory
/// [`MemoryListerWatcher`](testing::MemoryListerWatcher),
/// [`EnvTest`](testing::EnvTest), a real API server started for a test, and
/// [`eventually`](testing::eventually), which waits until what the controller should do is
/// done. This is the `informer-testing` crate.
///
/// ```toml
/// [dev-dependencies]
/// informer = { version = "0.1", features = ["testing"] }
/// ```
#[cfg(feature = "testing")]
pub use informer_testing as testing;

// Not inlined: the items' pages are informer_core's, where their links resolve (rustdoc
// drops links of docs inlined from another crate whose paths are relative to it).
#[doc(no_inline)]
pub use informer_core::*;

pub use informer_derive::{Controller, ControllerSpec, View, indexer};
#[doc(no_inline)]
pub use informer_runtime::view;

pub mod client_go;
pub mod derive;

/// The names a controller author needs most, for `use informer::prelude::*;`.
pub mod prelude {
    #[doc(no_inline)]
    pub use informer_runtime::{
        Action, CancellationToken, Controller, InformerFactory, InformerParams, KeyReconciler,
        KubeListerWatcher, Lister, Manager, NamespacedLister, ReconcileError, SharedIndexInformer,
        reconciler_fn,
    };

    #[doc(no_inline)]
    pub use informer_derive::{ControllerSpec, View, indexer};
    // The derive's old name (deprecated: using it warns, naming the new one).
    #[doc(no_inline)]
    pub use informer_derive::Controller;
    #[doc(no_inline)]
    #[allow(deprecated)]
    pub use informer_runtime::Reconciler;
    #[doc(no_inline)]
    pub use informer_runtime::conditions::{
        CONDITION_FALSE, CONDITION_TRUE, CONDITION_UNKNOWN, UNSET_TIME, find_status_condition,
        is_status_condition_false, is_status_condition_present_and_equal, is_status_condition_true,
        remove_status_condition, set_status_condition,
    };
    #[doc(no_inline)]
    pub use informer_runtime::controller::{
        BuildError, ChildrenReport, Context, ControllerBuilder, ControllerSpec, Filter,
        FinalizerEvent, Reconcile, WatchOptions, controller_owner, finalizer, is_controlled_by,
        set_controller_reference,
    };
    #[doc(no_inline)]
    pub use informer_runtime::events::{Event, EventRecorder, EventType};
    #[doc(no_inline)]
    pub use informer_runtime::factory::InformerHandle;
    #[doc(no_inline)]
    pub use informer_runtime::leader::LeaderElectionConfig;
    #[doc(no_inline)]
    pub use informer_runtime::lister::{ByControllerUid, Index};
    #[doc(no_inline)]
    pub use informer_runtime::manager::ManagerError;
    #[doc(no_inline)]
    pub use informer_runtime::manager::RunController;
    #[doc(no_inline)]
    pub use informer_runtime::manager::Task;
    #[doc(no_inline)]
    pub use informer_runtime::retry::{RetryBackoff, retry_on_conflict};
    #[doc(no_inline)]
    pub use informer_runtime::view::View;
    #[doc(no_inline)]
    pub use std::sync::Arc;

    #[doc(no_inline)]
    pub use informer_core::{
        Deleted, DeltaFifo, EnqueueKeys, Fifo, FilteringHandler, Handler, HandlerFns, Indexer,
        ListWatchError, ListerWatcher, Notification, ObjectKey, PriorityQueue, Queue, QueueWrapper,
        RateLimiter, RealFifo, Store, StoreError, StoreOp, StoreWrapper, ThreadSafeStore,
        WorkQueue,
    };
}

/// The README's code, compiled as doctests so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
