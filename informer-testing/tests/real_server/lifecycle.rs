//! `EnvTest` itself: it starts, serves a CRD through a client that trusts its certificate,
//! passes extra flags, survives restarts of either process with its data, reports a failed
//! start with the process's log, and leaves nothing behind when dropped.

use std::net::TcpStream;
use std::time::Duration;

use informer_testing::envtest::{Component, EnvTest, Error, StopMode};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

use super::common::{real_server, widget_resource};

fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }))
    .expect("a valid widget")
}

async fn names(api: &Api<DynamicObject>) -> Vec<String> {
    let list = api.list(&ListParams::default()).await.expect("list");
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    names.sort();
    names
}

fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(1),
    )
    .is_ok()
}

#[tokio::test]
async fn envtest_serves_a_crd_through_a_client_that_trusts_its_certificate() {
    let Some(env) = real_server(EnvTest::builder()).await else {
        return;
    };
    assert!(env.url().starts_with("https://127.0.0.1:"));
    let version = env.client().apiserver_version().await.expect("version");
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "36")
    );
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_resource());
    api.create(&PostParams::default(), &widget("w1", 1))
        .await
        .expect("create");
    assert_eq!(names(&api).await, ["w1"]);
    // The kubeconfig file describes the same server, with its certificate.
    let text = std::fs::read_to_string(env.kubeconfig_path()).expect("kubeconfig file");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).expect("a kubeconfig");
    assert_eq!(
        serde_json::to_value(&kubeconfig).unwrap(),
        serde_json::to_value(env.kubeconfig()).unwrap()
    );
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a config");
    let client = kube::Client::try_from(config).expect("client");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widget_resource());
    assert_eq!(names(&api).await, ["w1"]);
}

#[tokio::test]
async fn envtest_dropped_stops_both_processes_and_removes_its_directory() {
    let Some(env) = real_server(EnvTest::builder()).await else {
        return;
    };
    let dir = env.dir().to_path_buf();
    let apiserver = env.address().port();
    let etcd: u16 = env
        .etcd_url()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port");
    assert!(listening(apiserver) && listening(etcd));
    drop(env);
    assert!(!listening(apiserver), "the API server still listens");
    assert!(!listening(etcd), "etcd still listens");
    assert!(!dir.exists(), "{} is left", dir.display());
}

#[tokio::test]
async fn envtest_passes_extra_apiserver_flags() {
    // -v=3 makes the API server log every request, /readyz included.
    let Some(env) = real_server(EnvTest::builder().apiserver_arg("-v=3")).await else {
        return;
    };
    let log = std::fs::read_to_string(env.log_path(Component::ApiServer)).expect("log");
    assert!(log.contains(r#"URI="/readyz""#), "no request log:\n{log}");
}

#[tokio::test]
async fn envtest_restarts_the_apiserver_keeping_port_certificate_and_data() {
    let Some(env) = real_server(EnvTest::builder()).await else {
        return;
    };
    let client = env.client();
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    api.create(&PostParams::default(), &widget("before", 1))
        .await
        .expect("create");
    for mode in [StopMode::Kill, StopMode::Graceful] {
        env.stop_apiserver(mode).await;
        assert!(
            api.list(&ListParams::default()).await.is_err(),
            "a stopped server answered ({mode:?})"
        );
        env.start_apiserver()
            .await
            .expect("the API server starts again");
        // The client made before the restart still trusts the server and finds the data.
        assert_eq!(names(&api).await, ["before"]);
    }
    env.restart_apiserver(StopMode::Kill)
        .await
        .expect("restart");
    api.create(&PostParams::default(), &widget("after", 2))
        .await
        .expect("create after the restarts");
    assert_eq!(names(&api).await, ["after", "before"]);
}

/// Whether the API server's `/readyz` says `ok`.
async fn ready(client: &kube::Client) -> bool {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .expect("a request");
    matches!(client.request_text(request).await, Ok(text) if text == "ok")
}

#[tokio::test]
async fn envtest_restarts_etcd_keeping_its_data() {
    let Some(env) = real_server(EnvTest::builder()).await else {
        return;
    };
    let mut config = env.config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &widget_resource());
    api.create(&PostParams::default(), &widget("before", 1))
        .await
        .expect("create");
    assert!(ready(&client).await);
    env.stop_etcd(StopMode::Kill).await;
    // The API server keeps running and says it is not ready (its etcd check fails).
    let mut down = false;
    for _ in 0..300 {
        if !ready(&client).await {
            down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(down, "/readyz still says ok 30 s after etcd was killed");
    env.start_etcd().await.expect("etcd starts again");
    assert!(
        ready(&client).await,
        "start_etcd returns once the API server is ready"
    );
    api.create(&PostParams::default(), &widget("after", 3))
        .await
        .expect("create after etcd is back");
    assert_eq!(names(&api).await, ["after", "before"]);
}

#[tokio::test]
async fn envtest_start_that_fails_quotes_the_process_log() {
    let Some(assets) = informer_testing::envtest::Assets::from_env().ok() else {
        // The skip notice comes from the other tests' start_or_skip.
        return;
    };
    let err = EnvTest::builder()
        .assets(assets)
        .apiserver_arg("--no-such-flag")
        .start()
        .await
        .expect_err("an unknown flag stops the API server");
    match &err {
        Error::Exited {
            component, tail, ..
        } => {
            assert_eq!(*component, Component::ApiServer);
            assert!(tail.contains("unknown flag: --no-such-flag"), "{err}");
        }
        other => panic!("expected an exit, got {other}"),
    }
}

#[tokio::test]
async fn envtest_install_crd_refuses_an_invalid_crd_with_the_servers_reason() {
    let Some(env) = real_server(EnvTest::builder()).await else {
        return;
    };
    let invalid = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            // No schema: v1 CRDs must have a structural one.
            "versions": [{"name": "v1", "served": true, "storage": true}],
        },
    });
    let err = env.install_crd(invalid).await.expect_err("refused");
    let text = err.to_string();
    assert!(matches!(err, Error::Crd { .. }), "{text}");
    assert!(
        text.contains("gadgets.example.com") && text.contains("schema"),
        "{text}"
    );
}

