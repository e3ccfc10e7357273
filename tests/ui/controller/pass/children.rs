// Every form of children function, create-only children, a filter of children's changes, a
// children-only controller, and children of the primary's own kind in another namespace.
use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};

fn replica_sets_for(_: &Deployment) -> Vec<ReplicaSet> {
    Vec::new()
}

fn service_for(_: &Deployment) -> Option<Service> {
    None
}

fn secrets_for(_: &Deployment, ctx: &Context<Deployments>) -> Result<Vec<Secret>, std::fmt::Error> {
    let _: usize = ctx.replica_sets().len() + ctx.services().len() + ctx.secrets().len();
    Ok(Vec::new())
}

fn service_spec() -> Filter<Service> {
    Filter::generation_changed()
}

fn status_of(d: &Deployment, ctx: &Context<Deployments>) -> Option<DeploymentStatus> {
    let _ = ctx.replica_sets();
    Some(DeploymentStatus { observed_generation: d.metadata.generation, ..Default::default() })
}

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    status = status_of,
    children(ReplicaSet, from = replica_sets_for),
    children(Service, from = service_for, filter = service_spec),
    children(Secret, from = secrets_for, create_only, all_namespaces)
)]
struct Deployments;

/// Nothing to do beyond the children.
impl Reconcile for Deployments {}

fn copies(cm: &ConfigMap) -> Option<ConfigMap> {
    Some(cm.clone())
}

#[derive(ControllerSpec)]
#[controller(
    for = ConfigMap,
    labels = "mirror=true",
    children(ConfigMap, from = copies, namespace = "mirror", lister = copies)
)]
struct Mirror;

impl Reconcile for Mirror {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        _cm: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        let _: usize = ctx.config_maps().len() + ctx.copies().len();
        Ok(Action::Done)
    }
}

fn main() {
    let _ = (Deployments, Mirror);
}
