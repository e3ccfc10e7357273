use informer::prelude::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};

#[indexer(ReplicaSet)]
fn by_owner(rs: &ReplicaSet) -> Option<String> {
    let refs = rs.metadata.owner_references.as_ref()?;
    refs.iter().find(|r| r.controller == Some(true)).map(|r| r.uid.clone())
}

#[indexer(Deployment)]
fn by_image(d: &Deployment) -> Vec<String> {
    let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
    spec.map(|s| s.containers.iter().filter_map(|c| c.image.clone()).collect())
        .unwrap_or_default()
}

fn spec_changes() -> Filter<Deployment> {
    Filter::generation_changed()
}

fn replica_set_labels() -> Filter<ReplicaSet> {
    Filter::labels_changed()
}

fn config_data() -> Filter<ConfigMap> {
    Filter::new(|n: &Notification<ConfigMap>| match n {
        Notification::Update { old, new } => old.data != new.data,
        _ => true,
    })
}

// A metadata watch caches `PartialObjectMeta<Pod>`: its filter is of that type.
fn pod_labels() -> Filter<kube::core::PartialObjectMeta<Pod>> {
    Filter::labels_changed()
}

fn named_in_config(cm: &ConfigMap) -> Vec<ObjectKey> {
    vec![ObjectKey::new(cm.metadata.namespace.as_deref(), "web")]
}

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    index = [ByImage],
    owns(
        ReplicaSet,
        index = [ByOwner],
        labels = "app=web",
        fields = "metadata.name!=x",
        filter = replica_set_labels,
    ),
    owns(Secret, namespace = "vault", lister = vault_secrets),
    watches(ConfigMap, mapper = named_in_config, all_namespaces, filter = config_data),
    watches(
        Pod,
        mapper = |_: &kube::core::PartialObjectMeta<Pod>| Vec::new(),
        metadata,
        filter = pod_labels,
    ),
    workers = 4,
    resync = "1h30m",
    timeout = "45s",
    namespace = "shop",
    labels = "tier=frontend",
    fields = "metadata.name!=legacy",
    filter = spec_changes,
    queue = "priority",
    keep_managed_fields,
    name = "deployments",
    lister = apps,
    crate = ::informer::runtime,
)]
pub struct Deployments {
    pub greeting: String,
}

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        obj: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let _: &Lister<Deployment> = ctx.apps();
        let _: Vec<Arc<ReplicaSet>> = ctx.replica_sets().by_index::<ByOwner>("uid");
        let _: Vec<Arc<Deployment>> = ctx.apps().by_index::<ByImage>("nginx");
        let _: &Lister<Secret> = ctx.vault_secrets();
        let _: &Lister<ConfigMap> = ctx.config_maps();
        let _: &Lister<kube::core::PartialObjectMeta<Pod>> = ctx.pods();
        let _ = (ctx.queue(), ctx.name(), &self.greeting, obj);
        let _client: &kube::Client = ctx.client();
        Ok(Action::Done)
    }
}

fn main() {
    assert!(<Deployments as ControllerSpec>::KEEP_MANAGED_FIELDS);
}
