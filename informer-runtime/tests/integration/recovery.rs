//! How a cache recovers, through a real `kube::Client` against the in-process API server:
//! client-go's recovery rules (error events, too large versions, pagination), back within
//! seconds after restarts, and never back in time behind a lagging server.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use informer_core::Notification;
use informer_core::lister_watcher::{
    ListParams, ListWatchError, ListerWatcher, ObjectList, WatchParams, WatchStream,
};
use informer_runtime::informer::{CancellationToken, SharedIndexInformer};
use informer_runtime::lister_watcher::KubeListerWatcher;
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_testing::{ApiError, FailureCode, RestartMode, StatusReason, TestApiServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::support::{eventually, eventually_async, server, server_without_watch_cache};

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    c
}

fn value(c: &ConfigMap) -> String {
    c.data.as_ref().map(|d| d["v"].clone()).unwrap_or_default()
}

fn rv(c: &ConfigMap) -> u64 {
    c.resource_version()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

/// The first-page list requests seen: each one's resource version and limit.
type ListLog = Arc<Mutex<Vec<(Option<String>, Option<u32>)>>>;

/// Records the list requests (resource version and limit) a lister-watcher receives.
struct Recording<L> {
    inner: L,
    lists: ListLog,
}

#[async_trait]
impl<L: ListerWatcher<ConfigMap>> ListerWatcher<ConfigMap> for Recording<L> {
    async fn list(
        &self,
        params: &ListParams,
    ) -> Result<ObjectList<Arc<ConfigMap>>, ListWatchError> {
        if params.continue_token.is_none() {
            self.lists
                .lock()
                .unwrap()
                .push((params.resource_version.clone(), params.limit));
        }
        self.inner.list(params).await
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        self.inner.watch(params, resource_version).await
    }
}

/// An informer of the ConfigMaps in `default`, through a real client.
struct Running {
    informer: SharedIndexInformer<ConfigMap>,
    lists: ListLog,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn start(server: &TestApiServer, config: ReflectorConfig) -> Self {
        let lists = Arc::new(Mutex::new(Vec::new()));
        // No retries inside the client: the reflector sees every answer.
        let mut client_config = server.config();
        client_config.default_retry = false;
        let client = kube::Client::try_from(client_config).expect("a client");
        let api: Api<ConfigMap> = Api::namespaced(client, "default");
        let lw = Recording {
            inner: KubeListerWatcher::new(api),
            lists: lists.clone(),
        };
        let informer = SharedIndexInformer::builder(Arc::new(lw))
            .reflector_config(config)
            .build();
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await.unwrap() }
        });
        Self {
            informer,
            lists,
            cancel,
            task,
        }
    }

    fn names(&self) -> BTreeSet<String> {
        self.informer
            .store()
            .list()
            .iter()
            .map(|c| c.name_any())
            .collect()
    }

    fn lists(&self) -> Vec<(Option<String>, Option<u32>)> {
        self.lists.lock().unwrap().clone()
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

async fn create(server: &TestApiServer, name: &str, value: &str) -> ConfigMap {
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .create(&PostParams::default(), &cm(name, value))
        .await
        .unwrap()
}

async fn replace(server: &TestApiServer, name: &str, value: &str) -> ConfigMap {
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let mut current = api.get(name).await.unwrap();
    current.data = cm(name, value).data;
    api.replace(name, &PostParams::default(), &current)
        .await
        .unwrap()
}

async fn server_names(server: &TestApiServer) -> BTreeSet<String> {
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect()
}

async fn watching(server: &TestApiServer) {
    eventually("a watch is open", || server.faults().open_watches() > 0).await;
}

// ----- client-go's recovery rules -----

#[tokio::test]
async fn error_event_that_is_not_gone_nor_a_throttle_relists() {
    let server = server().await;
    create(&server, "a", "1").await;
    let cache = Running::start(&server, ReflectorConfig::default());
    eventually("synced", || cache.names().len() == 1).await;
    watching(&server).await;
    // What the API server sends after an unsafe delete of a corrupt object.
    assert!(
        server
            .faults()
            .send_watch_error(500, "StorageReadError", "corrupt object")
            > 0
    );
    eventually("the relist", || {
        cache.informer.reflector_stats().relists() == 1
    })
    .await;
    assert_eq!(cache.lists().len(), 2);
    cache.stop().await;
}

#[tokio::test]
async fn internal_error_event_within_the_retry_window_rewatches_without_relisting() {
    let server = server().await;
    create(&server, "a", "1").await;
    let config = ReflectorConfig {
        max_internal_error_retry_duration: Duration::from_secs(60),
        ..ReflectorConfig::default()
    };
    let cache = Running::start(&server, config);
    eventually("synced", || cache.names().len() == 1).await;
    watching(&server).await;
    let watches = server.faults().request_count(Verb::Watch);
    server
        .faults()
        .send_watch_error(500, "InternalError", "etcd hiccup");
    eventually("the watch again", || {
        server.faults().request_count(Verb::Watch) > watches
    })
    .await;
    create(&server, "b", "1").await;
    eventually("b", || cache.names().len() == 2).await;
    assert_eq!(cache.lists().len(), 1, "no relist");
    cache.stop().await;
}

#[tokio::test]
async fn too_large_resource_version_told_by_its_status_cause_only_lists_consistently() {
    let server = server().await;
    create(&server, "a", "1").await;
    let cache = Running::start(&server, ReflectorConfig::default());
    eventually("synced", || cache.names().len() == 1).await;
    watching(&server).await;
    // The next relist (at the cache's version) is answered "too large" by the status cause
    // alone: no "Too large resource version" anywhere in the message.
    let too_large = ApiError::new(StatusReason::Timeout, "request did not complete in time")
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge"}]}));
    server
        .faults()
        .fail_next(Verb::List, 1, FailureCode::Status(too_large));
    server.faults().send_watch_error(410, "Expired", "too old");
    eventually("a consistent list", || cache.lists().len() == 3).await;
    let lists = cache.lists();
    assert!(
        lists[1].0.as_deref().is_some_and(|rv| rv != "0"),
        "{lists:?}"
    );
    assert_eq!(lists[2], (None, Some(500)), "a consistent read, in pages");
    cache.stop().await;
}

#[tokio::test]
async fn once_the_first_list_came_back_paginated_later_relists_page_too() {
    // This server answers a list at resourceVersion 0 with a limit in pages, as an API
    // server without its watch cache does.
    let server = server_without_watch_cache().await;
    for i in 0..501 {
        create(&server, &format!("cm-{i:03}"), "1").await;
    }
    let cache = Running::start(&server, ReflectorConfig::default());
    eventually("synced", || cache.names().len() == 501).await;
    watching(&server).await;
    server.faults().send_watch_error(410, "Expired", "too old");
    eventually("the relist", || cache.lists().len() == 2).await;
    let lists = cache.lists();
    assert_eq!(lists[0], (Some("0".into()), Some(500)));
    assert!(
        lists[1].0.as_deref().is_some_and(|rv| rv != "0") && lists[1].1 == Some(500),
        "the relist at a version pages too: {lists:?}"
    );
    cache.stop().await;
}

#[tokio::test]
async fn store_resource_version_follows_every_event_and_bookmark() {
    let server = server().await;
    let cache = Running::start(&server, ReflectorConfig::default());
    eventually("synced", || cache.informer.has_synced()).await;
    let reached = |rv: u64| {
        let informer = cache.informer.clone();
        async move {
            eventually(&format!("the store reaches {rv}"), || {
                informer
                    .last_store_sync_resource_version()
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|v| v >= rv)
            })
            .await
        }
    };
    reached(rv(&create(&server, "a", "1").await)).await;
    reached(rv(&replace(&server, "a", "2").await)).await;
    // A write elsewhere: only a bookmark (every 200 ms here) brings the store to it.
    let elsewhere = Api::<ConfigMap>::namespaced(server.client(), "kube-system")
        .create(&PostParams::default(), &cm("x", "1"))
        .await
        .unwrap();
    reached(rv(&elsewhere)).await;
    cache.stop().await;
}

