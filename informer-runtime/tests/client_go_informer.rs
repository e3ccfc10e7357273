//! Ports of client-go's own unit tests of `tools/cache` (v0.36: `reflector_test.go`,
//! `shared_informer_test.go`, `controller_test.go`) onto this library's API, to find where its
//! behaviour differs from client-go's.
//!
//! Each test is named after the Go test it ports (`<go file>_<go test in snake case>`) and
//! asserts the behaviour the Go test asserts, adapted to this API: Go's `ListWatch` with
//! `ListFunc`/`WatchFunc` is [`ListWatch`] (closures), Go's `watch.FakeWatcher` is
//! [`FakeWatcher`], a reflector's `Store` is [`RecordingStore`] (a `Fifo` that applies what it
//! is given to a map, as a plain client-go `Store` does), and client-go's
//! `FakeControllerSource` is `informer_testing::MemoryListerWatcher`. Fake clocks become
//! paused tokio time. Where this library documents a deliberate difference, the test asserts
//! the documented behaviour and says so; a difference that is not documented is left as an
//! ignored test (`differs: ...`) that asserts client-go's behaviour.
//!
//! Not ported (Go internals, or not expressible with this API): `TestReflectorResyncChan`,
//! `TestReflectorHandleWatch*` and `TestReflectorStopWatch` (the internal `handleWatch`; their
//! observable part is covered by `TestRunUntil`, `TestReflectorWatchStoppedBefore/After` and
//! `TestReflectorHandleWatchResultChanClosed*`), `TestGetTypeDescriptionFromObject`,
//! `TestGetExpectedGVKFromObject`, `TestReflectorListExtract` (Go GC of list items),
//! benchmarks, `TestResyncCheckPeriod` (the informer's internal check period; here each
//! handler keeps its own schedule), `TestSharedInformerStartRace` (transform and error
//! handler are set on the builder, before any run), `TestSharedInformerRemoveForeignHandler`
//! and `TestRemovingRemovedSharedInformer` (a registration removes itself and is consumed by
//! `remove`, so neither can be written), `TestProcessDeltasInBatch` (the transaction store),
//! `processor_listener_test.go` (the Go listener's ring buffer) and `listwatch_test.go` (URL
//! building of Go's REST client).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use futures::StreamExt;
use informer_core::lister_watcher::{ListParams, ListWatchError, Status, WatchEvent};
use informer_core::store::ThreadSafeStore;
use informer_core::store::index_fn;
use informer_core::{
    Deleted, Delta, Fifo, HandlerFns, Notification, ObjectKey, RealFifo, Store, resource_key,
};
use informer_runtime::informer::{HandlerOptions, SharedIndexInformer};
use informer_runtime::reflector::{
    BackoffConfig, CancellationToken, Reflector, ReflectorConfig, ReflectorError,
};
use informer_testing::MemoryListerWatcher;
use k8s_openapi::api::core::v1::Pod;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

mod client_go {
    pub mod fixtures;
}

use client_go::fixtures::*;

// =====================================================================================
// reflector_test.go
// =====================================================================================

// Go: TestCloseWatchChannelOnError
#[tokio::test(start_paused = true)]
async fn reflector_test_close_watch_channel_on_error() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("1", vec![]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw, store, config()));
    let fw = watchers.recv().await.unwrap();
    // Go sends an ERROR event carrying a Pod; here an error event carries a Status.
    fw.error(status(500, "InternalError", "boom"));
    eventually(PATIENCE, "the watch is stopped after its error", || {
        fw.is_stopped()
    })
    .await;
    running.stop().await;
}

// Go: TestRunUntil
#[tokio::test(start_paused = true)]
async fn reflector_test_run_until() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("1", vec![]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw, store.clone(), config()));
    let fw = watchers.recv().await.unwrap();
    fw.add(pod("bar", "2"));
    eventually(PATIENCE, "the reflector is in its watch", || {
        store.names().contains_key("bar")
    })
    .await;
    running.stop().await;
    assert!(
        fw.is_stopped(),
        "watch left open after stopping the reflector"
    );
}

// Go: TestReflectorWatchStoppedBefore
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_watch_stopped_before() {
    let lw = ListWatch::new(
        |_| panic!("ListFunc called unexpectedly"),
        |_, _| panic!("WatchFunc called unexpectedly"),
    );
    let store = Arc::new(RecordingStore::default());
    let r = reflector(lw.clone(), store, config());
    let cancel = CancellationToken::new();
    cancel.cancel();
    r.run(cancel).await;
    assert!(lw.list_calls().is_empty() && lw.watch_calls().is_empty());
}

// Go: TestReflectorWatchStoppedAfter
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_watch_stopped_after() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("1", vec![]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw.clone(), store, config()));
    let fw = watchers.recv().await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    running.stop().await;
    assert_eq!(lw.watch_calls().len(), 1);
    assert!(fw.is_stopped());
}

// Go: TestReflectorHandleWatchResultChanClosedBefore (and ...ClosedAfter): a watch that ends
// at once without any event is a "very short watch", an error that backs off (no relist).
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_handle_watch_result_chan_closed_before() {
    for closed_after in [Duration::ZERO, Duration::from_millis(10)] {
        let (lw, mut watchers) = list_then_fake_watches(pod_list("1", vec![]));
        let store = Arc::new(RecordingStore::default());
        let running = run_reflector(reflector(lw.clone(), store, config()));
        let fw = watchers.recv().await.unwrap();
        let ended = Instant::now() + closed_after;
        tokio::time::sleep(closed_after).await;
        fw.stop();
        let _second = watchers.recv().await.unwrap();
        assert!(
            Instant::now() - ended >= Duration::from_millis(800),
            "a very short watch backs off before watching again"
        );
        assert_eq!(lw.list_calls().len(), 1, "no relist");
        running.stop().await;
    }
}

// Go: TestReflectorWatchHandler. The Go test feeds bar@55 then baz@32 and expects both in the
// store with LastSyncResourceVersion 32. This library documents "never back in time": an
// event older than the cache (32 < 55) is refused and followed by a consistent relist. The
// documented behaviour is asserted.
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_watch_handler() {
    let lists = Arc::new(Mutex::new(vec![
        pod_list("1", vec![pod("foo", "1"), pod("bar", "1")]),
        pod_list("60", vec![pod("bar", "55"), pod("baz", "32")]),
    ]));
    let (tx, mut watchers) = mpsc::unbounded_channel();
    let lw = ListWatch::new(
        move |_| Ok(lists.lock().unwrap().remove(0)),
        move |_, _| {
            let (w, s) = fake_watcher();
            let _ = tx.send(w);
            Ok(s)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw.clone(), store.clone(), config()));
    let fw = watchers.recv().await.unwrap();
    fw.delete(pod("foo", "2"));
    fw.modify(pod("bar", "55"));
    fw.add(pod("baz", "32"));
    eventually(PATIENCE, "the store holds the second list", || {
        running.reflector.last_sync_resource_version().as_deref() == Some("60")
    })
    .await;
    let stats = running.reflector.stats();
    assert_eq!(stats.stale_refusals, 1, "baz@32 is older than bar@55");
    assert_eq!(
        lw.list_rvs(),
        ["0", ""],
        "refusal relists with a consistent read"
    );
    let expected: BTreeMap<String, String> = [("bar", "55"), ("baz", "32")]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    assert_eq!(store.names(), expected, "foo deleted, bar@55, baz@32");
    running.stop().await;
}

/// The watch events of `TestReflectorListAndWatch`, after the list or initial events.
fn send_foo_to_zoo(fw: &FakeWatcher) {
    fw.modify(pod("foo", "2"));
    for (name, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        fw.add(pod(name, rv));
    }
}

fn foo_to_zoo() -> BTreeMap<String, String> {
    [
        ("foo", "2"),
        ("bar", "3"),
        ("baz", "4"),
        ("qux", "5"),
        ("zoo", "6"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect()
}

// Go: TestReflectorListAndWatch ("UseWatchList enabled")
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_list_and_watch_watch_list_enabled() {
    let (tx, mut watchers) = mpsc::unbounded_channel();
    let lw = ListWatch::new(
        |_| {
            Err(ListWatchError::status(
                500,
                "InternalError",
                "no list expected",
            ))
        },
        move |_, _| {
            let (w, s) = fake_watcher();
            let _ = tx.send(w);
            Ok(s)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(
        lw.clone(),
        store.clone(),
        ReflectorConfig {
            streaming_list: true,
            ..config()
        },
    ));
    let fw = watchers.recv().await.unwrap();
    fw.add(pod("foo", "1"));
    fw.bookmark("1", true);
    send_foo_to_zoo(&fw);
    eventually(PATIENCE, "every event is in the store", || {
        store.names() == foo_to_zoo()
    })
    .await;
    assert!(lw.list_calls().is_empty(), "a streaming list never lists");
    let watches = lw.watch_calls();
    assert_eq!(watches.len(), 1);
    let (params, rv) = &watches[0];
    assert_eq!(rv, "");
    assert!(params.bookmarks && params.send_initial_events);
    running.stop().await;
}

// Go: TestReflectorListAndWatch ("UseWatchList disabled")
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_list_and_watch_watch_list_disabled() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("1", vec![pod("foo", "1")]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw.clone(), store.clone(), config()));
    let fw = watchers.recv().await.unwrap();
    send_foo_to_zoo(&fw);
    eventually(PATIENCE, "every event is in the store", || {
        store.names() == foo_to_zoo()
    })
    .await;
    let lists = lw.list_calls();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].resource_version.as_deref(), Some("0"));
    assert_eq!(lists[0].limit, Some(500));
    let watches = lw.watch_calls();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].1, "1");
    assert!(watches[0].0.bookmarks && !watches[0].0.send_initial_events);
    running.stop().await;
}

