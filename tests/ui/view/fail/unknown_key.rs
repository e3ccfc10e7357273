use informer::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
#[view(off = Pod)]
struct PodView {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod, of = k8s_openapi::api::core::v1::Pod)]
struct Twice {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod)]
struct Generic<T> {
    metadata: ObjectMeta,
    extra: T,
}

fn main() {}
