#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

// Takes a number, where the namespace function takes nothing or the controller.
fn shop(replica: u32) -> String {
    format!("shop-{replica}")
}

#[derive(ControllerSpec)]
#[controller(for = Deployment, namespace = shop)]
struct Deployments;

noop_reconcile!(Deployments, Deployment);

fn main() {}
