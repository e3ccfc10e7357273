use informer::prelude::*;
use k8s_openapi::api::core::v1::Node;

fn main() {
    let factory = InformerFactory::without_client();
    let _nodes = factory.informer::<Node>(InformerParams::all());
}