// Go: TestReflectorListAndWatchWithErrors
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_list_and_watch_with_errors() {
    enum Step {
        Events(PodList, Vec<(char, Pod)>),
        ListErr,
        WatchErr(PodList),
        Nothing(PodList),
    }
    let l = |rv: &str, pods: &[(&str, &str)]| {
        pod_list(rv, pods.iter().map(|(n, r)| pod(n, r)).collect())
    };
    let steps = vec![
        Step::Events(
            l("1", &[]),
            vec![('a', pod("foo", "2")), ('a', pod("bar", "3"))],
        ),
        Step::Events(
            l("3", &[("foo", "2"), ("bar", "3")]),
            vec![('d', pod("foo", "4")), ('a', pod("qux", "5"))],
        ),
        Step::ListErr,
        Step::WatchErr(l("5", &[("bar", "3"), ("qux", "5")])),
        Step::Events(
            l("5", &[("bar", "3"), ("qux", "5")]),
            vec![('a', pod("baz", "6"))],
        ),
        Step::Nothing(l("6", &[("bar", "3"), ("qux", "5"), ("baz", "6")])),
    ];
    let store = Arc::new(RecordingStore::default());
    for (line, step) in steps.into_iter().enumerate() {
        let (list, events, list_err, watch_err) = match step {
            Step::Events(list, events) => (Some(list), events, false, false),
            Step::ListErr => (None, vec![], true, false),
            Step::WatchErr(list) => (Some(list), vec![], false, true),
            Step::Nothing(list) => (Some(list), vec![], false, false),
        };
        if let Some(list) = &list {
            // The list is what the store holds now.
            let expected: BTreeMap<String, String> =
                list.items.iter().map(|p| (name_of(p), rv_of(p))).collect();
            assert_eq!(store.names(), expected, "line {line}");
        }
        let last_rv = events.last().map(|(_, p)| rv_of(p));
        let list_for_lw = list.clone();
        // Go's fake watchers stay open until stopped: keep their producer side.
        let open: Arc<Mutex<Vec<FakeWatcher>>> = Arc::default();
        let lw = ListWatch::new(
            move |_| match &list_for_lw {
                Some(list) => Ok(list.clone()),
                None => Err(ListWatchError::Transport("a list error".into())),
            },
            move |_, _| {
                if watch_err {
                    return Err(ListWatchError::Transport("a watch error".into()));
                }
                let (w, s) = fake_watcher();
                for (op, p) in &events {
                    match op {
                        'a' => w.add(p.clone()),
                        _ => w.delete(p.clone()),
                    }
                }
                open.lock().unwrap().push(w);
                Ok(s)
            },
        );
        let running = run_reflector(reflector(lw, store.clone(), config()));
        let r = running.reflector.clone();
        eventually(PATIENCE, "the step is done", || {
            let stats = r.stats();
            if list_err {
                stats.list_errors >= 1
            } else if watch_err {
                stats.watch_errors >= 1
            } else if let Some(rv) = &last_rv {
                r.last_sync_resource_version().as_ref() == Some(rv)
            } else {
                stats.watches >= 1
            }
        })
        .await;
        let r = running.stop().await;
        if list_err {
            let err = r.last_error().expect("the list error is reported");
            assert!(err.to_string().contains("a list error"), "{err}");
        }
        if watch_err {
            let err = r.last_error().expect("the watch error is reported");
            assert!(err.to_string().contains("a watch error"), "{err}");
        }
    }
}

/// Runs a reflector whose first `fails` watches are refused with a connection error, until
/// a watch is accepted; returns how long that took.
async fn time_to_watch_after(fails: usize, backoff: BackoffConfig) -> Duration {
    let left = Arc::new(AtomicUsize::new(fails));
    let (tx, mut accepted) = mpsc::unbounded_channel();
    let lw = ListWatch::new(
        |_| Ok(pod_list("1", vec![])),
        move |_, _| {
            if left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
            {
                return Err(conn_refused());
            }
            let (w, s) = fake_watcher();
            let _ = tx.send(w);
            Ok(s)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let start = Instant::now();
    let running = run_reflector(reflector(
        lw.clone(),
        store,
        ReflectorConfig {
            backoff,
            ..config()
        },
    ));
    let _w = accepted.recv().await.unwrap();
    let elapsed = start.elapsed();
    assert_eq!(lw.list_calls().len(), 1, "connection errors do not relist");
    running.stop().await;
    elapsed
}

// Go: TestReflectorListAndWatchInitConnBackoff (1 ms doubling to 50 ms; Go's fake clock steps
// give its bounds, here the delays are exact: jitter 0 and paused time).
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_list_and_watch_init_conn_backoff() {
    let backoff = BackoffConfig {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(50),
        factor: 2.0,
        jitter: 0.0,
        reset_after: Duration::from_millis(100),
    };
    // 1 + 2 + 4 + 8 + 16 ms: grows exponentially.
    let five = time_to_watch_after(5, backoff.clone()).await;
    assert!(
        five >= Duration::from_millis(31) && five <= Duration::from_millis(64),
        "{five:?}"
    );
    // 1 + 2 + ... + 32 + 34 * 50 ms: flattens at the maximum.
    let forty = time_to_watch_after(40, backoff).await;
    assert!(
        forty >= Duration::from_millis(1763) && forty <= Duration::from_millis(4000),
        "{forty:?}"
    );
}

// Go: TestBackoffOnTooManyRequests (a 429 answering the watch, then a 429 error event, then a
// watch that ends at once: each backs off; the list is not repeated).
#[tokio::test(start_paused = true)]
async fn reflector_test_backoff_on_too_many_requests() {
    let calls = Arc::new(AtomicUsize::new(0));
    let lw = ListWatch::new(|_| Ok(pod_list("1", vec![])), {
        let calls = calls.clone();
        move |_, _| {
            let (w, s) = fake_watcher();
            match calls.fetch_add(1, Ordering::AcqRel) {
                0 => {
                    return Err(ListWatchError::status(
                        429,
                        "TooManyRequests",
                        "too many requests",
                    ));
                }
                1 => {
                    w.error(status(429, "TooManyRequests", "too many requests"));
                    w.stop();
                }
                2 => w.stop(),
                _ => {}
            }
            Ok(s)
        }
    });
    let store = Arc::new(RecordingStore::default());
    let start = Instant::now();
    let running = run_reflector(reflector(lw.clone(), store, config()));
    eventually(PATIENCE, "the fourth watch", || lw.watch_calls().len() == 4).await;
    // Three backoffs of 0.8, 1.6 and 3.2 s (without jitter).
    assert!(start.elapsed() >= Duration::from_millis(800 + 1600 + 3200));
    assert_eq!(lw.list_calls().len(), 1);
    running.stop().await;
}

// Go: TestNoRelistOnTooManyRequests
#[tokio::test(start_paused = true)]
async fn reflector_test_no_relist_on_too_many_requests() {
    let calls = Arc::new(AtomicUsize::new(0));
    let lw = ListWatch::new(|_| Ok(pod_list("1", vec![])), {
        let calls = calls.clone();
        move |_, _| {
            if calls.fetch_add(1, Ordering::AcqRel) < 4 {
                return Err(ListWatchError::status(
                    429,
                    "TooManyRequests",
                    "too many requests",
                ));
            }
            let (_w, s) = fake_watcher();
            Ok(s)
        }
    });
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw.clone(), store, config()));
    eventually(PATIENCE, "the fifth watch", || lw.watch_calls().len() == 5).await;
    assert_eq!(lw.list_calls().len(), 1);
    running.stop().await;
}

