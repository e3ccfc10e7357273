//! Tests of the factory, one per guarantee, over in-memory sources.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer_core::{ListWatchError, ListerWatcher};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::test_support::eventually;
use informer_testing::{MemoryListerWatcher, RecordedRequest};

fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    c
}

/// A `make` closure that counts how often the factory built a lister-watcher.
fn counting<K>(
    source: &MemoryListerWatcher<K>,
    built: &Arc<AtomicUsize>,
) -> impl FnOnce() -> Arc<dyn ListerWatcher<K>>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let (source, built) = (source.clone(), built.clone());
    move || {
        built.fetch_add(1, Ordering::SeqCst);
        Arc::new(source)
    }
}

#[tokio::test]
async fn factory_shares_one_informer_per_type_namespace_and_selectors() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    let built = Arc::new(AtomicUsize::new(0));
    let p = || InformerParams::namespaced("default").labels("app=web");
    let a = factory.informer_from(p(), counting(&source, &built));
    let b = factory.informer_from(p(), counting(&source, &built));
    assert!(a.same_informer(&b));
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "the second ask built nothing"
    );

    let others = [
        factory.informer_from(
            InformerParams::namespaced("other").labels("app=web"),
            counting(&source, &built),
        ),
        factory.informer_from(
            InformerParams::namespaced("default"),
            counting(&source, &built),
        ),
        factory.informer_from(p().fields("metadata.name=x"), counting(&source, &built)),
        factory.informer_from(
            InformerParams::all().labels("app=web"),
            counting(&source, &built),
        ),
    ];
    for (i, o) in others.iter().enumerate() {
        assert!(!o.same_informer(&a), "variant {i} must be its own informer");
    }
    let secrets =
        factory.informer_from(p(), counting(&MemoryListerWatcher::<Secret>::new(), &built));
    assert_eq!(secrets.id().kind(), "Secret");
    assert_eq!(factory.informers().len(), 6);
    assert_eq!(built.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn empty_strings_in_params_name_the_same_informer_as_unset_ones() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    let built = Arc::new(AtomicUsize::new(0));
    let a = factory.informer_from(InformerParams::all(), counting(&source, &built));
    let b = factory.informer_from(
        InformerParams {
            namespace: Some(String::new()),
            label_selector: Some(" ".into()),
            field_selector: Some(String::new()),
        },
        counting(&source, &built),
    );
    assert!(a.same_informer(&b));
    assert_eq!(a.id().to_string(), "configmaps.v1 in all namespaces");
}

#[tokio::test]
async fn selectors_reach_the_lister_watcher() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create(cm("web", &[("app", "web")]));
    source.create(cm("db", &[("app", "db")]));
    let built = Arc::new(AtomicUsize::new(0));
    let web = factory.informer_from(
        InformerParams::all().labels("app=web"),
        counting(&source, &built),
    );
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    let names: Vec<_> = web
        .lister()
        .list()
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["web"]);
    factory.shutdown().await;
}

