//! The checks of `tests/crd_rules/cases.rs` on the real server (the in-process server runs
//! them in `tests/apiserver/crd_differential.rs`).

#[path = "../crd_rules/cases.rs"]
#[macro_use]
mod cases;

use informer_testing::envtest::EnvTest;

macro_rules! on_the_real_server {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let Some(real) = EnvTest::start_or_skip().await else { return };
            cases::$name(&real.client()).await;
        }
    )*};
}

every_case!(on_the_real_server);
