//! The server's bounds, each through a real client: history by bytes, slow watches closed
//! (and their clients watching again), trickling bodies and slow handlers timed out.

use std::time::Duration;

use futures::{StreamExt as _, TryStreamExt as _};
use informer_testing::{TestApiServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::common::{client_without_retries, namespace, parse_response, status, within};

fn config_map(name: &str, payload: usize) -> ConfigMap {
    ConfigMap {
        metadata: kube::core::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("payload".to_string(), "x".repeat(payload))].into()),
        ..Default::default()
    }
}

/// Sets `data.i` (and a payload of `payload` bytes).
async fn set_i(api: &Api<ConfigMap>, name: &str, i: usize, payload: usize) -> ConfigMap {
    let patch = serde_json::json!({"data": {"i": i.to_string(), "payload": format!("{i}{}", "x".repeat(payload))}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch")
}

#[tokio::test]
async fn history_is_bounded_by_bytes_and_older_versions_are_gone() {
    const LIMIT: usize = 4 << 20;
    let server = TestApiServer::builder()
        .history_bytes_limit(LIMIT)
        .start()
        .await
        .expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let created = api
        .create(&PostParams::default(), &config_map("big", 512 << 10))
        .await
        .expect("create");
    let first = created.metadata.resource_version.expect("rv");
    for i in 0..40 {
        set_i(&api, "big", i, 512 << 10).await;
    }
    let stats = server.stats();
    println!("{stats:?}");
    assert!(stats.history_bytes <= LIMIT, "{stats:?}");
    assert!(
        stats.history_changes < 10,
        "40 changes of 512 KiB do not fit 4 MiB: {stats:?}"
    );
    assert_eq!(
        stats.objects, 40,
        "4 namespaces, their default ServiceAccounts, the kubernetes Service, its Endpoints and \
         EndpointSlice, the 4 bootstrap ClusterRoles and their bindings, the 2 system \
         PriorityClasses, the 18 built-in Local APIServices, and the ConfigMap"
    );
    let mut events = api
        .watch(&WatchParams::default(), &first)
        .await
        .expect("watch")
        .boxed();
    match within(events.next()).await {
        Some(Ok(WatchEvent::Error(err))) => assert_eq!(err.code, 410, "{err:?}"),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}

/// Opens a watch on a raw connection and never reads from it.
async fn stalled_watch(server: &TestApiServer, resource_version: &str) -> TcpStream {
    let mut stream = TcpStream::connect(server.address()).await.expect("connect");
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion={resource_version} HTTP/1.1\r\nHost: {}\r\n\r\n",
        server.address()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    stream
}

#[tokio::test]
async fn a_watch_that_falls_behind_is_closed_and_its_client_watches_again() {
    const PAYLOAD: usize = 64 << 10;
    // A backlog of 1 MiB: 16 of these changes. Sockets and client buffers hold a few MiB
    // more before a watcher that stops reading falls behind; the loop below ends on the
    // closes, long before its bound.
    let server = TestApiServer::builder()
        .plain_http()
        .watch_backlog_limit(1_000, 1 << 20)
        .start()
        .await
        .expect("server");
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    api.create(&PostParams::default(), &config_map("cm", 0))
        .await
        .expect("create");
    set_i(&api, "cm", 0, 0).await;

    // A client that watches (kube's watcher: list, then watch with bookmarks) and stops
    // reading for a while, and a raw connection that never reads.
    let mut follower = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let initial = within(follower.try_next())
        .await
        .expect("ok")
        .expect("the initial object");
    assert_eq!(initial.data.unwrap()["i"], "0");
    // Polled until nothing comes: its watch is open (the stream keeps it across polls).
    let idle = tokio::time::timeout(Duration::from_millis(500), follower.try_next()).await;
    assert!(idle.is_err(), "no change yet: {idle:?}");
    let _stalled = stalled_watch(&server, &server.resource_version().to_string()).await;
    within(async {
        while server.faults().open_watches() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    let mut written = 0;
    while server.stats().slow_watches_closed < 2 {
        assert!(
            written < 2_000,
            "the watches were never closed: {:?}",
            server.stats()
        );
        written += 1;
        set_i(&api, "cm", written, PAYLOAD).await;
    }
    let stats = server.stats();
    println!("after {written} changes of {PAYLOAD} bytes: {stats:?}");
    assert_eq!(stats.watches, 0, "both watches are closed");
    assert!(
        stats.watch_backlog_bytes == 0,
        "closed watches hold nothing: {stats:?}"
    );
    let watches_before = server.faults().request_count(Verb::Watch);

    // The follower reads again: what its connection held, then the end of the stream, then
    // a new watch from the last version it saw, which replays the rest from the history.
    let mut seen = Vec::new();
    within(async {
        while seen.last() != Some(&written) {
            let object = follower.try_next().await.expect("ok").expect("an object");
            seen.push(object.data.unwrap()["i"].parse::<usize>().unwrap());
        }
    })
    .await;
    assert_eq!(
        seen,
        (1..=written).collect::<Vec<_>>(),
        "every change once, in order, across the re-watch"
    );
    assert!(
        server.faults().request_count(Verb::Watch) > watches_before,
        "the client watched again"
    );
}

#[tokio::test]
async fn a_body_that_trickles_in_times_out() {
    let server = TestApiServer::builder()
        .plain_http()
        .request_timeout(Duration::from_millis(500))
        .start()
        .await
        .expect("server");
    let mut stream = TcpStream::connect(server.address()).await.expect("connect");
    let head = format!(
        "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"metadata\":",
        server.address()
    );
    stream.write_all(head.as_bytes()).await.expect("send");
    // The rest of the body never comes; the write side stays open.
    let mut response = Vec::new();
    within(stream.read_to_end(&mut response))
        .await
        .expect("read");
    let response = parse_response(&response).expect("an HTTP response");
    response.assert_status(504, "Timeout");
    assert_eq!(response.header("connection"), Some("close"));
    assert!(
        server
            .list_json("v1", "ConfigMap", Some("default"))
            .unwrap()
            .is_empty(),
        "nothing was created"
    );
}

#[tokio::test]
async fn a_handler_that_outlives_the_request_timeout_gets_504() {
    let server = TestApiServer::builder()
        .request_timeout(Duration::from_millis(500))
        .start()
        .await
        .expect("server");
    namespace(&server, "slow");
    let api: Api<ConfigMap> = Api::namespaced(client_without_retries(&server), "slow");
    api.create(&PostParams::default(), &config_map("cm", 0))
        .await
        .expect("create");
    server
        .faults()
        .stall_next(Verb::Get, 1, Duration::from_secs(30));
    let err = within(api.get("cm")).await.expect_err("times out");
    let status = status(err);
    assert_eq!(status.code, 504, "{status:?}");
    assert_eq!(status.reason, "Timeout");
    assert!(
        status.message.contains("request did not complete"),
        "{status:?}"
    );
    // The server goes on serving.
    assert_eq!(
        within(api.get("cm"))
            .await
            .expect("get")
            .metadata
            .name
            .as_deref(),
        Some("cm")
    );
}
