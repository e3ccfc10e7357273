//! Integration tests of `informer-runtime` (reflector, informers, factory, controllers,
//! manager, leader election, sharding) through a real `kube::Client` against the in-process
//! API server (`informer_testing::TestApiServer`).

mod integration {
    mod chaos;
    mod children;
    mod controller;
    mod events;
    mod factory;
    mod finalizer;
    mod informer;
    mod leader;
    mod lister_watcher;
    mod manager;
    mod manager_parity;
    mod read_your_writes;
    mod recovery;
    mod reflector;
    mod retry;
    mod shard;
    mod support;
    mod visible_errors;
}
