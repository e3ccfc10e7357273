use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;

#[derive(Clone, Debug, View)]
#[view(of = Pod)]
struct PodView {
    metadata: String,
}

fn main() {}
