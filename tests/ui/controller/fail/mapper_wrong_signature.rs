#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;

fn mapper(cm: ConfigMap) -> Vec<String> {
    vec![cm.metadata.name.unwrap_or_default()]
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, watches(ConfigMap, mapper = mapper))]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
