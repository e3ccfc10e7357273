//! The reflector over `KubeListerWatcher`, through a real `kube::Client` against the in-process
//! API server, with every fault the server can inject: dropped watches, 500s, 429s, 403s,
//! a refused or unfinished streaming list, stalls, malformed events, compaction (410 Gone,
//! expired continue tokens) and restarts with and without data ("too large resource
//! version").
//!
//! Each test feeds a `DeltaFifo` whose known objects are a `ThreadSafeStore`, and a small
//! consumer applies what it pops to that store (an informer without handlers), so the tests
//! check the cache the reflector keeps, not only the calls it makes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::{eventually, server_with_widgets, server_without_watch_cache};
use informer_core::{
    Deleted, Delta, DeltaFifo, Fifo, ListerWatcher, ObjectKey, Store, ThreadSafeStore,
};
use informer_runtime::lister_watcher::KubeListerWatcher;
use informer_runtime::reflector::{
    BackoffConfig, CancellationToken, Reflector, ReflectorConfig, ReflectorError,
};
use informer_testing::{ApiError, FailureCode, RestartMode, TestApiServer, Verb};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind, PartialObjectMeta};
use kube::{Api, Resource};
use tokio::task::JoinHandle;

/// A client that does not retry 429/503/504 by itself, so the reflector sees them.
fn client_without_retries(server: &TestApiServer) -> kube::Client {
    let mut config = server.config();
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// Short backoffs so that the tests run in real time quickly.
fn fast() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(200),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    c
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("default"), name)
}

/// A reflector feeding a `DeltaFifo`, and a consumer applying it to a store.
struct Cache<K: Resource + Clone + Send + Sync + 'static> {
    reflector: Arc<Reflector<K>>,
    store: Arc<ThreadSafeStore<K>>,
    deletes: Arc<Mutex<Vec<Deleted<K>>>>,
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl<K> Cache<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn start(lw: impl ListerWatcher<K> + 'static, config: ReflectorConfig) -> Self {
        Self::start_with(lw, config, |_: &ReflectorError| {})
    }

    /// As `start`, with `on_error` as the reflector's watch error handler.
    fn start_with(
        lw: impl ListerWatcher<K> + 'static,
        config: ReflectorConfig,
        on_error: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        let store = Arc::new(ThreadSafeStore::<K>::new());
        let fifo = Arc::new(DeltaFifo::<K>::new(
            Some(store.clone() as Arc<dyn Store<K>>),
        ));
        let reflector = Arc::new(
            Reflector::new(Arc::new(lw), fifo.clone(), config)
                .with_watch_error_handler(Arc::new(on_error)),
        );
        let cancel = CancellationToken::new();
        let deletes = Arc::new(Mutex::new(Vec::new()));
        let consumer = tokio::spawn({
            let (store, deletes, fifo) = (store.clone(), deletes.clone(), fifo.clone());
            async move {
                loop {
                    let result = fifo
                        .pop(&mut |batch: Vec<Delta<K>>| {
                            for delta in batch {
                                match delta {
                                    Delta::Added(o)
                                    | Delta::Updated(o)
                                    | Delta::Replaced(o)
                                    | Delta::Sync(o) => {
                                        store.update(o).expect("a keyed object");
                                    }
                                    Delta::Deleted(d) => {
                                        let key = match &d {
                                            Deleted::Object(o) => {
                                                ObjectKey::from_resource(&**o).expect("a key")
                                            }
                                            Deleted::FinalStateUnknown { key, .. } => key.clone(),
                                        };
                                        store.delete(&key);
                                        deletes.lock().unwrap().push(d);
                                    }
                                    _ => panic!("DeltaFifo popped a RealFifo-only delta"),
                                }
                            }
                        })
                        .await;
                    if result.is_err() {
                        return;
                    }
                }
            }
        });
        let run = tokio::spawn({
            let (reflector, cancel, fifo) = (reflector.clone(), cancel.clone(), fifo.clone());
            async move {
                reflector.run(cancel).await;
                fifo.close();
            }
        });
        Self {
            reflector,
            store,
            deletes,
            cancel,
            tasks: vec![consumer, run],
        }
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .store
            .list_keys()
            .iter()
            .map(|k| k.name().to_owned())
            .collect();
        names.sort();
        names
    }

    async fn has(&self, names: &[&str]) {
        let want: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        eventually(&format!("the cache holds {want:?}"), || {
            self.names() == want
        })
        .await;
    }

    async fn stop(self) {
        self.cancel.cancel();
        for task in self.tasks {
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("stops")
                .expect("no panic");
        }
    }
}

