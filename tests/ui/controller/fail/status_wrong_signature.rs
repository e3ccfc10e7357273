#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};

// Takes the parent by value.
fn status(deployment: Deployment) -> DeploymentStatus {
    let _ = deployment;
    DeploymentStatus::default()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, status = status)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
