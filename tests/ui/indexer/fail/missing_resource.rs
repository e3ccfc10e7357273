use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[indexer]
fn by_node(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

fn main() {}
