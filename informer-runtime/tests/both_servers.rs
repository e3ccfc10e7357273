//! The runtime's scenarios against both API servers from one test body: the in-process fake
//! (`informer_testing::TestApiServer`) and a real one (upstream apiextensions-apiserver on
//! etcd, started by `informer_testing::envtest::EnvTest`), on a custom resource.
//!
//! Each scenario is an `async fn(&Server)`; `on_both_servers!` makes it two tests, `fake` and
//! `real`. The real ones need the server's binaries (`INFORMER_TEST_ASSETS`; `.ci/run` builds
//! them) and skip, saying why, without them.

mod both_servers {
    mod server;

    mod chaos;
    mod finalizer;
    mod informer;
    mod lister_watcher;
    mod outage;
    mod recorder;
}
