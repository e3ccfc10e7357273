//! Fault injection, request counting, and how real clients recover.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use informer_testing::{ApiError, FailureCode, RequestMatch, RestartMode, StatusReason, Verb};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::ObjectMeta;
use kube::runtime::watcher::{self, Event};
use serde_json::json;

use super::common::{client_without_retries, names, pod, raw, retrying, server, status, within};

#[tokio::test]
async fn fail_next_fails_matching_requests_then_recovers() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    server
        .faults()
        .fail_next(Verb::List, 2, FailureCode::InternalError);
    for _ in 0..2 {
        let err = status(within(pods.list(&ListParams::default())).await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    }
    within(pods.list(&ListParams::default())).await.unwrap();
    assert_eq!(server.faults().request_count(Verb::List), 3);

    // Only the matching resource fails.
    server.faults().fail_next(
        RequestMatch::verb(Verb::Create).resource("configmaps"),
        1,
        FailureCode::Status(ApiError::new(StatusReason::Conflict, "injected")),
    );
    within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("c".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let err = status(
        within(maps.create(&PostParams::default(), &cm))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    within(maps.create(&PostParams::default(), &cm))
        .await
        .unwrap();

    // Injected failures touch no data.
    server
        .faults()
        .fail_next(Verb::Delete, 1, FailureCode::InternalError);
    assert_eq!(
        status(
            within(pods.delete("p", &DeleteParams::default()))
                .await
                .unwrap_err()
        )
        .code,
        500
    );
    within(pods.get("p")).await.unwrap();

    // clear() drops pending failures.
    server
        .faults()
        .fail_next(Verb::Get, 5, FailureCode::InternalError);
    server.faults().clear();
    within(pods.get("p")).await.unwrap();
}

#[tokio::test]
async fn faults_and_counts_can_target_one_subresource() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("web", &[])))
        .await
        .unwrap();
    let status_patches = RequestMatch::verb(Verb::Patch)
        .resource("pods")
        .subresource("status");
    server
        .faults()
        .fail_next(status_patches.clone(), 1, FailureCode::InternalError);
    let running = Patch::Merge(json!({"status": {"phase": "Running"}}));
    let labelled = Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}}));
    // The object's own patch is not the status's: it goes through.
    within(pods.patch("web", &PatchParams::default(), &labelled))
        .await
        .unwrap();
    let err = status(
        within(pods.patch_status("web", &PatchParams::default(), &running))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 500);
    within(pods.patch_status("web", &PatchParams::default(), &running))
        .await
        .unwrap();
    let faults = server.faults();
    assert_eq!(faults.request_count(status_patches), 2);
    assert_eq!(
        faults.request_count(
            RequestMatch::verb(Verb::Patch)
                .resource("pods")
                .subresource("")
        ),
        1
    );
    assert_eq!(
        faults.request_count(RequestMatch::verb(Verb::Patch).resource("pods")),
        3
    );
}

#[tokio::test]
async fn too_many_requests_carry_retry_after_and_kube_retries_them() {
    let server = server().await;
    server.faults().fail_next(
        Verb::Get,
        1,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_secs(2),
        },
    );
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/x",
        &[],
        b"",
    )
    .await;
    response.assert_status(429, "TooManyRequests");
    assert_eq!(response.header("Retry-After"), Some("2"));
    assert_eq!(response.json()["details"]["retryAfterSeconds"], 2);

    // kube::Client retries 429s by itself: two failures, then success.
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    server.faults().reset_request_counts();
    server.faults().fail_next(
        Verb::Get,
        2,
        FailureCode::TooManyRequests {
            retry_after: Duration::ZERO,
        },
    );
    within(pods.get("p")).await.unwrap();
    assert_eq!(server.faults().request_count(Verb::Get), 3);

    // Without retries the client sees the 429.
    let pods: Api<Pod> = Api::namespaced(client_without_retries(&server), "default");
    server.faults().fail_next(
        Verb::Get,
        1,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_secs(1),
        },
    );
    assert_eq!(status(within(pods.get("p")).await.unwrap_err()).code, 429);
}

