//! Tests of the processor and the shared informer, one per guarantee.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use informer_core::apply::apply_deltas;
use informer_core::fifo::Delta;
use informer_core::store::{ThreadSafeStore, index_fn};
use informer_core::{Deleted, Handler, Indexer, ListWatchError, Notification, ObjectKey, Store};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use tokio_util::sync::CancellationToken;

use super::processor::Processor;
use super::*;
use crate::test_support::eventually;
use informer_testing::MemoryListerWatcher;

type Cm = ConfigMap;

/// A ConfigMap with a resource version of its own, as the API server stamps every write
/// (two objects made here never look like a resync of each other).
fn cm(name: &str, value: &str) -> Cm {
    static VERSIONS: AtomicU64 = AtomicU64::new(1);
    let mut c = Cm::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.metadata.resource_version = Some(VERSIONS.fetch_add(1, Ordering::Relaxed).to_string());
    c.data = Some([("v".to_owned(), value.to_owned())].into());
    c
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Some("default"), name)
}

fn name_of(c: &Cm) -> String {
    c.metadata.name.clone().unwrap_or_default()
}

fn value_of(c: &Cm) -> String {
    c.data
        .as_ref()
        .and_then(|d| d.get("v").cloned())
        .unwrap_or_default()
}

/// A gate handlers block on (on their own thread) until a test opens it.
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
        let (guard, timeout) = cvar
            .wait_timeout_while(guard, Duration::from_secs(20), |open| !*open)
            .unwrap();
        assert!(!timeout.timed_out() && *guard, "gate never opened");
    }
}

/// Records every notification it receives.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Notification<Cm>>>>,
}

impl Recorder {
    fn handler(&self) -> impl Fn(&Notification<Cm>) + Send + Sync + 'static {
        let seen = self.seen.clone();
        move |n: &Notification<Cm>| seen.lock().unwrap().push(n.clone())
    }

    fn gated(&self, gate: Gate) -> impl Fn(&Notification<Cm>) + Send + Sync + 'static {
        let seen = self.seen.clone();
        move |n: &Notification<Cm>| {
            gate.wait();
            seen.lock().unwrap().push(n.clone())
        }
    }

    fn len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn take(&self) -> Vec<Notification<Cm>> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }

    /// A readable summary: `+name=v` (initial: `+name=v!`), `~name=a>b`, `-name`, `?name`.
    fn summary(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(describe).collect()
    }

    fn resyncs(&self) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|n| matches!(n, Notification::Update { old, new } if Arc::ptr_eq(old, new)))
            .count()
    }
}

fn describe(n: &Notification<Cm>) -> String {
    match n {
        Notification::Add {
            object,
            is_initial_list,
        } => format!(
            "+{}={}{}",
            name_of(object),
            value_of(object),
            if *is_initial_list { "!" } else { "" }
        ),
        Notification::Update { old, new } => {
            format!("~{}={}>{}", name_of(new), value_of(old), value_of(new))
        }
        Notification::Delete(Deleted::Object(o)) => format!("-{}", name_of(o)),
        Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => format!("?{}", key.name()),
    }
}

/// Replays a handler's notifications per key and checks they are a consistent history:
/// no add of a present key, every update's `old` is the object last delivered, every delete
/// of a present key. Returns the resulting state.
fn replay(notifications: &[Notification<Cm>]) -> HashMap<String, Arc<Cm>> {
    let mut state: HashMap<String, Arc<Cm>> = HashMap::new();
    for n in notifications {
        match n {
            Notification::Add { object, .. } => {
                let prev = state.insert(name_of(object), object.clone());
                assert!(prev.is_none(), "add of a present object: {}", describe(n));
            }
            Notification::Update { old, new } => {
                let prev = state.insert(name_of(new), new.clone());
                let prev =
                    prev.unwrap_or_else(|| panic!("update of an absent object: {}", describe(n)));
                assert!(
                    Arc::ptr_eq(&prev, old),
                    "update whose old was never delivered: {}",
                    describe(n)
                );
            }
            Notification::Delete(d) => {
                let name = match d {
                    Deleted::Object(o) => name_of(o),
                    Deleted::FinalStateUnknown { key, .. } => key.name().to_owned(),
                };
                assert!(
                    state.remove(&name).is_some(),
                    "delete of an absent object: {}",
                    describe(n)
                );
            }
        }
    }
    state
}

fn cache_state(store: &dyn Store<Cm>) -> HashMap<String, Arc<Cm>> {
    store.list().into_iter().map(|o| (name_of(&o), o)).collect()
}

fn assert_same_state(a: &HashMap<String, Arc<Cm>>, b: &HashMap<String, Arc<Cm>>) {
    let mut ka: Vec<_> = a.keys().collect();
    let mut kb: Vec<_> = b.keys().collect();
    ka.sort();
    kb.sort();
    assert_eq!(ka, kb);
    for (k, v) in a {
        assert!(Arc::ptr_eq(v, &b[k]), "{k} differs");
    }
}

struct Running {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), InformerError>>,
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap().unwrap();
    }
}

fn start(informer: &SharedIndexInformer<Cm>) -> Running {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let informer = informer.clone();
        let cancel = cancel.clone();
        async move { informer.run(cancel).await }
    });
    Running { cancel, task }
}

