#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Canary", namespaced, status = "CanaryStatus")]
pub struct CanarySpec {
    pub replicas: i32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct CanaryStatus {
    pub ready: i32,
}

#[derive(Serialize)]
pub struct NotTheStatus {
    pub colour: String,
}

// Serializes, but is not the resource's status type.
fn status(_canary: &Canary) -> NotTheStatus {
    NotTheStatus { colour: "red".into() }
}

#[derive(ControllerSpec)]
#[controller(for = Canary, status = status)]
struct Canaries;

noop_reconcile!(Canaries, Canary);

fn main() {}
