//! A controller on your own backends: a user-written cache of Deployments (here a
//! `ThreadSafeStore` underneath that prints and counts what reaches it) and a user-written
//! workqueue (a `WorkQueue` underneath that prints and counts keys), plugged in with
//! `#[controller(store = ..., queue = ...)]`. The controller keeps one ReplicaSet per
//! Deployment at the Deployment's replica count. The scenario creates a Deployment, scales
//! it, deletes it, and prints how much each backend was used.
//!
//! ```sh
//! cargo run --release --example custom_backends             # in-process API server
//! cargo run --release --example custom_backends -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example custom_backends
//! ```
//!
//! The controller only sees objects labelled `example=custom-backends`.

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use informer::prelude::*;
use informer::queue::QueueMetrics;
use informer::store::{Indexers, ReplaceDiff, StoreOp};
use informer::{IndexError, KeyError, StoreError};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use support::{BoxError, NAMESPACE, step, wait_for};

// ---- the store ----

/// What reached the custom backends; the controller struct hands it to both.
#[derive(Debug, Default)]
pub struct Counters {
    store_writes: AtomicUsize,
    store_reads: AtomicUsize,
    queue_adds: AtomicUsize,
    queue_gets: AtomicUsize,
}

/// The controller's cache of Deployments: the informer writes it, listers and reconciles
/// read it.
pub struct CountingStore(ThreadSafeStore<Deployment>, Arc<Counters>);

/// `store = counting_store`: made from the controller's state (its counters).
fn counting_store(controller: &Deployments) -> Arc<dyn Indexer<Deployment>> {
    println!("  store: the controller asked for its cache of Deployments");
    Arc::new(CountingStore(
        ThreadSafeStore::new(),
        controller.counters.clone(),
    ))
}

impl CountingStore {
    fn wrote(&self, what: &str) {
        self.1.store_writes.fetch_add(1, Relaxed);
        println!("  store: {what}");
    }

    fn read(&self) {
        self.1.store_reads.fetch_add(1, Relaxed);
    }
}

