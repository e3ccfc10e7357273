use informer::prelude::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
#[view(of = String)]
struct StringView {
    metadata: ObjectMeta,
}

fn main() {}
