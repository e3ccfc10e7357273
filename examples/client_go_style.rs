//! A controller written the way client-go's `sample-controller` is, without the derive: a
//! shared informer factory, event handlers that turn changes into keys, a rate-limited
//! workqueue and workers of your own that look objects up in the listers. Every ConfigMap
//! labelled `example=client-go-style` gets a Secret of the same name holding its data,
//! controlled by it (so the garbage collector deletes the Secret with its ConfigMap). The
//! scenario creates a ConfigMap, changes it, deletes its Secret behind the controller's
//! back, deletes the ConfigMap, and exits.
//!
//! ```sh
//! cargo run --release --example client_go_style             # in-process API server
//! cargo run --release --example client_go_style -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example client_go_style
//! ```
//!
//! client-go → this library: `NewSharedInformerFactory` → [`InformerFactory`];
//! `factory.Core().V1().ConfigMaps()` → `factory.informer::<ConfigMap>(params)` (an
//! [`InformerHandle`]: the informer runs while a handle lives, or, dropped during setup with
//! a handler or lister in use, until the factory shuts down); `AddEventHandler` →
//! `add_handler(HandlerFns, resync)`; `DeletedFinalStateUnknown` →
//! [`Deleted::FinalStateUnknown`]; `metav1.GetControllerOf` → [`controller_owner`];
//! `workqueue.NewTypedRateLimitingQueue(DefaultTypedControllerRateLimiter())` →
//! [`WorkQueue::new`] (another limiter: `WorkQueue::with_rate_limiter`); `WaitForCacheSync` →
//! `factory.wait_for_sync`; `Lister().ConfigMaps(ns).Get(name)` →
//! `lister().namespaced(ns).get(name)`.
//!
//! (`Controller::builder` and `#[derive(ControllerSpec)]` write all of this for you, with
//! read-your-own-writes and metrics; see the other examples.)

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use std::collections::BTreeMap;
use std::time::Duration;

use informer::prelude::*;
use informer::queue::take;
use informer::runtime::lister::Lister;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use support::{BoxError, NAMESPACE, step, wait_for};

/// The label that selects the ConfigMaps this controller copies.
const SELECTOR: &str = "example=client-go-style";
/// How many times a key is retried before it is dropped (as client-go's `examples/workqueue`
/// does; sample-controller retries without a limit).
const MAX_RETRIES: u32 = 5;

/// The controller: the informers' handles (they keep the informers running), their
/// listers, the queue and a client.
pub struct SecretCopier {
    _config_maps: InformerHandle<ConfigMap>,
    _secrets: InformerHandle<Secret>,
    config_maps: Lister<ConfigMap>,
    secrets: Lister<Secret>,
    queue: Arc<WorkQueue<ObjectKey>>,
    client: Client,
}

impl SecretCopier {
    /// Sets up the informers and their handlers (sample-controller's `NewController`).
    pub fn new(factory: &InformerFactory, client: Client) -> Self {
        let queue = Arc::new(WorkQueue::new());
        let config_maps =
            factory.informer::<ConfigMap>(InformerParams::namespaced(NAMESPACE).labels(SELECTOR));
        let secrets = factory.informer::<Secret>(InformerParams::namespaced(NAMESPACE));

        // A ConfigMap's changes queue its own key.
        let q = queue.clone();
        let enqueue = move |cm: &Arc<ConfigMap>| {
            if let Ok(key) = ObjectKey::from_resource(cm.as_ref()) {
                q.add(key);
            }
        };
        let on_update = enqueue.clone();
        let q = queue.clone();
        config_maps.add_handler(
            HandlerFns::new()
                .on_add(move |cm, _in_initial_list| enqueue(cm))
                .on_update(move |_old, new| on_update(new))
                .on_delete(move |deleted| {
                    // A tombstone (client-go's `DeletedFinalStateUnknown`) carries the key
                    // even when the cache held no object for it.
                    let key = match deleted {
                        Deleted::Object(cm) => ObjectKey::from_resource(cm.as_ref()).ok(),
                        Deleted::FinalStateUnknown { key, .. } => Some(key.clone()),
                    };
                    if let Some(key) = key {
                        q.add(key);
                    }
                }),
            None,
        );

        // A Secret's changes queue the ConfigMap controlling it, if any.
        let q = queue.clone();
        let enqueue_owner = move |secret: &Secret| {
            if let Some(owner) = controller_owner::<ConfigMap>(secret) {
                q.add(owner);
            }
        };
        let on_update = enqueue_owner.clone();
        let on_delete = enqueue_owner.clone();
        secrets.add_handler(
            HandlerFns::new()
                .on_add(move |s, _| enqueue_owner(s))
                .on_update(move |old, new| {
                    // Resyncs hand the same version twice: nothing changed.
                    if old.resource_version() != new.resource_version() {
                        on_update(new);
                    }
                })
                .on_delete(move |deleted| {
                    if let Some(secret) = deleted.object() {
                        on_delete(secret);
                    }
                }),
            None,
        );

        Self {
            config_maps: config_maps.lister(),
            secrets: secrets.lister(),
            _config_maps: config_maps,
            _secrets: secrets,
            queue,
            client,
        }
    }

    /// Runs `workers` workers until `stop` (sample-controller's `Run`); the factory must be
    /// started and synced first.
    pub async fn run(self: Arc<Self>, workers: usize, stop: CancellationToken) {
        let mut tasks = Vec::new();
        for _ in 0..workers {
            let this = self.clone();
            tasks.push(tokio::spawn(async move { this.run_worker().await }));
        }
        stop.cancelled().await;
        self.queue.shut_down(); // workers finish the key in hand, then `get` returns None
        for task in tasks {
            let _ = task.await;
        }
    }

