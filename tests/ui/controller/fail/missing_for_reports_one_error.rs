// A missing `for = ...` is one error: the reconcile below, written for the resource the
// user meant, reports nothing more.
use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

#[derive(ControllerSpec)]
#[controller(owns(ReplicaSet), workers = 2)]
struct Deployments;

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let owned = ctx.replica_sets().namespaced(key.namespace().unwrap_or_default()).list();
        let _ = (owned, deployment, ctx.client(), ctx.name());
        Ok(Action::Done)
    }
}

fn main() {
    let _ = Deployments;
}
