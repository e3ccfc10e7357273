//! `InformerFactory` through a real `kube::Client` against the in-process API server.

use std::time::Duration;

use super::support::{eventually, server};
use informer_runtime::factory::{InformerFactory, InformerParams, UnsyncedReason};
use informer_testing::{ApiError, FailureCode, RequestMatch, StatusReason, TestApiServer, Verb};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::PostParams;
use kube::core::{ApiResource, GroupVersionKind};

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some(ns.into());
    c.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    c
}

async fn create(server: &TestApiServer, c: ConfigMap) {
    let ns = c.metadata.namespace.clone().unwrap();
    // Objects can only be created in namespaces that exist; "already exists" is fine.
    let _ = server.create_json(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}
    }));
    Api::<ConfigMap>::namespaced(server.client(), &ns)
        .create(&PostParams::default(), &c)
        .await
        .unwrap();
}

fn sorted_names<K: kube::Resource>(items: &[std::sync::Arc<K>]) -> Vec<String> {
    let mut v: Vec<String> = items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn factory_shares_informers_and_caches_what_each_selects() {
    let server = server().await;
    create(&server, cm("default", "web", &[("app", "web")])).await;
    create(&server, cm("default", "db", &[("app", "db")])).await;
    create(&server, cm("other", "web", &[("app", "web")])).await;

    let factory = InformerFactory::new(server.client());
    let all = factory.informer::<ConfigMap>(InformerParams::all());
    let default_ns = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    let web = factory.informer::<ConfigMap>(InformerParams::all().labels("app=web"));
    let by_name = factory.informer::<ConfigMap>(InformerParams::all().fields("metadata.name=db"));
    let again = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    assert!(again.same_informer(&default_ns));
    assert_eq!(factory.informers().len(), 4);

    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(all.lister().len(), 3);
    assert_eq!(sorted_names(&default_ns.lister().list()), ["db", "web"]);
    assert_eq!(web.lister().len(), 2);
    assert!(
        web.lister()
            .list()
            .iter()
            .all(|c| c.metadata.name.as_deref() == Some("web"))
    );
    assert_eq!(sorted_names(&by_name.lister().list()), ["db"]);
    assert_eq!(all.lister().namespaced("other").list().len(), 1);

    create(&server, cm("default", "new", &[("app", "web")])).await;
    eventually("the shared informers see the new object", || {
        all.lister().len() == 4 && web.lister().len() == 3 && default_ns.lister().len() == 3
    })
    .await;
    factory.shutdown().await;
}

#[tokio::test]
async fn wait_for_sync_reports_a_resource_the_server_does_not_serve() {
    let server = server().await;
    let factory = InformerFactory::new(server.client());
    let _cms = factory.informer::<ConfigMap>(InformerParams::all());
    let widgets = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let _missing = factory.dynamic_informer(&widgets, InformerParams::all());
    factory.start();
    let err = factory
        .wait_for_sync(Duration::from_secs(3))
        .await
        .unwrap_err();
    assert_eq!(err.unsynced.len(), 1, "{err}");
    let unsynced = &err.unsynced[0];
    assert_eq!(unsynced.informer.kind(), "Widget");
    match &unsynced.reason {
        UnsyncedReason::Listing(Some(e)) => assert!(e.is_not_found(), "{e}"),
        other => panic!("expected the 404, got {other}"),
    }
    assert!(err.to_string().contains("widgets.v1.example.com"), "{err}");
    factory.shutdown().await;
}

#[tokio::test]
async fn wait_for_sync_reports_the_servers_error_while_lists_keep_failing() {
    let server = server().await;
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).resource("pods"),
        10_000,
        FailureCode::Status(ApiError::new(
            StatusReason::InternalError,
            "etcd is unhappy",
        )),
    );
    let factory = InformerFactory::new(server.client());
    let _pods = factory.informer::<Pod>(InformerParams::all());
    factory.start();
    let err = factory
        .wait_for_sync(Duration::from_secs(2))
        .await
        .unwrap_err();
    match &err.unsynced[0].reason {
        UnsyncedReason::Listing(Some(e)) => {
            assert_eq!(e.code(), Some(500));
            assert!(e.to_string().contains("etcd is unhappy"), "{e}");
        }
        other => panic!("expected the 500, got {other}"),
    }
    server.faults().clear();
    factory
        .wait_for_sync(Duration::from_secs(20))
        .await
        .unwrap();
    factory.shutdown().await;
}

