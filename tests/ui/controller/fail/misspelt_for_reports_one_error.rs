// `fro = ...` is reported as a typo of `for`, and read as `for`: the reconcile below,
// written for that resource, reports nothing more.
use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

#[derive(ControllerSpec)]
#[controller(fro = Deployment, owns(ReplicaSet))]
struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        _ctx: &Context<Self>,
        _key: &ObjectKey,
        _deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        Ok(Action::Done)
    }
}

fn main() {}
