//! What caches hold: `#[derive(View)]` views cached by informers and derived controllers,
//! and the compact caches derived controllers use by default, against the in-process API
//! server through a real `kube::Client`; and the trybuild ui cases of every error of the
//! view derive (`tests/ui/view/`).

#[path = "view/caches.rs"]
mod caches;
#[path = "view/running.rs"]
mod running;

/// Every `tests/ui/view/pass/*.rs` compiles and every `tests/ui/view/fail/*.rs` fails with
/// exactly its `.stderr`.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/view/pass/*.rs");
    t.compile_fail("tests/ui/view/fail/*.rs");
}
