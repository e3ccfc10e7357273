//! Namespace lifecycle, as a cluster has it:
//!
//! - **defaults** (the Namespace strategy and defaulting): a new namespace is `Active`, has
//!   the `kubernetes` finalizer in `spec.finalizers`, and always carries the label
//!   `kubernetes.io/metadata.name=<name>`; updates keep `spec.finalizers` (only the
//!   `finalize` subresource changes them) and put the label back;
//! - **deletion** (the namespace registry): the first DELETE sets `deletionTimestamp` and
//!   `status.phase: Terminating` (see `Store::delete`); the namespace goes once its
//!   `spec.finalizers` and `metadata.finalizers` are empty;
//! - **admission** (the `NamespaceLifecycle` plugin): creating in a missing namespace is
//!   `404`, in a terminating one `403` with the cause `NamespaceTerminating`; `default`,
//!   `kube-system` and `kube-public` cannot be deleted;
//! - **the namespace controller** ([`NamespaceController`], kube-controller-manager's): it
//!   deletes everything in a terminating namespace (background propagation), waits for
//!   objects held by finalizers, reports progress in the namespace's `status.conditions`
//!   as the real controller words them, and then removes its `kubernetes` finalizer, which
//!   lets the namespace go.

use std::collections::{BTreeMap, HashSet, VecDeque};

use serde_json::{Map, Value, json};

use super::conditions;
use super::controllers::Controller;
use super::gc::{self, Propagation};
use super::resource::{Registry, ResourceKey, ResourceType};
use super::status::ApiError;
use super::storage::{Change, DeleteOptions, EventType, Snapshot, Store, Subresource};
use super::time::now_rfc3339;

/// The finalizer the namespace controller removes once a namespace is empty.
pub(crate) const KUBERNETES_FINALIZER: &str = "kubernetes";
/// The label every namespace carries, with its name.
pub(crate) const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Namespaces that cannot be deleted (the admission plugin's immortal namespaces).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];
/// How many objects one step of the controller deletes, so that requests go on between.
const DELETE_BATCH: usize = 256;

/// Whether the type is core v1 Namespaces.
pub(crate) fn is_namespace(resource: &ResourceType) -> bool {
    resource.group.is_empty() && resource.plural == "namespaces"
}

/// Whether a namespace is terminating (has a `deletionTimestamp`).
pub(crate) fn is_terminating(namespace: &Value) -> bool {
    gc::is_deleting(namespace)
}

/// Those of `names` that are namespaces that exist and are not terminating: where a
/// per-namespace controller (the service account controller, the root CA publisher) may
/// create objects.
pub(crate) fn active<'a>(store: &Store, registry: &Registry, names: &[&'a str]) -> Vec<&'a str> {
    let Some(namespaces) = registry.by_path("", "v1", "namespaces") else {
        return Vec::new();
    };
    names
        .iter()
        .copied()
        .filter(|name| {
            store
                .get(&namespaces, None, name)
                .is_ok_and(|ns| !is_terminating(&ns))
        })
        .collect()
}

/// A namespace's `spec.finalizers`.
pub(crate) fn spec_finalizers(namespace: &Value) -> Vec<Value> {
    namespace
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether an object being deleted has no finalizer left to wait for: none in
/// `metadata.finalizers` and, for a namespace, none in `spec.finalizers`.
pub(crate) fn finalized(resource: &ResourceType, object: &Value) -> bool {
    gc::finalizer_names(object).is_empty()
        && (!is_namespace(resource) || spec_finalizers(object).is_empty())
}

/// The namespace as the first DELETE leaves it: `deletionTimestamp`, `Terminating`, and the
/// garbage collector's finalizers the options ask for (the namespace registry's rules:
/// `orphanDependents: false` asks for foreground deletion here).
pub(crate) fn mark_terminating(namespace: &Value, options: &DeleteOptions) -> Value {
    let mut marked = namespace.clone();
    let mut finalizers = gc::finalizer_names(namespace);
    let has = |name: &str| finalizers.iter().any(|f| f == name);
    let orphan = options.orphan_dependents.unwrap_or_else(|| {
        options
            .propagation
            .map_or(has(gc::ORPHAN), |p| p == Propagation::Orphan)
    });
    let foreground = options.orphan_dependents.map_or_else(
        || {
            options
                .propagation
                .map_or(has(gc::FOREGROUND), |p| p == Propagation::Foreground)
        },
        |orphan| !orphan,
    );
    for (name, wanted) in [(gc::ORPHAN, orphan), (gc::FOREGROUND, foreground)] {
        let present = finalizers.iter().any(|f| f == name);
        if wanted && !present {
            finalizers.push(name.to_string());
        } else if !wanted && present {
            finalizers.retain(|f| f != name);
        }
    }
    if let Some(map) = marked.as_object_mut() {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry("deletionTimestamp")
                .or_insert_with(|| json!(now_rfc3339()));
            if finalizers.is_empty() {
                meta.remove("finalizers");
            } else {
                meta.insert("finalizers".into(), json!(finalizers));
            }
        }
        let status = map
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), json!("Terminating"));
        }
    }
    marked
}