fn source_with(names: &[&str]) -> MemoryListerWatcher<Cm> {
    let source = MemoryListerWatcher::<Cm>::new();
    for n in names {
        source.create(cm(n, "1"));
    }
    source
}

// ---------------------------------------------------------------------------------------
// The informer: cache and notifications
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn handlers_receive_every_change_in_order_after_the_cache_holds_it() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let rec = Recorder::default();
    let store = informer.store();
    let checked = Arc::new(AtomicUsize::new(0));
    let (s, c, r) = (store.clone(), checked.clone(), rec.handler());
    informer.add_handler(
        move |n: &Notification<Cm>| {
            // The cache already holds what the notification says.
            match n {
                Notification::Add { object, .. } | Notification::Update { new: object, .. } => {
                    assert!(s.get(&key(&name_of(object))).is_some());
                }
                Notification::Delete(_) => {}
            }
            c.fetch_add(1, Ordering::Relaxed);
            r(n)
        },
        None,
    );
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.update(cm("a", "2"));
    source.delete(&key("b"));
    source.create(cm("c", "1"));
    source.update(cm("a", "3"));
    eventually("all notifications arrive", || rec.len() == 6).await;
    let summary = rec.summary();
    let mut initial = summary[..2].to_vec();
    initial.sort();
    assert_eq!(initial, ["+a=1!", "+b=1!"]);
    assert_eq!(summary[2..], ["~a=1>2", "-b", "+c=1", "~a=2>3"]);
    assert_same_state(&replay(&rec.take()), &cache_state(&*store));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_handler_holds_up_neither_the_cache_nor_other_handlers() {
    let source = source_with(&[]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let gate = Gate::default();
    let slow = Recorder::default();
    let fast = Recorder::default();
    let slow_reg = informer.add_handler(slow.gated(gate.clone()), None);
    informer.add_handler(fast.handler(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    for i in 0..100 {
        source.create(cm(&format!("o{i}"), "1"));
    }
    eventually("the fast handler got every add", || fast.len() == 100).await;
    assert_eq!(informer.store().len(), 100, "the cache is current");
    assert_eq!(
        slow.len(),
        0,
        "the slow handler is still stuck on its first call"
    );
    assert_eq!(slow_reg.stats().pending, 100);
    gate.open();
    eventually("the slow handler catches up", || slow.len() == 100).await;
    assert_eq!(slow_reg.stats().pending, 0);
    running.stop().await;
}

#[tokio::test]
async fn panicking_handler_keeps_receiving_later_events_and_the_panic_is_counted() {
    let source = source_with(&[]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let rec = Recorder::default();
    let r = rec.handler();
    let reg = informer.add_handler_with(
        move |n: &Notification<Cm>| {
            if let Notification::Add { object, .. } = n
                && name_of(object) == "bad"
            {
                panic!("handler bug on purpose");
            }
            r(n)
        },
        HandlerOptions::new().name("panicky"),
    );
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.create(cm("a", "1"));
    source.create(cm("bad", "1"));
    source.create(cm("c", "1"));
    source.update(cm("bad", "2"));
    eventually("later events arrive", || rec.len() == 3).await;
    assert_eq!(rec.summary(), ["+a=1", "+c=1", "~bad=1>2"]);
    let stats = reg.stats();
    assert_eq!(stats.panics, 1);
    assert_eq!(stats.delivered, 4);
    assert_eq!(reg.name(), "panicky");
    running.stop().await;
}

/// Collects names in `notify`, moves them to `flushed` in `flush`; the flush may panic.
#[derive(Clone, Default)]
struct Deferring {
    collected: Arc<Mutex<Vec<String>>>,
    flushed: Arc<Mutex<Vec<Vec<String>>>>,
    panic_on_flush: Arc<std::sync::atomic::AtomicBool>,
}

impl Handler<Cm> for Deferring {
    fn on_add(&self, obj: &Arc<Cm>, _initial: bool) {
        self.collected.lock().unwrap().push(name_of(obj));
    }
    fn on_update(&self, _old: &Arc<Cm>, new: &Arc<Cm>) {
        self.collected.lock().unwrap().push(name_of(new));
    }
    fn on_delete(&self, _deleted: &Deleted<Cm>) {}
    fn flush(&self) {
        let run = std::mem::take(&mut *self.collected.lock().unwrap());
        if self.panic_on_flush.swap(false, Ordering::SeqCst) {
            panic!("flush bug on purpose");
        }
        self.flushed.lock().unwrap().push(run);
    }
}

#[tokio::test]
async fn handlers_are_flushed_after_each_run_and_synced_only_once_flushed() {
    let names: Vec<String> = (0..600).map(|i| format!("n{i:03}")).collect();
    let source = source_with(&names.iter().map(String::as_str).collect::<Vec<_>>());
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let handler = Deferring::default();
    let reg = informer.add_handler(handler.clone(), None);
    let running = start(&informer);
    assert!(reg.wait_synced().await);
    // Synced means flushed: every initial add went through a flush, in runs of at most 256.
    let runs = handler.flushed.lock().unwrap().clone();
    assert_eq!(runs.concat(), names);
    assert!(
        runs.iter().all(|r| !r.is_empty() && r.len() <= 256),
        "{:?}",
        runs.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(handler.collected.lock().unwrap().is_empty());
    // A later change is flushed too, without waiting for more.
    source.update(cm("n000", "2"));
    eventually("the update is flushed", || {
        handler
            .flushed
            .lock()
            .unwrap()
            .last()
            .is_some_and(|r| r == &["n000"])
    })
    .await;
    running.stop().await;
}

#[tokio::test]
async fn a_panicking_flush_is_caught_and_counted_and_later_runs_are_flushed() {
    let source = source_with(&[]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let handler = Deferring::default();
    let reg = informer.add_handler(handler.clone(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    handler.panic_on_flush.store(true, Ordering::SeqCst);
    source.create(cm("a", "1"));
    eventually("the panic is counted", || reg.stats().panics == 1).await;
    source.create(cm("b", "1"));
    eventually("the next run is flushed", || {
        handler
            .flushed
            .lock()
            .unwrap()
            .concat()
            .contains(&"b".to_owned())
    })
    .await;
    assert_eq!(reg.stats().delivered, 2);
    assert_eq!(reg.stats().pending, 0);
    running.stop().await;
}

#[tokio::test]
async fn late_handler_first_receives_the_cache_as_initial_adds() {
    let source = source_with(&["a", "b", "c"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.handler(), None);
    assert!(reg.wait_synced().await);
    let mut summary = rec.summary();
    summary.sort();
    assert_eq!(summary, ["+a=1!", "+b=1!", "+c=1!"]);
    source.update(cm("b", "2"));
    eventually("the later update arrives", || rec.len() == 4).await;
    assert_eq!(rec.summary()[3], "~b=1>2");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn late_handler_replay_is_atomic_with_concurrent_changes() {
    let source = source_with(&[]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let writer = std::thread::spawn({
        let source = source.clone();
        move || {
            for i in 0..20_000 {
                let name = format!("o{}", i % 40);
                match i % 3 {
                    0 => {
                        let _ = source.try_create(cm(&name, &i.to_string()));
                    }
                    1 => {
                        let _ = source.try_update(cm(&name, &i.to_string()));
                    }
                    _ => {
                        if i % 7 == 0 {
                            source.delete(&key(&name));
                        }
                    }
                }
            }
        }
    });
    // Add handlers while the writer runs (at least one before it finishes).
    let mut recorders = Vec::new();
    while recorders.is_empty() || (!writer.is_finished() && recorders.len() < 50) {
        let rec = Recorder::default();
        informer.add_handler(rec.handler(), None);
        recorders.push(rec);
        tokio::time::sleep(Duration::from_micros(100)).await;
    }
    writer.join().unwrap();
    eventually("the cache equals the source", || {
        cache_equals_source(&informer, &source)
    })
    .await;
    let store = informer.store();
    for rec in &recorders {
        eventually("the handler drains", || {
            replay_len_matches(&rec.seen.lock().unwrap(), &*store)
        })
        .await;
        assert_same_state(&replay(&rec.take()), &cache_state(&*store));
    }
    running.stop().await;
}

fn cache_equals_source(
    informer: &SharedIndexInformer<Cm>,
    source: &MemoryListerWatcher<Cm>,
) -> bool {
    let store = informer.store();
    let objects = source.objects();
    store.len() == objects.len()
        && objects.iter().all(|o| {
            store
                .get(&key(&name_of(o)))
                .is_some_and(|c| c.metadata.resource_version == o.metadata.resource_version)
        })
}

fn replay_len_matches(seen: &[Notification<Cm>], store: &dyn Store<Cm>) -> bool {
    let mut state: HashMap<String, Arc<Cm>> = HashMap::new();
    for n in seen {
        match n {
            Notification::Add { object, .. } => {
                state.insert(name_of(object), object.clone());
            }
            Notification::Update { new, .. } => {
                state.insert(name_of(new), new.clone());
            }
            Notification::Delete(Deleted::Object(o)) => {
                state.remove(&name_of(o));
            }
            Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => {
                state.remove(key.name());
            }
        }
    }
    let cache = cache_state(store);
    cache.len() == state.len()
        && cache
            .iter()
            .all(|(k, v)| state.get(k).is_some_and(|s| Arc::ptr_eq(s, v)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn registration_has_synced_once_its_handler_processed_every_initial_add() {
    let source = source_with(&["a", "b", "c"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let gate = Gate::default();
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.gated(gate.clone()), None);
    let quick = informer.add_handler(|_: &Notification<Cm>| {}, None);
    assert!(!reg.has_synced(), "not synced before the informer ran");
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    assert!(quick.wait_synced().await);
    assert!(!reg.has_synced(), "its initial adds are still pending");
    gate.open();
    assert!(reg.wait_synced().await);
    assert!(reg.has_synced());
    assert_eq!(rec.len(), 3);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn late_registration_has_synced_once_the_replayed_cache_is_processed() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let gate = Gate::default();
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.gated(gate.clone()), None);
    assert!(!reg.has_synced());
    assert_eq!(reg.stats().pending, 2);
    gate.open();
    assert!(reg.wait_synced().await);
    assert_eq!(rec.len(), 2);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn remove_waits_until_the_handler_task_has_finished() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let gate = Gate::default();
    let rec = Recorder::default();
    let in_call = Arc::new(AtomicUsize::new(0));
    let (g, r, c) = (gate.clone(), rec.handler(), in_call.clone());
    let reg = informer.add_handler(
        move |n: &Notification<Cm>| {
            c.fetch_add(1, Ordering::SeqCst);
            g.wait();
            r(n);
        },
        None,
    );
    let other = Recorder::default();
    informer.add_handler(other.handler(), None);
    let running = start(&informer);
    eventually("the handler is inside its first call", || {
        in_call.load(Ordering::SeqCst) == 1
    })
    .await;
    source.create(cm("b", "1"));
    let removal = tokio::spawn(reg.remove());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !removal.is_finished(),
        "remove returned while the handler was running"
    );
    gate.open();
    tokio::time::timeout(Duration::from_secs(10), removal)
        .await
        .expect("remove finished")
        .unwrap();
    assert_eq!(
        rec.summary(),
        ["+a=1!"],
        "the call in progress completed, the buffered add was discarded"
    );
    source.create(cm("c", "1"));
    eventually("the other handler still receives", || other.len() == 3).await;
    assert_eq!(rec.len(), 1, "a removed handler is never called again");
    assert_eq!(informer.handler_count(), 1);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_goes_only_to_handlers_whose_period_is_due() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let every_1s = Recorder::default();
    let every_3s = Recorder::default();
    let never = Recorder::default();
    informer.add_handler(every_1s.handler(), Some(Duration::from_secs(1)));
    informer.add_handler(every_3s.handler(), Some(Duration::from_secs(3)));
    informer.add_handler(never.handler(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert_eq!(every_1s.resyncs(), 6, "3 resyncs of 2 objects");
    assert_eq!(every_3s.resyncs(), 2, "1 resync of 2 objects");
    assert_eq!(never.resyncs(), 0);
    assert_eq!(never.len(), 2, "only the initial adds");
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_period_below_one_second_is_raised_to_one_second() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), Some(Duration::from_millis(10)));
    let zero = Recorder::default();
    informer.add_handler(zero.handler(), Some(Duration::ZERO));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(rec.resyncs(), 0);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(rec.resyncs(), 2, "at 1 s and 2 s");
    assert_eq!(zero.resyncs(), 0, "a zero period means no resync");
    running.stop().await;
}

/// Relists `source` (a 410 after compaction) and waits until `informer` has.
async fn relist(informer: &SharedIndexInformer<Cm>, source: &MemoryListerWatcher<Cm>) {
    let lists = informer.reflector_stats().lists;
    source.compact();
    source.send_error_event(
        kube::core::Status::failure("too old resource version", "Expired").with_code(410),
    );
    eventually("the reflector relisted", || {
        informer.reflector_stats().lists > lists
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
}

#[tokio::test(start_paused = true)]
async fn relist_redelivers_unchanged_objects_to_every_handler_when_none_resyncs() {
    // client-go: a listener is syncing from addListener until a shouldResync, which never
    // runs without a resync period; a relist's unchanged objects (equal resource versions)
    // go to it as updates.
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    relist(&informer, &source).await;
    eventually("the relist's updates arrive", || rec.len() == 4).await;
    assert_eq!(rec.summary()[2..], ["~a=1>1", "~b=1>1"]);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn after_a_resync_check_a_relist_redelivers_unchanged_objects_only_to_handlers_resyncing() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let (plain, resyncing) = (Recorder::default(), Recorder::default());
    informer.add_handler(plain.handler(), None);
    informer.add_handler(resyncing.handler(), Some(Duration::from_secs(1)));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    // The first resync check: only the resyncing handler is due.
    eventually("a resync", || resyncing.resyncs() >= 2).await;
    let (before_plain, before_resyncing) = (plain.len(), resyncing.len());
    relist(&informer, &source).await;
    source.update(cm("a", "2"));
    eventually("the update arrives", || plain.len() == before_plain + 1).await;
    assert_eq!(
        plain.summary()[before_plain..],
        ["~a=1>2"],
        "no update for unchanged objects came before it"
    );
    assert!(
        resyncing.len() > before_resyncing + 1,
        "the resyncing handler got them"
    );
    running.stop().await;
}

#[tokio::test]
async fn shrink_objects_caches_objects_without_spare_capacity() {
    let source = MemoryListerWatcher::<Cm>::new();
    source.create(cm("a", "1"));
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        // Stands for a decoder whose vectors grew by doubling.
        .transform(|mut c: Cm| {
            let mut entries = Vec::with_capacity(64);
            entries.push(ManagedFieldsEntry::default());
            c.metadata.managed_fields = Some(entries);
            c
        })
        .shrink_objects()
        .build();
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let cached = informer.store().get(&key("a")).unwrap();
    let entries = cached.metadata.managed_fields.as_ref().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries.capacity(), 1, "the cached object is a tight clone");
    running.stop().await;
}

#[tokio::test]
async fn transform_runs_before_objects_enter_the_cache() {
    let source = MemoryListerWatcher::<Cm>::new();
    let mut obj = cm("a", "1");
    obj.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
    source.create(obj);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .drop_managed_fields()
        .transform(|mut c: Cm| {
            c.metadata.labels = Some([("seen".to_owned(), "yes".to_owned())].into());
            c
        })
        .build();
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let cached = informer.store().get(&key("a")).unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    assert_eq!(cached.metadata.labels.as_ref().unwrap()["seen"], "yes");
    eventually("the add arrives", || rec.len() == 1).await;
    match &rec.take()[0] {
        Notification::Add { object, .. } => assert!(Arc::ptr_eq(object, &cached)),
        other => panic!("unexpected {}", describe(other)),
    }
    running.stop().await;
}

#[tokio::test]
async fn add_indexers_while_running_indexes_cached_objects() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    informer
        .add_indexers([("value".to_owned(), index_fn(|c: &Cm| vec![value_of(c)]))].into())
        .unwrap();
    assert_eq!(informer.indexer().by_index("value", "1").unwrap().len(), 2);
    source.update(cm("a", "2"));
    eventually("the index follows updates", || {
        informer
            .lister()
            .by_index_name("value", "2")
            .map(|v| v.len())
            .unwrap_or(0)
            == 1
    })
    .await;
    assert!(matches!(
        informer.add_indexers([("value".to_owned(), index_fn(|_: &Cm| vec![]))].into()),
        Err(informer_core::IndexError::Conflict(_))
    ));
    running.stop().await;
}

#[tokio::test]
async fn run_twice_is_an_error_and_handlers_added_after_stop_are_never_called() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    assert_eq!(
        informer.run(CancellationToken::new()).await,
        Err(InformerError::AlreadyStarted)
    );
    running.stop().await;
    assert!(informer.is_stopped());
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.handler(), None);
    assert!(!reg.wait_synced().await);
    assert!(
        !reg.has_synced(),
        "a handler added after the stop never syncs"
    );
    assert_eq!(rec.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn sync_error_says_why_the_informer_has_not_synced() {
    let source = MemoryListerWatcher::<Cm>::new();
    for _ in 0..50 {
        source.fail_next_list(ListWatchError::status(
            403,
            "Forbidden",
            "configmaps is forbidden",
        ));
    }
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let reg = informer.add_handler(Recorder::default().handler(), None);
    let running = start(&informer);
    let synced = tokio::time::timeout(Duration::from_secs(5), informer.wait_for_sync()).await;
    assert!(synced.is_err(), "cannot sync while forbidden");
    let err = informer
        .sync_error()
        .expect("the reflector's error is kept");
    assert!(err.is_forbidden(), "{err}");
    running.stop().await;
    assert!(!informer.wait_for_sync().await, "stopped before syncing");
    assert!(
        !reg.has_synced(),
        "a handler stopped before its informer synced never does"
    );
}

#[tokio::test]
async fn delta_fifo_informer_delivers_the_same_history() {
    let source = source_with(&["a", "b"]);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .fifo(FifoKind::Delta)
        .build();
    let rec = Recorder::default();
    informer.add_handler(rec.handler(), None);
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.update(cm("a", "2"));
    source.delete(&key("b"));
    eventually("all notifications arrive", || rec.len() == 4).await;
    assert_same_state(&replay(&rec.take()), &cache_state(&*informer.store()));
    running.stop().await;
}

#[tokio::test]
async fn custom_store_backend_is_used_as_the_cache() {
    let store: Arc<dyn Indexer<Cm>> = Arc::new(ThreadSafeStore::<Cm>::new());
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .store(store.clone())
        .build();
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    assert!(store.get(&key("a")).is_some());
    assert!(informer.last_sync_resource_version().is_some());
    running.stop().await;
}

#[tokio::test]
async fn stopping_ends_every_handler_task_and_drops_what_is_buffered() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    let rec = Recorder::default();
    let reg = informer.add_handler(rec.handler(), None);
    let running = start(&informer);
    assert!(reg.wait_synced().await);
    running.stop().await;
    assert!(!informer.is_running());
    assert!(
        reg.has_synced(),
        "a handler that synced stays synced after the stop (client-go's HasSynced)"
    );
    assert_eq!(reg.stats().pending, 0);
}

// ---------------------------------------------------------------------------------------
// The processor: buffer policies (driven directly, deterministic)
// ---------------------------------------------------------------------------------------

fn processor() -> Arc<Processor<Cm>> {
    let store: Arc<dyn Indexer<Cm>> = Arc::new(ThreadSafeStore::<Cm>::new());
    let p = Arc::new(Processor::new(store));
    p.start(tokio::runtime::Handle::current());
    p
}

/// Applies deltas to the processor's store and distributes the notifications, as the
/// informer loop does.
fn step(p: &Processor<Cm>, deltas: Vec<Delta<Cm>>) {
    let mut d = p.distributor();
    let store: &dyn Store<Cm> = &*p.store;
    apply_deltas(store, deltas, false, &mut |n| d.distribute(n)).unwrap();
}

fn bounded(capacity: usize, overflow: Overflow) -> HandlerOptions {
    HandlerOptions::new().buffer(BufferPolicy::bounded(
        NonZeroUsize::new(capacity).unwrap(),
        overflow,
    ))
}

/// `n` objects `o0`.. at value `v`, and weak references to them.
fn versions(n: usize, v: &str) -> (Vec<Arc<Cm>>, Vec<std::sync::Weak<Cm>>) {
    let objects: Vec<_> = (0..n).map(|i| Arc::new(cm(&format!("o{i}"), v))).collect();
    let weak = objects.iter().map(Arc::downgrade).collect();
    (objects, weak)
}

fn all_freed(weak: &[std::sync::Weak<Cm>]) -> bool {
    weak.iter().all(|w| w.strong_count() == 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaced_and_deleted_objects_are_freed_once_every_handler_is_done_with_them() {
    let p = processor();
    let (a, b) = (Recorder::default(), Recorder::default());
    p.add(Arc::new(a.handler()), &HandlerOptions::new(), None);
    p.add(Arc::new(b.handler()), &HandlerOptions::new(), None);
    // Runs long enough to be freed on the decode pool, and single ones freed at once.
    for n in [1, 40] {
        let (first, first_weak) = versions(n, "1");
        let (second, second_weak) = versions(n, "2");
        step(&p, first.into_iter().map(Delta::Added).collect());
        step(&p, second.into_iter().map(Delta::Updated).collect());
        let (deleted, deleted_weak) = versions(n, "3");
        step(
            &p,
            deleted
                .into_iter()
                .map(|o| Delta::Deleted(Deleted::Object(o)))
                .collect(),
        );
        eventually("both handlers saw every notification", || {
            a.len() == 3 * n && b.len() == 3 * n
        })
        .await;
        drop((a.take(), b.take()));
        eventually("every version, replaced or deleted, is freed", || {
            all_freed(&first_weak) && all_freed(&second_weak) && all_freed(&deleted_weak)
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_without_handlers_frees_the_objects_it_replaces() {
    let p = processor();
    for n in [1, 40] {
        let (first, first_weak) = versions(n, "1");
        let (second, second_weak) = versions(n, "2");
        step(&p, first.into_iter().map(Delta::Added).collect());
        step(&p, second.into_iter().map(Delta::Updated).collect());
        eventually("every replaced version is freed", || all_freed(&first_weak)).await;
        for (i, w) in second_weak.iter().enumerate() {
            let cached = p.store.get(&key(&format!("o{i}"))).expect("cached");
            assert!(
                w.upgrade().is_some_and(|o| Arc::ptr_eq(&o, &cached)),
                "the cache holds the current version of o{i}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn block_policy_makes_the_loop_wait_for_room_without_holding_up_other_handlers() {
    let p = processor();
    let gate = Gate::default();
    let blocked = Recorder::default();
    let other = Recorder::default();
    let listener = p.add(
        Arc::new(blocked.gated(gate.clone())),
        &bounded(2, Overflow::Block),
        None,
    );
    p.add(Arc::new(other.handler()), &HandlerOptions::new(), None);
    for i in 0..3 {
        step(&p, vec![Delta::Added(Arc::new(cm(&format!("o{i}"), "1")))]);
    }
    // Every handler got the batch at once; only the loop waits.
    eventually("the other handler got everything", || other.len() == 3).await;
    let wait = tokio::spawn({
        let p = p.clone();
        async move { p.wait_for_room().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !wait.is_finished(),
        "the loop waits while the buffer is full"
    );
    assert_eq!(
        listener.stats().pending,
        3,
        "soft bound: the batch was buffered whole"
    );
    gate.open();
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap()
        .unwrap();
    eventually("the blocked handler catches up", || blocked.len() == 3).await;
    p.stop(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn block_policy_wait_is_released_by_removing_the_handler() {
    let p = processor();
    let gate = Gate::default();
    let listener = p.add(
        Arc::new(Recorder::default().gated(gate.clone())),
        &bounded(1, Overflow::Block),
        None,
    );
    step(&p, vec![Delta::Added(Arc::new(cm("a", "1")))]);
    step(&p, vec![Delta::Added(Arc::new(cm("b", "1")))]);
    let wait = tokio::spawn({
        let p = p.clone();
        async move { p.wait_for_room().await }
    });
    let remove = tokio::spawn({
        let (p, l) = (p.clone(), listener.clone());
        async move { p.remove(&l, true).await }
    });
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap()
        .unwrap();
    gate.open();
    tokio::time::timeout(Duration::from_secs(10), remove)
        .await
        .unwrap()
        .unwrap();
    p.stop(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn coalesce_policy_merges_per_key_and_delivers_the_net_change_from_the_cache() {
    let p = processor();
    let gate = Gate::default();
    let rec = Recorder::default();
    let listener = p.add(
        Arc::new(rec.gated(gate.clone())),
        &bounded(1, Overflow::Coalesce),
        None,
    );
    step(&p, vec![Delta::Added(Arc::new(cm("a", "1")))]); // buffered: the handler takes it and blocks
    eventually("the handler holds the first add", || {
        listener.stats().pending == 1
    })
    .await;
    step(&p, vec![Delta::Added(Arc::new(cm("b", "1")))]); // merged: b appears...
    step(&p, vec![Delta::Updated(Arc::new(cm("a", "2")))]);
    let b = p.store.get(&key("b")).unwrap();
    step(&p, vec![Delta::Deleted(Deleted::Object(b))]); // ...and disappears: nothing
    step(&p, vec![Delta::Added(Arc::new(cm("c", "1")))]);
    step(&p, vec![Delta::Updated(Arc::new(cm("a", "3")))]);
    assert_eq!(listener.stats().coalesced, 5);
    assert_eq!(
        listener.stats().pending,
        1,
        "merged notifications are not buffered"
    );
    gate.open();
    eventually("the net changes arrive", || rec.len() == 3).await;
    let summary = rec.summary();
    assert_eq!(summary[0], "+a=1");
    let mut rest = summary[1..].to_vec();
    rest.sort();
    assert_eq!(rest, ["+c=1", "~a=1>3"]);
    assert_same_state(&replay(&rec.take()), &cache_state(&*p.store));
    // Caught up: later notifications are buffered one by one again.
    step(&p, vec![Delta::Updated(Arc::new(cm("c", "2")))]);
    eventually("the later update arrives", || rec.len() == 1).await;
    assert_eq!(rec.summary(), ["~c=1>2"]);
    assert_eq!(listener.stats().coalesced, 5);
    p.stop(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn coalesce_policy_delivers_the_delete_of_an_object_the_handler_had_seen() {
    let p = processor();
    let gate = Gate::default();
    let rec = Recorder::default();
    p.add(
        Arc::new(rec.gated(gate.clone())),
        &bounded(1, Overflow::Coalesce),
        None,
    );
    step(
        &p,
        vec![
            Delta::Added(Arc::new(cm("a", "1"))),
            Delta::Added(Arc::new(cm("b", "1"))),
        ],
    );
    step(&p, vec![Delta::Updated(Arc::new(cm("b", "2")))]);
    let a = p.store.get(&key("a")).unwrap();
    step(&p, vec![Delta::Deleted(Deleted::Object(a))]);
    gate.open();
    // `+a`, then the net changes `+b=2` and `-a`.
    eventually("everything arrives", || rec.len() == 3).await;
    let mut summary = rec.summary();
    summary[1..].sort();
    assert_eq!(summary, ["+a=1", "+b=2", "-a"]);
    assert_same_state(&replay(&rec.take()), &cache_state(&*p.store));
    p.stop(true).await;
}

#[tokio::test]
async fn coalesce_policy_delivers_a_merged_delete_before_the_object_is_added_again() {
    let p = processor();
    let gate = Gate::default();
    let rec = Recorder::default();
    p.add(
        Arc::new(rec.gated(gate.clone())),
        &bounded(1, Overflow::Coalesce),
        None,
    );
    step(&p, vec![Delta::Added(Arc::new(cm("a", "1")))]);
    // The buffer is full: the delete (with a final state the handler never saw) and the
    // re-creation are merged.
    step(
        &p,
        vec![Delta::Deleted(Deleted::Object(Arc::new(cm("a", "2"))))],
    );
    step(&p, vec![Delta::Added(Arc::new(cm("a", "3")))]);
    gate.open();
    eventually("everything arrives", || rec.len() == 3).await;
    assert_eq!(rec.summary(), ["+a=1", "-a", "+a=3"]);
    assert_same_state(&replay(&rec.take()), &cache_state(&*p.store));
    p.stop(true).await;
}

#[tokio::test]
async fn unbounded_buffer_exposes_its_pending_count() {
    let gate = Gate::default();
    let rec = Recorder::default();
    // Not started: the listener of a not-started processor buffers without a task.
    let store: Arc<dyn Indexer<Cm>> = Arc::new(ThreadSafeStore::<Cm>::new());
    let idle = Arc::new(Processor::new(store));
    let listener = idle.add(
        Arc::new(rec.gated(gate.clone())),
        &HandlerOptions::new(),
        None,
    );
    for i in 0..5 {
        step(
            &idle,
            vec![Delta::Added(Arc::new(cm(&format!("o{i}"), "1")))],
        );
    }
    assert_eq!(listener.stats().pending, 5);
    assert_eq!(rec.len(), 0);
    gate.open();
    idle.stop(true).await;
    assert_eq!(listener.stats().pending, 0, "stopping discards the buffer");
}

#[tokio::test]
async fn panicking_transform_stops_the_informer_with_an_error() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .transform(|_: Cm| panic!("transform bug on purpose"))
        .build();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        informer.run(CancellationToken::new()),
    )
    .await
    .expect("run returns");
    assert!(
        matches!(result, Err(InformerError::ReflectorPanicked(ref m)) if m.contains("on purpose"))
    );
    assert!(informer.is_stopped());
}

/// A store that panics on every batch write (as a compact cache of a type that does not
/// round-trip through serde does when it decodes what it replaces).
struct PanicsOnApply(ThreadSafeStore<Cm>);

impl informer_core::store::StoreWrapper for PanicsOnApply {
    type Object = Cm;
    fn inner(&self) -> &dyn Indexer<Cm> {
        &self.0
    }
    fn apply(
        &self,
        _batch: Vec<informer_core::StoreOp<Cm>>,
    ) -> Result<Vec<Option<Arc<Cm>>>, informer_core::StoreError> {
        panic!("the cache cannot take this on purpose")
    }
}

#[tokio::test]
async fn a_cache_that_panics_stops_the_informer_with_an_error() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .store(Arc::new(PanicsOnApply(ThreadSafeStore::new())))
        .build();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        informer.run(CancellationToken::new()),
    )
    .await
    .expect("run returns, not hangs with a frozen cache");
    assert!(
        matches!(result, Err(InformerError::CachePanicked(ref m)) if m.contains("on purpose")),
        "{result:?}"
    );
    assert!(informer.is_stopped());
}

#[tokio::test]
async fn an_empty_first_list_syncs_with_either_fifo() {
    for fifo in [FifoKind::Real, FifoKind::Delta] {
        let informer = SharedIndexInformer::builder(Arc::new(MemoryListerWatcher::<Cm>::new()))
            .fifo(fifo)
            .build();
        let reg = informer.add_handler(|_: &Notification<Cm>| {}, None);
        let running = start(&informer);
        let synced = tokio::time::timeout(Duration::from_secs(10), informer.wait_for_sync()).await;
        assert_eq!(synced, Ok(true), "{fifo:?}");
        assert!(reg.wait_synced().await, "{fifo:?}");
        running.stop().await;
    }
}

// ---------------------------------------------------------------------------------------
// The cache's resource version
// ---------------------------------------------------------------------------------------

fn rv_of(c: &Cm) -> u64 {
    c.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn store_resource_version_advances_with_every_applied_object_delete_and_bookmark() {
    let selected = |name: &str, value: &str| {
        let mut c = cm(name, value);
        c.metadata.labels = Some([("app".to_owned(), "x".to_owned())].into());
        c
    };
    let source = MemoryListerWatcher::<Cm>::new();
    source.create(selected("a", "1"));
    // The informer sees the objects labelled app=x only.
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .reflector_config(crate::reflector::ReflectorConfig {
            list_params: kube::api::ListParams::default().labels("app=x"),
            ..crate::reflector::ReflectorConfig::default()
        })
        .build();
    // Every handler hears of a change only once the store's version covers it.
    let store = informer.store();
    let behind = Arc::new(AtomicUsize::new(0));
    let (s, b) = (store.clone(), behind.clone());
    informer.add_handler(
        move |n: &Notification<Cm>| {
            let object = match n {
                Notification::Add { object, .. } | Notification::Update { new: object, .. } => {
                    object.clone()
                }
                Notification::Delete(d) => match d.object() {
                    Some(o) => o.clone(),
                    None => return,
                },
            };
            let reached: u64 = s
                .resource_version()
                .and_then(|rv| rv.parse().ok())
                .unwrap_or(0);
            if reached < rv_of(&object) {
                b.fetch_add(1, Ordering::Relaxed);
            }
        },
        None,
    );
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let at = |rv: String| {
        let informer = informer.clone();
        async move {
            eventually(&format!("the store reaches {rv}"), || {
                informer.last_store_sync_resource_version().as_deref() == Some(rv.as_str())
                    && informer.store_version().value() == rv.parse().ok()
            })
            .await
        }
    };
    at(source.resource_version()).await;
    at(source.create(selected("b", "1"))).await;
    at(source.update(selected("a", "2"))).await;
    at(source.delete(&key("b")).unwrap()).await;
    // A change the informer does not see, then a bookmark: the store reaches its version.
    let unseen = source.create(cm("c", "1"));
    source.bookmark();
    at(unseen).await;
    assert_eq!(
        behind.load(Ordering::Relaxed),
        0,
        "a handler ran ahead of the store"
    );
    running.stop().await;
}

#[tokio::test]
async fn store_resource_version_is_untracked_with_a_delta_fifo() {
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::builder(Arc::new(source.clone()))
        .fifo(FifoKind::Delta)
        .build();
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    source.create(cm("b", "1"));
    eventually("b is cached", || informer.store().len() == 2).await;
    assert_eq!(informer.store_version().get(), Reached::Untracked);
    running.stop().await;
}

#[tokio::test]
async fn a_transform_and_a_watch_error_handler_set_on_a_built_informer_before_it_starts_apply() {
    // client-go's SetTransform and SetWatchErrorHandler on an informer a factory made.
    let source = source_with(&["a"]);
    let informer = SharedIndexInformer::new(Arc::new(source.clone()));
    informer
        .set_transform(|mut c: Cm| {
            c.metadata.labels = Some([("seen".to_owned(), "yes".to_owned())].into());
            c
        })
        .unwrap();
    assert_eq!(
        informer.set_transform(|c: Cm| c),
        Err(InformerError::NotSettable(
            "transform",
            "set_transform was called before"
        ))
    );
    let errors = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen = errors.clone();
    informer
        .set_watch_error_handler(move |e| seen.lock().push(e.to_string()))
        .unwrap();
    let running = start(&informer);
    assert!(informer.wait_for_sync().await);
    let cached = informer.store().get(&key("a")).unwrap();
    assert_eq!(cached.metadata.labels.as_ref().unwrap()["seen"], "yes");
    assert!(matches!(
        informer.set_transform(|c: Cm| c),
        Err(InformerError::NotSettable(
            "transform",
            "the informer has already started"
        ))
    ));
    assert!(informer.set_watch_error_handler(|_| {}).is_err());
    source.compact();
    source.send_error_event(
        kube::core::Status::failure("too old resource version", "Expired").with_code(410),
    );
    eventually("the handler saw the 410", || !errors.lock().is_empty()).await;
    running.stop().await;
}
