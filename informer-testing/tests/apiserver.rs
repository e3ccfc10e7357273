//! Integration tests for the in-process Kubernetes API server
//! (`informer_testing`), driven through real clients: `kube::Client`,
//! `kube::runtime::watcher` and, where installed, `kubectl`.

mod apiserver {
    mod common;

    mod admission;
    mod apply;
    mod autoscaling;
    mod bounds;
    mod builtin_types;
    mod cel_rules;
    mod certificates;
    mod crd_differential;
    mod crds;
    mod crud;
    mod default_classes;
    mod discovery;
    mod encoding;
    mod events;
    mod evictions;
    mod faults;
    mod fuzz;
    mod gc;
    mod kubectl;
    mod kubectl_test_cmd;
    mod list;
    mod namespaces;
    mod normalization;
    mod pod_security;
    mod priority;
    mod python_e2e;
    mod scale;
    mod security;
    mod validation;
    mod watch;
}
