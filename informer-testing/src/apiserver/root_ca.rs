//! kube-controller-manager's root CA publisher (`root-ca-cert-publisher`): every namespace
//! that is not terminating holds a ConfigMap named `kube-root-ca.crt` whose `ca.crt` is the
//! CA that signed the server's serving certificate, so that code in a Pod can check the API
//! server it talks to. It is made when the namespace is (and when the server starts), made
//! again when deleted, and put back when its `data` or its `kubernetes.io/description`
//! annotation is changed, as `rootcacertpublisher.Publisher.syncNamespace` does. Other keys of
//! the ConfigMap (labels, other annotations, `binaryData`) are left as a client wrote them.
//!
//! A server that serves plain HTTP publishes the same CA, the one every server of the process
//! shares ([`super::tls`]): a cluster always has one.

use std::sync::Arc;

use serde_json::{Value, json};

use super::controllers::{Controller, NamespaceQueue};
use super::namespaces::active;
use super::resource::{Registry, ResourceKey};
use super::storage::{Change, EventType, Snapshot, Store, Subresource, WriteOptions};

/// The ConfigMap's name.
pub(crate) const NAME: &str = "kube-root-ca.crt";

/// The key of its `data` that holds the CA bundle (PEM).
const KEY: &str = "ca.crt";

/// The annotation that says what it is for, and the words kube-controller-manager puts there.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
     when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
     No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The field manager of the publisher's writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";

/// The CA bundle the server publishes: the process's CA, `None` (and nothing published) if it
/// could not be made.
pub(crate) fn process_ca() -> Option<Arc<str>> {
    match super::tls::identity() {
        Ok(identity) => Some(Arc::from(identity.ca_pem.as_str())),
        Err(err) => {
            tracing::warn!(%err, "no CA to publish as {NAME}: the TLS identity could not be made");
            None
        }
    }
}

/// Makes or mends the `kube-root-ca.crt` ConfigMap of each of `namespaces` that exists and is
/// not terminating, holding `ca`.
pub(crate) fn publish(store: &mut Store, registry: &Registry, namespaces: &[&str], ca: &str) {
    let Some(config_maps) = registry.by_path("", "v1", "configmaps") else {
        return;
    };
    for namespace in active(store, registry, namespaces) {
        let result = match store.get(&config_maps, Some(namespace), NAME) {
            Err(_) => {
                let config_map = json!({
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": NAME,
                        "namespace": namespace,
                        "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                    },
                    "data": {KEY: ca},
                });
                store
                    .create(
                        &config_maps,
                        Some(namespace),
                        config_map,
                        WriteOptions::by(MANAGER),
                    )
                    .map(drop)
            }
            Ok(current) => match mended(&current, ca) {
                None => Ok(()),
                Some(config_map) => store
                    .update(
                        &config_maps,
                        Some(namespace),
                        NAME,
                        config_map,
                        Subresource::Main,
                        WriteOptions::by(MANAGER),
                    )
                    .map(drop),
            },
        };
        if let Err(err) = result {
            // A client won a race for it (409), or the namespace began terminating (403):
            // the change that follows brings the namespace back to the queue if need be.
            tracing::debug!(%namespace, %err, "{NAME} was not published");
        }
    }
}

/// `config_map` with its `data` and description put back, or `None` when they are as the
/// publisher writes them (the description only needs to be there, whatever its words).
fn mended(config_map: &Value, ca: &str) -> Option<Value> {
    let data_ok = config_map
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|data| data.len() == 1 && data.get(KEY).and_then(Value::as_str) == Some(ca));
    let described = config_map
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|d| !d.is_empty());
    if data_ok && described {
        return None;
    }
    let mut config_map = config_map.clone();
    config_map["data"] = json!({KEY: ca});
    let metadata = &mut config_map["metadata"];
    if !metadata.get("annotations").is_some_and(Value::is_object) {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
    Some(config_map)
}

/// kube-controller-manager's root CA publisher (see the module docs).
pub(crate) struct RootCaPublisher {
    ca: Option<Arc<str>>,
    namespaces: NamespaceQueue,
    config_maps: Option<ResourceKey>,
}

impl RootCaPublisher {
    /// A publisher of `ca`.
    pub(crate) fn new(registry: &Registry, ca: Option<Arc<str>>) -> Self {
        Self {
            ca,
            namespaces: NamespaceQueue::new(registry),
            config_maps: registry.by_path("", "v1", "configmaps").map(|t| t.key()),
        }
    }
}

impl Controller for RootCaPublisher {
    const NAME: &'static str = "root-ca-certificate-publisher-controller";

    fn resync(&mut self, state: &Snapshot) {
        self.namespaces.push_all(state);
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        // As the publisher's handlers: every new namespace and every update of an active one;
        // its ConfigMap changed or deleted.
        if self.namespaces.observe_namespace(change) {
            return;
        }
        if Some(&change.resource) == self.config_maps.as_ref()
            && change.event != EventType::Added
            && let Some((namespace, NAME)) = change.key.split_once('/')
        {
            self.namespaces.push(namespace);
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(namespace) = self.namespaces.pop() else {
            return false;
        };
        if let Some(ca) = &self.ca {
            publish(store, registry, &[namespace.as_str()], ca);
        }
        true
    }
}

#[cfg(test)]
mod tests;
