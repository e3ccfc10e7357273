#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;

fn make_store(capacity: usize) -> ThreadSafeStore<ConfigMap> {
    let _ = capacity;
    ThreadSafeStore::new()
}

#[derive(ControllerSpec)]
#[controller(for = ConfigMap, store = make_store)]
struct Configs;

noop_reconcile!(Configs, ConfigMap);

fn main() {}
