//! `KubeListerWatcher` and `MetadataListerWatcher` through a real `kube::Client` against the
//! in-process API server: typed objects, custom resources as `DynamicObject`, metadata-only,
//! pagination, watch events, and how every failure is reported.

use std::sync::Arc;
use std::time::Duration;

use super::support::server_with_widgets;
use futures::StreamExt;
use informer_core::{ListWatchError, ListerWatcher, WatchStream};
use informer_runtime::lister_watcher::{INITIAL_EVENTS_END_ANNOTATION, KubeListerWatcher};
use informer_testing::{FailureCode, TestApiServer, Verb};
use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvVar, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.data = Some([("k".to_owned(), name.to_owned())].into());
    c
}

fn configmaps(server: &TestApiServer) -> Api<ConfigMap> {
    Api::namespaced(server.client(), "default")
}

async fn create(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.create(&PostParams::default(), &cm(name))
        .await
        .expect("create")
}

/// The next item of a watch, within 5 seconds, skipping bookmarks unless `bookmarks`.
async fn next<K: Clone>(
    stream: &mut WatchStream<K>,
    bookmarks: bool,
) -> Result<WatchEvent<Arc<K>>, ListWatchError> {
    loop {
        let item = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("a watch event within 5 s")
            .expect("the watch is still open");
        if bookmarks || !matches!(item, Ok(WatchEvent::Bookmark(_))) {
            return item;
        }
    }
}

fn name<K: kube::Resource>(event: &WatchEvent<Arc<K>>) -> String {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o.meta().name.clone().unwrap_or_default()
        }
        _ => String::new(),
    }
}

#[tokio::test]
async fn kube_lister_watcher_lists_typed_objects_page_by_page() {
    let server = server_with_widgets().await;
    let api = configmaps(&server);
    for n in ["a", "b", "c", "d", "e"] {
        create(&api, n).await;
    }
    let lw = KubeListerWatcher::new(api);
    let first = lw.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(first.items.len(), 2);
    let rv = first.metadata.resource_version.clone();
    let mut names: Vec<String> = first
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    let mut token = first.metadata.continue_.clone();
    while let Some(t) = token {
        let mut params = ListParams::default().limit(2);
        params.continue_token = Some(t);
        let page = lw.list(&params).await.unwrap();
        assert_eq!(page.metadata.resource_version, rv);
        names.extend(page.items.iter().map(|o| o.metadata.name.clone().unwrap()));
        token = page.metadata.continue_;
    }
    names.sort();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
}

#[tokio::test]
async fn kube_lister_watcher_watches_changes_after_a_resource_version() {
    let server = server_with_widgets().await;
    let api = configmaps(&server);
    let lw = KubeListerWatcher::new(api.clone());
    let rv = lw
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    create(&api, "a").await;
    let mut changed = cm("a");
    changed.data = Some([("k".to_owned(), "changed".to_owned())].into());
    api.replace("a", &PostParams::default(), &{
        let mut c = api.get("a").await.unwrap();
        c.data = changed.data.clone();
        c
    })
    .await
    .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let added = next(&mut stream, false).await.unwrap();
    assert!(matches!(added, WatchEvent::Added(_)), "{added:?}");
    let modified = next(&mut stream, false).await.unwrap();
    assert!(matches!(modified, WatchEvent::Modified(_)), "{modified:?}");
    let deleted = next(&mut stream, false).await.unwrap();
    assert!(matches!(deleted, WatchEvent::Deleted(_)), "{deleted:?}");
    assert_eq!(name(&deleted), "a");
}

