use informer::prelude::*;

#[derive(ControllerSpec)]
#[controller(workers = 2)]
struct Deployments;

fn main() {}