impl Cache<ConfigMap> {
    fn value(&self, name: &str) -> Option<String> {
        self.store
            .get(&key(name))
            .and_then(|c| c.data.as_ref().and_then(|d| d.get("v").cloned()))
    }
}

async fn create(api: &Api<ConfigMap>, name: &str, value: &str) {
    api.create(&PostParams::default(), &cm(name, value))
        .await
        .expect("create");
}

async fn update(api: &Api<ConfigMap>, name: &str, value: &str) {
    let mut c = api.get(name).await.expect("get");
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    api.replace(name, &PostParams::default(), &c)
        .await
        .expect("replace");
}

async fn delete(api: &Api<ConfigMap>, name: &str) {
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete");
}

async fn watching(server: &TestApiServer) {
    eventually("a watch is open", || server.faults().open_watches() > 0).await;
}

/// Keeps the watch down while `changes` are made and the history is compacted past them,
/// then lets requests through again: the reflector cannot resume and must relist.
async fn outage_with_compaction(
    server: &TestApiServer,
    changes: impl std::future::Future<Output = ()>,
) {
    let faults = server.faults();
    faults.fail_next(Verb::Watch, 1_000_000, FailureCode::InternalError);
    faults.drop_watches();
    changes.await;
    faults.compact();
    faults.clear();
}

#[tokio::test]
async fn reflector_syncs_through_a_real_client_and_follows_changes() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    create(&api, "b", "1").await;
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a", "b"]).await;
    create(&api, "c", "1").await;
    update(&api, "a", "2").await;
    delete(&api, "b").await;
    cache.has(&["a", "c"]).await;
    eventually("the update", || cache.value("a").as_deref() == Some("2")).await;
    assert!(matches!(
        cache.deletes.lock().unwrap()[0],
        Deleted::Object(_)
    ));
    assert_eq!(server.faults().request_count(Verb::List), 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_bookmarks_advance_the_resource_version_without_object_changes() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cache = Cache::start(KubeListerWatcher::new(api), fast());
    // Listed (an empty cache alone does not say so): the list's version is older than the
    // change below.
    eventually("the initial list", || {
        cache.reflector.last_sync_resource_version().is_some()
    })
    .await;
    // A change of another type moves the shared revision; only a bookmark can tell us.
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let mut secret = Secret::default();
    secret.metadata.name = Some("s".into());
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let now = server.resource_version().to_string();
    eventually("a bookmark at the current revision", || {
        cache.reflector.last_sync_resource_version().as_deref() == Some(now.as_str())
    })
    .await;
    assert!(cache.reflector.stats().bookmarks > 0);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_resumes_dropped_watches_without_relisting() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a"]).await;
    for round in 0..3 {
        watching(&server).await;
        server.faults().drop_watches();
        create(&api, &format!("n{round}"), "1").await;
    }
    cache.has(&["a", "n0", "n1", "n2"]).await;
    assert_eq!(server.faults().request_count(Verb::List), 1);
    assert!(server.faults().request_count(Verb::Watch) >= 4);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_backs_off_on_429_and_rewatches_without_relisting() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(client_without_retries(&server), "default");
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&[]).await;
    watching(&server).await;
    let faults = server.faults();
    faults.fail_next(
        Verb::Watch,
        2,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_secs(1),
        },
    );
    faults.drop_watches();
    create(&api, "a", "1").await;
    cache.has(&["a"]).await;
    assert_eq!(faults.request_count(Verb::List), 1);
    assert!(cache.reflector.stats().watch_errors >= 2);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_relists_after_a_watch_answered_with_an_internal_error() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(client_without_retries(&server), "default");
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&[]).await;
    watching(&server).await;
    let faults = server.faults();
    faults.fail_next(Verb::Watch, 1, FailureCode::InternalError);
    faults.drop_watches();
    create(&api, "a", "1").await;
    cache.has(&["a"]).await;
    eventually("the relist", || faults.request_count(Verb::List) == 2).await;
    cache.stop().await;
}

