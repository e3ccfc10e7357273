//! The `Manager` against the in-process API server: `/metrics` scraped over HTTP and parsed,
//! `/readyz` before and after the caches sync, leader election and sharding across replicas.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::{eventually_async, server};
use informer_core::ObjectKey;
use informer_runtime::controller::{Action, reconciler_fn};
use informer_runtime::informer::CancellationToken;
use informer_runtime::leader::{LeaderElectionConfig, LeaderElector};
use informer_runtime::manager::Manager;
use informer_runtime::shard::{ShardConfig, ShardManager, shard_of};
use informer_testing::{FailureCode, RequestMatch, TestApiServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

async fn create_configmap(client: kube::Client, name: &str, value: &str) {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    Api::<ConfigMap>::namespaced(client, "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

async fn touch_configmap(client: kube::Client, name: &str, value: &str) {
    let api = Api::<ConfigMap>::namespaced(client, "default");
    let mut cm = api.get(name).await.unwrap();
    cm.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    api.replace(name, &PostParams::default(), &cm)
        .await
        .unwrap();
}

/// A plain HTTP/1.1 GET: the status code and the body.
async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8(response).expect("UTF-8");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a complete response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_owned())
}

/// One sample of the OpenMetrics text format: a name, its labels and a value.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the samples of an OpenMetrics text exposition (`name{k="v",...} value`), checking
/// the shape of every line: comments are `# HELP`, `# TYPE`, `# UNIT` or the final `# EOF`.
fn parse_openmetrics(text: &str) -> Vec<Sample> {
    assert!(text.ends_with("# EOF\n"), "an exposition ends with # EOF");
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            assert!(
                ["HELP ", "TYPE ", "UNIT ", "EOF"]
                    .iter()
                    .any(|p| comment.starts_with(p)),
                "unexpected comment line {line:?}"
            );
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value in {line:?}"));
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            None => (series.to_owned(), BTreeMap::new()),
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels in {line:?}"));
                (name.to_owned(), parse_labels(body))
            }
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name {name:?}"
        );
        samples.push(Sample {
            name,
            labels,
            value,
        });
    }
    samples
}

