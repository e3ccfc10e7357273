use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;

#[derive(ControllerSpec)]
#[controller(for = Deployment)]
struct Deployments;

fn main() {}
