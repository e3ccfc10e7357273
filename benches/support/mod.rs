//! Shared by every benchmark: the workload data of `benches/workloads/WORKLOADS.md`, generated
//! by `benches/workloads/gen_pods.py` (never by anything else), and the side-by-side report.
#![allow(dead_code)] // each bench binary uses its own part of this module

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

/// The JSON lines of the first `count` pods, generated once into `target/bench-data/`.
pub fn pod_lines(count: usize) -> Vec<String> {
    let path = data_file(count);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines().map(str::to_owned).collect()
}

/// The first `count` pods, decoded.
pub fn pods(count: usize) -> Vec<Pod> {
    pod_lines(count)
        .iter()
        .map(|line| serde_json::from_str(line).expect("gen_pods.py writes valid pods"))
        .collect()
}

fn data_file(count: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target").join("bench-data");
    let path = dir.join(format!("pods-{count}.jsonl"));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(&dir).expect("create target/bench-data");
    // Deterministic: 100,000 pods are 479,124,938 bytes, md5 8f12d7be75a3d3a5dc931409f70c27bb.
    let generator = root.join("benches/workloads/gen_pods.py");
    let tmp = path.with_extension("tmp");
    let status = Command::new("python3")
        .arg(&generator)
        .arg("--count")
        .arg(count.to_string())
        .arg("--out")
        .arg(&tmp)
        .status()
        .expect("run python3 gen_pods.py");
    assert!(status.success(), "gen_pods.py failed");
    std::fs::rename(&tmp, &path).expect("move generated data into place");
    path
}

/// The node a pod runs on, as the workloads index it.
pub fn node_of(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect()
}

/// One line of the side-by-side report: a rate for each implementation and their ratio.
pub fn report(workload: &str, what: &str, ours: f64, theirs_name: &str, theirs: f64) {
    println!(
        "{workload:<4} {what:<40} informer {:>14}   {theirs_name} {:>14}   ratio {:>8.2}x",
        human(ours),
        human(theirs),
        ours / theirs
    );
}

/// A reference figure measured outside this run (quoted from the workload's issue).
pub fn quote(workload: &str, what: &str, ours: f64, reference_name: &str, reference: f64) {
    println!(
        "{workload:<4} {what:<40} informer {:>14}   {reference_name} {:>14}   ratio {:>8.2}x (reference figure, not measured in this run)",
        human(ours),
        human(reference),
        ours / reference
    );
}

/// Operations per second.
pub fn rate(ops: usize, elapsed: Duration) -> f64 {
    ops as f64 / elapsed.as_secs_f64()
}

/// A rate for people: `1.23 M/s`, `45.6 k/s`.
pub fn human(per_sec: f64) -> String {
    if per_sec >= 1e6 {
        format!("{:.2} M/s", per_sec / 1e6)
    } else if per_sec >= 1e3 {
        format!("{:.1} k/s", per_sec / 1e3)
    } else {
        format!("{per_sec:.1} /s")
    }
}

/// The median of `runs` timings of `f`.
pub fn median_of<F: FnMut() -> Duration>(runs: usize, mut f: F) -> Duration {
    let mut times: Vec<Duration> = (0..runs).map(|_| f()).collect();
    times.sort();
    times[times.len() / 2]
}

/// The path of the JSON lines of the first `count` pods (generated on first use), for a
/// harness that reads them itself.
pub fn pods_file(count: usize) -> PathBuf {
    data_file(count)
}

/// The machine's 1-minute load average (`/proc/loadavg`; NaN where there is none).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The median of `values` (the mean of the two middle ones for an even count); NaN if empty.
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The smallest and the largest of `values`.
pub fn range(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}