#[tokio::test]
async fn dynamic_and_metadata_only_informers_cache_through_the_factory() {
    let server = server().await;
    create(&server, cm("default", "a", &[("app", "web")])).await;
    let factory = InformerFactory::new(server.client());
    let resource = ApiResource::erase::<ConfigMap>(&());
    let dynamic = factory.dynamic_informer(&resource, InformerParams::namespaced("default"));
    let metadata = factory.metadata_informer::<ConfigMap>(InformerParams::namespaced("default"));
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    let obj = dynamic.lister().namespaced("default").get("a").unwrap();
    assert_eq!(
        obj.types.as_ref().map(|t| t.kind.as_str()),
        Some("ConfigMap")
    );
    let meta = metadata.lister().namespaced("default").get("a").unwrap();
    assert_eq!(meta.metadata.labels.as_ref().unwrap()["app"], "web");
    factory.shutdown().await;
}

#[tokio::test]
async fn last_user_gone_closes_the_watch_and_shutdown_closes_the_rest() {
    let server = server().await;
    let factory = InformerFactory::new(server.client());
    let cms = factory.informer::<ConfigMap>(InformerParams::all());
    let pods = factory.informer::<Pod>(InformerParams::all());
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    eventually("both watches are open", || {
        server.faults().open_watches() == 2
    })
    .await;
    let second_user = cms.clone();
    drop(cms);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.faults().open_watches(), 2, "a user is left");
    drop(second_user);
    eventually("the configmap watch is closed", || {
        server.faults().open_watches() == 1
    })
    .await;
    factory.shutdown().await;
    assert!(pods.is_stopped());
    eventually("every watch is closed", || {
        server.faults().open_watches() == 0
    })
    .await;
}

#[tokio::test]
async fn a_store_given_to_the_factory_is_the_shared_informers_cache_and_the_first_one_wins() {
    use informer_core::store::ThreadSafeStore;
    use informer_core::{Indexer, resource_key};
    use std::sync::Arc;
    let server = server().await;
    create(&server, cm("default", "a", &[])).await;
    let factory = InformerFactory::new(server.client());
    let mine: Arc<dyn Indexer<ConfigMap>> = Arc::new(ThreadSafeStore::with_key_fn(resource_key));
    let handle = factory
        .informer_with_store::<ConfigMap>(InformerParams::namespaced("default"), mine.clone());
    assert!(Arc::ptr_eq(&handle.indexer(), &mine));
    // Asked for again, the informer is shared and keeps its cache: a second store is unused.
    let other: Arc<dyn Indexer<ConfigMap>> = Arc::new(ThreadSafeStore::with_key_fn(resource_key));
    let again = factory
        .informer_with_store::<ConfigMap>(InformerParams::namespaced("default"), other.clone());
    assert!(again.same_informer(&handle));
    assert!(!Arc::ptr_eq(&again.indexer(), &other));
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(sorted_names(&mine.list()), ["a"]);
    assert!(other.list().is_empty());
    factory.shutdown().await;
}

