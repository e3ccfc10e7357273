use informer::prelude::*;

#[derive(Controller)]
#[controller(workers = 2)]
struct Deployments;

fn main() {}
