use informer::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod, metadata(uid, lables, owner_references, uid))]
struct PodView {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod, metadata = uid)]
struct NoList {
    metadata: ObjectMeta,
}

fn main() {}
