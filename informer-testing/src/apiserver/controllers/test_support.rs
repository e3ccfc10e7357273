//! Drives a [`Controller`] synchronously over a store, for its unit tests.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Controller;
use crate::apiserver::resource::{CustomResourceSpec, Registry, ResourceType};
use crate::apiserver::status::ApiError;
use crate::apiserver::storage::{
    DeleteOptions, DeleteOutcome, Limits, Storage, Subresource, Subscription,
};

/// A store, the built-in types plus `widgets.example.com` (namespaced) and
/// `zones.example.com` (cluster-scoped), and a controller fed with every change.
pub(crate) struct Harness<C: Controller> {
    pub(crate) storage: Storage,
    pub(crate) registry: Registry,
    pub(crate) controller: C,
    subscription: Subscription,
}

impl<C: Controller> Harness<C> {
    /// A harness whose controller sees every change from now on.
    pub(crate) fn new(controller: impl FnOnce(&Registry) -> C) -> Self {
        let storage = Storage::new(Limits::default());
        let mut registry = Registry::builtin();
        for spec in [
            CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets"),
            CustomResourceSpec::cluster_scoped("example.com", "v1", "Zone", "zones"),
        ] {
            registry.register(&spec).expect("a valid custom resource");
        }
        let subscription = storage.subscribe(None).expect("subscribed");
        Self {
            controller: controller(&registry),
            storage,
            registry,
            subscription,
        }
    }

    /// Resyncs the controller from the whole current state (as after a lost subscription).
    pub(crate) fn resync(&mut self) {
        self.controller.resync(&self.storage.snapshot());
    }

    /// Drops the changes made so far unseen.
    pub(crate) fn forget_changes(&mut self) {
        while self.subscription.try_next().is_some() {}
    }

    /// Lets the controller see every change and work until nothing is left to do.
    pub(crate) fn settle(&mut self) {
        for _ in 0..100_000 {
            let mut busy = false;
            {
                let store = self.storage.lock();
                while let Some(change) = self.subscription.try_next() {
                    self.controller.observe(&store, &change);
                    busy = true;
                }
            }
            while self
                .controller
                .step(&mut self.storage.lock(), &self.registry)
            {
                busy = true;
            }
            if !busy {
                return;
            }
        }
        panic!("the controller never settled");
    }

    /// The served type with this plural.
    pub(crate) fn resource(&self, plural: &str) -> Arc<ResourceType> {
        self.registry
            .types()
            .iter()
            .find(|t| t.plural == plural)
            .cloned()
            .unwrap_or_else(|| panic!("no type {plural}"))
    }

    /// Creates an object (named `name`, with `extra` merged into its metadata).
    pub(crate) fn create(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
        metadata: Value,
    ) -> Value {
        let mut meta = json!({"name": name});
        if let (Some(extra), Some(meta)) = (metadata.as_object(), meta.as_object_mut()) {
            meta.extend(extra.clone());
        }
        self.storage
            .lock()
            .create(
                &self.resource(plural),
                namespace,
                json!({"metadata": meta}),
                false,
            )
            .unwrap_or_else(|err| panic!("create {plural} {name}: {err}"))
            .as_ref()
            .clone()
    }

    /// The stored object, if any.
    pub(crate) fn get(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.storage
            .get(&self.resource(plural), namespace, name)
            .ok()
            .map(|o| o.as_ref().clone())
    }

    /// Deletes as a DELETE with these options would.
    pub(crate) fn delete(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
        options: DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        self.storage
            .lock()
            .delete(&self.resource(plural), namespace, name, &options, false)
    }

    /// Replaces a stored object (its `resourceVersion` must be current).
    pub(crate) fn update(&self, plural: &str, object: Value, subresource: Subresource) -> Value {
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        self.storage
            .lock()
            .update(
                &self.resource(plural),
                namespace.as_deref(),
                &name,
                object,
                subresource,
                false,
            )
            .unwrap_or_else(|err| panic!("update {plural} {name}: {err}"))
            .as_ref()
            .clone()
    }
}

/// An owner reference to a stored object.
pub(crate) fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": true,
        "blockOwnerDeletion": block,
    })
}
