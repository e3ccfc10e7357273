use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn by_restarts(pod: &Pod) -> i32 {
    pod.status.as_ref().map_or(0, |s| s.container_statuses.iter().flatten().map(|c| c.restart_count).sum())
}

fn main() {}
