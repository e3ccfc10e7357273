//! A level-triggered controller written with kube-rs: every ConfigMap labelled
//! `role=source` in `default` gets a mirror ConfigMap with the same data, controlled by it;
//! mirrors whose source is gone are deleted. On any change it reconciles everything from its
//! cache, retrying after an error.
//!
//! With `generated_names`, a mirror is created with `generateName` and found by its owner's
//! UID in the cache: a cache that is behind (no read-your-own-writes in kube-rs) makes a
//! second mirror. That is the bug class the harness must find.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt as _;
use informer_testing::chaos::Cluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub const NAMESPACE: &str = "default";

/// A source ConfigMap.
pub fn source(name: &str, mode: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"role": "source"}},
        "data": {"mode": mode},
    })
}

fn is_source(cm: &ConfigMap) -> bool {
    cm.labels().get("role").map(String::as_str) == Some("source")
}

fn is_mirror(cm: &ConfigMap) -> bool {
    cm.labels().get("role").map(String::as_str) == Some("mirror")
}

fn owner_uid(cm: &ConfigMap) -> Option<String> {
    cm.owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// Runs the controller until `stop`.
pub async fn run(
    client: Client,
    stop: CancellationToken,
    generated_names: bool,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let (store, writer) = reflector::store();
    // Every event, the end of a (re)list included: the store is complete only then.
    let events = reflector::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff();
    futures::pin_mut!(events);
    let mut retry = false;
    loop {
        let timer = tokio::time::sleep(Duration::from_millis(if retry { 50 } else { 3_600_000 }));
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = timer => {}
            event = events.next() => if event.is_none() { return Ok(()) },
        }
        // Reconcile everything; after an error, again at the next event or a little later.
        retry = match reconcile_all(&api, &store, generated_names).await {
            Ok(()) => false,
            Err(error) => {
                tracing::debug!(%error, "mirror: reconcile failed, retrying");
                true
            }
        };
    }
}

async fn reconcile_all(
    api: &Api<ConfigMap>,
    store: &Store<ConfigMap>,
    generated_names: bool,
) -> Result<(), kube::Error> {
    let objects = store.state();
    let sources: Vec<_> = objects.iter().filter(|cm| is_source(cm)).collect();
    let mirrors: Vec<_> = objects.iter().filter(|cm| is_mirror(cm)).collect();
    for source in &sources {
        let uid = source.uid().unwrap_or_default();
        let mine = mirrors
            .iter()
            .find(|m| owner_uid(m).as_deref() == Some(uid.as_str()));
        let data = source.data.clone().unwrap_or_default();
        match mine {
            None => {
                let mut metadata = json!({
                    "namespace": NAMESPACE,
                    "labels": {"role": "mirror"},
                    "ownerReferences": [source.controller_owner_ref(&())],
                });
                if generated_names {
                    metadata["generateName"] = json!(format!("{}-mirror-", source.name_any()));
                } else {
                    metadata["name"] = json!(format!("{}-mirror", source.name_any()));
                }
                let mirror: ConfigMap =
                    serde_json::from_value(json!({"metadata": metadata, "data": data}))
                        .expect("a valid ConfigMap");
                match api.create(&PostParams::default(), &mirror).await {
                    Err(kube::Error::Api(status)) if status.code == 409 => {
                        // A mirror of the old source with the same name: replace it below
                        // once the cache has it.
                    }
                    result => drop(result?),
                }
            }
            Some(mirror) if mirror.data.clone().unwrap_or_default() != data => {
                let mut updated: ConfigMap = (***mirror).clone();
                updated.data = Some(data);
                api.replace(&mirror.name_any(), &PostParams::default(), &updated)
                    .await?;
            }
            Some(_) => {}
        }
    }
    let live: Vec<String> = sources.iter().filter_map(|s| s.uid()).collect();
    for mirror in mirrors {
        if owner_uid(mirror).is_none_or(|uid| !live.contains(&uid)) {
            match api
                .delete(&mirror.name_any(), &DeleteParams::default())
                .await
            {
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                result => drop(result?),
            }
        }
    }
    Ok(())
}

/// Invariant: no source ever has two mirrors.
pub fn one_mirror_per_source(cluster: &Cluster) -> Result<(), String> {
    let mut by_owner: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for cm in cluster.list::<ConfigMap>().into_iter().filter(is_mirror) {
        if let Some(uid) = owner_uid(&cm) {
            by_owner.entry(uid).or_default().push(cm.name_any());
        }
    }
    match by_owner.into_iter().find(|(_, names)| names.len() > 1) {
        Some((uid, names)) => Err(format!("source {uid} has mirrors {names:?}")),
        None => Ok(()),
    }
}

/// Convergence: each source has one mirror with its data; no mirror without a source.
pub fn mirrored(cluster: &Cluster) -> Result<(), String> {
    let all = cluster.list::<ConfigMap>();
    let sources: Vec<&ConfigMap> = all.iter().filter(|cm| is_source(cm)).collect();
    for source in &sources {
        let uid = source.uid().unwrap_or_default();
        let mirrors: Vec<&ConfigMap> = all
            .iter()
            .filter(|m| is_mirror(m) && owner_uid(m).as_deref() == Some(uid.as_str()))
            .collect();
        match mirrors.as_slice() {
            [mirror] if mirror.data == source.data => {}
            _ => {
                return Err(format!(
                    "source {} ({:?}) has mirrors {:?}",
                    source.name_any(),
                    source.data,
                    mirrors
                        .iter()
                        .map(|m| (m.name_any(), m.data.clone()))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    let live: Vec<String> = sources.iter().filter_map(|s| s.uid()).collect();
    if let Some(orphan) = all
        .iter()
        .filter(|m| is_mirror(m))
        .find(|m| owner_uid(m).is_none_or(|uid| !live.contains(&uid)))
    {
        return Err(format!("mirror {} has no source", orphan.name_any()));
    }
    Ok(())
}
