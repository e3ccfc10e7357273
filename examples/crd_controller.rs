//! A controller of a custom resource made with kube's `#[derive(CustomResource)]`, with a
//! finalizer. A `Greeting` asks for a ConfigMap holding its message, and for a line in the
//! `greetings` ConfigMap that lists every Greeting of the namespace. The ConfigMap of its own
//! carries an ownerReference to it: when the Greeting goes, the garbage collector deletes it
//! (kube-controller-manager's on a cluster, the in-process server's own here). The shared
//! list belongs to no Greeting, so the garbage collector cannot clean it up: that is what the
//! finalizer is for. The controller adds its finalizer first, writes both ConfigMaps and the
//! Greeting's status, and when the Greeting is deleted (the API server sets
//! `deletionTimestamp` and keeps the object while it has finalizers) removes its line from
//! the list, then the finalizer, which lets the object go. The scenario creates a Greeting,
//! changes its message, deletes it, and exits.
//!
//! ```sh
//! cargo run --release --example crd_controller             # in-process API server
//! cargo run --release --example crd_controller -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example crd_controller # installs the CRD
//! ```

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use informer::prelude::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use kube::{Client, CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::{BoxError, NAMESPACE, step, wait_for};

/// A message to publish in a ConfigMap.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "examples.informer.dev",
    version = "v1",
    kind = "Greeting",
    namespaced,
    status = "GreetingStatus"
)]
pub struct GreetingSpec {
    /// The text the ConfigMap carries.
    pub message: String,
}

/// What the controller reports about a Greeting.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    /// The ConfigMap holding the message.
    pub config_map: Option<String>,
    /// The generation the ConfigMap reflects.
    pub observed_generation: Option<i64>,
}

/// Present while the Greeting may have a line in the shared list: the API server keeps a
/// deleted Greeting until the controller has removed both.
const FINALIZER: &str = "examples.informer.dev/greetings-list";

/// The ConfigMap listing every Greeting of a namespace (name -> message).
const LIST: &str = "greetings";

