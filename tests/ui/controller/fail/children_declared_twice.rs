#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

fn current(_: &Deployment) -> Option<ReplicaSet> {
    None
}

fn old(_: &Deployment) -> Vec<ReplicaSet> {
    Vec::new()
}

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    children(ReplicaSet, from = current),
    children(ReplicaSet, from = old, lister = old_replica_sets)
)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
