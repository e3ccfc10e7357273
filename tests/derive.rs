//! `#[derive(ControllerSpec)]` and `#[indexer]`: generated controllers running against the
//! in-process API server (the ui cases of every macro error are `tests/ui.rs`).

#[path = "derive/both_servers.rs"]
mod both_servers;
#[path = "derive/children.rs"]
mod children;
#[path = "derive/filters.rs"]
mod filters;
#[path = "derive/generated.rs"]
mod generated;
#[path = "derive/running.rs"]
mod running;
#[path = "derive/servers.rs"]
mod servers;
#[path = "derive/status.rs"]
mod status;
