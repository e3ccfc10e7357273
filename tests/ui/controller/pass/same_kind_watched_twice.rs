// One kind watched twice where the watches differ, each read through its own lister; and
// one kind both owned and watched through a mapper in the same place (one informer, two
// handlers).
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

fn by_name(cm: &ConfigMap) -> Option<ObjectKey> {
    Some(ObjectKey::new(cm.metadata.namespace.as_deref(), cm.metadata.name.as_deref()?))
}

#[derive(ControllerSpec)]
#[controller(
    for = ConfigMap,
    labels = "source=true",
    watches(ConfigMap, namespace = "mirror", mapper = by_name, lister = mirrored),
    watches(ConfigMap, metadata, mapper = |_: &kube::core::PartialObjectMeta<ConfigMap>| Vec::new(), lister = metadata),
    owns(Secret),
    owns(Secret, namespace = "vault", lister = vault_secrets),
    watches(Secret, mapper = |_: &Secret| Vec::<ObjectKey>::new(), lister = referenced_secrets)
)]
struct Mirror;

noop_reconcile!(Mirror, ConfigMap);

fn main() {
    fn check(ctx: &Context<Mirror>) -> usize {
        ctx.config_maps().len() + ctx.mirrored().len() + ctx.secrets().len() + ctx.vault_secrets().len() + ctx.referenced_secrets().len()
    }
    let _ = check;
}