#[tokio::test]
async fn reflector_waits_out_a_stalled_list() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    server
        .faults()
        .stall_next(Verb::List, 1, Duration::from_millis(300));
    let started = std::time::Instant::now();
    let cache = Cache::start(KubeListerWatcher::new(api), fast());
    cache.has(&["a"]).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    cache.stop().await;
}

#[tokio::test]
async fn reflector_relists_after_compaction_and_reports_vanished_objects_as_final_state_unknown() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    create(&api, "b", "1").await;
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a", "b"]).await;
    watching(&server).await;
    let faults = server.faults();
    // Keep the watch down while b is deleted and the history compacted.
    outage_with_compaction(&server, async {
        delete(&api, "b").await;
        create(&api, "c", "1").await;
    })
    .await;
    cache.has(&["a", "c"]).await;
    let deletes: Vec<Deleted<ConfigMap>> = cache.deletes.lock().unwrap().clone();
    assert_eq!(deletes.len(), 1);
    match &deletes[0] {
        Deleted::FinalStateUnknown { key: k, last_known } => {
            assert_eq!(*k, key("b"));
            assert_eq!(
                last_known.as_ref().and_then(|o| o.metadata.name.as_deref()),
                Some("b")
            );
        }
        other => panic!("expected a final-state-unknown delete, got {other:?}"),
    }
    assert_eq!(faults.request_count(Verb::List), 2);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_relist_at_a_compacted_version_falls_back_to_a_paginated_consistent_list() {
    let server = server_without_watch_cache().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for i in 0..120 {
        create(&api, &format!("cm{i:03}"), "1").await;
    }
    let config = ReflectorConfig {
        list_params: ListParams::default().limit(50),
        ..fast()
    };
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), config);
    eventually("120 objects", || cache.store.len() == 120).await;
    // The first list, at resourceVersion "0" with limit 50, comes in three pages: this
    // server answers like an API server without its watch cache.
    assert_eq!(server.faults().request_count(Verb::List), 3);
    watching(&server).await;
    let faults = server.faults();
    outage_with_compaction(&server, delete(&api, "cm000")).await;
    eventually("the relist", || cache.store.len() == 119).await;
    // The relist at the last synced version (exact, as it is paginated) gets 410; the
    // consistent read that follows takes three pages.
    assert_eq!(faults.request_count(Verb::List), 3 + 1 + 3);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_recovers_from_a_restart_that_keeps_data_without_relisting() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a"]).await;
    watching(&server).await;
    server.faults().restart(RestartMode::KeepData);
    // The test's own write comes from a client made after the restart (a pooled
    // connection from before it may fail its next request).
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "b", "1").await;
    cache.has(&["a", "b"]).await;
    assert_eq!(server.faults().request_count(Verb::List), 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_relists_after_a_restart_that_lost_data() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    create(&api, "b", "1").await;
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a", "b"]).await;
    watching(&server).await;
    server.faults().restart(RestartMode::ResetData);
    cache.has(&[]).await;
    let unknown = cache
        .deletes
        .lock()
        .unwrap()
        .iter()
        .filter(|d| !d.is_observed())
        .count();
    assert_eq!(unknown, 2);
    create(&api, "c", "1").await;
    cache.has(&["c"]).await;
    assert!(server.faults().request_count(Verb::List) >= 2);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_survives_a_malformed_event_without_losing_changes() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&[]).await;
    create(&api, "a", "1").await;
    cache.has(&["a"]).await;
    watching(&server).await;
    assert!(server.faults().send_malformed_event() >= 1);
    create(&api, "b", "1").await;
    update(&api, "a", "2").await;
    cache.has(&["a", "b"]).await;
    eventually("the update", || cache.value("a").as_deref() == Some("2")).await;
    assert_eq!(cache.reflector.stats().decode_errors, 1);
    assert_eq!(server.faults().request_count(Verb::List), 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_streaming_list_syncs_without_a_list_request() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    create(&api, "b", "1").await;
    let config = ReflectorConfig {
        streaming_list: true,
        ..fast()
    };
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), config);
    cache.has(&["a", "b"]).await;
    create(&api, "c", "1").await;
    cache.has(&["a", "b", "c"]).await;
    assert_eq!(server.faults().request_count(Verb::List), 0);
    assert_eq!(server.faults().request_count(Verb::Watch), 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_says_why_it_cannot_sync_an_unknown_resource() {
    let server = server_with_widgets().await;
    let gvk = GroupVersionKind::gvk("nope.example.com", "v1", "Gadget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "gadgets");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let cache = Cache::start(KubeListerWatcher::new(api), fast());
    eventually("a list error", || cache.reflector.last_error().is_some()).await;
    let error = cache.reflector.last_error().unwrap();
    assert!(error.is_not_found(), "{error}");
    assert!(matches!(*error, ReflectorError::List(_)));
    assert!(
        error.to_string().contains("CustomResourceDefinition"),
        "{error}"
    );
    assert_eq!(cache.reflector.last_sync_resource_version(), None);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_caches_a_custom_resource_as_dynamic_object() {
    let server = server_with_widgets().await;
    let widget = |name: &str| {
        serde_json::json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": 1}
        })
    };
    server.create_json(widget("w1")).unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let cache = Cache::start(KubeListerWatcher::new(api), fast());
    cache.has(&["w1"]).await;
    server.create_json(widget("w2")).unwrap();
    cache.has(&["w1", "w2"]).await;
    let w2 = cache.store.get(&key("w2")).unwrap();
    assert_eq!(w2.data["spec"]["size"], 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_caches_metadata_only() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    let cache: Cache<PartialObjectMeta<ConfigMap>> =
        Cache::start(KubeListerWatcher::metadata(api.clone()), fast());
    cache.has(&["a"]).await;
    create(&api, "b", "1").await;
    cache.has(&["a", "b"]).await;
    cache.stop().await;
}

#[tokio::test]
async fn reflector_streaming_list_falls_back_to_list_and_watch_when_the_server_rejects_it() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    create(&api, "b", "1").await;
    // As a server without the WatchList feature answers a streaming list.
    server.faults().fail_next(
        Verb::Watch,
        1,
        FailureCode::Status(ApiError::invalid(
            "ListOptions.meta.k8s.io",
            "",
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
        )),
    );
    let config = ReflectorConfig {
        streaming_list: true,
        ..fast()
    };
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), config);
    cache.has(&["a", "b"]).await;
    create(&api, "c", "1").await;
    cache.has(&["a", "b", "c"]).await;
    assert_eq!(cache.reflector.stats().streaming_fallbacks, 1);
    assert_eq!(server.faults().request_count(Verb::List), 1);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_streaming_list_falls_back_when_the_end_bookmark_never_comes() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    server.faults().withhold_initial_events_end(true);
    let config = ReflectorConfig {
        streaming_list: true,
        streaming_list_timeout: Duration::from_millis(300),
        ..fast()
    };
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), config);
    cache.has(&["a"]).await;
    assert_eq!(cache.reflector.stats().streaming_fallbacks, 1);
    assert_eq!(server.faults().request_count(Verb::List), 1);
    create(&api, "b", "1").await;
    cache.has(&["a", "b"]).await;
    cache.stop().await;
}

