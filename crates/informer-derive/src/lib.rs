//! Derive macros for `informer`: `#[derive(Controller)]` and `#[indexer]`.
//!
//! The macros generate calls to the public controller builder of `informer-runtime`; they
//! arrive together with that builder. Until then this crate exports nothing.
