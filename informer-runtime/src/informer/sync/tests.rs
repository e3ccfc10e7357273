//! One test per rule of `wait_for_cache_sync` (paused tokio time: delays cost nothing and
//! are exact), then with real informers and handler registrations, then the logs of the
//! named variant.

use std::future::{pending, ready};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use informer_core::lister_watcher::{ListParams, ObjectList, WatchParams};
use informer_core::{ListWatchError, ListerWatcher, Notification, WatchStream};
use informer_testing::MemoryListerWatcher;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

use super::{wait_for_cache_sync, wait_for_named_cache_sync};
use crate::informer::SharedIndexInformer;

/// A wait that returns `result` after `delay`.
fn after(delay: Duration, result: bool) -> BoxFuture<'static, bool> {
    async move {
        sleep(delay).await;
        result
    }
    .boxed()
}

const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn no_wait_at_all_is_synced_even_when_cancelled() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(wait_for_cache_sync(&cancel, Vec::<BoxFuture<'static, bool>>::new()).await);
}

#[tokio::test(start_paused = true)]
async fn waits_ready_at_once_win_over_a_requested_cancellation() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(wait_for_cache_sync(&cancel, [ready(true), ready(true)]).await);
}

#[tokio::test(start_paused = true)]
async fn returns_true_when_the_last_wait_is_done() {
    let cancel = CancellationToken::new();
    let t0 = Instant::now();
    let waits = [
        after(10 * SEC, true),
        after(5 * SEC, true),
        after(Duration::ZERO, true),
    ];
    assert!(wait_for_cache_sync(&cancel, waits).await);
    assert_eq!(
        Instant::now() - t0,
        10 * SEC,
        "waited for the slowest, concurrently"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancellation_while_waiting_returns_false_at_once() {
    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            sleep(3 * SEC).await;
            cancel.cancel();
        }
    });
    let t0 = Instant::now();
    let waits = [after(SEC, true), pending::<bool>().boxed()];
    assert!(!wait_for_cache_sync(&cancel, waits).await);
    assert_eq!(Instant::now() - t0, 3 * SEC);
}

#[tokio::test(start_paused = true)]
async fn a_wait_returning_false_ends_the_wait_at_once_and_drops_the_others() {
    /// Counts its drops.
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let drops = Arc::new(AtomicUsize::new(0));
    let guard = Dropped(drops.clone());
    let never = async move {
        let _guard = guard;
        pending::<bool>().await
    }
    .boxed();
    let cancel = CancellationToken::new();
    let t0 = Instant::now();
    assert!(!wait_for_cache_sync(&cancel, [never, after(2 * SEC, false)]).await);
    assert_eq!(
        Instant::now() - t0,
        2 * SEC,
        "not waiting for the cancellation"
    );
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the pending wait was dropped"
    );
}

/// A source whose list never answers: its informer never syncs.
struct NeverLists;

#[async_trait]
impl ListerWatcher<ConfigMap> for NeverLists {
    async fn list(&self, _: &ListParams) -> Result<ObjectList<Arc<ConfigMap>>, ListWatchError> {
        pending().await
    }
    async fn watch(
        &self,
        _: &WatchParams,
        _: &str,
    ) -> Result<WatchStream<ConfigMap>, ListWatchError> {
        pending().await
    }
}

fn spawn_run(informer: &SharedIndexInformer<ConfigMap>, cancel: &CancellationToken) {
    let (informer, cancel) = (informer.clone(), cancel.clone());
    tokio::spawn(async move { informer.run(cancel).await });
}

#[tokio::test]
async fn informers_and_handler_registrations_are_waits() {
    let a = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    let b = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    let registration = b.add_handler(|_: &Notification<ConfigMap>| {}, None);
    let cancel = CancellationToken::new();
    spawn_run(&a, &cancel);
    spawn_run(&b, &cancel);
    let synced = wait_for_cache_sync(
        &cancel,
        [
            a.wait_for_sync(),
            b.wait_for_sync(),
            registration.wait_synced(),
        ],
    )
    .await;
    assert!(synced);
    assert!(a.has_synced() && b.has_synced() && registration.has_synced());
    cancel.cancel();
}

#[tokio::test]
async fn an_informer_stopped_before_it_synced_ends_the_wait_with_false() {
    let synced = SharedIndexInformer::new(Arc::new(MemoryListerWatcher::<ConfigMap>::new()));
    let stuck = SharedIndexInformer::new(Arc::new(NeverLists));
    let (outer, informers) = (CancellationToken::new(), CancellationToken::new());
    spawn_run(&synced, &informers);
    spawn_run(&stuck, &informers);
    assert!(synced.wait_for_sync().await);
    informers.cancel(); // stops `stuck` before it ever lists
    let waits = [synced.wait_for_sync(), stuck.wait_for_sync()];
    assert!(!wait_for_cache_sync(&outer, waits).await);
    assert!(!outer.is_cancelled());
}

/// Records every event's level and `message` and `controller` fields.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<(Level, String, String)>>>);

#[derive(Default)]
struct Fields {
    message: String,
    controller: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "controller" => self.controller = format!("{value:?}"),
            _ => {}
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            "controller" => self.controller = value.to_owned(),
            _ => {}
        }
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), fields.message, fields.controller));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Captured {
    fn take(&self) -> Vec<(Level, String, String)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

fn line(level: Level, message: &str) -> (Level, String, String) {
    (level, message.to_owned(), "pods".to_owned())
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_named_wait_logs_waiting_then_synced_or_unable() {
    let logs = Captured::default();
    let _default = tracing::subscriber::set_default(logs.clone());
    let cancel = CancellationToken::new();

    assert!(wait_for_named_cache_sync("pods", &cancel, [after(SEC, true)]).await);
    assert_eq!(
        logs.take(),
        [
            line(Level::INFO, "Waiting for caches to sync"),
            line(Level::INFO, "Caches are synced"),
        ]
    );

    cancel.cancel();
    assert!(!wait_for_named_cache_sync("pods", &cancel, [pending::<bool>()]).await);
    assert_eq!(
        logs.take(),
        [
            line(Level::INFO, "Waiting for caches to sync"),
            line(Level::ERROR, "Unable to sync caches"),
        ]
    );
}
