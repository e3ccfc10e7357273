#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(ControllerSpec)]
#[controller(for = Deployment, namespace = "Shop_1")]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