#[tokio::test]
async fn a_compact_cache_policy_keeps_objects_encoded_and_decodes_them_on_read() {
    use informer_runtime::factory::CachePolicy;
    let server = server().await;
    create(&server, cm("default", "a", &[("app", "web")])).await;
    create(&server, cm("default", "b", &[("app", "db")])).await;
    let factory =
        InformerFactory::new(server.client()).cache_policy(CachePolicy::Compact { hot_objects: 0 });
    let compact = factory.informer_by_policy::<ConfigMap>(InformerParams::namespaced("default"));
    // The same identity asked for without the policy is the same informer.
    let same = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    assert!(same.same_informer(&compact));
    let decoded = factory.informer::<ConfigMap>(InformerParams::all());
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    let key = informer_core::ObjectKey::new(Some("default"), "a");
    let (first, second) = (
        compact.lister().get(&key).unwrap(),
        compact.lister().get(&key).unwrap(),
    );
    assert_eq!(first, second);
    assert!(
        !std::sync::Arc::ptr_eq(&first, &second),
        "with no hot objects, every read decodes"
    );
    let (first, second) = (
        decoded.lister().get(&key).unwrap(),
        decoded.lister().get(&key).unwrap(),
    );
    assert!(
        std::sync::Arc::ptr_eq(&first, &second),
        "a decoded cache shares"
    );
    assert_eq!(*first, *compact.lister().get(&key).unwrap());
    assert_eq!(
        compact
            .lister()
            .by_index_name("namespace", "default")
            .unwrap()
            .len(),
        2
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn handlers_added_through_a_handle_dropped_before_start_get_their_events() {
    // client-go's idiom: `factory.Core().V1().ConfigMaps().Informer().AddEventHandler(h)`,
    // the informer never kept by the caller.
    use informer_core::HandlerFns;
    use informer_testing::MemoryListerWatcher;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create(named_config_map("a"));
    let adds = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = adds.clone();
    let _registration = factory
        .informer_from(InformerParams::all(), || {
            std::sync::Arc::new(source.clone())
        })
        .add_handler(
            HandlerFns::new().on_add(move |_, _| {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
            None,
        );
    // An informer dropped with no handler and no lister in use is forgotten.
    drop(factory.informer_from(InformerParams::namespaced("x"), || {
        std::sync::Arc::new(source.clone())
    }));
    assert_eq!(factory.informers().len(), 1, "{:?}", factory.informers());
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    eventually("the handler saw the ConfigMap", || {
        adds.load(Ordering::SeqCst) == 1
    })
    .await;
    factory.shutdown().await;
}

#[tokio::test]
async fn a_lister_taken_from_a_handle_dropped_before_start_fills_once_the_factory_starts() {
    // client-go's idiom: `lister := factory.Core().V1().ConfigMaps().Lister()`.
    use informer_testing::MemoryListerWatcher;
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create(named_config_map("a"));
    let lister = factory
        .informer_from(InformerParams::all(), || {
            std::sync::Arc::new(source.clone())
        })
        .lister();
    assert!(lister.list().is_empty());
    // A lister read and dropped with its handle: nobody reads the cache, it is forgotten.
    let handle = factory.informer_from(InformerParams::namespaced("b"), || {
        std::sync::Arc::new(source.clone())
    });
    assert!(handle.lister().list().is_empty());
    drop(handle);
    assert_eq!(factory.informers().len(), 1);
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(lister.list().len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn an_informer_that_ran_stops_with_its_last_handle_even_with_handlers() {
    use informer_core::HandlerFns;
    use informer_testing::MemoryListerWatcher;
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    factory.start();
    let handle = factory.informer_from(InformerParams::all(), || {
        std::sync::Arc::new(source.clone())
    });
    let _registration = handle.add_handler(HandlerFns::new(), None);
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    drop(handle);
    assert!(factory.informers().is_empty(), "dynamic watches end");
    factory.shutdown().await;
}

fn named_config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("default".into());
    cm
}

/// Decoding off the runtime's thread must not let paused time run: on a current-thread
/// runtime, a task of its blocking pool waits while decode jobs run on the decode threads,
/// which holds a paused clock still (without it, a paused test's sync took 30 s or more of
/// virtual time, every timer due meanwhile firing).
#[tokio::test(start_paused = true)]
async fn with_paused_time_a_large_list_and_a_burst_of_events_take_no_virtual_time() {
    let server = TestApiServer::start().await.unwrap();
    let big = "x".repeat(4_000);
    for i in 0..200 {
        let mut c = cm("default", &format!("c{i}"), &[]);
        c.data = Some([("k".to_owned(), big.clone())].into());
        create(&server, c).await;
    }
    // A timer for the clock to jump to, were it let run.
    let hour = tokio::spawn(tokio::time::sleep(Duration::from_secs(3600)));

    let factory = InformerFactory::new(server.client());
    let handle = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    let updated = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let changed = std::sync::Arc::new(tokio::sync::Notify::new());
    let (count, notify) = (updated.clone(), changed.clone());
    let _registration = handle.add_handler(
        move |n: &informer_core::Notification<ConfigMap>| {
            if matches!(n, informer_core::Notification::Update { .. }) {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                notify.notify_one();
            }
        },
        None,
    );
    factory.start();
    let start = tokio::time::Instant::now();
    factory
        .wait_for_sync(Duration::from_secs(7200))
        .await
        .unwrap();
    assert_eq!(handle.lister().list().len(), 200);
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "virtual time passed while syncing"
    );

    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let patch = serde_json::json!({"metadata": {"labels": {"seen": "yes"}}});
    futures::future::join_all((0..100).map(|i| {
        let api = api.clone();
        let patch = patch.clone();
        async move {
            let params = kube::api::PatchParams::default();
            let name = format!("c{i}");
            api.patch(&name, &params, &kube::api::Patch::Merge(&patch))
                .await
                .unwrap();
        }
    }))
    .await;
    // Waits without polling: a task that polls keeps the runtime busy, and the clock
    // still.
    while updated.load(std::sync::atomic::Ordering::SeqCst) < 100 {
        changed.notified().await;
    }
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "virtual time passed while watching"
    );
    assert!(!hour.is_finished());
    factory.shutdown().await;
}
