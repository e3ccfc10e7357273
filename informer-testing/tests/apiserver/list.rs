//! List: selectors, scopes, pagination and resourceVersion semantics.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams, VersionMatch};
use kube::core::ObjectMeta;

use super::common::{
    client_without_retries, names, namespace, pod, raw, server, server_with_widgets, status, within,
};

async fn seed(pods: &Api<Pod>) {
    let fixtures: [(&str, &[(&str, &str)]); 4] = [
        ("a", &[("app", "web"), ("tier", "fe")]),
        ("b", &[("app", "web"), ("tier", "be")]),
        ("c", &[("app", "db")]),
        ("d", &[]),
    ];
    for (name, labels) in fixtures {
        within(pods.create(&PostParams::default(), &pod(name, labels)))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn label_selectors_filter_lists() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    seed(&pods).await;
    let cases: [(&str, &[&str]); 9] = [
        ("", &["a", "b", "c", "d"]),
        ("app=web", &["a", "b"]),
        ("app==web", &["a", "b"]),
        ("app!=web", &["c", "d"]),
        ("tier in (fe,be)", &["a", "b"]),
        ("tier notin (fe)", &["b", "c", "d"]),
        ("app", &["a", "b", "c"]),
        ("!app", &["d"]),
        ("app=web,tier=be", &["b"]),
    ];
    for (selector, expected) in cases {
        let list = within(pods.list(&ListParams::default().labels(selector)))
            .await
            .unwrap();
        assert_eq!(names(&list.items), expected, "selector {selector:?}");
    }
    let err = within(pods.list(&ListParams::default().labels("app in (web")))
        .await
        .unwrap_err();
    let err = status(err);
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
}

#[tokio::test]
async fn field_selectors_filter_lists() {
    let server = server().await;
    let client = server.client();
    let default: Api<Pod> = Api::namespaced(client.clone(), "default");
    namespace(&server, "other");
    let other: Api<Pod> = Api::namespaced(client.clone(), "other");
    let mut scheduled = pod("scheduled", &[]);
    scheduled.spec.as_mut().unwrap().node_name = Some("node-1".into());
    within(default.create(&PostParams::default(), &scheduled))
        .await
        .unwrap();
    within(default.create(&PostParams::default(), &pod("pending", &[])))
        .await
        .unwrap();
    within(other.create(&PostParams::default(), &pod("elsewhere", &[])))
        .await
        .unwrap();

    let all: Api<Pod> = Api::all(client.clone());
    let list = |api: Api<Pod>, selector: &'static str| async move {
        let list = within(api.list(&ListParams::default().fields(selector)))
            .await
            .unwrap();
        names(&list.items)
    };
    assert_eq!(
        list(all.clone(), "metadata.name=pending").await,
        ["pending"]
    );
    assert_eq!(
        list(all.clone(), "metadata.namespace=other").await,
        ["elsewhere"]
    );
    assert_eq!(
        list(all.clone(), "metadata.namespace!=other").await,
        ["pending", "scheduled"]
    );
    assert_eq!(
        list(all.clone(), "spec.nodeName=node-1").await,
        ["scheduled"]
    );
    assert_eq!(
        list(all.clone(), "spec.nodeName=").await,
        ["elsewhere", "pending"]
    );
    assert_eq!(
        list(default.clone(), "spec.nodeName!=node-1,metadata.name!=x").await,
        ["pending"]
    );
    assert_eq!(list(all.clone(), "status.phase=Pending").await.len(), 3);

    let err = within(all.list(&ListParams::default().fields("spec.bogus=1")))
        .await
        .unwrap_err();
    let err = status(err);
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert!(
        err.message.contains("field label not supported"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn namespaced_and_cluster_wide_lists() {
    let server = server().await;
    let client = server.client();
    for ns in ["ns1", "ns2"] {
        namespace(&server, ns);
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for name in ["x", "y"] {
            let cm = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            within(api.create(&PostParams::default(), &cm))
                .await
                .unwrap();
        }
    }
    let ns1: Api<ConfigMap> = Api::namespaced(client.clone(), "ns1");
    let list = within(ns1.list(&ListParams::default())).await.unwrap();
    assert_eq!(names(&list.items), ["x", "y"]);
    assert!(
        list.items
            .iter()
            .all(|c| c.metadata.namespace.as_deref() == Some("ns1"))
    );
    let all: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(
        within(all.list(&ListParams::default()))
            .await
            .unwrap()
            .items
            .len(),
        4
    );

    let namespaces: Api<Namespace> = Api::all(client);
    let list = within(namespaces.list(&ListParams::default()))
        .await
        .unwrap();
    assert_eq!(
        names(&list.items),
        [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
            "ns1",
            "ns2"
        ]
    );
}

#[tokio::test]
async fn pagination_reads_a_consistent_snapshot() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["p1", "p2", "p3", "p4", "p5"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let first = within(pods.list(&ListParams::default().limit(2)))
        .await
        .unwrap();
    assert_eq!(names(&first.items), ["p1", "p2"]);
    assert_eq!(first.metadata.remaining_item_count, Some(3));
    let snapshot_rv = first.metadata.resource_version.clone().unwrap();
    let token = first.metadata.continue_.clone().expect("a continue token");

    // Changes after the first page must not show up in later pages.
    within(pods.delete("p4", &DeleteParams::default()))
        .await
        .unwrap();
    within(pods.create(&PostParams::default(), &pod("p6", &[])))
        .await
        .unwrap();
    let mut p3 = within(pods.get("p3")).await.unwrap();
    p3.metadata.labels = Some([("changed".to_string(), "yes".to_string())].into());
    within(pods.replace("p3", &PostParams::default(), &p3))
        .await
        .unwrap();

    let second = within(pods.list(&ListParams::default().limit(2).continue_token(&token)))
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["p3", "p4"]);
    assert!(
        second.items[0].metadata.labels.is_none(),
        "p3 as of the snapshot"
    );
    assert_eq!(
        second.metadata.resource_version.as_deref(),
        Some(snapshot_rv.as_str())
    );
    let token = second.metadata.continue_.clone().expect("a continue token");
    let third = within(pods.list(&ListParams::default().limit(2).continue_token(&token)))
        .await
        .unwrap();
    assert_eq!(names(&third.items), ["p5"]);
    assert!(third.metadata.continue_.is_none());

    // A fresh list sees the changes.
    let fresh = within(pods.list(&ListParams::default())).await.unwrap();
    assert_eq!(names(&fresh.items), ["p1", "p2", "p3", "p5", "p6"]);
}

#[tokio::test]
async fn a_list_at_resource_version_0_is_one_page_whatever_the_limit() {
    // kube-apiserver serves it from the watch cache, which ignores the limit: client-go's
    // reflectors and pagers start at 0 with a limit of 500 and get everything at once.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["p1", "p2", "p3", "p4", "p5"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let path = "/api/v1/namespaces/default/pods";
    for query in [
        "resourceVersion=0&limit=2",
        "resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=2",
    ] {
        let response = raw(&server, "GET", &format!("{path}?{query}"), &[], b"").await;
        assert_eq!(response.status, 200, "{query}");
        let list = response.json();
        assert_eq!(list["items"].as_array().unwrap().len(), 5, "{query}");
        assert!(
            list["metadata"].get("continue").is_none(),
            "{query}: {list}"
        );
        assert!(
            list["metadata"].get("remainingItemCount").is_none(),
            "{query}"
        );
    }
    // At the latest version, or an exact one, the limit holds.
    let response = raw(&server, "GET", &format!("{path}?limit=2"), &[], b"").await;
    assert_eq!(response.json()["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn continue_tokens_expire_with_compaction() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["p1", "p2"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let first = within(pods.list(&ListParams::default().limit(1)))
        .await
        .unwrap();
    let token = first.metadata.continue_.unwrap();
    within(pods.create(&PostParams::default(), &pod("p3", &[])))
        .await
        .unwrap();
    server.faults().compact();
    let err = within(pods.list(&ListParams::default().limit(1).continue_token(&token)))
        .await
        .unwrap_err();
    let err = status(err);
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    // Like the real server, the Status offers a token to continue inconsistently.
    let inconsistent = err
        .metadata
        .and_then(|m| m.continue_)
        .expect("an inconsistent continue token");
    let rest = within(
        pods.list(
            &ListParams::default()
                .limit(10)
                .continue_token(&inconsistent),
        ),
    )
    .await
    .unwrap();
    assert_eq!(names(&rest.items), ["p2", "p3"]);

    let garbage = within(pods.list(&ListParams::default().continue_token("not-a-token")))
        .await
        .unwrap_err();
    assert_eq!(status(garbage).code, 400);
}

#[tokio::test]
async fn resource_version_semantics() {
    let server = server().await;
    let client = client_without_retries(&server);
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let a = within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let rv_a = a.metadata.resource_version.clone().unwrap();
    within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    let current = server.resource_version().to_string();

    // Unset: most recent.
    let list = within(pods.list(&ListParams::default())).await.unwrap();
    assert_eq!(names(&list.items), ["a", "b"]);
    assert_eq!(
        list.metadata.resource_version.as_deref(),
        Some(current.as_str())
    );
    // "0": any (this server serves the latest).
    let list = within(pods.list(&ListParams::default().match_any()))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    // Exact: the state at that version.
    let exact = ListParams::default()
        .at(&rv_a)
        .matching(VersionMatch::Exact);
    let list = within(pods.list(&exact)).await.unwrap();
    assert_eq!(names(&list.items), ["a"]);
    assert_eq!(
        list.metadata.resource_version.as_deref(),
        Some(rv_a.as_str())
    );
    // NotOlderThan: at least that version.
    let not_older = ListParams::default()
        .at(&rv_a)
        .matching(VersionMatch::NotOlderThan);
    assert_eq!(within(pods.list(&not_older)).await.unwrap().items.len(), 2);
    // A version from the future: 504 "Too large resource version".
    let future = ListParams::default()
        .at("999999")
        .matching(VersionMatch::NotOlderThan);
    let err = status(within(pods.list(&future)).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (504, "Timeout"));
    // Exact on compacted history: 410 Expired, in etcd's words (the watch cache cannot serve
    // it, so `CacheDelegator.GetList` reads from etcd, which has compacted it).
    server.faults().compact();
    let err = status(within(pods.list(&exact)).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
    assert_eq!(
        err.message,
        "The resourceVersion for the provided list is too old."
    );
    // So is the legacy exact list (a limit with a resource version).
    let legacy = ListParams::default().at(&rv_a).limit(1);
    let err = status(within(pods.list(&legacy)).await.unwrap_err());
    assert_eq!(
        (err.code, err.message.as_str()),
        (410, "The resourceVersion for the provided list is too old.")
    );

    // Invalid combinations, as the real server rejects them.
    let path = "/api/v1/namespaces/default/pods";
    raw(
        &server,
        "GET",
        &format!("{path}?resourceVersionMatch=Exact"),
        &[],
        b"",
    )
    .await
    .assert_status(422, "Invalid");
    raw(
        &server,
        "GET",
        &format!("{path}?resourceVersion=0&resourceVersionMatch=Exact"),
        &[],
        b"",
    )
    .await
    .assert_status(422, "Invalid");
    raw(
        &server,
        "GET",
        &format!("{path}?resourceVersion=abc"),
        &[],
        b"",
    )
    .await
    .assert_status(400, "BadRequest");
    raw(&server, "GET", &format!("{path}?limit=abc"), &[], b"")
        .await
        .assert_status(400, "BadRequest");
}

/// kube-apiserver's watch cache serves a read at a version it has not reached yet once it
/// has (`waitUntilFreshAndBlock`, up to 3 s): a get, a list at `NotOlderThan` or `Exact` that
/// version, and a streaming watch, issued before the write that makes the version, answer
/// with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_a_version_not_reached_yet_waits_for_it() {
    let server = server().await;
    let client = client_without_retries(&server);
    let pods: Api<Pod> = Api::namespaced(client, "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let next = (server.resource_version() + 1).to_string();
    let not_older = ListParams::default()
        .at(&next)
        .matching(VersionMatch::NotOlderThan);
    let exact = ListParams::default()
        .at(&next)
        .matching(VersionMatch::Exact);
    let list_not_older = tokio::spawn({
        let pods = pods.clone();
        async move { pods.list(&not_older).await }
    });
    let list_exact = tokio::spawn({
        let pods = pods.clone();
        async move { pods.list(&exact).await }
    });
    let get = tokio::spawn({
        let (pods, next) = (pods.clone(), next.clone());
        async move {
            pods.get_with(
                "a",
                &kube::api::GetParams {
                    resource_version: Some(next),
                },
            )
            .await
        }
    });
    let watch = tokio::spawn({
        let (pods, next) = (pods.clone(), next.clone());
        async move {
            use futures::TryStreamExt as _;
            let stream = pods
                .watch(&kube::api::WatchParams::streaming_lists(), &next)
                .await?;
            let mut stream = std::pin::pin!(stream);
            stream.try_next().await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!list_not_older.is_finished(), "the list waits for {next}");
    assert!(!get.is_finished(), "the get waits for {next}");
    let b = within(pods.create(&PostParams::default(), &pod("b", &[])))
        .await
        .unwrap();
    assert_eq!(b.metadata.resource_version.as_deref(), Some(next.as_str()));
    for list in [list_not_older, list_exact] {
        let list = within(list).await.unwrap().unwrap();
        assert_eq!(names(&list.items), ["a", "b"]);
        assert_eq!(
            list.metadata.resource_version.as_deref(),
            Some(next.as_str())
        );
    }
    let a = within(get).await.unwrap().unwrap();
    assert_eq!(a.metadata.name.as_deref(), Some("a"));
    match within(watch).await.unwrap().unwrap() {
        Some(kube::api::WatchEvent::Added(pod)) => {
            assert!(matches!(pod.metadata.name.as_deref(), Some("a" | "b")));
        }
        other => panic!("expected the initial events, got {other:?}"),
    }
}

/// A read at a version the server never reaches within the watch cache's 3 s answers the
/// same `504 Too large resource version` as before, after the wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_at_a_version_never_reached_answers_504_after_3_seconds() {
    let server = server().await;
    let client = client_without_retries(&server);
    let pods: Api<Pod> = Api::namespaced(client, "default");
    within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let current = server.resource_version();
    let future = (current + 100).to_string();
    let expected = format!("Timeout: Too large resource version: {future}, current: {current}");
    let not_older = ListParams::default()
        .at(&future)
        .matching(VersionMatch::NotOlderThan);
    let get_params = kube::api::GetParams {
        resource_version: Some(future.clone()),
    };
    let streaming = kube::api::WatchParams::streaming_lists();
    let started = std::time::Instant::now();
    let (list, get, watch) = tokio::join!(
        pods.list(&not_older),
        pods.get_with("a", &get_params),
        pods.watch(&streaming, &future),
    );
    let elapsed = started.elapsed();
    assert!(
        elapsed >= std::time::Duration::from_millis(2500),
        "answered after {elapsed:?}"
    );
    assert!(elapsed < std::time::Duration::from_secs(20), "{elapsed:?}");
    for err in [
        status(list.unwrap_err()),
        status(get.unwrap_err()),
        status(watch.err().expect("a 504")),
    ] {
        assert_eq!((err.code, err.reason.as_str()), (504, "Timeout"));
        assert_eq!(err.message, expected);
        let details = err.details.expect("details");
        assert_eq!(details.retry_after_seconds, 1);
        assert_eq!(details.causes[0].reason, "ResourceVersionTooLarge");
    }
}

#[tokio::test]
async fn a_negative_limit_is_no_limit() {
    // kube-apiserver reads `limit` as an int64 and pages only when it is positive.
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["a", "b", "c"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods?limit=-1",
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    let list = response.json();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));
    assert!(list["metadata"].get("continue").is_none_or(|c| c == ""));
}

#[tokio::test]
async fn get_reads_single_objects() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = within(pods.create(&PostParams::default(), &pod("a", &[])))
        .await
        .unwrap();
    let fetched = within(pods.get("a")).await.unwrap();
    assert_eq!(fetched.metadata.uid, created.metadata.uid);
    let err = status(within(pods.get("missing")).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "pods \"missing\" not found");
    let other: Api<Pod> = Api::namespaced(server.client(), "other");
    assert_eq!(status(within(other.get("a")).await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn list_query_parameters_are_read_as_kube_apiserver_reads_them() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/pods";
    let bad_request = async |query: &str| {
        let response = raw(&server, "GET", &format!("{path}?{query}"), &[], b"").await;
        response.assert_status(400, "BadRequest");
        response.json()["message"].as_str().unwrap().to_string()
    };
    // `limit` is an int64 (`strconv.ParseInt`), present but empty included.
    assert_eq!(
        bad_request("limit=abc").await,
        r#"strconv.ParseInt: parsing "abc": invalid syntax"#
    );
    assert_eq!(
        bad_request("limit=").await,
        r#"strconv.ParseInt: parsing "": invalid syntax"#
    );
    assert_eq!(
        bad_request("limit=99999999999999999999").await,
        r#"strconv.ParseInt: parsing "99999999999999999999": value out of range"#
    );
    // The resource version is parsed by the storage (`strconv.ParseUint`: digits only).
    for rv in ["abc", "-5", "%2B5"] {
        let shown = rv.replace("%2B", "+");
        assert_eq!(
            bad_request(&format!("resourceVersion={rv}")).await,
            format!(
                "invalid resource version: resourceVersion: Invalid value: \"{shown}\": strconv.ParseUint: parsing \"{shown}\": invalid syntax"
            )
        );
    }
    // A get's malformed version is a storage error that is no API status: 500, no reason.
    let response = raw(
        &server,
        "GET",
        &format!("{path}/a?resourceVersion=x1"),
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 500);
    assert!(response.json().get("reason").is_none());
    assert_eq!(
        response.json()["message"],
        r#"resourceVersion: Invalid value: "x1": strconv.ParseUint: parsing "x1": invalid syntax"#
    );
    // `NewTimeoutError` words a version from the future "Timeout: ..." (after the watch
    // cache's 3 s wait for it: through a client, whose wait for the answer is long enough).
    let pods: Api<Pod> = Api::namespaced(client_without_retries(&server), "default");
    let err = status(
        pods.list(&ListParams::default().at("999999"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (504, "Timeout"));
    assert!(
        err.message
            .starts_with("Timeout: Too large resource version: 999999, current: "),
        "{}",
        err.message
    );
    // Every broken rule of `ValidateListOptions` in one 422.
    let response = raw(
        &server,
        "GET",
        &format!("{path}?resourceVersionMatch=Latest&continue=x&limit=1"),
        &[],
        b"",
    )
    .await;
    response.assert_status(422, "Invalid");
    let causes: Vec<String> = response.json()["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        causes,
        [
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            "Unsupported value: \"Latest\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ]
    );
}

#[tokio::test]
async fn continue_tokens_are_encoded_and_refused_as_kube_apiserver_does() {
    use base64::Engine as _;
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["p1", "p2"] {
        within(pods.create(&PostParams::default(), &pod(name, &[])))
            .await
            .unwrap();
    }
    // `storage.EncodeContinue`: unpadded URL-safe base64 of {"v","rv","start"}.
    let first = within(pods.list(&ListParams::default().limit(1)))
        .await
        .unwrap();
    let token = first.metadata.continue_.unwrap();
    assert!(!token.contains('='), "{token}");
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&token)
        .unwrap();
    let decoded: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(decoded["v"], "meta.k8s.io/v1");
    assert_eq!(
        decoded["rv"].to_string(),
        first.metadata.resource_version.unwrap()
    );
    // The token of an inconsistent continuation (after compaction) has "rv": -1.
    within(pods.create(&PostParams::default(), &pod("p3", &[])))
        .await
        .unwrap();
    server.faults().compact();
    let err = status(
        within(pods.list(&ListParams::default().limit(1).continue_token(&token)))
            .await
            .unwrap_err(),
    );
    let inconsistent = err.metadata.and_then(|m| m.continue_).unwrap();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&inconsistent)
        .unwrap();
    let decoded: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(decoded["rv"], -1);

    // `storage.DecodeContinue`'s errors, behind "invalid continue token: ".
    let encode = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
    for (token, why) in [
        (
            "garbage".to_string(),
            r"invalid character '\x81' looking for beginning of value",
        ),
        ("ab=".to_string(), "illegal base64 data at input byte 2"),
        (
            encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"x"}"#),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            encode(r#"{"v":"v2","rv":3,"start":"x"}"#),
            "server does not recognize this encoded version v2",
        ),
        (
            encode(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#),
            "../x",
        ),
    ] {
        let response = raw(
            &server,
            "GET",
            &format!("/api/v1/namespaces/default/pods?limit=1&continue={token}"),
            &[],
            b"",
        )
        .await;
        response.assert_status(400, "BadRequest");
        assert_eq!(
            response.json()["message"],
            format!("invalid continue token: continue key is not valid: {why}"),
            "{token}"
        );
    }
}

/// A full page has a continue token when any object follows it in the key range, selected
/// or not (the watch cache's `hasMoreListItems`, etcd3's `hasMore`): the next page may be
/// empty.
#[tokio::test]
async fn a_full_page_continues_when_any_object_follows_even_one_the_selector_leaves_out() {
    let server = super::common::server_with_widgets().await;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    for (name, label) in [("a", "yes"), ("b", "no")] {
        server
            .create_json(
                serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name, "namespace": "default", "labels": {"pick": label}}}),
            )
            .expect("created");
    }
    let page = super::common::raw(
        &server,
        "GET",
        &format!("{path}?labelSelector=pick%3Dyes&limit=1"),
        &[],
        b"",
    )
    .await
    .json();
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    assert!(!token.is_empty(), "b follows a: {page}");
    assert!(page["metadata"].get("remainingItemCount").is_none());
    let next = super::common::raw(
        &server,
        "GET",
        &format!("{path}?labelSelector=pick%3Dyes&limit=1&continue={token}"),
        &[],
        b"",
    )
    .await
    .json();
    assert_eq!(next["items"], serde_json::json!([]));
    assert!(
        next["metadata"].get("continue").is_none_or(|c| c == ""),
        "{next}"
    );
}

/// Whether every item of a JSON list has neither `kind` nor `apiVersion`.
fn items_without_type_meta(list: &serde_json::Value) -> bool {
    list["items"].as_array().is_some_and(|items| {
        items
            .iter()
            .all(|item| item.get("kind").is_none() && item.get("apiVersion").is_none())
    })
}

/// Whether an item of a YAML list (`items:` with its items at the top level's indentation)
/// has a `kind` or an `apiVersion`.
fn yaml_items_have_type_meta(text: &str) -> bool {
    text.lines().any(|line| {
        ["- ", "  "].iter().any(|indent| {
            line.strip_prefix(indent)
                .is_some_and(|rest| rest.starts_with("kind:") || rest.starts_with("apiVersion:"))
        })
    })
}

/// A built-in type's list is a typed Go list on kube-apiserver: its items' `TypeMeta` is
/// empty, so they carry no `kind` or `apiVersion`, in JSON and in YAML, in list answers and
/// in `deletecollection` answers (CRDs being built-in). Single objects, watch events,
/// `Table` rows and `PartialObjectMetadataList` items carry theirs.
#[tokio::test]
async fn items_of_a_built_in_list_carry_no_kind_or_api_version() {
    let server = server_with_widgets().await;
    for name in ["a", "b"] {
        server
            .create_json(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default"}, "data": {"kind": "x"}
            }))
            .unwrap();
    }
    let get = async |path: &str, accept: &str| {
        let response = raw(&server, "GET", path, &[("Accept", accept)], b"").await;
        assert_eq!(
            response.status,
            200,
            "{}",
            String::from_utf8_lossy(&response.body)
        );
        response
    };
    let json = "application/json";
    for (path, list_kind, count) in [
        ("/api/v1/namespaces/default/configmaps", "ConfigMapList", 2),
        ("/api/v1/configmaps", "ConfigMapList", 2),
        ("/api/v1/namespaces/default/services", "ServiceList", 1),
        ("/api/v1/namespaces/default/endpoints", "EndpointsList", 1),
        ("/api/v1/namespaces?limit=1", "NamespaceList", 1),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "CustomResourceDefinitionList",
            1,
        ),
    ] {
        let list = get(path, json).await.json();
        assert_eq!(list["kind"], list_kind, "{path}");
        assert_eq!(
            list["items"].as_array().map(Vec::len),
            Some(count),
            "{path}: {list}"
        );
        assert!(items_without_type_meta(&list), "{path}: {list}");
    }
    let list = get("/api/v1/namespaces/default/configmaps", json)
        .await
        .json();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["items"][0]["metadata"]["name"], "a");
    assert_eq!(
        list["items"][0]["data"]["kind"], "x",
        "only the top-level members go"
    );
    // Typed clients decode such items.
    let configmaps: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let typed = within(configmaps.list(&ListParams::default()))
        .await
        .unwrap();
    assert_eq!(names(&typed.items), ["a", "b"]);

    let yaml = get("/api/v1/namespaces/default/configmaps", "application/yaml").await;
    let text = String::from_utf8(yaml.body).unwrap();
    assert!(text.contains("kind: ConfigMapList"), "{text}");
    assert!(!yaml_items_have_type_meta(&text), "{text}");

    // Single objects and watch events keep their type.
    let one = get("/api/v1/namespaces/default/configmaps/a", json)
        .await
        .json();
    assert_eq!(
        (&one["kind"], &one["apiVersion"]),
        (&"ConfigMap".into(), &"v1".into())
    );
    let watch = get(
        "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
        json,
    )
    .await;
    let events: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&watch.body)
        .into_iter()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(events.len(), 2, "{events:?}");
    for event in &events {
        assert_eq!(event["object"]["kind"], "ConfigMap", "{event}");
        assert_eq!(event["object"]["apiVersion"], "v1", "{event}");
    }
    // `asPartialObjectMetadataList` sets each item's kind; Table rows' objects have theirs.
    let metadata = get(
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await
    .json();
    for item in metadata["items"].as_array().unwrap() {
        assert_eq!(item["kind"], "PartialObjectMetadata", "{item}");
        assert_eq!(item["apiVersion"], "meta.k8s.io/v1", "{item}");
    }
    let table = get(
        "/api/v1/namespaces/default/configmaps",
        "application/json;as=Table;g=meta.k8s.io;v=v1",
    )
    .await
    .json();
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // deletecollection answers with the list of what it deleted, as a list.
    for accept in [json, "application/yaml"] {
        let response = raw(
            &server,
            "DELETE",
            "/api/v1/namespaces/default/configmaps",
            &[("Accept", accept)],
            b"",
        )
        .await;
        assert_eq!(response.status, 200);
        if accept == json {
            let list = response.json();
            assert_eq!(list["kind"], "ConfigMapList");
            assert_eq!(list["items"].as_array().map(Vec::len), Some(2), "{list}");
            assert!(items_without_type_meta(&list), "{list}");
        } else {
            let text = String::from_utf8(response.body).unwrap();
            assert!(text.contains("kind: ConfigMapList"), "{text}");
            assert!(!yaml_items_have_type_meta(&text), "{text}");
        }
        for name in ["a", "b"] {
            server
                .create_json(serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "default"}
                }))
                .unwrap();
        }
    }
}

/// A custom resource's list is unstructured on kube-apiserver: every item keeps its `kind`
/// and `apiVersion`.
#[tokio::test]
async fn items_of_a_custom_resource_list_keep_their_kind() {
    let server = server_with_widgets().await;
    server
        .create_json(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"}
        }))
        .unwrap();
    for path in [
        "/apis/example.com/v1/namespaces/default/widgets",
        "/apis/example.com/v1/widgets",
    ] {
        let response = raw(&server, "GET", path, &[], b"").await;
        let list = response.json();
        assert_eq!(list["kind"], "WidgetList");
        assert_eq!(list["items"][0]["kind"], "Widget", "{list}");
        assert_eq!(list["items"][0]["apiVersion"], "example.com/v1", "{list}");
    }
    let response = raw(
        &server,
        "DELETE",
        "/apis/example.com/v1/namespaces/default/widgets",
        &[],
        b"",
    )
    .await;
    let list = response.json();
    assert_eq!(list["items"][0]["kind"], "Widget", "{list}");
}