#[tokio::test]
async fn kube_lister_watcher_sends_bookmarks_when_asked() {
    let server = server_with_widgets().await;
    let lw = KubeListerWatcher::new(configmaps(&server));
    let rv = server.resource_version().to_string();
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    match next(&mut stream, true).await.unwrap() {
        WatchEvent::Bookmark(b) => assert!(!b.metadata.resource_version.is_empty()),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_lister_watcher_keeps_the_servers_status_code_reason_and_message() {
    let server = server_with_widgets().await;
    let lw = KubeListerWatcher::new(configmaps(&server));
    server
        .faults()
        .fail_next(Verb::List, 1, FailureCode::InternalError);
    match lw.list(&ListParams::default()).await {
        Err(ListWatchError::Api(status)) => {
            assert_eq!(status.code, 500);
            assert_eq!(status.reason, "InternalError");
            assert!(
                status.message.contains("injected failure"),
                "{}",
                status.message
            );
        }
        other => panic!("expected a status error, got {other:?}"),
    }
    // Retries off, so the 429 reaches us.
    let mut config = server.config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let lw = KubeListerWatcher::new(Api::<ConfigMap>::namespaced(client, "default"));
    server.faults().fail_next(
        Verb::Watch,
        1,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_secs(1),
        },
    );
    let err = lw
        .watch(&WatchParams::default(), "")
        .await
        .err()
        .expect("a 429");
    assert!(err.is_too_many_requests(), "{err}");
}

#[tokio::test]
async fn kube_lister_watcher_reports_an_unknown_resource_as_404() {
    let server = server_with_widgets().await;
    let gvk = GroupVersionKind::gvk("nope.example.com", "v1", "Gadget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "gadgets");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let err = KubeListerWatcher::new(api)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(404), "{err}");
}

#[tokio::test]
async fn kube_lister_watcher_passes_a_410_in_the_stream_through_as_an_error_event() {
    let server = server_with_widgets().await;
    let api = configmaps(&server);
    let old = create(&api, "a").await.metadata.resource_version.unwrap();
    create(&api, "b").await;
    server.faults().compact();
    let lw = KubeListerWatcher::new(api);
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &old)
        .await
        .unwrap();
    match next(&mut stream, false).await {
        Ok(WatchEvent::Error(status)) => assert_eq!(status.code, 410),
        other => panic!("expected a 410 error event, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_lister_watcher_reports_a_malformed_event_as_a_decode_error() {
    let server = server_with_widgets().await;
    let lw = KubeListerWatcher::new(configmaps(&server));
    let rv = server.resource_version().to_string();
    let params = WatchParams {
        bookmarks: false,
        ..WatchParams::default().timeout(30)
    };
    let mut stream = lw.watch(&params, &rv).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while server.faults().open_watches() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(server.faults().send_malformed_event(), 1);
    let item = next(&mut stream, false).await;
    assert!(matches!(item, Err(ListWatchError::Decode(_))), "{item:?}");
}

#[tokio::test]
async fn kube_lister_watcher_reports_a_refused_connection_as_a_transport_error() {
    let server = server_with_widgets().await;
    let lw = KubeListerWatcher::new(configmaps(&server));
    server.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let err = lw.list(&ListParams::default()).await.unwrap_err();
    assert!(matches!(err, ListWatchError::Transport(_)), "{err:?}");
}

#[tokio::test]
async fn kube_lister_watcher_streams_initial_events_then_the_end_bookmark() {
    let server = server_with_widgets().await;
    let api = configmaps(&server);
    create(&api, "a").await;
    create(&api, "b").await;
    let lw = KubeListerWatcher::new(api.clone());
    let params = WatchParams {
        send_initial_events: true,
        ..WatchParams::default().timeout(30)
    };
    let mut stream = lw.watch(&params, "").await.unwrap();
    let mut names = Vec::new();
    loop {
        match next(&mut stream, true).await.unwrap() {
            WatchEvent::Added(o) => names.push(o.metadata.name.clone().unwrap()),
            WatchEvent::Bookmark(b)
                if b.metadata
                    .annotations
                    .get(INITIAL_EVENTS_END_ANNOTATION)
                    .map(String::as_str)
                    == Some("true") =>
            {
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    names.sort();
    assert_eq!(names, ["a", "b"]);
    create(&api, "c").await;
    assert_eq!(name(&next(&mut stream, false).await.unwrap()), "c");
}

#[tokio::test]
async fn kube_lister_watcher_works_for_a_custom_resource_as_dynamic_object() {
    let server = server_with_widgets().await;
    server
        .create_json(serde_json::json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"},
            "spec": {"size": 3}
        }))
        .unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let lw = KubeListerWatcher::new(api);
    let list = lw.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].data["spec"]["size"], 3);
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    server
        .create_json(serde_json::json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w2", "namespace": "default"},
            "spec": {"size": 4}
        }))
        .unwrap();
    assert_eq!(name(&next(&mut stream, false).await.unwrap()), "w2");
}

#[tokio::test]
async fn metadata_lister_watcher_lists_and_watches_partial_object_metadata() {
    let server = server_with_widgets().await;
    let api = configmaps(&server);
    create(&api, "a").await;
    let lw = KubeListerWatcher::metadata(api.clone());
    let list: kube::core::ObjectList<Arc<PartialObjectMeta<ConfigMap>>> =
        lw.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("a"));
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap();
    create(&api, "b").await;
    assert_eq!(name(&next(&mut stream, false).await.unwrap()), "b");
}

fn pod_with_containers(name: &str, containers: usize) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl".into()),
        operation: Some("Update".into()),
        ..ManagedFieldsEntry::default()
    }]);
    pod.spec = Some(PodSpec {
        containers: (0..containers)
            .map(|i| Container {
                name: format!("c{i}"),
                env: Some(
                    (0..3)
                        .map(|e| EnvVar {
                            name: format!("E{e}"),
                            ..EnvVar::default()
                        })
                        .collect(),
                ),
                ..Container::default()
            })
            .collect(),
        ..PodSpec::default()
    });
    pod
}

/// Whether every vector of `pod` checked here has exactly the capacity it needs.
fn is_tight(pod: &Pod) -> bool {
    let containers = &pod.spec.as_ref().expect("spec").containers;
    containers.len() == containers.capacity()
        && containers
            .iter()
            .all(|c| c.env.as_ref().is_none_or(|e| e.len() == e.capacity()))
}

