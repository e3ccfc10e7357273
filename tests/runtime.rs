//! Integration tests of `informer-runtime` (reflector, informers, factory) through a real
//! `kube::Client` against the in-process API server (`informer_runtime::testing`).

mod runtime {
    mod chaos;
    mod controller;
    mod factory;
    mod informer;
    mod leader;
    mod lister_watcher;
    mod manager;
    mod reflector;
    mod shard;
}
