//! Unit tests of the controller: runner rules, builder wiring, filters, priorities, sharding.
//! Sources are `MemoryListerWatcher`s; timing rules run under paused Tokio time.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer_core::queue::{PRIORITY_LOW, PRIORITY_NORMAL};
use informer_core::{Deleted, Handler, Notification, ObjectKey, PriorityQueue, ThreadSafeStore};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

use super::enqueue::{EnqueueHandler, Mapping};
use super::*;
use crate::factory::{InformerFactory, InformerHandle, InformerParams};
use crate::shard::shard_of;
use informer_testing::MemoryListerWatcher;

const MS: Duration = Duration::from_millis(1);

fn cm(ns: &str, name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some(ns.into());
    c
}

fn key(ns: &str, name: &str) -> ObjectKey {
    ObjectKey::new(Some(ns), name)
}

fn owned_secret(ns: &str, name: &str, owner: &str, controller: bool) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some(ns.into());
    s.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.into(),
        uid: format!("uid-{owner}"),
        controller: Some(controller),
        ..Default::default()
    }]);
    s
}

/// A factory without a client whose ConfigMap (and optionally Secret) informers come from
/// in-memory sources.
struct Harness {
    factory: InformerFactory,
    configmaps: MemoryListerWatcher<ConfigMap>,
    secrets: MemoryListerWatcher<Secret>,
    _registered: (InformerHandle<ConfigMap>, InformerHandle<Secret>),
}

impl Harness {
    fn new() -> Self {
        let factory = InformerFactory::without_client();
        let configmaps = MemoryListerWatcher::<ConfigMap>::new();
        let secrets = MemoryListerWatcher::<Secret>::new();
        let a = factory.informer_from(InformerParams::all(), || Arc::new(configmaps.clone()));
        let b = factory.informer_from(InformerParams::all(), || Arc::new(secrets.clone()));
        Self {
            factory,
            configmaps,
            secrets,
            _registered: (a, b),
        }
    }

    fn builder(&self) -> ControllerBuilder<ConfigMap> {
        Controller::<ConfigMap>::builder(&self.factory)
    }

    fn create(&self, ns: &str, name: &str) {
        self.configmaps.create(cm(ns, name));
    }
}

/// One reconcile as a test reconciler saw it.
#[derive(Debug, Clone)]
struct Call {
    key: ObjectKey,
    at: Instant,
    obj: Option<Arc<ConfigMap>>,
}

/// A reconciler that reports each call and then answers `Done`.
fn reporting(tx: UnboundedSender<Call>) -> impl KeyReconciler<ConfigMap> {
    reconciler_fn(move |key: ObjectKey, obj: Option<Arc<ConfigMap>>| {
        let _ = tx.send(Call {
            key,
            at: Instant::now(),
            obj,
        });
        async { Ok(Action::Done) }
    })
}

async fn next(rx: &mut UnboundedReceiver<Call>) -> Call {
    timeout(Duration::from_secs(3600), rx.recv())
        .await
        .expect("a reconcile within the hour")
        .expect("the reconciler is alive")
}

/// Lets every ready task run without moving paused time much.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn spawn_run<K: ControllerResource>(
    controller: Controller<K>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    (cancel, run)
}

/// Sets `flag` when dropped (to see a reconcile future dropped midway).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------- runner: outcomes

#[tokio::test(start_paused = true)]
async fn reconcile_errors_back_off_exponentially_and_success_resets_it() {
    let h = Harness::new();
    h.create("ns", "a");
    // Fails four times, succeeds, then (queued again) fails twice and succeeds.
    let script = [false, false, false, false, true, false, false, true];
    let attempts = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            let ok = script.get(n).copied().unwrap_or(true);
            let _ = tx.send((Instant::now(), ok));
            async move {
                if ok {
                    Ok(Action::Done)
                } else {
                    Err(ReconcileError::transient("boom"))
                }
            }
        }))
        .unwrap();
    let queue = controller.queue();
    let stats_of = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);

    let mut times = Vec::new();
    for _ in 0..5 {
        times.push(
            timeout(Duration::from_secs(60), rx.recv())
                .await
                .unwrap()
                .unwrap()
                .0,
        );
    }
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    // client-go's default controller limiter: 5 ms doubling per failure.
    assert_eq!(gaps, [5 * MS, 10 * MS, 20 * MS, 40 * MS]);
    settle().await;
    assert_eq!(
        queue.num_requeues(&key("ns", "a")),
        0,
        "success forgot the backoff"
    );

    sleep(Duration::from_secs(10)).await;
    let start = Instant::now();
    queue.add(key("ns", "a"));
    let mut again = Vec::new();
    for _ in 0..3 {
        again.push(
            timeout(Duration::from_secs(60), rx.recv())
                .await
                .unwrap()
                .unwrap()
                .0
                - start,
        );
    }
    assert_eq!(
        again,
        [Duration::ZERO, 5 * MS, 15 * MS],
        "the backoff starts over at 5 ms"
    );
    settle().await;
    let stats = stats_of.stats();
    assert_eq!((stats.errors, stats.successes, stats.retries), (6, 2, 6));
    cancel.cancel();
    run.await.unwrap();
}

#[test]
fn a_reconcile_that_never_waits_and_requeues_itself_leaves_the_thread_to_other_tasks() {
    // Every key is ready again as soon as it is done and the reconcile never waits: the
    // worker must still yield, or on a one-thread runtime nothing else runs again (the
    // test's own task, timers, the cancellation).
    let stopped = crate::test_support::on_one_thread(
        "the test's task ran again while the worker reconciled",
        || async move {
            let h = Harness::new();
            h.create("ns", "a");
            let calls = Arc::new(AtomicUsize::new(0));
            let counter = calls.clone();
            let queue_slot: Arc<Mutex<Option<Arc<dyn informer_core::Queue<ObjectKey>>>>> =
                Arc::default();
            let queue_of = queue_slot.clone();
            let controller = h
                .builder()
                .build(reconciler_fn(
                    move |key: ObjectKey, _obj: Option<Arc<ConfigMap>>| {
                        counter.fetch_add(1, Ordering::Relaxed);
                        if let Some(queue) = &*queue_of.lock().unwrap() {
                            queue.add(key);
                        }
                        async { Ok(Action::Done) }
                    },
                ))
                .unwrap();
            *queue_slot.lock().unwrap() = Some(controller.queue());
            let (cancel, run) = spawn_run(controller);
            // This task gets the thread back while the worker spins through its key.
            while calls.load(Ordering::Relaxed) < 10_000 {
                sleep(MS).await;
            }
            cancel.cancel();
            timeout(Duration::from_secs(10), run).await.is_ok()
        },
    );
    assert!(stopped, "the controller stopped once cancelled");
}

