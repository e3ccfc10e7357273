#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(ControllerSpec)]
#[controller(for = Deployment, watches(k8s_openapi::api::core::v1::ConfigMap))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
