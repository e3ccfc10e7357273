//! One declared set of children of type `C`: compute what a parent wants, apply what the
//! cache does not already hold, delete what is no longer wanted.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;
use informer_core::ObjectKey;
use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy};
use serde::Serialize;
use serde_json::{Map, Value};

use super::compare::holds;
use super::ownership::{
    APPLIED_HASH_ANNOTATION, CONTROLLER_LABEL, OWNER_ANNOTATION, OWNER_UID_LABEL, Ownership, Tie,
    fnv1a,
};
use super::{BoxError, ChildRef, ChildrenError, ChildrenReport};
use crate::controller::ControllerResource;
use crate::controller::consistency::ReconcileClient;
use crate::controller::scope::ControllerScope;
use crate::events::{Event, EventRecorder, EventType};
use crate::factory::InformerParams;
use crate::lister::Lister;

/// What a parent wants of one child type.
pub(crate) type DesiredFn<P, C> = Arc<dyn Fn(&P) -> Result<Vec<C>, BoxError> + Send + Sync>;

/// One declared child type of a controller of `P`, type-erased over the child type.
pub(crate) trait SyncChildren<P>: Send + Sync {
    /// Brings the children of the parent at `key` in line: `parent` is the cached parent
    /// (`None`: gone). Adds what it did to `report`, and returns the first error met (the
    /// other children are still brought in line).
    fn sync<'a>(
        &'a self,
        key: &'a ObjectKey,
        parent: Option<&'a P>,
        report: &'a mut ChildrenReport,
    ) -> BoxFuture<'a, Result<(), ChildrenError>>;

    /// Whether this runs after the reconcile, and only when every child type was brought
    /// in line and the reconcile succeeded (a declared status, which reports on both).
    fn after_reconcile(&self) -> bool {
        false
    }

    /// Whether the children are Namespaces: brought in line before the other child types,
    /// which may be in them.
    fn makes_namespaces(&self) -> bool {
        false
    }
}

/// The children of type `C` of a controller of `P`.
pub(crate) struct ChildSet<P, C> {
    pub(crate) desired: DesiredFn<P, C>,
    /// The cache of this controller's children of type `C` (selected by its label).
    pub(crate) children: Lister<C>,
    /// The cache of parents: a child whose recorded parent is still there is not taken over.
    pub(crate) parents: Lister<P>,
    pub(crate) client: Arc<ReconcileClient>,
    /// The field manager of every apply: the controller's name.
    pub(crate) field_manager: String,
    pub(crate) ownership: Ownership,
    /// The namespace children are watched in (`None`: all).
    pub(crate) watched_namespace: Option<String>,
    /// What of the parents' resource the cache of parents holds (namespace, selectors): a
    /// parent outside it is out of the controller's view.
    pub(crate) parent_view: InformerParams,
    /// Create missing children only, never change existing ones
    /// ([`WatchOptions::create_only`](crate::controller::WatchOptions::create_only)).
    pub(crate) create_only: bool,
    /// The controller's recorder: a child whose name is taken is reported on its parent.
    pub(crate) recorder: EventRecorder,
}

/// What has the name of a child the cache does not hold ([`ChildSet::taken`]).
enum Found {
    /// Nothing: the child is created.
    Nothing,
    /// The parent's child, not in the cache yet, or one to adopt: it is applied to.
    Child,
    /// An object the controller may not take over.
    Refused(ChildrenError),
}

/// A child ready to apply: its key, and the JSON body.
#[derive(Debug)]
struct Prepared {
    key: ObjectKey,
    body: Value,
}

