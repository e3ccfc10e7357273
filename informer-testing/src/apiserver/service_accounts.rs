//! ServiceAccounts as a cluster has them:
//! - **the service account controller** (kube-controller-manager's): every namespace that is
//!   not terminating has a ServiceAccount named `default`, created when the namespace is (or
//!   when the server starts), and again if it is deleted;
//! - **the `ServiceAccount` admission plugin**, on a new Pod: `spec.serviceAccountName`
//!   defaults to `default`, and the deprecated `spec.serviceAccount` to the same name.
//!
//! Not done: the plugin's token volume (`kube-api-access-*`) and its refusal of a Pod whose
//! ServiceAccount does not exist.

use std::collections::{HashSet, VecDeque};

use serde_json::{Value, json};

use super::controllers::Controller;
use super::namespaces::is_terminating;
use super::resource::{Registry, ResourceKey};
use super::storage::{Change, EventType, Snapshot, Store, WriteOptions};

/// The ServiceAccount every namespace has.
pub(crate) const DEFAULT: &str = "default";

/// The field manager of the controller's writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";

/// What the `ServiceAccount` admission plugin sets on a new Pod.
pub(crate) fn admit_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => match spec.get("serviceAccount").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => DEFAULT.to_string(),
        },
    };
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
}

/// Creates the `default` ServiceAccount of each of `namespaces` that exists, is not
/// terminating and has none.
pub(crate) fn create_defaults(store: &mut Store, registry: &Registry, namespaces: &[&str]) {
    let (Some(namespace_type), Some(accounts)) = (
        registry.by_path("", "v1", "namespaces"),
        registry.by_path("", "v1", "serviceaccounts"),
    ) else {
        return;
    };
    for &namespace in namespaces {
        let active = store
            .get(&namespace_type, None, namespace)
            .is_ok_and(|ns| !is_terminating(&ns));
        if !active || store.get(&accounts, Some(namespace), DEFAULT).is_ok() {
            continue;
        }
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": namespace}});
        let options = WriteOptions {
            manager: Some(MANAGER.to_string()),
            ..WriteOptions::default()
        };
        if let Err(err) = store.create(&accounts, Some(namespace), account, options) {
            // Lost a race with a client that made it (409), or the namespace began
            // terminating (403): both leave nothing to do.
            tracing::debug!(%namespace, %err, "the default ServiceAccount was not created");
        }
    }
}

/// kube-controller-manager's service account controller (see the module docs).
pub(crate) struct ServiceAccountController {
    namespaces: Option<ResourceKey>,
    accounts: Option<ResourceKey>,
    /// Namespaces to check, in order, each once.
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl ServiceAccountController {
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            namespaces: registry.by_path("", "v1", "namespaces").map(|t| t.key()),
            accounts: registry
                .by_path("", "v1", "serviceaccounts")
                .map(|t| t.key()),
            queue: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    fn push(&mut self, namespace: &str) {
        if self.queued.insert(namespace.to_string()) {
            self.queue.push_back(namespace.to_string());
        }
    }
}

impl Controller for ServiceAccountController {
    const NAME: &'static str = "serviceaccount-controller";

    fn resync(&mut self, state: &Snapshot) {
        let namespaces: Vec<String> = state
            .every_object()
            .filter(|(at, _)| Some(&at.resource) == self.namespaces.as_ref())
            .map(|(at, _)| at.key.to_string())
            .collect();
        for namespace in namespaces {
            self.push(&namespace);
        }
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        if Some(&change.resource) == self.namespaces.as_ref() {
            if change.event != EventType::Deleted && !is_terminating(&change.object) {
                self.push(&change.key);
            }
        } else if Some(&change.resource) == self.accounts.as_ref()
            && change.event == EventType::Deleted
            && let Some((namespace, DEFAULT)) = change.key.split_once('/')
        {
            self.push(namespace);
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(namespace) = self.queue.pop_front() else {
            return false;
        };
        self.queued.remove(&namespace);
        create_defaults(store, registry, &[namespace.as_str()]);
        true
    }
}

#[cfg(test)]
mod tests;
