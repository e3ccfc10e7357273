//! Read-your-own-writes through a real `kube::Client` against the in-process API server
//! whose watches are delayed: a reconcile never acts on a cache from before its own write.
//!
//! The scenario is the one stale caches break in real controllers (Sieve's "stale state"
//! bugs): a parent ConfigMap should have exactly one child Secret, named by the server
//! (`generateName`), so a second create is a second child. Each reconcile lists the parent's
//! children from the cache and creates one if it sees none; the first reconcile also asks
//! to be run again at once (as a controller checking on its work does). With the watch
//! delayed, the re-run happens before the child's watch event: without the gate it sees no
//! child and creates a duplicate; with it, it waits for the cache.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::{create_namespace, eventually_async, server};
use informer_core::ObjectKey;
use informer_runtime::controller::{
    Action, Context, Controller, ControllerBuilder, ControllerSpec, Reconcile, ReconcileError,
    reconciler_fn,
};
use informer_runtime::factory::InformerFactory;
use informer_runtime::informer::CancellationToken;
use informer_runtime::lister::Lister;
use informer_runtime::metrics::{ControllerMetrics, Metrics};
use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Seeds run by default (each a controller against a watch delayed by its own random amount;
/// about 100 ms each). `READ_YOUR_WRITES_SEEDS` runs more.
const DEFAULT_SEEDS: u64 = 50;

fn seeds() -> u64 {
    std::env::var("READ_YOUR_WRITES_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEEDS)
}

fn parent(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some([("role".to_owned(), "parent".to_owned())].into());
    cm
}

fn child_of(parent: &ConfigMap) -> Secret {
    let mut s = Secret::default();
    s.metadata.generate_name = Some(format!("{}-child-", parent.name_any()));
    s.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: parent.name_any(),
        uid: parent.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    s
}

fn children_of<'a>(parent: &ConfigMap, secrets: impl IntoIterator<Item = &'a Secret>) -> usize {
    let uid = parent.uid();
    secrets
        .into_iter()
        .filter(|s| {
            s.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == uid.as_ref())
        })
        .count()
}

/// What the parent controller counts.
#[derive(Default)]
struct Counts {
    /// Reconciles of the parent that ran (started).
    runs: AtomicUsize,
    /// Reconciles of the parent that finished.
    finished: AtomicUsize,
    /// The first reconcile has asked to run again.
    rerun: AtomicBool,
}

/// The parent controller, as `#[derive(ControllerSpec)]` would write it: its context's client is
/// the controller's, so read-your-own-writes applies without the reconcile knowing.
struct Parents {
    namespace: String,
    read_your_writes: bool,
    counts: Arc<Counts>,
}

impl ControllerSpec for Parents {
    type Resource = ConfigMap;
    type Listers = Lister<Secret>;

    fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
        builder
            .name(format!("parents-{}", self.namespace))
            .namespace(self.namespace.clone())
            .label_selector("role=parent")
            .owns::<Secret>()
            .read_your_writes(self.read_your_writes)
    }

    fn listers(controller: &Controller<ConfigMap>) -> Lister<Secret> {
        controller.lister_of::<Secret>().unwrap()
    }
}

impl Reconcile for Parents {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        parent: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        self.counts.runs.fetch_add(1, Ordering::SeqCst);
        let result = async {
            let Some(parent) = parent else {
                return Ok(Action::Done);
            };
            let cached = ctx.namespaced(&self.namespace).list(); // the Lister<Secret>
            if children_of(&parent, cached.iter().map(|s| &**s)) == 0 {
                let api = ctx.api::<Secret>(self.namespace.as_str());
                api.create(&PostParams::default(), &child_of(&parent))
                    .await?;
            }
            if !self.counts.rerun.swap(true, Ordering::SeqCst) {
                return Ok(Action::requeue_after(Duration::ZERO));
            }
            Ok(Action::Done)
        }
        .await;
        self.counts.finished.fetch_add(1, Ordering::SeqCst);
        result
    }
}

/// What one seed ended with.
#[derive(Debug)]
struct Outcome {
    delay: Duration,
    children: usize,
    runs: usize,
    skips: u64,
}

