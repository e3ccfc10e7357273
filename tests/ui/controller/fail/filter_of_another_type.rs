use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

fn pod_changes() -> Filter<Pod> {
    Filter::generation_changed()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, filter = pod_changes)]
struct Deployments;

impl Reconcile for Deployments {}

fn main() {}
