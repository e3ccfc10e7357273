//! The garbage collector, as kube-controller-manager's (`pkg/controller/garbagecollector`):
//! objects whose owners (`metadata.ownerReferences`) are all gone are deleted, and deleting an
//! owner propagates to its dependents as the request asked.
//!
//! | propagation | the owner | its dependents |
//! | --- | --- | --- |
//! | `Background` (the default) | goes at once | those with no owner left are deleted; the others lose their dangling references |
//! | `Foreground` | stays, with `deletionTimestamp` and the `foregroundDeletion` finalizer | are deleted (foreground too, when they have dependents); the owner goes once no dependent with `blockOwnerDeletion: true` is left |
//! | `Orphan` (or `orphanDependents: true`) | stays with the `orphan` finalizer until its dependents no longer reference it, then goes | stay, without the reference |
//!
//! The API server's side (which finalizers a DELETE adds, from `propagationPolicy`,
//! `orphanDependents`, the object's finalizers and the type's default) is
//! [`deletion_finalizers`]; the collector's side is [`GarbageCollector`], which the server
//! runs as a [`Controller`](super::controllers::Controller).
//!
//! Owners are looked up as the real collector looks them up: by kind, name and, for a
//! namespaced owner, the dependent's namespace; the UID must match. So a reference to a UID
//! that does not exist, or whose object was replaced, is dangling, and so is a reference to a
//! namespaced owner in another namespace (reported as a `Warning` event
//! `OwnerRefInvalidNamespace`, as in Kubernetes 1.20+). A cluster-scoped dependent of a
//! namespaced kind, or an owner of a kind the server does not serve, cannot be resolved: the
//! dependent is left alone. A dependent with finalizers of its own is only marked with a
//! `deletionTimestamp` and waits for them.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use serde_json::{Value, json};

use super::controllers::Controller;
use super::resource::{Registry, ResourceKey, ResourceType};
use super::status::ApiError;
use super::storage::{Change, DeleteOptions, EventType, ObjectRef, Snapshot, Store, Subresource};
use super::time::now_rfc3339;

/// The finalizer that orphans an object's dependents before it goes.
pub(crate) const ORPHAN: &str = "orphan";
/// The finalizer that keeps an object until its blocking dependents are gone.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    /// Dependents stay, without the reference to the deleted owner.
    Orphan,
    /// The owner goes at once; the collector deletes the dependents afterwards.
    Background,
    /// The owner waits for its blocking dependents to be deleted.
    Foreground,
}

impl Propagation {
    /// Every value, in the order the API server lists them.
    pub(crate) const ALL: [Propagation; 3] = [
        Propagation::Foreground,
        Propagation::Background,
        Propagation::Orphan,
    ];

    /// The policy a value names (`Orphan`, `Background`, `Foreground`).
    pub(crate) fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == value)
    }

    /// The value's name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Propagation::Orphan => "Orphan",
            Propagation::Background => "Background",
            Propagation::Foreground => "Foreground",
        }
    }
}

/// Whether deleting objects of this type involves the garbage collector at all (the
/// registry's `DefaultGarbageCollectionPolicy`: `Unsupported` for core Events).
fn collects(resource: &ResourceType) -> bool {
    !(resource.group.is_empty() && resource.plural == "events")
}

/// Whether a DELETE that names no policy orphans the object's dependents: the registry's
/// `DefaultGarbageCollectionPolicy` is `OrphanDependents` for batch/v1 Jobs and core/v1
/// ReplicationControllers, kept so for backward compatibility (their pods survive them);
/// every other type the server serves deletes its dependents in the background.
fn orphans_by_default(resource: &ResourceType) -> bool {
    !resource.custom
        && matches!(
            (resource.group.as_str(), resource.kind.as_str()),
            ("batch", "Job") | ("", "ReplicationController")
        )
}

