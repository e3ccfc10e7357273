use informer::prelude::*;

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod)]
struct PodView {
    name: String,
}

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod)]
struct Tuple(String);

#[derive(Clone, Debug, View)]
#[view(of = k8s_openapi::api::core::v1::Pod)]
enum NotAStruct {
    A,
}

fn main() {}
