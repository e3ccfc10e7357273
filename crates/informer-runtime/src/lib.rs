//! Reflector, shared informers, controllers and (behind the `testing` feature) an in-process Kubernetes API server for tests.

#[cfg(feature = "testing")]
pub mod testing;

pub mod lister_watcher;
pub mod factory;
pub mod informer;
pub mod lister;
pub mod reflector;
pub mod store;
pub mod leader;
pub mod shard;
pub mod controller;
pub mod manager;
pub mod metrics;

pub use lister_watcher::{KubeListerWatcher, MemoryListerWatcher, MetadataListerWatcher};
pub use reflector::{Reflector, ReflectorConfig, ReflectorError, ReflectorStats};
