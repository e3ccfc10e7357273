//! `SharedIndexInformer` over widgets against both servers: end to end (handlers, lister,
//! indexes), the streaming list, bookmarks, the relist after an outage during which history
//! was compacted (410), and restarts of the API server and of its storage.

use std::sync::Arc;
use std::time::Duration;

use informer_core::store::index_fn;
use informer_runtime::informer::FifoKind;
use informer_runtime::reflector::BackoffConfig;
use informer_runtime::{KubeListerWatcher, ReflectorConfig, SharedIndexInformer};
use kube::Api;
use kube::api::ListParams;
use kube::core::DynamicObject;

use super::recorder::{Recorder, Running};
use super::server::{
    Options, Server, create, delete, eventually, name_of, on_both_servers, rv_of, server_state,
    update, value_of, widgets,
};

/// Short backoffs, so that recoveries happen in test time.
fn fast() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(500),
            ..BackoffConfig::default()
        },
        ..ReflectorConfig::default()
    }
}

fn informer(
    api: Api<DynamicObject>,
    config: ReflectorConfig,
) -> SharedIndexInformer<DynamicObject> {
    SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(api)))
        .reflector_config(config)
        .build()
}

fn names(running: &Running) -> Vec<String> {
    let mut names: Vec<String> = running
        .cached()
        .keys()
        .map(|k| k.name().to_owned())
        .collect();
    names.sort();
    names
}

async fn holds(running: &Running, server: &Server, want: &[&str]) {
    eventually(
        &format!("{}: the cache holds {want:?}", server.name()),
        || names(running) == want,
    )
    .await;
}

async fn end_to_end(server: &Server) {
    let api = server.widgets();
    create(&api, "a", &[("team", "red")], 1).await;
    create(&api, "b", &[("team", "blue")], 1).await;
    let informer = informer(api.clone(), fast());
    informer
        .add_indexers(
            [(
                "team".to_owned(),
                index_fn(|o: &DynamicObject| {
                    o.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("team").cloned())
                        .into_iter()
                        .collect()
                }),
            )]
            .into(),
        )
        .expect("an index");
    let first = Recorder::new("first handler");
    informer.add_handler(first.handler(), None);
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await, "{}", server.name());
    // A handler added after the sync gets the cached objects as adds.
    let late = Recorder::new("late handler");
    informer.add_handler(late.handler(), None);

    create(&api, "c", &[("team", "red")], 1).await;
    update(&api, "a", 2).await;
    delete(&api, "b").await;
    holds(&running, server, &["a", "c"]).await;
    let lister = informer.lister();
    eventually(&format!("{}: a's update is cached", server.name()), || {
        lister
            .namespaced("default")
            .get("a")
            .is_some_and(|a| value_of(&a) == 2)
    })
    .await;
    let mut red: Vec<String> = lister
        .by_index_name("team", "red")
        .expect("the index")
        .iter()
        .map(|o| name_of(o))
        .collect();
    red.sort();
    assert_eq!(red, ["a", "c"], "{}", server.name());
    let expected = server_state(&api).await;
    for recorder in [&first, &late] {
        eventually(
            &format!("{}: {} caught up", server.name(), recorder.name),
            || {
                recorder
                    .replay()
                    .is_ok_and(|state| state.len() == expected.len())
            },
        )
        .await;
        let state = recorder.replay().expect("a consistent history");
        for (key, object) in state {
            assert_eq!(
                Some(&*object),
                expected.get(key.name()),
                "{}: {} ends with the server's {key}",
                server.name(),
                recorder.name
            );
        }
    }
    assert!(
        first.final_state_unknown_deletes().is_empty(),
        "{}",
        server.name()
    );
    assert_eq!(informer.reflector_stats().lists, 1, "{}", server.name());
    running.stop().await.expect("stops");
}
on_both_servers!(shared_informer_end_to_end, Options::DEFAULT, end_to_end);

