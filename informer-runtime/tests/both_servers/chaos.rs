//! The seeded chaos test against both servers: a `SharedIndexInformer` over widgets, whose
//! connection goes through a [`Proxy`](super::server::Proxy), while random creates, updates
//! and deletes interleave with random faults: network outages (during which history may be
//! compacted), restarts of the API server and of its storage (the real server: the process
//! is killed and started again, etcd likewise), compaction and dropped connections.
//!
//! After the faults stop and the informer has caught up, the cache equals the server's state
//! exactly (no lost and no phantom objects), and every handler's notifications, replayed per
//! key, form a consistent history ending in that state.
//!
//! Three seeds run by default; `CHAOS_SEEDS=10` runs seeds 0..10, `CHAOS_SEED=7` seed 7 alone,
//! `CHAOS_STEPS=200` makes each longer (the same variables as the fake-only chaos test). Each
//! seed's objects carry a `seed` label, and its informer selects them, so that the seeds can
//! share one server.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use informer_core::ObjectKey;
use informer_runtime::informer::FifoKind;
use informer_runtime::reflector::BackoffConfig;
use informer_runtime::{KubeListerWatcher, ReflectorConfig, SharedIndexInformer};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::core::DynamicObject;
use serde_json::json;

use super::recorder::{Recorder, Running, key_of};
use super::server::{Options, Server, on_both_servers, rv_of, widget, widgets};

const DEFAULT_SEEDS: std::ops::Range<u64> = 0..3;
const DEFAULT_STEPS: usize = 60;
const NAMES: u64 = 10;
/// How long the informer and its handlers get to catch up after the last fault.
const CATCH_UP: Duration = Duration::from_secs(60);
/// How long one write may keep failing (the server being down) before the test gives up.
const WRITE_PATIENCE: Duration = Duration::from_secs(90);

/// SplitMix64: the same sequence on every platform and version.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => panic!("{name} must be a number, not {value:?}"),
    }
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = env_number("CHAOS_SEED") {
        return vec![seed];
    }
    env_number("CHAOS_SEEDS").map_or_else(|| DEFAULT_SEEDS.collect(), |n| (0..n).collect())
}

/// The errors a write meets while the server is down or catching up; anything else fails.
fn retryable(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => matches!(status.code, 429 | 500 | 502 | 503 | 504),
        _ => true,
    }
}

fn code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Applies one write until the server takes it. An earlier attempt whose answer was lost may
/// have succeeded, so a create meeting 409 and a delete meeting 404 are done.
struct Writer {
    api: Api<DynamicObject>,
    seed: String,
}

