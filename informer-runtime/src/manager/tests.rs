//! Unit tests of the manager and the metrics: HTTP endpoints, readiness, metric names and
//! values, configuration errors, shutdown. Sources are `MemoryListerWatcher`s.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use ::http::Method;
use http_body_util::BodyExt;
use informer_core::ObjectKey;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::http::{HttpState, Probes, respond};
use super::*;
use crate::controller::{Action, ReconcileError, reconciler_fn};
use crate::factory::{InformerHandle, InformerParams};
use crate::leader::LeaderElectionConfig;
use crate::metrics::{ControllerMetrics, Metrics};
use crate::shard::ShardConfig;
use crate::test_support::{eventually_async, samples};
use informer_testing::MemoryListerWatcher;

fn cm(ns: &str, name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some(ns.into());
    c
}

fn source_with(names: &[&str]) -> MemoryListerWatcher<ConfigMap> {
    let source = MemoryListerWatcher::<ConfigMap>::new();
    for name in names {
        source.create(cm("ns", name));
    }
    source
}

/// A manager without a client over an in-memory ConfigMap source, serving on a free port.
fn manager(source: &MemoryListerWatcher<ConfigMap>) -> (Manager, InformerHandle<ConfigMap>) {
    let factory = InformerFactory::without_client();
    let registered = factory.informer_from(InformerParams::all(), || Arc::new(source.clone()));
    let manager = Manager::with_factory(factory)
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    (manager, registered)
}

/// A plain HTTP/1.1 GET; returns the status code and the body.
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
        .expect("a status line");
    (status, body.to_owned())
}

