#[macro_use]
#[path = "../../noop.rs"]
mod noop;

use informer::prelude::*;

#[derive(Controller)]
#[controller(for = String)]
struct Strings;

fn main() {}

noop_reconcile!(Strings, String);