#[tokio::test(start_paused = true)]
async fn requeue_after_reconciles_the_key_again_after_the_delay() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let _ = tx.send(Instant::now());
            async { Ok(Action::requeue_after(Duration::from_secs(30))) }
        }))
        .unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    let first = rx.recv().await.unwrap();
    let second = rx.recv().await.unwrap();
    let third = rx.recv().await.unwrap();
    assert_eq!(second - first, Duration::from_secs(30));
    assert_eq!(third - second, Duration::from_secs(30));
    assert_eq!(
        state.queue.num_requeues(&key("ns", "a")),
        0,
        "a requeue is not a failure"
    );
    assert!(state.stats().requeues_after >= 2);
    cancel.cancel();
    run.await.unwrap();
}

/// A reconciler answering `script[n]` on its n-th call (`Done` past the end) and sending the
/// time of each call.
fn scripted(script: Vec<Action>, tx: UnboundedSender<Instant>) -> impl KeyReconciler<ConfigMap> {
    let calls = AtomicUsize::new(0);
    reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        let action = script.get(n).copied().unwrap_or(Action::Done);
        let _ = tx.send(Instant::now());
        async move { Ok(action) }
    })
}

async fn times(rx: &mut UnboundedReceiver<Instant>, n: usize) -> Vec<Instant> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(
            timeout(Duration::from_secs(3600), rx.recv())
                .await
                .expect("a reconcile within the hour")
                .expect("the reconciler is alive"),
        );
    }
    out
}

fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

#[tokio::test(start_paused = true)]
async fn requeue_goes_through_the_rate_limiter_which_it_does_not_forget() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let script = vec![Action::requeue_rate_limited(); 4];
    let controller = h.builder().build(scripted(script, tx)).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);

    let seen = times(&mut rx, 4).await;
    // controller-runtime's `Result{Requeue: true}`: `AddRateLimited` without `Forget`, so the
    // key's backoff grows as for failures (client-go's default limiter: 5 ms doubling).
    assert_eq!(gaps(&seen), [5 * MS, 10 * MS, 20 * MS]);
    settle().await;
    assert_eq!(
        state.queue.num_requeues(&key("ns", "a")),
        4,
        "the fourth requeue is waiting with the backoff of four"
    );
    let stats = state.stats();
    assert_eq!(
        (stats.requeues, stats.errors, stats.successes, stats.retries),
        (4, 0, 0, 4),
        "requeues are neither errors nor successes; each is a workqueue retry"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn done_after_requeues_forgets_the_backoff() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let script = vec![
        Action::Requeue,
        Action::Requeue,
        Action::Requeue,
        Action::Done,
    ];
    let controller = h.builder().build(scripted(script.clone(), tx)).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);

    times(&mut rx, 4).await;
    settle().await;
    assert_eq!(
        state.queue.num_requeues(&key("ns", "a")),
        0,
        "Done forgot it"
    );
    let stats = state.stats();
    assert_eq!((stats.requeues, stats.successes), (3, 1));
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn requeue_after_forgets_the_backoff_built_by_requeues() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let script = vec![
        Action::Requeue,
        Action::Requeue,
        Action::requeue_after(Duration::from_secs(30)),
        Action::Requeue,
    ];
    let controller = h.builder().build(scripted(script, tx)).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);

    let seen = times(&mut rx, 5).await;
    assert_eq!(
        gaps(&seen),
        [5 * MS, 10 * MS, Duration::from_secs(30), 5 * MS],
        "after RequeueAfter the backoff starts over at 5 ms"
    );
    settle().await;
    let stats = state.stats();
    assert_eq!(
        (stats.requeues, stats.requeues_after, stats.successes),
        (3, 1, 1)
    );
    assert_eq!(state.queue.num_requeues(&key("ns", "a")), 0);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn terminal_error_is_counted_and_not_retried() {
    let h = Harness::new();
    h.create("ns", "a");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let controller = h
        .builder()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Err(ReconcileError::terminal("invalid spec")) }
        }))
        .unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never retried");
    let stats = state.stats();
    assert_eq!(
        (stats.errors, stats.terminal_errors, stats.retries),
        (1, 1, 0)
    );
    assert_eq!(state.queue.num_requeues(&key("ns", "a")), 0);
    // A change of the object reconciles it again.
    let mut changed = cm("ns", "a");
    changed.data = Some([("k".to_string(), "v".to_string())].into());
    h.configmaps.update(changed);
    sleep(Duration::from_secs(1)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    cancel.cancel();
    run.await.unwrap();
}

/// A reconciler failing every time with `error()`, its error policy answering `decided` and
/// reporting the time of each reconcile and what the policy saw.
fn failing_with_policy(
    error: fn() -> ReconcileError,
    decided: Action,
    tx: UnboundedSender<Instant>,
    seen: Arc<std::sync::Mutex<Vec<(ObjectKey, bool, String)>>>,
) -> impl KeyReconciler<ConfigMap> {
    reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
        let _ = tx.send(Instant::now());
        async move { Err::<Action, _>(error()) }
    })
    .error_policy(move |key, obj: Option<Arc<ConfigMap>>, error| {
        seen.lock()
            .unwrap()
            .push((key.clone(), obj.is_some(), error.to_string()));
        decided
    })
}

