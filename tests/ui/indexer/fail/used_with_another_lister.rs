use informer::prelude::*;
use k8s_openapi::api::core::v1::{Node, Pod};

#[indexer(Pod)]
fn by_node(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

fn main() {
    let nodes: Lister<Node> = Lister::new(Arc::new(ThreadSafeStore::new()));
    let _ = nodes.by_index::<ByNode>("node-1");
}
