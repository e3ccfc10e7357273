use informer::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

// Only annotations and labels are maps of keys a view can pick from.
#[derive(View)]
#[view(
    of = k8s_openapi::api::core::v1::Pod,
    metadata(annotations("example.com/ttl"), finalizers("example.com/x"))
)]
struct PodView {
    metadata: ObjectMeta,
}

fn main() {}
