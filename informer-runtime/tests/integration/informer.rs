//! `SharedIndexInformer` over `KubeListerWatcher`, through a real `kube::Client` against the
//! in-process API server, including the faults the server can inject.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::{eventually, server};
use informer_core::store::index_fn;
use informer_core::{Deleted, Notification, ObjectKey};
use informer_runtime::informer::{
    CancellationToken, HandlerOptions, InformerError, SharedIndexInformer,
};
use informer_runtime::lister_watcher::KubeListerWatcher;
use informer_testing::{FailureCode, RequestMatch, RestartMode, TestApiServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use tokio::task::JoinHandle;

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    c
}

fn name_of(c: &ConfigMap) -> String {
    c.metadata.name.clone().unwrap_or_default()
}

fn value_of(c: &ConfigMap) -> String {
    c.data
        .as_ref()
        .and_then(|d| d.get("v").cloned())
        .unwrap_or_default()
}

/// Records every notification a handler receives.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Notification<ConfigMap>>>>);

impl Recorder {
    fn handler(&self) -> impl Fn(&Notification<ConfigMap>) + Send + Sync + 'static {
        let seen = self.0.clone();
        move |n: &Notification<ConfigMap>| seen.lock().unwrap().push(n.clone())
    }

    fn notifications(&self) -> Vec<Notification<ConfigMap>> {
        self.0.lock().unwrap().clone()
    }

    fn final_state_unknown_deletes(&self) -> Vec<String> {
        self.notifications()
            .iter()
            .filter_map(|n| match n {
                Notification::Delete(Deleted::FinalStateUnknown { key, last_known }) => {
                    assert!(last_known.is_some(), "the last known state is carried");
                    Some(key.name().to_owned())
                }
                _ => None,
            })
            .collect()
    }

    /// Replays the notifications per key, checking they form a consistent history, and
    /// returns the resulting `name -> value`.
    fn replay(&self) -> HashMap<String, String> {
        let mut state: HashMap<String, Arc<ConfigMap>> = HashMap::new();
        for n in self.notifications() {
            match n {
                Notification::Add { object, .. } => {
                    assert!(
                        state.insert(name_of(&object), object).is_none(),
                        "add of a present object"
                    );
                }
                Notification::Update { old, new } => {
                    let prev = state
                        .insert(name_of(&new), new)
                        .expect("update of an absent object");
                    assert!(
                        Arc::ptr_eq(&prev, &old),
                        "update whose old object was never delivered"
                    );
                }
                Notification::Delete(d) => {
                    let name = match &d {
                        Deleted::Object(o) => name_of(o),
                        Deleted::FinalStateUnknown { key, .. } => key.name().to_owned(),
                    };
                    assert!(state.remove(&name).is_some(), "delete of an absent object");
                }
            }
        }
        state.into_iter().map(|(k, v)| (k, value_of(&v))).collect()
    }
}

struct Running {
    informer: SharedIndexInformer<ConfigMap>,
    cancel: CancellationToken,
    task: JoinHandle<Result<(), InformerError>>,
}

impl Running {
    fn start(informer: SharedIndexInformer<ConfigMap>) -> Self {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        Self {
            informer,
            cancel,
            task,
        }
    }

    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("run returns promptly after cancel")
            .unwrap()
            .unwrap();
    }

    fn cached(&self) -> HashMap<String, String> {
        self.informer
            .lister()
            .list()
            .iter()
            .map(|c| (name_of(c), value_of(c)))
            .collect()
    }
}

async fn server_state(api: &Api<ConfigMap>) -> HashMap<String, String> {
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| (name_of(c), value_of(c)))
        .collect()
}

fn informer_for(server: &TestApiServer) -> (Api<ConfigMap>, SharedIndexInformer<ConfigMap>) {
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let informer = SharedIndexInformer::new(Arc::new(KubeListerWatcher::new(api.clone())));
    (api, informer)
}

#[tokio::test]
async fn informer_lists_then_watches_through_a_real_client() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let pp = PostParams::default();
    for n in ["a", "b", "c"] {
        api.create(&pp, &cm(n, "1")).await.unwrap();
    }
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(
        tokio::time::timeout(Duration::from_secs(10), reg.wait_synced())
            .await
            .unwrap()
    );
    assert_eq!(running.cached().len(), 3);

    let mut b = api.get("b").await.unwrap();
    b.data = Some([("v".to_owned(), "2".to_owned())].into());
    api.replace("b", &pp, &b).await.unwrap();
    api.delete("c", &DeleteParams::default()).await.unwrap();
    api.create(&pp, &cm("d", "1")).await.unwrap();

    let expected = server_state(&api).await;
    eventually("the cache matches the server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    assert!(
        informer
            .lister()
            .get(&ObjectKey::new(Some("default"), "b"))
            .is_some_and(|b| value_of(&b) == "2")
    );
    assert!(informer.last_sync_resource_version().is_some());
    running.stop().await;
}

