//! The cross-namespace copier of `examples/config_mirror.rs`, written with kube-runtime 5.0 as
//! a competent user would: every ConfigMap labelled `mirror=true` is copied into namespace
//! `mirror` as `<namespace>.<name>` with server-side apply; a copy goes when its source goes.
//! Owner references cannot cross namespaces, so the source carries a finalizer that deletes
//! its copy before it may go (kube-runtime's `finalizer` helper; it also covers sources
//! deleted while the controller was down, which wait for it). Copies are watched (by a
//! label naming their source) so that an edited or deleted copy is put back.
//!
//! Not built by default (it is here to be compared, line for line, with ours:
//! `cargo test -p informer-examples --test line_counts` prints both counts). It compiled
//! against kube 5.0.0 (features `client`, `runtime`, `rustls-tls`), k8s-openapi 0.29
//! (`v1_35`), tokio, futures, thiserror and tracing.

// controller: begin
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};

const FINALIZER: &str = "mirror.example.com/copy";
const SOURCE: &str = "mirror.example.com/source";

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Finalizer(#[from] Box<kube::runtime::finalizer::Error<kube::Error>>),
}

struct Context {
    client: Client,
}

/// The copy of a source, and the source a copy names.
fn copy_of(source: &ConfigMap) -> ConfigMap {
    let namespace = source.namespace().unwrap_or_default();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{namespace}.{}", source.name_any())),
            namespace: Some("mirror".into()),
            labels: Some([(SOURCE.into(), format!("{namespace}.{}", source.name_any()))].into()),
            ..Default::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..Default::default()
    }
}

fn source_of(copy: ConfigMap) -> Option<ObjectRef<ConfigMap>> {
    let (namespace, name) = copy.labels().get(SOURCE)?.split_once('.')?;
    Some(ObjectRef::new(name).within(namespace))
}

async fn reconcile(source: Arc<ConfigMap>, ctx: Arc<Context>) -> Result<Action, Error> {
    let namespace = source.namespace().unwrap_or_default();
    let sources = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    let copies = Api::<ConfigMap>::namespaced(ctx.client.clone(), "mirror");
    let copy = copy_of(&source);
    finalizer(&sources, FINALIZER, source, |event| async move {
        match event {
            Event::Apply(_) => {
                let params = PatchParams::apply("mirror").force();
                copies
                    .patch(&copy.name_any(), &params, &Patch::Apply(&copy))
                    .await?;
            }
            Event::Cleanup(_) => match copies.delete(&copy.name_any(), &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                result => drop(result?),
            },
        }
        Ok::<_, kube::Error>(Action::await_change())
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)))
}

fn error_policy(source: Arc<ConfigMap>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(source = %source.name_any(), %error, "reconcile failed");
    Action::requeue(Duration::from_secs(5))
}

/// Runs the controller until Ctrl-C or SIGTERM.
pub async fn run(client: Client) {
    let sources = watcher::Config::default().labels("mirror=true");
    let copies = watcher::Config::default().labels(SOURCE);
    Controller::new(Api::<ConfigMap>::all(client.clone()), sources)
        .watches(Api::<ConfigMap>::namespaced(client.clone(), "mirror"), copies, source_of)
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(Context { client }))
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::warn!(%error, "controller error");
            }
        })
        .await;
}
// controller: end

#[tokio::main]
async fn main() -> Result<(), kube::Error> {
    run(Client::try_default().await?).await;
    Ok(())
}
