//! A typical operator of a custom resource made with kube's `#[derive(CustomResource)]`: each
//! `Website` gets a ConfigMap holding its page, a Deployment serving it and a Service in front
//! of it (three declared children: the library applies them, owned by the Website, so the
//! garbage collector deletes them with it), and a status whose `Ready` condition says whether
//! the Deployment has all its replicas available (a declared status). The `reconcile` keeps
//! what no ownerReference can clean up, behind the controller's finalizer (its `cleanup` runs
//! once a Website is being deleted): an outside mirror of the images the Websites run (a stand-in for a registry cache, a DNS zone, a CDN), from which a typed
//! index by image finds the images no Website runs any more. The scenario creates a Website,
//! changes it, plays the Deployment controller until the Website is Ready, deletes it, and
//! exits.
//!
//! ```sh
//! cargo run --release --example website_operator             # in-process API server
//! cargo run --release --example website_operator -- --follow # then run until Ctrl-C
//! KUBECONFIG=~/.kube/config cargo run --release --example website_operator # installs the CRD
//! ```
//!
//! On a real cluster, kube-controller-manager's Deployment controller runs the pods and
//! writes the Deployment's status itself: use a throwaway cluster (kind, k3d).

#[cfg(not(test))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use informer_examples as support;

use std::collections::BTreeSet;
use std::sync::Mutex;

use informer::prelude::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use support::{BoxError, NAMESPACE, step, wait_for};

/// A static website: `replicas` pods of a web server `image` serving `content`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "examples.informer.dev",
    version = "v1",
    kind = "Website",
    namespaced,
    status = "WebsiteStatus"
)]
pub struct WebsiteSpec {
    /// The web server image (serving `/usr/share/nginx/html`).
    pub image: String,
    /// How many pods serve the site.
    pub replicas: i32,
    /// The page served (`index.html`).
    pub content: String,
}

/// What the operator reports about a Website.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteStatus {
    /// The generation the children reflect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: the Deployment has all its replicas available.
    #[serde(default)]
    #[schemars(schema_with = "informer::runtime::conditions::schema")]
    pub conditions: Vec<Condition>,
}

/// Present while the Website's image may be in the mirror: the API server keeps a deleted
/// Website until the controller has run its cleanup and removed it (`finalizer = ..` below
/// is this name: an attribute takes a literal).
const FINALIZER: &str = "examples.informer.dev/image-mirror";

/// Websites by their image: which Websites run an image, from the cache.
#[indexer(Website)]
fn by_image(website: &Website) -> String {
    website.spec.image.clone()
}

/// Websites, each with a ConfigMap, a Deployment and a Service (declared children) and a
/// `Ready` condition (a declared status); `reconcile` keeps the image mirror, `cleanup`
/// (behind the controller's finalizer) drops a deleted Website's image.
#[derive(ControllerSpec, Default)]
#[controller(for = Website, index = [ByImage], finalizer = "examples.informer.dev/image-mirror")]
#[controller(children(ConfigMap, from = config_map))]
#[controller(children(Deployment, from = deployment))]
#[controller(children(Service, from = service), status = status)]
pub struct Websites {
    /// The outside mirror: the images it holds.
    pub mirror: Arc<Mutex<BTreeSet<String>>>,
}

impl Reconcile for Websites {
    async fn reconcile(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        website: Option<Arc<Website>>,
    ) -> Result<Action, ReconcileError> {
        // The Website carries the finalizer already: it was added before its children.
        if let Some(website) = website {
            let image = &website.spec.image;
            if self.mirror.lock().unwrap().insert(image.clone()) {
                println!("  reconcile {key}: mirrored {image}");
            }
        }
        self.drop_unused_images(ctx, key);
        Ok(Action::Done)
    }

    /// The Website is being deleted (deletionTimestamp set) and still carries the finalizer:
    /// drop its image unless another Website runs it; `Done` removes the finalizer.
    async fn cleanup(
        &self,
        ctx: &Context<Self>,
        key: &ObjectKey,
        _website: Arc<Website>,
    ) -> Result<Action, ReconcileError> {
        println!("  cleanup {key}: being deleted (deletionTimestamp is set)");
        self.drop_unused_images(ctx, key);
        Ok(Action::Done)
    }
}

impl Websites {
    /// Drops from the mirror the images that no Website (but those being deleted) runs.
    fn drop_unused_images(&self, ctx: &Context<Self>, key: &ObjectKey) {
        self.mirror.lock().unwrap().retain(|image| {
            let users = ctx.websites().by_index::<ByImage>(image);
            let used = users
                .iter()
                .any(|w| w.metadata.deletion_timestamp.is_none());
            if !used {
                println!("  reconcile {key}: no Website runs {image}: dropped it from the mirror");
            }
            used
        });
    }
}