impl<P, C> ChildSet<P, C>
where
    P: ControllerResource,
    C: ControllerResource + Serialize,
{
    fn kind() -> String {
        C::kind(&C::DynamicType::default()).into_owned()
    }

    fn child_ref(key: &ObjectKey, uid: Option<String>) -> ChildRef {
        let dt = C::DynamicType::default();
        ChildRef {
            api_version: C::api_version(&dt).into_owned(),
            kind: Self::kind(),
            key: key.clone(),
            uid,
        }
    }

    /// The children of the parent at `key` in the cache.
    fn existing(&self, key: &ObjectKey) -> Vec<Arc<C>> {
        let index = self.ownership.index_name();
        self.children
            .indexer()
            .by_index(&index, &key.to_string())
            .unwrap_or_default()
    }

    /// `child` as the body of an apply: type and kind set, server-set fields and `status`
    /// dropped, the namespace defaulted, the ownership marks added, and the hash of it all
    /// in an annotation.
    fn prepare(
        &self,
        parent: &P,
        parent_key: &ObjectKey,
        child: &C,
    ) -> Result<Prepared, ChildrenError> {
        let kind = Self::kind();
        let mut body = serde_json::to_value(child).map_err(|source| ChildrenError::Serialize {
            kind: kind.clone(),
            source,
        })?;
        let Value::Object(fields) = &mut body else {
            return Err(ChildrenError::NotAnObject { kind });
        };
        // `None` of a plain `Option` (no `skip_serializing_if`) means "not set", not null.
        drop_nulls(fields);
        let dt = C::DynamicType::default();
        if kind == "Secret" && C::api_version(&dt) == "v1" {
            string_data_into_data(fields);
        }
        fields.insert("apiVersion".into(), C::api_version(&dt).into_owned().into());
        fields.insert("kind".into(), kind.clone().into());
        fields.remove("status");
        let meta = fields
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(meta) = meta else {
            return Err(ChildrenError::NotAnObject { kind });
        };
        for server_set in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(server_set);
        }
        let name = match meta.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => return Err(ChildrenError::NoName { kind }),
        };
        let namespace = self.child_namespace(
            parent_key,
            meta.get("namespace").and_then(Value::as_str),
            &kind,
            &name,
        )?;
        match &namespace {
            Some(ns) => meta.insert("namespace".into(), ns.clone().into()),
            None => meta.remove("namespace"),
        };
        let key = ObjectKey::new(namespace.as_deref(), &name);
        insert(meta, "labels", CONTROLLER_LABEL, &self.ownership.controller);
        let parent_meta = parent.meta();
        match self
            .ownership
            .tie(parent_key.namespace(), namespace.as_deref())
        {
            Tie::OwnerReference => {
                let reference = self.ownership.owner_reference(parent_meta);
                let refs = meta
                    .entry("ownerReferences")
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(refs) = refs else {
                    return Err(ChildrenError::NotAnObject { kind });
                };
                if refs.iter().any(|r| {
                    r.get("controller") == Some(&Value::Bool(true))
                        && r.get("uid").and_then(Value::as_str) != Some(reference.uid.as_str())
                }) {
                    return Err(ChildrenError::ControllerTaken { kind, key });
                }
                refs.retain(|r| {
                    r.get("uid").and_then(Value::as_str) != Some(reference.uid.as_str())
                });
                refs.push(serde_json::to_value(reference).map_err(|source| {
                    ChildrenError::Serialize {
                        kind: kind.clone(),
                        source,
                    }
                })?);
            }
            Tie::Labels => {
                let uid = parent_meta.uid.as_deref().unwrap_or_default();
                insert(meta, "labels", OWNER_UID_LABEL, uid);
                insert(
                    meta,
                    "annotations",
                    OWNER_ANNOTATION,
                    &parent_key.to_string(),
                );
            }
        }
        // Last: the hash of everything above.
        let hash = format!(
            "{:016x}",
            fnv1a(&serde_json::to_vec(&body).unwrap_or_default())
        );
        if let Some(Value::Object(meta)) = body.get_mut("metadata") {
            insert(meta, "annotations", APPLIED_HASH_ANNOTATION, &hash);
        }
        Ok(Prepared { key, body })
    }

    /// The namespace of a child that names `namespace` (or none): for a namespaced `C`,
    /// its own, else the one children are watched in, else its parent's; it must be one
    /// the children are watched in.
    fn child_namespace(
        &self,
        parent_key: &ObjectKey,
        namespace: Option<&str>,
        kind: &str,
        name: &str,
    ) -> Result<Option<String>, ChildrenError> {
        if !<C::Scope as ControllerScope>::NAMESPACED {
            return Ok(None);
        }
        let namespace = namespace
            .filter(|ns| !ns.is_empty())
            .or(self.watched_namespace.as_deref())
            .or(parent_key.namespace())
            .map(str::to_owned);
        let Some(namespace) = namespace else {
            return Err(ChildrenError::NoNamespace {
                kind: kind.to_owned(),
                name: name.to_owned(),
            });
        };
        if let Some(watched) = &self.watched_namespace
            && *watched != namespace
        {
            return Err(ChildrenError::OutsideWatch {
                kind: kind.to_owned(),
                key: ObjectKey::new(Some(&namespace), name),
                watched: watched.clone(),
            });
        }
        Ok(Some(namespace))
    }

    /// Whether the cached `child` belongs to another parent that still exists.
    fn belongs_elsewhere(&self, child: &C, parent_key: &ObjectKey) -> Option<ObjectKey> {
        let (owner, _) = self.ownership.parent_of(child.meta())?;
        (owner != *parent_key && self.parents.get(&owner).is_some()).then_some(owner)
    }

    /// Whether `parent` (as cached) still exists on the API server: same UID, not being
    /// deleted. Asked before a child is created: a cache can still hold a parent the server
    /// has deleted (its watch is behind, or being re-established), and a child created for
    /// it is deleted by the garbage collector at once, whose event reconciles the parent
    /// again, which creates the child again: a fight with the collector that lasts as long
    /// as the cache is behind. client-go's controllers read the owner live for the same
    /// reason before adopting (`RecheckDeletionTimestamp`). One GET, only when a child is
    /// missing or not tied to this parent (to be adopted).
    async fn parent_is_live(&self, key: &ObjectKey, parent: &P) -> Result<bool, ChildrenError> {
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let api = <P::Scope as ControllerScope>::api::<P>(client.clone(), key.namespace());
        let live = api
            .get_opt(key.name())
            .await
            .map_err(|source| ChildrenError::ParentRead {
                parent: key.clone(),
                source,
            })?;
        Ok(live.is_some_and(|live| {
            live.meta().uid == parent.meta().uid && live.meta().deletion_timestamp.is_none()
        }))
    }

    /// Whether the child at `child_key`, which the cache does not hold, may be written for
    /// the parent at `key`: [`Found::Nothing`] if it does not exist, [`Found::Child`] if it
    /// is this parent's (marked for it but not yet in the cache, or tied to it by a
    /// controlling owner reference: made by an earlier version of the controller, say) or
    /// an orphan of this controller's (marked by it, its recorded parent gone), and the
    /// error that refuses it otherwise. One GET, only for a child about to be created: the cache
    /// holds this controller's children only (selected by its label), so an object of that
    /// name made by anyone else is not in it, and an apply would take it over.
    async fn taken(
        &self,
        key: &ObjectKey,
        parent: &P,
        child_key: &ObjectKey,
    ) -> Result<Found, ChildrenError> {
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let api = <C::Scope as ControllerScope>::api::<C>(client.clone(), child_key.namespace());
        let live = api
            .get_opt(child_key.name())
            .await
            .map_err(|source| ChildrenError::Read {
                child: Box::new(Self::child_ref(child_key, None)),
                source,
            })?;
        let Some(live) = live else {
            return Ok(Found::Nothing);
        };
        if let Some((owner, _)) = self.ownership.parent_of(live.meta()) {
            if owner == *key || self.parents.get(&owner).is_none() {
                return Ok(Found::Child);
            }
            return Ok(Found::Refused(ChildrenError::OtherParent {
                child: Box::new(Self::child_ref(child_key, live.uid())),
                parent: owner,
            }));
        }
        let controller = live
            .meta()
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        if controller.is_some_and(|r| Some(&r.uid) == parent.meta().uid.as_ref()) {
            return Ok(Found::Child);
        }
        Ok(Found::Refused(ChildrenError::Exists {
            child: Box::new(Self::child_ref(child_key, live.uid())),
            controller: controller.map(|r| format!("{}/{}", r.kind, r.name)),
        }))
    }

    /// Reports `error` (a child this parent cannot have) on the parent as a Warning Event,
    /// as client-go's sample-controller reports `ErrResourceExists`.
    async fn report_taken(&self, parent: &P, error: &ChildrenError) {
        self.warn(parent, "ErrResourceExists", error).await;
    }

    /// Reports a write of a child that the API server refused for what it holds (`400`,
    /// `403`, `422`: a field that cannot change, a value a webhook or a policy refuses) on
    /// the parent as a Warning Event, `FailedCreate` or `FailedUpdate` as the workload
    /// controllers report theirs: retrying the same write cannot help, so the parent's
    /// events, not only the controller's log, should say why its children do not follow it.
    async fn report_refused(&self, parent: &P, error: &ChildrenError, exists: bool) {
        let ChildrenError::Apply {
            source: kube::Error::Api(status),
            ..
        } = error
        else {
            return;
        };
        if matches!(status.code, 400 | 403 | 422) {
            let reason = if exists {
                "FailedUpdate"
            } else {
                "FailedCreate"
            };
            self.warn(parent, reason, error).await;
        }
    }

    /// Publishes a Warning Event on the parent. A failure to publish is logged: the
    /// reconcile's error says it already.
    async fn warn(&self, parent: &P, reason: &str, error: &ChildrenError) {
        let event = Event {
            type_: EventType::Warning,
            reason: reason.into(),
            action: "ApplyChild".into(),
            note: Some(error.to_string()),
            related: None,
        };
        if let Err(publish_error) = self.recorder.publish_for(parent, &event).await {
            tracing::debug!(error = %publish_error, reason, "a Warning Event on a parent was not recorded");
        }
    }

    /// Applies `child`; returns the uid the API server answered with.
    async fn apply(&self, child: Prepared) -> Result<Option<String>, ChildrenError> {
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let api = <C::Scope as ControllerScope>::api::<C>(client.clone(), child.key.namespace());
        let params = PatchParams::apply(&self.field_manager).force();
        api.patch(child.key.name(), &params, &Patch::Apply(&child.body))
            .await
            .map(|written| written.meta().uid.clone())
            .map_err(|source| ChildrenError::Apply {
                child: Box::new(Self::child_ref(&child.key, None)),
                source,
            })
    }

    /// Creates `child` (a create-only child): `Some` with the uid the API server answered
    /// with, `None` if it exists already (`409 AlreadyExists`).
    async fn create(&self, child: Prepared) -> Result<Option<Option<String>>, ChildrenError> {
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let api = <C::Scope as ControllerScope>::api::<C>(client.clone(), child.key.namespace());
        let failed = |source| ChildrenError::Apply {
            child: Box::new(Self::child_ref(&child.key, None)),
            source,
        };
        let object: C = serde_json::from_value(child.body.clone())
            .map_err(|source| failed(kube::Error::SerdeError(source)))?;
        let params = PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..PostParams::default()
        };
        match api.create(&params, &object).await {
            Ok(created) => Ok(Some(created.meta().uid.clone())),
            Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => Ok(None),
            Err(source) => Err(failed(source)),
        }
    }

    /// Deletes `child`; returns it as a report names it, `None` if it was gone already.
    async fn delete(&self, child: &C) -> Result<Option<ChildRef>, ChildrenError> {
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let key = ObjectKey::new(child.namespace().as_deref(), &child.name_any());
        let api = <C::Scope as ControllerScope>::api::<C>(client.clone(), key.namespace());
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            preconditions: child.uid().map(|uid| Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(key.name(), &params).await {
            Ok(_) => Ok(Some(Self::child_ref(&key, child.uid()))),
            // Gone already, or replaced by another object of that name: nothing of ours.
            Err(kube::Error::Api(status)) if status.is_not_found() || status.is_conflict() => {
                Ok(None)
            }
            Err(source) => Err(ChildrenError::Delete {
                child: Box::new(Self::child_ref(&key, child.uid())),
                source,
            }),
        }
    }

    /// The children of a parent that is gone from the cache (or going): those tied by
    /// labels are deleted. Those tied by owner references are the garbage collector's when
    /// the parent is deleted (so that an orphaning deletion keeps them), and deleted here when
    /// the parent still exists but left the controller's view (its labels no longer match the
    /// controller's selector, say): the collector would never delete them.
    async fn parent_gone(
        &self,
        key: &ObjectKey,
        report: &mut ChildrenReport,
    ) -> Result<(), ChildrenError> {
        let (tied_by_labels, tied_by_owner): (Vec<_>, Vec<_>) = self
            .existing(key)
            .into_iter()
            .filter_map(|child| {
                let (_, tie) = self.ownership.parent_of(child.meta())?;
                Some((child, tie))
            })
            .partition(|(_, tie)| *tie == Tie::Labels);
        let mut first_error = None;
        self.delete_each(
            tied_by_labels.into_iter().map(|(child, _)| child),
            report,
            &mut first_error,
        )
        .await;
        if let Some((child, _)) = tied_by_owner.first() {
            let owner_uid = child
                .meta()
                .owner_references
                .iter()
                .flatten()
                .find(|r| r.controller == Some(true) && r.name == key.name())
                .map(|r| r.uid.clone());
            match self.left_view(key, owner_uid.as_deref()).await {
                Ok(true) => {
                    tracing::debug!(parent = %key, "the parent left the controller's view: its children go");
                    self.delete_each(
                        tied_by_owner.into_iter().map(|(child, _)| child),
                        report,
                        &mut first_error,
                    )
                    .await;
                }
                Ok(false) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Whether the parent at `key` with `uid` still exists on the API server (not being
    /// deleted) but outside what the cache of parents holds. Two requests: a GET, then,
    /// if it exists, a LIST of that name with the cache's namespace and selectors; in the
    /// list, the cache is only behind (its watch brings the parent back), so `false`.
    async fn left_view(&self, key: &ObjectKey, uid: Option<&str>) -> Result<bool, ChildrenError> {
        let Some(uid) = uid else {
            return Ok(false);
        };
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let read = |source| ChildrenError::ParentRead {
            parent: key.clone(),
            source,
        };
        let api = <P::Scope as ControllerScope>::api::<P>(client.clone(), key.namespace());
        let live = api.get_opt(key.name()).await.map_err(read)?;
        let alive = live.is_some_and(|live| {
            live.meta().uid.as_deref() == Some(uid) && live.meta().deletion_timestamp.is_none()
        });
        if !alive {
            return Ok(false);
        }
        let view = &self.parent_view;
        if view
            .namespace
            .as_deref()
            .is_some_and(|namespace| key.namespace() != Some(namespace))
        {
            return Ok(true);
        }
        let mut fields = format!("metadata.name={}", key.name());
        if let Some(selector) = &view.field_selector {
            fields = format!("{fields},{selector}");
        }
        let mut params = kube::api::ListParams::default().fields(&fields);
        if let Some(selector) = &view.label_selector {
            params = params.labels(selector);
        }
        let listed = api.list_metadata(&params).await.map_err(read)?;
        Ok(!listed
            .items
            .iter()
            .any(|parent| parent.metadata.uid.as_deref() == Some(uid)))
    }

    /// Deletes `children`, each deletion recorded in `report`; an error is kept in
    /// `first_error` if it is the first, and the other children are still deleted.
    async fn delete_each(
        &self,
        children: impl IntoIterator<Item = Arc<C>>,
        report: &mut ChildrenReport,
        first_error: &mut Option<ChildrenError>,
    ) {
        for child in children {
            match self.delete(&child).await {
                Ok(Some(deleted)) => report.deleted.push(deleted),
                Ok(None) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
    }

    async fn sync_present(
        &self,
        key: &ObjectKey,
        parent: &P,
        report: &mut ChildrenReport,
    ) -> Result<(), ChildrenError> {
        let desired = (self.desired)(parent).map_err(|source| ChildrenError::Desired {
            kind: Self::kind(),
            source,
        })?;
        let mut prepared = Vec::with_capacity(desired.len());
        let mut keys = HashSet::with_capacity(desired.len());
        for child in &desired {
            let child = self.prepare(parent, key, child)?;
            if !keys.insert(child.key.clone()) {
                return Err(ChildrenError::Twice {
                    kind: Self::kind(),
                    key: child.key,
                });
            }
            prepared.push(child);
        }
        let mut first_error = None;
        // Asked once, at the first child to create or adopt (see `parent_is_live`).
        let mut parent_live = None;
        // The children brought in line (for Namespaces: those whose children may follow).
        let mut in_line = HashSet::with_capacity(prepared.len());
        for child in prepared {
            if let Some(namespace) = child.key.namespace()
                && report.namespaces_not_in_line.iter().any(|n| n == namespace)
            {
                // Its namespace, a child of this parent, was refused or failed: writing in
                // it could write into someone else's namespace. It is not written (nor
                // deleted) until the namespace is in line; the namespace's error fails the
                // reconcile.
                tracing::debug!(parent = %key, child = %child.key, "its namespace is not in line: not written");
                continue;
            }
            let cached = self.children.get(&child.key);
            if self.create_only && cached.is_some() {
                // Made once, never changed: what the function wants now is not applied.
                report.unchanged += 1;
                in_line.insert(child.key);
                continue;
            }
            if let Some(cached) = &cached {
                if let Some(owner) = self.belongs_elsewhere(cached, key) {
                    let error = ChildrenError::OtherParent {
                        child: Box::new(Self::child_ref(&child.key, cached.uid())),
                        parent: owner,
                    };
                    self.report_taken(parent, &error).await;
                    first_error.get_or_insert(error);
                    continue;
                }
                let have = serde_json::to_value(&**cached).unwrap_or(Value::Null);
                if holds(&have, &child.body) {
                    report.unchanged += 1;
                    in_line.insert(child.key);
                    continue;
                }
            }
            // Creating the child, or tying a cached one to this parent (adopting it: an
            // orphaning deletion of the parent has just untied it, say): only for a parent
            // that is live. Re-tying an orphan to a parent being deleted would have the
            // garbage collector delete it once the parent is gone, as client-go's controllers
            // avoid by reading the owner live before they adopt.
            //
            // Tied (by an owner reference, or by the owner-uid label) means tied to this
            // parent's uid: a cached parent
            // older than the cached child (deleted and made again under its name while the
            // controller was down, say) is not the child's parent, and writing its uid as
            // the owner would have the garbage collector delete the child of its successor.
            // The live read then finds the parent stale.
            let tied = cached.as_ref().is_some_and(|cached| {
                match self.ownership.parent_of(cached.meta()) {
                    Some((owner, Tie::OwnerReference)) => {
                        owner == *key
                            && crate::controller::owner::is_controlled_by(&**cached, parent)
                    }
                    Some((owner, Tie::Labels)) => {
                        owner == *key
                            && cached.labels().get(OWNER_UID_LABEL).map(String::as_str)
                                == parent.meta().uid.as_deref()
                    }
                    None => false,
                }
            });
            if !tied {
                let live = match parent_live {
                    Some(live) => live,
                    None => *parent_live.insert(self.parent_is_live(key, parent).await?),
                };
                if !live {
                    tracing::debug!(
                        parent = %key,
                        child = %child.key,
                        "the parent is gone from the API server, or being deleted (the cache is behind): its children are not created or adopted"
                    );
                    continue;
                }
            }
            // Whether the child exists already (cached, or found by the check below): an
            // apply to it is an update (adopting it, say), not a creation.
            let mut exists = cached.is_some();
            if cached.is_none() {
                match self.taken(key, parent, &child.key).await {
                    Ok(Found::Nothing) => {}
                    Ok(Found::Child) => exists = true,
                    Ok(Found::Refused(error)) => {
                        self.report_taken(parent, &error).await;
                        first_error.get_or_insert(error);
                        continue;
                    }
                    Err(error) => {
                        first_error.get_or_insert(error);
                        continue;
                    }
                }
            }
            let child_key = child.key.clone();
            if self.create_only {
                match self.create(child).await {
                    Ok(Some(uid)) => report.created.push(Self::child_ref(&child_key, uid)),
                    // There already, unseen by the cache: kept as it is.
                    Ok(None) => report.unchanged += 1,
                    Err(error) => {
                        self.report_refused(parent, &error, false).await;
                        first_error.get_or_insert(error);
                        continue;
                    }
                }
                in_line.insert(child_key);
                continue;
            }
            match self.apply(child).await {
                Ok(uid) if exists => report.updated.push(Self::child_ref(&child_key, uid)),
                Ok(uid) => report.created.push(Self::child_ref(&child_key, uid)),
                Err(error) => {
                    self.report_refused(parent, &error, exists).await;
                    first_error.get_or_insert(error);
                    continue;
                }
            }
            in_line.insert(child_key);
        }
        if self.makes_namespaces() {
            let not_in_line = keys.iter().filter(|k| !in_line.contains(*k));
            report
                .namespaces_not_in_line
                .extend(not_in_line.map(|k| k.name().to_owned()));
        }
        let unwanted = self.existing(key).into_iter().filter(|child| {
            !keys.contains(&ObjectKey::new(
                child.namespace().as_deref(),
                &child.name_any(),
            ))
        });
        self.delete_each(unwanted, report, &mut first_error).await;
        first_error.map_or(Ok(()), Err)
    }
}

impl<P, C> SyncChildren<P> for ChildSet<P, C>
where
    P: ControllerResource,
    C: ControllerResource + Serialize,
{
    fn sync<'a>(
        &'a self,
        key: &'a ObjectKey,
        parent: Option<&'a P>,
        report: &'a mut ChildrenReport,
    ) -> BoxFuture<'a, Result<(), ChildrenError>> {
        Box::pin(async move {
            match parent {
                // Being deleted: children are not made again behind the garbage collector.
                Some(parent) if parent.meta().deletion_timestamp.is_none() => {
                    if parent.meta().uid.as_deref().is_none_or(str::is_empty) {
                        return Err(ChildrenError::ParentWithoutUid {
                            parent: key.clone(),
                        });
                    }
                    self.sync_present(key, parent, report).await
                }
                _ => self.parent_gone(key, report).await,
            }
        })
    }

    fn makes_namespaces(&self) -> bool {
        let dt = C::DynamicType::default();
        C::kind(&dt) == "Namespace" && C::group(&dt).is_empty()
    }
}

/// Removes the null fields of `map` and of the objects in it (a serialized `None`): an
/// apply that sends `"replicas": null` would store null where nothing was meant, and a
/// cached object without the field would never hold it.
/// A Secret's `stringData` merged into its `data` (base64), as the API server stores it
/// (`stringData` wins over `data` for a key in both): applied as `stringData`, the child
/// would never be seen as held by the cached copy, which has `data` only, and would be
/// applied again on every reconcile.
fn string_data_into_data(fields: &mut Map<String, Value>) {
    let Some(Value::Object(strings)) = fields.remove("stringData") else {
        return;
    };
    let data = fields
        .entry("data")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(data) = data {
        for (key, value) in strings {
            if let Value::String(text) = value {
                let bytes = k8s_openapi::ByteString(text.into_bytes());
                data.insert(key, serde_json::to_value(bytes).unwrap_or(Value::Null));
            }
        }
    }
}

pub(crate) fn drop_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, value| !value.is_null());
    for value in map.values_mut() {
        match value {
            Value::Object(inner) => drop_nulls(inner),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item {
                        drop_nulls(inner);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Sets `map[field][key] = value`, making `map[field]` if needed.
fn insert(map: &mut Map<String, Value>, field: &str, key: &str, value: &str) {
    let entry = map
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(entries) = entry {
        entries.insert(key.to_owned(), value.into());
    }
}

#[cfg(test)]
mod tests;
