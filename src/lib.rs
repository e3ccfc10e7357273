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
/// [`MemoryListerWatcher`](testing::MemoryListerWatcher), and
/// [`EnvTest`](testing::EnvTest), a real API server started for a test. This is the
/// `informer-testing` crate.
///
/// ```toml
/// [dev-dependencies]
/// informer = { version = "0.1", features = ["testing"] }
/// ```
#[cfg(feature = "testing")]
pub use informer_testing as testing;

pub use informer_core::*;

pub use informer_derive::{Controller, ControllerSpec, indexer};

pub mod derive;

/// The names a controller author needs most, for `use informer::prelude::*;`.
pub mod prelude {
    pub use informer_runtime::{
        Action, CancellationToken, Controller, InformerFactory, InformerParams, KeyReconciler,
        KubeListerWatcher, Lister, Manager, NamespacedLister, ReconcileError, SharedIndexInformer,
        reconciler_fn,
    };

    /// `#[derive(ControllerSpec)]`, and its old name `Controller` (deprecated: it warns).
    pub use informer_derive::{Controller, ControllerSpec, indexer};
    #[allow(deprecated)]
    pub use informer_runtime::Reconciler;
    pub use informer_runtime::controller::{Context, ControllerSpec, Reconcile, WatchOptions};
    pub use informer_runtime::lister::{ByControllerUid, Index};
    pub use informer_runtime::manager::RunController;
    pub use std::sync::Arc;

    pub use informer_core::{
        Deleted, DeltaFifo, EnqueueKeys, Fifo, Handler, HandlerFns, Indexer, ListWatchError,
        ListerWatcher, Notification, ObjectKey, PriorityQueue, Queue, QueueWrapper, RateLimiter,
        RealFifo, Store, StoreError, StoreOp, StoreWrapper, ThreadSafeStore, WorkQueue,
    };
}

/// The README's code, compiled as doctests so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
