//! A declared status: what the parent's `status` should be, written with server-side apply
//! to its status subresource when the cached parent does not already hold it.

use std::sync::Arc;

use futures::future::BoxFuture;
use informer_core::ObjectKey;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::compare::holds;
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
        let cached = serde_json::to_value(parent)
            .ok()
            .and_then(|mut p| p.get_mut("status").map(Value::take))
            .unwrap_or(Value::Null);
        if holds(&cached, &wanted) {
            return Ok(());
        }
        let client = self.client.get().ok_or(ChildrenError::NoClient)?;
        let dt = P::DynamicType::default();
        let body = json!({
            "apiVersion": P::api_version(&dt),
            "kind": kind,
            "metadata": {"name": key.name()},
            "status": wanted,
        });
        let api = <P::Scope as ControllerScope>::api::<P>(client.clone(), key.namespace());
        let params = PatchParams::apply(&self.field_manager).force();
        match api
            .patch_status(key.name(), &params, &Patch::Apply(&body))
            .await
        {
            Ok(_) => {
                report.status_written = true;
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
                _ => Ok(()),
            }
        })
    }

    /// A status reports on the children: not written while one of them could not be
    /// brought in line (it would describe a child that is not there).
    fn needs_children_in_line(&self) -> bool {
        true
    }
}