impl Writer {
    /// Runs `attempt` until it says it is done (`Ok(true)`); `Ok(false)` and retryable errors
    /// mean "again".
    async fn retry(&self, what: &str, mut attempt: impl AsyncFnMut() -> Result<bool, kube::Error>) {
        let deadline = tokio::time::Instant::now() + WRITE_PATIENCE;
        loop {
            match attempt().await {
                Ok(true) => return,
                Ok(false) => {}
                Err(err) if retryable(&err) => {}
                Err(err) => panic!("chaos: {what} failed: {err}"),
            }
            if tokio::time::Instant::now() >= deadline {
                panic!("chaos: {what} did not succeed within {WRITE_PATIENCE:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn create(&self, name: &str, value: u64) {
        let object = widget(name, &[("seed", &self.seed)], value);
        self.retry(&format!("create {name}"), async || {
            match self.api.create(&PostParams::default(), &object).await {
                Ok(_) => Ok(true),
                Err(err) if code(&err) == Some(409) => Ok(true),
                Err(err) => Err(err),
            }
        })
        .await;
    }

    async fn update(&self, name: &str, value: u64) {
        self.retry(&format!("update {name}"), async || {
            let mut current = self.api.get(name).await?;
            current.data["spec"]["value"] = json!(value);
            match self
                .api
                .replace(name, &PostParams::default(), &current)
                .await
            {
                Ok(_) => Ok(true),
                // Changed between the get and the replace (an earlier attempt landed): again.
                Err(err) if code(&err) == Some(409) => Ok(false),
                Err(err) => Err(err),
            }
        })
        .await;
    }

    async fn delete(&self, name: &str) {
        self.retry(&format!("delete {name}"), async || {
            match self.api.delete(name, &DeleteParams::default()).await {
                Ok(_) => Ok(true),
                Err(err) if code(&err) == Some(404) => Ok(true),
                Err(err) => Err(err),
            }
        })
        .await;
    }
}

/// One random create, update or delete of this seed's objects; `present` is what the server
/// holds (every write lands, so it stays exact).
async fn random_write(writer: &Writer, present: &mut HashSet<String>, rng: &mut Rng) {
    let name = format!("{}-w{}", writer.seed, rng.below(NAMES));
    let value = rng.next_u64() % 1_000_000;
    if present.insert(name.clone()) {
        writer.create(&name, value).await;
    } else if rng.chance(30) {
        writer.delete(&name).await;
        present.remove(&name);
    } else {
        writer.update(&name, value).await;
    }
}

/// One random fault; returns what it was, for the failure message.
async fn random_fault(
    server: &Server,
    proxy: &super::server::Proxy,
    writer: &Writer,
    present: &mut HashSet<String>,
    rng: &mut Rng,
) -> &'static str {
    match rng.below(5) {
        0 => {
            proxy.cut();
            for _ in 0..1 + rng.below(4) {
                random_write(writer, present, rng).await;
            }
            let compacted = rng.chance(50);
            if compacted {
                server.compact().await;
            }
            proxy.restore();
            if compacted {
                "outage with writes, then compaction"
            } else {
                "outage with writes"
            }
        }
        1 => {
            server.restart_apiserver().await;
            "API server killed and restarted"
        }
        2 => {
            server.restart_storage().await;
            "storage killed and restarted"
        }
        3 => {
            server.compact().await;
            "compaction"
        }
        _ => {
            proxy.cut();
            proxy.restore();
            "connections dropped"
        }
    }
}

fn describe_diff(
    got: &HashMap<ObjectKey, DynamicObject>,
    want: &HashMap<ObjectKey, DynamicObject>,
) -> String {
    let mut out = Vec::new();
    for (k, w) in want {
        match got.get(k) {
            None => out.push(format!("missing {k} (rv {})", rv_of(w))),
            Some(g) if g != w => out.push(format!(
                "stale {k}: rv {} instead of {}",
                rv_of(g),
                rv_of(w)
            )),
            Some(_) => {}
        }
    }
    for k in got.keys().filter(|k| !want.contains_key(*k)) {
        out.push(format!("phantom {k}"));
    }
    out.sort();
    out.join(", ")
}

async fn run_seed(server: &Server, seed: u64, steps: usize) -> Result<(), String> {
    let mut rng = Rng(seed);
    let writer = Writer {
        api: server.widgets(),
        seed: format!("s{seed}"),
    };
    let selector = format!("seed={}", writer.seed);
    let mut present = HashSet::new();
    for _ in 0..rng.below(8) {
        random_write(&writer, &mut present, &mut rng).await;
    }

    let proxy = server.proxy().await;
    let fifo = if rng.chance(50) {
        FifoKind::Real
    } else {
        FifoKind::Delta
    };
    let streaming_list = rng.chance(40);
    let config = ReflectorConfig {
        list_params: ListParams::default().labels(&selector),
        streaming_list,
        streaming_list_timeout: Duration::from_secs(5),
        backoff: BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(500),
            ..BackoffConfig::default()
        },
        watch_timeout: (Duration::from_secs(2), Duration::from_secs(5)),
        ..ReflectorConfig::default()
    };
    let informer =
        SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(widgets(proxy.client()))))
            .fifo(fifo)
            .reflector_config(config)
            .build();
    let plain = Recorder::new("plain handler");
    informer.add_handler(plain.handler(), None);
    let late = Recorder::new("late handler");
    let late_at = steps / 4 + rng.below((steps / 2).max(1) as u64) as usize;
    let running = Running::start(informer.clone());

    let mut faults = Vec::new();
    for step in 0..steps {
        if step == late_at {
            informer.add_handler(late.handler(), None);
        }
        if rng.chance(12) {
            faults.push(random_fault(server, &proxy, &writer, &mut present, &mut rng).await);
        } else {
            for _ in 0..1 + rng.below(3) {
                random_write(&writer, &mut present, &mut rng).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.below(15))).await;
    }
    proxy.restore();

    let expected: HashMap<ObjectKey, DynamicObject> = writer
        .api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| format!("listing the server's state failed: {e}"))?
        .items
        .into_iter()
        .map(|o| (key_of(&o), o))
        .collect();
    let recorders = [&plain, &late];
    let same = |state: &HashMap<ObjectKey, Arc<DynamicObject>>| {
        state.len() == expected.len() && state.iter().all(|(k, v)| expected.get(k) == Some(&**v))
    };
    let deadline = tokio::time::Instant::now() + CATCH_UP;
    while tokio::time::Instant::now() < deadline {
        if running.cached() == expected
            && recorders.iter().all(|r| r.replay().is_ok_and(|s| same(&s)))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let context = format!(
        "{} server, seed {seed}: {fifo:?} FIFO, streaming list {streaming_list}, late handler at step {late_at}, \
         {} faults ({}), reflector {:?}",
        server.name(),
        faults.len(),
        faults.join("; "),
        informer.reflector_stats(),
    );
    let mut problems = Vec::new();
    let cached = running.cached();
    if cached != expected {
        problems.push(format!(
            "the cache differs from the server: {}",
            describe_diff(&cached, &expected)
        ));
    }
    for recorder in recorders {
        match recorder.replay() {
            Err(why) => problems.push(why),
            Ok(state) if !same(&state) => {
                let state: HashMap<ObjectKey, DynamicObject> =
                    state.into_iter().map(|(k, v)| (k, (*v).clone())).collect();
                problems.push(format!(
                    "{}: its replayed notifications differ from the server: {}",
                    recorder.name,
                    describe_diff(&state, &expected)
                ));
            }
            Ok(_) => {}
        }
    }
    if let Err(why) = running.stop().await {
        problems.push(why);
    }
    if problems.is_empty() {
        eprintln!("chaos: {context}: ok");
        Ok(())
    } else {
        Err(format!("{context}\n{}", problems.join("\n")))
    }
}

async fn chaos(server: &Server) {
    let steps = env_number("CHAOS_STEPS").map_or(DEFAULT_STEPS, |n| n as usize);
    let mut failed = Vec::new();
    for seed in seeds() {
        if let Err(why) = run_seed(server, seed, steps).await {
            eprintln!("chaos: {why}\nreproduce with CHAOS_SEED={seed}\n");
            failed.push(seed);
        }
    }
    assert!(
        failed.is_empty(),
        "chaos on the {} server: seeds {failed:?} failed (details above); reproduce one with CHAOS_SEED=<seed>",
        server.name()
    );
}
on_both_servers!(
    random_writes_and_faults_leave_the_cache_and_every_handler_equal_to_the_server,
    Options::DEFAULT,
    chaos
);
