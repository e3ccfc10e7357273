#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;

#[derive(ControllerSpec)]
#[controller(for = String)]
struct Strings;

fn main() {}

noop_reconcile!(Strings, String);