impl Store<Deployment> for CountingStore {
    fn add(&self, obj: Arc<Deployment>) -> Result<Option<Arc<Deployment>>, StoreError> {
        self.wrote(&format!("add {}", obj.name_any()));
        self.0.add(obj)
    }
    fn key_of(&self, obj: &Deployment) -> Result<ObjectKey, KeyError> {
        self.0.key_of(obj)
    }
    fn delete(&self, key: &ObjectKey) -> Option<Arc<Deployment>> {
        self.wrote(&format!("delete {key}"));
        self.0.delete(key)
    }
    fn get(&self, key: &ObjectKey) -> Option<Arc<Deployment>> {
        self.read();
        self.0.get(key)
    }
    fn list(&self) -> Vec<Arc<Deployment>> {
        self.read();
        self.0.list()
    }
    fn list_keys(&self) -> Vec<ObjectKey> {
        self.read();
        self.0.list_keys()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn replace(
        &self,
        objects: Vec<Arc<Deployment>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<Deployment>, StoreError> {
        self.wrote(&format!(
            "replace with a list of {} (at version {resource_version})",
            objects.len()
        ));
        self.0.replace(objects, resource_version)
    }
    fn resource_version(&self) -> Option<String> {
        self.0.resource_version()
    }
    fn set_resource_version(&self, resource_version: &str) {
        self.0.set_resource_version(resource_version)
    }
    fn apply(
        &self,
        batch: Vec<StoreOp<Deployment>>,
    ) -> Result<Vec<Option<Arc<Deployment>>>, StoreError> {
        for op in &batch {
            match op {
                StoreOp::Upsert(obj) => self.wrote(&format!(
                    "upsert {} (version {})",
                    obj.name_any(),
                    obj.resource_version().unwrap_or_default()
                )),
                StoreOp::Delete(key) => self.wrote(&format!("delete {key}")),
            }
        }
        self.0.apply(batch)
    }
}

impl Indexer<Deployment> for CountingStore {
    fn add_indexers(&self, indexers: Indexers<Deployment>) -> Result<(), IndexError> {
        self.0.add_indexers(indexers)
    }
    fn index_names(&self) -> Vec<String> {
        self.0.index_names()
    }
    fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<Deployment>>, IndexError> {
        self.read();
        self.0.by_index(index, value)
    }
    fn index_keys(&self, index: &str, value: &str) -> Result<Vec<ObjectKey>, IndexError> {
        self.read();
        self.0.index_keys(index, value)
    }
    fn list_index_values(&self, index: &str) -> Result<Vec<String>, IndexError> {
        self.0.list_index_values(index)
    }
    fn index(&self, index: &str, obj: &Deployment) -> Result<Vec<Arc<Deployment>>, IndexError> {
        self.read();
        self.0.index(index, obj)
    }
}

// ---- the queue ----

/// The controller's workqueue: handlers add keys, workers take them.
pub struct LoggingQueue(WorkQueue<ObjectKey>, Arc<Counters>);

/// `queue = logging_queue`: made from the controller's state (its counters), with the
/// controller's metric hooks.
fn logging_queue(
    controller: &Deployments,
    metrics: Arc<dyn QueueMetrics>,
) -> Arc<dyn Queue<ObjectKey>> {
    println!("  queue: the controller asked for its workqueue");
    // Keep the controller's metrics hooks (queue depth, latency) on the inner queue.
    let inner = WorkQueue::builder()
        .name("custom_backends")
        .metrics(metrics)
        .build();
    Arc::new(LoggingQueue(inner, controller.counters.clone()))
}

#[async_trait::async_trait]
impl Queue<ObjectKey> for LoggingQueue {
    fn add(&self, key: ObjectKey) {
        self.1.queue_adds.fetch_add(1, Relaxed);
        println!("  queue: add {key}");
        self.0.add(key)
    }
    async fn get(&self) -> Option<ObjectKey> {
        let key = Queue::get(&self.0).await?;
        self.1.queue_gets.fetch_add(1, Relaxed);
        println!("  queue: hand {key} to a worker");
        Some(key)
    }
    fn done(&self, key: &ObjectKey) {
        self.0.done(key)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn add_after(&self, key: ObjectKey, delay: Duration) {
        println!("  queue: add {key} in {delay:?}");
        self.0.add_after(key, delay)
    }
    fn add_rate_limited(&self, key: ObjectKey) {
        println!("  queue: retry {key} later");
        self.0.add_rate_limited(key)
    }
    fn forget(&self, key: &ObjectKey) {
        self.0.forget(key)
    }
    fn num_requeues(&self, key: &ObjectKey) -> u32 {
        self.0.num_requeues(key)
    }
    fn shut_down(&self) {
        self.0.shut_down()
    }
    async fn shut_down_with_drain(&self, drain_queued: bool) {
        Queue::shut_down_with_drain(&self.0, drain_queued).await
    }
    fn is_shutting_down(&self) -> bool {
        self.0.is_shutting_down()
    }
}

// ---- the controller ----

#[derive(ControllerSpec)]
#[controller(
    for = Deployment,
    labels = "example=custom-backends",
    owns(ReplicaSet, labels = "example=custom-backends", index = [ByControllerUid]),
    store = counting_store,
    queue = logging_queue
)]
/// The Deployment controller, with a counting store and a logging queue.
pub struct Deployments {
    counters: Arc<Counters>,
}

impl Reconcile for Deployments {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        deployment: Option<Arc<Deployment>>,
    ) -> Result<Action, ReconcileError> {
        let Some(deployment) = deployment else {
            // Deleted: the garbage collector deletes its ReplicaSet through the ReplicaSet's
            // ownerReference.
            println!("  reconcile {key}: gone");
            return Ok(Action::Done);
        };
        let namespace = key.namespace().unwrap_or(NAMESPACE);
        let replica_sets = ctx.api::<ReplicaSet>(namespace);
        let rs_name = format!("{}-rs", key.name());
        let replicas = deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        let uid = deployment.uid().unwrap_or_default();
        match ctx.replica_sets().by_index::<ByControllerUid>(&uid).pop() {
            None => {
                println!("  reconcile {key}: create ReplicaSet {rs_name} ({replicas} replicas)");
                let spec = deployment.spec.as_ref();
                let rs = serde_json::from_value(json!({
                    "metadata": {
                        "name": rs_name,
                        "labels": deployment.labels(),
                        "ownerReferences": [deployment.controller_owner_ref(&())],
                    },
                    "spec": {
                        "replicas": replicas,
                        "selector": spec.map(|s| &s.selector),
                        "template": spec.map(|s| &s.template),
                    },
                }))?;
                replica_sets.create(&PostParams::default(), &rs).await?;
            }
            Some(rs) if rs.spec.as_ref().and_then(|s| s.replicas) != Some(replicas) => {
                println!("  reconcile {key}: scale ReplicaSet {rs_name} to {replicas}");
                let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
                replica_sets
                    .patch(&rs_name, &PatchParams::default(), &patch)
                    .await?;
            }
            Some(_) => println!("  reconcile {key}: in step"),
        }
        Ok(Action::Done)
    }
}

