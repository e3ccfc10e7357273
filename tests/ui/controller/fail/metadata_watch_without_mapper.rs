// A metadata-only watch without a mapper: the signature asked for is the metadata one.
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

#[derive(ControllerSpec)]
#[controller(for = Deployment, watches(Pod, metadata))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
