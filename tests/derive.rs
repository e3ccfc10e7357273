//! `#[derive(ControllerSpec)]` and `#[indexer]`: generated controllers running against the
//! in-process API server, and trybuild ui tests of every macro error (`tests/ui/`).

#[path = "derive/both_servers.rs"]
mod both_servers;
#[path = "derive/children.rs"]
mod children;
#[path = "derive/filters.rs"]
mod filters;
#[path = "derive/generated.rs"]
mod generated;
#[path = "derive/running.rs"]
mod running;
#[path = "derive/servers.rs"]
mod servers;
#[path = "derive/status.rs"]
mod status;

/// Every `tests/ui/*/pass/*.rs` compiles and every `tests/ui/*/fail/*.rs` fails with
/// exactly its `.stderr` (checked on the pinned toolchain of `rust-toolchain.toml`).
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/controller/pass/*.rs");
    t.compile_fail("tests/ui/controller/fail/*.rs");
    t.pass("tests/ui/indexer/pass/*.rs");
    t.compile_fail("tests/ui/indexer/fail/*.rs");
    t.compile_fail("tests/ui/factory/fail/*.rs");
}
