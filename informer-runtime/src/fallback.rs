//! Failures a controller must never keep silent: with no `tracing` subscriber installed,
//! they are printed on stderr as well (a library never installs a global subscriber behind
//! its user's back; this prints only while there is none).
//!
//! Used at the sites that report a controller failing: a reconcile that fails, panics or
//! times out, and caches that do not sync; by the manager for a task that fails; by the
//! factory for an informer stopped because its last handle was dropped while handlers
//! were registered. Every such site logs through `tracing` first;
//! [`report`] adds the stderr line when nothing would receive the event. Installing any
//! subscriber (even one that filters everything out) turns the fallback off.

use std::fmt;
use std::io::Write;
use std::sync::Once;

use tracing::subscriber::NoSubscriber;

/// Whether the current thread's (or the global) `tracing` dispatcher is the no-op one.
pub(crate) fn no_subscriber() -> bool {
    tracing::dispatcher::get_default(|dispatch| dispatch.is::<NoSubscriber>())
}

/// Prints `line` on stderr if no `tracing` subscriber is installed, with, the first time in
/// the process, a line saying why. Through `eprint!`, so that under `cargo test` the lines
/// are captured with the test's output (shown for a test that fails) instead of flooding
/// the terminal with the expected failures of passing tests (a chaos run's injected ones).
///
/// `eprint!` panics when stderr fails (a pipe whose reader is gone); nothing else could report
/// that, so the failure is ignored, as a direct write's would be.
pub(crate) fn report(line: fmt::Arguments<'_>) {
    if no_subscriber() {
        let mut text = Vec::new();
        write_line(&mut text, line, &HINT);
        let text = String::from_utf8_lossy(&text);
        let _ = std::panic::catch_unwind(|| eprint!("{text}"));
    }
}

static HINT: Once = Once::new();

/// What the first report of a process prints before its line.
pub(crate) const HINT_LINE: &str = "informer: no tracing subscriber is installed, so controller and task failures are printed here; install one (such as tracing_subscriber::fmt::init()) to see every log";

/// Writes `line` (prefixed) to `out`, and [`HINT_LINE`] first if `hint` has not run yet.
/// Errors writing to stderr are ignored: there is nowhere else to report them.
pub(crate) fn write_line(out: &mut dyn Write, line: fmt::Arguments<'_>, hint: &Once) {
    hint.call_once(|| {
        let _ = writeln!(out, "{HINT_LINE}");
    });
    let _ = writeln!(out, "informer: {line}");
}

#[cfg(test)]
mod tests;