#[tokio::test]
async fn informer_resumes_after_dropped_watches_without_losing_changes() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let pp = PostParams::default();
    api.create(&pp, &cm("a", "1")).await.unwrap();
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    for round in 0..5 {
        server.faults().drop_watches();
        api.create(&pp, &cm(&format!("n{round}"), "1"))
            .await
            .unwrap();
    }
    let expected = server_state(&api).await;
    eventually("the cache matches the server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    running.stop().await;
}

#[tokio::test]
async fn objects_deleted_while_the_watch_was_down_reach_handlers_as_final_state_unknown() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let pp = PostParams::default();
    for n in ["keep", "gone"] {
        api.create(&pp, &cm(n, "1")).await.unwrap();
    }
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);

    // Keep the watch down (every re-watch fails) while "gone" is deleted, then compact
    // the history so that resuming is impossible: the reflector must relist.
    server
        .faults()
        .fail_next(Verb::Watch, 1_000, FailureCode::InternalError);
    server.faults().drop_watches();
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    server.faults().compact();
    server.faults().clear();
    server.faults().drop_watches();

    let expected = server_state(&api).await;
    eventually("the cache matches the server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    let deletes = rec
        .notifications()
        .iter()
        .filter(|n| matches!(n, Notification::Delete(_)))
        .count();
    assert_eq!(deletes, 1, "exactly one delete for the one deleted object");
    assert_eq!(rec.final_state_unknown_deletes(), ["gone"]);
    running.stop().await;
}

#[tokio::test]
async fn informer_relists_after_a_server_restart_that_lost_data() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let pp = PostParams::default();
    for n in ["a", "b"] {
        api.create(&pp, &cm(n, "1")).await.unwrap();
    }
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    server.faults().restart(RestartMode::ResetData);
    // The test's own write comes from a client made after the restart (a pooled
    // connection from before it may fail its next request).
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&pp, &cm("c", "1")).await.unwrap();
    let expected = server_state(&api).await;
    eventually("the cache matches the reset server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    let mut vanished = rec.final_state_unknown_deletes();
    vanished.sort();
    assert_eq!(
        vanished,
        ["a", "b"],
        "objects lost by the restart are final-state-unknown deletes"
    );
    running.stop().await;
}

#[tokio::test]
async fn informer_syncs_despite_failing_and_throttled_requests() {
    let server = server().await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).resource("configmaps"),
        1,
        FailureCode::InternalError,
    );
    server.faults().fail_next(
        Verb::Watch,
        1,
        FailureCode::TooManyRequests {
            retry_after: Duration::from_millis(100),
        },
    );
    // kube's client would retry the 429 by itself: without retries, the informer sees it.
    let mut config = server.config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let informer = SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(
        Api::<ConfigMap>::namespaced(client, "default"),
    )))
    .watch_error_handler({
        let errors = errors.clone();
        move |e| errors.lock().unwrap().push(e.code())
    })
    .build();
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(
        tokio::time::timeout(Duration::from_secs(20), informer.wait_for_sync())
            .await
            .expect("syncs after backing off")
    );
    api.create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    let expected = server_state(&api).await;
    eventually("the cache matches the server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    // The watch error handler saw both failures, as the reflector met them.
    assert_eq!(*errors.lock().unwrap(), [Some(500), Some(429)]);
    running.stop().await;
}

#[tokio::test]
async fn informer_survives_a_malformed_watch_event() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    eventually("the watch is open", || server.faults().open_watches() > 0).await;
    server.faults().send_malformed_event();
    api.create(&PostParams::default(), &cm("after", "1"))
        .await
        .unwrap();
    let expected = server_state(&api).await;
    eventually("the cache matches the server", || {
        running.cached() == expected
    })
    .await;
    eventually("the handler saw everything", || rec.replay() == expected).await;
    running.stop().await;
}

#[tokio::test]
async fn managed_fields_are_dropped_before_objects_are_cached() {
    let server = server().await;
    server
        .create_json(serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "a",
                "namespace": "default",
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]
            },
            "data": {"v": "1"}
        }))
        .unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    assert!(
        api.get("a")
            .await
            .unwrap()
            .metadata
            .managed_fields
            .is_some(),
        "the server keeps them"
    );
    let informer = SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(api)))
        .drop_managed_fields()
        .build();
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    let cached = informer.lister().namespaced("default").get("a").unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    running.stop().await;
}

#[tokio::test]
async fn stopping_the_informer_closes_its_watch() {
    let server = server().await;
    let (_api, informer) = informer_for(&server);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    eventually("the watch is open", || server.faults().open_watches() == 1).await;
    running.stop().await;
    eventually("the watch is closed", || {
        server.faults().open_watches() == 0
    })
    .await;
}

/// Counts what it is given; panics on objects whose value is "boom".
#[derive(Clone, Default)]
struct Fragile(Recorder);

impl Fragile {
    fn handler(&self) -> impl Fn(&Notification<ConfigMap>) + Send + Sync + 'static {
        let record = self.0.handler();
        move |n: &Notification<ConfigMap>| {
            if let Notification::Add { object, .. } | Notification::Update { new: object, .. } = n
                && value_of(object) == "boom"
            {
                panic!("handler bug on purpose");
            }
            record(n)
        }
    }
}

