//! Workloads I1 and M1 of `benches/workloads/WORKLOADS.md`, and I1 end to end over HTTP,
//! side by side with client-go v0.36.3 and kube-runtime 5.0.
//!
//! Every measurement runs in a fresh process (this binary re-executed with
//! `INFORMER_BENCH_JOB=<job>`, or client-go's harness), the implementations interleaved run
//! by run (so that a busy moment of the shared machine falls on all of them); the parent
//! prints each table with medians, ranges, ratios and the machine's load average. Then
//! criterion measures a reduced I1 in-process (`cargo bench --bench informer -- <filter>`).
//!
//! client-go runs beside when `INFORMER_BENCH_CLIENT_GO` names its harness binary
//! (`../shared/bench/client-go`: its README says how to build it offline); it reads the same
//! pods (`target/bench-data/pods-100000.jsonl`, from `benches/workloads/gen_pods.py`).
//! I1 against the real API server runs when `INFORMER_TEST_ASSETS` names its binaries (see
//! the README's "Tests against a real API server"). `INFORMER_BENCH_ROUNDS` sets the number
//! of interleaved rounds (default 5 for I1 prebuilt, 3 for the rest).
//!
//! # I1: informer pipeline in memory
//! A memory-backed `ListerWatcher`: a list of the first 10,000 pods (resourceVersion
//! 10000), then 200,000 watch events (event `j`: pod `j % 10000` MODIFIED with
//! resourceVersion `10000 + j` and label `rev=<j>`; every 100th a DELETED of it, followed
//! by an ADDED). Two indexes (namespace, `spec.nodeName`), three handlers: two count, the
//! third `add`s the object's key to a rate-limited workqueue (one `add` per notification)
//! drained by 2 workers that look the key up in the cache (`get`, `forget`, `done`). Timing
//! runs from before the informer starts until every handler has seen every notification and
//! the queue is drained; the rate is the 200,000 watch events over that time.
//!
//! - **prebuilt**: every object is decoded from its JSON line before timing (this project
//!   with its `JsonDecoder`, kube-runtime with `serde_json`; not cloned) and stays alive until
//!   timing ends (this project's source hands out `Arc` clones of a list that lives until
//!   then; kube-runtime's objects are kept by its first counting job), so neither decoding
//!   nor freeing is timed, and nothing is copied while timing.
//! - **on the fly**: each event's line is rendered from a per-pod template as it is sent and
//!   decoded as each client decodes: this project through `BodyDecoder` (what
//!   `KubeListerWatcher` does with a response body: on the decode pool, beside the
//!   informer), kube-runtime with `serde_json` inline in its stream. The list is a list
//!   response assembled from the lines as it is sent. The "source alone" rows time rendering
//!   and decoding the 200,000 events on one thread, without an informer: the decoder alone.
//!   It drops each object right after decoding it, so its frees are of hot memory and its
//!   next allocations reuse that memory. A pipeline cannot: it keeps each pod's object in its
//!   cache until the next event of that pod replaces it, 10,000 events later, by when the
//!   object (~37 KB in ~190 allocations) is cold. The row "keeping each pod's last object"
//!   is the decoder alone with that memory pattern, still on one thread and without an
//!   informer: what the cache's memory costs the decoder.
//!
//! kube-runtime's closest equivalent is what `Controller::new` builds: `reflector` into a
//! store, its items counted inline and turned into `ReconcileRequest`s for
//! `kube::runtime::applier` with a concurrency of 2 (each reconcile on a spawned task). It has
//! no secondary indexes and no per-handler buffers, which flatters it.
//!
//! # I1 end to end
//! The same pipelines through `kube::Client` against the in-process `TestApiServer` (10,000
//! pods listed, then 20,000 events written straight to its store) and against a real API
//! server (`EnvTest`; 2,000 `PodLike` custom resources holding the workload's pods, then
//! 10,000 writes through its API by 8 writers). Reported: watch events per second from the
//! writers' start until every handler has seen every event and the queue is drained.
//!
//! # M1: memory per cached object
//! 100,000 pods listed (no watch), the list response assembled from the JSON lines as it is
//! sent (the lines are in memory before and after). Reported: resident memory after sync
//! minus before the informer started, over 100,000; the time from start to synced (decoding
//! included); the process's peak resident memory (the lines included, as in client-go's
//! harness). For this project's default store with full pods, a `CompactStore` of full pods
//! (what derived controllers cache by default), and a `PodView` (a projection: name,
//! namespace, resource version, uid and owner references of the metadata, `spec.nodeName`,
//! `status.phase`, `status.podIP`), with and without managed fields.
//!
//! Before resident memory is read, mimalloc gives every free page back to the OS
//! (`mi_collect(true)`), so that it is what is live; while timing, it keeps its defaults. The
//! global allocator is mimalloc; every pipeline runs on a multi-threaded tokio runtime with 2
//! workers (`INFORMER_BENCH_RUNTIME=current_thread` for one thread). The process opts out of
//! transparent huge pages, which mimalloc asks for and Go's runtime (client-go's side) does
//! not: where the kernel's THP `defrag` is `madvise`, each huge page's first touch compacts
//! memory while the thread waits, which made the runs that fill fresh memory both slower and
//! erratic here (M1's sync of full Pods took 1.2–6.3 s with huge pages, 1.8–2.0 s without;
//! I1 on the fly's list phase 0.41–0.80 s against 0.19 s). `INFORMER_BENCH_THP=on` keeps them.
//!
//! # Profiling
//! Run one job under `perf` with only the timed part recorded:
//! `mkfifo /tmp/ctl; INFORMER_BENCH_PERF_CTL=/tmp/ctl INFORMER_BENCH_JOB=i1-ours-prebuilt
//! perf record --control fifo:/tmp/ctl -D -1 -g target/release/deps/informer-<hash>`.
//! Jobs: `i1-{ours,kube}-{prebuilt,onthefly}`, `i1-ours-onthefly-{nomf,compact}`,
//! `i1-ours-onthefly-view`, `i1source-{ours,kube,pool,cached}`, `i1source-ours-{nomf,view}`,
//! `e2e-{ours,kube}`, `e2e-real-{ours,kube}`, `m1-{ours,compact,view,kube}-{mf,nomf}`.
//! Without hardware counters (or on a shared machine), count instructions of the timed part
//! with callgrind on fewer events:
//! `INFORMER_BENCH_CALLGRIND=1 INFORMER_BENCH_EVENTS=20000 INFORMER_BENCH_JOB=i1-ours-prebuilt
//! valgrind --tool=callgrind --instr-atstart=no target/release/deps/informer-<hash>`.

