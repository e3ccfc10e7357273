#![deny(deprecated)]

#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(ControllerSpec)]
#[controller(for = Deployment)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn replicas(ctx: &DeploymentsContext) -> usize {
    ctx.deployments().list().len()
}

fn main() {
    let _ = replicas;
}
