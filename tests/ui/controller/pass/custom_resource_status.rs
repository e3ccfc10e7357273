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

// The status type itself.
fn status(canary: &Canary) -> CanaryStatus {
    CanaryStatus { ready: canary.spec.replicas }
}

#[derive(ControllerSpec)]
#[controller(for = Canary, status = status)]
struct Canaries;

impl Reconcile for Canaries {}

// An `Option` of it, with the context.
fn maybe_status(canary: &Canary, _ctx: &Context<Others>) -> Option<CanaryStatus> {
    (canary.spec.replicas > 0).then(CanaryStatus::default)
}

#[derive(ControllerSpec)]
#[controller(for = Canary, status = maybe_status)]
struct Others;

impl Reconcile for Others {}

fn main() {}
