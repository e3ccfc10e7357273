use std::collections::BTreeSet;

use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn by_node(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

#[indexer(Pod)]
fn by_phase(pod: &Pod) -> String {
    pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

#[indexer(Pod, name = PodsByLabelKey)]
pub fn label_keys(pod: &Pod) -> BTreeSet<String> {
    pod.metadata.labels.iter().flatten().map(|(k, _)| k.clone()).collect()
}

#[indexer(Pod)]
fn by_container(pod: &Pod) -> Vec<String> {
    pod.spec.iter().flat_map(|s| s.containers.iter().map(|c| c.name.clone())).collect()
}

fn main() {
    let pods: Lister<Pod> = Lister::new(Arc::new(ThreadSafeStore::new()));
    assert!(pods.by_index::<ByNode>("n").is_empty());
    assert!(pods.by_index::<ByPhase>("Running").is_empty());
    assert!(pods.by_index::<PodsByLabelKey>("app").is_empty());
    assert!(pods.index_keys::<ByContainer>("web").is_empty());
}
