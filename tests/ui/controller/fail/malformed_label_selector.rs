// A label selector is checked when the controller compiles: a malformed one is an error on
// its literal, not an informer that never syncs.
use informer::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

#[derive(ControllerSpec)]
#[controller(for = Namespace, labels = "defaults.example.com/enabled==true=")]
#[controller(owns(ConfigMap, labels = "app: web"))]
struct Defaults;

impl Reconcile for Defaults {}

fn main() {}