#[tokio::test]
async fn handlers_are_isolated_removable_and_resynced_on_their_own_schedule() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &cm(name, "1"))
            .await
            .unwrap();
    }
    let fragile = Fragile::default();
    let fragile_reg =
        informer.add_handler_with(fragile.handler(), HandlerOptions::new().name("fragile"));
    let resyncing = Recorder::default();
    let resyncing_reg = informer.add_handler(resyncing.handler(), Some(Duration::from_secs(1)));
    let removed = Recorder::default();
    let removed_reg = informer.add_handler(removed.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    assert!(fragile_reg.wait_synced().await && resyncing_reg.wait_synced().await);

    // A panic in one handler is caught and counted; it keeps receiving later changes.
    api.create(&PostParams::default(), &cm("c", "boom"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("d", "1"))
        .await
        .unwrap();
    eventually("the fragile handler sees d", || {
        fragile
            .0
            .notifications()
            .iter()
            .any(|n| matches!(n, Notification::Add { object, .. } if name_of(object) == "d"))
    })
    .await;
    assert_eq!(fragile_reg.stats().panics, 1);
    assert_eq!(fragile_reg.name(), "fragile");

    // A removed handler gets nothing more; removal returns once its task has finished.
    eventually("the removed handler has everything so far", || {
        removed.notifications().len() == 4
    })
    .await;
    removed_reg.remove().await;
    api.create(&PostParams::default(), &cm("e", "1"))
        .await
        .unwrap();
    eventually("the others see e", || {
        running.cached().contains_key("e") && resyncing.replay().contains_key("e")
    })
    .await;
    assert_eq!(removed.notifications().len(), 4);

    // Resyncs (same object as old and new) go to the handler whose period is due, and only
    // to it, without a request to the server.
    let lists = server.faults().request_count(Verb::List);
    let resyncs = |r: &Recorder| {
        r.notifications()
            .iter()
            .filter(|n| matches!(n, Notification::Update { old, new } if Arc::ptr_eq(old, new)))
            .count()
    };
    eventually("a resync", || resyncs(&resyncing) >= 5).await;
    assert_eq!(resyncs(&fragile.0), 0);
    assert_eq!(server.faults().request_count(Verb::List), lists);
    running.stop().await;
}

#[tokio::test]
async fn indexes_added_while_running_and_label_selectors_serve_lookups() {
    let server = server().await;
    let (api, informer) = informer_for(&server);
    let labelled = |name: &str, team: &str| {
        let mut c = cm(name, "1");
        c.metadata.labels = Some([("team".to_owned(), team.to_owned())].into());
        c
    };
    api.create(&PostParams::default(), &labelled("a", "red"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &labelled("b", "blue"))
        .await
        .unwrap();
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await);
    // Added after sync: the cached objects are indexed at once, later ones as they come.
    informer
        .add_indexers(
            [(
                "team".to_owned(),
                index_fn(|c: &ConfigMap| {
                    c.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("team").cloned())
                        .into_iter()
                        .collect()
                }),
            )]
            .into(),
        )
        .unwrap();
    let lister = informer.lister();
    let names = |objs: Vec<Arc<ConfigMap>>| {
        let mut names: Vec<String> = objs.iter().map(|c| name_of(c)).collect();
        names.sort();
        names
    };
    assert_eq!(names(lister.by_index_name("team", "red").unwrap()), ["a"]);
    api.create(&PostParams::default(), &labelled("c", "red"))
        .await
        .unwrap();
    eventually("c is indexed", || {
        names(lister.by_index_name("team", "red").unwrap()) == ["a", "c"]
    })
    .await;
    assert!(lister.by_index_name("no-such-index", "x").is_err());
    let selected = lister
        .namespaced("default")
        .list_by_labels("team in (blue, green)")
        .unwrap();
    assert_eq!(names(selected), ["b"]);
    assert!(
        lister
            .namespaced("default")
            .list_by_labels("team in (")
            .is_err()
    );
    assert!(lister.namespaced("default").get("nope").is_none());
    running.stop().await;
}

#[tokio::test]
async fn a_large_first_list_handed_over_in_parts_reaches_the_cache_and_handlers_whole() {
    let server = server().await;
    let n = 1_200;
    for i in 0..n {
        server
            .create_json(serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i:05}"), "namespace": "default"},
                "data": {"pad": "x".repeat(1_000)},
            }))
            .expect("create");
    }
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let informer = SharedIndexInformer::new(Arc::new(KubeListerWatcher::new(api)));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let registration = informer.add_handler(
        move |n: &Notification<ConfigMap>| {
            if let Notification::Add {
                object,
                is_initial_list,
            } = n
            {
                record
                    .lock()
                    .unwrap()
                    .push((name_of(object), *is_initial_list));
            }
        },
        None,
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    assert!(informer.wait_for_sync().await);
    assert_eq!(informer.lister().len(), n);
    eventually("every initial add handled", || registration.has_synced()).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), n, "each object once");
    assert!(
        seen.iter().all(|(_, initial)| *initial),
        "all of the initial list"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}
