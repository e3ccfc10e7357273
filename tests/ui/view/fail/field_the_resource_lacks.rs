// A view's field that the viewed resource does not have is an error on the field (its
// own name, or the JSON name serde renames it to), not a field that is always `None`.
use informer::prelude::*;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

#[derive(Clone, Debug, View)]
#[view(of = Pod)]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<serde_json::Value>,
    stats: Option<serde_json::Value>,
    #[serde(rename = "nodeNme")]
    node: Option<String>,
    #[view(uncheked)]
    extra: Option<String>,
}

fn main() {}
