#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

const FINALIZER: &str = "example.com/cleanup";

// The derive reads tokens: a const's name is not its value, and quoting it is not the fix.
#[derive(ControllerSpec)]
#[controller(for = ConfigMap, finalizer = FINALIZER)]
struct FromConst;
noop_reconcile!(FromConst, ConfigMap);

fn main() {}
