//! What caches hold: `#[derive(View)]` views cached by informers and derived controllers,
//! and the compact caches derived controllers use by default, against the in-process API
//! server through a real `kube::Client` (the ui cases of the view derive's errors are
//! `tests/ui.rs`).

#[path = "view/caches.rs"]
mod caches;
#[path = "view/running.rs"]
mod running;
