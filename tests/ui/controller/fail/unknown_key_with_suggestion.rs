use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(Controller)]
#[controller(for = Deployment, worker = 2)]
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
