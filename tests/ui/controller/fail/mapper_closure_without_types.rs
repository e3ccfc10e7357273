#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;

// A closure whose argument type is left to inference.
#[derive(ControllerSpec)]
#[controller(for = Deployment, watches(ConfigMap, mapper = |_| None))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
