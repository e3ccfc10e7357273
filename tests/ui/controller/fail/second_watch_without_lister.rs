// The same kind watched twice in different places, but read through one name.
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, labels = "mirror=true", owns(ConfigMap, namespace = "mirror"))]
struct Mirror;

noop_reconcile!(Mirror, ConfigMap);

fn main() {}