/// `TestRetryInternalError`: every watch delivers a `500 InternalError`; the watch calls made
/// before the reflector relists, minus one (Go's "retries"). Each retry waits 1 s (Go steps
/// its fake clock by a second per watch); the watch numbered `rewind` delivers its error a
/// minute late (Go steps its clock by a minute).
async fn internal_error_retries(window: Duration, rewind: usize) -> usize {
    let calls = Arc::new(AtomicUsize::new(0));
    let at_relist = Arc::new(AtomicUsize::new(usize::MAX));
    let lists = AtomicUsize::new(0);
    let lw = ListWatch::new(
        {
            let (calls, at_relist) = (calls.clone(), at_relist.clone());
            move |_| {
                if lists.fetch_add(1, Ordering::AcqRel) == 1 {
                    at_relist.store(calls.load(Ordering::Acquire), Ordering::Release);
                }
                Ok(pod_list("1", vec![]))
            }
        },
        {
            let calls = calls.clone();
            move |_, _| {
                let n = calls.fetch_add(1, Ordering::AcqRel) + 1;
                let error = status(500, "InternalError", "etcdserver: no leader");
                let delay = if n == rewind {
                    Duration::from_secs(61)
                } else {
                    Duration::ZERO
                };
                Ok(futures::stream::once(async move {
                    tokio::time::sleep(delay).await;
                    Ok(WatchEvent::Error(error))
                })
                .chain(futures::stream::pending())
                .boxed())
            }
        },
    );
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(
        lw.clone(),
        store,
        ReflectorConfig {
            max_internal_error_retry_duration: window,
            backoff: BackoffConfig {
                initial: Duration::from_secs(1),
                max: Duration::from_secs(1),
                factor: 1.0,
                jitter: 0.0,
                reset_after: Duration::from_secs(3600),
            },
            ..config()
        },
    ));
    eventually(Duration::from_secs(3600), "the reflector relists", || {
        lw.list_calls().len() == 2
    })
    .await;
    let watches_before_relist = at_relist.load(Ordering::Acquire);
    running.stop().await;
    watches_before_relist - 1
}

// Go: TestRetryInternalError
#[tokio::test(start_paused = true)]
async fn reflector_test_retry_internal_error() {
    assert_eq!(
        internal_error_retries(Duration::ZERO, 0).await,
        0,
        "retries off"
    );
    assert_eq!(
        internal_error_retries(Duration::from_secs(30), 0).await,
        31,
        "retries on, all calls fail"
    );
    assert_eq!(
        internal_error_retries(Duration::from_secs(30), 10).await,
        40,
        "retries on, one call successful"
    );
}

// Go: TestReflectorResync. client-go resyncs the store every period; when `Resync` fails, the
// list-and-watch cycle ends (the Go test sees exactly 2 resyncs, and `Run` relists after its
// backoff).
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_resync() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("0", vec![]));
    let store = Arc::new(RecordingStore {
        fail_resync_at: Some(2),
        ..RecordingStore::default()
    });
    let running = run_reflector(reflector(
        lw.clone(),
        store.clone(),
        ReflectorConfig {
            resync_period: Some(Duration::from_secs(1)),
            ..config()
        },
    ));
    let _w = watchers.recv().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(store.resyncs.load(Ordering::Acquire), 2);
    // The relist waits for the reflector's backoff.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        lw.list_calls().len(),
        2,
        "the failed resync ended the cycle"
    );
    running.stop().await;
}

// Go: TestReflectorResync, the part that holds in both: resyncs every period while watching,
// without contacting the server.
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_resync_every_period() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("0", vec![]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(
        lw.clone(),
        store.clone(),
        ReflectorConfig {
            resync_period: Some(Duration::from_secs(1)),
            ..config()
        },
    ));
    let _w = watchers.recv().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(store.resyncs.load(Ordering::Acquire), 2);
    assert_eq!(lw.list_calls().len(), 1);
    assert_eq!(lw.watch_calls().len(), 1);
    running.stop().await;
}

/// Pages of the ten pods `pod-0..pod-9` at rv 10, by continue token (Go's C1, C2).
fn ten_pods_in_pages(params: &ListParams) -> PodList {
    let pods = numbered_pods(10);
    match params.continue_token.as_deref() {
        None => pod_page("10", Some("C1"), pods[0..4].to_vec()),
        Some("C1") => pod_page("10", Some("C2"), pods[4..8].to_vec()),
        Some("C2") => pod_page("10", None, pods[8..10].to_vec()),
        Some(other) => panic!("unrecognized continue: {other}"),
    }
}

/// Runs one list-and-watch cycle: until the reflector watches, then stops it.
async fn one_cycle(r: Arc<Reflector<Pod>>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (r, cancel) = (r.clone(), cancel.clone());
        async move { r.run(cancel).await }
    });
    let watches = r.stats().watches;
    eventually(PATIENCE, "the reflector watches", || {
        r.stats().watches > watches
    })
    .await;
    cancel.cancel();
    task.await.unwrap();
}