fn labels(website: &Website) -> serde_json::Value {
    json!({"app": website.name_any()})
}

/// The ConfigMap holding the page.
fn config_map(website: &Website) -> serde_json::Result<Option<ConfigMap>> {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{}-content", website.name_any()), "labels": labels(website)},
        "data": {"index.html": website.spec.content},
    }))
}

/// A hash of `text` that stays the same across builds and Rust releases (FNV-1a, 64 bits):
/// std's `DefaultHasher` does not promise that, and a new hash would roll every pod.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The Deployment serving it. Its pod template carries a hash of the page, so that a new
/// page rolls the pods.
fn deployment(website: &Website) -> serde_json::Result<Option<Deployment>> {
    let hash = stable_hash(&website.spec.content);
    let content = format!("{}-content", website.name_any());
    serde_json::from_value(json!({
        "metadata": {"name": website.name_any(), "labels": labels(website)},
        "spec": {
            "replicas": website.spec.replicas,
            "selector": {"matchLabels": labels(website)},
            "template": {
                "metadata": {
                    "labels": labels(website),
                    "annotations": {"examples.informer.dev/content-hash": format!("{hash:016x}")},
                },
                "spec": {
                    "containers": [{
                        "name": "web",
                        "image": website.spec.image,
                        "ports": [{"containerPort": 80}],
                        "volumeMounts": [{"name": "content", "mountPath": "/usr/share/nginx/html"}],
                    }],
                    "volumes": [{"name": "content", "configMap": {"name": content}}],
                },
            },
        },
    }))
}

/// The Service in front of it.
fn service(website: &Website) -> serde_json::Result<Option<Service>> {
    serde_json::from_value(json!({
        "metadata": {"name": website.name_any(), "labels": labels(website)},
        "spec": {"selector": labels(website), "ports": [{"name": "http", "port": 80}]},
    }))
}

/// The generation seen, and `Ready`: whether the Deployment (from the cache) has all its
/// replicas available. The conditions start from the Website's own, and `UNSET_TIME` lets
/// `set_status_condition` keep a condition's `lastTransitionTime` while its status holds.
///
/// Only this Website's Deployment counts (`is_controlled_by`: a same-named one of a deleted
/// Website, still cached, is not), and only a status written for its current spec
/// (`observedGeneration`): gate anything on readiness (say, a child made only once the
/// Deployment is ready) the same way.
fn status(website: &Website, ctx: &Context<Websites>) -> WebsiteStatus {
    let deployment = ctx
        .deployments()
        .namespaced(&website.namespace().unwrap_or_default())
        .get(&website.name_any())
        .filter(|d| is_controlled_by(&**d, website));
    let available = deployment
        .as_ref()
        .and_then(|d| {
            let status = d.status.as_ref()?;
            let current = status.observed_generation >= d.metadata.generation;
            if current {
                status.available_replicas
            } else {
                None
            }
        })
        .unwrap_or(0);
    let want = website.spec.replicas;
    let (ready, reason) = match deployment {
        None => (CONDITION_FALSE, "Creating"),
        Some(_) if available >= want => (CONDITION_TRUE, "Available"),
        Some(_) => (CONDITION_FALSE, "Progressing"),
    };
    let mut conditions = website.status.clone().unwrap_or_default().conditions;
    set_status_condition(
        &mut conditions,
        Condition {
            type_: "Ready".into(),
            status: ready.into(),
            reason: reason.into(),
            message: format!("{available}/{want} replicas available"),
            observed_generation: website.metadata.generation,
            last_transition_time: UNSET_TIME,
        },
    );
    WebsiteStatus {
        observed_generation: website.metadata.generation,
        conditions,
    }
}

