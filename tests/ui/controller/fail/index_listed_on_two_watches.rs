#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

#[indexer(Namespace)]
fn by_team(ns: &Namespace) -> Option<String> {
    ns.metadata.labels.as_ref()?.get("team").cloned()
}

fn teams(_: &ConfigMap) -> Vec<ObjectKey> {
    Vec::new()
}

// An index indexes one type: listed on the ConfigMap watch too, it belongs to neither twice.
#[derive(ControllerSpec)]
#[controller(for = Namespace, index = [ByTeam], watches(ConfigMap, mapper = teams, index = [ByTeam]))]
struct Teams;

noop_reconcile!(Teams, Namespace);

fn main() {}
