//! The trybuild ui cases of every macro: each `tests/ui/*/pass/*.rs` compiles and runs, and
//! each `tests/ui/*/fail/*.rs` fails to compile with exactly its `.stderr` (checked on the
//! pinned toolchain of `rust-toolchain.toml`). `TRYBUILD=overwrite cargo test --test ui`
//! rewrites the `.stderr` files; `cargo test --test ui -- trybuild=<part of a path>` runs the
//! cases whose path contains it.
//!
//! A binary of its own without the test harness (`harness = false`), so that `main` can fix
//! the compiler flags of every build trybuild runs before any thread exists. trybuild builds
//! the cases' dependencies once without `--diagnostic-width=140` and then every case with it,
//! and cargo gives different flags different artifacts: every dependency (k8s-openapi, kube,
//! the in-process API server) was compiled twice, a minute of CI and a gigabyte of disk.
//! `CARGO_ENCODED_RUSTFLAGS` outranks the flags trybuild passes with `--config`, so with it
//! set to trybuild's own flags every build shares one set of artifacts.

use std::process::ExitCode;

/// The flags trybuild gives its builds (its `rustflags::toml`, with `--diagnostic-width=140`
/// as for the builds whose diagnostics it compares), `-C instrument-coverage` kept as it keeps
/// it.
fn trybuild_rustflags() -> Vec<&'static str> {
    let mut flags = vec!["--cfg", "trybuild", "--verbose", "-A", "dead_code"];
    let coverage = std::env::var("RUSTFLAGS").is_ok_and(|f| f.contains("-C instrument-coverage"));
    if coverage {
        flags.extend(["-C", "instrument-coverage"]);
    }
    flags.push("--diagnostic-width=140");
    flags
}

/// What the arguments libtest would take ask of the one test here, named `ui`.
enum Asked {
    Run,
    List,
    Nothing,
}

fn asked(args: &[String]) -> Asked {
    // Options of libtest that take a value: their value is not a name filter.
    const WITH_VALUE: [&str; 7] = [
        "--test-threads",
        "--skip",
        "--format",
        "--color",
        "--logfile",
        "--shuffle-seed",
        "-Z",
    ];
    let exact = args.iter().any(|a| a == "--exact");
    let ignored_only = args.iter().any(|a| a == "--ignored");
    let matches = |pattern: &str| {
        if exact {
            pattern == "ui"
        } else {
            "ui".contains(pattern)
        }
    };
    let mut filters = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            // Only ignored tests (listed or run), and this one is not.
            "--list" if ignored_only => return Asked::Nothing,
            "--list" => return Asked::List,
            "--ignored" => return Asked::Nothing,
            "--skip" => {
                if args.next().is_some_and(|p| matches(p)) {
                    return Asked::Nothing;
                }
            }
            a if WITH_VALUE.contains(&a) => {
                args.next();
            }
            a if a.starts_with('-') || a.starts_with("trybuild=") => {}
            filter => filters.push(filter),
        }
    }
    if filters.is_empty() || filters.iter().any(|f| matches(f)) {
        Asked::Run
    } else {
        Asked::Nothing
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match asked(&args) {
        Asked::List => {
            println!("ui: test");
            return ExitCode::SUCCESS;
        }
        // `--list --ignored` lists nothing (nextest asks it); a filtered-out run says so.
        Asked::Nothing if args.iter().any(|a| a == "--list") => return ExitCode::SUCCESS,
        Asked::Nothing => {
            println!("running 0 tests (ui filtered out)");
            return ExitCode::SUCCESS;
        }
        Asked::Run => {}
    }
    let flags = trybuild_rustflags().join("\x1f");
    #[allow(unsafe_code)]
    // SAFETY: `main` has not started a thread (there is no test harness in this binary), so
    // nothing reads the environment while it is written.
    unsafe {
        std::env::set_var("CARGO_ENCODED_RUSTFLAGS", flags);
    }
    let t = trybuild::TestCases::new();
    for macro_dir in ["controller", "indexer", "view"] {
        t.pass(format!("tests/ui/{macro_dir}/pass/*.rs"));
    }
    for macro_dir in ["controller", "indexer", "factory", "view"] {
        t.compile_fail(format!("tests/ui/{macro_dir}/fail/*.rs"));
    }
    // The cases run when `t` is dropped; a failing case panics there, failing the binary.
    drop(t);
    ExitCode::SUCCESS
}