#[tokio::test(start_paused = true)]
async fn an_error_policy_sees_the_key_the_object_and_the_error() {
    let h = Harness::new();
    h.create("ns", "a");
    let seen = Arc::default();
    let (tx, mut rx) = unbounded_channel();
    let failing = failing_with_policy(
        || ReconcileError::transient("boom"),
        Action::Done,
        tx,
        Arc::clone(&seen),
    );
    let controller = h.builder().build(failing).unwrap();
    let (cancel, run) = spawn_run(controller);
    times(&mut rx, 1).await;
    settle().await;
    assert_eq!(
        *seen.lock().unwrap(),
        [(key("ns", "a"), true, "boom".to_string())]
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_error_policy_requeue_after_retries_after_its_delay_instead_of_the_backoff() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let failing = failing_with_policy(
        || ReconcileError::transient("boom"),
        Action::requeue_after(Duration::from_secs(5)),
        tx,
        Arc::default(),
    );
    let controller = h.builder().build(failing).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    let t = times(&mut rx, 4).await;
    assert_eq!(
        gaps(&t),
        [Duration::from_secs(5); 3],
        "fixed, not 5 ms doubling"
    );
    settle().await;
    let stats = state.stats();
    assert_eq!(
        (stats.errors, stats.terminal_errors),
        (4, 0),
        "each counted"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_error_policy_done_stops_retrying_a_transient_error() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let failing = failing_with_policy(
        || ReconcileError::transient("boom"),
        Action::Done,
        tx,
        Arc::default(),
    );
    let controller = h.builder().build(failing).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    times(&mut rx, 1).await;
    sleep(Duration::from_secs(3600)).await;
    assert!(rx.try_recv().is_err(), "never retried");
    let stats = state.stats();
    assert_eq!((stats.errors, stats.retries), (1, 0));
    assert_eq!(
        state.queue.num_requeues(&key("ns", "a")),
        0,
        "backoff forgotten"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_error_policy_may_retry_a_terminal_error_with_backoff() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let failing = failing_with_policy(
        || ReconcileError::terminal("invalid"),
        Action::Requeue,
        tx,
        Arc::default(),
    );
    let controller = h.builder().build(failing).unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    let t = times(&mut rx, 3).await;
    assert_eq!(gaps(&t), [5 * MS, 10 * MS]);
    let stats = state.stats();
    assert!(stats.terminal_errors >= 2, "still counted as terminal");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_error_policy_runs_within_the_reconcile_timeout() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    struct SlowPolicy(UnboundedSender<Instant>);
    #[async_trait::async_trait]
    impl KeyReconciler<ConfigMap> for SlowPolicy {
        async fn reconcile(
            &self,
            _key: &ObjectKey,
            _obj: Option<Arc<ConfigMap>>,
        ) -> Result<Action, ReconcileError> {
            let _ = self.0.send(Instant::now());
            Err(ReconcileError::transient("boom"))
        }
        async fn on_error(
            &self,
            _key: &ObjectKey,
            _obj: Option<Arc<ConfigMap>>,
            _error: &ReconcileError,
        ) -> Action {
            sleep(Duration::from_secs(3600)).await;
            Action::Done
        }
    }
    let controller = h
        .builder()
        .timeout(Duration::from_secs(1))
        .build(SlowPolicy(tx))
        .unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    let t = times(&mut rx, 2).await;
    assert!(
        gaps(&t)[0] < Duration::from_secs(2),
        "timed out, then retried"
    );
    assert!(state.stats().timeouts >= 1);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn panic_in_reconcile_is_caught_counted_and_retried() {
    let h = Harness::new();
    h.create("ns", "a");
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .build(reconciler_fn(move |key, _obj: Option<Arc<ConfigMap>>| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let tx = tx.clone();
            async move {
                if n == 0 {
                    panic!("reconcile of {key} blew up");
                }
                let _ = tx.send(n);
                Ok(Action::Done)
            }
        }))
        .unwrap();
    let state = controller.runner.state.clone();
    let (cancel, run) = spawn_run(controller);
    assert_eq!(
        timeout(Duration::from_secs(60), rx.recv()).await.unwrap(),
        Some(1)
    );
    settle().await;
    let stats = state.stats();
    assert_eq!(
        (stats.panics, stats.errors, stats.successes, stats.retries),
        (1, 1, 1, 1)
    );
    assert_eq!(stats.active_workers, 0);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn reconcile_past_the_timeout_is_dropped_and_retried() {
    let h = Harness::new();
    h.create("ns", "a");
    let calls = Arc::new(AtomicUsize::new(0));
    let dropped = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = unbounded_channel();
    let (counter, flag) = (calls.clone(), dropped.clone());
    let controller = h
        .builder()
        .timeout(Duration::from_secs(1))
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let guard = SetOnDrop(flag.clone());
            let tx = tx.clone();
            async move {
                if n == 0 {
                    sleep(Duration::from_secs(3600)).await;
                }
                drop(guard);
                let _ = tx.send(Instant::now());
                Ok(Action::Done)
            }
        }))
        .unwrap();
    let state = controller.runner.state.clone();
    let start = Instant::now();
    let (cancel, run) = spawn_run(controller);
    let second = timeout(Duration::from_secs(60), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(dropped.load(Ordering::SeqCst));
    assert_eq!(
        second - start,
        Duration::from_secs(1) + 5 * MS,
        "timeout, then backoff"
    );
    let stats = state.stats();
    assert_eq!((stats.timeouts, stats.errors), (1, 1));
    cancel.cancel();
    run.await.unwrap();
}

// ---------------------------------------------------------------- runner: concurrency

#[tokio::test(start_paused = true)]
async fn same_key_is_never_reconciled_by_two_workers_at_once() {
    let h = Harness::new();
    for name in ["a", "b", "c"] {
        h.create("ns", name);
    }
    let active: Arc<Mutex<HashMap<ObjectKey, usize>>> = Default::default();
    let max_per_key = Arc::new(AtomicUsize::new(0));
    let max_total = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let (a, mpk, mt, c) = (
        active.clone(),
        max_per_key.clone(),
        max_total.clone(),
        calls.clone(),
    );
    let controller = h
        .builder()
        .workers(4)
        .build(reconciler_fn(
            move |key: ObjectKey, _obj: Option<Arc<ConfigMap>>| {
                let (active, mpk, mt, c) = (a.clone(), mpk.clone(), mt.clone(), c.clone());
                async move {
                    c.fetch_add(1, Ordering::SeqCst);
                    {
                        let mut map = active.lock().unwrap();
                        let n = map.entry(key.clone()).or_default();
                        *n += 1;
                        mpk.fetch_max(*n, Ordering::SeqCst);
                        mt.fetch_max(map.values().sum(), Ordering::SeqCst);
                    }
                    sleep(10 * MS).await;
                    *active.lock().unwrap().get_mut(&key).unwrap() -= 1;
                    Ok(Action::Done)
                }
            },
        ))
        .unwrap();
    let queue = controller.queue();
    let (cancel, run) = spawn_run(controller);
    sleep(MS).await;
    for i in 0..200 {
        queue.add(key("ns", ["a", "b", "c"][i % 3]));
        sleep(MS).await;
    }
    sleep(Duration::from_secs(1)).await;
    assert_eq!(max_per_key.load(Ordering::SeqCst), 1, "one worker per key");
    assert!(
        max_total.load(Ordering::SeqCst) >= 2,
        "workers did run in parallel"
    );
    assert!(calls.load(Ordering::SeqCst) >= 20);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn slow_reconcile_of_one_key_never_blocks_other_keys() {
    let h = Harness::new();
    h.create("ns", "slow");
    for i in 0..10 {
        h.create("ns", &format!("fast-{i}"));
    }
    let release = Arc::new(Notify::new());
    let slow_calls = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = unbounded_channel();
    let (r, s) = (release.clone(), slow_calls.clone());
    let controller = h
        .builder()
        .workers(2)
        .build(reconciler_fn(
            move |key: ObjectKey, _obj: Option<Arc<ConfigMap>>| {
                let (release, slow, tx) = (r.clone(), s.clone(), tx.clone());
                async move {
                    if key.name() == "slow" {
                        if slow.fetch_add(1, Ordering::SeqCst) == 0 {
                            release.notified().await;
                        }
                    } else {
                        sleep(MS).await;
                    }
                    let _ = tx.send(key);
                    Ok(Action::Done)
                }
            },
        ))
        .unwrap();
    let queue = controller.queue();
    let (cancel, run) = spawn_run(controller);
    let mut fast = Vec::new();
    for _ in 0..10 {
        fast.push(
            timeout(Duration::from_secs(60), rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert!(fast.iter().all(|k| k.name().starts_with("fast-")));
    assert_eq!(
        slow_calls.load(Ordering::SeqCst),
        1,
        "the slow key is still in flight"
    );
    // Queued again while in flight: not handed to the idle worker.
    queue.add(key("ns", "slow"));
    sleep(Duration::from_secs(60)).await;
    assert_eq!(slow_calls.load(Ordering::SeqCst), 1);
    release.notify_one();
    assert_eq!(rx.recv().await.unwrap(), key("ns", "slow"));
    assert_eq!(
        rx.recv().await.unwrap(),
        key("ns", "slow"),
        "re-added once, after done"
    );
    assert_eq!(slow_calls.load(Ordering::SeqCst), 2);
    cancel.cancel();
    run.await.unwrap();
}

// ---------------------------------------------------------------- runner: shutdown

#[tokio::test(start_paused = true)]
async fn shutdown_with_work_in_flight_finishes_it() {
    let h = Harness::new();
    for name in ["a", "b", "c"] {
        h.create("ns", name);
    }
    let finished = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = unbounded_channel();
    let f = finished.clone();
    let controller = h
        .builder()
        .build(reconciler_fn(
            move |key: ObjectKey, _obj: Option<Arc<ConfigMap>>| {
                let (f, tx) = (f.clone(), tx.clone());
                async move {
                    let _ = tx.send(key);
                    sleep(Duration::from_secs(5)).await;
                    f.fetch_add(1, Ordering::SeqCst);
                    Ok(Action::Done)
                }
            },
        ))
        .unwrap();
    let queue = controller.queue();
    let (cancel, run) = spawn_run(controller);
    rx.recv().await.unwrap();
    let stop_at = Instant::now();
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the reconcile in flight finished"
    );
    assert_eq!(Instant::now() - stop_at, Duration::from_secs(5));
    assert!(rx.try_recv().is_err(), "no key taken after the stop");
    assert_eq!(
        queue.len(),
        2,
        "the other keys remain queued (and were logged)"
    );
    assert!(queue.is_shutting_down());
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_reconciles_still_running_at_the_deadline() {
    let h = Harness::new();
    h.create("ns", "a");
    let dropped = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = unbounded_channel();
    let flag = dropped.clone();
    let controller = h
        .builder()
        .shutdown_timeout(Duration::from_secs(2))
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let guard = SetOnDrop(flag.clone());
            let tx = tx.clone();
            async move {
                let _ = tx.send(());
                sleep(Duration::from_secs(3600)).await;
                drop(guard);
                Ok(Action::Done)
            }
        }))
        .unwrap();
    let (cancel, run) = spawn_run(controller);
    rx.recv().await.unwrap();
    let stop_at = Instant::now();
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(Instant::now() - stop_at, Duration::from_secs(2));
    assert!(dropped.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn hard_stop_drops_reconciles_and_keeps_their_keys_queued() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(());
                std::future::pending::<()>().await;
                Ok(Action::Done)
            }
        }))
        .unwrap();
    controller.sources.start();
    assert!(
        controller
            .sources
            .wait_synced("test", &CancellationToken::new())
            .await
    );
    let runner = controller.runner.clone();
    let (graceful, hard) = (CancellationToken::new(), CancellationToken::new());
    let task = tokio::spawn({
        let (runner, graceful, hard) = (runner.clone(), graceful.clone(), hard.clone());
        async move { runner.run_workers(&graceful, &hard, None).await }
    });
    rx.recv().await.unwrap();
    let stop_at = Instant::now();
    hard.cancel();
    task.await.unwrap();
    assert_eq!(Instant::now(), stop_at, "dropped at once");
    assert_eq!(
        runner.state.queue.len(),
        1,
        "its key is queued for the next term"
    );
    assert_eq!(runner.state.stats().active_workers, 0);
    // A new term picks it up.
    let hard = CancellationToken::new();
    let task = tokio::spawn(async move { runner.run_workers(&graceful, &hard, None).await });
    rx.recv().await.unwrap();
    task.abort();
    controller.shutdown().await;
}

