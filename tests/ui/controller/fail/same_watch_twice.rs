// The same kind watched twice in the same place: the error says what to change.
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, owns(ConfigMap))]
struct Mirror;

noop_reconcile!(Mirror, ConfigMap);

fn main() {}
