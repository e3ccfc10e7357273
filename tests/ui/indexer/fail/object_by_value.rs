use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn by_node(pod: Pod) -> Option<String> {
    pod.spec?.node_name
}

fn main() {}