#[path = "../support/mod.rs"]
mod support;

mod e2e;
mod kube_side;
mod m1;
mod ours;
mod report;
mod workload;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use futures::StreamExt;
use informer::lister_watcher::WatchEvent;
use informer_core::Indexer;
use informer_runtime::compact_store::CompactStore;
use informer_runtime::lister_watcher::{BodyDecoder, JsonDecoder};
use k8s_openapi::api::core::v1::Pod;
use tokio::runtime::Runtime;

use report::{Row, Runs, Unit, table};
use workload::{EVENTS, Kind, LISTED, M1_PODS, Template, event};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The child process's job, when set.
const JOB_VAR: &str = "INFORMER_BENCH_JOB";
/// For profiling a child job: the number of I1 watch events (instead of [`EVENTS`]).
const EVENTS_VAR: &str = "INFORMER_BENCH_EVENTS";
/// The number of interleaved rounds of each side-by-side measurement.
const ROUNDS_VAR: &str = "INFORMER_BENCH_ROUNDS";
/// client-go's harness binary.
const CLIENT_GO_VAR: &str = "INFORMER_BENCH_CLIENT_GO";
/// For profiling: the control FIFO of `perf record --control fifo:<path> -D -1`.
const PERF_CTL_VAR: &str = "INFORMER_BENCH_PERF_CTL";
/// For profiling: set when the job runs under callgrind (see [`perf_control`]).
const CALLGRIND_VAR: &str = "INFORMER_BENCH_CALLGRIND";

// ---------- helpers shared by the jobs ----------