/// Sets (or, with `None`, removes) a Greeting's line in the namespace's shared list,
/// creating the list when it is missing.
async fn set_line(
    config_maps: &Api<ConfigMap>,
    name: &str,
    message: Option<&str>,
) -> Result<(), kube::Error> {
    let patch = Patch::Merge(json!({"data": {name: message}}));
    match config_maps
        .patch(LIST, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() && message.is_none() => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => {
            let list = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(LIST.into()),
                    labels: Some([("example".into(), "crd-controller".into())].into()),
                    ..ObjectMeta::default()
                },
                data: message.map(|m| [(name.to_owned(), m.to_owned())].into()),
                ..ConfigMap::default()
            };
            match config_maps.create(&PostParams::default(), &list).await {
                Ok(_) => Ok(()),
                // Created meanwhile by another reconcile: patch it.
                Err(kube::Error::Api(status)) if status.is_already_exists() => config_maps
                    .patch(LIST, &PatchParams::default(), &patch)
                    .await
                    .map(drop),
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// Reconciles Greetings; a change to a ConfigMap reconciles the Greeting owning it.
#[derive(ControllerSpec)]
#[controller(for = Greeting, owns(ConfigMap, labels = "example=crd-controller"))]
pub struct Greetings;

impl Reconcile for Greetings {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        greeting: Option<Arc<Greeting>>,
    ) -> Result<Action, ReconcileError> {
        let namespace = key.namespace().unwrap_or(NAMESPACE);
        let Some(greeting) = greeting else {
            // Gone: its line went before its finalizer, unless a reconcile from a cache that
            // was behind (an API server lagging after a restart) wrote it back after that:
            // removing it again costs one patch. The garbage collector deletes its ConfigMap
            // through the ConfigMap's ownerReference.
            let config_maps = ctx.api::<ConfigMap>(namespace);
            set_line(&config_maps, key.name(), None).await?;
            return Ok(Action::Done);
        };
        let greetings = ctx.api::<Greeting>(namespace);
        let config_maps = ctx.api::<ConfigMap>(namespace);
        // Behind the finalizer: added first; when the Greeting is being deleted
        // (deletionTimestamp set), its cleanup runs, then the finalizer goes.
        finalizer(&greetings, FINALIZER, greeting, async |event| match event {
            FinalizerEvent::Apply(greeting) => {
                apply(ctx, key, namespace, &greetings, &config_maps, &greeting).await
            }
            FinalizerEvent::Cleanup(_) => {
                println!("  reconcile {key}: being deleted (deletionTimestamp is set)");
                set_line(&config_maps, key.name(), None).await?;
                println!("  reconcile {key}: removed its line from ConfigMap {LIST}");
                println!(
                    "  reconcile {key}: removing finalizer {FINALIZER}: the API server deletes it then"
                );
                Ok(Action::Done)
            }
        })
        .await
    }
}

/// Makes the world match a live Greeting: its ConfigMap, its line in the shared list, its
/// status.
async fn apply(
    ctx: &Context<Greetings>,
    key: &ObjectKey,
    namespace: &str,
    greetings: &Api<Greeting>,
    config_maps: &Api<ConfigMap>,
    greeting: &Greeting,
) -> Result<Action, ReconcileError> {
    let cm_name = format!("{}-greeting", key.name());

    // The ConfigMap, from the cache: create it or update its message.
    let message = &greeting.spec.message;
    let data = json!({"message": message});
    match ctx
        .config_maps()
        .get(&ObjectKey::new(Some(namespace), &cm_name))
    {
        None => {
            let cm = serde_json::from_value(json!({
                "metadata": {
                    "name": cm_name,
                    "labels": {"example": "crd-controller"},
                    "ownerReferences": [greeting.controller_owner_ref(&())],
                },
                "data": data,
            }))?;
            match config_maps.create(&PostParams::default(), &cm).await {
                Ok(_) => {
                    println!("  reconcile {key}: created ConfigMap {cm_name}: {message:?}")
                }
                Err(kube::Error::Api(status)) if status.is_already_exists() => {}
                Err(error) => return Err(error.into()),
            }
        }
        Some(cm) if cm.data.as_ref().and_then(|d| d.get("message")) != Some(message) => {
            let patch = Patch::Merge(json!({"data": data}));
            config_maps
                .patch(&cm_name, &PatchParams::default(), &patch)
                .await?;
            println!("  reconcile {key}: updated ConfigMap {cm_name}: {message:?}");
        }
        Some(_) => {}
    }

    // Its line in the shared list.
    let list = ctx
        .config_maps()
        .get(&ObjectKey::new(Some(namespace), LIST));
    let line = list.as_ref().and_then(|l| l.data.as_ref()?.get(key.name()));
    if line != Some(message) {
        set_line(config_maps, key.name(), Some(message)).await?;
        println!("  reconcile {key}: wrote its line in ConfigMap {LIST}");
    }

    // The status: which generation the ConfigMap reflects.
    let status = GreetingStatus {
        config_map: Some(cm_name),
        observed_generation: greeting.meta().generation,
    };
    if greeting.status.as_ref() != Some(&status) {
        let patch = Patch::Merge(json!({"status": status}));
        greetings
            .patch_status(key.name(), &PatchParams::default(), &patch)
            .await?;
        let generation = status.observed_generation.unwrap_or(0);
        println!("  reconcile {key}: status observedGeneration={generation}");
    }
    Ok(Action::Done)
}

/// Runs the controller through a Greeting's life: create, change, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(Greetings.run_until(client.clone(), cancel.clone()));
    let greetings = Api::<Greeting>::namespaced(client.clone(), NAMESPACE);
    let config_maps = Api::<ConfigMap>::namespaced(client, NAMESPACE);
    let message = async || -> Result<Option<String>, kube::Error> {
        let cm = config_maps.get_opt("hello-greeting").await?;
        Ok(cm.and_then(|cm| cm.data?.remove("message")))
    };
    let line = async || -> Result<Option<String>, kube::Error> {
        let list = config_maps.get_opt(LIST).await?;
        Ok(list.and_then(|l| l.data?.remove("hello")))
    };
    let observed = async || -> Result<Option<i64>, kube::Error> {
        Ok(greetings
            .get("hello")
            .await?
            .status
            .and_then(|s| s.observed_generation))
    };

    step("create Greeting hello: \"Hello, world\"");
    let hello = Greeting::new(
        "hello",
        GreetingSpec {
            message: "Hello, world".into(),
        },
    );
    greetings.create(&PostParams::default(), &hello).await?;
    wait_for("hello has the finalizer", async || {
        let hello = greetings.get("hello").await?;
        Ok(hello.finalizers().iter().any(|f| f == FINALIZER))
    })
    .await?;
    wait_for(
        "ConfigMap hello-greeting says \"Hello, world\"",
        async || Ok(message().await?.as_deref() == Some("Hello, world")),
    )
    .await?;
    wait_for(
        "ConfigMap greetings lists hello: \"Hello, world\"",
        async || Ok(line().await?.as_deref() == Some("Hello, world")),
    )
    .await?;
    wait_for("hello's status: generation 1 seen", async || {
        Ok(observed().await? == Some(1))
    })
    .await?;

    step("change hello's message to \"Hello again\"");
    let change = Patch::Merge(json!({"spec": {"message": "Hello again"}}));
    greetings
        .patch("hello", &PatchParams::default(), &change)
        .await?;
    wait_for(
        "ConfigMap hello-greeting says \"Hello again\"",
        async || Ok(message().await?.as_deref() == Some("Hello again")),
    )
    .await?;
    wait_for("hello's status: generation 2 seen", async || {
        Ok(observed().await? == Some(2))
    })
    .await?;

    step("delete Greeting hello");
    let marked = greetings.delete("hello", &DeleteParams::default()).await?;
    if let Some(marked) = marked.left() {
        let since = marked
            .meta()
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.to_string());
        println!(
            "  the API server keeps it for its finalizers {:?}: deletionTimestamp={}",
            marked.finalizers(),
            since.unwrap_or_default()
        );
    }
    wait_for("ConfigMap greetings no longer lists hello", async || {
        Ok(line().await?.is_none())
    })
    .await?;
    wait_for("Greeting hello is gone", async || {
        Ok(greetings.get_opt("hello").await?.is_none())
    })
    .await?;
    wait_for(
        "ConfigMap hello-greeting is gone (the garbage collector deleted it)",
        async || Ok(message().await?.is_none()),
    )
    .await?;

    support::follow_until_ctrl_c(follow).await?;
    cancel.cancel();
    controller.await??;
    println!("\ndone");
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let follow = support::follow_flag();
    let (client, _server) = support::connect(follow).await?;
    support::install_crd::<Greeting>(&client, "informer-crd-controller-example").await?;
    scenario(client, follow).await
}