#[tokio::test]
async fn readyz_turns_ready_once_every_cache_synced() {
    let source = source_with(&["a"]);
    source.fail_next_list(informer_core::ListWatchError::status(
        500,
        "InternalError",
        "not yet",
    ));
    let (mut manager, _registered) = manager(&source);
    let controller = manager
        .controller::<ConfigMap>()
        .build(reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    let (status, body) = get(address, "/readyz").await;
    assert_eq!(status, 500);
    assert!(
        body.starts_with("[-]informer-sync failed: caches not synced: configmaps.v1"),
        "{body}"
    );
    assert!(
        body.ends_with("[+]shutdown ok\nhealthz check failed\n"),
        "{body}"
    );
    assert_eq!(get(address, "/healthz").await.0, 200);
    eventually_async("/readyz is 200", async || {
        get(address, "/readyz").await.0 == 200
    })
    .await;
    assert_eq!(get(address, "/livez").await, (200, "ok\n".to_owned()));

    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(
        TcpStream::connect(address).await.is_err(),
        "the endpoint is closed"
    );
}

#[tokio::test]
async fn metrics_use_client_go_and_controller_runtime_names() {
    let source = source_with(&["ok", "flaky", "bad"]);
    let (mut manager, _registered) = manager(&source);
    let flaky_failed = Arc::new(AtomicBool::new(false));
    let controller = manager
        .controller::<ConfigMap>()
        .name("shop")
        .workers(2)
        .build(reconciler_fn(
            move |key: ObjectKey, _o: Option<Arc<ConfigMap>>| {
                let flaky_failed = flaky_failed.clone();
                async move {
                    match key.name() {
                        "flaky" if !flaky_failed.swap(true, Ordering::SeqCst) => {
                            Err(ReconcileError::transient("flaky"))
                        }
                        "bad" => Err(ReconcileError::terminal("bad")),
                        _ => Ok(Action::Done),
                    }
                }
            },
        ))
        .unwrap();
    let stats_probe = controller.probe();
    manager.add(controller).unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    eventually_async("4 reconciles", async || {
        stats_probe.sample().stats.reconciles() == 4
    })
    .await;

    let (status, text) = get(address, "/metrics").await;
    assert_eq!(status, 200);
    assert!(text.ends_with("# EOF\n"));
    let s = samples(&text);
    let v = |series: &str| {
        *s.get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(
        v(r#"controller_runtime_reconcile_total{controller="shop",result="success"}"#),
        2.0
    );
    assert_eq!(
        v(r#"controller_runtime_reconcile_total{controller="shop",result="error"}"#),
        2.0
    );
    assert_eq!(
        v(r#"controller_runtime_reconcile_total{controller="shop",result="requeue_after"}"#),
        0.0
    );
    assert_eq!(
        v(r#"controller_runtime_reconcile_errors_total{controller="shop"}"#),
        2.0
    );
    assert_eq!(
        v(r#"controller_runtime_terminal_reconcile_errors_total{controller="shop"}"#),
        1.0
    );
    assert_eq!(
        v(r#"controller_runtime_reconcile_panics_total{controller="shop"}"#),
        0.0
    );
    assert_eq!(
        v(r#"controller_runtime_reconcile_time_seconds_count{controller="shop"}"#),
        4.0
    );
    assert_eq!(
        v(r#"controller_runtime_max_concurrent_reconciles{controller="shop"}"#),
        2.0
    );
    assert_eq!(
        v(r#"controller_runtime_active_workers{controller="shop"}"#),
        0.0
    );
    assert_eq!(
        v(r#"workqueue_adds_total{controller="shop",name="shop"}"#),
        4.0,
        "3 initial + 1 retry"
    );
    assert_eq!(
        v(r#"workqueue_retries_total{controller="shop",name="shop"}"#),
        1.0
    );
    assert_eq!(
        v(r#"workqueue_depth{controller="shop",name="shop",priority=""}"#),
        0.0
    );
    assert_eq!(
        v(r#"workqueue_queue_duration_seconds_count{controller="shop",name="shop"}"#),
        4.0
    );
    assert_eq!(
        v(r#"workqueue_work_duration_seconds_count{controller="shop",name="shop"}"#),
        4.0
    );
    assert_eq!(
        v(r#"workqueue_unfinished_work_seconds{controller="shop",name="shop"}"#),
        0.0
    );
    assert_eq!(
        v(r#"workqueue_longest_running_processor_seconds{controller="shop",name="shop"}"#),
        0.0
    );
    let informer = r#"informer="configmaps.v1 in all namespaces""#;
    assert_eq!(v(&format!("informer_relists_total{{{informer}}}")), 0.0);
    assert_eq!(
        v(&format!("informer_watch_restarts_total{{{informer}}}")),
        0.0
    );
    assert_eq!(
        v(&format!(
            r#"informer_handler_pending_notifications{{{informer},handler="shop"}}"#
        )),
        0.0
    );
    assert!(text.contains("# TYPE workqueue_work_duration_seconds histogram"));
    assert!(text.contains("# TYPE controller_runtime_reconcile counter"));

    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn metrics_report_work_in_flight_and_informers_once() {
    let source = source_with(&["stuck"]);
    let factory = InformerFactory::without_client();
    let _registered = factory.informer_from(InformerParams::all(), || Arc::new(source.clone()));
    let started = Arc::new(tokio::sync::Notify::new());
    let s = started.clone();
    let stuck = Controller::<ConfigMap>::builder(&factory)
        .name("stuck")
        .shutdown_timeout(Duration::from_millis(10))
        .build(reconciler_fn(move |_k, _o: Option<Arc<ConfigMap>>| {
            let s = s.clone();
            async move {
                s.notify_one();
                std::future::pending::<()>().await;
                Ok(Action::Done)
            }
        }))
        .unwrap();
    let other = Controller::<ConfigMap>::builder(&factory)
        .name("other")
        .build(reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    let metrics = Metrics::new();
    metrics.add_controller(&stuck);
    metrics.add_controller(&stuck);
    metrics.add_controller(&other);
    let cancel = CancellationToken::new();
    let runs = [
        tokio::spawn(stuck.run(cancel.clone())),
        tokio::spawn(other.run(cancel.clone())),
    ];
    started.notified().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let text = metrics.encode();
    let s = samples(&text);
    assert_eq!(
        s[r#"controller_runtime_active_workers{controller="stuck"}"#],
        1.0
    );
    assert!(s[r#"workqueue_unfinished_work_seconds{controller="stuck",name="stuck"}"#] >= 0.04);
    assert!(
        s[r#"workqueue_longest_running_processor_seconds{controller="stuck",name="stuck"}"#]
            >= 0.04
    );
    assert_eq!(
        text.matches("informer_relists_total{").count(),
        1,
        "a shared informer once"
    );
    assert_eq!(
        text.matches("informer_handler_pending_notifications{")
            .count(),
        2,
        "one per handler"
    );
    assert_eq!(
        text.matches("workqueue_depth{").count(),
        2,
        "a controller added twice counts once"
    );
    cancel.cancel();
    for run in runs {
        run.await.unwrap();
    }
}

/// The status and body of a response.
async fn body(r: ::http::Response<http_body_util::Full<bytes::Bytes>>) -> (u16, String) {
    (
        r.status().as_u16(),
        String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap(),
    )
}

/// `GET uri` answered by `state`.
async fn ask(state: &HttpState, uri: &str) -> (u16, String) {
    body(respond(state, &Method::GET, &uri.parse().unwrap()).await).await
}

/// The probes of a manager with `configure`d checks and no controller, whose shutdown is
/// `shutdown`.
fn probes_of(configure: impl FnOnce(&mut Manager), shutdown: &CancellationToken) -> Arc<Probes> {
    let mut manager = Manager::with_factory(InformerFactory::without_client());
    configure(&mut manager);
    Arc::new(manager.probes(&Arc::new(Vec::new()), shutdown, &Mode::Single))
}

fn serving(probes: Arc<Probes>) -> HttpState {
    HttpState {
        registry: Some(Registry::default()),
        probes: Some(probes),
    }
}

#[tokio::test]
async fn http_unknown_paths_are_not_found_and_other_methods_not_allowed() {
    let state = serving(probes_of(|_| {}, &CancellationToken::new()));
    assert_eq!(ask(&state, "/nope").await.0, 404);
    assert_eq!(
        ask(&state, "/healthzz").await.0,
        404,
        "a prefix is not a path"
    );
    assert_eq!(
        body(respond(&state, &Method::POST, &"/metrics".parse().unwrap()).await)
            .await
            .0,
        405
    );
    assert_eq!(
        body(respond(&state, &Method::PUT, &"/readyz/shutdown".parse().unwrap()).await)
            .await
            .0,
        405
    );
    let metrics = respond(&state, &Method::GET, &"/metrics".parse().unwrap()).await;
    assert_eq!(
        metrics.headers()[::http::header::CONTENT_TYPE],
        super::http::METRICS_CONTENT_TYPE
    );
    assert_eq!(body(metrics).await, (200, "# EOF\n".to_owned()));
    let probe = respond(&state, &Method::GET, &"/healthz".parse().unwrap()).await;
    assert_eq!(
        probe.headers()[::http::header::CONTENT_TYPE],
        "text/plain; charset=utf-8"
    );
    assert_eq!(probe.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn without_checks_of_its_own_healthz_answers_ok_with_a_ping_check() {
    let state = serving(probes_of(|_| {}, &CancellationToken::new()));
    for path in ["/healthz", "/livez", "/healthz/", "/healthz/ping"] {
        assert_eq!(ask(&state, path).await, (200, "ok\n".to_owned()), "{path}");
    }
    assert_eq!(
        ask(&state, "/healthz?verbose").await,
        (200, "[+]ping ok\nhealthz check passed\n".to_owned())
    );
}

#[tokio::test]
async fn a_failing_check_fails_healthz_and_readyz_with_500() {
    let shutdown = CancellationToken::new();
    let state = serving(probes_of(
        |m| {
            m.add_healthz_check("loop", || Err("stalled".into()))
                .unwrap();
            m.add_readyz_check("db", || async { Err("refused".into()) })
                .unwrap();
        },
        &shutdown,
    ));
    assert_eq!(
        ask(&state, "/healthz").await,
        (
            500,
            "[-]loop failed: reason withheld\nhealthz check failed\n".to_owned()
        )
    );
    assert_eq!(ask(&state, "/livez").await.0, 500);
    assert_eq!(
        ask(&state, "/healthz/ping").await.0,
        404,
        "no ping once a check is added"
    );
    assert_eq!(
        ask(&state, "/readyz").await,
        (
            500,
            "[-]db failed: reason withheld\n[+]informer-sync ok\n[+]shutdown ok\nhealthz check failed\n"
                .to_owned()
        )
    );
    assert_eq!(
        ask(&state, "/readyz?exclude=db").await,
        (200, "ok\n".to_owned())
    );
}

#[tokio::test]
async fn a_checks_own_path_runs_it_alone_and_shows_its_error() {
    let state = serving(probes_of(
        |m| {
            m.add_healthz_check("fine", || Ok(())).unwrap();
            m.add_readyz_check("db", || async { Err("connection refused".into()) })
                .unwrap();
        },
        &CancellationToken::new(),
    ));
    assert_eq!(ask(&state, "/healthz/fine").await, (200, "ok\n".to_owned()));
    assert_eq!(ask(&state, "/livez/fine/").await, (200, "ok\n".to_owned()));
    assert_eq!(
        ask(&state, "/readyz/db").await,
        (
            500,
            "internal server error: connection refused\n".to_owned()
        )
    );
    assert_eq!(ask(&state, "/readyz/informer-sync").await.0, 200);
    assert_eq!(ask(&state, "/readyz/fine").await.0, 404, "a health check");
    assert_eq!(ask(&state, "/healthz/db").await.0, 404, "a readiness check");
    assert_eq!(ask(&state, "/healthz/fine/more").await.0, 404);
}

#[tokio::test]
async fn readyz_fails_once_shutdown_has_begun() {
    let shutdown = CancellationToken::new();
    let state = serving(probes_of(|_| {}, &shutdown));
    assert_eq!(ask(&state, "/readyz").await, (200, "ok\n".to_owned()));
    shutdown.cancel();
    assert_eq!(
        ask(&state, "/readyz").await,
        (
            500,
            "[+]informer-sync ok\n[-]shutdown failed: shutting down\nhealthz check failed\n"
                .to_owned()
        )
    );
    assert_eq!(ask(&state, "/healthz").await.0, 200, "still alive");
}

#[test]
fn check_names_must_be_path_segments_and_unique_per_endpoint() {
    let mut m = Manager::with_factory(InformerFactory::without_client());
    m.add_healthz_check("db", || Ok(())).unwrap();
    m.add_readyz_check("db", || Ok(())).unwrap();
    assert!(matches!(
        m.add_healthz_check("db", || Ok(())),
        Err(ManagerError::DuplicateCheck { endpoint: "healthz", name }) if name == "db"
    ));
    for reserved in ["informer-sync", "shutdown"] {
        assert!(matches!(
            m.add_readyz_check(reserved, || Ok(())),
            Err(ManagerError::DuplicateCheck {
                endpoint: "readyz",
                ..
            })
        ));
    }
    m.add_healthz_check("ping", || Ok(()))
        .expect("ping is the manager's only while no health check is added");
    for bad in ["", "a/b", "with space"] {
        assert!(matches!(
            m.add_healthz_check(bad, || Ok(())),
            Err(ManagerError::InvalidCheckName(n)) if n == bad
        ));
    }
}

#[tokio::test]
async fn a_health_probe_address_serves_the_probes_apart_from_metrics() {
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let mut manager = manager.health_probe_address("127.0.0.1:0".parse().unwrap());
    manager.add_readyz_check("warm", || Ok(())).unwrap();
    let metrics = manager.bind().await.unwrap().unwrap();
    let probes = manager.bind_health_probe().await.unwrap().unwrap();
    assert_ne!(metrics, probes);
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));

    assert_eq!(get(probes, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(get(probes, "/readyz/warm").await.0, 200);
    assert_eq!(get(probes, "/metrics").await.0, 404);
    assert_eq!(get(metrics, "/metrics").await.0, 200);
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(get(metrics, path).await.0, 404, "{path}");
    }
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(TcpStream::connect(probes).await.is_err(), "closed");
}

#[tokio::test]
async fn the_metrics_address_as_probe_address_serves_one_endpoint() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = taken.local_addr().unwrap();
    drop(taken);
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let mut manager = manager
        .metrics_address(address)
        .health_probe_address(address);
    assert_eq!(manager.bind().await.unwrap(), Some(address));
    assert_eq!(manager.bind_health_probe().await.unwrap(), Some(address));
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    assert_eq!(get(address, "/metrics").await.0, 200);
    assert_eq!(get(address, "/healthz").await.0, 200);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn without_http_a_health_probe_address_still_serves_the_probes() {
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let mut manager = manager
        .without_http()
        .health_probe_address("127.0.0.1:0".parse().unwrap());
    assert_eq!(manager.bind().await.unwrap(), None, "no metrics");
    let probes = manager.bind_health_probe().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    assert_eq!(get(probes, "/readyz").await.0, 200);
    assert_eq!(get(probes, "/metrics").await.0, 404);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn manager_fails_to_start_when_the_probe_address_is_taken() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = taken.local_addr().unwrap();
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let result = manager
        .health_probe_address(address)
        .run(CancellationToken::new())
        .await;
    assert!(
        matches!(result, Err(ManagerError::BindHealthProbe { address: a, .. }) if a == address)
    );
}

#[tokio::test]
async fn informers_taken_from_the_factory_run_without_a_controller_and_readyz_waits_for_them() {
    let source = source_with(&["a"]);
    source.fail_next_list(informer_core::ListWatchError::status(
        500,
        "InternalError",
        "not yet",
    ));
    // A task's informer, taken from the manager's factory before it runs: no controller.
    let (mut manager, registered) = manager(&source);
    let informer = registered.informer().clone();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    manager
        .add_task(
            Task::new("reader", move |cancel: CancellationToken| {
                let (informer, counter) = (informer.clone(), counter.clone());
                async move {
                    counter.store(informer.store().list().len(), Ordering::SeqCst);
                    cancel.cancelled().await;
                    Ok(())
                }
            })
            .needs_leader_election(false),
        )
        .unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    let (status, body) = get(address, "/readyz").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("caches not synced: configmaps.v1"), "{body}");
    eventually_async("the factory's informer synced", async || {
        registered.informer().has_synced()
    })
    .await;
    eventually_async("/readyz is 200", async || {
        get(address, "/readyz").await.0 == 200
    })
    .await;
    eventually_async("the task read the cache", async || {
        seen.load(Ordering::SeqCst) == 1
    })
    .await;
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_failing_task_leaves_the_manager_and_its_controllers_running() {
    let source = source_with(&["a"]);
    let (mut manager, _registered) = manager(&source);
    let reconciled = Arc::new(AtomicUsize::new(0));
    let counter = reconciled.clone();
    let controller = manager
        .controller::<ConfigMap>()
        .build(reconciler_fn(move |_k, _o: Option<Arc<ConfigMap>>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok(Action::Done) }
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let (r1, r2) = (ran.clone(), ran.clone());
    manager
        .add_task(Task::new("failing", move |_c: CancellationToken| {
            r1.fetch_add(1, Ordering::SeqCst);
            async { Err("gave up".into()) }
        }))
        .unwrap();
    manager
        .add_task(Task::new("panicking", move |_c: CancellationToken| {
            r2.fetch_add(1, Ordering::SeqCst);
            async { panic!("boom") }
        }))
        .unwrap();
    let address = manager.bind().await.unwrap().unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    eventually_async("both tasks ran", async || ran.load(Ordering::SeqCst) == 2).await;
    eventually_async("a is reconciled", async || {
        reconciled.load(Ordering::SeqCst) == 1
    })
    .await;
    source.create(cm("ns", "b"));
    eventually_async("b is reconciled after the tasks failed", async || {
        reconciled.load(Ordering::SeqCst) == 2
    })
    .await;
    assert_eq!(get(address, "/healthz").await.0, 200);
    assert_eq!(ran.load(Ordering::SeqCst), 2, "not restarted");
    cancel.cancel();
    run.await.unwrap().expect("run still returns Ok");
}

#[tokio::test]
async fn tasks_need_unique_names_and_leader_election_is_refused_when_sharding() {
    let source = source_with(&[]);
    let (mut manager, _registered) = manager(&source);
    let idle = |name: &str| {
        Task::new(name, |c: CancellationToken| async move {
            c.cancelled().await;
            Ok(())
        })
    };
    manager.add_task(idle("a")).unwrap();
    assert!(matches!(
        manager.add_task(idle("a")),
        Err(ManagerError::DuplicateTask(n)) if n == "a"
    ));
    manager
        .add_task(idle("everywhere").needs_leader_election(false))
        .unwrap();
    // A sharding manager (its shard manager built over a fake, as `mode()` would).
    let shards = crate::shard::ShardManager::with_api(
        crate::lease::fake::FakeLeases::new(),
        ShardConfig::new(4, "ctl", "default", "p"),
    )
    .unwrap();
    manager.mode = Some(Mode::Shards(shards));
    assert!(matches!(
        manager.run(CancellationToken::new()).await,
        Err(ManagerError::TaskNeedsLeaderElection(n)) if n == "a"
    ));
}

#[tokio::test]
async fn manager_shutdown_lets_reconciles_in_flight_finish() {
    let source = source_with(&["a"]);
    let (manager, _registered) = manager(&source);
    let mut manager = manager.without_http();
    let started = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(AtomicUsize::new(0));
    let (s, f) = (started.clone(), finished.clone());
    let controller = manager
        .controller::<ConfigMap>()
        .build(reconciler_fn(move |_k, _o: Option<Arc<ConfigMap>>| {
            let (s, f) = (s.clone(), f.clone());
            async move {
                s.notify_one();
                tokio::time::sleep(Duration::from_millis(200)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(Action::Done)
            }
        }))
        .unwrap();
    manager.add(controller).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(manager.run(cancel.clone()));
    started.notified().await;
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!(source.open_watches(), 0, "informers stopped");
}

#[test]
fn duplicate_controller_names_are_rejected() {
    let source = source_with(&[]);
    let (mut manager, _registered) = manager(&source);
    let noop = || reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async { Ok(Action::Done) });
    manager
        .add(manager.controller::<ConfigMap>().build(noop()).unwrap())
        .unwrap();
    let again = manager.controller::<ConfigMap>().build(noop()).unwrap();
    assert!(
        matches!(manager.add(again), Err(ManagerError::DuplicateController(n)) if n == "configmap")
    );
    let renamed = manager
        .controller::<ConfigMap>()
        .name("other")
        .build(noop())
        .unwrap();
    manager.add(renamed).unwrap();
}

#[tokio::test]
async fn leader_election_and_sharding_are_exclusive_and_need_a_client() {
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let both = manager
        .leader_election(LeaderElectionConfig::new("lock", "default", "a"))
        .sharding(ShardConfig::new(4, "ctl", "default", "a"));
    assert!(matches!(
        both.run(CancellationToken::new()).await,
        Err(ManagerError::LeaderElectionAndSharding)
    ));

    let (manager, _registered) = self::manager(&source);
    let mut leader = manager.leader_election(LeaderElectionConfig::new("lock", "default", "a"));
    assert!(matches!(
        leader.leader_elector(),
        Err(ManagerError::NoClient)
    ));
    assert!(matches!(
        leader.run(CancellationToken::new()).await,
        Err(ManagerError::NoClient)
    ));

    let (mut plain, _registered) = self::manager(&source);
    assert!(plain.leader_elector().unwrap().is_none());
    assert!(plain.shard_manager().unwrap().is_none());
}

#[tokio::test]
async fn manager_fails_to_start_when_the_address_is_taken() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = taken.local_addr().unwrap();
    let source = source_with(&[]);
    let (manager, _registered) = manager(&source);
    let result = manager
        .metrics_address(address)
        .run(CancellationToken::new())
        .await;
    assert!(matches!(result, Err(ManagerError::Bind { address: a, .. }) if a == address));
}

// ---------------------------------------------------------------------------------------
// The `leaderElection` health check
// ---------------------------------------------------------------------------------------

const LEASE: Duration = Duration::from_secs(15);

fn fake_elector(store: &Arc<crate::lease::fake::FakeLeases>, id: &str) -> LeaderElector {
    LeaderElector::with_api(
        store.clone(),
        LeaderElectionConfig::new("lock", "default", id),
    )
    .unwrap()
}

/// The probes of a leader-elected manager (no controller) whose elector is `elector`, with
/// `tolerance` for the `leaderElection` check.
fn leader_probes(elector: &LeaderElector, tolerance: Duration) -> Arc<Probes> {
    let mut manager = Manager::with_factory(InformerFactory::without_client())
        .leader_election(elector.config().clone())
        .leader_election_health_tolerance(tolerance);
    manager.mode = Some(Mode::Leader(elector.clone()));
    let mode = manager.mode.take().unwrap();
    Arc::new(manager.probes(&Arc::new(Vec::new()), &CancellationToken::new(), &mode))
}

#[tokio::test(start_paused = true)]
async fn a_stuck_leader_fails_healthz_with_a_leader_election_line_and_a_standby_passes() {
    let store = crate::lease::fake::FakeLeases::new();
    let a = fake_elector(&store, "a");
    // Drive a's loop until it leads, then never poll it again: it is stuck.
    let mut stalled = Box::pin(a.run(CancellationToken::new()));
    tokio::select! {
        () = async { while !a.is_leader() { tokio::time::sleep(Duration::from_millis(1)).await } } => {}
        () = &mut stalled => panic!("the loop returned"),
    }
    let renewed = store.last_write.lock().expect("acquired");
    // Elsewhere (another Lease), a standby behind a leader that renews.
    let other_store = crate::lease::fake::FakeLeases::new();
    let (c, b) = (
        fake_elector(&other_store, "c"),
        fake_elector(&other_store, "b"),
    );
    let runs: Vec<_> = [c.clone(), b.clone()]
        .into_iter()
        .map(|e| tokio::spawn(async move { e.run(CancellationToken::new()).await }))
        .collect();
    while !c.is_leader() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let tolerance = Duration::from_secs(5);
    let leader = serving(leader_probes(&a, tolerance));
    let other = serving(leader_probes(&b, tolerance));

    assert_eq!(ask(&leader, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(
        ask(&leader, "/healthz?verbose").await,
        (
            200,
            "[+]leaderElection ok\n[+]ping ok\nhealthz check passed\n".to_owned()
        )
    );
    tokio::time::sleep_until(renewed + LEASE + tolerance).await;
    assert_eq!(ask(&leader, "/healthz").await.0, 200, "at the limit");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(a.is_leader(), "still believes it leads");
    let failed = "[-]leaderElection failed: failed election to renew leadership on lease lock\n\
                  [+]ping ok\nhealthz check failed\n";
    assert_eq!(ask(&leader, "/healthz").await, (500, failed.to_owned()));
    assert_eq!(ask(&leader, "/livez").await, (500, failed.to_owned()));
    assert_eq!(
        ask(&leader, "/healthz/leaderElection").await,
        (
            500,
            "internal server error: failed election to renew leadership on lease lock\n".to_owned()
        )
    );
    assert_eq!(
        ask(&leader, "/healthz?exclude=leaderElection").await.0,
        200,
        "excluded"
    );
    assert_eq!(
        ask(&leader, "/readyz").await.0,
        200,
        "a liveness check only"
    );

    assert!(!b.is_leader(), "c renews: b stands by");
    assert_eq!(ask(&other, "/healthz").await, (200, "ok\n".to_owned()));
    assert_eq!(ask(&other, "/healthz/leaderElection").await.0, 200);
    for run in runs {
        run.abort();
    }
}

#[tokio::test]
async fn the_leader_election_check_is_added_only_with_leader_election() {
    let plain = serving(probes_of(|_| {}, &CancellationToken::new()));
    assert_eq!(ask(&plain, "/healthz/leaderElection").await.0, 404);
    let elector = fake_elector(&crate::lease::fake::FakeLeases::new(), "a");
    let leader = serving(leader_probes(&elector, Duration::ZERO));
    assert_eq!(
        ask(&leader, "/healthz/leaderElection").await,
        (200, "ok\n".to_owned()),
        "not running: passes"
    );
}

#[tokio::test]
async fn a_users_leader_election_health_check_collides_only_with_leader_election() {
    let config = LeaderElectionConfig::new("lock", "default", "a");
    // Added after leader election: refused at once.
    let mut after =
        Manager::with_factory(InformerFactory::without_client()).leader_election(config.clone());
    assert!(matches!(
        after.add_healthz_check("leaderElection", || Ok(())),
        Err(ManagerError::DuplicateCheck { endpoint: "healthz", name }) if name == "leaderElection"
    ));
    after
        .add_readyz_check("leaderElection", || Ok(()))
        .expect("/readyz has no such check");
    // Added before: refused when the manager runs.
    let mut before = Manager::with_factory(InformerFactory::without_client())
        .metrics_address("127.0.0.1:0".parse().unwrap())
        .handle_signals(false);
    before
        .add_healthz_check("leaderElection", || Ok(()))
        .expect("no leader election yet");
    let mut before = before.leader_election(config);
    before.mode = Some(Mode::Leader(fake_elector(
        &crate::lease::fake::FakeLeases::new(),
        "a",
    )));
    assert!(matches!(
        before.run(CancellationToken::new()).await,
        Err(ManagerError::DuplicateCheck { endpoint: "healthz", name }) if name == "leaderElection"
    ));
    // Sharding has no such check: the name is free.
    let mut sharded = Manager::with_factory(InformerFactory::without_client())
        .sharding(ShardConfig::new(4, "ctl", "default", "a"));
    sharded
        .add_healthz_check("leaderElection", || Ok(()))
        .expect("free with sharding");
}
