//! Schedules: the steps of one run (world changes, faults, pauses), generated from a seed.

use std::fmt;
use std::time::Duration;

use super::rng::Rng;
use super::world::{World, WorldStep};

/// The kinds of fault a schedule may inject (see [`Chaos::faults`](super::Chaos::faults)).
/// Each names the class of controller bug it hunts, after Sieve (OSDI'22) and Acto (SOSP'23).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FaultKind {
    /// The controller crashes right after the server commits one of its writes (before it
    /// can write again), stays down for a few steps, and restarts with empty caches:
    /// intermediate states.
    Crash,
    /// The controller restarts against an API server that has not seen its last writes (an
    /// HA API server behind a load balancer, lagging): its lists show the world as it was
    /// before them. Stale state.
    StaleRestart,
    /// The controller's watch events arrive late, by a different delay per resource, so its
    /// caches of different types disagree: stale state.
    WatchDelay,
    /// The controller's watches are dropped and the history compacted: it relists (410).
    WatchDrop,
    /// The controller's watches pause while the world changes, then the history is compacted
    /// and it relists: changes made meanwhile (a create and delete, a delete and re-create)
    /// are never observed: unobserved states.
    Unobserved,
    /// The controller's watches pause while the world changes, then deliver everything at
    /// once: events that cancel each other arrive together.
    Coalesce,
    /// The controller's requests fail: another client writes the objects of its next updates
    /// just before them (a genuine 409 Conflict for a write that names a `resourceVersion`),
    /// or its next writes or reads fail with 429 or 500.
    RequestErrors,
    /// The leader's Lease renewals fail until the Lease expires and another holder takes it
    /// over (needs [`Chaos::leader_election`](super::Chaos::leader_election)).
    LeaseLoss,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::Crash,
        FaultKind::StaleRestart,
        FaultKind::WatchDelay,
        FaultKind::WatchDrop,
        FaultKind::Unobserved,
        FaultKind::Coalesce,
        FaultKind::RequestErrors,
        FaultKind::LeaseLoss,
    ];
}

/// Which requests a [`Step::FailRequests`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestClass {
    /// Creates, updates, patches and deletes.
    Writes,
    /// Gets, lists and watches.
    Reads,
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Step {
    /// The world changes.
    World(WorldStep),
    /// The controller crashes right after the server commits its `after_writes`-th write
    /// from now (0: now), stays down for `down_steps` steps, and restarts. The steps after
    /// it do not wait for that write: in a written scenario, follow it with
    /// [`Step::Settle`] to let the controller write (and crash) first.
    Crash {
        /// Which write (1: the next one); 0 crashes at once.
        after_writes: u32,
        /// Steps the controller misses.
        down_steps: u32,
    },
    /// Lists that are not consistent reads are served from the state just before the
    /// controller's `writes_back`-th last write (one revision behind if it wrote nothing) for
    /// `for_steps` steps, and the controller restarts at once (so that it lists).
    StaleRestart {
        /// How many of its last writes the lagging view has not seen.
        writes_back: u32,
        /// How long the lag lasts.
        for_steps: u32,
    },
    /// Every watch event reaches the controller late, by up to `max` (a different delay
    /// per resource), for `for_steps` steps.
    DelayWatches {
        /// The longest delay.
        max: Duration,
        /// Picks each resource's delay.
        salt: u64,
        /// How long.
        for_steps: u32,
    },
    /// The controller's watches end; with `compact`, the history is compacted first so
    /// that resuming them gets 410 and the controller relists.
    DropWatches {
        /// Whether the history is compacted.
        compact: bool,
    },
    /// The controller's watches deliver nothing for `for_steps` steps; then, with
    /// `relist`, the history is compacted and they end (what happened meanwhile is never
    /// observed), else everything held is delivered at once.
    PauseWatches {
        /// How long.
        for_steps: u32,
        /// Relist (unobserved states) rather than deliver (coalesced events).
        relist: bool,
    },
    /// Another client writes the object of each of the controller's next `count` updates
    /// and patches just before it: a write that names a `resourceVersion` gets a genuine
    /// 409 Conflict (and the controller the event of the newer version), one that does not
    /// goes through.
    Conflicts {
        /// How many updates and patches.
        count: u32,
    },
    /// The controller's next `count` requests of a class fail with `code`.
    FailRequests {
        /// Writes or reads.
        class: RequestClass,
        /// 429 or 500.
        code: u16,
        /// How many.
        count: u32,
    },
    /// The leader's Lease requests fail until the Lease has stayed unrenewed for one and a
    /// half lease durations; then, unless another replica took it, the harness takes it
    /// over and holds it for `for_steps` steps before releasing it.
    LoseLease {
        /// How long the harness holds the Lease.
        for_steps: u32,
    },
    /// Nothing happens for a while.
    Wait(Duration),
    /// Waits until nothing has changed for 100 ms (at most 2 s): the controller catches up.
    Settle,
}

