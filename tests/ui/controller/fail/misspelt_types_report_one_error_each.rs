// A misspelt resource type is one error on the user's token, whatever else mentions the
// type: the functions written for the real parent report nothing more, and neither does a
// misspelt watched type.
use informer::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, NamespaceStatus};

fn defaults(ns: &Namespace) -> Option<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("defaults".into());
    cm.metadata.namespace = ns.metadata.name.clone();
    Some(cm)
}

fn status(ns: &Namespace) -> Option<NamespaceStatus> {
    ns.status.clone()
}

fn named(ns: &Namespace) -> Result<(), ReconcileError> {
    match &ns.metadata.name {
        Some(_) => Ok(()),
        None => Err(ReconcileError::terminal("no name")),
    }
}

fn teams(_cm: &ConfigMap) -> Vec<ObjectKey> {
    Vec::new()
}

#[derive(ControllerSpec)]
#[controller(for = Namesapce, children(ConfigMap, from = defaults, all_namespaces))]
#[controller(status = status, validate = named)]
#[controller(watches(Secrte, mapper = teams, lister = secrets))]
struct Defaults;

impl Reconcile for Defaults {}

fn main() {}
