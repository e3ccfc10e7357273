//! What controller-runtime users expect of a `Manager`, end to end against the in-process API
//! server and over HTTP: `Action::Requeue` counted as `result="requeue"` in scraped metrics;
//! named health and readiness checks on a separate probe address, in controller-runtime's
//! healthz format; tasks that start once the caches synced and, with leader election, run
//! only on the leader and move with the lease.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::{eventually_async, server};
use informer_core::ObjectKey;
use informer_runtime::controller::{Action, reconciler_fn};
use informer_runtime::informer::CancellationToken;
use informer_runtime::leader::LeaderElectionConfig;
use informer_runtime::manager::{Manager, Task};
use informer_testing::{FailureCode, RequestMatch, TestApiServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

async fn create_configmap(client: kube::Client, name: &str) {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_string(), "1".to_string())]));
    Api::<ConfigMap>::namespaced(client, "default")
        .create(&PostParams::default(), &cm)
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

/// The samples of an OpenMetrics text, `name{labels}` → value.
fn samples(text: &str) -> HashMap<String, f64> {
    assert!(text.ends_with("# EOF\n"), "an exposition ends with # EOF");
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn requeue_is_rate_limited_and_counted_as_controller_runtime_counts_it() {
    let server = server().await;
    let client = server.client();
    create_configmap(client.clone(), "a").await;
    let mut manager = Manager::new(client.clone())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    // Each key asks to be requeued three times, then is done.
    let asked: Arc<Mutex<HashMap<ObjectKey, usize>>> = Default::default();
    let controller = manager
        .controller::<ConfigMap>()
        .name("poller")
        .namespace("default")
        .build(reconciler_fn(move |key, _cm: Option<Arc<ConfigMap>>| {
            let n = {
                let mut asked = asked.lock().unwrap();
                let n = asked.entry(key).or_default();
                *n += 1;
                *n
            };
            async move {
                Ok(if n <= 3 {
                    Action::requeue_rate_limited()
                } else {
                    Action::Done
                })
            }
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    let total = |result: &str| {
        format!(r#"controller_runtime_reconcile_total{{controller="poller",result="{result}"}}"#)
    };
    eventually_async("a is done", async || {
        samples(&get(address, "/metrics").await.1).get(&total("success")) == Some(&1.0)
    })
    .await;
    let s = samples(&get(address, "/metrics").await.1);
    assert_eq!(s[&total("requeue")], 3.0);
    assert_eq!(s[&total("requeue_after")], 0.0);
    assert_eq!(s[&total("error")], 0.0);
    assert_eq!(
        s[r#"controller_runtime_reconcile_errors_total{controller="poller"}"#], 0.0,
        "a requeue is not an error"
    );
    assert_eq!(
        s[r#"workqueue_retries_total{controller="poller",name="poller"}"#], 3.0,
        "each requeue went through the rate limiter (AddRateLimited)"
    );
    assert_eq!(
        s[r#"workqueue_adds_total{controller="poller",name="poller"}"#],
        4.0
    );

    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn probes_on_their_own_address_answer_in_controller_runtimes_format() {
    let server = server().await;
    let client = server.client();
    create_configmap(client.clone(), "a").await;
    // The first two lists of ConfigMaps fail: the cache syncs only after the backoff.
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).resource("configmaps"),
        2,
        FailureCode::InternalError,
    );
    let mut manager = Manager::new(client.clone())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .health_probe_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    let controller = manager
        .controller::<ConfigMap>()
        .namespace("default")
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let open = Arc::new(AtomicBool::new(false));
    let gate = open.clone();
    manager
        .add_readyz_check("gate", move || {
            if gate.load(Ordering::Acquire) {
                Ok(())
            } else {
                Err("gate closed".into())
            }
        })
        .unwrap();
    let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
    manager
        .add_healthz_check("apiserver", move || {
            let api = api.clone();
            async move {
                api.get("a").await?;
                Ok(())
            }
        })
        .unwrap();
    let metrics = manager.bind().await.unwrap().unwrap();
    let probes = manager.bind_health_probe().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    // Not ready: the failure is always listed; the user's reason is withheld, the manager's
    // own names the cache.
    let (status, body) = get(probes, "/readyz").await;
    assert_eq!(status, 500, "{body}");
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "[-]gate failed: reason withheld", "{body}");
    assert!(
        lines[1].starts_with("[-]informer-sync failed: caches not synced: configmaps.v1"),
        "{body}"
    );
    assert_eq!(lines[2..], ["[+]shutdown ok", "healthz check failed"]);
    assert_eq!(
        get(probes, "/readyz/gate").await,
        (500, "internal server error: gate closed\n".to_owned())
    );
    assert_eq!(get(probes, "/healthz").await, (200, "ok\n".to_owned()));

    // Excluding the gate, ready once the cache synced.
    eventually_async("ready without the gate", async || {
        get(probes, "/readyz?exclude=gate").await == (200, "ok\n".to_owned())
    })
    .await;
    assert_eq!(get(probes, "/readyz").await.0, 500, "the gate still fails");
    assert_eq!(
        get(probes, "/readyz?exclude=gate&verbose").await.1,
        "[+]gate excluded: ok\n[+]informer-sync ok\n[+]shutdown ok\nhealthz check passed\n"
    );
    open.store(true, Ordering::Release);
    assert_eq!(get(probes, "/readyz").await, (200, "ok\n".to_owned()));
    assert_eq!(get(probes, "/readyz/").await, (200, "ok\n".to_owned()));
    assert_eq!(
        get(probes, "/readyz?verbose").await.1,
        "[+]gate ok\n[+]informer-sync ok\n[+]shutdown ok\nhealthz check passed\n"
    );
    assert_eq!(
        get(probes, "/livez?verbose&exclude=nope").await,
        (
            200,
            "[+]apiserver ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nhealthz check passed\n"
                .to_owned()
        )
    );
    assert_eq!(
        get(probes, "/healthz/apiserver").await,
        (200, "ok\n".to_owned())
    );
    assert_eq!(get(probes, "/healthz/nope").await.0, 404);

    // A failing async check: the API server refuses the next get.
    server.faults().fail_next(
        RequestMatch::verb(Verb::Get).resource("configmaps"),
        1,
        FailureCode::InternalError,
    );
    assert_eq!(
        get(probes, "/healthz").await,
        (
            500,
            "[-]apiserver failed: reason withheld\nhealthz check failed\n".to_owned()
        )
    );

    // Each endpoint serves only its own paths.
    assert_eq!(get(probes, "/metrics").await.0, 404);
    assert_eq!(get(metrics, "/metrics").await.0, 200);
    assert_eq!(get(metrics, "/readyz").await.0, 404);

    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(TcpStream::connect(probes).await.is_err(), "probes closed");
}

/// What a replica's tasks saw: (replica, task, event).
type Log = Arc<Mutex<Vec<(String, &'static str, String)>>>;

/// A replica: a manager with leader election, a ConfigMap controller, and two tasks: one
/// that needs leader election, one that runs everywhere. Each task logs, when it starts,
/// how many ConfigMaps the controller's cache holds, and logs when its token is cancelled.
fn replica(
    server: &TestApiServer,
    identity: &str,
    log: &Log,
) -> (CancellationToken, JoinHandle<()>) {
    let mut manager = Manager::new(server.client())
        .without_http()
        .handle_signals(false)
        .leader_election(
            LeaderElectionConfig::new("tasks-lock", "default", identity).with_timings(
                Duration::from_millis(3000),
                Duration::from_millis(2000),
                Duration::from_millis(100),
            ),
        );
    let controller = manager
        .controller::<ConfigMap>()
        .namespace("default")
        .build(reconciler_fn(|_key, _cm: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    let lister = controller.lister();
    manager.add(controller).unwrap();
    for (name, leader_only) in [("leader-only", true), ("everywhere", false)] {
        let (log, lister, who) = (log.clone(), lister.clone(), identity.to_owned());
        let task = Task::new(name, move |cancel: CancellationToken| {
            let (log, who) = (log.clone(), who.clone());
            let cached = lister.list().len();
            log.lock()
                .unwrap()
                .push((who.clone(), name, format!("started with {cached} cached")));
            async move {
                cancel.cancelled().await;
                log.lock().unwrap().push((who, name, "cancelled".into()));
                Ok(())
            }
        })
        .needs_leader_election(leader_only);
        manager.add_task(task).unwrap();
    }
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { manager.run(cancel).await.unwrap() }
    });
    (cancel, task)
}

fn events(log: &Log, task: &str) -> Vec<(String, String)> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|(_, t, _)| *t == task)
        .map(|(who, _, what)| (who.clone(), what.clone()))
        .collect()
}

#[tokio::test]
async fn tasks_start_after_the_caches_sync_and_leader_only_ones_move_with_the_lease() {
    let server = server().await;
    let client = server.client();
    for name in ["a", "b", "c"] {
        create_configmap(client.clone(), name).await;
    }
    let log: Log = Default::default();
    let (cancel_a, run_a) = replica(&server, "a", &log);
    eventually_async("a leader-only task started", async || {
        !events(&log, "leader-only").is_empty()
    })
    .await;
    let (cancel_b, run_b) = replica(&server, "b", &log);
    eventually_async(
        "both replicas run the task that needs no leader",
        async || events(&log, "everywhere").len() == 2,
    )
    .await;
    for (_, what) in events(&log, "everywhere") {
        assert_eq!(what, "started with 3 cached", "after the cache synced");
    }
    // a was first and leads: only a runs the leader-only task, after its cache synced.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        events(&log, "leader-only"),
        [("a".to_owned(), "started with 3 cached".to_owned())]
    );

    // a shuts down: its tasks are cancelled (and return) before it releases the lease; b
    // takes over and starts its leader-only task.
    cancel_a.cancel();
    run_a.await.unwrap();
    let after_a: Vec<(String, String)> = events(&log, "leader-only");
    assert_eq!(after_a[1], ("a".to_owned(), "cancelled".to_owned()));
    eventually_async("b runs the leader-only task", async || {
        events(&log, "leader-only").len() == 3
    })
    .await;
    assert_eq!(
        events(&log, "leader-only")[2],
        ("b".to_owned(), "started with 3 cached".to_owned())
    );

    cancel_b.cancel();
    run_b.await.unwrap();
    assert_eq!(
        events(&log, "leader-only").last().unwrap(),
        &("b".to_owned(), "cancelled".to_owned())
    );
}
