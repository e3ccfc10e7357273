use informer::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
struct PodView {
    metadata: ObjectMeta,
}

#[derive(Clone, Debug, View)]
#[view()]
struct Empty {
    metadata: ObjectMeta,
}

fn main() {}