/// Sends `command` to `perf record`'s control FIFO if [`PERF_CTL_VAR`] names one; under
/// `valgrind --tool=callgrind --instr-atstart=no` with [`CALLGRIND_VAR`] set, switches
/// callgrind's instrumentation on or off instead.
pub fn perf_control(command: &str) {
    if let Some(path) = std::env::var_os(PERF_CTL_VAR) {
        std::fs::write(path, format!("{command}\n")).expect("write to perf's control FIFO");
    }
    if std::env::var_os(CALLGRIND_VAR).is_some() {
        let on = if command == "enable" { "on" } else { "off" };
        let status = Command::new("callgrind_control")
            .args(["-i", on, &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .expect("run callgrind_control");
        assert!(status.success(), "callgrind_control -i {on} failed");
    }
}

/// A whole number from the environment variable `var`, if set.
fn env_usize(var: &str) -> Option<usize> {
    let value = std::env::var(var).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{var}={value} is not a number")),
    )
}

/// The runtime every pipeline runs on: multi-threaded with 2 workers (the machine's cores),
/// or, with `INFORMER_BENCH_RUNTIME=current_thread`, one thread.
fn runtime() -> Runtime {
    if std::env::var("INFORMER_BENCH_RUNTIME").is_ok_and(|v| v == "current_thread") {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`).
pub fn proc_status_bytes(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| kib * 1024.0)
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Resets the process's peak resident memory (`VmHWM`) to what is resident now (Linux).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

#[allow(
    unsafe_code,
    reason = "a call into mimalloc, the global allocator (see below)"
)]
mod mimalloc_collect {
    unsafe extern "C" {
        /// mimalloc's `mi_collect`: frees what can be freed and, with `force`, gives free
        /// pages back to the OS at once (linked in with mimalloc, the global allocator).
        fn mi_collect(force: bool);
    }

    /// Gives the memory freed so far back to the OS.
    pub fn collect() {
        // SAFETY: mi_collect takes no pointers and may be called from any thread at any
        // time; it only walks mimalloc's own heaps.
        unsafe { mi_collect(true) }
    }
}

/// Set to `on` to leave transparent huge pages as mimalloc asks for them (see
/// [`no_transparent_huge_pages`]).
const THP_VAR: &str = "INFORMER_BENCH_THP";

/// Opts the process out of transparent huge pages, unless [`THP_VAR`] is `on`.
///
/// mimalloc asks for huge pages (`MADV_HUGEPAGE`) on all its memory; Go's runtime, and so
/// client-go's harness, does not. Where the kernel's THP `defrag` setting is `madvise` (this
/// machine's), each first touch of such a huge page compacts memory while the thread waits:
/// fresh memory is then faulted in at 0.4–0.8 GB/s here, against 2.4–3 GB/s in 4 KiB pages.
/// With this option, both sides get the pages the operating system gives by default.
#[allow(
    unsafe_code,
    reason = "prctl(2), to opt the process out of transparent huge pages"
)]
fn no_transparent_huge_pages() {
    if std::env::var(THP_VAR).is_ok_and(|v| v == "on") {
        return;
    }
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc != 0 {
        eprintln!(
            "could not opt out of transparent huge pages: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Lets the allocator return what was just freed before memory is read: resident memory is
/// then what is live (plus fragmentation), not what was freed but not yet given back.
pub fn settle() {
    mimalloc_collect::collect();
    std::thread::sleep(Duration::from_millis(300));
    mimalloc_collect::collect();
}

/// A result line for the parent.
pub fn emit(name: &str, value: f64) {
    println!("@ {name} {value}");
}

// ---------- I1 jobs ----------

/// Decodes `n` items on two threads (before timing: this only shortens the run).
fn decode_parallel<T: Send>(n: usize, decode: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let half = n / 2;
    let (mut first, second) = std::thread::scope(|s| {
        let second = s.spawn(|| (half..n).map(&decode).collect::<Vec<_>>());
        (
            (0..half).map(&decode).collect::<Vec<_>>(),
            second.join().expect("decoding thread"),
        )
    });
    first.extend(second);
    first
}

/// Event `j`'s object decoded from its line by `decode`.
fn event_object<T>(
    templates: &[Template],
    j: usize,
    decode: impl FnOnce(&mut String) -> WatchEvent<T>,
) -> (Kind, T) {
    let (kind, p) = event(j, LISTED);
    let mut line = templates[p].render(kind, j, LISTED);
    match decode(&mut line) {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => (kind, o),
        _ => unreachable!("the templates render objects"),
    }
}

fn library_decode<T: serde::de::DeserializeOwned>(
    decoder: &mut JsonDecoder,
    line: &mut String,
) -> T {
    // SAFETY-free: decode a copy of the bytes (the decoder works in place).
    let mut bytes = std::mem::take(line).into_bytes();
    decoder.decode(&mut bytes).expect("valid JSON")
}

/// `i1-<ours|kube>-<prebuilt|onthefly>`, `i1-ours-onthefly-nomf` (managed fields skipped
/// while decoding), `i1-ours-onthefly-compact` (that, cached in a `CompactStore`: what
/// derived controllers have by default) and `i1-ours-onthefly-view` (each pod decoded into
/// the M1 projection, [`m1::PodView`]): one run.
fn i1_job(rt: &Runtime, name: &str) {
    if name == "i1-ours-onthefly-view" {
        return i1_view_job(rt);
    }
    let prebuilt = name.ends_with("prebuilt");
    let ours = name.starts_with("i1-ours");
    // `-compact`: the derived controllers' default cache, managed fields skipped.
    let compact = name.ends_with("-compact");
    let skip_managed_fields = name.ends_with("-nomf") || compact;
    let events_n = env_usize(EVENTS_VAR).unwrap_or(EVENTS);
    let lines = Arc::new(support::pod_lines(LISTED));
    let templates = Template::all(&lines);
    let keep: Box<dyn std::any::Any>;
    let run = if ours {
        use ours::{ListSource, MemorySource, WatchSource};
        let decoder = BodyDecoder::new().skip_managed_fields(skip_managed_fields);
        let (list, watch) = if prebuilt {
            let list = decode_parallel(LISTED, |i| {
                let mut bytes = lines[i].clone().into_bytes();
                Arc::new(JsonDecoder::new().decode::<Pod>(&mut bytes).expect("valid"))
            });
            let events = decode_parallel(events_n, |j| {
                let (kind, pod) = event_object(&templates, j, |line| {
                    library_decode(&mut JsonDecoder::new(), line)
                });
                (kind, Arc::new(pod))
            });
            (
                ListSource::Prebuilt(Arc::new(list)),
                WatchSource::Prebuilt(Arc::new(events)),
            )
        } else {
            (
                ListSource::Lines(lines.clone(), decoder),
                WatchSource::Lines {
                    templates: templates.clone(),
                    events: events_n,
                    decoder,
                },
            )
        };
        let lw = Arc::new(MemorySource::new(list, Some(watch), LISTED));
        keep = Box::new(lw.clone());
        settle();
        emit("data_rss", proc_status_bytes("VmRSS"));
        reset_peak();
        let store = compact.then(|| Arc::new(CompactStore::<Pod>::new()) as Arc<dyn Indexer<Pod>>);
        rt.block_on(ours::pipeline(
            lw,
            store,
            LISTED,
            events_n,
            ours::pod_node,
            || {},
        ))
    } else {
        use kube_side::{Events, Listed};
        let (list, events) = if prebuilt {
            let list = kube_side::decode_pods(&lines);
            let events = decode_parallel(events_n, |j| {
                event_object(&templates, j, |line| {
                    serde_json::from_str(line).expect("valid JSON")
                })
            });
            (Listed::Prebuilt(list), Events::Prebuilt(events))
        } else {
            (
                Listed::Lines(lines.clone()),
                Events::OnTheFly(templates.clone(), events_n, LISTED),
            )
        };
        keep = Box::new(());
        settle();
        emit("data_rss", proc_status_bytes("VmRSS"));
        reset_peak();
        let source = kube_side::source::<Pod>(list, events);
        rt.block_on(kube_side::pipeline(
            source,
            LISTED,
            events_n,
            prebuilt,
            || {},
        ))
    };
    emit("listed_seconds", run.listed.as_secs_f64());
    emit("rate", support::rate(events_n, run.total));
    emit("run_peak_rss", proc_status_bytes("VmHWM"));
    drop(keep);
}

/// I1 on the fly with a view: the pipeline caches [`m1::PodView`]s, decoded straight from
/// each event's line.
fn i1_view_job(rt: &Runtime) {
    use ours::{ListSource, MemorySource, WatchSource};
    let events_n = env_usize(EVENTS_VAR).unwrap_or(EVENTS);
    let lines = Arc::new(support::pod_lines(LISTED));
    let templates = Template::all(&lines);
    let decoder = BodyDecoder::new();
    let lw = Arc::new(MemorySource::<m1::PodView>::new(
        ListSource::Lines(lines.clone(), decoder),
        Some(WatchSource::Lines {
            templates,
            events: events_n,
            decoder,
        }),
        LISTED,
    ));
    settle();
    emit("data_rss", proc_status_bytes("VmRSS"));
    reset_peak();
    let run = rt.block_on(ours::pipeline(
        lw,
        None,
        LISTED,
        events_n,
        m1::view_node,
        || {},
    ));
    emit("listed_seconds", run.listed.as_secs_f64());
    emit("rate", support::rate(events_n, run.total));
    emit("run_peak_rss", proc_status_bytes("VmHWM"));
}

/// `i1source-<ours|kube|pool|cached>`, `i1source-ours-nomf`, `i1source-ours-view`: the
/// on-the-fly source alone, no informer: render and decode every event on one thread
/// (`pool`: through `BodyDecoder`, on the decode pool; `cached`: keeping each pod's last
/// object until the next event of that pod; `view`: into [`m1::PodView`]).
fn i1source_job(rt: &Runtime, name: &str) {
    let events_n = env_usize(EVENTS_VAR).unwrap_or(EVENTS);
    let lines = support::pod_lines(LISTED);
    let templates = Template::all(&lines);
    let start = Instant::now();
    match name {
        "i1source-ours" | "i1source-ours-nomf" => {
            let mut decoder = JsonDecoder::new().skip_managed_fields(name.ends_with("-nomf"));
            for j in 0..events_n {
                std::hint::black_box(event_object::<Pod>(&templates, j, |line| {
                    library_decode(&mut decoder, line)
                }));
            }
        }
        "i1source-ours-view" => {
            let mut decoder = JsonDecoder::new();
            for j in 0..events_n {
                std::hint::black_box(event_object::<m1::PodView>(&templates, j, |line| {
                    library_decode(&mut decoder, line)
                }));
            }
        }
        "i1source-cached" => {
            // The decoder with a cache's memory: each pod's last object kept until the next
            // event of that pod replaces it, so objects are freed cold (as in the pipeline),
            // not right after decoding.
            let mut decoder = JsonDecoder::new();
            let mut cache: Vec<Option<Pod>> = (0..LISTED).map(|_| None).collect();
            for j in 0..events_n {
                let (_, p) = event(j, LISTED);
                let (_, o) =
                    event_object::<Pod>(&templates, j, |line| library_decode(&mut decoder, line));
                cache[p] = Some(o);
            }
        }
        "i1source-kube" => {
            for j in 0..events_n {
                std::hint::black_box(event_object::<Pod>(&templates, j, |line| {
                    serde_json::from_str(line).expect("valid JSON")
                }));
            }
        }
        "i1source-pool" => {
            let n = rt.block_on(
                BodyDecoder::new()
                    .watch::<Pod>(workload::watch_body(templates, events_n, LISTED))
                    .count(),
            );
            assert_eq!(n, events_n);
        }
        _ => panic!("unknown {JOB_VAR} {name:?}"),
    }
    emit("rate", support::rate(events_n, start.elapsed()));
}

fn job(name: &str) {
    let rt = runtime();
    match name {
        _ if name.starts_with("i1-") => i1_job(&rt, name),
        _ if name.starts_with("i1source-") => i1source_job(&rt, name),
        _ if name.starts_with("e2e-") => e2e::job(&rt, name),
        _ if name.starts_with("m1-") => m1::job(&rt, name),
        _ => panic!("unknown {JOB_VAR} {name:?}"),
    }
}

// ---------- the side-by-side pass ----------

/// Runs `job` in a fresh child process and returns what it emitted.
fn child(job: &str) -> HashMap<String, f64> {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut command = Command::new(exe);
    command.env(JOB_VAR, job);
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run the bench binary as a child");
    assert!(
        output.status.success(),
        "child job {job} failed: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| {
            let mut parts = l.strip_prefix("@ ")?.split_whitespace();
            Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
        })
        .collect()
}

/// Runs client-go's harness with `args` (if [`CLIENT_GO_VAR`] names it) on the pods file,
/// and returns the numbers of the JSON line it prints (MiB figures also in bytes, as
/// `<name>_bytes`).
fn client_go(args: &[&str]) -> Option<HashMap<String, f64>> {
    let binary = std::env::var_os(CLIENT_GO_VAR)?;
    let pods = support::pods_file(M1_PODS);
    let output = Command::new(&binary)
        .args(args)
        .arg("--pods")
        .arg(&pods)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("run client-go's harness {binary:?}: {e}"));
    assert!(
        output.status.success(),
        "client-go's harness {args:?} failed: {}",
        output.status
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().rev().find(|l| l.starts_with('{'))?;
    let json: serde_json::Value = serde_json::from_str(line).expect("client-go prints JSON");
    let mut out = HashMap::new();
    for (k, v) in json.as_object()? {
        if let Some(n) = v.as_f64() {
            out.insert(k.clone(), n);
            if let Some(base) = k.strip_suffix("_mib") {
                out.insert(format!("{base}_bytes"), n * (1u64 << 20) as f64);
            }
        }
    }
    Some(out)
}

/// Runs each measurement `rounds` times, one after the other within a round, each in a fresh
/// process; returns each one's results.
fn interleaved<const N: usize>(
    rounds: usize,
    jobs: [&dyn Fn() -> Option<HashMap<String, f64>>; N],
) -> [Runs; N] {
    let mut out: [Runs; N] = std::array::from_fn(|_| Runs::default());
    for _ in 0..rounds {
        for (runs, job) in out.iter_mut().zip(jobs.iter()) {
            if let Some(result) = job() {
                runs.0.push(result);
            }
        }
    }
    out
}

fn rounds(default: usize) -> usize {
    env_usize(ROUNDS_VAR).unwrap_or(default).max(1)
}

fn side_by_side() {
    println!("load average at start: {}", support::load_average());
    if std::env::var_os(CLIENT_GO_VAR).is_none() {
        println!("(client-go not measured: set {CLIENT_GO_VAR} to its harness binary)");
    }

    // I1 prebuilt.
    let [ours, cg, kube] = interleaved(
        rounds(5),
        [
            &|| Some(child("i1-ours-prebuilt")),
            &|| client_go(&["i1", "--prebuilt"]),
            &|| Some(child("i1-kube-prebuilt")),
        ],
    );
    let reference = (cg.median("watch_events_per_s"), kube.median("rate"));
    table(
        "I1 prebuilt: watch events/s through the pipeline (10,000 listed + 200,000 events, 2 indexes, 3 handlers, queue + 2 workers)",
        Unit::Rate,
        &[
            Row::of("informer", &ours, "rate"),
            Row::of("client-go v0.36.3", &cg, "watch_events_per_s"),
            Row::of("kube-runtime 5.0", &kube, "rate"),
        ],
        reference.0,
        reference.1,
    );
    table(
        "I1 prebuilt: peak resident memory of the timed run",
        Unit::Bytes,
        &[
            Row::of("informer", &ours, "run_peak_rss"),
            Row::of("client-go v0.36.3", &cg, "run_peak_rss_bytes"),
            Row::of("kube-runtime 5.0", &kube, "run_peak_rss"),
        ],
        cg.median("run_peak_rss_bytes"),
        kube.median("run_peak_rss"),
    );

    // I1 on the fly, and the decoder alone.
    let [
        ours,
        cg,
        kube,
        ours_source,
        cg_source,
        kube_source,
        pool,
        ours_nomf,
        source_nomf,
        cached,
        ours_view,
        source_view,
        ours_compact,
    ] = interleaved(
        rounds(3),
        [
            &|| Some(child("i1-ours-onthefly")),
            &|| client_go(&["i1", "--onthefly"]),
            &|| Some(child("i1-kube-onthefly")),
            &|| Some(child("i1source-ours")),
            &|| client_go(&["i1source"]),
            &|| Some(child("i1source-kube")),
            &|| Some(child("i1source-pool")),
            &|| Some(child("i1-ours-onthefly-nomf")),
            &|| Some(child("i1source-ours-nomf")),
            &|| Some(child("i1source-cached")),
            &|| Some(child("i1-ours-onthefly-view")),
            &|| Some(child("i1source-ours-view")),
            &|| Some(child("i1-ours-onthefly-compact")),
        ],
    );
    table(
        "I1 on the fly: watch events/s, each event decoded as it is sent",
        Unit::Rate,
        &[
            Row::of("informer", &ours, "rate"),
            Row::of(
                "informer, managed fields skipped (as derived controllers)",
                &ours_nomf,
                "rate",
            ),
            Row::of(
                "informer, managed fields skipped, CompactStore (derived controllers' default)",
                &ours_compact,
                "rate",
            ),
            Row::of(
                "informer, a view of 7 fields (m1::PodView)",
                &ours_view,
                "rate",
            ),
            Row::of("client-go v0.36.3", &cg, "watch_events_per_s"),
            Row::of("kube-runtime 5.0", &kube, "rate"),
        ],
        cg.median("watch_events_per_s"),
        kube.median("rate"),
    );
    table(
        "I1 on the fly: the source alone (render + decode 200,000 events on one thread, no informer)",
        Unit::Rate,
        &[
            Row::of("informer's decoder (JsonDecoder)", &ours_source, "rate"),
            Row::of(
                "client-go v0.36.3 (sigs.k8s.io/json)",
                &cg_source,
                "events_per_s",
            ),
            Row::of("kube-runtime 5.0 (serde_json)", &kube_source, "rate"),
            Row::of(
                "informer's decoder on the decode pool (BodyDecoder)",
                &pool,
                "rate",
            ),
            Row::of(
                "informer's decoder keeping each pod's last object (a cache's memory)",
                &cached,
                "rate",
            ),
            Row::of("informer's decoder into the view", &source_view, "rate"),
        ],
        cg_source.median("events_per_s"),
        kube_source.median("rate"),
    );
    for (what, pipeline, alone) in [
        ("", &ours, &ours_source),
        (", managed fields skipped", &ours_nomf, &source_nomf),
        (
            ", managed fields skipped, CompactStore",
            &ours_compact,
            &source_nomf,
        ),
        (", a view", &ours_view, &source_view),
    ] {
        if let (Some(pipeline), Some(alone)) = (pipeline.median("rate"), alone.median("rate")) {
            println!(
                "  informer on the fly / its decoder alone{what}: {:.0}% (goal: at least 90%)",
                100.0 * pipeline / alone
            );
        }
    }
    if let (Some(pipeline), Some(cached)) = (ours.median("rate"), cached.median("rate")) {
        println!(
            "  informer on the fly / its decoder keeping a cache's memory, one thread: {:.2}x",
            pipeline / cached
        );
    }

    // I1 end to end.
    let [ours, kube] = interleaved(
        rounds(3),
        [&|| Some(child("e2e-ours")), &|| Some(child("e2e-kube"))],
    );
    table(
        "I1 end to end, in-process TestApiServer over HTTP (10,000 pods listed, 20,000 watch events)",
        Unit::Rate,
        &[
            Row::of("informer", &ours, "rate"),
            Row::of("kube-runtime 5.0", &kube, "rate"),
        ],
        None,
        kube.median("rate"),
    );
    if std::env::var_os("INFORMER_TEST_ASSETS").is_some() {
        let [ours, kube] = interleaved(
            rounds(3),
            [
                &|| Some(child("e2e-real-ours")).filter(|r| !r.contains_key("skipped")),
                &|| Some(child("e2e-real-kube")).filter(|r| !r.contains_key("skipped")),
            ],
        );
        table(
            "I1 end to end, real API server (EnvTest: 2,000 PodLike custom resources listed, 10,000 writes by 8 writers)",
            Unit::Rate,
            &[
                Row::of("informer", &ours, "rate"),
                Row::of("kube-runtime 5.0", &kube, "rate"),
            ],
            None,
            kube.median("rate"),
        );
    } else {
        println!("\n(I1 against the real API server not measured: set INFORMER_TEST_ASSETS)");
    }

    // M1.
    for (label, mf, cg_args) in [
        ("with managedFields", "mf", &["m1"][..]),
        (
            "managedFields dropped",
            "nomf",
            &["m1", "--drop-managed-fields"][..],
        ),
    ] {
        let view_job = format!("m1-view-{mf}");
        let [ours, compact, view, cg, kube] = interleaved(
            rounds(3),
            [
                &|| Some(child(&format!("m1-ours-{mf}"))),
                &|| Some(child(&format!("m1-compact-{mf}"))),
                &|| (mf == "nomf").then(|| child(&view_job)),
                &|| client_go(cg_args),
                &|| Some(child(&format!("m1-kube-{mf}"))),
            ],
        );
        let rows = |key: &str, cg_key: &str| {
            [
                Row::of("informer, full Pods (ThreadSafeStore)", &ours, key),
                Row::of(
                    "informer, full Pods in a CompactStore (derived default)",
                    &compact,
                    key,
                ),
                Row::of("informer, PodView projection", &view, key),
                Row::of("client-go v0.36.3", &cg, cg_key),
                Row::of("kube-runtime 5.0", &kube, key),
            ]
        };
        table(
            &format!("M1 {label}: resident bytes per cached pod, 100,000 pods"),
            Unit::Bytes,
            &rows("bytes_per_object", "bytes_per_object"),
            cg.median("bytes_per_object"),
            kube.median("bytes_per_object"),
        );
        table(
            &format!("M1 {label}: time to sync 100,000 pods, decoding included"),
            Unit::Seconds,
            &rows("sync_s", "sync_s"),
            cg.median("sync_s"),
            kube.median("sync_s"),
        );
        table(
            &format!(
                "M1 {label}: peak resident memory of the process (the 479 MB of JSON lines included)"
            ),
            Unit::Bytes,
            &rows("peak_rss", "peak_rss_bytes"),
            cg.median("peak_rss_bytes"),
            kube.median("peak_rss"),
        );
        if let (Some(cold), Some(hot)) =
            (compact.median("cold_get_ns"), compact.median("hot_get_ns"))
        {
            println!(
                "  CompactStore reads: {:.1} µs for an object not in its hot cache, {:.0} ns for a hot one ({} encoded bytes per pod); ThreadSafeStore: {:.0} ns",
                cold / 1000.0,
                hot,
                compact
                    .median("encoded_bytes_per_object")
                    .unwrap_or_default()
                    .round(),
                ours.median("hot_get_ns").unwrap_or_default(),
            );
        }
    }
    println!("\nload average at the end: {}", support::load_average());
}

// ---------- criterion ----------

fn criterion_benches(c: &mut Criterion) {
    use ours::{ListSource, MemorySource, WatchSource};
    const CRITERION_EVENTS: usize = 20_000;
    let rt = runtime();
    let lines = support::pod_lines(LISTED);
    let templates = Template::all(&lines);
    let list: Arc<Vec<Arc<Pod>>> = Arc::new(
        lines
            .iter()
            .map(|l| Arc::new(serde_json::from_str(l).expect("valid")))
            .collect(),
    );
    let events: Arc<Vec<(Kind, Arc<Pod>)>> = Arc::new(decode_parallel(CRITERION_EVENTS, |j| {
        let (kind, pod) = event_object(&templates, j, |line| {
            library_decode(&mut JsonDecoder::new(), line)
        });
        (kind, Arc::new(pod))
    }));
    let mut group = c.benchmark_group("I1-reduced");
    group.sample_size(10);
    group.sampling_mode(criterion::SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.bench_function(
        format!("informer/{CRITERION_EVENTS}-events-prebuilt"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let lw = Arc::new(MemorySource::new(
                        ListSource::Prebuilt(list.clone()),
                        Some(WatchSource::Prebuilt(events.clone())),
                        LISTED,
                    ));
                    total += rt
                        .block_on(ours::pipeline(
                            lw,
                            None,
                            LISTED,
                            CRITERION_EVENTS,
                            ours::pod_node,
                            || {},
                        ))
                        .total;
                }
                total
            })
        },
    );
    group.finish();
}

fn main() {
    // Before anything is allocated in bulk; child jobs inherit it.
    no_transparent_huge_pages();
    if let Ok(name) = std::env::var(JOB_VAR) {
        job(&name);
        return;
    }
    side_by_side();
    let mut c = Criterion::default().configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
}