/// What kube-apiserver's Job registry warns of on a DELETE (or deletecollection) that names
/// no policy: the Job's pods are kept.
const JOB_PODS_KEPT: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// The warnings a DELETE of `resource` with `options` gets: [`JOB_PODS_KEPT`] for a Job
/// deleted without a policy.
pub(crate) fn delete_warnings(resource: &ResourceType, options: &DeleteOptions) -> Vec<String> {
    let unspecified = options.orphan_dependents.is_none() && options.propagation.is_none();
    if unspecified && !resource.custom && resource.group == "batch" && resource.kind == "Job" {
        vec![JOB_PODS_KEPT.to_string()]
    } else {
        Vec::new()
    }
}

/// The finalizers a DELETE leaves on `object`, if they differ from the ones it has:
/// kube-apiserver's `deletionFinalizersForGarbageCollection`. An explicit `orphanDependents`
/// wins, then `propagationPolicy`, then an `orphan` or `foregroundDeletion` finalizer already
/// there, then the type's default (orphan for Jobs and ReplicationControllers, background:
/// neither finalizer, for the others).
pub(crate) fn deletion_finalizers(
    resource: &ResourceType,
    object: &Value,
    options: &DeleteOptions,
) -> Option<Vec<Value>> {
    if !collects(resource) {
        return None;
    }
    let current = finalizer_names(object);
    // The first of the two finalizers the object has decides when the request does not.
    let existing = current
        .iter()
        .find(|f| *f == ORPHAN || *f == FOREGROUND)
        .cloned();
    let orphan = match (options.orphan_dependents, options.propagation) {
        (Some(orphan), _) => orphan,
        (None, Some(policy)) => policy == Propagation::Orphan,
        (None, None) => match existing.as_deref() {
            Some(finalizer) => finalizer == ORPHAN,
            None => orphans_by_default(resource),
        },
    };
    let foreground = match (options.orphan_dependents, options.propagation) {
        (Some(_), _) => false,
        (None, Some(policy)) => policy == Propagation::Foreground,
        (None, None) => existing.as_deref() == Some(FOREGROUND),
    };
    let mut wanted: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        wanted.push(ORPHAN.to_string());
    }
    if foreground {
        wanted.push(FOREGROUND.to_string());
    }
    let same = |a: &[String], b: &[String]| {
        a.iter().collect::<HashSet<_>>() == b.iter().collect::<HashSet<_>>()
    };
    (!same(&current, &wanted)).then(|| wanted.into_iter().map(Value::String).collect())
}

/// The names in `metadata.finalizers`.
pub(crate) fn finalizer_names(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn has_finalizer(object: &Value, name: &str) -> bool {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|fs| fs.iter().any(|f| f == name))
}

/// Whether the object has a `deletionTimestamp`.
pub(crate) fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether the object waits for its dependents (foreground deletion in progress).
fn is_deleting_dependents(object: &Value) -> bool {
    is_deleting(object) && has_finalizer(object, FOREGROUND)
}

/// Whether `object` is being deleted with `finalizer` and `previous` was not.
fn starts_deleting_with(previous: Option<&Value>, object: &Value, finalizer: &str) -> bool {
    let with = |o: &Value| is_deleting(o) && has_finalizer(o, finalizer);
    with(object) && !previous.is_some_and(with)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

fn uid_of(object: &Value) -> Option<&str> {
    meta_str(object, "uid").filter(|u| !u.is_empty())
}

fn name_of(object: &Value) -> &str {
    meta_str(object, "name").unwrap_or("")
}

fn namespace_of(object: &Value) -> Option<&str> {
    meta_str(object, "namespace").filter(|n| !n.is_empty())
}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    /// `blockOwnerDeletion: true`.
    blocks: bool,
}

fn raw_owner_refs(object: &Value) -> Option<&Vec<Value>> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .filter(|refs| !refs.is_empty())
}

