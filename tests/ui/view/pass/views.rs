use informer::prelude::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A view of a namespaced resource, with nested views of its own.
#[derive(Clone, Debug, View)]
#[view(of = Pod)]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<PodSpecView>,
    /// A field the JSON may have that `Pod` does not declare.
    #[view(unchecked)]
    #[serde(default)]
    preview: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct PodSpecView {
    node_name: Option<String>,
}

/// A view of a cluster-scoped resource, some of its metadata only, serde attributes of its
/// own, the crate path spelled out.
#[derive(Clone, Debug, View)]
#[view(of = Node, metadata(labels, uid), crate = ::informer::runtime)]
#[serde(rename_all = "camelCase")]
struct NodeView {
    metadata: ObjectMeta,
    #[serde(rename = "spec", default)]
    node_spec: Option<serde_json::Value>,
}

/// A controller of views, owning views.
#[derive(ControllerSpec)]
#[controller(for = PodView, watches(NodeView, mapper = pods_on))]
struct Placement;

fn pods_on(_node: &NodeView) -> Vec<ObjectKey> {
    Vec::new()
}

impl Reconcile for Placement {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        pod: Option<Arc<PodView>>,
    ) -> Result<Action, ReconcileError> {
        let node = pod.and_then(|p| p.spec.clone()).and_then(|s| s.node_name);
        let _ = (ctx.pod_views().get(key), ctx.node_views().list(), node);
        Ok(Action::Done)
    }
}

fn main() {
    fn view_of<V: informer::view::View<Of = O>, O>() {}
    view_of::<PodView, Pod>();
    view_of::<NodeView, Node>();
}
