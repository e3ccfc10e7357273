#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

// Serializes (as a string), but a Deployment's status is a `DeploymentStatus`.
fn status(_: &Deployment) -> String {
    "all good".into()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, status = status)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
