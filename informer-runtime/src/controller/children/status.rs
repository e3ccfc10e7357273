//! A declared status: what the parent's `status` should be, written with server-side apply
//! to its status subresource when the cached parent does not already hold it, or when it
//! holds more than was last applied (a field the function stopped returning, which the
//! apply removes). The apply carries the cached parent's resource version, so that a status
//! computed from a stale cache never lands on a newer object (a 409, left to the newer
//! version's reconcile).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use futures::future::BoxFuture;
use informer_core::ObjectKey;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::compare::holds;
use super::ownership::fnv1a;
use super::sync::SyncChildren;
use super::{BoxError, ChildrenError, ChildrenReport};
use crate::controller::ControllerResource;
use crate::controller::consistency::ReconcileClient;
use crate::controller::scope::ControllerScope;

/// What a parent's status should be, as JSON (`null`: leave it).
pub(crate) type StatusFn<P> = Arc<dyn Fn(&P) -> Result<Value, BoxError> + Send + Sync>;

/// The declared status of a controller of `P`.
pub(crate) struct StatusSet<P> {
    pub(crate) status: StatusFn<P>,
    pub(crate) client: Arc<ReconcileClient>,
    /// The field manager of every apply: the controller's name.
    pub(crate) field_manager: String,
    /// A hash of the status last applied to each parent by this process: a status that
    /// differs from it is applied even when the cached parent holds it, since the apply
    /// removes what the function no longer returns. Forgotten when the parent goes.
    pub(crate) applied: Mutex<HashMap<ObjectKey, u64>>,
}

/// The body of a server-side apply of `status` to the status subresource of `object`
/// (named `name`). The object's resource version is a precondition: a status computed from
/// this version must not land on a newer one, or on an object of the same name made since
/// (the status subresource ignores a UID in the body, not a resource version).
pub(crate) fn status_apply_body<P: ControllerResource>(
    object: &P,
    name: &str,
    status: Value,
) -> Value {
    let dt = P::DynamicType::default();
    let mut metadata = json!({"name": name});
    if let Some(version) = object.meta().resource_version.as_deref() {
        metadata["resourceVersion"] = json!(version);
    }
    json!({
        "apiVersion": P::api_version(&dt),
        "kind": P::kind(&dt),
        "metadata": metadata,
        "status": status,
    })
}

impl<P: ControllerResource + serde::Serialize> StatusSet<P> {
    async fn write(
        &self,
        key: &ObjectKey,
        parent: &P,
        report: &mut ChildrenReport,
    ) -> Result<(), ChildrenError> {
        let kind = P::kind(&P::DynamicType::default()).into_owned();
        let wanted = (self.status)(parent).map_err(|source| ChildrenError::Status {
            parent: key.clone(),
            source,
        })?;
        if wanted.is_null() {
            return Ok(());
        }
        let mut wanted = wanted;
        if let Value::Object(fields) = &mut wanted {
            // A plain `Option`'s `None` leaves the field out: removed if it was applied.
            super::sync::drop_nulls(fields);
        }
        let cached = serde_json::to_value(parent)
            .ok()
            .and_then(|mut p| p.get_mut("status").map(Value::take))
            .unwrap_or(Value::Null);
        let hash = fnv1a(&serde_json::to_vec(&wanted).unwrap_or_default());
        if holds(&cached, &wanted) {
            // Nothing to remove either: the status holds exactly what was last applied, or,
            // with nothing applied by this process yet, exactly what is wanted (a field the
            // function stopped returning while the controller was down is removed by one
            // apply after a restart).
            let nothing_to_remove = match self.applied.lock().get(key) {
                Some(last) => *last == hash,
                None => holds(&wanted, &cached),
            };
            if nothing_to_remove {
                return Ok(());
            }
        }
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let body = status_apply_body(parent, key.name(), wanted);
        let api = <P::Scope as ControllerScope>::api::<P>(client.clone(), key.namespace());
        let params = PatchParams::apply(&self.field_manager).force();
        match api
            .patch_status(key.name(), &params, &Patch::Apply(&body))
            .await
        {
            Ok(_) => {
                self.applied.lock().insert(key.clone(), hash);
                report.status_written = true;
                Ok(())
            }
            // The parent changed since the cache saw it: its status is computed again from
            // a newer version, after the backoff. Not left to the newer version's event,
            // which the controller's filters may drop (a change of metadata alone, under
            // `Filter::generation_changed()`), leaving the status stale for good.
            Err(kube::Error::Api(status)) if status.is_conflict() => {
                tracing::debug!(
                    parent = %key,
                    "the parent changed since the cache saw it; its status is written again after the backoff"
                );
                report.status_conflict = true;
                Ok(())
            }
            // The API server answers 404 both when the parent was deleted since the cache
            // saw it and when its resource has no status subresource: a read tells which.
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                match api.get_opt(key.name()).await {
                    Ok(Some(_)) => Err(ChildrenError::NoStatusSubresource {
                        parent: key.clone(),
                        kind,
                    }),
                    // Gone: it gets no status, and its deletion reconciles it again.
                    Ok(None) => {
                        tracing::debug!(parent = %key, "the parent is gone; its status is not written");
                        Ok(())
                    }
                    // Cannot tell: report the write's own error (retried).
                    Err(_) => Err(ChildrenError::StatusWrite {
                        parent: key.clone(),
                        source: kube::Error::Api(status),
                    }),
                }
            }
            Err(source) => Err(ChildrenError::StatusWrite {
                parent: key.clone(),
                source,
            }),
        }
    }
}

impl<P: ControllerResource + serde::Serialize> SyncChildren<P> for StatusSet<P> {
    fn sync<'a>(
        &'a self,
        key: &'a ObjectKey,
        parent: Option<&'a P>,
        report: &'a mut ChildrenReport,
    ) -> BoxFuture<'a, Result<(), ChildrenError>> {
        Box::pin(async move {
            match parent {
                Some(parent) if parent.meta().deletion_timestamp.is_none() => {
                    self.write(key, parent, report).await
                }
                // Gone, or going: no status to write.
                _ => {
                    self.applied.lock().remove(key);
                    Ok(())
                }
            }
        })
    }

    /// A status reports on the children and on the reconcile: not written while a child
    /// could not be brought in line (it would describe a child that is not there), nor
    /// after a failed reconcile (it would say all is well while `on_error` reports the
    /// failure, and the two would overwrite each other at every reconcile).
    fn after_reconcile(&self) -> bool {
        true
    }
}