// Go: TestReflectorWatchListPageSize (Go sets the last synced rv to 10 first; here the second
// cycle lists at the rv the first one reached)
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_watch_list_page_size() {
    let lw = ListWatch::new(
        |p| {
            assert_eq!(p.limit, Some(4), "expected a list limit of 4");
            Ok(ten_pods_in_pages(p))
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let config = ReflectorConfig {
        list_params: ListParams::default().limit(4),
        ..config()
    };
    let r = Arc::new(reflector(lw.clone(), store.clone(), config));
    one_cycle(r.clone()).await;
    assert_eq!(store.names().len(), 10);
    one_cycle(r).await;
    assert_eq!(store.names().len(), 10);
    assert_eq!(lw.list_rvs(), ["0", "", "", "10", "", ""]);
}

// Go: TestReflectorNotPaginatingNotConsistentReads
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_not_paginating_not_consistent_reads() {
    let lw = ListWatch::new(
        |_| Ok(pod_list("10", numbered_pods(10))),
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(reflector(lw.clone(), store.clone(), config()));
    one_cycle(r.clone()).await;
    one_cycle(r).await;
    let relist = &lw.list_calls()[1];
    assert_eq!(relist.resource_version.as_deref(), Some("10"));
    assert_eq!(
        relist.limit, None,
        "a relist at a resource version is not paginated"
    );
    assert_eq!(store.names().len(), 10);
}

// Go: TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let lw = ListWatch::new(
        |p| {
            assert_eq!(p.limit, Some(500), "expected the default pager limit");
            Ok(ten_pods_in_pages(p))
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(reflector(lw.clone(), store.clone(), config()));
    one_cycle(r.clone()).await;
    assert_eq!(store.names().len(), 10);
    one_cycle(r).await;
    assert_eq!(store.names().len(), 10);
    assert_eq!(lw.list_rvs(), ["0", "", "", "10", "", ""]);
}

/// Go's list function for the resource-version tests: eight pods `pod-0..pod-7`, answers by
/// requested resource version.
fn eight_pods(rv: &str, n: usize) -> PodList {
    pod_list(rv, numbered_pods(8)[..n].to_vec())
}

// Go: TestReflectorResyncWithResourceVersion
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_resync_with_resource_version() {
    let lw = ListWatch::new(
        |p| match p.resource_version.as_deref().unwrap_or("") {
            "0" => Ok(eight_pods("10", 4)),
            "10" => Ok(eight_pods("11", 8)),
            other => panic!("unrecognized resource version {other:?}"),
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(reflector(lw.clone(), store.clone(), config()));
    one_cycle(r.clone()).await;
    assert_eq!(store.names().len(), 4);
    one_cycle(r).await;
    assert_eq!(store.names().len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10"]);
}

// Go: TestReflectorExpiredExactResourceVersion
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_expired_exact_resource_version() {
    let lw = ListWatch::new(
        |p| match p.resource_version.as_deref().unwrap_or("") {
            "0" => Ok(eight_pods("10", 4)),
            "10" => Err(expired()),
            "" => Ok(eight_pods("11", 8)),
            other => panic!("unrecognized resource version {other:?}"),
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(reflector(lw.clone(), store.clone(), config()));
    one_cycle(r.clone()).await;
    assert_eq!(store.names().len(), 4);
    one_cycle(r).await;
    assert_eq!(store.names().len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10", ""]);
}

// Go: TestReflectorFullListIfExpired
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_full_list_if_expired() {
    let lw = ListWatch::new(
        |p| {
            let rv = p.resource_version.as_deref().unwrap_or("");
            let cont = p.continue_token.as_deref().unwrap_or("");
            match (rv, cont, p.limit.unwrap_or(0)) {
                ("0", "", 4) => Ok(eight_pods("10", 4)),
                ("10", "", 4) => Ok(pod_page("11", Some("C1"), numbered_pods(4))),
                ("", "C1", 4) => Err(expired()),
                ("10", "", 0) => Ok(eight_pods("11", 8)),
                other => panic!("unexpected list options: {other:?}"),
            }
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let config = ReflectorConfig {
        list_params: ListParams::default().limit(4),
        ..config()
    };
    let r = Arc::new(reflector(lw.clone(), store.clone(), config));
    one_cycle(r.clone()).await;
    assert_eq!(store.names().len(), 4);
    one_cycle(r).await;
    assert_eq!(store.names().len(), 8);
    assert_eq!(lw.list_rvs(), ["0", "10", "", "10"]);
}

fn too_large_with_cause(cause: serde_json::Value) -> ListWatchError {
    let status: Status = serde_json::from_value(serde_json::json!({
        "status": "Failure", "code": 504, "reason": "Timeout",
        "message": "Timeout: too large resource version",
        "details": {"causes": [cause]},
    }))
    .unwrap();
    ListWatchError::Api(Box::new(status))
}

// Go: TestReflectorFullListIfTooLarge
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_full_list_if_too_large() {
    let version = Arc::new(AtomicUsize::new(30));
    let lw = ListWatch::new(
        move |p| match p.resource_version.as_deref().unwrap_or("") {
            "0" => Ok(pod_list("20", vec![])),
            "20" => Err(too_large_with_cause(
                serde_json::json!({"reason": "ResourceVersionTooLarge"}),
            )),
            "30" => Err(too_large_with_cause(
                serde_json::json!({"message": "Too large resource version"}),
            )),
            "40" => Err(ListWatchError::status(
                504,
                "Timeout",
                "Too large resource version",
            )),
            "" => {
                let rv = version.fetch_add(10, Ordering::AcqRel);
                Ok(pod_list(&rv.to_string(), vec![]))
            }
            other => panic!("unexpected list call {other:?}"),
        },
        |_, _| Ok(fake_watcher().1),
    );
    let store = Arc::new(RecordingStore::default());
    let r = Arc::new(reflector(lw.clone(), store, config()));
    for _ in 0..4 {
        one_cycle(r.clone()).await;
    }
    assert_eq!(lw.list_rvs(), ["0", "20", "", "30", "", "40", ""]);
}

// Go: TestWatchTimeout. client-go asks for a watch timeout in [min, 2*min] with min =
// max(MinWatchTimeout, 5 min). Here the range is the configured `watch_timeout` (default
// 5 to 10 minutes), used as configured: a range below 5 minutes is honoured (documented on
// `ReflectorConfig::watch_timeout`), where client-go raises it.
#[tokio::test(start_paused = true)]
async fn reflector_test_watch_timeout() {
    let cases = [
        ("no timeout", None, (300, 600)),
        ("small timeout honoured", Some((1, 2)), (1, 2)),
        ("30m timeout", Some((1800, 3600)), (1800, 3600)),
    ];
    for (name, range, (lo, hi)) in cases {
        let lw = ListWatch::new(|_| Ok(pod_list("10", vec![])), |_, _| Ok(fake_watcher().1));
        let mut config = config();
        if let Some((a, b)) = range {
            config.watch_timeout = (Duration::from_secs(a), Duration::from_secs(b));
        }
        let r = Arc::new(reflector(
            lw.clone(),
            Arc::new(RecordingStore::default()),
            config,
        ));
        one_cycle(r).await;
        let got = lw.watch_calls()[0].0.timeout.expect("a watch timeout");
        assert!(
            (lo..=hi).contains(&got),
            "{name}: timeout {got} not in [{lo}, {hi}]"
        );
    }
}

// Go: TestReflectorResourceVersionUpdate (the store is told the resource version of every
// event and bookmark; Go's pods have no name, which this library skips, so they get one)
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_resource_version_update() {
    let (lw, mut watchers) = list_then_fake_watches(pod_list("10", vec![]));
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw, store.clone(), config()));
    let fw = watchers.recv().await.unwrap();
    fw.add(pod("p", "10"));
    fw.modify(pod("p", "20"));
    fw.bookmark("30", false);
    fw.delete(pod("p", "40"));
    eventually(PATIENCE, "every event is pushed", || {
        running.reflector.last_sync_resource_version().as_deref() == Some("40")
    })
    .await;
    // The first "10" is the list's.
    assert_eq!(*store.rvs.lock().unwrap(), ["10", "10", "20", "30", "40"]);
    running.stop().await;
}

// Go: TestReflectorReplacesStoreOnUnsafeDelete
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_replaces_store_on_unsafe_delete() {
    let pods = || vec![pod("foo-1", "1"), pod("foo-2", "2"), pod("foo-3", "3")];
    let lists = Arc::new(Mutex::new(vec![
        pod_list("3", pods()),
        pod_list("5", pods()),
    ]));
    let sent = Arc::new(AtomicBool::new(false));
    let lw = ListWatch::new(
        move |_| Ok(lists.lock().unwrap().remove(0)),
        move |_, _| {
            let (w, s) = fake_watcher();
            if !sent.swap(true, Ordering::AcqRel) {
                w.add(pod("foo", "4"));
                // The object became corrupt and was unsafe-deleted: the watch says so.
                w.error(status(
                    500,
                    "StorageReadError",
                    "failed to prepare current and previous objects: corrupt object has been deleted",
                ));
            }
            Ok(s)
        },
    );
    let store = Arc::new(RecordingStore::default());
    let running = run_reflector(reflector(lw, store.clone(), config()));
    eventually(PATIENCE, "the reflector relisted at 5", || {
        running.reflector.last_sync_resource_version().as_deref() == Some("5")
    })
    .await;
    let log = store.log();
    let replaces: Vec<&String> = log.iter().filter(|l| l.starts_with("replace")).collect();
    assert_eq!(replaces.len(), 2, "{log:?}");
    assert_eq!(
        store.names().keys().cloned().collect::<Vec<_>>(),
        ["foo-1", "foo-2", "foo-3"],
        "the corrupt object was removed by the relist"
    );
    running.stop().await;
}

// Go: TestReflectorRespectStoreTransformer (streaming list: the objects reach the store's
// Replace already transformed, in one Replace)
#[tokio::test(start_paused = true)]
async fn reflector_test_reflector_respect_store_transformer() {
    let (tx, mut watchers) = mpsc::unbounded_channel();
    let lw = ListWatch::new(
        |_| {
            Err(ListWatchError::status(
                500,
                "InternalError",
                "list call not expected",
            ))
        },
        move |_, _| {
            let (w, s) = fake_watcher();
            let _ = tx.send(w);
            Ok(s)
        },
    );
    let mk = |name: &str, rv: &str| {
        let mut p = pod(name, rv);
        p.spec = Some(Default::default());
        p.spec.as_mut().unwrap().hostname = Some("test".into());
        p
    };
    let replaced = Arc::new(Mutex::new(Vec::<String>::new()));
    let store = Arc::new(RecordingStore::default());
    let r = reflector(
        lw,
        store.clone(),
        ReflectorConfig {
            streaming_list: true,
            ..config()
        },
    )
    .with_transform(Arc::new(|mut p: Pod| {
        p.spec.get_or_insert_with(Default::default).hostname = Some("transformed".into());
        p
    }));
    let running = run_reflector(r);
    let fw = watchers.recv().await.unwrap();
    fw.add(mk("foo-1", "1"));
    fw.add(mk("foo-2", "2"));
    fw.bookmark("3", true);
    fw.add(mk("foo-3", "3"));
    eventually(PATIENCE, "foo-3 is in the store", || {
        store.names().contains_key("foo-3")
    })
    .await;
    replaced.lock().unwrap().extend(store.log());
    let log = replaced.lock().unwrap().clone();
    assert_eq!(log[0], "replace [\"foo-1\", \"foo-2\"] 3", "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("replace")).count(), 1);
    for p in store.items.lock().unwrap().values() {
        let hostname = p.spec.as_ref().and_then(|s| s.hostname.as_deref());
        assert_eq!(hostname, Some("transformed"), "{}", name_of(p));
    }
    assert_eq!(
        running.reflector.last_sync_resource_version().as_deref(),
        Some("3")
    );
    running.stop().await;
}

// =====================================================================================
// shared_informer_test.go
// =====================================================================================

/// Go's `testListener`: the names of the objects it was given on add and update.
#[derive(Clone, Default)]
struct TestListener {
    received: Arc<Mutex<Vec<String>>>,
}

impl TestListener {
    fn handler(&self) -> impl Fn(&Notification<Pod>) + Send + Sync + 'static {
        let received = self.received.clone();
        move |n: &Notification<Pod>| match n {
            Notification::Add { object, .. } => received.lock().unwrap().push(name_of(object)),
            Notification::Update { new, .. } => received.lock().unwrap().push(name_of(new)),
            Notification::Delete(_) => {}
        }
    }

    fn names(&self) -> BTreeSet<String> {
        self.received.lock().unwrap().iter().cloned().collect()
    }

    fn len(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    fn clear(&self) {
        self.received.lock().unwrap().clear();
    }

    /// Go's `ok`: the names received become exactly `expected` (as a set) within 2 s, and stay
    /// so a little longer (Go waits a second of real time; here a few milliseconds, since
    /// tokio time also drives resyncs).
    async fn ok(&self, expected: &[&str]) -> bool {
        let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.names() != expected {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.names() == expected
    }
}

fn source_with(names: &[&str]) -> MemoryListerWatcher<Pod> {
    let source = MemoryListerWatcher::<Pod>::new();
    for name in names {
        source.create(pod(name, ""));
    }
    source
}

struct RunningInformer {
    cancel: CancellationToken,
    task: JoinHandle<Result<(), informer_runtime::informer::InformerError>>,
}

fn start(informer: &SharedIndexInformer<Pod>) -> RunningInformer {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    RunningInformer { cancel, task }
}

impl RunningInformer {
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap().unwrap();
    }
}

// Go: TestIndexer
#[tokio::test(start_paused = true)]
async fn shared_informer_test_indexer() {
    let labelled = |name: &str, labels: &[(&str, &str)]| {
        let mut p = pod(name, "");
        p.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        p
    };
    let source = MemoryListerWatcher::<Pod>::new();
    source.create(labelled("pod1", &[("a", "a-val"), ("b", "b-val1")]));
    source.create(labelled("pod2", &[("b", "b-val2")]));
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let label_keys = || {
        index_fn(|p: &Pod| {
            p.metadata
                .labels
                .iter()
                .flat_map(|l| l.keys().cloned())
                .collect()
        })
    };
    informer
        .add_indexers([("labels".to_owned(), label_keys())].into())
        .unwrap();
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let names = |index: &str| -> BTreeSet<String> {
        informer
            .indexer()
            .by_index(index, "a")
            .unwrap()
            .iter()
            .map(|p| name_of(p))
            .collect()
    };
    assert_eq!(names("labels"), BTreeSet::from(["pod1".to_owned()]));
    source.create(labelled("pod3", &[("a", "a-val2")]));
    eventually(PATIENCE, "pod3 is indexed", || names("labels").len() == 2).await;
    informer
        .add_indexers([("labels-again".to_owned(), label_keys())].into())
        .unwrap();
    assert_eq!(
        names("labels-again"),
        BTreeSet::from(["pod1".to_owned(), "pod3".to_owned()]),
        "an index added later is available at once"
    );
    for index in ["labels", "labels-again"] {
        let values: BTreeSet<String> = informer
            .indexer()
            .list_index_values(index)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(values, BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    }
    running.stop().await;
}

// Go: TestListenerResyncPeriods
#[tokio::test(start_paused = true)]
async fn shared_informer_test_listener_resync_periods() {
    let source = source_with(&["pod1", "pod2"]);
    let informer = SharedIndexInformer::new(Arc::new(source));
    let start_time = Instant::now();
    let listener1 = TestListener::default();
    informer.add_handler(listener1.handler(), None);
    let listener2 = TestListener::default();
    informer.add_handler(listener2.handler(), Some(Duration::from_secs(2)));
    let listener3 = TestListener::default();
    informer.add_handler(listener3.handler(), Some(Duration::from_secs(3)));
    let running = start(&informer);
    for l in [&listener1, &listener2, &listener3] {
        assert!(l.ok(&["pod1", "pod2"]).await, "initial list");
        l.clear();
    }
    tokio::time::sleep_until(start_time + Duration::from_secs(2)).await;
    assert!(listener2.ok(&["pod1", "pod2"]).await, "listener2 resynced");
    assert_eq!(listener1.len(), 0, "listener1 should not have resynced");
    assert_eq!(listener3.len(), 0, "listener3 should not have resynced");
    for l in [&listener1, &listener2, &listener3] {
        l.clear();
    }
    tokio::time::sleep_until(start_time + Duration::from_secs(3)).await;
    assert!(listener3.ok(&["pod1", "pod2"]).await, "listener3 resynced");
    assert_eq!(listener1.len(), 0, "listener1 should not have resynced");
    assert_eq!(listener2.len(), 0, "listener2 should not have resynced");
    running.stop().await;
}

// Go: TestSharedInformerInitializationRace
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_informer_test_shared_informer_initialization_race() {
    let informer = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<Pod>::new()));
    let listener = TestListener::default();
    let add = tokio::spawn({
        let (informer, handler) = (informer.clone(), listener.handler());
        async move {
            informer.add_handler(handler, None);
        }
    });
    let running = start(&informer);
    running.stop().await;
    add.await.unwrap();
}

// Go: TestSharedInformerWatchDisruption (the watch is cut while pod3 is added and pod2
// changed; a handler with a resync period also gets its resync of pod1)
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shared_informer_watch_disruption() {
    let source = source_with(&["pod1", "pod2"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let no_resync = TestListener::default();
    informer.add_handler(no_resync.handler(), None);
    let resync = TestListener::default();
    informer.add_handler(resync.handler(), Some(Duration::from_secs(1)));
    let running = start(&informer);
    for l in [&no_resync, &resync] {
        assert!(l.ok(&["pod1", "pod2"]).await);
    }
    no_resync.clear();
    resync.clear();
    // Simulate a connection loss, with changes the closed watch never delivered.
    source.close_watches();
    source.create(pod("pod3", ""));
    source.update(pod("pod2", ""));
    assert!(
        no_resync.ok(&["pod2", "pod3"]).await,
        "{:?}",
        no_resync.names()
    );
    assert!(
        resync.ok(&["pod1", "pod2", "pod3"]).await,
        "{:?}",
        resync.names()
    );
    running.stop().await;
}

// Go: TestSharedInformerErrorHandling
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shared_informer_error_handling() {
    let source = source_with(&["pod1"]);
    source.fail_next_list(ListWatchError::status(403, "Forbidden", "Access Denied"));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let informer = SharedIndexInformer::builder(Arc::new(source))
        .watch_error_handler({
            let errors = errors.clone();
            move |err: &ReflectorError| errors.lock().unwrap().push(err.to_string())
        })
        .build();
    let running = start(&informer);
    eventually(
        Duration::from_secs(1),
        "the error handler is called",
        || !errors.lock().unwrap().is_empty(),
    )
    .await;
    let first = errors.lock().unwrap()[0].clone();
    assert!(first.contains("Access Denied"), "{first}");
    running.stop().await;
}

// Go: TestSharedInformerTransformer (the transform upper-cases names; the library documents
// that a transform must keep names, the Go test renames)
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shared_informer_transformer() {
    let source = source_with(&["pod1", "pod2"]);
    let informer = SharedIndexInformer::builder(Arc::new(source))
        .transform(|mut p: Pod| {
            p.metadata.name = p.metadata.name.map(|n| n.to_uppercase());
            p
        })
        .build();
    let listener = TestListener::default();
    informer.add_handler(listener.handler(), None);
    let running = start(&informer);
    assert!(
        listener.ok(&["POD1", "POD2"]).await,
        "{:?}",
        listener.names()
    );
    running.stop().await;
}

// Go: TestSharedInformerRemoveHandler
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shared_informer_remove_handler() {
    let informer = SharedIndexInformer::new(Arc::new(source_with(&["pod1"])));
    let handle1 = informer.add_handler(HandlerFns::<Pod>::new(), None);
    let handle2 = informer.add_handler(HandlerFns::<Pod>::new(), None);
    assert_eq!(informer.handler_count(), 2);
    handle2.remove().await;
    assert_eq!(informer.handler_count(), 1);
    handle1.remove().await;
    assert_eq!(informer.handler_count(), 0);
}

// Go: TestSharedInformerMultipleRegistration
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shared_informer_multiple_registration() {
    let informer = SharedIndexInformer::new(Arc::new(source_with(&["pod1"])));
    let listener = TestListener::default();
    let handler = Arc::new(listener.handler());
    let reg1 = informer.add_handler(handler.clone(), None);
    let reg2 = informer.add_handler(handler, None);
    assert_eq!(informer.handler_count(), 2);
    let running = start(&informer);
    assert!(reg2.wait_synced().await);
    assert!(reg1.has_synced());
    assert_eq!(listener.len(), 2, "each registration delivers");
    reg1.remove().await;
    assert_eq!(informer.handler_count(), 1, "the other registration stays");
    assert!(reg2.has_synced());
    reg2.remove().await;
    assert_eq!(informer.handler_count(), 0);
    running.stop().await;
}

// Go: TestSharedInformerHandlerAbuse (handlers added and removed from many tasks while events
// flow; scaled down)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_informer_test_shared_informer_handler_abuse() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    let done = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for seed in 1..=20u64 {
        let (informer, done) = (informer.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let mut handles = Vec::new();
            while !done.load(Ordering::Acquire) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if rng.is_multiple_of(2) || handles.is_empty() {
                    let funcs = HandlerFns::<Pod>::new()
                        .on_add(|_, _| {})
                        .on_update(|_, _| {})
                        .on_delete(|_| {});
                    handles.push(informer.add_handler(funcs, Some(Duration::from_secs(1))));
                } else {
                    let idx = (rng as usize / 2) % handles.len();
                    handles.swap_remove(idx).remove().await;
                }
                tokio::task::yield_now().await;
            }
            for h in handles {
                h.remove().await;
            }
        }));
    }
    let mut objs: Vec<String> = Vec::new();
    let mut rng = 42u64;
    for i in 0..2000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if objs.is_empty() || rng.is_multiple_of(3) {
            let name = format!("pod{i}");
            source.create(pod(&name, ""));
            objs.push(name);
        } else if rng % 3 == 1 {
            let name = &objs[(rng as usize / 3) % objs.len()];
            source.update(pod(name, ""));
        } else {
            let name = objs.swap_remove((rng as usize / 3) % objs.len());
            source.delete(&key(&name));
        }
        if i % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    running.stop().await;
    done.store(true, Ordering::Release);
    for w in workers {
        tokio::time::timeout(Duration::from_secs(10), w)
            .await
            .expect("workers finish once the informer stopped")
            .unwrap();
    }
}

// Go: TestStateSharedInformer
#[tokio::test(start_paused = true)]
async fn shared_informer_test_state_shared_informer() {
    let informer = SharedIndexInformer::new(Arc::new(source_with(&["pod1"])));
    let listener = TestListener::default();
    informer.add_handler(listener.handler(), None);
    assert!(!informer.is_running(), "started after creation");
    assert!(!informer.is_stopped(), "stopped after creation");
    let running = start(&informer);
    assert!(listener.ok(&["pod1"]).await);
    assert!(informer.is_running());
    assert!(!informer.is_stopped());
    running.stop().await;
    assert!(informer.is_stopped());
    assert!(!informer.is_running());
}

// Go: TestAddOnStoppedSharedInformer. client-go refuses the handler with an error; this
// library documents that a handler added after the informer stopped "is registered but never
// called, and never synced" (`add_handler_with`). The documented behaviour is asserted.
#[tokio::test(start_paused = true)]
async fn shared_informer_test_add_on_stopped_shared_informer() {
    let informer = SharedIndexInformer::new(Arc::new(source_with(&["pod1"])));
    let running = start(&informer);
    running.stop().await;
    assert!(informer.is_stopped());
    let listener = TestListener::default();
    let reg = informer.add_handler(listener.handler(), None);
    assert!(!reg.wait_synced().await);
    assert!(!reg.has_synced());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(listener.len(), 0);
}

// Go: TestRemoveOnStoppedSharedInformer
#[tokio::test(start_paused = true)]
async fn shared_informer_test_remove_on_stopped_shared_informer() {
    let informer = SharedIndexInformer::new(Arc::new(source_with(&["pod1"])));
    let reg = informer.add_handler(TestListener::default().handler(), None);
    let running = start(&informer);
    running.stop().await;
    assert!(informer.is_stopped());
    tokio::time::timeout(Duration::from_secs(5), reg.remove())
        .await
        .expect("remove on a stopped informer returns");
}

// Go: TestRemoveWhileActive
#[tokio::test(start_paused = true)]
async fn shared_informer_test_remove_while_active() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let listener = TestListener::default();
    let handle = informer.add_handler(listener.handler(), None);
    let running = start(&informer);
    source.create(pod("pod1", ""));
    assert!(listener.ok(&["pod1"]).await, "event did not occur");
    handle.remove().await;
    assert_eq!(informer.handler_count(), 0);
    source.create(pod("pod2", ""));
    assert!(listener.ok(&["pod1"]).await, "unexpected event occurred");
    running.stop().await;
}

/// A gate a handler blocks on (on its own thread) until the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn open(&self) {
        *self.0.0.lock().unwrap() = true;
        self.0.1.notify_all();
    }

    fn wait(&self) {
        let (lock, cvar) = &*self.0;
        let guard = lock.lock().unwrap();
        let (guard, _) = cvar
            .wait_timeout_while(guard, Duration::from_secs(20), |open| !*open)
            .unwrap();
        assert!(*guard, "gate never opened");
    }
}

// Go: TestAddWhileActive
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn shared_informer_test_add_while_active() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let listener1 = TestListener::default();
    let handle1 = informer.add_handler(listener1.handler(), None);
    assert!(!handle1.has_synced(), "synced before run");
    let running = start(&informer);
    source.create(pod("pod1", ""));
    assert!(
        listener1.ok(&["pod1"]).await,
        "events on listener1 did not occur"
    );
    assert!(handle1.has_synced(), "not synced after run");

    let listener2 = TestListener::default();
    let gate = Gate::default();
    let handler2 = {
        let (inner, gate) = (listener2.handler(), gate.clone());
        move |n: &Notification<Pod>| {
            gate.wait();
            inner(n)
        }
    };
    let handle2 = informer.add_handler(handler2, None);
    assert!(!handle2.has_synced(), "synced before processing anything");
    gate.open();
    source.create(pod("pod2", ""));
    assert!(
        listener2.ok(&["pod1", "pod2"]).await,
        "event on listener2 did not occur"
    );
    assert!(handle2.has_synced(), "not synced even after processing");
    assert_eq!(informer.handler_count(), 2);
    assert!(listener1.ok(&["pod1", "pod2"]).await, "events on listener1");
    running.stop().await;
}

// Go: TestShutdown ("no-context" and "no-context-later": a handler added before or after the
// sync is removed; everything ends)
#[tokio::test(start_paused = true)]
async fn shared_informer_test_shutdown() {
    let informer = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<Pod>::new()));
    let early = informer.add_handler(HandlerFns::<Pod>::new().on_add(|_, _| {}), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let later = informer.add_handler(HandlerFns::<Pod>::new().on_add(|_, _| {}), None);
    later.remove().await;
    early.remove().await;
    running.stop().await;
    assert!(informer.is_stopped());
}

// =====================================================================================
// controller_test.go
// =====================================================================================

// Go: Example (controller_test.go's package example, run by `go test` for its output: a
// `Config` whose queue is a `RealFIFO` with the downstream store as known objects, a full
// resync every 100 ms, and a `Process` that caches and deletes from the source everything
// that comes in, and reports every deletion). Here the `Config` is a reflector into a
// `RealFifo` and a task popping from it. The relist comes as one `ReplacedAll` (documented,
// `RealFifo`): the consumer caches its objects and deletes the cached objects it lacks, as
// Go's per-object `Replaced` items and tombstones do.
#[tokio::test(start_paused = true)]
async fn controller_test_example() {
    let source = MemoryListerWatcher::<Pod>::new();
    let downstream: Arc<ThreadSafeStore<Pod>> = Arc::new(ThreadSafeStore::new());
    let known: Arc<dyn Store<Pod>> = downstream.clone();
    let fifo = Arc::new(RealFifo::<Pod>::new(Some(known)));
    let mut cfg = config();
    cfg.resync_period = Some(Duration::from_millis(100));
    let running = run_reflector(Reflector::new(Arc::new(source.clone()), fifo.clone(), cfg));
    let (tx, mut deletions) = mpsc::unbounded_channel::<String>();
    let consumer = tokio::spawn({
        let (fifo, downstream, source) = (fifo.clone(), downstream.clone(), source.clone());
        async move {
            let keep = |obj: Arc<Pod>| {
                downstream.add(obj.clone()).unwrap();
                source.delete(&resource_key(&*obj).unwrap());
            };
            let remove = |key: ObjectKey| {
                downstream.delete(&key);
                tx.send(key.to_string()).unwrap();
            };
            let mut process = |batch: Vec<Delta<Pod>>| {
                for delta in batch {
                    match delta {
                        Delta::Added(o)
                        | Delta::Updated(o)
                        | Delta::Sync(o)
                        | Delta::Replaced(o) => keep(o),
                        Delta::Deleted(Deleted::Object(o)) => remove(resource_key(&*o).unwrap()),
                        Delta::Deleted(Deleted::FinalStateUnknown { key, .. }) => remove(key),
                        Delta::ReplacedAll { objects, .. } => {
                            let listed: BTreeSet<ObjectKey> = objects
                                .iter()
                                .map(|o| resource_key(&**o).unwrap())
                                .collect();
                            for key in downstream.list_keys() {
                                if !listed.contains(&key) {
                                    remove(key);
                                }
                            }
                            objects.into_iter().for_each(keep);
                        }
                        // A list the reflector hands over in parts (documented,
                        // `Fifo::list_part`): cache each part, then delete what the whole
                        // list lacks.
                        Delta::ListPart(objects) => objects.into_iter().for_each(keep),
                        Delta::ListEnd { listed, .. } => {
                            for key in downstream.list_keys() {
                                if !listed.contains(&key) {
                                    remove(key);
                                }
                            }
                        }
                        Delta::Bookmark { .. } => {}
                    }
                }
            };
            while fifo.pop(&mut process).await.is_ok() {}
        }
    });
    expect_each_created_then_deleted(&source, &mut deletions).await;
    running.stop().await;
    fifo.close();
    consumer.await.unwrap();
}

/// The two examples' scenario: three pods created in `source`, each reported deleted (in
/// any order) through `deletions`, as Go's examples print them sorted.
async fn expect_each_created_then_deleted(
    source: &MemoryListerWatcher<Pod>,
    deletions: &mut mpsc::UnboundedReceiver<String>,
) {
    let names = ["a-hello", "b-controller", "c-framework"];
    for name in names {
        source.create(pod(name, ""));
    }
    let mut output = BTreeSet::new();
    for _ in 0..names.len() {
        let key = tokio::time::timeout(PATIENCE, deletions.recv())
            .await
            .expect("a deletion is reported")
            .unwrap();
        output.insert(key);
    }
    assert_eq!(output.into_iter().collect::<Vec<_>>(), names);
}

// Go: ExampleNewInformer (an informer, resyncing every 100 ms, whose handler deletes from the
// source every object added and reports every deletion)
#[tokio::test(start_paused = true)]
async fn controller_test_example_new_informer() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let (tx, mut deletions) = mpsc::unbounded_channel::<String>();
    informer.add_handler(
        {
            let source = source.clone();
            move |n: &Notification<Pod>| match n {
                Notification::Add { object, .. } => {
                    source.delete(&resource_key(&**object).unwrap());
                }
                Notification::Delete(_) => {
                    let key = n.key().expect("a deletion has a key");
                    tx.send(key.to_string()).unwrap();
                }
                Notification::Update { .. } => {}
            }
        },
        Some(Duration::from_millis(100)),
    );
    let running = start(&informer);
    expect_each_created_then_deleted(&source, &mut deletions).await;
    running.stop().await;
}

