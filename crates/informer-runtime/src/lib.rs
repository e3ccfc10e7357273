//! What runs the building blocks of `informer-core`: reflector, shared informers,
//! controllers, and (behind the `testing` feature) an in-process Kubernetes API server.
//!
//! The modules in data-flow order:
//!
//! | module | stage |
//! | --- | --- |
//! | [`lister_watcher`] | source: `kube::Api` ([`KubeListerWatcher`]) or memory |
//! | [`reflector`] | list + watch into a FIFO, with relists and backoff |
//! | [`informer`] | pops the FIFO into the cache, one task per handler |
//! | [`store`] | an extra cache backend: [`store::CompactStore`] |
//! | [`factory`] | one shared informer per type, namespace and selectors |
//! | [`lister`] | typed reads of a cache |
//! | [`controller`] | handlers → workqueue → workers → [`Reconciler`] |
//! | [`manager`] | many controllers, `/metrics`, `/healthz`, `/readyz`, signals |
//! | [`metrics`] | Prometheus metrics with client-go's names |
//! | [`leader`], [`shard`] | scaling past one replica with Leases |
//! | `testing` | in-process API server with fault injection (feature `testing`) |

pub mod controller;
pub mod factory;
pub mod informer;
pub mod leader;
pub mod lister;
pub mod lister_watcher;
pub mod manager;
pub mod metrics;
pub mod reflector;
pub mod shard;
pub mod store;

#[cfg(feature = "testing")]
pub mod testing;

pub use controller::{Action, Controller, ReconcileError, Reconciler, reconciler_fn};
pub use factory::{InformerFactory, InformerParams};
pub use informer::{CancellationToken, SharedIndexInformer};
pub use lister::{Lister, NamespacedLister};
pub use lister_watcher::{KubeListerWatcher, MemoryListerWatcher, MetadataListerWatcher};
pub use manager::Manager;
pub use reflector::{Reflector, ReflectorConfig, ReflectorError, ReflectorStats};