/// Runs the operator through a Website's life: create, change, Ready, delete.
pub async fn scenario(client: Client, follow: bool) -> Result<(), BoxError> {
    let cancel = CancellationToken::new();
    let operator = Websites::default();
    let mirror = operator.mirror.clone();
    let controller = tokio::spawn(operator.run_until(client.clone(), cancel.clone()));
    let websites = Api::<Website>::namespaced(client.clone(), NAMESPACE);
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE);
    let deployments = Api::<Deployment>::namespaced(client.clone(), NAMESPACE);
    let services = Api::<Service>::namespaced(client, NAMESPACE);
    let mirrored = || mirror.lock().unwrap().iter().cloned().collect::<Vec<_>>();
    let page = async || -> Result<Option<String>, kube::Error> {
        let cm = config_maps.get_opt("blog-content").await?;
        Ok(cm.and_then(|cm| cm.data?.remove("index.html")))
    };
    // The Deployment's replicas and image.
    let served = async || -> Result<Option<(i32, String)>, kube::Error> {
        let Some(d) = deployments.get_opt("blog").await? else {
            return Ok(None);
        };
        let spec = d.spec.unwrap_or_default();
        let pod = spec.template.spec.unwrap_or_default();
        let image = pod.containers.first().and_then(|c| c.image.clone());
        Ok(Some((
            spec.replicas.unwrap_or(1),
            image.unwrap_or_default(),
        )))
    };
    // The Website's observed generation and Ready condition, as `True (message)`.
    let ready = async || -> Result<(Option<i64>, String), kube::Error> {
        let status = websites.get("blog").await?.status.unwrap_or_default();
        let ready = find_status_condition(&status.conditions, "Ready")
            .map(|c| format!("{} ({})", c.status, c.message));
        Ok((status.observed_generation, ready.unwrap_or_default()))
    };

    step("create Website blog: 2 replicas of nginx:1.27 serving \"<h1>Hello</h1>\"");
    let blog = Website::new(
        "blog",
        WebsiteSpec {
            image: "nginx:1.27".into(),
            replicas: 2,
            content: "<h1>Hello</h1>".into(),
        },
    );
    websites.create(&PostParams::default(), &blog).await?;
    wait_for(
        "blog has the finalizer; the mirror holds nginx:1.27",
        async || {
            let blog = websites.get("blog").await?;
            Ok(blog.finalizers().iter().any(|f| f == FINALIZER) && mirrored() == ["nginx:1.27"])
        },
    )
    .await?;
    wait_for("ConfigMap blog-content holds the page", async || {
        Ok(page().await?.as_deref() == Some("<h1>Hello</h1>"))
    })
    .await?;
    wait_for(
        "Deployment blog runs 2 replicas of nginx:1.27",
        async || Ok(served().await? == Some((2, "nginx:1.27".into()))),
    )
    .await?;
    wait_for("Service blog is in front of it", async || {
        Ok(services.get_opt("blog").await?.is_some())
    })
    .await?;
    wait_for(
        "blog's status: generation 1 seen, Ready=False (0/2 replicas available)",
        async || Ok(ready().await? == (Some(1), "False (0/2 replicas available)".into())),
    )
    .await?;

    step("change blog: 3 replicas of nginx:1.28 serving \"<h1>Hello again</h1>\"");
    let spec = json!({"image": "nginx:1.28", "replicas": 3, "content": "<h1>Hello again</h1>"});
    let change = Patch::Merge(json!({ "spec": spec }));
    websites
        .patch("blog", &PatchParams::default(), &change)
        .await?;
    wait_for("ConfigMap blog-content holds the new page", async || {
        Ok(page().await?.as_deref() == Some("<h1>Hello again</h1>"))
    })
    .await?;
    wait_for(
        "Deployment blog runs 3 replicas of nginx:1.28",
        async || Ok(served().await? == Some((3, "nginx:1.28".into()))),
    )
    .await?;
    wait_for("the mirror holds nginx:1.28 only", async || {
        Ok(mirrored() == ["nginx:1.28"])
    })
    .await?;

    step("play the Deployment controller: Deployment blog has 3 replicas available");
    // As the Deployment controller writes it: for the generation it has seen.
    let generation = deployments.get("blog").await?.metadata.generation;
    let available = json!({
        "observedGeneration": generation,
        "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
    });
    let available = Patch::Merge(json!({ "status": available }));
    deployments
        .patch_status("blog", &PatchParams::default(), &available)
        .await?;
    wait_for(
        "blog's status: generation 2 seen, Ready=True (3/3 replicas available)",
        async || Ok(ready().await? == (Some(2), "True (3/3 replicas available)".into())),
    )
    .await?;

    step("delete Website blog");
    websites.delete("blog", &DeleteParams::default()).await?;
    wait_for(
        "the finalizer's cleanup ran: the mirror is empty",
        async || Ok(mirrored().is_empty()),
    )
    .await?;
    wait_for("Website blog is gone", async || {
        Ok(websites.get_opt("blog").await?.is_none())
    })
    .await?;
    wait_for(
        "its ConfigMap, Deployment and Service are gone (the garbage collector deleted them)",
        async || {
            Ok(page().await?.is_none()
                && served().await?.is_none()
                && services.get_opt("blog").await?.is_none())
        },
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
    support::print_logs();
    let follow = support::follow_flag();
    let (client, _server) = support::connect(follow).await?;
    support::install_crd::<Website>(&client, "informer-website-operator-example").await?;
    scenario(client, follow).await
}
