//! What a chaos run tells: the [`Failure`], the [`Report`] of a failing test (seed, shrunk
//! schedule, trace) and the [`Summary`] of a passing one.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::schedule::Step;

/// How a run failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// An invariant did not hold in a state the server committed.
    Invariant {
        /// The invariant's name.
        name: String,
        /// What the invariant said (or the message of its panic).
        message: String,
        /// The revision of the state that broke it.
        revision: u64,
    },
    /// After the schedule, the cluster did not reach the expected state within the bound
    /// (or stayed unchanged in another state for half of it, with no cache being rebuilt).
    NotConverged {
        /// What the convergence check said last.
        message: String,
        /// How long the harness waited.
        waited: Duration,
    },
    /// The controller kept changing the world without input: after the expected state was
    /// reached, it went on writing and the world did not become quiet for 5 s.
    Thrash {
        /// The changes the controller made after the expected state was first reached.
        writes: usize,
        /// The last of them, described.
        last: Vec<String>,
    },
    /// A replica wrote after another holder had taken its leader-election Lease over.
    WriteAfterLeaseLoss {
        /// The replica incarnation (the user its requests were made as).
        user: String,
        /// The Lease holder identity it had.
        identity: String,
        /// The revision at which the Lease passed to another holder.
        lost_at: u64,
        /// The write, described.
        write: String,
    },
    /// A controller's start function returned or panicked while the harness had not
    /// stopped it.
    ControllerExited {
        /// The replica incarnation.
        user: String,
        /// How it ended.
        outcome: String,
    },
    /// The harness itself could not do its work (the server did not start, a step could
    /// not be applied). Not the controller's fault.
    Harness {
        /// What went wrong.
        message: String,
    },
}

impl Failure {
    /// Whether `other` is the same failure as shrinking judges it: the same invariant, or
    /// the same kind of failure (what a regression test of a [`Report`] asserts of a
    /// [scenario](super::Chaos::scenario) that replays it).
    ///
    /// ```
    /// use informer_testing::chaos::Failure;
    /// let harness = Failure::Harness { message: "a".into() };
    /// assert!(harness.same_kind(&Failure::Harness { message: "b".into() }));
    /// ```
    pub fn same_kind(&self, other: &Failure) -> bool {
        match (self, other) {
            (Failure::Invariant { name: a, .. }, Failure::Invariant { name: b, .. }) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }

    /// A short name of the failure's kind: `invariant`, `not converged`, `thrash`,
    /// `write after lease loss`, `controller exited` or `harness`.
    ///
    /// ```
    /// use informer_testing::chaos::Failure;
    /// let failure = Failure::Harness { message: "x".into() };
    /// assert_eq!(failure.kind(), "harness");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Invariant { .. } => "invariant",
            Failure::NotConverged { .. } => "not converged",
            Failure::Thrash { .. } => "thrash",
            Failure::WriteAfterLeaseLoss { .. } => "write after lease loss",
            Failure::ControllerExited { .. } => "controller exited",
            Failure::Harness { .. } => "harness",
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Invariant {
                name,
                message,
                revision,
            } => write!(
                f,
                "invariant {name:?} broken at revision {revision}: {message}"
            ),
            Failure::NotConverged { message, waited } => write!(
                f,
                "not converged within {:.1}s after the schedule: {message}",
                waited.as_secs_f64()
            ),
            Failure::Thrash { writes, last } => {
                write!(
                    f,
                    "thrash: {writes} writes after the expected state was reached, without input; the last: {}",
                    last.join("; ")
                )
            }
            Failure::WriteAfterLeaseLoss {
                user,
                identity,
                lost_at,
                write,
            } => write!(
                f,
                "{user} (lease holder {identity:?}) wrote after its lease passed to another holder at revision {lost_at}: {write}"
            ),
            Failure::ControllerExited { user, outcome } => {
                write!(f, "{user} exited while it should run: {outcome}")
            }
            Failure::Harness { message } => write!(f, "the harness failed: {message}"),
        }
    }
}

