use informer::prelude::*;
use k8s_openapi::api::core::v1::{Node, Pod};

#[indexer(Pod)]
fn by_name(node: &Node) -> Option<String> {
    node.metadata.name.clone()
}

fn main() {}