/// `k="v",k2="v2"` with `\"`, `\\` and `\n` escapes in values.
fn parse_labels(mut body: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    while !body.is_empty() {
        let (key, rest) = body.split_once("=\"").expect("label=\"value\"");
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().expect("a closing quote") {
                (_, '\\') => match chars.next().expect("an escaped char").1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        labels.insert(key.to_owned(), value);
        body = rest[end + 1..]
            .strip_prefix(',')
            .unwrap_or(&rest[end + 1..]);
    }
    labels
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

#[tokio::test]
async fn metrics_are_scraped_over_http_and_parsed() {
    let server = server().await;
    let client = server.client();
    for name in ["a", "b", "c"] {
        create_configmap(client.clone(), name, "1").await;
    }
    let mut manager = Manager::new(client.clone())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    let controller = manager
        .controller::<ConfigMap>()
        .name("settings")
        .namespace("default")
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    let scrape = async || parse_openmetrics(&get(address, "/metrics").await.1);
    let reconciled = async || {
        value(
            &scrape().await,
            "controller_runtime_reconcile_total",
            &[("controller", "settings"), ("result", "success")],
        )
    };
    eventually_async("3 reconciles", async || reconciled().await == Some(3.0)).await;
    let samples = scrape().await;
    let settings = [("name", "settings")];
    assert_eq!(
        value(&samples, "workqueue_adds_total", &settings),
        Some(3.0)
    );
    assert_eq!(value(&samples, "workqueue_depth", &settings), Some(0.0));
    assert_eq!(
        value(&samples, "workqueue_retries_total", &settings),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "workqueue_queue_duration_seconds_count",
            &settings
        ),
        Some(3.0)
    );
    assert_eq!(
        value(&samples, "workqueue_work_duration_seconds_count", &settings),
        Some(3.0)
    );
    assert!(value(&samples, "workqueue_unfinished_work_seconds", &settings).is_some());
    assert!(
        value(
            &samples,
            "workqueue_longest_running_processor_seconds",
            &settings
        )
        .is_some()
    );
    let ctl = [("controller", "settings")];
    assert_eq!(
        value(&samples, "controller_runtime_reconcile_errors_total", &ctl),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "controller_runtime_reconcile_time_seconds_count",
            &ctl
        ),
        Some(3.0)
    );
    let informer = [("informer", "configmaps.v1 in namespace default")];
    assert_eq!(
        value(&samples, "informer_relists_total", &informer),
        Some(0.0)
    );
    assert_eq!(
        value(&samples, "informer_watch_restarts_total", &informer),
        Some(0.0)
    );
    assert_eq!(
        value(
            &samples,
            "informer_handler_pending_notifications",
            &[informer[0], ("handler", "settings")]
        ),
        Some(0.0)
    );

    // A dropped watch is a watch restart; a change after it is one more reconcile.
    assert!(server.faults().drop_watches() >= 1);
    eventually_async("a watch restart", async || {
        value(&scrape().await, "informer_watch_restarts_total", &informer).unwrap_or(0.0) >= 1.0
    })
    .await;
    touch_configmap(client.clone(), "a", "2").await;
    eventually_async("4 reconciles", async || reconciled().await == Some(4.0)).await;

    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn readyz_turns_ready_after_the_caches_sync() {
    let server = server().await;
    let client = server.client();
    create_configmap(client.clone(), "a", "1").await;
    // The first two lists of ConfigMaps fail: the cache syncs only after the reflector's
    // backoff.
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).resource("configmaps"),
        2,
        FailureCode::InternalError,
    );
    let mut manager = Manager::new(client.clone())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    let controller = manager
        .controller::<ConfigMap>()
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    let (status, body) = get(address, "/readyz").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("configmaps.v1"),
        "names the unsynced cache: {body}"
    );
    assert_eq!(
        get(address, "/healthz").await.0,
        200,
        "alive while not ready"
    );
    eventually_async("/readyz is 200", async || {
        get(address, "/readyz").await.0 == 200
    })
    .await;

    cancel.cancel();
    run.await.unwrap().unwrap();
}

/// A cache that panics on a write of a ConfigMap whose `v` is `boom` (as a compact cache of
/// a type that does not round-trip does on a cold update).
struct PanicsOnBoom(informer_core::ThreadSafeStore<ConfigMap>);

impl informer_core::store::StoreWrapper for PanicsOnBoom {
    type Object = ConfigMap;
    fn inner(&self) -> &dyn informer_core::Indexer<ConfigMap> {
        &self.0
    }
    fn apply(
        &self,
        batch: Vec<informer_core::StoreOp<ConfigMap>>,
    ) -> Result<Vec<Option<Arc<ConfigMap>>>, informer_core::StoreError> {
        let boom = batch.iter().any(|op| {
            matches!(op, informer_core::StoreOp::Upsert(cm)
                if cm.data.as_ref().and_then(|d| d.get("v")).map(String::as_str) == Some("boom"))
        });
        assert!(!boom, "this cache cannot hold it");
        informer_core::Store::apply(&self.0, batch)
    }
}

#[tokio::test]
async fn readyz_fails_once_an_informer_has_stopped_on_a_panic() {
    let server = server().await;
    let client = server.client();
    create_configmap(client.clone(), "a", "1").await;
    let mut manager = Manager::new(client.clone())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    let controller = manager
        .controller::<ConfigMap>()
        .store(Arc::new(
            PanicsOnBoom(informer_core::ThreadSafeStore::new()),
        ))
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    eventually_async("/readyz is 200", async || {
        get(address, "/readyz").await.0 == 200
    })
    .await;
    touch_configmap(client.clone(), "a", "boom").await;
    eventually_async("/readyz fails, naming the stopped cache", async || {
        let (status, body) = get(address, "/readyz").await;
        status == 500 && body.contains("stopped")
    })
    .await;
    cancel.cancel();
    let _ = run.await;
}

