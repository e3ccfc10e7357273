//! Unit tests of the manager and the metrics: HTTP endpoints, readiness, metric names and
//! values, configuration errors, shutdown. Sources are `MemoryListerWatcher`s.

use std::collections::HashMap;
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

use super::http::{HttpState, respond};
use super::*;
use crate::controller::{Action, ReconcileError, reconciler_fn};
use crate::factory::{InformerHandle, InformerParams};
use crate::leader::LeaderElectionConfig;
use crate::metrics::{ControllerMetrics, Metrics};
use crate::shard::ShardConfig;
use crate::test_support::eventually_async;
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

/// Samples of an OpenMetrics text: `name{labels}` → value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
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
    assert_eq!(status, 503);
    assert!(body.starts_with("not ready: configmaps.v1"), "{body}");
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
        v(r#"workqueue_adds_total{name="shop"}"#),
        4.0,
        "3 initial + 1 retry"
    );
    assert_eq!(v(r#"workqueue_retries_total{name="shop"}"#), 1.0);
    assert_eq!(v(r#"workqueue_depth{name="shop"}"#), 0.0);
    assert_eq!(
        v(r#"workqueue_queue_duration_seconds_count{name="shop"}"#),
        4.0
    );
    assert_eq!(
        v(r#"workqueue_work_duration_seconds_count{name="shop"}"#),
        4.0
    );
    assert_eq!(v(r#"workqueue_unfinished_work_seconds{name="shop"}"#), 0.0);
    assert_eq!(
        v(r#"workqueue_longest_running_processor_seconds{name="shop"}"#),
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
    assert!(s[r#"workqueue_unfinished_work_seconds{name="stuck"}"#] >= 0.04);
    assert!(s[r#"workqueue_longest_running_processor_seconds{name="stuck"}"#] >= 0.04);
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

#[tokio::test]
async fn http_unknown_paths_are_not_found_and_other_methods_not_allowed() {
    let state = HttpState {
        registry: Registry::default(),
        ready: Box::new(|| Err("caches".into())),
        shutting_down: Default::default(),
    };
    let body = |r: ::http::Response<http_body_util::Full<bytes::Bytes>>| async move {
        (
            r.status().as_u16(),
            String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap(),
        )
    };
    assert_eq!(body(respond(&state, &Method::GET, "/nope")).await.0, 404);
    assert_eq!(
        body(respond(&state, &Method::POST, "/metrics")).await.0,
        405
    );
    assert_eq!(
        body(respond(&state, &Method::GET, "/readyz")).await,
        (503, "not ready: caches\n".to_owned())
    );
    let metrics = respond(&state, &Method::GET, "/metrics");
    assert_eq!(
        metrics.headers()[::http::header::CONTENT_TYPE],
        super::http::METRICS_CONTENT_TYPE
    );
    assert_eq!(body(metrics).await, (200, "# EOF\n".to_owned()));
    state.shutting_down.store(true, Ordering::SeqCst);
    assert_eq!(
        body(respond(&state, &Method::GET, "/readyz")).await,
        (503, "shutting down\n".to_owned())
    );
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
