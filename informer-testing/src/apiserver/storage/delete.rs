//! Deletion, as kube-apiserver's generic registry deletes (`Store.Delete`): preconditions, the
//! garbage collector's finalizers (`orphan`, `foregroundDeletion`) as the `DeleteOptions` and
//! the object's own finalizers ask, then either the deletion or, while finalizers remain, a
//! `deletionTimestamp`. Pods are deleted gracefully, with period 0 (see [`Store::delete_pod`]).
//! Namespaces are deleted as the namespace registry deletes them: the
//! first DELETE marks the namespace `Terminating`; it goes once its finalizers (in
//! `metadata.finalizers` and `spec.finalizers`) are all removed.

use serde_json::{Value, json};

use super::{
    DeleteOptions, DeleteOutcome, EventType, Object, Store, finalizers, object_key,
    resource_version, set_meta,
};
use crate::apiserver::crd;
use crate::apiserver::gc;
use crate::apiserver::namespaces;
use crate::apiserver::pods;
use crate::apiserver::resource::ResourceType;
use crate::apiserver::status::ApiError;
use crate::apiserver::time::now_rfc3339;

impl Store {
    /// Deletes an object, or marks it with a `deletionTimestamp` when finalizers remain
    /// (its own, or the garbage collector's that the propagation policy adds).
    pub(crate) fn delete(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<DeleteOutcome, ApiError> {
        let old = self.get(resource, namespace, name)?;
        check_preconditions(resource, name, &old, options)?;
        if crd::is_definition(resource) && old.pointer("/metadata/deletionTimestamp").is_none() {
            // The CRD registry's own delete: the timestamp, its cleanup finalizer and the
            // Terminating condition (no grace period, no new generation).
            let mut marked = old.as_ref().clone();
            set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
            crd::mark_deleting(&mut marked);
            return Ok(DeleteOutcome::Pending(
                self.mark(resource, namespace, name, old, marked, dry_run),
            ));
        }
        if namespaces::is_namespace(resource) && !namespaces::is_terminating(&old) {
            let marked = namespaces::mark_terminating(&old, options);
            return Ok(DeleteOutcome::Pending(
                self.mark(resource, namespace, name, old, marked, dry_run),
            ));
        }
        if namespaces::is_namespace(resource) && !namespaces::spec_finalizers(&old).is_empty() {
            // Terminating: the namespace controller removes it once its content is gone.
            return Ok(DeleteOutcome::Pending(old));
        }
        let mut marked = old.as_ref().clone();
        if let Some(changed) = gc::deletion_finalizers(resource, &old, options) {
            set_meta(&mut marked, "finalizers", Value::Array(changed));
        }
        if pods::is_pod(resource) && old.pointer("/metadata/deletionTimestamp").is_none() {
            return Ok(self.delete_pod(resource, namespace, name, old, marked, dry_run));
        }
        if finalizers(&marked).is_empty() {
            if dry_run {
                return Ok(DeleteOutcome::Deleted(old));
            }
            let key = object_key(resource, namespace, name);
            let deleted = self.commit(resource, key, EventType::Deleted, marked, Some(old));
            return Ok(DeleteOutcome::Deleted(deleted));
        }
        mark_as_deleting(&mut marked);
        Ok(DeleteOutcome::Pending(
            self.mark(resource, namespace, name, old, marked, dry_run),
        ))
    }

    /// A Pod's graceful deletion (`marked`: the Pod with the garbage collector's finalizers
    /// as the options ask). The Pod strategy's `CheckGracefulDelete` makes every Pod's delete
    /// graceful, and `rest.BeforeDelete` sets `deletionTimestamp` (now plus the period),
    /// `deletionGracePeriodSeconds` and the next `generation`, which
    /// `Store.updateForGracefulDeletionAndFinalizers` writes (watchers see MODIFIED). With
    /// period 0 and no finalizers the Pod is then deleted at once (DELETED of the marked
    /// Pod), and the answer is the marked Pod. The period is 0 here for every Pod: it is for
    /// an unscheduled or finished one, and no kubelet runs to end a scheduled one's
    /// containers and delete it after a longer one.
    fn delete_pod(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        old: Object,
        mut marked: Value,
        dry_run: bool,
    ) -> DeleteOutcome {
        mark_as_deleting(&mut marked);
        let marked = self.mark(resource, namespace, name, old, marked, dry_run);
        if !finalizers(&marked).is_empty() {
            return DeleteOutcome::Pending(marked);
        }
        if dry_run {
            // `Store.Delete` answers a dry run with the dry-run update's object.
            return DeleteOutcome::Deleted(marked);
        }
        let key = object_key(resource, namespace, name);
        let deleted = self.commit(
            resource,
            key,
            EventType::Deleted,
            marked.as_ref().clone(),
            Some(marked),
        );
        DeleteOutcome::Deleted(deleted)
    }

    /// Stores `marked` (a deletion in progress) unless nothing changed; the object as it
    /// now is (as it would be, in a dry run).
    fn mark(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        old: Object,
        mut marked: Value,
        dry_run: bool,
    ) -> Object {
        set_meta(
            &mut marked,
            "resourceVersion",
            json!(resource_version(&old)),
        );
        if marked == *old {
            return old;
        }
        if dry_run {
            return Object::new(marked);
        }
        let key = object_key(resource, namespace, name);
        self.commit(resource, key, EventType::Modified, marked, Some(old))
    }
}

/// The `uid` and `resourceVersion` preconditions of a delete.
fn check_preconditions(
    resource: &ResourceType,
    name: &str,
    old: &Value,
    options: &DeleteOptions,
) -> Result<(), ApiError> {
    // `rest.BeforeDelete` checks them first, naming the object by its kind; the CRD
    // registry's own delete checks them as the storage does, naming the resource.
    let definition = crd::is_definition(resource);
    let conflict = |why: String| {
        let named = if definition {
            resource.qualified_resource()
        } else {
            resource.qualified_kind()
        };
        ApiError::conflict(&named, name, &why)
    };
    if let Some(uid) = &options.uid {
        let actual = old
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        if uid != actual {
            return Err(conflict(if definition {
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                )
            } else {
                format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
                )
            }));
        }
    }
    if let Some(rv) = &options.resource_version {
        let actual = resource_version(old);
        if *rv != actual {
            return Err(conflict(if definition {
                format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                )
            } else {
                format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({actual}). The object might have been modified"
                )
            }));
        }
    }
    Ok(())
}

/// kube-apiserver's `markAsDeleting`: the first mark sets `deletionTimestamp` and, for types
/// that keep one, moves `generation` on; the grace period is 0.
fn mark_as_deleting(object: &mut Value) {
    if object.pointer("/metadata/deletionTimestamp").is_none() {
        if let Some(generation) = object
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
        {
            set_meta(object, "generation", json!(generation + 1));
        }
        set_meta(object, "deletionTimestamp", json!(now_rfc3339()));
    }
    set_meta(object, "deletionGracePeriodSeconds", json!(0));
}
