//! CRD and custom resource rules a differential run against the real API server found the
//! in-process server breaking; the same checks run on the real server in
//! `tests/real_server/crd_differential.rs`.

#[path = "../crd_rules/cases.rs"]
#[macro_use]
mod cases;

use super::common::server;

macro_rules! on_the_test_server {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            cases::$name(&server().await.client()).await;
        }
    )*};
}

every_case!(on_the_test_server);