impl Step {
    /// The kind of step, for summaries: `world`, `crash`, `stale restart`, `watch delay`,
    /// `watch drop`, `unobserved`, `coalesce`, `request errors`, `lease loss`, `wait`.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::World(_) => "world",
            Step::Crash { .. } => "crash",
            Step::StaleRestart { .. } => "stale restart",
            Step::DelayWatches { .. } => "watch delay",
            Step::DropWatches { .. } => "watch drop",
            Step::PauseWatches { relist: true, .. } => "unobserved",
            Step::PauseWatches { relist: false, .. } => "coalesce",
            Step::FailRequests { .. } | Step::Conflicts { .. } => "request errors",
            Step::LoseLease { .. } => "lease loss",
            Step::Wait(_) | Step::Settle => "wait",
        }
    }
}

impl Step {
    /// The Rust expression that makes this step (`Step::Crash { .. }`,
    /// `Step::World(WorldStep::create(serde_json::json!(..)))`), for
    /// [`Chaos::scenario`](super::Chaos::scenario); it names `Step`, `WorldStep`,
    /// `RequestClass`, `serde_json` and `std::time::Duration` as a test imports them.
    pub(crate) fn code(&self) -> String {
        let millis = |d: &Duration| format!("Duration::from_millis({})", d.as_millis());
        match self {
            Step::World(step) => format!("Step::World({})", step.code()),
            Step::Crash {
                after_writes,
                down_steps,
            } => {
                format!("Step::Crash {{ after_writes: {after_writes}, down_steps: {down_steps} }}")
            }
            Step::StaleRestart {
                writes_back,
                for_steps,
            } => format!(
                "Step::StaleRestart {{ writes_back: {writes_back}, for_steps: {for_steps} }}"
            ),
            Step::DelayWatches {
                max,
                salt,
                for_steps,
            } => format!(
                "Step::DelayWatches {{ max: {}, salt: {salt}, for_steps: {for_steps} }}",
                millis(max)
            ),
            Step::DropWatches { compact } => format!("Step::DropWatches {{ compact: {compact} }}"),
            Step::PauseWatches { for_steps, relist } => {
                format!("Step::PauseWatches {{ for_steps: {for_steps}, relist: {relist} }}")
            }
            Step::Conflicts { count } => format!("Step::Conflicts {{ count: {count} }}"),
            Step::FailRequests { class, code, count } => format!(
                "Step::FailRequests {{ class: RequestClass::{class:?}, code: {code}, count: {count} }}"
            ),
            Step::LoseLease { for_steps } => {
                format!("Step::LoseLease {{ for_steps: {for_steps} }}")
            }
            Step::Wait(duration) => format!("Step::Wait({})", millis(duration)),
            Step::Settle => "Step::Settle".to_string(),
        }
    }
}

fn steps(n: u32) -> String {
    if n == 1 {
        "1 step".to_string()
    } else {
        format!("{n} steps")
    }
}

fn ordinal(n: u32) -> String {
    match n {
        1 => "next write".to_string(),
        2 => "2nd write from now".to_string(),
        3 => "3rd write from now".to_string(),
        n => format!("{n}th write from now"),
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::World(step) => write!(f, "world: {step}"),
            Step::Crash {
                after_writes: 0,
                down_steps,
            } => write!(
                f,
                "fault: crash the controller now, down for {}",
                steps(*down_steps)
            ),
            Step::Crash {
                after_writes,
                down_steps,
            } => write!(
                f,
                "fault: crash the controller right after its {} commits, down for {}",
                ordinal(*after_writes),
                steps(*down_steps)
            ),
            Step::StaleRestart {
                writes_back,
                for_steps,
            } => write!(
                f,
                "fault: the controller restarts against an API server that has not seen its last {} (for {})",
                if *writes_back == 1 {
                    "write".to_string()
                } else {
                    format!("{writes_back} writes")
                },
                steps(*for_steps)
            ),
            Step::DelayWatches { max, for_steps, .. } => write!(
                f,
                "fault: watch events delayed up to {}ms, differently per resource, for {}",
                max.as_millis(),
                steps(*for_steps)
            ),
            Step::DropWatches { compact: true } => {
                write!(f, "fault: watches dropped and history compacted (relist)")
            }
            Step::DropWatches { compact: false } => write!(f, "fault: watches dropped"),
            Step::PauseWatches {
                for_steps,
                relist: true,
            } => write!(
                f,
                "fault: watches paused for {}, then history compacted and relisted (unobserved states)",
                steps(*for_steps)
            ),
            Step::PauseWatches {
                for_steps,
                relist: false,
            } => write!(
                f,
                "fault: watches paused for {}, then everything delivered at once",
                steps(*for_steps)
            ),
            Step::Conflicts { count } => write!(
                f,
                "fault: another client writes the objects of the controller's next {count} updates just before them (conflicts)"
            ),
            Step::FailRequests { class, code, count } => write!(
                f,
                "fault: the controller's next {count} {} fail with {code}",
                match class {
                    RequestClass::Writes => "writes",
                    RequestClass::Reads => "reads",
                }
            ),
            Step::LoseLease { for_steps } => write!(
                f,
                "fault: the leader's lease renewals fail until its lease is taken over, held for {}",
                steps(*for_steps)
            ),
            Step::Wait(duration) => write!(f, "wait {}ms", duration.as_millis()),
            Step::Settle => write!(f, "wait until the world is quiet"),
        }
    }
}

