use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;

#[indexer(Pod)]
fn pods_by_node(pod: &Pod) -> Option<String> {
    pod.spec.as_ref()?.node_name.clone()
}

#[derive(Controller)]
#[controller(for = Deployment, owns(ReplicaSet, index = [PodsByNode]))]
struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _obj: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}

fn main() {}
