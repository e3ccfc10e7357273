//! Watch: resumption, bookmarks, timeouts, streaming lists, 410s, and
//! `kube::runtime::watcher` on top.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use informer_testing::INITIAL_EVENTS_END_ANNOTATION;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;

use super::common::{pod, raw, server, within};

fn rv(pod: &Pod) -> u64 {
    pod.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

/// A compact description of a watch event.
fn describe(event: &WatchEvent<Pod>) -> String {
    match event {
        WatchEvent::Added(p) => format!("ADDED {}", p.metadata.name.as_deref().unwrap()),
        WatchEvent::Modified(p) => format!("MODIFIED {}", p.metadata.name.as_deref().unwrap()),
        WatchEvent::Deleted(p) => format!("DELETED {}", p.metadata.name.as_deref().unwrap()),
        WatchEvent::Bookmark(_) => "BOOKMARK".to_string(),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_resource_version_streams_later_changes() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let a = within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let start = a.metadata.resource_version.clone().unwrap();
    let stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), &start))
        .await
        .unwrap();
    let mut stream = stream.boxed();

    within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    let patch = json!({"metadata": {"labels": {"x": "y"}}});
    within(pods.patch("b", &PatchParams::default(), &Patch::Merge(&patch)))
        .await
        .unwrap();
    within(pods.delete("a", &DeleteParams::default()))
        .await
        .unwrap();

    let mut seen = Vec::new();
    let mut last_rv = start.parse::<u64>().unwrap();
    while seen.len() < 4 {
        let event = within(stream.try_next()).await.unwrap().unwrap();
        let this_rv = match &event {
            WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) => rv(p),
            other => panic!("unexpected {}", describe(other)),
        };
        assert!(this_rv > last_rv, "resource versions increase");
        last_rv = this_rv;
        seen.push(describe(&event));
    }
    // A Pod's delete is graceful: the mark (`deletionTimestamp`), then the deletion.
    assert_eq!(seen, ["ADDED b", "MODIFIED b", "MODIFIED a", "DELETED a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_without_a_version_starts_with_synthetic_adds() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let mut stream = within(pods.watch(&WatchParams::default().disable_bookmarks(), "0"))
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(describe(&within(stream.try_next()).await.unwrap().unwrap()));
    }
    assert_eq!(seen, ["ADDED a", "ADDED b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_arrive_periodically() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::default(), &current))
        .await
        .unwrap()
        .boxed();
    let started = Instant::now();
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Bookmark(bookmark) => {
            assert_eq!(bookmark.metadata.resource_version, current);
            assert_eq!(bookmark.types.kind, "Pod");
        }
        other => panic!("expected a bookmark, got {}", describe(&other)),
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    // Bookmarks follow the latest revision, even one made by another type.
    server
        .create_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
        .unwrap();
    let newer = server.resource_version().to_string();
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Bookmark(bookmark) => assert_eq!(bookmark.metadata.resource_version, newer),
        other => panic!("expected a bookmark, got {}", describe(&other)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_ends_after_timeout_seconds() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let current = server.resource_version().to_string();
    let started = Instant::now();
    let stream = within(pods.watch(
        &WatchParams::default().timeout(1).disable_bookmarks(),
        &current,
    ))
    .await
    .unwrap();
    let events: Vec<_> = within(stream.collect::<Vec<_>>()).await;
    assert!(events.is_empty());
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(server.faults().open_watches(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_ends_with_the_initial_events_end_bookmark() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b", "c"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(&WatchParams::streaming_lists(), "0"))
        .await
        .unwrap()
        .boxed();
    let mut seen = Vec::new();
    loop {
        match within(stream.try_next()).await.unwrap().unwrap() {
            WatchEvent::Bookmark(bookmark) => {
                assert_eq!(
                    bookmark
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END_ANNOTATION)
                        .map(String::as_str),
                    Some("true")
                );
                assert_eq!(bookmark.metadata.resource_version, current);
                break;
            }
            event => seen.push(describe(&event)),
        }
    }
    assert_eq!(seen, ["ADDED a", "ADDED b", "ADDED c"]);
    within(pods.create(&PostParams::default(), &pod("d", &[])))
        .await
        .unwrap();
    let next = loop {
        match within(stream.try_next()).await.unwrap().unwrap() {
            WatchEvent::Bookmark(_) => continue,
            event => break describe(&event),
        }
    };
    assert_eq!(next, "ADDED d");

    // sendInitialEvents without resourceVersionMatch=NotOlderThan is invalid.
    raw(
        &server,
        "GET",
        "/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
        &[],
        b"",
    )
    .await
    .assert_status(422, "Invalid");
}

/// The events of a watch that the server ends after `timeoutSeconds=1`, as
/// `(type, name or the initial-events-end annotation)`.
async fn watch_events(server: &informer_testing::TestApiServer, query: &str) -> Vec<String> {
    let response = raw(
        server,
        "GET",
        &format!("/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1&{query}"),
        &[],
        b"",
    )
    .await;
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    String::from_utf8_lossy(&response.body)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let event: serde_json::Value = serde_json::from_str(line).unwrap();
            let metadata = &event["object"]["metadata"];
            match event["type"].as_str().unwrap() {
                "BOOKMARK" if metadata["annotations"][INITIAL_EVENTS_END_ANNOTATION] == "true" => {
                    "END".to_string()
                }
                "BOOKMARK" => "BOOKMARK".to_string(),
                kind => format!("{kind} {}", metadata["name"].as_str().unwrap_or("")),
            }
        })
        // Periodic bookmarks come when they come.
        .filter(|event| event != "BOOKMARK")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_0_or_unset_is_a_streaming_list_and_ends_its_initial_events_with_the_bookmark()
{
    // kube-apiserver defaults a watch from "" or "0" to sendInitialEvents=true
    // (SetListOptionsDefaults): with bookmarks allowed, the initial-events-end bookmark
    // follows its synthetic ADDED events.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    for query in [
        "allowWatchBookmarks=true",
        "allowWatchBookmarks=true&resourceVersion=0",
    ] {
        assert_eq!(
            watch_events(&server, query).await,
            ["ADDED a", "ADDED b", "END"],
            "{query}"
        );
    }
    // Without bookmarks the initial events just end, streaming list or not (no 422).
    for query in [
        "resourceVersion=0",
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    ] {
        assert_eq!(
            watch_events(&server, query).await,
            ["ADDED a", "ADDED b"],
            "{query}"
        );
    }
    // From a resource version: no initial events, and no annotated bookmark.
    let from = server.resource_version();
    assert!(
        watch_events(
            &server,
            &format!("allowWatchBookmarks=true&resourceVersion={from}")
        )
        .await
        .is_empty()
    );
}

#[tokio::test]
async fn send_initial_events_is_forbidden_for_list() {
    let server = server().await;
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1",
        &[],
        b"",
    )
    .await;
    response.assert_status(422, "Invalid");
    assert_eq!(
        response.json()["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"
    );
    // After the resource version's own errors.
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        &[],
        b"",
    )
    .await;
    response.assert_status(422, "Invalid");
    let causes = response.json()["details"]["causes"].clone();
    let fields: Vec<&str> = causes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["resourceVersionMatch", "sendInitialEvents"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_old_resource_version_is_a_410_error_event() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let a = within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    server.faults().compact();
    let old = a.metadata.resource_version.unwrap();

    let mut stream = within(pods.watch(&WatchParams::default(), &old))
        .await
        .unwrap()
        .boxed();
    match within(stream.try_next()).await.unwrap().unwrap() {
        WatchEvent::Error(err) => {
            assert_eq!(err.code, 410);
            assert_eq!(err.reason, "Expired");
            assert!(
                err.message
                    .starts_with(&format!("too old resource version: {old} (")),
                "{}",
                err.message
            );
        }
        other => panic!("expected an error event, got {}", describe(&other)),
    }
    assert!(
        within(stream.try_next()).await.unwrap().is_none(),
        "the stream ends"
    );

    // On the wire: HTTP 200, then the ERROR event.
    let response = raw(
        &server,
        "GET",
        &format!("/api/v1/namespaces/default/pods?watch=true&resourceVersion={old}"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    let event: serde_json::Value = serde_json::from_slice(response.body.trim_ascii()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);

    // A history limit compacts by itself.
    let small = informer_testing::TestApiServer::builder()
        .history_limit(2)
        .start()
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(small.client(), "default");
    let first = within(pods.create(&PostParams::default(), &pod("x", &[])))
        .await
        .unwrap();
    for name in ["y", "z", "w"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let mut stream = within(pods.watch(
        &WatchParams::default(),
        first.metadata.resource_version.as_deref().unwrap(),
    ))
    .await
    .unwrap()
    .boxed();
    assert!(matches!(
        within(stream.try_next()).await.unwrap().unwrap(),
        WatchEvent::Error(e) if e.code == 410
    ));
}

/// kube-apiserver's watch cache of a built-in type is filled by a list when the server starts:
/// a watch from a version older than that (the `resourceVersion="1"` a client uses to provoke
/// a 410) is too old, while one from the start's own version is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_before_the_server_started_is_a_410_error_event() {
    let server = server().await;
    let start = server.resource_version();
    assert!(start > 1, "the server starts with its namespaces");
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1&timeoutSeconds=1",
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    let event: serde_json::Value = serde_json::from_slice(response.body.trim_ascii()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert_eq!(
        event["object"]["message"],
        format!("too old resource version: 1 ({start})")
    );

    // From the version the server started at: the changes after it.
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut stream = within(pods.watch(
        &WatchParams::default().disable_bookmarks(),
        &start.to_string(),
    ))
    .await
    .unwrap()
    .boxed();
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let event = within(stream.try_next()).await.unwrap().unwrap();
    assert_eq!(describe(&event), "ADDED a");
    // A streaming list from "1" is served: it starts from the current state.
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1&timeoutSeconds=1",
        &[],
        b"",
    )
    .await;
    let first: serde_json::Value =
        serde_json::from_slice(response.body.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["type"], "ADDED");
}

/// A watch from a version the server has not reached is not an error (the watch cache serves
/// it an empty interval): it waits, and sends only the changes made after that version, with
/// no bookmark before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_a_future_version_sends_the_changes_after_it() {
    let server = informer_testing::TestApiServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let future = server.resource_version() + 2;
    let mut stream = within(pods.watch(&WatchParams::default(), &future.to_string()))
        .await
        .unwrap()
        .boxed();
    // No bookmark while the server is behind the version asked for.
    let quiet = tokio::time::timeout(Duration::from_millis(300), stream.try_next()).await;
    assert!(quiet.is_err(), "nothing is sent yet: {quiet:?}");
    for name in ["a", "b", "c"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    // a and b were made at or before the version asked for.
    let event = within(stream.try_next()).await.unwrap().unwrap();
    assert_eq!(describe(&event), "ADDED c");
    let WatchEvent::Added(c) = event else {
        unreachable!()
    };
    assert!(rv(&c) > future);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selector_watches_see_objects_enter_and_leave() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[("app", "web")])))
        .await
        .unwrap();
    let current = server.resource_version().to_string();
    let mut stream = within(pods.watch(
        &WatchParams::default().labels("app=web").disable_bookmarks(),
        &current,
    ))
    .await
    .unwrap()
    .boxed();
    let relabel = |app: &'static str| json!({"metadata": {"labels": {"app": app}}});
    within(pods.patch("a", &PatchParams::default(), &Patch::Merge(relabel("db"))))
        .await
        .unwrap();
    within(pods.patch("a", &PatchParams::default(), &Patch::Merge(relabel("web"))))
        .await
        .unwrap();
    within(pods.create(&PostParams::default(), &pod("other", &[("app", "db")])))
        .await
        .unwrap();
    within(pods.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"n": "1"}}})),
    ))
    .await
    .unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&within(stream.try_next()).await.unwrap().unwrap()));
    }
    assert_eq!(seen, ["DELETED a", "ADDED a", "MODIFIED a"]);
}