async fn streaming_list(server: &Server) {
    let api = server.widgets();
    create(&api, "a", &[], 1).await;
    create(&api, "b", &[], 1).await;
    let informer = informer(
        api.clone(),
        ReflectorConfig {
            streaming_list: true,
            ..fast()
        },
    );
    let running = Running::start(informer.clone());
    holds(&running, server, &["a", "b"]).await;
    create(&api, "c", &[], 1).await;
    holds(&running, server, &["a", "b", "c"]).await;
    let stats = informer.reflector_stats();
    assert_eq!(stats.streaming_fallbacks, 0, "{}: {stats:?}", server.name());
    assert_eq!(stats.lists, 1, "{}: {stats:?}", server.name());
    running.stop().await.expect("stops");
}
on_both_servers!(
    informer_syncs_with_a_streaming_list,
    Options::DEFAULT,
    streaming_list
);

/// Changes the informer does not see (another label) still move its version, through
/// bookmarks; short server-side watch timeouts make the real server send them soon.
async fn bookmarks(server: &Server) {
    let api = server.widgets();
    let informer = informer(
        api.clone(),
        ReflectorConfig {
            list_params: ListParams::default().labels("app=watched"),
            // kube-apiserver sends a watch's bookmark 2 s before its timeout, and none if
            // that moment has passed when the watch is set up (a loaded machine): leave room.
            watch_timeout: (Duration::from_secs(9), Duration::from_secs(10)),
            ..fast()
        },
    );
    let running = Running::start(informer.clone());
    assert!(informer.wait_for_sync().await, "{}", server.name());
    let unseen = create(&api, "other", &[("app", "other")], 1).await;
    eventually(
        &format!(
            "{}: the informer's version reaches the unseen change",
            server.name()
        ),
        || {
            informer
                .last_sync_resource_version()
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v >= rv_of(&unseen))
        },
    )
    .await;
    assert!(
        informer.reflector_stats().bookmarks > 0,
        "{}",
        server.name()
    );
    assert!(names(&running).is_empty(), "{}", server.name());
    running.stop().await.expect("stops");
}
on_both_servers!(
    bookmarks_advance_the_informers_version,
    Options::DEFAULT,
    bookmarks
);

/// The informer's connection is cut while objects change and the history is compacted past
/// its version: when it comes back it cannot resume (410), relists, and reports the object
/// that vanished meanwhile as deleted with its final state unknown.
async fn relist_after_compaction(server: &Server) {
    let api = server.widgets();
    create(&api, "a", &[], 1).await;
    create(&api, "b", &[], 1).await;
    let proxy = server.proxy().await;
    let informer = informer(widgets(proxy.client()), fast());
    let recorder = Recorder::new("handler");
    informer.add_handler(recorder.handler(), None);
    let running = Running::start(informer.clone());
    holds(&running, server, &["a", "b"]).await;

    proxy.cut();
    delete(&api, "b").await;
    create(&api, "c", &[], 1).await;
    update(&api, "a", 2).await;
    server.compact().await;
    proxy.restore();

    holds(&running, server, &["a", "c"]).await;
    assert_eq!(
        recorder.final_state_unknown_deletes(),
        ["b"],
        "{}",
        server.name()
    );
    let stats = informer.reflector_stats();
    assert!(stats.lists >= 2, "{}: a relist: {stats:?}", server.name());
    eventually(&format!("{}: a's update is cached", server.name()), || {
        running
            .cached()
            .values()
            .any(|o| name_of(o) == "a" && value_of(o) == 2)
    })
    .await;
    running.stop().await.expect("stops");
}
on_both_servers!(
    informer_relists_after_an_outage_past_compaction,
    Options::COMPACTABLE,
    relist_after_compaction
);

async fn apiserver_restart(server: &Server) {
    let api = server.widgets();
    create(&api, "a", &[], 1).await;
    let informer = informer(api.clone(), fast());
    let recorder = Recorder::new("handler");
    informer.add_handler(recorder.handler(), None);
    let running = Running::start(informer.clone());
    holds(&running, server, &["a"]).await;
    server.restart_apiserver().await;
    // The test's own writes come from a client made after the restart: a pooled
    // connection from before it may fail its next request, on either server.
    let api = server.widgets();
    create(&api, "b", &[], 1).await;
    update(&api, "a", 2).await;
    holds(&running, server, &["a", "b"]).await;
    server.restart_storage().await;
    let api = server.widgets();
    create(&api, "c", &[], 1).await;
    delete(&api, "b").await;
    holds(&running, server, &["a", "c"]).await;
    let expected = server_state(&api).await;
    eventually(&format!("{}: the handler caught up", server.name()), || {
        recorder.replay().is_ok_and(|s| {
            s.len() == expected.len() && s.iter().all(|(k, v)| expected.get(k.name()) == Some(&**v))
        })
    })
    .await;
    running.stop().await.expect("stops");
}
on_both_servers!(
    informer_follows_through_restarts_of_the_apiserver_and_its_storage,
    Options::DEFAULT,
    apiserver_restart
);

