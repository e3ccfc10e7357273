#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use kube::core::PartialObjectMeta;

fn status(_: &PartialObjectMeta<Deployment>) -> DeploymentStatus {
    DeploymentStatus::default()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, metadata, status = status)]
struct Deployments;

noop_reconcile!(Deployments, PartialObjectMeta<Deployment>);

fn main() {}