#[tokio::test]
async fn reflector_says_the_client_is_forbidden_and_syncs_once_allowed() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    create(&api, "a", "1").await;
    let forbidden = ApiError::forbidden(
        "system:serviceaccount:default:app",
        "list",
        "configmaps",
        Some("default"),
    );
    server
        .faults()
        .fail_next(Verb::List, 3, FailureCode::Status(forbidden));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cache = Cache::start_with(KubeListerWatcher::new(api.clone()), fast(), {
        let seen = seen.clone();
        move |err: &ReflectorError| seen.lock().unwrap().push(err.to_string())
    });
    eventually("a list error", || cache.reflector.last_error().is_some()).await;
    let error = cache.reflector.last_error().unwrap();
    assert!(error.is_forbidden(), "{error}");
    assert!(error.hint().is_some_and(|h| h.contains("RBAC")), "{error}");
    // Once the permission is granted (the failures run out), it syncs and forgets the error.
    cache.has(&["a"]).await;
    eventually("the error is cleared", || {
        cache.reflector.last_error().is_none()
    })
    .await;
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert!(
        seen.lock().unwrap()[0].contains("forbidden"),
        "{:?}",
        seen.lock().unwrap()
    );
    cache.stop().await;
}

#[tokio::test]
async fn reflector_backs_off_a_throttled_list_and_then_syncs() {
    let server = server_with_widgets().await;
    let api: Api<ConfigMap> = Api::namespaced(client_without_retries(&server), "default");
    create(&api, "a", "1").await;
    server.faults().fail_next(
        Verb::List,
        2,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_secs(1),
        },
    );
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), fast());
    cache.has(&["a"]).await;
    let stats = cache.reflector.stats();
    assert_eq!((stats.list_errors, stats.lists), (2, 1));
    assert_eq!(server.faults().request_count(Verb::List), 3);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_relists_with_a_consistent_read_when_its_version_is_ahead_of_the_server() {
    let server = server_with_widgets().await;
    // kube's client would retry the 504 by itself.
    let api: Api<ConfigMap> = Api::namespaced(client_without_retries(&server), "default");
    create(&api, "a", "1").await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let cache = Cache::start_with(KubeListerWatcher::new(api.clone()), fast(), {
        let seen = seen.clone();
        move |err: &ReflectorError| {
            seen.lock().unwrap().push(
                err.list_watch_error()
                    .is_some_and(|e| e.is_too_large_resource_version()),
            )
        }
    });
    cache.has(&["a"]).await;
    watching(&server).await;
    // As an API server whose watch cache lags behind the one that served the list answers.
    let current = server.resource_version();
    server.faults().fail_next(
        Verb::Watch,
        1,
        FailureCode::Status(ApiError::too_large_resource_version(current, current - 1)),
    );
    server.faults().drop_watches();
    eventually("the error is seen", || !seen.lock().unwrap().is_empty()).await;
    create(&api, "b", "1").await;
    cache.has(&["a", "b"]).await;
    assert_eq!(*seen.lock().unwrap(), [true]);
    // It relisted (a consistent read) instead of rewatching from its version.
    assert_eq!(server.faults().request_count(Verb::List), 2);
    cache.stop().await;
}