#[tokio::test]
async fn kube_lister_watcher_decodes_objects_without_spare_capacity() {
    let server = server_with_widgets().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod_with_containers("listed", 3))
        .await
        .expect("create");
    let lw = KubeListerWatcher::new(pods.clone());
    let list = lw.list(&ListParams::default()).await.expect("list");
    assert_eq!(list.items.len(), 1);
    assert!(is_tight(&list.items[0]), "{:?}", list.items[0].spec);

    let rv = list
        .metadata
        .resource_version
        .expect("a list resource version");
    let mut stream = lw
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .expect("watch");
    pods.create(&PostParams::default(), &pod_with_containers("watched", 5))
        .await
        .expect("create");
    match next(&mut stream, false).await {
        Ok(WatchEvent::Added(pod)) => {
            assert_eq!(pod.spec.as_ref().map(|s| s.containers.len()), Some(5));
            assert!(is_tight(&pod));
        }
        other => panic!("expected an added pod, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_lister_watcher_drops_managed_fields_only_when_asked() {
    let server = server_with_widgets().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod_with_containers("a", 1))
        .await
        .expect("create");
    let keeping = KubeListerWatcher::new(pods.clone());
    let dropping = KubeListerWatcher::new(pods.clone()).drop_managed_fields();
    let kept = keeping.list(&ListParams::default()).await.expect("list");
    assert!(
        kept.items[0].metadata.managed_fields.is_some(),
        "the server keeps them"
    );
    let dropped = dropping.list(&ListParams::default()).await.expect("list");
    assert!(dropped.items[0].metadata.managed_fields.is_none());
    // Nothing else differs.
    let mut expected = Pod::clone(&kept.items[0]);
    expected.metadata.managed_fields = None;
    assert_eq!(*dropped.items[0], expected);

    let rv = dropped
        .metadata
        .resource_version
        .expect("a list resource version");
    let mut stream = dropping
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .expect("watch");
    pods.create(&PostParams::default(), &pod_with_containers("b", 1))
        .await
        .expect("create");
    match next(&mut stream, false).await {
        Ok(WatchEvent::Added(pod)) => {
            assert_eq!(pod.metadata.name.as_deref(), Some("b"));
            assert!(pod.metadata.managed_fields.is_none());
        }
        other => panic!("expected an added pod, got {other:?}"),
    }

    let metadata = KubeListerWatcher::metadata(pods).drop_managed_fields();
    let list = metadata.list(&ListParams::default()).await.expect("list");
    assert_eq!(list.items.len(), 2);
    assert!(
        list.items
            .iter()
            .all(|p| p.metadata.managed_fields.is_none())
    );
}

/// A ConfigMap of `default` named `name`, holding `pad` bytes of data, as JSON for the
/// server's store.
fn padded(name: &str, pad: usize, value: usize) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"pad": "x".repeat(pad), "v": value.to_string()},
    })
}

#[tokio::test]
async fn a_large_list_is_handed_over_in_parts_in_the_servers_order() {
    let server = super::support::server().await;
    let n = 1_500;
    for i in 0..n {
        server
            .create_json(padded(&format!("cm-{i:05}"), 400 + i % 700, i))
            .expect("create");
    }
    let lw = KubeListerWatcher::new(configmaps(&server));
    let mut parts = 0;
    let mut names_in_parts = Vec::new();
    let meta = lw
        .list_in_parts(&ListParams::default(), &mut |part| {
            parts += 1;
            names_in_parts.extend(part.iter().map(|c| c.metadata.name.clone().unwrap()));
        })
        .await
        .expect("list");
    assert!(
        parts > 1,
        "about a megabyte of objects comes in several parts"
    );
    assert!(meta.resource_version.is_some());
    let whole = lw.list(&ListParams::default()).await.expect("list");
    let names: Vec<String> = whole
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names_in_parts, names);
    assert_eq!(names.len(), n);
}

#[tokio::test]
async fn watch_events_of_each_key_arrive_in_order_under_parallel_decoding() {
    let server = std::sync::Arc::new(super::support::server().await);
    let keys = ["a", "b", "c"];
    let mut rv = String::new();
    for key in keys {
        let created = server.create_json(padded(key, 10, 0)).expect("create");
        rv = created["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    let lw = KubeListerWatcher::new(configmaps(&server));
    let mut stream = lw
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch");
    let updates = 1_500;
    let writer = {
        let server = server.clone();
        std::thread::spawn(move || {
            // Objects of very different sizes, so that later runs of events can be decoded
            // before earlier ones.
            for i in 1..=updates {
                let pad = if i % 9 == 0 { 150_000 } else { 20 };
                server
                    .update_json(padded(keys[i % 3], pad, i))
                    .expect("update");
            }
        })
    };
    let mut last_rv: u64 = 0;
    let mut values = std::collections::HashMap::new();
    for _ in 0..updates {
        match next(&mut stream, false).await.expect("an event") {
            WatchEvent::Modified(cm) => {
                let event_rv: u64 = cm
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(event_rv > last_rv, "resource versions go up");
                last_rv = event_rv;
                let value: usize = cm.data.as_ref().unwrap()["v"].parse().unwrap();
                let key = cm.metadata.name.clone().unwrap();
                let previous = values.insert(key.clone(), value).unwrap_or(0);
                assert!(value > previous, "{key}: {value} after {previous}");
            }
            other => panic!("{other:?}"),
        }
    }
    writer.join().unwrap();
}
