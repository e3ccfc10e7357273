// A name where a string goes, and a string where a name goes: each fix repeats what was
// written, in the right form.
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, name = mirror, lister = "copies")]
struct Mirror;

noop_reconcile!(Mirror, ConfigMap);

fn main() {}
