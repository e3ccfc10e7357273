#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

#[indexer(ReplicaSet)]
fn by_owner(rs: &ReplicaSet) -> Vec<String> {
    rs.metadata.owner_references.iter().flatten().map(|r| r.uid.clone()).collect()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, owns(ReplicaSet, index = [ByOwner, ByOwner]))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