#[tokio::test]
async fn last_user_drop_stops_and_removes_the_informer() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    let built = Arc::new(AtomicUsize::new(0));
    let a = factory.informer_from(InformerParams::all(), counting(&source, &built));
    let b = a.clone(); // a clone is a user too
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    let informer = a.informer().clone();
    drop(a);
    assert_eq!(factory.informers().len(), 1, "one user left");
    assert!(informer.is_running());
    drop(b);
    assert!(
        factory.informers().is_empty(),
        "forgotten with its last user"
    );
    eventually("the informer stopped", || informer.is_stopped()).await;
    eventually("its watch was closed", || source.open_watches() == 0).await;

    let again = factory.informer_from(InformerParams::all(), counting(&source, &built));
    assert_eq!(
        built.load(Ordering::SeqCst),
        2,
        "asking again builds a fresh informer"
    );
    eventually(
        "the fresh informer started (the factory was started)",
        || again.is_running(),
    )
    .await;
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_sync_reports_which_informers_have_not_synced_and_why() {
    let factory = InformerFactory::without_client();
    let built = Arc::new(AtomicUsize::new(0));
    let healthy = MemoryListerWatcher::<ConfigMap>::new();
    let forbidden = MemoryListerWatcher::<Secret>::new();
    for _ in 0..100 {
        forbidden.fail_next_list(ListWatchError::status(
            403,
            "Forbidden",
            "secrets is forbidden",
        ));
    }
    let _ok = factory.informer_from(InformerParams::all(), counting(&healthy, &built));
    let _denied = factory.informer_from(InformerParams::all(), counting(&forbidden, &built));
    let late = factory.informer_from(InformerParams::namespaced("x"), counting(&healthy, &built));
    let before = factory
        .wait_for_sync(Duration::from_secs(1))
        .await
        .expect_err("nothing runs before start");
    assert_eq!(before.unsynced.len(), 3, "{before}");
    assert!(
        before
            .unsynced
            .iter()
            .all(|u| matches!(u.reason, UnsyncedReason::NotStarted)),
        "{before}"
    );
    drop(late);
    factory.start();
    // Not started: asked for from outside any Tokio runtime after the start.
    let outside = std::thread::scope(|s| {
        s.spawn(|| {
            factory.informer_from(InformerParams::namespaced("x"), counting(&healthy, &built))
        })
        .join()
        .unwrap()
    });

    let err = factory
        .wait_for_sync(Duration::from_secs(5))
        .await
        .expect_err("two informers cannot sync");
    let mut reasons: Vec<(String, String)> = err
        .unsynced
        .iter()
        .map(|u| (u.informer.to_string(), u.reason.to_string()))
        .collect();
    reasons.sort();
    assert_eq!(reasons.len(), 2, "{err}");
    assert_eq!(reasons[0].0, "configmaps.v1 in namespace x");
    assert!(matches!(
        err.unsynced
            .iter()
            .find(|u| u.informer.kind() == "ConfigMap")
            .unwrap()
            .reason,
        UnsyncedReason::NotStarted
    ));
    assert_eq!(reasons[1].0, "secrets.v1 in all namespaces");
    match &err
        .unsynced
        .iter()
        .find(|u| u.informer.kind() == "Secret")
        .unwrap()
        .reason
    {
        UnsyncedReason::Listing(Some(e)) => assert!(e.is_forbidden(), "{e}"),
        other => panic!("expected the 403, got {other}"),
    }
    assert!(
        err.to_string().contains("2 informer(s) have not synced"),
        "{err}"
    );
    drop(outside);
    factory.shutdown().await;
}