/// The informer over a FIFO of each kind ends equal to the server after a burst of changes.
async fn fifo_kinds(server: &Server) {
    let api = server.widgets();
    for fifo in [FifoKind::Real, FifoKind::Delta] {
        let informer = SharedIndexInformer::builder(Arc::new(KubeListerWatcher::new(api.clone())))
            .fifo(fifo)
            .reflector_config(fast())
            .build();
        let running = Running::start(informer.clone());
        assert!(informer.wait_for_sync().await, "{}", server.name());
        let prefix = format!("{fifo:?}").to_lowercase();
        for i in 0..10 {
            create(&api, &format!("{prefix}-{i}"), &[], i).await;
        }
        for i in 0..10 {
            if i % 3 == 0 {
                delete(&api, &format!("{prefix}-{i}")).await;
            } else {
                update(&api, &format!("{prefix}-{i}"), 100 + i).await;
            }
        }
        let expected = server_state(&api).await;
        eventually(
            &format!("{}: {fifo:?} FIFO caught up", server.name()),
            || {
                let cached = running.cached();
                cached.len() == expected.len()
                    && cached
                        .iter()
                        .all(|(k, v)| expected.get(k.name()) == Some(v))
            },
        )
        .await;
        running.stop().await.expect("stops");
    }
}
on_both_servers!(
    informer_ends_equal_to_the_server_with_either_fifo,
    Options::DEFAULT,
    fifo_kinds
);

/// A first list large enough to arrive in many reads (2,000 objects of about 5 KB) reaches the
/// cache and the handler, and the informer reports synced. (A real server may answer the first
/// list, `resourceVersion=0`, from a watch cache a few writes behind: the last objects created
/// then arrive as watch events, adds that are not initial.)
async fn large_first_list(server: &Server) {
    const OBJECTS: usize = 2_000;
    let api = server.widgets();
    let padding = "x".repeat(5_000);
    futures::future::join_all((0..8).map(|w| {
        let (api, padding) = (api.clone(), padding.clone());
        async move {
            for i in (w..OBJECTS).step_by(8) {
                let mut object = super::server::widget(&format!("w{i:04}"), &[], 1);
                object.metadata.annotations =
                    Some([("padding".to_owned(), padding.clone())].into());
                api.create(&kube::api::PostParams::default(), &object)
                    .await
                    .expect("create");
            }
        }
    }))
    .await;
    let informer = informer(api.clone(), fast());
    let adds = Arc::new([(); 2].map(|()| std::sync::atomic::AtomicUsize::new(0)));
    informer.add_handler(
        informer_core::HandlerFns::new().on_add({
            let adds = adds.clone();
            move |_: &Arc<DynamicObject>, initial: bool| {
                adds[usize::from(initial)].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }),
        None,
    );
    let count =
        |initial: bool| adds[usize::from(initial)].load(std::sync::atomic::Ordering::Relaxed);
    let running = Running::start(informer.clone());
    assert!(
        tokio::time::timeout(Duration::from_secs(60), informer.wait_for_sync())
            .await
            .unwrap_or(false),
        "{}: the informer syncs a first list of {OBJECTS} objects: {:?}",
        server.name(),
        informer.reflector_stats()
    );
    // The objects a real server's watch cache lagged behind arrive after the sync, as
    // watch events.
    eventually(
        &format!("{}: the cache holds {OBJECTS} objects", server.name()),
        || running.cached().len() == OBJECTS,
    )
    .await;
    eventually(
        &format!("{}: the handler saw {OBJECTS} adds", server.name()),
        || count(true) + count(false) == OBJECTS,
    )
    .await;
    assert!(
        count(true) >= OBJECTS * 9 / 10,
        "{}: the first list's objects are initial adds ({} of {OBJECTS})",
        server.name(),
        count(true)
    );
    running.stop().await.expect("stops");
}
on_both_servers!(
    informer_syncs_a_first_list_that_arrives_in_many_reads,
    Options::DEFAULT,
    large_first_list
);
