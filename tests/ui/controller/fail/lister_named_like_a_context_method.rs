#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;

#[derive(ControllerSpec)]
#[controller(for = Deployment, owns(Secret, lister = client))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