    /// One worker: take a key, sync it, forget or retry it, mark it done
    /// (sample-controller's `processNextWorkItem`). `take` is `Get` with `defer Done`: the
    /// key is marked done when `key` is dropped, also if this future is dropped mid-sync
    /// (a task whose leader term ended), so that the queue can hand it out again.
    async fn run_worker(&self) {
        while let Some(key) = take(&*self.queue).await {
            match self.sync(&key).await {
                Ok(()) => self.queue.forget(&key),
                Err(error) if self.queue.num_requeues(&key) < MAX_RETRIES => {
                    tracing::warn!(%key, %error, "sync failed; retrying with backoff");
                    self.queue.add_rate_limited(key.clone());
                }
                Err(error) => {
                    tracing::error!(%key, %error, "sync failed {MAX_RETRIES} times; dropping the key");
                    self.queue.forget(&key);
                }
            }
        }
    }

    /// Makes the Secret of the ConfigMap `key` hold its data (sample-controller's
    /// `syncHandler`). A ConfigMap that is gone or being deleted needs nothing: the garbage
    /// collector deletes the Secret it controlled.
    async fn sync(&self, key: &ObjectKey) -> Result<(), BoxError> {
        let namespace = key.namespace().unwrap_or(NAMESPACE);
        let Some(cm) = self.config_maps.namespaced(namespace).get(key.name()) else {
            return Ok(());
        };
        if cm.metadata.deletion_timestamp.is_some() {
            // Being deleted (a foreground deletion waits for its Secret to go first): a
            // Secret made now would only be deleted again.
            return Ok(());
        }
        let wanted = secret_for(&cm)?;
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        match self.secrets.namespaced(namespace).get(key.name()) {
            None => {
                api.create(&PostParams::default(), &wanted).await?;
                println!("    [controller] created Secret {}", key.name());
            }
            Some(secret)
                if controller_owner::<ConfigMap>(secret.as_ref()).as_ref() != Some(key) =>
            {
                // sample-controller's ErrResourceExists: not ours, never touched.
                return Err(
                    format!("Secret {key} exists and is not controlled by its ConfigMap").into(),
                );
            }
            Some(secret) if secret.data != wanted.data => {
                let patch = serde_json::json!({"data": wanted.data});
                api.patch(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                println!("    [controller] updated Secret {}", key.name());
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// The Secret a ConfigMap wants: its data, controlled by it.
fn secret_for(cm: &ConfigMap) -> Result<Secret, BoxError> {
    let owner = cm
        .controller_owner_ref(&())
        .ok_or("a ConfigMap from the cache has a name and a uid")?;
    let data: BTreeMap<String, ByteString> = cm
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
        .collect();
    let mut secret = Secret::default();
    secret.metadata.name = Some(cm.name_any());
    secret.metadata.owner_references = Some(vec![owner]);
    secret.data = Some(data);
    Ok(secret)
}

/// The scenario: create, change, break and delete, checking the Secret each time.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let factory = InformerFactory::new(client.clone());
    let copier = Arc::new(SecretCopier::new(&factory, client.clone()));
    factory.start();
    factory.wait_for_sync(Duration::from_secs(30)).await?;
    let stop = CancellationToken::new();
    let run = tokio::spawn(copier.clone().run(2, stop.clone()));

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let value_of = |secret: &Secret, key: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(key))
            .map(|v| String::from_utf8_lossy(&v.0).into_owned())
    };

    step("create ConfigMap settings (mode=fast)");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cm.metadata.labels = Some(BTreeMap::from([(
        "example".into(),
        "client-go-style".into(),
    )]));
    cm.data = Some(BTreeMap::from([("mode".into(), "fast".into())]));
    config_maps.create(&PostParams::default(), &cm).await?;
    wait_for("Secret settings holds mode=fast", async || {
        let secret = secrets.get_opt("settings").await?;
        Ok(secret.is_some_and(|s| value_of(&s, "mode").as_deref() == Some("fast")))
    })
    .await?;

    step("change the ConfigMap to mode=safe");
    let patch = serde_json::json!({"data": {"mode": "safe"}});
    config_maps
        .patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_for("Secret settings holds mode=safe", async || {
        let secret = secrets.get_opt("settings").await?;
        Ok(secret.is_some_and(|s| value_of(&s, "mode").as_deref() == Some("safe")))
    })
    .await?;

    step("delete the Secret behind the controller's back");
    let before = secrets.get("settings").await?.uid();
    secrets.delete("settings", &DeleteParams::default()).await?;
    wait_for("the Secret is back (a new one)", async || {
        let secret = secrets.get_opt("settings").await?;
        Ok(secret.is_some_and(|s| s.uid() != before))
    })
    .await?;

    support::follow_until_ctrl_c(follow).await?;

    step("delete the ConfigMap");
    config_maps
        .delete("settings", &DeleteParams::foreground())
        .await?;
    wait_for(
        "the Secret is gone with it (garbage collector)",
        async || Ok(secrets.get_opt("settings").await?.is_none()),
    )
    .await?;

    stop.cancel();
    run.await?;
    factory.shutdown().await;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    support::print_logs();
    let follow = support::follow_flag();
    let (client, _server) = support::connect(follow).await?;
    scenario(client, follow).await?;
    println!("\ndone");
    Ok(())
}