#[tokio::test]
async fn stalls_delay_responses() {
    // Stalls long enough that a stalled and a prompt answer stay apart on a loaded machine.
    const STALL: Duration = Duration::from_secs(2);
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.list(&ListParams::default())).await.unwrap();
    server.faults().stall_next(Verb::List, 1, STALL);
    let started = Instant::now();
    within(pods.list(&ListParams::default())).await.unwrap();
    assert!(started.elapsed() >= STALL);
    let started = Instant::now();
    within(pods.list(&ListParams::default())).await.unwrap();
    assert!(started.elapsed() < STALL);

    server.faults().stall(STALL);
    let started = Instant::now();
    within(pods.get_opt("x")).await.unwrap();
    assert!(started.elapsed() >= STALL);
    // A client timeout fires while the server stalls.
    let timed_out = tokio::time::timeout(
        Duration::from_millis(100),
        pods.list(&ListParams::default()),
    )
    .await;
    assert!(timed_out.is_err());
    server.faults().clear();
    let started = Instant::now();
    within(pods.list(&ListParams::default())).await.unwrap();
    assert!(started.elapsed() < STALL);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_watches_ends_open_streams() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), &current))
        .await
        .unwrap()
        .boxed();
    within(async {
        while server.faults().open_watches() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(server.faults().drop_watches(), 1);
    assert!(within(stream.try_next()).await.unwrap().is_none());
    assert_eq!(server.faults().open_watches(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_events_reach_watch_streams() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), &current))
        .await
        .unwrap()
        .boxed();
    within(async {
        while server.faults().send_malformed_event() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let err = within(stream.next()).await.unwrap().unwrap_err();
    assert!(matches!(err, kube::Error::SerdeError(_)), "{err:?}");
    // The stream goes on after the bad line.
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    assert!(matches!(
        within(stream.try_next()).await.unwrap().unwrap(),
        WatchEvent::Added(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_error_events_reach_watch_streams() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), &current))
        .await
        .unwrap()
        .boxed();
    within(async {
        while server
            .faults()
            .send_watch_error(500, "StorageReadError", "corrupt object")
            == 0
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!((e.code, e.reason.as_str()), (500, "StorageReadError"));
            assert_eq!(e.message, "corrupt object");
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    // As kube-apiserver's watchers, the stream ends after its ERROR event (a client that
    // waits for the end to watch again, as client-node's informer does, sees it).
    assert!(within(stream.try_next()).await.unwrap().is_none());
    assert_eq!(server.faults().open_watches(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_watches_deliver_every_event_late_and_in_order() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let delay = Duration::from_millis(300);
    server.faults().delay_watch_events(delay);
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), &current))
        .await
        .unwrap()
        .boxed();
    within(async {
        while server.faults().open_watches() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let created = Instant::now();
    for name in ["a", "b", "c"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 3 {
        if let WatchEvent::Added(p) = within(stream.try_next()).await.unwrap().unwrap() {
            seen.push(p.metadata.name.unwrap());
        }
    }
    // A lower bound only: the delay holds the events back at least that long.
    assert!(created.elapsed() >= delay, "{:?}", created.elapsed());
    assert_eq!(seen, ["a", "b", "c"]);
    // clear() ends the delay for watches opened afterwards.
    server.faults().clear();
}

#[tokio::test]
async fn lagging_server_serves_lists_and_resumed_watches_from_an_older_state() {
    let server = server().await;
    let maps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm = |value: &str| ConfigMap {
        metadata: ObjectMeta {
            name: Some("c".into()),
            ..ObjectMeta::default()
        },
        data: Some([("v".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    };
    within(maps.create(&PostParams::default(), &cm("1")))
        .await
        .unwrap();
    let mut last = String::new();
    for value in ["2", "3"] {
        let replaced = within(maps.replace("c", &PostParams::default(), &cm(value)))
            .await
            .unwrap();
        last = replaced.metadata.resource_version.unwrap();
    }
    server.faults().lag(1);
    let value =
        |l: &kube::api::ObjectList<ConfigMap>| l.items[0].data.as_ref().unwrap()["v"].clone();
    // A list at "0" (or any version) is one revision behind...
    let any = within(maps.list(&ListParams::default().match_any()))
        .await
        .unwrap();
    assert_eq!(value(&any), "2");
    let rv = |s: &str| s.parse::<u64>().unwrap();
    assert!(rv(&any.metadata.resource_version.unwrap()) < rv(&last));
    // ...a consistent list is not.
    let consistent = within(maps.list(&ListParams::default())).await.unwrap();
    assert_eq!(value(&consistent), "3");
    // A watch from the latest version replays the last change.
    let mut stream = within(maps.watch(&WatchParams::default().disable_bookmarks(), &last))
        .await
        .unwrap()
        .boxed();
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Modified(c) => assert_eq!(c.metadata.resource_version.unwrap(), last),
        other => panic!("expected the replayed change, got {other:?}"),
    }
    server.faults().lag(0);
    let any = within(maps.list(&ListParams::default().match_any()))
        .await
        .unwrap();
    assert_eq!(value(&any), "3");
}

/// Reads watcher events, ignoring errors, until one matches.
async fn until<S>(stream: &mut S, mut wanted: impl FnMut(&Event<Pod>) -> bool) -> Vec<String>
where
    S: futures::Stream<Item = Result<Event<Pod>, watcher::Error>> + Unpin,
{
    let mut log = Vec::new();
    loop {
        match within(stream.next()).await.expect("the watcher never ends") {
            Ok(event) => {
                let done = wanted(&event);
                log.push(match &event {
                    Event::Init => "Init".to_string(),
                    Event::InitApply(p) => {
                        format!("InitApply {}", p.metadata.name.as_deref().unwrap())
                    }
                    Event::InitDone => "InitDone".to_string(),
                    Event::Apply(p) => format!("Apply {}", p.metadata.name.as_deref().unwrap()),
                    Event::Delete(p) => format!("Delete {}", p.metadata.name.as_deref().unwrap()),
                });
                if done {
                    return log;
                }
            }
            Err(_) => {
                log.push("Error".to_string());
                // A short pause, as a backoff would make.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn applied(name: &'static str) -> impl FnMut(&Event<Pod>) -> bool {
    move |event| matches!(event, Event::Apply(p) if p.metadata.name.as_deref() == Some(name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_resumes_after_dropped_watches_without_relisting() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let mut stream = watcher::watcher(pods.clone(), watcher::Config::default()).boxed();
    until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    until(&mut stream, applied("b")).await;

    server.faults().drop_watches();
    within(pods.create(&PostParams::default(), &pod("c", &[])))
        .await
        .unwrap();
    let log = until(&mut stream, applied("c")).await;
    assert_eq!(
        log,
        ["Apply c"],
        "resumed from the last version without a relist"
    );
    assert_eq!(server.faults().request_count(Verb::List), 1);
    assert!(server.faults().request_count(Verb::Watch) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_relists_after_compaction() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let mut stream = watcher::watcher(pods.clone(), watcher::Config::default()).boxed();
    until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    within(pods.create(&PostParams::default(), &pod("x", &[])))
        .await
        .unwrap();
    until(&mut stream, applied("x")).await;

    // The watch drops; while the watcher is not polled (as if disconnected)
    // things change and history is compacted.
    server.faults().drop_watches();
    within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    within(pods.delete("a", &DeleteParams::default()))
        .await
        .unwrap();
    within(pods.delete("x", &DeleteParams::default()))
        .await
        .unwrap();
    server.faults().compact();
    // Resuming asks for a compacted version: 410, then a relist.
    let log = until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    assert!(log.contains(&"Error".to_string()), "{log:?}");
    assert!(
        log.ends_with(&[
            "Init".to_string(),
            "InitApply b".to_string(),
            "InitDone".to_string()
        ]),
        "{log:?}"
    );
    assert_eq!(server.faults().request_count(Verb::List), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_survives_restarts() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let mut stream = watcher::watcher(pods.clone(), watcher::Config::default()).boxed();
    until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    within(pods.create(&PostParams::default(), &pod("x", &[])))
        .await
        .unwrap();
    until(&mut stream, applied("x")).await;

    // Keeping data: the watch resumes and sees new objects.
    let before = server.resource_version();
    server.faults().restart(RestartMode::KeepData);
    assert_eq!(server.resource_version(), before);
    retrying(async || pods.create(&PostParams::default(), &pod("b", &[])).await).await;
    until(&mut stream, applied("b")).await;
    let list = retrying(async || pods.list(&ListParams::default()).await).await;
    assert_eq!(names(&list.items), ["a", "b", "x"]);
    assert_eq!(server.faults().request_count(Verb::List), 2, "no relist");

    // Resetting data: resuming fails with 410 and the relist finds nothing.
    server.faults().restart(RestartMode::ResetData);
    assert!(
        server.resource_version() > before,
        "the revision never goes back"
    );
    let log = until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    assert!(
        log.ends_with(&["Init".to_string(), "InitDone".to_string()]),
        "{log:?}"
    );
    assert!(
        retrying(async || pods.list(&ListParams::default()).await)
            .await
            .items
            .is_empty()
    );
    let namespaces: Api<Namespace> = Api::all(server.client());
    let list = retrying(async || namespaces.list(&ListParams::default()).await).await;
    assert_eq!(list.items.len(), 4, "the default namespaces are recreated");
    retrying(async || pods.create(&PostParams::default(), &pod("c", &[])).await).await;
    until(&mut stream, applied("c")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_survives_malformed_events_and_failed_watches() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut stream = watcher::watcher(pods.clone(), watcher::Config::default()).boxed();
    until(&mut stream, |e| matches!(e, Event::InitDone)).await;
    within(pods.create(&PostParams::default(), &pod("x", &[])))
        .await
        .unwrap();
    until(&mut stream, applied("x")).await;
    assert_eq!(server.faults().send_malformed_event(), 1);
    server
        .faults()
        .fail_next(Verb::Watch, 2, FailureCode::InternalError);
    server.faults().drop_watches();
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let log = until(&mut stream, applied("a")).await;
    // The bad line, then the two failed re-watches.
    assert_eq!(log.iter().filter(|l| *l == "Error").count(), 3, "{log:?}");
    assert_eq!(
        server.faults().request_count(Verb::List),
        1,
        "no relist was needed"
    );
}

#[tokio::test]
async fn request_counts_by_verb() {
    let server = server().await;
    let client = server.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let faults = server.faults();
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    within(pods.get("a")).await.unwrap();
    within(pods.list(&ListParams::default())).await.unwrap();
    let current = server.resource_version().to_string();
    let stream = within(pods.watch(&WatchParams::default().timeout(1), &current))
        .await
        .unwrap();
    drop(stream);
    let mut a = within(pods.get("a")).await.unwrap();
    a.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
    within(pods.replace("a", &PostParams::default(), &a))
        .await
        .unwrap();
    within(pods.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"z": "1"}}})),
    ))
    .await
    .unwrap();
    within(pods.delete("a", &DeleteParams::default()))
        .await
        .unwrap();
    within(pods.delete_collection(&DeleteParams::default(), &ListParams::default()))
        .await
        .unwrap();
    within(client.apiserver_version()).await.unwrap();
    raw(&server, "GET", "/nowhere", &[], b"").await;

    assert_eq!(faults.request_count(Verb::Create), 1);
    assert_eq!(faults.request_count(Verb::Get), 2);
    assert_eq!(faults.request_count(Verb::List), 1);
    assert_eq!(faults.request_count(Verb::Watch), 1);
    assert_eq!(faults.request_count(Verb::Update), 1);
    assert_eq!(faults.request_count(Verb::Patch), 1);
    assert_eq!(faults.request_count(Verb::Delete), 1);
    assert_eq!(faults.request_count(Verb::DeleteCollection), 1);
    assert_eq!(faults.request_count(Verb::Discovery), 1);
    assert_eq!(faults.request_count(Verb::Other), 1);
    assert_eq!(
        faults.request_count(RequestMatch::any().resource("pods")),
        9
    );
    assert_eq!(
        faults.request_count(RequestMatch::verb(Verb::Get).resource("Pod")),
        2
    );
    assert_eq!(
        faults.request_count(RequestMatch::any().resource("configmaps")),
        0
    );
    assert_eq!(faults.request_count(RequestMatch::any()), 11);
    faults.reset_request_counts();
    assert_eq!(faults.request_count(RequestMatch::any()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_closes_connections_and_keeps_the_address() {
    let server = server().await;
    let address = server.address();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let current = server.resource_version().to_string();
    let mut open = within(pods.watch(&WatchParams::default(), &current))
        .await
        .unwrap()
        .boxed();
    server.faults().restart(RestartMode::KeepData);
    assert_eq!(server.address(), address);
    assert_eq!(server.faults().open_watches(), 0);
    assert!(
        within(open.try_next()).await.unwrap_or(None).is_none(),
        "the open watch ends"
    );
    // The client's pooled connection is gone; a new one works.
    let pod_a = retrying(async || pods.get("a").await).await;
    assert_eq!(pod_a.metadata.name.as_deref(), Some("a"));
    server.faults().restart(RestartMode::ResetData);
    assert!(retrying(async || pods.get_opt("a").await).await.is_none());
    // The lost data counts as one revision, then the namespaces, their default
    // ServiceAccounts, the bootstrap ClusterRoles, ClusterRoleBindings and PriorityClasses,
    // the 18 built-in Local APIServices, the kubernetes Service and its Endpoints and
    // EndpointSlice are recreated.
    assert_eq!(
        server.compacted_resource_version(),
        server.resource_version() - 39
    );
}
