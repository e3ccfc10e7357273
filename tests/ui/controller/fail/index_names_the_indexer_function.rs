// `index = [..]` lists index types: the indexer function's name gets its type's name.
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[indexer(ConfigMap)]
fn by_team(cm: &ConfigMap) -> Option<String> {
    cm.metadata.labels.as_ref()?.get("team").cloned()
}

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, index = [by_team])]
struct Settings;

noop_reconcile!(Settings, ConfigMap);

fn main() {}
