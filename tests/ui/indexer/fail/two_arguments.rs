use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn by_node(pod: &Pod, default: &str) -> String {
    pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_else(|| default.to_owned())
}

fn main() {}