/// What the Namespace strategy's `PrepareForCreate` adds to a new namespace: the
/// `kubernetes` finalizer in `spec.finalizers` and the `Active` phase. The real server runs
/// it after the field manager has recorded the creator's fields, so the finalizer is no
/// one's (`kubectl create namespace` owns only the name label, which defaulting adds).
pub(crate) fn prepare_create(resource: &ResourceType, object: &mut Value) {
    if !is_namespace(resource) {
        return;
    }
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let spec = map
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    if let Some(spec) = spec.as_object_mut() {
        let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(finalizers) = finalizers.as_array_mut()
            && !finalizers.iter().any(|f| f == KUBERNETES_FINALIZER)
        {
            finalizers.push(json!(KUBERNETES_FINALIZER));
        }
    }
    map.insert("status".into(), json!({"phase": "Active"}));
}

/// Sets what the server owns in a namespace, on create (`old` is `None`) and update: the name
/// label (on create the `Active` phase and the `kubernetes` finalizer come later, with
/// [`prepare_create`]); on update the stored
/// `spec.finalizers` unless through the `finalize` subresource. Other types are left alone.
pub(crate) fn canonicalize(
    resource: &ResourceType,
    old: Option<(&Value, Subresource)>,
    object: &mut Value,
) {
    if !is_namespace(resource) {
        return;
    }
    let Some(map) = object.as_object_mut() else {
        return;
    };
    let name = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut)
        && !name.is_empty()
    {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if !labels.is_object() {
            *labels = Value::Object(Map::new());
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), json!(name));
        }
    }
    let spec = map
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if !spec.is_object() {
        *spec = Value::Object(Map::new());
    }
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    match old {
        // The finalizer and the phase come with `prepare_create`, after the creator's fields
        // are recorded.
        None => {}
        Some((_, Subresource::Finalize)) => {}
        Some((
            old,
            Subresource::Main
            | Subresource::Status
            | Subresource::EphemeralContainers
            | Subresource::Approval,
        )) => {
            match old.pointer("/spec/finalizers") {
                Some(finalizers) => spec.insert("finalizers".into(), finalizers.clone()),
                None => spec.remove("finalizers"),
            };
        }
    }
}

/// The NamespaceLifecycle admission of a create in `namespace` (for namespaced types): `404`
/// when the namespace does not exist, `403` while it terminates. `name` is the new object's
/// name (or `generateName`).
pub(crate) fn admit_create(
    store: &Store,
    registry: &Registry,
    resource: &ResourceType,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    let (Some(namespace), Some(namespaces)) = (namespace, registry.by_path("", "v1", "namespaces"))
    else {
        return Ok(());
    };
    if !resource.namespaced {
        return Ok(());
    }
    let found = store
        .get(&namespaces, None, namespace)
        .map_err(|_| ApiError::not_found("namespaces", namespace))?;
    if !is_terminating(&found)
        && found.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
    {
        return Ok(());
    }
    let name = if name.is_empty() { "Unknown" } else { name };
    Err(ApiError::object_forbidden(
        resource,
        name,
        &format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ),
    )
    .with_details(details(
        resource,
        name,
        Some(json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {namespace} is being terminated"),
            "field": "metadata.namespace",
        }])),
    )))
}

/// The NamespaceLifecycle admission of a delete: `default`, `kube-system` and `kube-public`
/// may not be deleted.
pub(crate) fn admit_delete(resource: &ResourceType, name: &str) -> Result<(), ApiError> {
    if is_namespace(resource) && IMMORTAL.contains(&name) {
        return Err(ApiError::object_forbidden(
            resource,
            name,
            "this namespace may not be deleted",
        ));
    }
    Ok(())
}

