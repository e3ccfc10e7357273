//! `informer_testing::chaos` on controllers built with this library: correct ones pass
//! their seeds, and one deliberately buggy controller per bug class Sieve and Acto found is
//! caught within the seeds a CI run uses, with its schedule shrunk and printed.
//!
//! | module | bug class | how the controller goes wrong |
//! | --- | --- | --- |
//! | `stale_cache` | acts on a stale cache | read-your-own-writes off and a name generated per create: a second ReplicaSet |
//! | `missed_states` | assumes it saw every intermediate state | counts the spec changes it saw as generations |
//! | `leaked_child` | leaks a child when a delete and a re-create arrive together | deletes children only when it sees the parent gone |
//! | `lease` | keeps working after losing its lease | runs its workers until shutdown, not until the term ends |
//!
//! Each buggy controller's test asserts on the report: the failure, the seed, the shrunk
//! schedule. `INFORMER_CHAOS_SEEDS=200 cargo test --test chaos` runs more seeds.

#[path = "chaos/leaked_child.rs"]
mod leaked_child;
#[path = "chaos/lease.rs"]
mod lease;
#[path = "chaos/missed_states.rs"]
mod missed_states;
#[path = "chaos/stale_cache.rs"]
mod stale_cache;
#[path = "chaos/support.rs"]
mod support;
