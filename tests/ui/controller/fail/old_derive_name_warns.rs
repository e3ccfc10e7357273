#![deny(deprecated)]

#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(Controller)]
#[controller(for = Deployment)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