// Go: TestHammerController (Go asserts only HasSynced and the absence of deadlocks and
// races; the port also checks that each key's notifications are a valid history ending in
// the source's state)
#[tokio::test(start_paused = true)]
async fn controller_test_hammer_controller() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let output: Arc<Mutex<BTreeMap<String, Vec<&'static str>>>> = Arc::default();
    let record = {
        let output = output.clone();
        move |n: &Notification<Pod>| {
            let k = n.key().expect("key").to_string();
            output.lock().unwrap().entry(k).or_default().push(n.kind());
        }
    };
    informer.add_handler(record, Some(Duration::from_millis(100)));
    assert!(!informer.has_synced(), "synced before start");
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let mut tasks = Vec::new();
    for t in 0..3u64 {
        let source = source.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = (t + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
            let mut current: Vec<String> = Vec::new();
            for i in 0..100 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if current.is_empty() || rng % 3 == 1 {
                    let name = format!("t{t}-{i}");
                    let mut p = pod(&name, "");
                    p.metadata.namespace = Some("default".into());
                    source.create(p);
                    current.push(name);
                } else if rng.is_multiple_of(2) {
                    let name = &current[(rng as usize / 6) % current.len()];
                    let mut p = pod(name, "");
                    p.metadata.namespace = Some("default".into());
                    p.metadata.labels = Some([("i".to_owned(), i.to_string())].into());
                    source.update(p);
                } else {
                    let name = current.swap_remove((rng as usize / 6) % current.len());
                    source.delete(&ObjectKey::new(Some("default"), &name));
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    eventually(PATIENCE, "the cache holds the source's state", || {
        informer.store().len() == source.len()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    running.stop().await;
    let output = output.lock().unwrap();
    for (k, kinds) in output.iter() {
        assert_eq!(kinds[0], "add", "{k}: {kinds:?}");
        for pair in kinds.windows(2) {
            let valid = match pair {
                ["delete", next] => *next == "add",
                [_, next] => *next != "add",
                _ => unreachable!(),
            };
            assert!(valid, "{k}: {kinds:?}");
        }
        let exists = source.get(&k.parse_key()).is_some();
        assert_eq!(*kinds.last().unwrap() != "delete", exists, "{k}: {kinds:?}");
    }
}

trait ParseKey {
    fn parse_key(&self) -> ObjectKey;
}

impl ParseKey for String {
    fn parse_key(&self) -> ObjectKey {
        match self.split_once('/') {
            Some((ns, name)) => ObjectKey::new(Some(ns), name),
            None => ObjectKey::new(None, self),
        }
    }
}

// Go: TestUpdate (a controller that deletes objects once it sees their final update; every
// update seen is from -> to, to -> to or from -> from)
#[tokio::test(start_paused = true)]
async fn controller_test_update() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let mk = |name: &str, check: &str, fin: bool| {
        let mut p = pod(name, "");
        let mut labels = BTreeMap::from([("check".to_owned(), check.to_owned())]);
        if fin {
            labels.insert("final".to_owned(), "true".to_owned());
        }
        p.metadata.labels = Some(labels);
        p
    };
    let deletes = Arc::new(AtomicUsize::new(0));
    let bad = Arc::new(Mutex::new(Vec::<String>::new()));
    let handler = HandlerFns::<Pod>::new()
        .on_update({
            let (source, bad) = (source.clone(), bad.clone());
            move |old, new| {
                let label = |p: &Pod, k: &str| {
                    p.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(k).cloned())
                        .unwrap_or_default()
                };
                let (from, to) = (label(old, "check"), label(new, "check"));
                if !matches!(
                    (from.as_str(), to.as_str()),
                    ("from", "to") | ("to", "to") | ("from", "from")
                ) {
                    bad.lock().unwrap().push(format!("{from} -> {to}"));
                }
                if label(new, "final") == "true" {
                    source.delete(&key(&name_of(new)));
                }
            }
        })
        .on_delete({
            let deletes = deletes.clone();
            move |_| {
                deletes.fetch_add(1, Ordering::AcqRel);
            }
        });
    informer.add_handler(handler, None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    for i in 0..3 {
        let name = format!("a-{i}-0");
        source.create(mk(&name, "from", false));
        source.update(mk(&name, "to", true));
    }
    eventually(PATIENCE, "every object is deleted", || {
        deletes.load(Ordering::Acquire) == 3
    })
    .await;
    assert!(bad.lock().unwrap().is_empty(), "{:?}", bad.lock().unwrap());
    running.stop().await;
}

// Go: TestPanicPropagated. client-go lets a handler's panic escape `Run`; this library
// documents that "a handler that panics is logged with the object's key, counted, and keeps
// receiving" (`SharedIndexInformer`, Guarantees). The documented behaviour is asserted.
#[tokio::test(start_paused = true)]
async fn controller_test_panic_propagated() {
    let source = MemoryListerWatcher::<Pod>::new();
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let calls = Arc::new(AtomicUsize::new(0));
    let reg = informer.add_handler_with(
        HandlerFns::<Pod>::new().on_add({
            let calls = calls.clone();
            move |_, _| {
                calls.fetch_add(1, Ordering::AcqRel);
                panic!("Just panic.");
            }
        }),
        HandlerOptions::new().name("panicky"),
    );
    let running = start(&informer);
    source.create(pod("test", ""));
    eventually(PATIENCE, "the panic is counted", || reg.stats().panics == 1).await;
    assert!(informer.is_running(), "the panic did not stop the informer");
    source.create(pod("test2", ""));
    eventually(PATIENCE, "the handler keeps receiving", || {
        calls.load(Ordering::Acquire) == 2
    })
    .await;
    running.stop().await;
}

// Go: TestTransformingInformer. client-go's plain NewTransformingInformer calls its handler for
// every delta, and its transform also clears resourceVersion. Here every informer is a shared
// one, where (as in client-go's sharedIndexInformer) an update that keeps the resource version
// is a resync, withheld from handlers without a resync period: the Transform docs say a
// transform keeps it. So this transform keeps it, and the objects are compared without it.
#[tokio::test(start_paused = true)]
async fn controller_test_transforming_informer() {
    let source = MemoryListerWatcher::<Pod>::new();
    let make = |name: &str, generation: &str| {
        let mut p = pod(name, "");
        p.metadata.namespace = Some("namespace".into());
        p.metadata.labels = Some([("generation".to_owned(), generation.to_owned())].into());
        let spec = p.spec.get_or_insert_with(Default::default);
        spec.hostname = Some("hostname".into());
        spec.subdomain = Some("subdomain".into());
        p
    };
    let expected = |name: &str, generation: &str| {
        let mut p = make(name, generation);
        let spec = p.spec.get_or_insert_with(Default::default);
        spec.hostname = Some("new-hostname".into());
        spec.subdomain = None;
        spec.node_name = Some("nodename".into());
        p
    };
    let nskey = |name: &str| ObjectKey::new(Some("namespace"), name);
    source.create(make("pod1", "1"));
    source.update(make("pod1", "2"));
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .transform(|mut p: Pod| {
            let spec = p.spec.get_or_insert_with(Default::default);
            spec.hostname = Some("new-hostname".into());
            spec.subdomain = None;
            spec.node_name = Some("nodename".into());
            p
        })
        .build();
    type Event = (&'static str, Option<Pod>, Option<Pod>);
    let (tx, mut events) = mpsc::unbounded_channel::<Event>();
    // What the Go test compares: the object without its resource version.
    let bare = |p: &Pod| {
        let mut p = p.clone();
        p.metadata.resource_version = None;
        p
    };
    informer.add_handler(
        move |n: &Notification<Pod>| {
            let event = match n {
                Notification::Add { object, .. } => ("add", None, Some(bare(object))),
                Notification::Update { old, new } => ("update", Some(bare(old)), Some(bare(new))),
                Notification::Delete(d) => ("delete", d.object().map(|o| bare(o)), None),
            };
            let _ = tx.send(event);
        },
        None,
    );
    let store = informer.store();
    let verify_store = |want: &[Pod]| {
        let mut items: Vec<Pod> = store.list().iter().map(|p| bare(p)).collect();
        items.sort_by_key(name_of);
        assert_eq!(items, want);
    };
    let running = start(&informer);
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("failed to get event")
            .unwrap()
    };
    assert_eq!(next().await, ("add", None, Some(expected("pod1", "2"))));
    verify_store(&[expected("pod1", "2")]);
    source.create(make("pod2", "1"));
    assert_eq!(next().await, ("add", None, Some(expected("pod2", "1"))));
    verify_store(&[expected("pod1", "2"), expected("pod2", "1")]);
    source.create(make("pod3", "1"));
    assert_eq!(next().await, ("add", None, Some(expected("pod3", "1"))));
    source.update(make("pod2", "2"));
    assert_eq!(
        next().await,
        (
            "update",
            Some(expected("pod2", "1")),
            Some(expected("pod2", "2"))
        )
    );
    source.delete(&nskey("pod1"));
    assert_eq!(next().await, ("delete", Some(expected("pod1", "2")), None));
    verify_store(&[expected("pod2", "2"), expected("pod3", "1")]);
    running.stop().await;
}

// Go: TestTransformingInformerRace (the transform sees each object once, as received, never
// an object already transformed, also while resyncs run; the cache only holds transformed
// objects)
#[tokio::test(start_paused = true)]
async fn controller_test_transforming_informer_race() {
    const LABEL: &str = "to-be-transformed";
    let source = MemoryListerWatcher::<Pod>::new();
    for i in 0..5 {
        let mut p = pod(&format!("pod-{i}"), "");
        p.metadata.namespace = Some("namespace".into());
        p.metadata.labels = Some([(LABEL.to_owned(), "true".to_owned())].into());
        source.create(p);
    }
    let bad_transform = Arc::new(AtomicBool::new(false));
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .transform({
            let bad = bad_transform.clone();
            move |mut p: Pod| {
                let labels = p.metadata.labels.get_or_insert_with(Default::default);
                if labels.get(LABEL).map(String::as_str) != Some("true") {
                    bad.store(true, Ordering::Release);
                }
                labels.insert(LABEL.to_owned(), "false".to_owned());
                p
            }
        })
        .build();
    let events = Arc::new(AtomicUsize::new(0));
    informer.add_handler(
        {
            let events = events.clone();
            move |_: &Notification<Pod>| {
                events.fetch_add(1, Ordering::AcqRel);
            }
        },
        Some(Duration::from_secs(1)),
    );
    let running = start(&informer);
    eventually(PATIENCE, "the five adds", || {
        events.load(Ordering::Acquire) >= 5
    })
    .await;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for i in 0..5 {
            let p = informer
                .store()
                .get(&ObjectKey::new(Some("namespace"), &format!("pod-{i}")))
                .expect("the object is cached");
            let label = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL).cloned());
            assert_eq!(label.as_deref(), Some("false"), "unexpected object");
        }
    }
    assert!(events.load(Ordering::Acquire) > 5, "resyncs happened");
    assert!(
        !bad_transform.load(Ordering::Acquire),
        "unexpected transformation"
    );
    running.stop().await;
}

