#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

// A controller's finalizer needs a domain, and must be a name the API server takes.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, finalizer = "cleanup")]
struct NoDomain;
noop_reconcile!(NoDomain, ConfigMap);

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, finalizer = "Example.com/cleanup")]
struct UpperCaseDomain;
noop_reconcile!(UpperCaseDomain, ConfigMap);

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, finalizer = "example.com/clean up")]
struct SpaceInName;
noop_reconcile!(SpaceInName, ConfigMap);

fn main() {}
