#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

// Returns a bool, where a validation returns `Result<(), ReconcileError>`.
fn small_enough(deployment: &Deployment) -> bool {
    deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) <= 10
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, validate = small_enough)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