// ----- back within seconds -----

/// How long a cache may take to converge once the server is back: generous, because this
/// machine is shared and loaded. The reflector itself relists at once (a 410 after a healthy
/// watch) or after one first backoff delay (0.8 to 1.6 s); client-go's backoff, which grows
/// with each restart and resets only after two quiet minutes, needs longer than this from
/// the fourth restart on.
const CONVERGED_WITHIN: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_converges_within_seconds_after_every_restart() {
    let server = server().await;
    create(&server, "before", "1").await;
    let cache = Running::start(&server, ReflectorConfig::default());
    eventually("synced", || cache.names().len() == 1).await;
    for round in 0..6 {
        watching(&server).await;
        let mode = if round % 2 == 0 {
            RestartMode::ResetData
        } else {
            RestartMode::KeepData
        };
        server.faults().restart(mode);
        let back = Instant::now();
        create(&server, &format!("after-{round}"), "1").await;
        let expected = server_names(&server).await;
        eventually_async("the cache converges", async || cache.names() == expected).await;
        let took = back.elapsed();
        assert!(
            took < CONVERGED_WITHIN,
            "restart {round} ({mode:?}): the cache converged {took:?} after the server was back"
        );
    }
    cache.stop().await;
}

#[tokio::test]
async fn backoff_starts_over_once_the_server_answers_again() {
    // Lists fail twice (the delay grows twentyfold: 50 ms, then 1 s), then succeed. Had the
    // delay not started over, the next failure would wait 20 s; it waits 50 ms. The bound
    // below sits far from both, so a loaded machine cannot blur the two.
    let server = server().await;
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(120),
            factor: 20.0,
            jitter: 0.0,
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    };
    server
        .faults()
        .fail_next(Verb::List, 2, FailureCode::InternalError);
    let started = Instant::now();
    let cache = Running::start(&server, config);
    eventually("synced", || cache.informer.has_synced()).await;
    assert!(started.elapsed() >= Duration::from_millis(1050));
    watching(&server).await;
    server
        .faults()
        .fail_next(Verb::Watch, 1, FailureCode::InternalError);
    server.faults().drop_watches();
    let dropped = Instant::now();
    eventually("the relist", || cache.lists().len() == 2 + 2).await;
    assert!(
        dropped.elapsed() < Duration::from_secs(10),
        "the backoff did not start over: {:?}",
        dropped.elapsed()
    );
    cache.stop().await;
}