#[tokio::test]
async fn envtest_compact_etcd_expires_older_versions_without_the_watch_cache() {
    let Some(env) = real_server(EnvTest::builder().apiserver_arg("--watch-cache=false")).await
    else {
        return;
    };
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_resource());
    let created = api
        .create(&PostParams::default(), &widget("w1", 1))
        .await
        .expect("create");
    let old = created
        .metadata
        .resource_version
        .clone()
        .expect("a version");
    api.replace("w1", &PostParams::default(), &{
        let mut w = created.clone();
        w.data["spec"]["size"] = json!(2);
        w
    })
    .await
    .expect("update");
    let exact = ListParams::default()
        .at(&old)
        .matching(kube::api::VersionMatch::Exact);
    assert!(
        api.list(&exact).await.is_ok(),
        "the old version is still there"
    );
    let revision = env.compact_etcd().await.expect("compact");
    assert!(revision > old.parse::<u64>().unwrap());
    match api.list(&exact).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 410, "{status:?}"),
        other => panic!("expected 410 Gone, got {other:?}"),
    }
    // Compacting again at the same revision is fine.
    assert_eq!(env.compact_etcd().await.expect("compact again"), revision);
}

#[tokio::test]
async fn envtest_processes_die_when_the_test_panics_and_the_logs_stay() {
    if informer_testing::envtest::Assets::from_env().is_err() {
        return; // the skip notice comes from the other tests' start_or_skip
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let outcome = tokio::spawn(async move {
        let env = EnvTest::start().await.expect("starts");
        let etcd: u16 = env
            .etcd_url()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port");
        tx.send((env.address().port(), etcd, env.dir().to_path_buf()))
            .expect("sent");
        panic!("a failing test (on purpose)");
    })
    .await;
    assert!(outcome.is_err_and(|e| e.is_panic()));
    let (apiserver, etcd, dir) = rx.recv().expect("the task got that far");
    assert!(!listening(apiserver), "the API server outlived the panic");
    assert!(!listening(etcd), "etcd outlived the panic");
    // Kept for diagnosis: the logs, not etcd's data.
    assert!(dir.join("apiserver.log").is_file() && dir.join("etcd.log").is_file());
    assert!(!dir.join("etcd").exists());
    std::fs::remove_dir_all(&dir).expect("remove the kept logs");
}