/// Collects watcher events until `done` returns true.
async fn collect_until<S>(stream: &mut S, mut done: impl FnMut(&[String]) -> bool) -> Vec<String>
where
    S: futures::Stream<Item = Result<Event<Pod>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    while !done(&seen) {
        let item = within(stream.next()).await.expect("the watcher never ends");
        let described = match item {
            Ok(Event::Init) => "Init".to_string(),
            Ok(Event::InitApply(p)) => format!("InitApply {}", p.metadata.name.unwrap()),
            Ok(Event::InitDone) => "InitDone".to_string(),
            Ok(Event::Apply(p)) => format!("Apply {}", p.metadata.name.unwrap()),
            Ok(Event::Delete(p)) => format!("Delete {}", p.metadata.name.unwrap()),
            Err(err) => format!("Error {err}"),
        };
        seen.push(described);
    }
    seen
}

fn last_is(expected: &'static str) -> impl FnMut(&[String]) -> bool {
    move |seen| seen.last().is_some_and(|s| s == expected)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_lists_in_pages_then_follows() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b", "c", "d", "e"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let mut stream =
        watcher::watcher(pods.clone(), watcher::Config::default().page_size(2)).boxed();
    let seen = collect_until(&mut stream, last_is("InitDone")).await;
    assert_eq!(
        seen,
        [
            "Init",
            "InitApply a",
            "InitApply b",
            "InitApply c",
            "InitApply d",
            "InitApply e",
            "InitDone"
        ]
    );
    assert_eq!(
        server.faults().request_count(informer_testing::Verb::List),
        3,
        "five objects in pages of two"
    );
    within(pods.create(&PostParams::default(), &pod("f", &[])))
        .await
        .unwrap();
    within(pods.delete("a", &DeleteParams::default()))
        .await
        .unwrap();
    let seen = collect_until(&mut stream, last_is("Delete a")).await;
    // The Pod's graceful delete: marked (an Apply), then deleted.
    assert_eq!(seen, ["Apply f", "Apply a", "Delete a"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_watcher_streaming_list() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let mut stream =
        watcher::watcher(pods.clone(), watcher::Config::default().streaming_lists()).boxed();
    let seen = collect_until(&mut stream, last_is("InitDone")).await;
    assert_eq!(seen, ["Init", "InitApply a", "InitApply b", "InitDone"]);
    assert_eq!(
        server.faults().request_count(informer_testing::Verb::List),
        0
    );
    within(pods.create(&PostParams::default(), &pod("c", &[])))
        .await
        .unwrap();
    assert_eq!(
        collect_until(&mut stream, last_is("Apply c")).await,
        ["Apply c"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_a_watch_delivered_can_be_read_at_once() {
    // As on a real API server (whose reads go to etcd): a client that saw a change through a
    // watch and reads the object right away never gets an older state. Objects are created
    // and updated while the watcher reads each one it is told of.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut events = pods
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let writer = {
        let pods = pods.clone();
        tokio::spawn(async move {
            for i in 0..500 {
                let name = format!("p{i}");
                pods.create(&PostParams::default(), &pod(&name, &[]))
                    .await
                    .unwrap();
                let label = Patch::Merge(json!({"metadata": {"labels": {"step": "2"}}}));
                pods.patch(&name, &PatchParams::default(), &label)
                    .await
                    .unwrap();
            }
        })
    };
    let mut seen = 0;
    while seen < 1000 {
        let event = within(events.try_next()).await.unwrap().unwrap();
        let (WatchEvent::Added(p) | WatchEvent::Modified(p)) = event else {
            continue;
        };
        seen += 1;
        let name = p.metadata.name.clone().unwrap();
        let read = pods.get(&name).await.unwrap_or_else(|e| {
            panic!("{name} was delivered at {} but cannot be read: {e}", rv(&p))
        });
        assert!(
            rv(&read) >= rv(&p),
            "{name}: read at {} after the watch delivered {}",
            rv(&read),
            rv(&p)
        );
    }
    writer.await.unwrap();
}

/// The causes of a 422's `details`, as `field: message`.
fn causes(response: &super::common::RawResponse) -> Vec<String> {
    response.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_query_parameters_are_read_as_kube_apiserver_reads_them() {
    // kube-apiserver converts query parameters with `runtime.Convert_Slice_string_To_bool`
    // (only "0" and "false" are false; "?watch" alone is true) and `strconv.ParseInt`.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let path = "/api/v1/namespaces/default/pods";
    for watch in ["watch", "watch=", "watch=yes", "watch=True"] {
        let response = raw(
            &server,
            "GET",
            &format!("{path}?{watch}&timeoutSeconds=1"),
            &[],
            b"",
        )
        .await;
        assert_eq!(response.status, 200, "{watch}");
        let body = String::from_utf8_lossy(&response.body);
        assert!(body.starts_with(r#"{"type":"ADDED""#), "{watch}: {body}");
    }
    let response = raw(&server, "GET", &format!("{path}?watch=FALSE"), &[], b"").await;
    assert_eq!(response.json()["kind"], "PodList");

    for (timeout, why) in [
        ("abc", r#"strconv.ParseInt: parsing "abc": invalid syntax"#),
        ("", r#"strconv.ParseInt: parsing "": invalid syntax"#),
        (
            "99999999999999999999",
            r#"strconv.ParseInt: parsing "99999999999999999999": value out of range"#,
        ),
    ] {
        let response = raw(
            &server,
            "GET",
            &format!("{path}?watch=1&timeoutSeconds={timeout}"),
            &[],
            b"",
        )
        .await;
        response.assert_status(400, "BadRequest");
        assert_eq!(response.json()["message"], why);
    }
    // A negative timeout has run out before the watch starts: 200, and the stream ends empty.
    let started = Instant::now();
    let response = raw(
        &server,
        "GET",
        &format!("{path}?watch=1&timeoutSeconds=-1"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    assert!(
        response.body.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&response.body)
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    // A malformed resource version fails in storage with an error that is no API status:
    // 500 without a reason.
    let response = raw(
        &server,
        "GET",
        &format!("{path}?watch=1&resourceVersion=abc"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 500);
    let status = response.json();
    assert!(status.get("reason").is_none(), "{status}");
    assert_eq!(
        status["message"],
        r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#
    );
}

#[tokio::test]
async fn watch_options_are_validated_as_kube_apiserver_validates_them() {
    // `ValidateListOptions` (validateWatchOptions), after `SetListOptionsDefaults`.
    let server = server().await;
    let path = "/api/v1/namespaces/default/pods?watch=1";
    let invalid = async |query: &str| {
        let response = raw(&server, "GET", &format!("{path}&{query}"), &[], b"").await;
        response.assert_status(422, "Invalid");
        assert_eq!(response.json()["details"]["kind"], "ListOptions");
        assert_eq!(response.json()["details"]["group"], "meta.k8s.io");
        causes(&response)
    };
    assert_eq!(
        invalid("sendInitialEvents=true").await,
        [
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
        ]
    );
    assert_eq!(
        invalid("resourceVersionMatch=Exact").await,
        [
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
        ]
    );
    // A watch from "" is defaulted to a streaming list (resourceVersionMatch=NotOlderThan),
    // which a continue token may not come with.
    assert_eq!(
        invalid("continue=abc").await,
        [
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
        ]
    );
    let response = raw(
        &server,
        "GET",
        &format!("{path}&continue=abc&resourceVersion=1&timeoutSeconds=1"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
}

/// The bookmarks of a watch with `timeoutSeconds=1` on `path`.
async fn bookmarks(server: &informer_testing::TestApiServer, path: &str) -> Vec<serde_json::Value> {
    let response = raw(
        server,
        "GET",
        &format!("{path}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    String::from_utf8_lossy(&response.body)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|event| event["type"] == "BOOKMARK")
        .map(|event| event["object"].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bookmark_is_an_empty_object_of_the_type_without_a_creation_timestamp() {
    // What the real 1.36 server sends (seen on its CustomResourceDefinition watch): the type's
    // Go zero struct written out with only the resourceVersion (and annotation) set;
    // ObjectMeta's creationTimestamp is `omitzero`, so no `creationTimestamp: null`.
    let server = server().await;
    let crds = bookmarks(
        &server,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    let end = &crds[0];
    let revision = end["metadata"]["resourceVersion"].clone();
    assert_eq!(
        *end,
        json!({
            "kind": "CustomResourceDefinition",
            "apiVersion": "apiextensions.k8s.io/v1",
            "metadata": {
                "resourceVersion": revision,
                "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"},
            },
            "spec": {
                "group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null
            },
            "status": {
                "conditions": null,
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": null
            },
        })
    );
    for path in [
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces/default/configmaps",
        "/apis/apps/v1/namespaces/default/deployments",
    ] {
        for bookmark in bookmarks(&server, path).await {
            let metadata = bookmark["metadata"].as_object().unwrap();
            assert!(
                metadata
                    .keys()
                    .all(|key| key == "resourceVersion" || key == "annotations"),
                "{path}: {bookmark}"
            );
        }
    }
}

/// The server's connections send without Nagle's delay, as Go's do: a watch event written
/// after the response's headers is not held until the client acknowledges them (a delayed
/// ACK: 40 ms of real time, and with paused tokio time a jump to the next timer, which
/// made a paused test's first watch event arrive a minute or more of virtual time late).
#[tokio::test(start_paused = true)]
async fn a_watch_event_is_sent_at_once_not_held_for_the_clients_ack() {
    let server = informer_testing::TestApiServer::start()
        .await
        .expect("the test API server starts");
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut stream = pods
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap()
        .boxed();
    for name in ["a", "b", "c"] {
        let start = tokio::time::Instant::now();
        pods.create(&PostParams::default(), &pod(name, &[]))
            .await
            .unwrap();
        let event = stream.try_next().await.unwrap().unwrap();
        assert_eq!(describe(&event), format!("ADDED {name}"));
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "virtual time passed before the watch event of {name} arrived"
        );
    }
}