#[tokio::test]
async fn informers_asked_for_after_start_start_at_once() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create(cm("web", &[("app", "web")]));
    let built = Arc::new(AtomicUsize::new(0));
    let _first = factory.informer_from(InformerParams::all(), counting(&source, &built));
    factory.start();
    // Asked for later (a manager's task reading a cache, say): no second `start`.
    let late = factory.informer_from(
        InformerParams::all().labels("app=web"),
        counting(&source, &built),
    );
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .expect("the late informer syncs without another start");
    assert_eq!(late.lister().list().len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn wait_for_sync_returns_as_soon_as_everything_synced_or_cancelled() {
    let factory = InformerFactory::without_client();
    let built = Arc::new(AtomicUsize::new(0));
    let _a = factory.informer_from(
        InformerParams::all(),
        counting(&MemoryListerWatcher::<ConfigMap>::new(), &built),
    );
    factory.start();
    tokio::time::timeout(
        Duration::from_secs(10),
        factory.wait_for_sync(Duration::from_secs(3600)),
    )
    .await
    .expect("returns once synced")
    .unwrap();

    let never = MemoryListerWatcher::<Secret>::new();
    for _ in 0..100 {
        never.fail_next_list(ListWatchError::status(500, "InternalError", "boom"));
    }
    let _b = factory.informer_from(InformerParams::all(), counting(&never, &built));
    factory.start();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = factory
        .wait_for_sync_cancellable(&cancel)
        .await
        .unwrap_err();
    assert_eq!(err.unsynced.len(), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_every_informer_and_waits() {
    let factory = InformerFactory::without_client();
    let built = Arc::new(AtomicUsize::new(0));
    let a = factory.informer_from(
        InformerParams::all(),
        counting(&MemoryListerWatcher::<ConfigMap>::new(), &built),
    );
    let b = factory.informer_from(
        InformerParams::all(),
        counting(&MemoryListerWatcher::<Secret>::new(), &built),
    );
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    factory.shutdown().await;
    assert!(
        a.is_stopped() && b.is_stopped(),
        "stopped when shutdown returns"
    );
    let c = factory.informer_from(
        InformerParams::namespaced("late"),
        counting(&MemoryListerWatcher::<ConfigMap>::new(), &built),
    );
    factory.start();
    assert!(!c.is_running(), "nothing starts after shutdown");
}

#[tokio::test]
async fn start_starts_only_informers_not_yet_started() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    let built = Arc::new(AtomicUsize::new(0));
    let a = factory.informer_from(InformerParams::all(), counting(&source, &built));
    factory.start();
    eventually("a runs", || a.is_running()).await;
    let b = factory.informer_from(InformerParams::namespaced("ns"), counting(&source, &built));
    eventually("b runs without a second start", || b.is_running()).await;
    factory.start(); // must not start (or restart) `a` or `b` a second time
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    // One list per informer: `a` was neither run twice nor restarted.
    let lists = source
        .requests()
        .iter()
        .filter(|r| matches!(r, RecordedRequest::List(_)))
        .count();
    assert_eq!(lists, 2);
    assert!(a.is_running() && b.is_running());
    factory.shutdown().await;
}

#[tokio::test]
async fn factory_settings_apply_to_every_informer() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    let factory = InformerFactory::without_client()
        .drop_managed_fields(true)
        .default_resync(Some(Duration::from_secs(60)));
    let source = MemoryListerWatcher::<ConfigMap>::new();
    let mut obj = cm("a", &[]);
    obj.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    source.create(obj);
    let built = Arc::new(AtomicUsize::new(0));
    let informer = factory.informer_from(InformerParams::all(), counting(&source, &built));
    assert_eq!(informer.default_resync(), Some(Duration::from_secs(60)));
    factory.start();
    factory
        .wait_for_sync(Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        informer.lister().list()[0]
            .metadata
            .managed_fields
            .is_none()
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn kube_backed_informers_are_keyed_by_api_resource() {
    // A client that points nowhere: building informers makes no request.
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    let client = kube::Client::try_from(config).unwrap();
    let factory = InformerFactory::new(client);
    let typed = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    let again = factory.informer::<ConfigMap>(InformerParams::namespaced("default"));
    assert!(typed.same_informer(&again));
    let cm_resource = ApiResource::erase::<ConfigMap>(&());
    let secret_resource = ApiResource::erase::<Secret>(&());
    let dyn_cm = factory.dynamic_informer(&cm_resource, InformerParams::namespaced("default"));
    let dyn_secret =
        factory.dynamic_informer(&secret_resource, InformerParams::namespaced("default"));
    assert!(
        !dyn_cm.same_informer(&dyn_secret),
        "DynamicObject informers differ by ApiResource"
    );
    assert_eq!(dyn_secret.id().plural(), "secrets");
    let meta = factory.metadata_informer::<ConfigMap>(InformerParams::namespaced("default"));
    assert!(meta.id().to_string().contains("metadata only"));
    let nodes = factory.cluster_informer::<k8s_openapi::api::core::v1::Node>(InformerParams::all());
    assert_eq!(nodes.id().to_string(), "nodes.v1 in all namespaces");
    assert_eq!(factory.informers().len(), 5);
}