// ---------------------------------------------------------------- runner: caches

#[tokio::test(start_paused = true)]
async fn workers_start_only_after_every_cache_synced() {
    let h = Harness::new();
    h.create("ns", "a");
    h.secrets
        .fail_next_list(informer_core::ListWatchError::status(
            500,
            "InternalError",
            "try again",
        ));
    let secrets = h.secrets.clone();
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .owns::<Secret>()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let _ = tx.send(secrets.list_calls());
            async { Ok(Action::Done) }
        }))
        .unwrap();
    let (cancel, run) = spawn_run(controller);
    let secret_lists = timeout(Duration::from_secs(60), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        secret_lists >= 2,
        "the secrets cache had synced (its first list failed)"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn reconcile_gets_the_cached_object_or_none_once_deleted() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let controller = h.builder().build(reporting(tx)).unwrap();
    let (cancel, run) = spawn_run(controller);
    let call = next(&mut rx).await;
    assert_eq!(call.key, key("ns", "a"));
    assert_eq!(call.obj.unwrap().meta().name.as_deref(), Some("a"));
    h.configmaps.delete(&key("ns", "a"));
    let call = next(&mut rx).await;
    assert_eq!(call.key, key("ns", "a"));
    assert!(call.obj.is_none());
    cancel.cancel();
    run.await.unwrap();
}