// Go: TestDeletionHandlingObjectToName (the key of a delete whose final state is unknown is
// the object's key)
#[test]
fn controller_test_deletion_handling_object_to_name() {
    let mut p = pod("testname", "");
    p.metadata.namespace = Some("testnamespace".into());
    let expected = ObjectKey::from_resource(&p).unwrap();
    // Go's `DeletionHandlingObjectToName(tombstone)` is `Deleted::key`.
    let deleted = Deleted::FinalStateUnknown {
        key: expected.clone(),
        last_known: Some(Arc::new(p)),
    };
    assert_eq!(deleted.key(), Some(expected.clone()));
    assert_eq!(Notification::Delete(deleted).key(), Some(expected));
}

/// One recorded notification: action, key, event resource version, cached resource version.
type EventRow = (String, String, String, String);

/// Go's `eventRecorder`: per notification, the action, key, the event object's resource
/// version and the cached object's resource version at the time of the call.
#[derive(Clone, Default)]
struct EventRecorder {
    history: Arc<Mutex<Vec<EventRow>>>,
}

impl EventRecorder {
    fn handler(
        &self,
        store: Arc<dyn Store<Pod>>,
    ) -> impl Fn(&Notification<Pod>) + Send + Sync + 'static {
        let history = self.history.clone();
        move |n: &Notification<Pod>| {
            let k = n.key().expect("key");
            let (object, _) = n.objects();
            let event_rv = object.map(|o| rv_of(o)).unwrap_or_default();
            let store_rv = store.get(&k).map(|o| rv_of(&o)).unwrap_or_default();
            history
                .lock()
                .unwrap()
                .push((n.kind().to_owned(), k.to_string(), event_rv, store_rv));
        }
    }

    fn take(&self) -> Vec<EventRow> {
        std::mem::take(&mut *self.history.lock().unwrap())
    }

    fn len(&self) -> usize {
        self.history.lock().unwrap().len()
    }
}

