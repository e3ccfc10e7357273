#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn pods_by_node(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, owns(ReplicaSet, index = [PodsByNode]))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