/// One line of a run's trace: when, who (the world, a fault, a controller incarnation, the
/// checker) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    /// Since the run started.
    pub at: Duration,
    /// `world`, `fault`, `check`, or the controller incarnation (`replica-0.1`: replica 0,
    /// its first incarnation).
    pub who: String,
    /// What happened.
    pub what: String,
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "+{:>7.3}s  {:<12} {}",
            self.at.as_secs_f64(),
            self.who,
            self.what
        )
    }
}

/// The trace of one run, bounded: its first [`Trace::HEAD`] events (how it began) and its
/// last [`Trace::TAIL`] (how it ended); what came between is dropped and counted.
pub(crate) struct Trace {
    start: Instant,
    events: Mutex<Events>,
}

#[derive(Default)]
struct Events {
    head: Vec<TraceEvent>,
    tail: VecDeque<TraceEvent>,
    dropped: usize,
}

impl Trace {
    const HEAD: usize = 1000;
    const TAIL: usize = 3000;

    pub(crate) fn new() -> Self {
        Self {
            start: Instant::now(),
            events: Mutex::new(Events::default()),
        }
    }

    pub(crate) fn record(&self, who: impl Into<String>, what: impl Into<String>) {
        let event = TraceEvent {
            at: self.start.elapsed(),
            who: who.into(),
            what: what.into(),
        };
        tracing::debug!(who = %event.who, what = %event.what, "chaos");
        let mut events = self.events.lock();
        if events.head.len() < Self::HEAD {
            events.head.push(event);
            return;
        }
        if events.tail.len() == Self::TAIL {
            events.tail.pop_front();
            events.dropped += 1;
        }
        events.tail.push_back(event);
    }

    /// The events kept, in order, with a line saying how many were dropped between.
    pub(crate) fn events(&self) -> Vec<TraceEvent> {
        let events = self.events.lock();
        let mut all = events.head.clone();
        if events.dropped > 0 {
            all.push(TraceEvent {
                at: events.tail.front().map_or(Duration::ZERO, |e| e.at),
                who: "trace".to_string(),
                what: format!("... {} events left out ...", events.dropped),
            });
        }
        all.extend(events.tail.iter().cloned());
        all
    }
}

/// Why a chaos test failed: the seed, the failure, the schedule shrunk to the fewest steps
/// that still fail, and the trace of the last failing run. Its `Display` is what
/// [`Chaos::run`](super::Chaos::run) panics with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Report {
    /// The test's name.
    pub name: String,
    /// The libtest name of the test function that ran the harness (`None` outside a test):
    /// the replay lines say to run that test alone, since `INFORMER_CHAOS_SEED` applies to
    /// every chaos test of the binary.
    pub test: Option<String>,
    /// The `cargo test` arguments that build and run only the test binary the harness ran
    /// in (`-p informer-examples --test chaos`), when it can tell (`None` otherwise: the
    /// replay lines then build every test target).
    pub cargo_target: Option<String>,
    /// Whether the test binary was run with `--ignored` or `--include-ignored` (an
    /// `#[ignore]`d chaos test): the replay lines then pass `--include-ignored`, without
    /// which libtest would skip the test they name.
    pub run_ignored: bool,
    /// How many times each candidate schedule was run while shrinking before it was taken
    /// to pass (timing is not deterministic: a schedule that fails may pass a run).
    pub attempts: usize,
    /// The failing seed.
    pub seed: u64,
    /// How many seeds ran before the failure was found (this one included).
    pub seeds_run: usize,
    /// The failure of the shrunk schedule (the same kind as the seed's).
    pub failure: Failure,
    /// The seed's whole schedule.
    pub schedule: Vec<Step>,
    /// The steps kept by shrinking, with their index in [`schedule`](Self::schedule).
    pub shrunk: Vec<(usize, Step)>,
    /// How many runs shrinking took.
    pub shrink_runs: usize,
    /// Whether shrinking stopped at its budget before it was done.
    pub shrink_budget_exhausted: bool,
    /// How many times the shrunk schedule was replayed one run at a time once shrinking was
    /// done, stopping at the first replay that failed (candidates run concurrently while
    /// shrinking, and a schedule may fail only under that load); 0 when nothing was shrunk.
    /// These runs count in [`shrink_runs`](Self::shrink_runs).
    pub replays: usize,
    /// How many of those replays failed the same way (0 or 1). 0 means that neither the
    /// shrunk schedule nor any larger one shrinking took failed when replayed: the failure
    /// is rare or needs the load of concurrent runs, and a regression test of it may pass.
    pub replays_failed: usize,
    /// Smaller schedules that failed while shrinking but passed every replay one run at a
    /// time, so were set aside (smallest first; indices into [`schedule`](Self::schedule)):
    /// [`shrunk`](Self::shrunk) is the smallest whose replay failed. Worth a try under load
    /// (`INFORMER_CHAOS_SEED=<seed>:<steps>` with `INFORMER_CHAOS_JOBS`).
    pub set_aside: Vec<Vec<usize>>,
    /// The trace of the last failing run (of the shrunk schedule).
    pub trace: Vec<TraceEvent>,
    /// Whether the schedule was written out ([`Chaos::scenario`](super::Chaos::scenario)),
    /// not generated from [`seed`](Self::seed) (then 0).
    pub scenario: bool,
}

