#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};

fn services(_: &Deployment) -> Vec<Service> {
    Vec::new()
}

fn config_maps(_: &Deployment) -> Vec<ConfigMap> {
    Vec::new()
}

// java-operator-sdk's names: generation-aware processing, a dependent's dependsOn and
// reconcilePrecondition.
#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    generation_aware = true,
    children(ConfigMap, from = config_maps),
    children(Service, from = services, depends_on = ConfigMap, reconcile_precondition = exposed),
)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