/// One seed: a fresh namespace, the watch delayed by a random amount, one parent.
async fn run_seed(server: &TestApiServer, seed: u64, read_your_writes: bool) -> Outcome {
    let client = server.client();
    let ns = format!(
        "seed-{seed}-{}",
        if read_your_writes { "gated" } else { "ungated" }
    );
    create_namespace(&client, &ns).await;
    // 0 to 40 ms: from "the event comes before the re-run" to well after it.
    let delay = Duration::from_millis(StdRng::seed_from_u64(seed).random_range(0..=40));
    server.faults().delay_watch_events(delay);
    let factory = InformerFactory::new(client.clone());
    let counts = Arc::new(Counts::default());
    let controller = Parents {
        namespace: ns.clone(),
        read_your_writes,
        counts: counts.clone(),
    }
    .into_controller(&factory)
    .unwrap();
    let secrets = controller.lister_of::<Secret>().unwrap();
    let probe = {
        let probe = controller.probe();
        move || probe.sample().stats
    };
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let parent = cms
        .create(&PostParams::default(), &parent("p"))
        .await
        .unwrap();
    let on_server: Api<Secret> = Api::namespaced(client.clone(), &ns);
    // Settled: the re-run has finished, nothing is running, and the cache holds every child
    // the server has. Every later reconcile sees a child and creates none, so the count on
    // the server is final.
    eventually_async("the controller settles", async || {
        if counts.finished.load(Ordering::SeqCst) < 2 || probe().active_workers > 0 {
            return false;
        }
        let server_children = on_server.list(&ListParams::default()).await.unwrap();
        let cached = secrets.namespaced(&ns).list();
        !server_children.items.is_empty()
            && children_of(&parent, cached.iter().map(|s| &**s))
                == children_of(&parent, &server_children.items)
    })
    .await;
    let children = on_server.list(&ListParams::default()).await.unwrap();
    let outcome = Outcome {
        delay,
        children: children_of(&parent, &children.items),
        runs: counts.runs.load(Ordering::SeqCst),
        skips: probe().stale_sync_skips,
    };
    cancel.cancel();
    run.await.unwrap();
    server.faults().delay_watch_events(Duration::ZERO);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_rerun_before_the_watch_echo_of_its_write_waits_instead_of_duplicating() {
    let server = server().await;
    let n = seeds();
    let mut skipped_seeds = 0;
    let mut one_more = 0;
    for seed in 0..n {
        let outcome = run_seed(&server, seed, true).await;
        assert_eq!(
            outcome.children, 1,
            "seed {seed}: the re-run acted on a cache from before its own write: {outcome:?}"
        );
        // One write, one reconcile of its own: the first run, then one run that sees the
        // child (the held-back re-run and the child's watch event are one queue entry).
        // A third, no-op run is possible only if the key's backoff retry is handed to a
        // worker in the very microseconds the event queues it (see `Gate::take_echo`).
        assert!(outcome.runs <= 3, "seed {seed}: {outcome:?}");
        if outcome.runs == 3 {
            one_more += 1;
        }
        if outcome.skips > 0 {
            skipped_seeds += 1;
        }
    }
    assert!(
        one_more * 10 <= n,
        "{one_more} of {n} seeds ran a third time: the echo of the write was not recognised"
    );
    // The delay is drawn from 0 to 40 ms: most seeds re-run before the event arrives.
    assert!(
        skipped_seeds > 0,
        "the gate never had to hold a reconcile back in {n} seeds"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_gate_the_same_rerun_creates_a_duplicate_child() {
    // The control experiment: it proves the test above exercises the gate.
    let server = server().await;
    let n = seeds();
    let mut duplicated = Vec::new();
    let mut delays = Vec::new();
    for seed in 0..n {
        let outcome = run_seed(&server, seed, false).await;
        assert_eq!(outcome.skips, 0);
        delays.push(outcome.delay);
        if outcome.children > 1 {
            duplicated.push(seed);
        }
    }
    assert!(
        !duplicated.is_empty(),
        "no seed of {n} produced a duplicate child without the gate (watch delays {delays:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_of_a_status_through_the_builders_client_holds_the_next_reconcile_of_its_object() {
    // A hand-written reconciler writes through `ControllerBuilder::reconcile_client`: each
    // reconcile bumps a counter in the object's data and asks to run again; every run must
    // see the value its previous run wrote, never an older one.
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "bump").await;
    server
        .faults()
        .delay_watch_events(Duration::from_millis(30));
    let factory = InformerFactory::new(client.clone());
    let builder = Controller::<ConfigMap>::builder(&factory).namespace("bump");
    let writes = builder.reconcile_client().unwrap();
    let seen = Arc::new(Mutex::new(Vec::<u32>::new()));
    let log = seen.clone();
    let controller = builder
        .build(reconciler_fn(
            move |key: ObjectKey, cm: Option<Arc<ConfigMap>>| {
                let (api, log) = (
                    Api::<ConfigMap>::namespaced(writes.clone(), "bump"),
                    log.clone(),
                );
                async move {
                    let Some(cm) = cm else {
                        return Ok(Action::Done);
                    };
                    let value: u32 = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("n"))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    log.lock().unwrap().push(value);
                    if value >= 5 {
                        return Ok(Action::Done);
                    }
                    let patch = serde_json::json!({"data": {"n": (value + 1).to_string()}});
                    api.patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                        .await?;
                    Ok(Action::requeue_after(Duration::ZERO))
                }
            },
        ))
        .unwrap();
    let probe = {
        let probe = controller.probe();
        move || probe.sample().stats
    };
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "bump");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("counter".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    eventually_async("the counter reaches 5", async || {
        seen.lock().unwrap().last() == Some(&5)
    })
    .await;
    let values = seen.lock().unwrap().clone();
    assert_eq!(
        values,
        [0, 1, 2, 3, 4, 5],
        "every reconcile saw the previous one's write, once"
    );
    assert!(
        probe().stale_sync_skips > 0,
        "the 30 ms delay held reconciles back"
    );
    cancel.cancel();
    run.await.unwrap();
}

/// Deletes the Secret named in its parent's `delete` key once, then asks to run again at
/// once; counts the runs that still saw it cached after deleting it.
struct Deleter {
    namespace: String,
    read_your_writes: bool,
    state: Arc<Deletions>,
}

/// What the delete scenario counts.
#[derive(Default)]
struct Deletions {
    /// The child was deleted (by the first run).
    deleted: AtomicBool,
    /// Runs after the delete that still saw the child cached.
    saw_deleted: AtomicUsize,
    /// Reconciles that finished.
    finished: AtomicUsize,
}

impl ControllerSpec for Deleter {
    type Resource = ConfigMap;
    type Listers = Lister<Secret>;

    fn configure(&self, builder: ControllerBuilder<ConfigMap>) -> ControllerBuilder<ConfigMap> {
        builder
            .name(format!("deleter-{}", self.namespace))
            .namespace(self.namespace.clone())
            .watches::<Secret>(|_: &Secret| Vec::new())
            .read_your_writes(self.read_your_writes)
    }

    fn listers(controller: &Controller<ConfigMap>) -> Lister<Secret> {
        controller.lister_of::<Secret>().unwrap()
    }
}

impl Reconcile for Deleter {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        _key: &ObjectKey,
        parent: Option<Arc<ConfigMap>>,
    ) -> Result<Action, ReconcileError> {
        let result = async {
            let Some(target) = parent.and_then(|p| p.data.as_ref()?.get("delete").cloned()) else {
                return Ok(Action::Done);
            };
            let cached = ctx.namespaced(&self.namespace).get(&target).is_some(); // Lister<Secret>
            if !cached {
                return Ok(Action::Done);
            }
            if self.state.deleted.load(Ordering::SeqCst) {
                self.state.saw_deleted.fetch_add(1, Ordering::SeqCst);
                return Ok(Action::Done);
            }
            let api = ctx.api::<Secret>(self.namespace.as_str());
            api.delete(&target, &Default::default()).await?;
            self.state.deleted.store(true, Ordering::SeqCst);
            Ok(Action::requeue_after(Duration::ZERO))
        }
        .await;
        self.state.finished.fetch_add(1, Ordering::SeqCst);
        result
    }
}

/// One seed of the delete scenario: how many runs saw the deleted Secret cached again, and
/// how many reconciles the gate held back.
async fn run_delete_seed(
    server: &TestApiServer,
    seed: u64,
    read_your_writes: bool,
) -> (usize, u64) {
    let client = server.client();
    let ns = format!(
        "delete-{seed}-{}",
        if read_your_writes { "gated" } else { "ungated" }
    );
    create_namespace(&client, &ns).await;
    let mut child = Secret::default();
    child.metadata.name = Some("child".into());
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &child)
        .await
        .unwrap();
    let delay = Duration::from_millis(StdRng::seed_from_u64(seed).random_range(0..=40));
    server.faults().delay_watch_events(delay);
    let factory = InformerFactory::new(client.clone());
    let spec = Arc::new(Deletions::default());
    let controller = Deleter {
        namespace: ns.clone(),
        read_your_writes,
        state: spec.clone(),
    }
    .into_controller(&factory)
    .unwrap();
    let secrets = controller.lister_of::<Secret>().unwrap();
    let probe = {
        let probe = controller.probe();
        move || probe.sample().stats
    };
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let mut parent = ConfigMap::default();
    parent.metadata.name = Some("p".into());
    parent.data = Some([("delete".to_owned(), "child".to_owned())].into());
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &parent)
        .await
        .unwrap();
    eventually_async("the child is deleted and the cache knows it", async || {
        spec.deleted.load(Ordering::SeqCst)
            && spec.finished.load(Ordering::SeqCst) >= 2
            && probe().active_workers == 0
            && secrets.namespaced(&ns).get("child").is_none()
    })
    .await;
    let outcome = (
        spec.saw_deleted.load(Ordering::SeqCst),
        probe().stale_sync_skips,
    );
    cancel.cancel();
    run.await.unwrap();
    server.faults().delay_watch_events(Duration::ZERO);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_rerun_after_a_delete_never_sees_the_deleted_object_cached() {
    let server = server().await;
    let n = seeds();
    let mut held = 0;
    for seed in 0..n {
        let (saw_deleted, skips) = run_delete_seed(&server, seed, true).await;
        assert_eq!(
            saw_deleted, 0,
            "seed {seed}: a re-run saw the child it had deleted"
        );
        held += u64::from(skips > 0);
    }
    assert!(
        held > 0,
        "the gate never had to hold a reconcile back in {n} seeds"
    );
    // The control experiment: without the gate, some re-run sees the deleted child.
    let mut stale = 0;
    for seed in 0..n {
        stale += run_delete_seed(&server, seed, false).await.0;
    }
    assert!(
        stale > 0,
        "no seed of {n} re-ran on a cache still holding the deleted child"
    );
}

