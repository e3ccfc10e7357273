use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::core::PartialObjectMeta;

fn pod_changes() -> Filter<Pod> {
    Filter::labels_changed()
}

fn keys(_: &PartialObjectMeta<Pod>) -> Vec<ObjectKey> {
    Vec::new()
}

// A filter of another type than the owned one; and one of full Pods for a metadata watch,
// which caches `PartialObjectMeta<Pod>`.
#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    owns(ReplicaSet, filter = pod_changes),
    watches(Pod, mapper = keys, metadata, filter = pod_changes)
)]
struct Deployments;

impl Reconcile for Deployments {}

fn main() {}
