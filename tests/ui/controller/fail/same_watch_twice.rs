// The same kind owned twice in the same place: the error says what to change. (Owned and
// watched through a mapper, or the primary kind owned too, is allowed.)
#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

#[derive(ControllerSpec)]
#[controller(for = Secret, owns(ConfigMap), owns(ConfigMap, lister = again))]
struct Mirror;

noop_reconcile!(Mirror, Secret);

fn main() {}