fn details(resource: &ResourceType, name: &str, causes: Option<Value>) -> Value {
    let mut details = json!({"name": name, "kind": resource.plural});
    if !resource.group.is_empty() {
        details["group"] = json!(resource.group);
    }
    if let Some(causes) = causes {
        details["causes"] = causes;
    }
    details
}

/// The condition types the namespace controller maintains, in its order, with the reason and
/// message of each when all is well.
const CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// What remains in a terminating namespace, and what failed, for its conditions.
#[derive(Debug, Default)]
struct Remaining {
    /// `<plural>.<group>` → objects left.
    by_resource: BTreeMap<String, usize>,
    /// finalizer → objects held by it.
    by_finalizer: BTreeMap<String, usize>,
    /// Deletions that failed, as messages.
    failures: Vec<String>,
}

impl Remaining {
    /// The conditions (type, status, reason, message) this state calls for.
    fn conditions(&self) -> Vec<(&'static str, &'static str, String, String)> {
        CONDITIONS
            .iter()
            .map(|(kind, ok_reason, ok_message)| {
                let failed = match *kind {
                    "NamespaceDeletionContentFailure" if !self.failures.is_empty() => {
                        let mut failures = self.failures.clone();
                        failures.sort();
                        Some((
                            "ContentDeletionFailed",
                            format!(
                                "Failed to delete all resource types, {} remaining: {}",
                                failures.len(),
                                failures.join(", ")
                            ),
                        ))
                    }
                    "NamespaceContentRemaining" if !self.by_resource.is_empty() => Some((
                        "SomeResourcesRemain",
                        format!(
                            "Some resources are remaining: {}",
                            self.by_resource
                                .iter()
                                .map(|(r, n)| format!("{r} has {n} resource instances"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    "NamespaceFinalizersRemaining" if !self.by_finalizer.is_empty() => Some((
                        "SomeFinalizersRemain",
                        format!(
                            "Some content in the namespace has finalizers remaining: {}",
                            self.by_finalizer
                                .iter()
                                .map(|(f, n)| format!("{f} in {n} resource instances"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )),
                    _ => None,
                };
                match failed {
                    Some((reason, message)) => (*kind, "True", reason.to_string(), message),
                    None => (
                        *kind,
                        "False",
                        ok_reason.to_string(),
                        ok_message.to_string(),
                    ),
                }
            })
            .collect()
    }
}

/// `status.conditions` updated to `wanted`, as the real controller updates them (a
/// condition's `lastTransitionTime` moves only when its status changes); `None` when nothing
/// changes.
fn updated_conditions(
    status: &Value,
    wanted: &[(&'static str, &'static str, String, String)],
) -> Option<Value> {
    let mut list = status.get("conditions").cloned().unwrap_or(Value::Null);
    let mut changed = false;
    for (kind, state, reason, message) in wanted {
        let before = list
            .as_array()
            .and_then(|all| all.iter().find(|c| c["type"] == *kind))
            .cloned();
        let condition = conditions::set_status(&mut list, kind, state);
        condition["reason"] = json!(reason);
        condition["message"] = json!(message);
        changed |= before.as_ref() != Some(&*condition);
    }
    changed.then_some(list)
}

/// kube-controller-manager's namespace controller; see the [module](self).
#[derive(Debug)]
pub(crate) struct NamespaceController {
    /// Where namespaces are stored (`None` if the server serves none).
    namespaces: Option<ResourceKey>,
    /// Namespaces known to terminate: a change in one queues it.
    terminating: HashSet<String>,
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl NamespaceController {
    /// A controller for the namespaces of `registry`.
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            namespaces: registry.by_path("", "v1", "namespaces").map(|t| t.key()),
            terminating: HashSet::new(),
            queue: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    fn push(&mut self, namespace: &str) {
        if self.queued.insert(namespace.to_string()) {
            self.queue.push_back(namespace.to_string());
        }
    }

    /// One pass over a terminating namespace: delete what is left (a batch at a time),
    /// report what remains, and finalize the namespace once it is empty.
    fn sync(&mut self, store: &mut Store, registry: &Registry, name: &str) -> Result<(), ApiError> {
        let Some(namespaces) = registry.by_path("", "v1", "namespaces") else {
            return Ok(());
        };
        let Ok(namespace) = store.get(&namespaces, None, name) else {
            self.terminating.remove(name);
            return Ok(());
        };
        if !is_terminating(&namespace) {
            self.terminating.remove(name);
            return Ok(());
        }
        if !spec_finalizers(&namespace)
            .iter()
            .any(|f| f == KUBERNETES_FINALIZER)
        {
            // Finalized by this controller already; other finalizers hold it.
            return Ok(());
        }
        let types: Vec<_> = registry.types().to_vec();
        let type_of = |key: &ResourceKey| types.iter().find(|t| t.key() == *key).cloned();
        let mut remaining = Remaining::default();
        let mut deleted = 0;
        let background = DeleteOptions {
            propagation: Some(Propagation::Background),
            ..DeleteOptions::default()
        };
        for (key, object) in store.current().in_namespace(name) {
            if gc::is_deleting(&object) {
                continue;
            }
            if deleted == DELETE_BATCH {
                // More to delete: the next step goes on.
                self.push(name);
                return Ok(());
            }
            let Some(resource) = type_of(&key) else {
                continue;
            };
            let object_name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            deleted += 1;
            match store.delete(&resource, Some(name), object_name, &background, false) {
                Ok(_) => {}
                Err(err) if err.code() == 404 => {}
                Err(err) => remaining
                    .failures
                    .push(format!("{}: {err}", resource.qualified_resource())),
            }
        }
        for (key, object) in store.current().in_namespace(name) {
            let Some(resource) = type_of(&key) else {
                continue;
            };
            let qualified = format!("{}.{}", resource.plural, resource.group);
            *remaining.by_resource.entry(qualified).or_default() += 1;
            for finalizer in gc::finalizer_names(&object) {
                *remaining.by_finalizer.entry(finalizer).or_default() += 1;
            }
        }
        let namespace = store.get(&namespaces, None, name)?;
        let mut status = namespace
            .get("status")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let phase_wrong = status.get("phase") != Some(&json!("Terminating"));
        let conditions = updated_conditions(&status, &remaining.conditions());
        if phase_wrong || conditions.is_some() {
            status["phase"] = json!("Terminating");
            if let Some(conditions) = conditions {
                status["conditions"] = conditions;
            }
            let mut updated = namespace.as_ref().clone();
            updated["status"] = status;
            store.update(&namespaces, None, name, updated, Subresource::Status, false)?;
        }
        if !remaining.by_resource.is_empty() {
            // Objects held by finalizers: their deletion queues this namespace again.
            return Ok(());
        }
        let namespace = store.get(&namespaces, None, name)?;
        let mut finalize = namespace.as_ref().clone();
        if let Some(finalizers) = finalize
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            finalizers.retain(|f| f != KUBERNETES_FINALIZER);
        }
        tracing::debug!(
            namespace = name,
            "namespace empty: the kubernetes finalizer goes"
        );
        store.update(
            &namespaces,
            None,
            name,
            finalize,
            Subresource::Finalize,
            false,
        )?;
        Ok(())
    }
}

impl Controller for NamespaceController {
    const NAME: &'static str = "namespace-controller";

    fn resync(&mut self, state: &Snapshot) {
        let namespaces: Vec<String> = state
            .every_object()
            .filter(|(at, object)| {
                Some(&at.resource) == self.namespaces.as_ref() && is_terminating(object)
            })
            .map(|(at, _)| at.key.to_string())
            .collect();
        for name in namespaces {
            self.terminating.insert(name.clone());
            self.push(&name);
        }
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        if Some(&change.resource) == self.namespaces.as_ref() {
            let name = change.key.to_string();
            if change.event == EventType::Deleted {
                self.terminating.remove(&name);
            } else if is_terminating(&change.object) {
                self.terminating.insert(name.clone());
                self.push(&name);
            }
            return;
        }
        if let Some((namespace, _)) = change.key.split_once('/')
            && self.terminating.contains(namespace)
        {
            let namespace = namespace.to_string();
            self.push(&namespace);
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(name) = self.queue.pop_front() else {
            return false;
        };
        self.queued.remove(&name);
        if let Err(err) = self.sync(store, registry, &name) {
            tracing::warn!(namespace = %name, %err, "the namespace controller failed to process a namespace");
        }
        true
    }
}

#[cfg(test)]
mod tests;