fn owner_refs(object: &Value) -> Vec<OwnerRef> {
    let text = |r: &Value, field: &str| {
        r.get(field)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    raw_owner_refs(object)
        .map(|refs| {
            refs.iter()
                .map(|r| OwnerRef {
                    api_version: text(r, "apiVersion"),
                    kind: text(r, "kind"),
                    name: text(r, "name"),
                    uid: text(r, "uid"),
                    blocks: r.get("blockOwnerDeletion") == Some(&Value::Bool(true)),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the owner references to these UIDs.
fn remove_owner_refs(object: &mut Value, uids: &[String]) {
    if let Some(refs) = object
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        refs.retain(|r| {
            !r.get("uid")
                .and_then(Value::as_str)
                .is_some_and(|uid| uids.iter().any(|u| u == uid))
        });
    }
}

fn remove_finalizer(object: &mut Value, name: &str) {
    if let Some(finalizers) = object
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        finalizers.retain(|f| f != name);
    }
}

/// The served type stored under `key`.
fn resource_of(registry: &Registry, key: &ResourceKey) -> Result<Arc<ResourceType>, ApiError> {
    registry
        .types()
        .iter()
        .find(|t| t.key() == *key)
        .cloned()
        .ok_or_else(|| {
            ApiError::internal(
                "the garbage collector met an object of a type the server no longer serves",
            )
        })
}

/// What the collector does with one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Task {
    /// Decide whether the object goes (client-go's `attemptToDeleteItem`); for an owner in
    /// foreground deletion, whether its blocking dependents are gone.
    Attempt,
    /// Remove the references of the owner's dependents to it, then its `orphan` finalizer.
    Orphan,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Item {
    task: Task,
    at: ObjectRef,
    /// The object's UID when the work was queued: a different object at the same place is
    /// left alone.
    uid: Arc<str>,
}

/// How a dependent's reference to an owner stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// The owner exists and is not deleting its dependents.
    Solid,
    /// The owner does not exist (in the place the reference can mean).
    Dangling,
    /// The owner waits in foreground deletion for its dependents.
    Waiting,
}

/// The garbage collector's queue and memory; see the [module](self) for what it does.
#[derive(Debug, Default)]
pub(crate) struct GarbageCollector {
    queue: VecDeque<Item>,
    queued: HashSet<Item>,
    /// (dependent UID, owner UID) pairs reported as invalid cross-namespace references.
    reported: HashSet<(String, String)>,
}

impl GarbageCollector {
    fn push(&mut self, task: Task, at: ObjectRef, uid: &str) {
        let item = Item {
            task,
            at,
            uid: Arc::from(uid),
        };
        if self.queued.insert(item.clone()) {
            self.queue.push_back(item);
        }
    }

    /// Queues an attempt for each current dependent of `owner_uid`.
    fn push_dependents(&mut self, store: &Store, owner_uid: &str) {
        for at in store.dependents(owner_uid) {
            if let Some(uid) = store.object_at(&at).as_deref().and_then(uid_of) {
                let uid = uid.to_string();
                self.push(Task::Attempt, at, &uid);
            }
        }
    }

    /// The object a queued item is about, if it is still there.
    fn current(store: &Store, item: &Item) -> Option<Value> {
        let object = store.object_at(&item.at)?;
        (uid_of(&object) == Some(&*item.uid)).then(|| object.as_ref().clone())
    }

    /// Attempts to delete `item`'s object, as client-go's `attemptToDeleteItem`.
    fn attempt(
        &mut self,
        store: &mut Store,
        registry: &Registry,
        item: &Item,
    ) -> Result<(), ApiError> {
        let Some(object) = Self::current(store, item) else {
            return Ok(());
        };
        if is_deleting_dependents(&object) {
            return self.deleting_dependents(store, registry, item, &object);
        }
        if is_deleting(&object) {
            // Its own finalizers hold it; nothing for the collector to do.
            return Ok(());
        }
        let refs = owner_refs(&object);
        if refs.is_empty() {
            return Ok(());
        }
        let (mut solid, mut waiting, mut drop_refs) = (0, 0, Vec::new());
        for reference in &refs {
            match self.classify(store, registry, &object, reference) {
                // An owner that cannot be resolved: leave the object as it is.
                None => return Ok(()),
                Some(Owner::Solid) => solid += 1,
                Some(Owner::Dangling) => drop_refs.push(reference.uid.clone()),
                Some(Owner::Waiting) => {
                    waiting += 1;
                    drop_refs.push(reference.uid.clone());
                }
            }
        }
        let resource = resource_of(registry, &item.at.resource)?;
        if solid > 0 {
            if drop_refs.is_empty() {
                return Ok(());
            }
            // Some owner remains: only the references to the others go (otherwise an owner
            // waiting for this dependent would wait forever).
            tracing::debug!(object = %item.at.key, "the garbage collector removes dangling owner references");
            return rewrite(store, &resource, &object, |o| {
                remove_owner_refs(o, &drop_refs)
            });
        }
        let has_dependents = !store.dependents(&item.uid).is_empty();
        let policy = if waiting > 0 && has_dependents {
            // Its owner waits in the foreground: so does it, for its own dependents. A
            // dependent also deleting its dependents may be waiting for this object: the
            // references stop blocking, so that neither waits for the other forever.
            let cycle = store
                .dependents(&item.uid)
                .iter()
                .filter_map(|at| store.object_at(at))
                .any(|d| is_deleting_dependents(&d));
            if cycle {
                rewrite(store, &resource, &object, unblock_owner_refs)?;
            }
            Propagation::Foreground
        } else if has_finalizer(&object, ORPHAN) {
            Propagation::Orphan
        } else if has_finalizer(&object, FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        tracing::debug!(object = %item.at.key, policy = policy.as_str(), "the garbage collector deletes an object whose owners are gone");
        let options = DeleteOptions {
            uid: Some(item.uid.to_string()),
            propagation: Some(policy),
            ..DeleteOptions::default()
        };
        match store.delete(
            &resource,
            namespace_of(&object),
            name_of(&object),
            &options,
            false,
        ) {
            Ok(_) => Ok(()),
            Err(err) if err.code() == 404 || err.code() == 409 => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// An owner in foreground deletion: it goes once no dependent blocks it; meanwhile its
    /// blocking dependents are deleted (client-go's `processDeletingDependentsItem`).
    fn deleting_dependents(
        &mut self,
        store: &mut Store,
        registry: &Registry,
        item: &Item,
        owner: &Value,
    ) -> Result<(), ApiError> {
        let blocking: Vec<(ObjectRef, Value)> = store
            .dependents(&item.uid)
            .into_iter()
            .filter_map(|at| store.object_at(&at).map(|o| (at, o.as_ref().clone())))
            .filter(|(_, d)| owner_refs(d).iter().any(|r| r.uid == *item.uid && r.blocks))
            .collect();
        if blocking.is_empty() {
            tracing::debug!(object = %item.at.key, "no dependent blocks the owner: its foregroundDeletion finalizer goes");
            let resource = resource_of(registry, &item.at.resource)?;
            return rewrite(store, &resource, owner, |o| remove_finalizer(o, FOREGROUND));
        }
        for (at, dependent) in blocking {
            if !is_deleting_dependents(&dependent)
                && let Some(uid) = uid_of(&dependent)
            {
                let uid = uid.to_string();
                self.push(Task::Attempt, at, &uid);
            }
        }
        Ok(())
    }

    /// Orphans an owner's dependents, then lets it go (client-go's `attemptToOrphanWorker`).
    fn orphan(
        &mut self,
        store: &mut Store,
        registry: &Registry,
        item: &Item,
    ) -> Result<(), ApiError> {
        let Some(owner) = Self::current(store, item) else {
            return Ok(());
        };
        if !(is_deleting(&owner) && has_finalizer(&owner, ORPHAN)) {
            return Ok(());
        }
        let owner_uid = [item.uid.to_string()];
        for at in store.dependents(&item.uid) {
            let Some(dependent) = store.object_at(&at) else {
                continue;
            };
            let dependent = dependent.as_ref().clone();
            let resource = resource_of(registry, &at.resource)?;
            match rewrite(store, &resource, &dependent, |o| {
                remove_owner_refs(o, &owner_uid)
            }) {
                Ok(()) => {}
                Err(err) if err.code() == 404 => {}
                Err(err) => return Err(err),
            }
        }
        tracing::debug!(object = %item.at.key, "dependents orphaned: the orphan finalizer goes");
        let resource = resource_of(registry, &item.at.resource)?;
        rewrite(store, &resource, &owner, |o| remove_finalizer(o, ORPHAN))
    }

    /// How `dependent`'s reference to an owner stands; `None` when it cannot be resolved
    /// (an owner kind the server does not serve, or a namespaced owner of a cluster-scoped
    /// dependent).
    fn classify(
        &mut self,
        store: &mut Store,
        registry: &Registry,
        dependent: &Value,
        reference: &OwnerRef,
    ) -> Option<Owner> {
        let Some(owner_type) = registry.by_kind(&reference.api_version, &reference.kind) else {
            tracing::debug!(
                dependent = name_of(dependent),
                api_version = %reference.api_version,
                kind = %reference.kind,
                "an owner reference names a kind the server does not serve; the dependent stays"
            );
            return None;
        };
        let namespace = namespace_of(dependent);
        if owner_type.namespaced && namespace.is_none() {
            self.report_invalid_namespace(store, registry, dependent, reference);
            return None;
        }
        let namespace = if owner_type.namespaced {
            namespace
        } else {
            None
        };
        match store.get(&owner_type, namespace, &reference.name) {
            Ok(owner) if uid_of(&owner) == Some(reference.uid.as_str()) => {
                Some(if is_deleting_dependents(&owner) {
                    Owner::Waiting
                } else {
                    Owner::Solid
                })
            }
            _ => {
                let elsewhere = store.object_by_uid(&reference.uid).is_some_and(|(_, o)| {
                    namespace_of(&o).is_some() && namespace_of(&o) != namespace
                });
                if owner_type.namespaced && elsewhere {
                    self.report_invalid_namespace(store, registry, dependent, reference);
                }
                Some(Owner::Dangling)
            }
        }
    }

    /// Records a `Warning` event `OwnerRefInvalidNamespace` about `dependent`, once.
    fn report_invalid_namespace(
        &mut self,
        store: &mut Store,
        registry: &Registry,
        dependent: &Value,
        reference: &OwnerRef,
    ) {
        let dependent_uid = uid_of(dependent).unwrap_or("").to_string();
        if !self
            .reported
            .insert((dependent_uid.clone(), reference.uid.clone()))
        {
            return;
        }
        let Some(events) = registry.by_path("", "v1", "events") else {
            return;
        };
        let namespace = namespace_of(dependent).unwrap_or("");
        let now = now_rfc3339();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let text = |field: &str| dependent.get(field).cloned().unwrap_or(Value::Null);
        let event = json!({
            "metadata": {"name": format!("{}.{nanos:x}", name_of(dependent))},
            "involvedObject": {
                "kind": text("kind"),
                "apiVersion": text("apiVersion"),
                "namespace": namespace,
                "name": name_of(dependent),
                "uid": dependent_uid,
            },
            "reason": "OwnerRefInvalidNamespace",
            "message": format!(
                "ownerRef [{}/{}, namespace: {namespace}, name: {}, uid: {}] does not exist in namespace {namespace:?}",
                reference.api_version, reference.kind, reference.name, reference.uid
            ),
            "source": {"component": "garbage-collector-controller"},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": "Warning",
            "reportingComponent": "garbage-collector-controller",
            "reportingInstance": "",
        });
        let event_namespace = if namespace.is_empty() {
            "default"
        } else {
            namespace
        };
        if let Err(err) = store.create(&events, Some(event_namespace), event, false) {
            tracing::debug!(%err, "failed to record an OwnerRefInvalidNamespace event");
        }
    }
}

/// Sets `blockOwnerDeletion: false` on every owner reference that blocks.
fn unblock_owner_refs(object: &mut Value) {
    if let Some(refs) = object
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for reference in refs {
            if reference.get("blockOwnerDeletion") == Some(&Value::Bool(true)) {
                reference["blockOwnerDeletion"] = Value::Bool(false);
            }
        }
    }
}

/// Writes a changed copy of a stored object (as an update would: removing the last finalizer
/// of an object being deleted deletes it).
fn rewrite(
    store: &mut Store,
    resource: &ResourceType,
    object: &Value,
    change: impl FnOnce(&mut Value),
) -> Result<(), ApiError> {
    let mut changed = object.clone();
    change(&mut changed);
    if changed == *object {
        return Ok(());
    }
    store
        .update(
            resource,
            namespace_of(object),
            name_of(object),
            changed,
            Subresource::Main,
            false,
        )
        .map(drop)
}

impl Controller for GarbageCollector {
    const NAME: &'static str = "garbage-collector";

    fn resync(&mut self, state: &Snapshot) {
        for (at, object) in state.every_object() {
            let Some(uid) = uid_of(object) else {
                continue;
            };
            if is_deleting(object) && has_finalizer(object, ORPHAN) {
                self.push(Task::Orphan, at, uid);
            } else if raw_owner_refs(object).is_some() || is_deleting_dependents(object) {
                self.push(Task::Attempt, at, uid);
            }
        }
    }

    fn observe(&mut self, store: &Store, change: &Change) {
        let object: &Value = &change.object;
        let Some(uid) = uid_of(object) else {
            return;
        };
        let at = ObjectRef {
            resource: change.resource.clone(),
            key: change.key.clone(),
        };
        let previous = change.previous.as_deref();
        match change.event {
            EventType::Added | EventType::Modified => {
                let refs = raw_owner_refs(object);
                if refs.is_some()
                    && (change.event == EventType::Added
                        || refs != previous.and_then(raw_owner_refs))
                {
                    self.push(Task::Attempt, at.clone(), uid);
                }
                // Owners this object stopped blocking may be free to go.
                if let Some(previous) = previous {
                    let now = owner_refs(object);
                    for before in owner_refs(previous).into_iter().filter(|r| r.blocks) {
                        let still = now.iter().any(|r| r.uid == before.uid && r.blocks);
                        if !still && let Some((owner_at, _)) = store.object_by_uid(&before.uid) {
                            self.push(Task::Attempt, owner_at, &before.uid);
                        }
                    }
                }
                if starts_deleting_with(previous, object, ORPHAN) {
                    self.push(Task::Orphan, at, uid);
                } else if starts_deleting_with(previous, object, FOREGROUND) {
                    self.push_dependents(store, uid);
                    self.push(Task::Attempt, at, uid);
                }
            }
            EventType::Deleted => {
                self.push_dependents(store, uid);
                for reference in owner_refs(object) {
                    if let Some((owner_at, owner)) = store.object_by_uid(&reference.uid)
                        && is_deleting_dependents(&owner)
                    {
                        self.push(Task::Attempt, owner_at, &reference.uid);
                    }
                }
            }
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(item) = self.queue.pop_front() else {
            return false;
        };
        self.queued.remove(&item);
        let result = match item.task {
            Task::Attempt => self.attempt(store, registry, &item),
            Task::Orphan => self.orphan(store, registry, &item),
        };
        if let Err(err) = result {
            tracing::warn!(object = %item.at.key, %err, "the garbage collector failed to process an object");
        }
        true
    }
}

#[cfg(test)]
mod tests;
