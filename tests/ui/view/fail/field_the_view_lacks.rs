use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
#[view(of = Pod)]
struct PodView {
    metadata: ObjectMeta,
}

fn node_of(pod: &PodView) -> Option<String> {
    // A view holds only what it declares: reading the full type's fields does not compile.
    pod.spec.as_ref()?.node_name.clone()
}

fn main() {
    let _ = node_of;
}