/// Generates a seed's schedule: the world's steps (the seeds' creates first for a generated
/// world; the script in order for a scripted one) with `length` more steps of faults, world
/// changes and pauses mixed in.
pub(crate) fn generate(seed: u64, world: &World, kinds: &[FaultKind], length: usize) -> Vec<Step> {
    let mut rng = Rng::new(seed);
    let mut schedule = Vec::new();
    let pause = |rng: &mut Rng| Step::Wait(Duration::from_millis(*rng.pick(&[5, 20, 50, 120])));
    if let Some(script) = world.script() {
        // Each scripted step, with faults and pauses before it.
        for step in script {
            let extra = rng.below(3);
            for _ in 0..extra {
                if let Some(fault) = fault(&mut rng, kinds) {
                    schedule.push(fault);
                } else {
                    schedule.push(pause(&mut rng));
                }
            }
            schedule.push(Step::World(step.clone()));
            schedule.push(pause(&mut rng));
        }
        return schedule;
    }
    let initial = world.initial_steps();
    let mut present = vec![true; initial.len()];
    for step in initial {
        schedule.push(Step::World(step));
    }
    schedule.push(pause(&mut rng));
    for _ in 0..length {
        let roll = rng.below(100);
        let step = if roll < 40 {
            fault(&mut rng, kinds)
        } else if roll < 85 {
            world.random_step(&mut rng, &mut present).map(Step::World)
        } else if roll < 93 {
            Some(pause(&mut rng))
        } else {
            Some(Step::Settle)
        };
        if let Some(step) = step {
            schedule.push(step);
        }
        if rng.chance(50) {
            schedule.push(pause(&mut rng));
        }
    }
    schedule
}

/// A random fault of one of `kinds`, or `None` if there are none.
fn fault(rng: &mut Rng, kinds: &[FaultKind]) -> Option<Step> {
    if kinds.is_empty() {
        return None;
    }
    let steps = |rng: &mut Rng| u32::try_from(rng.between(1, 3)).unwrap_or(1);
    Some(match rng.pick(kinds) {
        FaultKind::Crash => Step::Crash {
            after_writes: *rng.pick(&[0, 1, 1, 1, 2, 3]),
            down_steps: *rng.pick(&[0, 1, 1, 2]),
        },
        FaultKind::StaleRestart => Step::StaleRestart {
            writes_back: *rng.pick(&[1, 1, 2, 3]),
            for_steps: steps(rng),
        },
        FaultKind::WatchDelay => Step::DelayWatches {
            max: Duration::from_millis(*rng.pick(&[50, 150, 400])),
            salt: rng.next_u64(),
            for_steps: steps(rng),
        },
        FaultKind::WatchDrop => Step::DropWatches {
            compact: rng.chance(70),
        },
        FaultKind::Unobserved => Step::PauseWatches {
            for_steps: steps(rng),
            relist: true,
        },
        FaultKind::Coalesce => Step::PauseWatches {
            for_steps: steps(rng),
            relist: false,
        },
        FaultKind::RequestErrors if rng.chance(35) => Step::Conflicts {
            count: u32::try_from(rng.between(1, 3)).unwrap_or(1),
        },
        FaultKind::RequestErrors => {
            let class = if rng.chance(50) {
                RequestClass::Writes
            } else {
                RequestClass::Reads
            };
            Step::FailRequests {
                class,
                code: *rng.pick(&[429, 500]),
                count: u32::try_from(rng.between(1, 3)).unwrap_or(1),
            }
        }
        FaultKind::LeaseLoss => Step::LoseLease {
            for_steps: steps(rng),
        },
    })
}