/// How much the custom backends were used during a scenario.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// Adds, updates and deletes the store saw.
    pub store_writes: usize,
    /// Reads of the store (listers and the reconcile's look-up).
    pub store_reads: usize,
    /// Keys added to the queue.
    pub queue_adds: usize,
    /// Keys handed to workers.
    pub queue_gets: usize,
}

/// Runs the controller through a Deployment's life: create, scale, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<Usage, BoxError> {
    step("start the controller");
    let cancel = CancellationToken::new();
    let counters = Arc::new(Counters::default());
    let controller = Deployments {
        counters: counters.clone(),
    };
    let controller = tokio::spawn(controller.run_until(client.clone(), cancel.clone()));
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let replica_sets = Api::<ReplicaSet>::namespaced(client, NAMESPACE);
    let rs_replicas = async || -> Result<_, kube::Error> {
        Ok(replica_sets
            .get_opt("api-rs")
            .await?
            .map(|rs| rs.spec.and_then(|s| s.replicas)))
    };

    step("create Deployment api with 2 replicas");
    let api = serde_json::from_value(json!({
        "metadata": {"name": "api", "labels": {"example": "custom-backends"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {"containers": [{"name": "api", "image": "busybox"}]},
            },
        },
    }))?;
    deployments.create(&PostParams::default(), &api).await?;
    wait_for("ReplicaSet api-rs has 2 replicas", async || {
        Ok(rs_replicas().await? == Some(Some(2)))
    })
    .await?;

    step("scale api to 3 replicas");
    let scale = Patch::Merge(json!({"spec": {"replicas": 3}}));
    deployments
        .patch("api", &PatchParams::default(), &scale)
        .await?;
    wait_for("ReplicaSet api-rs has 3 replicas", async || {
        Ok(rs_replicas().await? == Some(Some(3)))
    })
    .await?;

    step("delete Deployment api");
    deployments.delete("api", &DeleteParams::default()).await?;
    wait_for("ReplicaSet api-rs is gone", async || {
        Ok(rs_replicas().await?.is_none())
    })
    .await?;

    support::follow_until_ctrl_c(follow).await?;
    cancel.cancel();
    controller.await??;
    let usage = Usage {
        store_writes: counters.store_writes.load(Relaxed),
        store_reads: counters.store_reads.load(Relaxed),
        queue_adds: counters.queue_adds.load(Relaxed),
        queue_gets: counters.queue_gets.load(Relaxed),
    };
    println!(
        "\ndone: the custom store took {} writes and served {} reads; the custom queue took {} adds and handed out {} keys",
        usage.store_writes, usage.store_reads, usage.queue_adds, usage.queue_gets
    );
    Ok(usage)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let follow = support::follow_flag();
    let (client, _server) = support::connect(Vec::new(), follow).await?;
    scenario(client, follow).await?;
    Ok(())
}