/// A controller of `h`'s objects with a one-minute resync and `filter` on its primary,
/// running: its reconciles, and how to stop it.
fn run_with_resync(
    h: &Harness,
    filter: Option<Filter<ConfigMap>>,
) -> (
    UnboundedReceiver<Call>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = unbounded_channel();
    let mut builder = h.builder().resync(Duration::from_secs(60));
    if let Some(filter) = filter {
        builder = builder.filter(filter);
    }
    let (cancel, run) = spawn_run(builder.build(reporting(tx)).unwrap());
    (rx, cancel, run)
}

fn assert_about_a_minute(waited: Duration) {
    assert!(
        waited >= Duration::from_secs(59) && waited <= Duration::from_secs(61),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn resync_queues_every_cached_key_again() {
    let h = Harness::new();
    h.create("ns", "a");
    h.create("ns", "b");
    let (mut rx, cancel, run) = run_with_resync(&h, None);
    let first = [next(&mut rx).await, next(&mut rx).await];
    let again = [next(&mut rx).await, next(&mut rx).await];
    let mut keys: Vec<String> = again.iter().map(|c| c.key.to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["ns/a", "ns/b"]);
    assert_about_a_minute(again[0].at - first[1].at);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn resync_passes_the_builtin_change_filters_of_the_primary() {
    // java-operator-sdk's generation-aware processing with a maxReconciliationInterval:
    // spec changes only, and every object every period.
    let h = Harness::new();
    h.create("ns", "a");
    let changes =
        Filter::generation_changed().and(Filter::labels_changed().or(Filter::generation_changed()));
    let (mut rx, cancel, run) = run_with_resync(&h, Some(changes));
    let first = next(&mut rx).await;
    let again = next(&mut rx).await;
    assert_eq!(again.key, key("ns", "a"));
    assert_about_a_minute(again.at - first.at);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_filter_of_ones_own_is_asked_about_resyncs() {
    let h = Harness::new();
    h.create("ns", "a");
    let no_resyncs = Filter::new(|n: &Notification<ConfigMap>| !n.is_resync());
    let (mut rx, cancel, run) = run_with_resync(&h, Some(no_resyncs));
    next(&mut rx).await;
    tokio::time::sleep(Duration::from_secs(200)).await;
    assert!(rx.try_recv().is_err(), "its filter drops resyncs");
    cancel.cancel();
    run.await.unwrap();
}

// ---------------------------------------------------------------- enqueueing: priorities

#[test]
fn initial_list_and_resyncs_are_queued_at_low_priority() {
    let queue = Arc::new(PriorityQueue::<ObjectKey>::new());
    let handler = EnqueueHandler::<ConfigMap>::new(queue.clone(), Mapping::Own, Vec::new());
    let mut a = cm("ns", "a");
    a.metadata.resource_version = Some("1".into());
    let a = Arc::new(a);
    let mut a2 = (*a).clone();
    a2.metadata.resource_version = Some("2".into());
    let a2 = Arc::new(a2);
    let a_relisted = Arc::new((*a).clone());

    let cases: Vec<(Notification<ConfigMap>, i32)> = vec![
        (
            Notification::Add {
                object: a.clone(),
                is_initial_list: true,
            },
            PRIORITY_LOW,
        ),
        (
            Notification::Add {
                object: a.clone(),
                is_initial_list: false,
            },
            PRIORITY_NORMAL,
        ),
        (
            Notification::Update {
                old: a.clone(),
                new: a.clone(),
            },
            PRIORITY_LOW,
        ),
        (
            Notification::Update {
                old: a.clone(),
                new: a_relisted,
            },
            PRIORITY_LOW,
        ),
        (
            Notification::Update {
                old: a.clone(),
                new: a2,
            },
            PRIORITY_NORMAL,
        ),
        (
            Notification::Delete(Deleted::Object(a.clone())),
            PRIORITY_NORMAL,
        ),
        (
            Notification::Delete(Deleted::FinalStateUnknown {
                key: key("ns", "a"),
                last_known: None,
            }),
            PRIORITY_NORMAL,
        ),
    ];
    for (n, (notification, priority)) in cases.into_iter().enumerate() {
        handler.notify(&notification);
        assert!(
            queue.try_get_with_priority().is_none(),
            "queued before a flush"
        );
        handler.flush();
        let (got, got_priority) = queue.try_get_with_priority().expect("queued");
        assert_eq!(
            (got, got_priority),
            (key("ns", "a"), priority),
            "case {n}: {notification:?}"
        );
        queue.done(&key("ns", "a"));
    }
}

#[tokio::test(start_paused = true)]
async fn fresh_changes_jump_ahead_of_the_initial_list_with_the_priority_queue() {
    let h = Harness::new();
    for i in 0..20 {
        h.create("ns", &format!("old-{i:02}"));
    }
    let release = Arc::new(Notify::new());
    let (tx, mut rx) = unbounded_channel();
    let r = release.clone();
    let controller = h
        .builder()
        .priority_queue()
        .build(reconciler_fn(
            move |key: ObjectKey, _obj: Option<Arc<ConfigMap>>| {
                let (release, tx) = (r.clone(), tx.clone());
                async move {
                    let first = tx.send(key.clone()).is_ok() && key.name() == "old-00";
                    if first {
                        release.notified().await;
                    }
                    Ok(Action::Done)
                }
            },
        ))
        .unwrap();
    let (cancel, run) = spawn_run(controller);
    assert_eq!(next_key(&mut rx).await.name(), "old-00");
    h.create("ns", "fresh");
    sleep(Duration::from_secs(1)).await;
    release.notify_one();
    assert_eq!(
        next_key(&mut rx).await.name(),
        "fresh",
        "a real change goes first"
    );
    assert_eq!(next_key(&mut rx).await.name(), "old-01");
    cancel.cancel();
    run.await.unwrap();
}

async fn next_key(rx: &mut UnboundedReceiver<ObjectKey>) -> ObjectKey {
    timeout(Duration::from_secs(60), rx.recv())
        .await
        .unwrap()
        .unwrap()
}

// ---------------------------------------------------------------- filters

#[test]
fn builtin_filters_pass_adds_and_deletes() {
    let obj = Arc::new(cm("ns", "a"));
    let add = Notification::Add {
        object: obj.clone(),
        is_initial_list: false,
    };
    let delete = Notification::Delete(Deleted::Object(obj.clone()));
    let resync = Notification::Update {
        old: obj.clone(),
        new: obj,
    };
    for filter in [
        Filter::<ConfigMap>::generation_changed(),
        Filter::labels_changed(),
        Filter::annotations_changed(),
        Filter::resource_version_changed(),
    ] {
        assert!(filter.matches(&add), "{filter:?}");
        assert!(filter.matches(&delete), "{filter:?}");
        assert!(
            !filter.matches(&resync),
            "{filter:?}: a resync is no change"
        );
        assert!(
            filter.admits(&resync, true),
            "{filter:?} lets a resync through"
        );
    }
}

#[test]
fn filters_combine_with_and_and_or() {
    let yes = || Filter::<ConfigMap>::new(|_| true);
    let no = || Filter::<ConfigMap>::new(|_| false);
    let n = Notification::Add {
        object: Arc::new(cm("ns", "a")),
        is_initial_list: false,
    };
    assert!(yes().and(yes()).matches(&n));
    assert!(!yes().and(no()).matches(&n));
    assert!(no().or(yes()).matches(&n));
    assert!(!no().or(no()).matches(&n));
}

#[test]
fn missing_and_empty_label_maps_are_the_same() {
    let old = Arc::new(cm("ns", "a"));
    let mut new = cm("ns", "a");
    new.metadata.labels = Some(BTreeMap::new());
    new.metadata.resource_version = Some("2".into());
    let n = Notification::Update {
        old,
        new: Arc::new(new),
    };
    assert!(!Filter::labels_changed().matches(&n));
    assert!(!Filter::annotations_changed().matches(&n));
    assert!(Filter::resource_version_changed().matches(&n));
}

/// A relist reports an object deleted and created again under its name as one update of
/// two `uid`s: an arrival, which the built-in filters pass however alike the two are.
#[test]
fn an_object_created_again_under_its_name_passes_the_built_in_filters() {
    let mut old = cm("ns", "a");
    old.metadata.uid = Some("first".into());
    old.metadata.generation = Some(1);
    let mut new = old.clone();
    new.metadata.uid = Some("second".into());
    new.metadata.resource_version = Some("9".into());
    let n = Notification::Update {
        old: Arc::new(old),
        new: Arc::new(new),
    };
    assert!(Filter::generation_changed().matches(&n));
    assert!(Filter::labels_changed().matches(&n));
    assert!(Filter::annotations_changed().matches(&n));
}

#[tokio::test(start_paused = true)]
async fn filters_gate_enqueueing_but_not_the_cache() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .filter(Filter::labels_changed())
        .build(reporting(tx))
        .unwrap();
    let lister = controller.lister();
    let (cancel, run) = spawn_run(controller);
    next(&mut rx).await; // the add passes
    let mut data_only = cm("ns", "a");
    data_only.data = Some([("k".to_string(), "v".to_string())].into());
    h.configmaps.update(data_only.clone());
    sleep(Duration::from_secs(5)).await;
    assert!(rx.try_recv().is_err(), "a data-only change is filtered out");
    let cached = lister.get(&key("ns", "a")).unwrap();
    assert_eq!(
        cached.data.as_ref().unwrap()["k"],
        "v",
        "the cache has it all the same"
    );
    let mut relabelled = data_only;
    relabelled.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    h.configmaps.update(relabelled);
    assert_eq!(next(&mut rx).await.key, key("ns", "a"));
    cancel.cancel();
    run.await.unwrap();
}

// ---------------------------------------------------------------- owns / watches

#[tokio::test(start_paused = true)]
async fn owned_child_change_reconciles_its_controlling_owner() {
    let h = Harness::new();
    h.create("ns", "parent");
    h.create("ns", "other");
    let (tx, mut rx) = unbounded_channel();
    let controller = h.builder().owns::<Secret>().build(reporting(tx)).unwrap();
    assert!(controller.lister_of::<Secret>().is_some());
    assert!(
        controller
            .lister_of::<k8s_openapi::api::core::v1::Pod>()
            .is_none()
    );
    let (cancel, run) = spawn_run(controller);
    let mut initial = vec![next(&mut rx).await.key, next(&mut rx).await.key];
    initial.sort();
    assert_eq!(initial, [key("ns", "other"), key("ns", "parent")]);

    h.secrets
        .create(owned_secret("ns", "child", "parent", true));
    assert_eq!(next(&mut rx).await.key, key("ns", "parent"));
    h.secrets
        .create(owned_secret("ns", "stray", "parent", false));
    sleep(Duration::from_secs(5)).await;
    assert!(
        rx.try_recv().is_err(),
        "an owner reference without controller=true maps to nothing"
    );

    // Moving the child to another owner reconciles both.
    h.secrets.update(owned_secret("ns", "child", "other", true));
    let mut both = vec![next(&mut rx).await.key, next(&mut rx).await.key];
    both.sort();
    assert_eq!(both, [key("ns", "other"), key("ns", "parent")]);
    h.secrets.delete(&key("ns", "child"));
    assert_eq!(
        next(&mut rx).await.key,
        key("ns", "other"),
        "a deleted child reconciles its owner"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn watched_object_change_reconciles_the_mapped_keys() {
    let h = Harness::new();
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .watches::<Secret>(|s| {
            s.string_data
                .as_ref()
                .and_then(|d| d.get("target"))
                .map(|t| vec![ObjectKey::new(s.metadata.namespace.as_deref(), t)])
                .unwrap_or_default()
        })
        .build(reporting(tx))
        .unwrap();
    let (cancel, run) = spawn_run(controller);
    let secret = |target: &str| {
        let mut s = Secret::default();
        s.metadata.name = Some("pointer".into());
        s.metadata.namespace = Some("ns".into());
        s.string_data = Some([("target".to_string(), target.to_string())].into());
        s
    };
    h.secrets.create(secret("x"));
    let call = next(&mut rx).await;
    assert_eq!(call.key, key("ns", "x"));
    assert!(call.obj.is_none(), "the mapped key need not exist");
    h.secrets.update(secret("y"));
    let mut both = vec![next(&mut rx).await.key, next(&mut rx).await.key];
    both.sort();
    assert_eq!(
        both,
        [key("ns", "x"), key("ns", "y")],
        "old and new mappings"
    );
    cancel.cancel();
    run.await.unwrap();
}

// ---------------------------------------------------------------- builder

#[tokio::test(start_paused = true)]
async fn controllers_on_one_factory_share_one_watch() {
    let h = Harness::new();
    h.create("ns", "a");
    let (tx1, mut rx1) = unbounded_channel();
    let (tx2, mut rx2) = unbounded_channel();
    let first = h.builder().name("first").build(reporting(tx1)).unwrap();
    let second = h
        .builder()
        .name("second")
        .owns::<Secret>()
        .build(reporting(tx2))
        .unwrap();
    let (c1, r1) = spawn_run(first);
    let (c2, r2) = spawn_run(second);
    assert_eq!(next(&mut rx1).await.key, key("ns", "a"));
    assert_eq!(next(&mut rx2).await.key, key("ns", "a"));
    assert_eq!(
        (h.configmaps.list_calls(), h.configmaps.watch_calls()),
        (1, 1)
    );
    c1.cancel();
    c2.cancel();
    r1.await.unwrap();
    r2.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn custom_store_holds_the_primary_cache() {
    let factory = InformerFactory::without_client();
    let source = MemoryListerWatcher::<ConfigMap>::new();
    source.create(cm("ns", "a"));
    let store = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    let (tx, mut rx) = unbounded_channel();
    let controller = Controller::<ConfigMap>::builder(&factory)
        .store(store.clone())
        .source(Arc::new(source.clone()))
        .build(reporting(tx))
        .unwrap();
    assert!(factory.informers().is_empty(), "not a shared informer");
    let (cancel, run) = spawn_run(controller);
    assert!(next(&mut rx).await.obj.is_some());
    assert_eq!(
        informer_core::Store::len(&*store),
        1,
        "the custom store is the cache"
    );
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        source.open_watches(),
        0,
        "the private informer stopped with the controller"
    );
}

#[test]
fn custom_store_needs_a_source_and_must_be_empty() {
    let factory = InformerFactory::without_client();
    let empty = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    let noop = || reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async { Ok(Action::Done) });
    let err = Controller::<ConfigMap>::builder(&factory)
        .store(empty)
        .build(noop())
        .unwrap_err();
    assert!(matches!(err, BuildError::StoreWithoutSource), "{err}");
    let full = Arc::new(ThreadSafeStore::<ConfigMap>::new());
    informer_core::Store::add(&*full, Arc::new(cm("ns", "a"))).unwrap();
    let err = Controller::<ConfigMap>::builder(&factory)
        .store(full)
        .source(Arc::new(MemoryListerWatcher::new()))
        .build(noop())
        .unwrap_err();
    assert!(matches!(err, BuildError::StoreNotEmpty(1)), "{err}");
    assert_eq!(
        err.to_string(),
        "the custom store must be empty (an informer fills it); it holds 1 object"
    );
}

#[tokio::test(start_paused = true)]
async fn index_is_added_to_the_primary_cache_and_a_taken_name_is_a_build_error() {
    let h = Harness::new();
    let mut a = cm("ns", "a");
    a.data = Some([("team".to_string(), "blue".to_string())].into());
    h.configmaps.create(a);
    let by_team = |c: &ConfigMap| {
        c.data
            .as_ref()
            .and_then(|d| d.get("team").cloned())
            .into_iter()
            .collect()
    };
    let (tx, mut rx) = unbounded_channel();
    let controller = h
        .builder()
        .index("team", by_team)
        .build(reporting(tx))
        .unwrap();
    let lister = controller.lister();
    let (cancel, run) = spawn_run(controller);
    next(&mut rx).await;
    assert_eq!(lister.by_index_name("team", "blue").unwrap().len(), 1);
    let (tx2, _rx2) = unbounded_channel();
    let err = h
        .builder()
        .name("second")
        .index("team", by_team)
        .build(reporting(tx2))
        .unwrap_err();
    assert!(matches!(err, BuildError::Index { .. }), "{err}");
    cancel.cancel();
    run.await.unwrap();
}

#[test]
#[should_panic(expected = "at least one worker")]
fn zero_workers_is_a_programmer_error() {
    let h = Harness::new();
    let _ = h.builder().workers(0);
}

#[test]
fn default_name_is_the_lowercase_kind() {
    let h = Harness::new();
    let controller = h
        .builder()
        .build(reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    assert_eq!(controller.name(), "configmap");
}

#[test]
fn reconciler_is_dyn_compatible() {
    let r: Arc<dyn KeyReconciler<ConfigMap>> =
        Arc::new(reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }));
    let boxed: Box<dyn KeyReconciler<ConfigMap>> = Box::new(r.clone());
    fn takes(_: impl KeyReconciler<ConfigMap> + 'static) {}
    takes(r);
    takes(boxed);
}

#[test]
fn any_error_converts_to_a_transient_reconcile_error() {
    fn parse(s: &str) -> Result<i32, ReconcileError> {
        Ok(s.parse::<i32>()?)
    }
    let e = parse("x").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transient);
    assert!(
        e.as_error()
            .downcast_ref::<std::num::ParseIntError>()
            .is_some()
    );
    let t = ReconcileError::terminal("no");
    assert!(t.is_terminal());
    assert_eq!(format!("{t}"), "no");
}

// ---------------------------------------------------------------- sharding

fn ownership(shards: u32, held: &[u32]) -> (watch::Sender<Vec<u32>>, Ownership) {
    let (tx, rx) = watch::channel(held.to_vec());
    (
        tx,
        Ownership {
            shards,
            held: rx,
            shard_of,
        },
    )
}

#[tokio::test(start_paused = true)]
async fn sharded_workers_reconcile_only_owned_keys_and_queue_gained_shards() {
    let h = Harness::new();
    let keys: Vec<ObjectKey> = (0..40).map(|i| key("ns", &format!("k{i}"))).collect();
    for k in &keys {
        h.create("ns", k.name());
    }
    let (tx, mut rx) = unbounded_channel();
    let controller = h.builder().workers(2).build(reporting(tx)).unwrap();
    controller.sources.start();
    assert!(
        controller
            .sources
            .wait_synced("test", &CancellationToken::new())
            .await
    );
    let (held, owned) = ownership(2, &[0]);
    let runner = controller.runner.clone();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (runner, stop, owned) = (runner.clone(), stop.clone(), owned.clone());
        async move {
            runner
                .run_workers(&stop, &CancellationToken::new(), Some(owned))
                .await
        }
    });
    let in_shard = |s: u32| {
        keys.iter()
            .filter(|k| shard_of(k, 2) == s)
            .cloned()
            .collect::<Vec<_>>()
    };
    let (zero, one) = (in_shard(0), in_shard(1));
    assert!(!zero.is_empty() && !one.is_empty());

    let mut got = Vec::new();
    for _ in 0..zero.len() {
        got.push(next(&mut rx).await.key);
    }
    sleep(Duration::from_secs(5)).await;
    assert!(rx.try_recv().is_err(), "nothing of shard 1");
    got.sort();
    let mut expected = zero.clone();
    expected.sort();
    assert_eq!(got, expected);
    assert_eq!(runner.state.stats().skipped, one.len() as u64);

    held.send_replace(vec![0, 1]);
    let mut gained = Vec::new();
    for _ in 0..one.len() {
        gained.push(next(&mut rx).await.key);
    }
    gained.sort();
    let mut expected = one.clone();
    expected.sort();
    assert_eq!(
        gained, expected,
        "every cached key of the gained shard, once"
    );
    sleep(Duration::from_secs(5)).await;
    assert!(rx.try_recv().is_err());
    stop.cancel();
    task.await.unwrap();
    controller.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn losing_a_shard_cancels_its_reconcile_in_flight() {
    let h = Harness::new();
    h.create("ns", "a");
    let dropped = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = unbounded_channel();
    let flag = dropped.clone();
    let controller = h
        .builder()
        .build(reconciler_fn(move |_key, _obj: Option<Arc<ConfigMap>>| {
            let guard = SetOnDrop(flag.clone());
            let tx = tx.clone();
            async move {
                let _ = tx.send(());
                std::future::pending::<()>().await;
                drop(guard);
                Ok(Action::Done)
            }
        }))
        .unwrap();
    controller.sources.start();
    assert!(
        controller
            .sources
            .wait_synced("test", &CancellationToken::new())
            .await
    );
    let shard = shard_of(&key("ns", "a"), 4);
    let (held, owned) = ownership(4, &[shard]);
    let runner = controller.runner.clone();
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (runner, stop) = (runner.clone(), stop.clone());
        async move {
            runner
                .run_workers(&stop, &CancellationToken::new(), Some(owned))
                .await
        }
    });
    rx.recv().await.unwrap();
    held.send_replace(vec![(shard + 1) % 4]);
    settle().await;
    assert!(dropped.load(Ordering::SeqCst), "the reconcile was dropped");
    let stats = runner.state.stats();
    assert_eq!(
        (stats.cancelled, stats.errors, stats.active_workers),
        (1, 0, 0)
    );
    assert_eq!(
        runner.state.queue.len(),
        0,
        "the key belongs to another replica now"
    );
    stop.cancel();
    task.await.unwrap();
    controller.shutdown().await;
}

