use informer::prelude::*;

#[derive(ControllerSpec)]
#[controller(for = k8s_openapi::api::core::v1::Pod)]
enum Pods {
    Fast,
    Slow,
}

fn main() {}
