//! Tests against a real Kubernetes API server (upstream apiextensions-apiserver on etcd),
//! started by `informer_testing::envtest::EnvTest`: its own lifecycle, and the differential
//! test of the in-process `TestApiServer` against it.
//!
//! They need the server's binaries (`INFORMER_TEST_ASSETS`, see `envtest`'s documentation;
//! `.ci/run` builds them) and skip, saying why, without them.

mod real_server {
    mod common;

    mod cel_rules;
    mod crd_differential;
    mod differential;
    mod lifecycle;
}
