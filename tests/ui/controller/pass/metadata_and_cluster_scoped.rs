use informer::prelude::*;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::core::PartialObjectMeta;

#[indexer(PartialObjectMeta<Pod>)]
fn by_node_label(pod: &PartialObjectMeta<Pod>) -> Option<String> {
    pod.metadata.labels.as_ref()?.get("node").cloned()
}

/// Only the metadata of Pods is cached; Nodes are cluster-scoped.
#[derive(ControllerSpec)]
#[controller(for = Pod, metadata, index = [ByNodeLabel], watches(Node, mapper = |_: &Node| Vec::new()))]
struct PodLabels;

impl Reconcile for PodLabels {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        pod: Option<Arc<PartialObjectMeta<Pod>>>,
    ) -> Result<Action, ReconcileError> {
        let _ = ctx.pods().by_index::<ByNodeLabel>("node-1");
        let _: &Lister<Node> = ctx.nodes();
        let _ = pod.map(|p| p.metadata.name.clone());
        Ok(Action::Done)
    }
}

fn main() {
    assert!(!<PodLabels as ControllerSpec>::KEEP_MANAGED_FIELDS);
}