#[tokio::test]
async fn stale_sync_skips_and_store_resource_version_are_exported() {
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "metrics").await;
    server
        .faults()
        .delay_watch_events(Duration::from_millis(50));
    let factory = InformerFactory::new(client.clone());
    let counts = Arc::new(Counts::default());
    let controller = Parents {
        namespace: "metrics".into(),
        read_your_writes: true,
        counts: counts.clone(),
    }
    .into_controller(&factory)
    .unwrap();
    let metrics = Metrics::new();
    metrics.add_controller(&controller);
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    Api::<ConfigMap>::namespaced(client.clone(), "metrics")
        .create(&PostParams::default(), &parent("p"))
        .await
        .unwrap();
    let skips = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("stale_sync_skips_total{controller=\"parents-metrics\"} "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    eventually_async("a reconcile was held back", async || {
        skips(&metrics.encode()) > 0
    })
    .await;
    let text = metrics.encode();
    assert!(text.contains("# TYPE stale_sync_skips counter"), "{text}");
    assert!(
        text.contains("# TYPE store_resource_version gauge"),
        "{text}"
    );
    assert!(text.contains("store_resource_version{informer="), "{text}");
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test]
async fn the_reconcile_after_a_finalizer_lets_its_object_go_does_not_clean_up_again() {
    // Removing the last finalizer of an object being deleted deletes it; the API server
    // answers with the object at the version the cache already holds (kube-apiserver's
    // `deleteWithoutFinalizers`), and the watch brings only its deletion, later. A reconcile
    // run again before that must not see the object as it was (finalizer on, being deleted)
    // and clean up a second time: the gate waits for the deletion.
    use informer_runtime::controller::{FinalizerEvent, finalizer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let server = server().await;
    let client = server.client();
    create_namespace(&client, "clean").await;
    server
        .faults()
        .delay_watch_events(Duration::from_millis(200));
    let factory = InformerFactory::new(client.clone());
    let builder = Controller::<ConfigMap>::builder(&factory).namespace("clean");
    let writes = builder.reconcile_client().unwrap();
    let cleanups = Arc::new(AtomicUsize::new(0));
    let counted = cleanups.clone();
    let controller = builder
        .build(reconciler_fn(move |_key, cm: Option<Arc<ConfigMap>>| {
            let api = Api::<ConfigMap>::namespaced(writes.clone(), "clean");
            let counted = counted.clone();
            async move {
                let Some(cm) = cm else {
                    return Ok(Action::Done);
                };
                finalizer(&api, "example.com/cleanup", cm, async |event| match event {
                    FinalizerEvent::Apply(_) => Ok(Action::Done),
                    FinalizerEvent::Cleanup(_) => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        // Run again at once: before the watch brings the deletion.
                        Ok(Action::requeue_after(Duration::ZERO))
                    }
                })
                .await
            }
        }))
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "clean");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    eventually_async("the finalizer is added", async || {
        cms.get("settings")
            .await
            .unwrap()
            .metadata
            .finalizers
            .is_some()
    })
    .await;
    cms.delete("settings", &Default::default()).await.unwrap();
    eventually_async("the object is gone", async || {
        cms.get_opt("settings").await.unwrap().is_none()
    })
    .await;
    // Well past the watch's delay: any second cleanup would have run by now.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(cleanups.load(Ordering::SeqCst), 1, "cleaned up once");
    cancel.cancel();
    run.await.unwrap();
}