impl Report {
    /// How many trace lines `Display` prints (the last ones), unless
    /// `INFORMER_CHAOS_TRACE_LINES` says otherwise.
    const TRACE_LINES: usize = 80;

    fn trace_lines() -> usize {
        std::env::var("INFORMER_CHAOS_TRACE_LINES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(Self::TRACE_LINES)
    }

    /// The environment variable setting that replays the shrunk schedule:
    /// `INFORMER_CHAOS_SEED=<seed>:<step>,<step>,...`.
    ///
    /// ```
    /// # fn demo(report: informer_testing::chaos::Report) {
    /// println!("{}", report.replay());
    /// # }
    /// ```
    ///
    /// For a [`scenario`](Self::scenario), which has no seed: rerun the test.
    pub fn replay(&self) -> String {
        if self.scenario {
            return "rerun the test (a scenario runs its own schedule)".to_string();
        }
        let steps: Vec<String> = self.shrunk.iter().map(|(i, _)| i.to_string()).collect();
        format!("INFORMER_CHAOS_SEED={}:{}", self.seed, steps.join(","))
    }

    /// ` cargo test -p <package> --test <binary> -- --exact <test>`: how to build and run the
    /// failing test alone, when known.
    fn alone(&self) -> String {
        let Some(test) = &self.test else {
            return String::new();
        };
        let ignored = if self.run_ignored {
            " --include-ignored"
        } else {
            ""
        };
        match &self.cargo_target {
            Some(target) => format!(" cargo test {target} -- --exact {test}{ignored}"),
            None => format!(" cargo test -- --exact {test}{ignored}"),
        }
    }
}

impl Report {
    /// The shrunk schedule as Rust code: a call of
    /// [`Chaos::scenario`](super::Chaos::scenario) to paste into a regression test (with
    /// `use informer_testing::chaos::{RequestClass, Step, WorldStep};` and
    /// `use std::time::Duration;`).
    ///
    /// ```
    /// # fn demo(report: informer_testing::chaos::Report) {
    /// println!("{}", report.scenario_code());
    /// # }
    /// ```
    pub fn scenario_code(&self) -> String {
        let mut code = String::from(".scenario([\n");
        for (_, step) in &self.shrunk {
            code.push_str("    ");
            code.push_str(&step.code());
            code.push_str(",\n");
        }
        code.push_str("])");
        code
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.scenario {
            writeln!(f, "chaos test {:?} failed on its scenario", self.name)?;
            writeln!(f, "failure: {}", self.failure)?;
        } else {
            writeln!(
                f,
                "chaos test {:?} failed on seed {} ({} seeds run)",
                self.name, self.seed, self.seeds_run
            )?;
            writeln!(f, "failure: {}", self.failure)?;
            writeln!(
                f,
                "replay the seed:            INFORMER_CHAOS_SEED={}{}",
                self.seed,
                self.alone()
            )?;
            writeln!(
                f,
                "replay the shrunk schedule: {}{}",
                self.replay(),
                self.alone()
            )?;
            writeln!(
                f,
                "  (runs are timed by the clock, not replayed exactly: a schedule that failed may pass a run; while shrinking, each candidate had up to {} runs to fail, so run a replay more than once)",
                self.attempts
            )?;
        }
        let budget = if self.shrink_budget_exhausted {
            ", stopped at the budget"
        } else {
            ""
        };
        writeln!(
            f,
            "shrunk schedule: {} of {} steps ({} runs{budget}):",
            self.shrunk.len(),
            self.schedule.len(),
            self.shrink_runs
        )?;
        for (index, step) in &self.shrunk {
            writeln!(f, "  {index:>3}. {step}")?;
        }
        if self.replays > 0 {
            if self.replays_failed > 0 {
                writeln!(
                    f,
                    "  (replayed one run at a time, it failed on replay {})",
                    self.replays
                )?;
            } else {
                writeln!(
                    f,
                    "  (replayed one run at a time, it passed {} replays, and so did every larger schedule shrinking took: the failure is rare or needs the load of concurrent runs, so a regression test of it may pass)",
                    self.replays
                )?;
            }
            if let Some(smallest) = self.set_aside.first() {
                let steps: Vec<String> = smallest.iter().map(usize::to_string).collect();
                writeln!(
                    f,
                    "  ({} smaller schedule{} failed while shrinking, under the load of concurrent runs, but passed every replay one run at a time; the smallest: INFORMER_CHAOS_SEED={}:{})",
                    self.set_aside.len(),
                    if self.set_aside.len() == 1 { "" } else { "s" },
                    self.seed,
                    steps.join(","),
                )?;
            }
        }
        writeln!(
            f,
            "the shrunk schedule as a scenario, for a regression test (in place of the seeds, on the same builder):"
        )?;
        writeln!(
            f,
            "  // use informer::testing::chaos::{{RequestClass, Step, WorldStep}}; use std::time::Duration;"
        )?;
        for line in self.scenario_code().lines() {
            writeln!(f, "  {line}")?;
        }
        let lines = Self::trace_lines();
        let skipped = self.trace.len().saturating_sub(lines);
        writeln!(
            f,
            "trace of the last failing run ({} events{}):",
            self.trace.len(),
            if skipped > 0 {
                format!(", the last {lines}")
            } else {
                String::new()
            }
        )?;
        for event in &self.trace[skipped..] {
            writeln!(f, "  {event}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Report {}

/// What a passing chaos test did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// The test's name.
    pub name: String,
    /// The seeds that ran, in the order they finished.
    pub seeds: Vec<u64>,
    /// The steps of all their schedules, by kind (`world`, `crash`, `watch delay`, ...).
    pub steps: Vec<(&'static str, usize)>,
    /// The wall time of the whole test.
    pub elapsed: Duration,
    /// Whether it ran a [`scenario`](super::Chaos::scenario) (no seeds) rather than seeds.
    pub scenario: bool,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        if self.scenario {
            return write!(
                f,
                "chaos test {:?}: its scenario passed in {:.1}s ({})",
                self.name,
                self.elapsed.as_secs_f64(),
                steps.join(", ")
            );
        }
        write!(
            f,
            "chaos test {:?}: {} seeds passed in {:.1}s ({})",
            self.name,
            self.seeds.len(),
            self.elapsed.as_secs_f64(),
            steps.join(", ")
        )
    }
}
