#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

// `owns = T`, as a key: the fix shows the parentheses, with the type written.
#[derive(ControllerSpec)]
#[controller(for = Deployment, owns = k8s_openapi::api::core::v1::ConfigMap)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