#[test]
fn one_child_type_declared_twice_is_refused_at_build() {
    let factory = InformerFactory::without_client();
    let _cms = factory.informer_from(InformerParams::all(), || {
        Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    });
    let error = Controller::<ConfigMap>::builder(&factory)
        .children(|_: &ConfigMap| None::<Secret>)
        .children(|_: &ConfigMap| Vec::<Secret>::new())
        .build_children_only()
        .unwrap_err();
    assert!(matches!(error, BuildError::ChildrenTwice(_)), "{error}");
    assert!(error.to_string().contains("Secret"), "{error}");
}

#[test]
fn a_malformed_label_selector_is_refused_at_build_before_any_informer_is_made() {
    let factory = InformerFactory::without_client();
    let error = Controller::<ConfigMap>::builder(&factory)
        .label_selector("app==web=")
        .build_children_only()
        .unwrap_err();
    let BuildError::LabelSelector { kind, source } = &error else {
        panic!("{error}");
    };
    assert_eq!((kind.as_str(), source.position), ("ConfigMap", 8));
    let error = Controller::<ConfigMap>::builder(&factory)
        .owns_with(WatchOptions::<Secret>::new().labels("app: web"))
        .build_children_only()
        .unwrap_err();
    assert!(
        matches!(&error, BuildError::LabelSelector { kind, .. } if kind == "Secret"),
        "{error}"
    );
    assert!(
        error.to_string().contains("\"app: web\""),
        "the error quotes the selector: {error}"
    );
    assert!(factory.informers().is_empty(), "no informer was made");
}