#[tokio::test]
async fn reflector_falls_back_to_one_full_list_when_a_continue_token_expires() {
    let server = server_without_watch_cache().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for i in 0..7 {
        create(&api, &format!("c-{i}"), "1").await;
    }
    let config = ReflectorConfig {
        list_params: ListParams::default().limit(3),
        ..fast()
    };
    let cache = Cache::start(KubeListerWatcher::new(api.clone()), config);
    cache
        .has(&["c-0", "c-1", "c-2", "c-3", "c-4", "c-5", "c-6"])
        .await;
    watching(&server).await;
    // The watch breaks and history is compacted past the reflector's version: it relists at
    // that version (410), then with a consistent read in pages of 3. Every list request
    // from now on waits a little, and while the second page's waits, history is compacted
    // again, so its continue token has expired when it is served.
    let faults = server.faults();
    outage_with_compaction(&server, delete(&api, "c-0")).await;
    faults.stall_next(Verb::List, 3, Duration::from_millis(300));
    eventually("the second page is requested", || {
        faults.request_count(Verb::List) == 6
    })
    .await;
    create(&api, "c-7", "1").await;
    faults.compact();
    cache
        .has(&["c-1", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7"])
        .await;
    // First list (three pages); relist at the old version (410); page 1; page 2 (410); one
    // full list.
    assert_eq!(faults.request_count(Verb::List), 3 + 1 + 1 + 1 + 1);
    assert_eq!(cache.reflector.stats().lists, 2);
    cache.stop().await;
}
