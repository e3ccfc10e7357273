#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

// Takes the parent by value and returns one child without `Option`.
fn replica_sets_for(deployment: Deployment) -> ReplicaSet {
    let _ = deployment;
    ReplicaSet::default()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, children(ReplicaSet, from = replica_sets_for))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
