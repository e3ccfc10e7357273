//! Conformance checks for a [`Store`](crate::Store)/[`Indexer`](crate::Indexer) or a
//! [`Queue`](crate::Queue) of your own: call them from a test to learn whether your backend
//! keeps the guarantees the library relies on, before a controller finds out.
//!
//! - [`check_store`] runs a seeded, random sequence of every write a store takes (`add`,
//!   `update`, `update_with_key`, `delete`, `apply` batches, `replace`, objects without a
//!   key, indexes registered early and late, a name registered twice) against your store and
//!   against [`ThreadSafeStore`](crate::ThreadSafeStore), and compares after each step
//!   everything a reader sees: the write's result, `get`, `list`, `list_keys`, `len`, the
//!   resource version, and every index read. The first difference panics with the step, the
//!   write, what was expected and what your store gave.
//! - [`check_queue`] checks, one rule at a time, the guarantees of [`Queue`](crate::Queue)
//!   and what a controller expects of a queue beyond them, and panics naming the first rule
//!   broken.
//!
//! The library's own backends pass both (they are tested with them).
//!
//! ```
//! use informer_core::ThreadSafeStore;
//! use informer_core::conformance::check_store;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! // In a test of your own, your store here:
//! check_store(|| ThreadSafeStore::<ConfigMap>::new());
//! ```

mod queue;
mod store;

pub use queue::check_queue;
pub use store::{check_store, check_store_with_seed};
