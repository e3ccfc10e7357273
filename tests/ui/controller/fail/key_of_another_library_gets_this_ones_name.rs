#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

// kube-runtime's and controller-runtime's names: `requeue` is not a misspelt `queue`.
#[derive(ControllerSpec)]
#[controller(for = Deployment, requeue = "5m", max_concurrent_reconciles = 4)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
