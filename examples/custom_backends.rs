//! A controller on your own backends: a user-written cache of Deployments (here a
//! `ThreadSafeStore` underneath that prints and counts what reaches it) and a user-written
//! workqueue (a `WorkQueue` underneath that prints and counts keys), plugged in with
//! `#[controller(store = ..., queue = ...)]`. Each wraps a built-in backend and writes only
//! what it changes (`StoreWrapper`, `QueueWrapper`; no `async-trait`). The store is the
//! cache of the primary resource, Deployments; owned and child types keep the shared caches.
//! The controller keeps one ReplicaSet per Deployment at the Deployment's replica count,
//! declared as a child. The scenario creates a Deployment, scales it, deletes it, and prints
//! how much each backend was used.
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
use informer::store::ReplaceDiff;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
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
/// read it. Only what it changes is written; the rest goes to the `ThreadSafeStore`.
pub struct CountingStore(ThreadSafeStore<Deployment>, Arc<Counters>);

/// `store = counting_store`: made from the controller's state (its counters).
fn counting_store(controller: &Deployments) -> Arc<dyn Indexer<Deployment>> {
    println!("  store: the controller asked for its cache of Deployments");
    Arc::new(CountingStore(
        ThreadSafeStore::new(),
        controller.counters.clone(),
    ))
}

impl StoreWrapper for CountingStore {
    type Object = Deployment;

    fn inner(&self) -> &dyn Indexer<Deployment> {
        &self.0
    }

    /// Every write of objects comes here (watch events, and adds and deletes).
    fn apply(
        &self,
        batch: Vec<StoreOp<Deployment>>,
    ) -> Result<Vec<Option<Arc<Deployment>>>, StoreError> {
        for op in &batch {
            self.1.store_writes.fetch_add(1, Relaxed);
            match op {
                StoreOp::Upsert(obj) => println!(
                    "  store: upsert {} (version {})",
                    obj.name_any(),
                    obj.resource_version().unwrap_or_default()
                ),
                StoreOp::Delete(key) => println!("  store: delete {key}"),
            }
        }
        self.0.apply(batch)
    }

    /// Lists come here.
    fn replace(
        &self,
        objects: Vec<Arc<Deployment>>,
        resource_version: &str,
    ) -> Result<ReplaceDiff<Deployment>, StoreError> {
        self.1.store_writes.fetch_add(1, Relaxed);
        println!(
            "  store: replace with a list of {} (at version {resource_version})",
            objects.len()
        );
        self.0.replace(objects, resource_version)
    }

    fn get(&self, key: &ObjectKey) -> Option<Arc<Deployment>> {
        self.1.store_reads.fetch_add(1, Relaxed);
        self.0.get(key)
    }
}

// ---- the queue ----

/// The controller's workqueue: handlers add keys, workers take them. Every add reaches
/// `add_with_priority`, with its priority.
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

impl QueueWrapper for LoggingQueue {
    type Item = ObjectKey;

    fn inner(&self) -> &dyn Queue<ObjectKey> {
        &self.0
    }

    fn add_with_priority(&self, key: ObjectKey, priority: i32) {
        self.1.queue_adds.fetch_add(1, Relaxed);
        println!("  queue: add {key}");
        self.0.add_with_priority(key, priority)
    }

    async fn get(&self) -> Option<ObjectKey> {
        let key = self.0.get().await?;
        self.1.queue_gets.fetch_add(1, Relaxed);
        println!("  queue: hand {key} to a worker");
        Some(key)
    }

    fn add_after(&self, key: ObjectKey, delay: Duration) {
        println!("  queue: add {key} in {delay:?}");
        self.0.add_after(key, delay)
    }

    fn add_rate_limited(&self, key: ObjectKey) {
        println!("  queue: retry {key} later");
        self.0.add_rate_limited(key)
    }
}

// ---- the controller ----

/// The ReplicaSet a Deployment wants: its template, at its replica count.
fn replica_set_for(deployment: &Deployment) -> Result<Option<ReplicaSet>, serde_json::Error> {
    let spec = deployment.spec.as_ref();
    serde_json::from_value(json!({
        "metadata": {"name": format!("{}-rs", deployment.name_any()), "labels": deployment.labels()},
        "spec": {
            "replicas": spec.and_then(|s| s.replicas).unwrap_or(1),
            "selector": spec.map(|s| &s.selector),
            "template": spec.map(|s| &s.template),
        },
    }))
    .map(Some)
}

/// The Deployment controller, with a counting store and a logging queue.
#[derive(ControllerSpec, Default)]
#[controller(
    for = Deployment,
    labels = "example=custom-backends",
    children(ReplicaSet, from = replica_set_for),
    store = counting_store,
    queue = logging_queue
)]
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
        // The ReplicaSet is in line already (a child); the cache is read once more here.
        let cached = ctx.lister().get(key).is_some();
        println!(
            "  reconcile {key}: {}",
            match deployment {
                Some(_) if cached => "in step",
                _ => "gone",
            }
        );
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
    let (client, _server) = support::connect(follow).await?;
    scenario(client, follow).await?;
    Ok(())
}
