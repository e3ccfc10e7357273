//! The chaos harness against controllers written with kube-rs alone: the harness treats a
//! controller as a black box behind a `kube::Client`, so any controller can be tested.

#[path = "chaos/harness.rs"]
mod harness;
#[path = "chaos/mirror.rs"]
mod mirror;
