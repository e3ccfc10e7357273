#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;

fn config_of(_: &Deployment) -> Option<ConfigMap> {
    None
}

// controller-runtime's `Owns(&ConfigMap{})` beside declared children of that kind.
#[derive(ControllerSpec)]
#[controller(for = Deployment, children(ConfigMap, from = config_of), owns(ConfigMap))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