#[test]
fn the_same_kind_may_be_watched_twice_and_each_lister_is_found_by_position() {
    let factory = InformerFactory::without_client();
    let _all = factory.informer_from(InformerParams::all(), || {
        Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    });
    let _mirror = factory.informer_from(InformerParams::namespaced("mirror"), || {
        Arc::new(MemoryListerWatcher::<ConfigMap>::new())
    });
    let controller = Controller::<ConfigMap>::builder(&factory)
        .watches_with(
            |_: &ConfigMap| Vec::new(),
            WatchOptions::new().namespace("mirror"),
        )
        .build(reconciler_fn(|_k, _c: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    assert_eq!(factory.informers().len(), 2, "two informers of ConfigMaps");
    assert!(controller.lister_at::<ConfigMap>(0).is_some());
}

#[test]
fn a_controller_dropped_without_being_stopped_takes_its_handler_off_the_shared_informer() {
    let h = Harness::new();
    let informer = h._registered.0.informer().clone();
    let controller = h
        .builder()
        .build(reconciler_fn(|_k, _o: Option<Arc<ConfigMap>>| async {
            Ok(Action::Done)
        }))
        .unwrap();
    assert_eq!(informer.handler_count(), 1);
    drop(controller);
    assert_eq!(
        informer.handler_count(),
        0,
        "the informer outlives the controller (the harness holds it), its handler does not"
    );
}

#[test]
fn a_reconcile_error_of_an_api_server_error_reads_as_one_line() {
    let status =
        kube::core::Status::failure(r#"configmaps "a" not found"#, "NotFound").with_code(404);
    let e = ReconcileError::from(kube::Error::Api(Box::new(status)));
    assert_eq!(e.to_string(), r#"configmaps "a" not found (404 NotFound)"#);
    assert!(
        e.as_error().downcast_ref::<kube::Error>().is_some(),
        "the error itself is kept"
    );
    // Other errors read as they word themselves.
    assert_eq!(ReconcileError::transient("plain").to_string(), "plain");
}
