use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;

fn mapper(cm: ConfigMap) -> Vec<String> {
    vec![cm.metadata.name.unwrap_or_default()]
}

#[derive(Controller)]
#[controller(for = Deployment, watches(ConfigMap, mapper = mapper))]
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
