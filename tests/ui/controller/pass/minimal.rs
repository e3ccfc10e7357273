use informer::prelude::*;
use k8s_openapi::api::core::v1::Secret;

#[derive(ControllerSpec)]
#[controller(for = Secret, queue = "plain")]
struct Secrets;

impl Reconcile for Secrets {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        secret: Option<Arc<Secret>>,
    ) -> Result<Action, ReconcileError> {
        let _ = (ctx.secrets().get(key), secret);
        Ok(Action::Done)
    }
}

fn main() {}
