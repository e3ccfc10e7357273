//! Test a Kubernetes controller without a cluster.
//!
//! | item | what it is |
//! | --- | --- |
//! | [`TestApiServer`] | an in-process Kubernetes API server on `127.0.0.1`, spoken to through a real `kube::Client` (or kubectl), with [`Faults`] to make it misbehave |
//! | [`EnvTest`] | a real Kubernetes API server (upstream apiextensions-apiserver on etcd) started as child processes, like controller-runtime's envtest; tests skip without its binaries |
//! | [`chaos::Chaos`] | a controller under seeded fault schedules (crashes after writes, stale and delayed watches, unobserved states, failing requests, lost leases), with invariants at every committed state, a convergence check, shrinking and a replayable seed |
//! | [`MemoryListerWatcher`] | an API server's list and watch semantics over memory, for a reflector or informer under test (no HTTP) |
//!
//! This crate is a dev-dependency: it is what the library's own tests run against, and what a
//! controller's tests use. With the facade, enable its `testing` feature and use
//! `informer::testing`.

pub mod apiserver;
pub mod chaos;
pub mod envtest;
mod memory;

pub use apiserver::{
    ApiError, CustomResourceSpec, Error, FailureCode, Faults, FieldError, FieldErrorKind,
    RequestMatch, RestartMode, ScaleSubresource, StatusReason, TestApiServer, TestApiServerBuilder,
    Verb,
};
pub use envtest::{EnvTest, EnvTestBuilder};
pub use informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION;
pub use memory::{MemoryListerWatcher, RecordedRequest, StreamingSupport};
