// A misspelt `mapper` is reported once, as an unknown key: no second error asking for a
// mapper (with the wrong signature for a metadata-only watch).
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

fn owners(_pod: &kube::core::PartialObjectMeta<Pod>) -> Vec<ObjectKey> {
    Vec::new()
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, watches(Pod, metadata, maper = owners))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