// Go: TestReplaceEvents (what handlers see of a replace: deletes of missing objects, updates of
// listed known objects, adds of new ones, each after the cache changed). Go adds objects to
// the FIFO with resource versions that go back; the resource versions here increase, since
// this library refuses watch events older than its cache (documented: "never back in time").
#[tokio::test(start_paused = true)]
async fn controller_test_replace_events() {
    let next_list: Arc<Mutex<PodList>> = Arc::new(Mutex::new(pod_list("1", vec![])));
    let watcher: Arc<Mutex<Option<FakeWatcher>>> = Arc::default();
    let lw = ListWatch::new(
        {
            let next_list = next_list.clone();
            move |_| Ok(next_list.lock().unwrap().clone())
        },
        {
            let watcher = watcher.clone();
            move |_, _| {
                let (w, s) = fake_watcher();
                *watcher.lock().unwrap() = Some(w);
                Ok(s)
            }
        },
    );
    let informer = SharedIndexInformer::new(lw.clone());
    let recorder = EventRecorder::default();
    informer.add_handler(recorder.handler(informer.store()), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    eventually(PATIENCE, "the informer watches", || {
        watcher.lock().unwrap().is_some()
    })
    .await;
    let p = |name: &str, rv: &str| {
        let mut p = pod(name, rv);
        p.metadata.namespace = Some("default".into());
        p
    };
    let lists_before = || lw.list_calls().len();
    // A replace: the next list holds `items` at `rv`, and the watch says 410 Gone.
    let replace = async |items: Vec<Pod>, rv: &str| {
        let lists = lists_before();
        *next_list.lock().unwrap() = pod_list(rv, items);
        let w = watcher.lock().unwrap().take().unwrap();
        w.error(status(410, "Expired", "too old resource version"));
        eventually(PATIENCE, "the relist", || lists_before() > lists).await;
        eventually(PATIENCE, "the new watch", || {
            watcher.lock().unwrap().is_some()
        })
        .await;
    };
    let add_all = async |items: &[Pod]| {
        let w = watcher.lock().unwrap().clone().unwrap();
        let before = recorder.len();
        for item in items {
            w.add(item.clone());
        }
        eventually(PATIENCE, "the adds", || {
            recorder.len() >= before + items.len()
        })
        .await;
    };
    let row = |a: &str, k: &str, e: &str, s: &str| {
        (
            a.to_owned(),
            format!("default/{k}"),
            e.to_owned(),
            s.to_owned(),
        )
    };
    let sorted_deletes = |mut h: Vec<EventRow>| {
        h.sort_by(|a, b| {
            if a.0 == "delete" && b.0 == "delete" {
                a.1.cmp(&b.1)
            } else {
                std::cmp::Ordering::Equal
            }
        });
        h
    };
    let cached = || -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = informer
            .store()
            .list()
            .iter()
            .map(|o| (name_of(o), rv_of(o)))
            .collect();
        v.sort();
        v
    };

    // "Create with no initial objects"
    recorder.take();
    replace(vec![p("pod-1", "2")], "2").await;
    eventually(PATIENCE, "1 event", || recorder.len() >= 1).await;
    assert_eq!(recorder.take(), [row("add", "pod-1", "2", "2")]);
    assert_eq!(cached(), [("pod-1".to_owned(), "2".to_owned())]);

    // "Delete all objects"
    add_all(&[p("pod-1", "3"), p("pod-3", "4")]).await;
    recorder.take();
    replace(vec![], "4").await;
    eventually(PATIENCE, "2 events", || recorder.len() >= 2).await;
    assert_eq!(
        sorted_deletes(recorder.take()),
        [
            row("delete", "pod-1", "3", ""),
            row("delete", "pod-3", "4", "")
        ]
    );
    assert!(cached().is_empty());

    // "Create, update, delete"
    let mut v1 = p("pod-2", "6");
    v1.metadata.labels = Some([("ver".to_owned(), "1".to_owned())].into());
    add_all(&[p("pod-1", "5"), v1, p("pod-3", "7")]).await;
    recorder.take();
    let mut v2 = p("pod-2", "9");
    v2.metadata.labels = Some([("ver".to_owned(), "2".to_owned())].into());
    replace(vec![p("pod-1", "8"), v2, p("pod-4", "10")], "10").await;
    eventually(PATIENCE, "4 events", || recorder.len() >= 4).await;
    assert_eq!(
        sorted_deletes(recorder.take()),
        [
            row("delete", "pod-3", "7", ""),
            row("update", "pod-1", "8", "8"),
            row("update", "pod-2", "9", "9"),
            row("add", "pod-4", "10", "10"),
        ]
    );
    assert_eq!(
        cached(),
        [
            ("pod-1".to_owned(), "8".to_owned()),
            ("pod-2".to_owned(), "9".to_owned()),
            ("pod-4".to_owned(), "10".to_owned())
        ]
    );
    running.stop().await;
}