// ----- never back in time -----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_never_shows_an_older_state_than_it_had_behind_a_lagging_server() {
    let server = server().await;
    create(&server, "a", "1").await;
    for v in 2..=4 {
        replace(&server, "a", &v.to_string()).await;
    }
    create(&server, "b", "1").await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    api.delete("b", &Default::default()).await.unwrap();
    // Every change the cache ever shows, in order.
    let seen: Arc<Mutex<Vec<(String, u64, String)>>> = Arc::default();
    let cache = Running::start(&server, ReflectorConfig::default());
    let log = seen.clone();
    cache.informer.add_handler(
        move |n: &Notification<ConfigMap>| {
            if let Notification::Add { object, .. } | Notification::Update { new: object, .. } = n {
                log.lock()
                    .unwrap()
                    .push((object.name_any(), rv(object), value(object)));
            }
        },
        None,
    );
    eventually("synced at the latest state", || {
        cache
            .informer
            .store()
            .list()
            .iter()
            .any(|c| value(c) == "4")
    })
    .await;
    watching(&server).await;
    // The server now answers from 4 revisions back: a resumed watch replays a@2..a@4 and the
    // create and delete of b, lists at a version are as of then. Only consistent lists are
    // current.
    server.faults().lag(4);
    server.faults().drop_watches();
    eventually("a lagging answer was refused", || {
        cache.informer.reflector_stats().stale_refusals > 0
    })
    .await;
    // While the server lags, more changes come.
    replace(&server, "a", "5").await;
    eventually("the consistent list brings a@5", || {
        cache
            .informer
            .store()
            .list()
            .iter()
            .any(|c| value(c) == "5")
    })
    .await;
    server.faults().lag(0);
    replace(&server, "a", "6").await;
    eventually("a@6 through the watch", || {
        cache
            .informer
            .store()
            .list()
            .iter()
            .any(|c| value(c) == "6")
    })
    .await;
    let seen = seen.lock().unwrap().clone();
    let a: Vec<(u64, String)> = seen
        .iter()
        .filter(|(n, _, _)| n == "a")
        .map(|(_, rv, v)| (*rv, v.clone()))
        .collect();
    assert!(
        a.windows(2).all(|w| w[0].0 <= w[1].0),
        "the cache went back in time: {a:?}"
    );
    assert!(
        a.iter().all(|(_, v)| v.as_str() >= "4"),
        "an older state of a was shown: {a:?}"
    );
    assert!(
        seen.iter().all(|(n, _, _)| n != "b"),
        "b, deleted before the cache started, reappeared: {seen:?}"
    );
    cache.stop().await;
}