/// One replica: its manager's task, its elector or shard manager, and its cancel token.
struct Replica<S> {
    identity: String,
    scale: S,
    /// The manager's metrics, read as a scrape would.
    metrics: informer_runtime::metrics::Metrics,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl<S> Replica<S> {
    /// The manager's metrics in the text format a scrape gets.
    fn metrics_text(&self) -> String {
        let mut registry = prometheus_client::registry::Registry::default();
        self.metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    }
}

/// Starts a manager over `server` with a ConfigMap controller whose reconciles are recorded
/// as (identity, key) in `log`, and with `configure` choosing leader election or sharding.
async fn replica<S>(
    server: &TestApiServer,
    identity: &str,
    log: Arc<Mutex<Vec<(String, ObjectKey)>>>,
    configure: impl FnOnce(Manager) -> Manager,
    scale: impl FnOnce(&mut Manager) -> S,
) -> Replica<S> {
    let mut manager = configure(
        Manager::new(server.client())
            .without_http()
            .handle_signals(false),
    );
    let who = identity.to_owned();
    let controller = manager
        .controller::<ConfigMap>()
        .namespace("default")
        .build(reconciler_fn(move |key, _cm: Option<Arc<ConfigMap>>| {
            log.lock().unwrap().push((who.clone(), key));
            async { Ok(Action::Done) }
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let scale = scale(&mut manager);
    let metrics = manager.metrics().clone();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { manager.run(cancel).await.unwrap() }
    });
    Replica {
        identity: identity.to_owned(),
        scale,
        metrics,
        cancel,
        task,
    }
}

/// The lease of the replicas below: long enough that a takeover "at once" (after a clean
/// release) and one "after expiry" (after a crash) stay apart on a loaded machine.
const LEASE: Duration = Duration::from_millis(3000);

fn fast_lease(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new("settings-controller", "default", identity).with_timings(
        LEASE,
        Duration::from_millis(2000),
        Duration::from_millis(100),
    )
}

#[tokio::test]
async fn leader_election_runs_workers_only_on_the_leader_and_fails_over() {
    let server = server().await;
    let client = server.client();
    let log: Arc<Mutex<Vec<(String, ObjectKey)>>> = Default::default();
    let mut replicas = Vec::new();
    for identity in ["a", "b", "c"] {
        replicas.push(
            replica(
                &server,
                identity,
                log.clone(),
                |m| m.leader_election(fast_lease(identity)),
                |m| m.leader_elector().unwrap().unwrap(),
            )
            .await,
        );
    }
    let leaders = |replicas: &[Replica<LeaderElector>]| -> Vec<String> {
        replicas
            .iter()
            .filter(|r| r.scale.is_leader())
            .map(|r| r.identity.clone())
            .collect()
    };
    // Never two leaders, checked at every step.
    let one_leader = async |replicas: &[Replica<LeaderElector>]| -> String {
        for _ in 0..3000 {
            let now = leaders(replicas);
            assert!(now.len() <= 1, "two leaders at once: {now:?}");
            if let [leader] = now.as_slice() {
                return leader.clone();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no leader elected");
    };

    let first = one_leader(&replicas).await;
    create_configmap(client.clone(), "x", "1").await;
    eventually_async("x is reconciled", async || {
        assert!(leaders(&replicas).len() <= 1);
        log.lock().unwrap().iter().any(|(_, k)| k.name() == "x")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        log.lock().unwrap().iter().all(|(who, _)| *who == first),
        "only the leader reconciles: {:?}",
        log.lock().unwrap()
    );

    // A clean shutdown releases the lease: another replica takes over at its next retry.
    let index = replicas.iter().position(|r| r.identity == first).unwrap();
    let stopped = replicas.remove(index);
    stopped.cancel.cancel();
    stopped.task.await.unwrap();
    let released_at = tokio::time::Instant::now();
    let second = one_leader(&replicas).await;
    assert_ne!(second, first);
    assert!(
        released_at.elapsed() < LEASE - Duration::from_millis(1000),
        "taken over at once, not after expiry: {:?}",
        released_at.elapsed()
    );
    // The new leader's queue was kept warm: a change is reconciled at once.
    touch_configmap(client.clone(), "x", "2").await;
    eventually_async("the new leader reconciles", async || {
        assert!(leaders(&replicas).len() <= 1);
        log.lock().unwrap().iter().any(|(who, _)| *who == second)
    })
    .await;

    // A crash (the task aborted: nothing released) fails over within lease + retry.
    let index = replicas.iter().position(|r| r.identity == second).unwrap();
    let crashed = replicas.remove(index);
    crashed.task.abort();
    let _ = crashed.task.await;
    let crashed_at = tokio::time::Instant::now();
    let third = one_leader(&replicas).await;
    assert_ne!(third, second);
    let failover = crashed_at.elapsed();
    // Lease duration + retry period, plus slack for scheduling on a loaded 2-core machine.
    assert!(
        failover <= LEASE + Duration::from_millis(120 + 2500),
        "failover took {failover:?}"
    );
    for replica in replicas {
        replica.cancel.cancel();
        replica.task.await.unwrap();
    }
}

#[tokio::test]
async fn sharding_reconciles_each_key_on_its_shard_owner_and_rebalances_after_a_kill() {
    const SHARDS: u32 = 6;
    let server = server().await;
    let client = server.client();
    let names: Vec<String> = (0..24).map(|i| format!("cm-{i:02}")).collect();
    for name in &names {
        create_configmap(client.clone(), name, "0").await;
    }
    let log: Arc<Mutex<Vec<(String, ObjectKey)>>> = Default::default();
    let config = |identity: &str| {
        let mut config = ShardConfig::new(SHARDS, "settings", "default", identity).with_timings(
            Duration::from_millis(1000),
            Duration::from_millis(700),
            Duration::from_millis(100),
        );
        config.handoff_delay = Duration::from_millis(100);
        config
    };
    let mut replicas = Vec::new();
    for identity in ["a", "b", "c"] {
        let config = config(identity);
        replicas.push(
            replica(
                &server,
                identity,
                log.clone(),
                |m| m.sharding(config),
                |m| m.shard_manager().unwrap().unwrap(),
            )
            .await,
        );
    }
    let balanced = |replicas: &[Replica<ShardManager>], per: usize| {
        let held: Vec<Vec<u32>> = replicas.iter().map(|r| r.scale.held()).collect();
        let all: HashSet<u32> = held.iter().flatten().copied().collect();
        held.iter().all(|h| h.len() == per) && all.len() == SHARDS as usize
    };
    let owner_of = |replicas: &[Replica<ShardManager>], key: &ObjectKey| -> String {
        let shard = shard_of(key, SHARDS);
        let owners: Vec<&Replica<ShardManager>> = replicas
            .iter()
            .filter(|r| r.scale.held().contains(&shard))
            .collect();
        assert_eq!(owners.len(), 1, "shard {shard} has one owner");
        owners[0].identity.clone()
    };

    // Round 1: balanced over three replicas; every change reconciled by its shard's owner.
    eventually_async("6 shards over 3 replicas", async || balanced(&replicas, 2)).await;
    // Each replica reports the shards it holds, and the keys it left to the others.
    for replica in &replicas {
        let text = replica.metrics_text();
        assert!(
            text.contains("informer_shards_held{name=\"settings\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("informer_shards_total{name=\"settings\"} 6"),
            "{text}"
        );
        assert!(
            text.contains("informer_shard_skipped_keys_total{controller=\"configmap\"}"),
            "{text}"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    log.lock().unwrap().clear();
    for name in &names {
        touch_configmap(client.clone(), name, "1").await;
    }
    let check_round = async |replicas: &[Replica<ShardManager>]| {
        eventually_async("every key reconciled", async || {
            let log = log.lock().unwrap();
            let seen: HashSet<&str> = log.iter().map(|(_, k)| k.name()).collect();
            names.iter().all(|n| seen.contains(n.as_str()))
        })
        .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let log = std::mem::take(&mut *log.lock().unwrap());
        let mut by_replica: HashMap<String, usize> = HashMap::new();
        for (who, key) in &log {
            assert_eq!(
                *who,
                owner_of(replicas, key),
                "{key} reconciled outside its owner's shard"
            );
            *by_replica.entry(who.clone()).or_default() += 1;
        }
        by_replica
    };
    let round1 = check_round(&replicas).await;
    assert!(round1.len() >= 2, "work is spread: {round1:?}");

    // Kill one replica (no release): its shards expire and move to the survivors.
    let killed = replicas.remove(0);
    killed.task.abort();
    let _ = killed.task.await;
    eventually_async("6 shards over 2 replicas", async || balanced(&replicas, 3)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    log.lock().unwrap().clear();
    for name in &names {
        touch_configmap(client.clone(), name, "2").await;
    }
    let round2 = check_round(&replicas).await;
    assert!(!round2.contains_key(&killed.identity));
    for replica in replicas {
        replica.cancel.cancel();
        replica.task.await.unwrap();
    }
}

/// Runs a leader-electing manager with `exit_on_leader_loss(exit)`, waits until it leads,
/// has another holder take its Lease over, and returns what `run` returned within 10 s
/// (`None`: still running) and whether the replica is still the leader.
async fn lose_the_lease(exit: bool) -> (Option<Result<(), String>>, bool) {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Patch, PatchParams};
    let server = server().await;
    let mut manager = Manager::new(server.client())
        .without_http()
        .handle_signals(false)
        .leader_election(fast_lease("a"))
        .exit_on_leader_loss(exit);
    let elector = manager.leader_elector().unwrap().unwrap();
    let cancel = CancellationToken::new();
    let mut run = tokio::spawn({
        let cancel = cancel.clone();
        async move { manager.run(cancel).await.map_err(|e| e.to_string()) }
    });
    eventually_async("the replica leads", async || elector.is_leader()).await;
    // Another holder takes the Lease over (as after a partition): the renewal conflicts.
    let now = k8s_openapi::jiff::Timestamp::now();
    let intruder = serde_json::json!({"spec": {
        "holderIdentity": "intruder",
        "leaseDurationSeconds": 3600,
        "renewTime": k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(now),
    }});
    Api::<Lease>::namespaced(server.client(), "default")
        .patch(
            "settings-controller",
            &PatchParams::default(),
            &Patch::Merge(&intruder),
        )
        .await
        .unwrap();
    eventually_async("the replica steps down", async || !elector.is_leader()).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), &mut run).await;
    let leading = elector.is_leader();
    cancel.cancel();
    let outcome = match ended {
        Ok(result) => Some(result.unwrap()),
        Err(_) => {
            run.await.unwrap().unwrap();
            None
        }
    };
    (outcome, leading)
}

#[tokio::test]
async fn with_exit_on_leader_loss_a_lost_lease_ends_run_with_an_error() {
    let (outcome, leading) = lose_the_lease(true).await;
    let error = outcome.expect("run returned").unwrap_err();
    assert!(error.contains("leader election lost"), "{error}");
    assert!(!leading);
}

#[tokio::test]
async fn by_default_a_replica_that_lost_its_lease_stays_on_as_a_standby() {
    let (outcome, leading) = lose_the_lease(false).await;
    assert_eq!(outcome, None, "run goes on");
    assert!(!leading);
}
