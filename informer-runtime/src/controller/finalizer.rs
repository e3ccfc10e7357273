//! [`finalizer`]: a reconcile that cleans up before its object goes, as kube-runtime's
//! `finalizer` and controller-runtime's `controllerutil.AddFinalizer` / `RemoveFinalizer`.

use std::future::Future;
use std::sync::Arc;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::consistency::ReconcileClient;
use super::scope::ControllerScope;
use super::{Action, ControllerResource, ReconcileError};
use crate::api_error::brief;
use informer_core::ObjectKey;

/// What the reconcile given to [`finalizer`] is asked to do with the object.
#[derive(Debug, Clone)]
pub enum FinalizerEvent<K> {
    /// The object is live and carries the finalizer: make the world match it.
    Apply(Arc<K>),
    /// The object is being deleted (it has a `deletionTimestamp`) and still carries the
    /// finalizer: release what it holds that owner references do not (external state, objects
    /// in other namespaces or cluster-scoped ones). The finalizer is removed once this returns
    /// `Ok`, which lets the API server delete the object; on an error it stays, and the
    /// cleanup runs again after the key's backoff. It may run more than once for one
    /// deletion (a crash between the cleanup and the removal): make it idempotent.
    Cleanup(Arc<K>),
}

/// Runs `reconcile` for `object` behind the finalizer `name`, so that a deletion waits for
/// its cleanup (kube-runtime's `finalizer`). A controller that owns its finalizer can
/// instead declare it ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)):
/// it is then added before the declared children are written, and removed only when the
/// cleanup answers [`Action::Done`]; here it is removed once `Cleanup` returns `Ok`, whatever
/// the action:
///
/// - a live object without the finalizer gets it first (a JSON patch through `api`), then
///   `reconcile(Apply(object as patched))` runs in the same call;
/// - a live object with it: `reconcile(Apply(object))`;
/// - an object being deleted with it: `reconcile(Cleanup(object))`, then the finalizer is
///   removed (the action `reconcile` returned is returned);
/// - an object being deleted without it: nothing to do ([`Action::Done`]).
///
/// The patches test the finalizers they change (a JSON patch `test`), so a concurrent change
/// of the finalizers fails the write instead of losing someone's finalizer, while changes to
/// other fields do not conflict. When a test fails (the cache was behind the server), the
/// object is read live: an add finds our finalizer there already, or fails (a 422, retried
/// after the key's backoff); a removal is done when the object is gone, was made again under
/// its name (the removal also tests the `uid`, so a late cleanup never removes the finalizer
/// of the object made since), or no longer has the finalizer, and otherwise removes it where
/// it now is. So a cleanup runs again only when its finalizer could not be removed. Pass an `api` made from the
/// controller's client ([`Context::api`](super::Context::api)), so that the next reconcile
/// sees these writes in the cache (read-your-own-writes).
///
/// `Apply` gets `object` as given, from the cache: before a write outside the cluster, read
/// it from the API server (`api.get_opt`) and go on only if it is there with the same `uid`
/// and no `deletionTimestamp`. A cache can go back in time (a restart against a lagging API
/// server lists an object whose cleanup ran and which is gone), and an outside write made
/// for it would never be cleaned up. The managed finalizer
/// ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)) does that read
/// for you.
///
/// # Errors
/// The API server's answer to a patch that fails, or what `reconcile` returns.
///
/// ```no_run
/// use std::sync::Arc;
/// use informer_runtime::controller::{finalizer, Action, FinalizerEvent, ReconcileError};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::Api;
///
/// async fn reconcile(api: Api<ConfigMap>, cm: Arc<ConfigMap>) -> Result<Action, ReconcileError> {
///     finalizer(&api, "example.com/cleanup", cm, async |event| match event {
///         FinalizerEvent::Apply(cm) => {
///             // Create or update what `cm` asks for, outside the cluster too.
///             let _ = cm;
///             Ok(Action::Done)
///         }
///         FinalizerEvent::Cleanup(cm) => {
///             // Delete what `cm` asked for; the finalizer goes when this succeeds.
///             let _ = cm;
///             Ok(Action::Done)
///         }
///     })
///     .await
/// }
/// ```
pub async fn finalizer<K, F, Fut>(
    api: &Api<K>,
    name: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, ReconcileError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, ReconcileError>>,
{
    let finalizers = object.finalizers();
    let position = finalizers.iter().position(|f| f == name);
    let deleting = object.meta().deletion_timestamp.is_some();
    match (deleting, position) {
        (false, Some(_)) => reconcile(FinalizerEvent::Apply(object)).await,
        (false, None) => match add_finalizer(api, object, name).await? {
            Some(object) => reconcile(FinalizerEvent::Apply(object)).await,
            // Deleted meanwhile (without our finalizer, nothing to clean up).
            None => Ok(Action::Done),
        },
        (true, Some(i)) => {
            let action = reconcile(FinalizerEvent::Cleanup(object.clone())).await?;
            remove_finalizer(api, &object, name, i).await?;
            Ok(action)
        }
        (true, None) => Ok(Action::Done),
    }
}

/// Adds the finalizer `name` to the live `object` (as cached), returning the object with it
/// (`None`: gone meanwhile). The patch tests the cached finalizers, so that a concurrent
/// change of them fails the write instead of losing someone's finalizer (Kubernetes keeps
/// duplicates: it also keeps ours from being added twice). When the test fails, the live
/// object decides: ours is there already (the cache was behind), or the add fails (a 422,
/// retried after the key's backoff).
async fn add_finalizer<K>(
    api: &Api<K>,
    object: Arc<K>,
    name: &str,
) -> Result<Option<Arc<K>>, ReconcileError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let finalizers = object.finalizers();
    let patch = if finalizers.is_empty() {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": [name]},
        ])
    } else {
        json!([
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "add", "path": "/metadata/finalizers/-", "value": name},
        ])
    };
    match patch_finalizers(api, &object, patch, name, "adding").await {
        Ok(patched) => Ok(patched.map(Arc::new)),
        // The guard failed: the server's finalizers are not the cached ones.
        Err(error) if guard_refused(&error) => {
            let Some(object_name) = object.meta().name.as_deref() else {
                return Err(error);
            };
            match api.get_opt(object_name).await {
                // The cache was behind: ours is there already.
                Ok(Some(live)) if live.finalizers().iter().any(|f| f == name) => {
                    Ok(Some(Arc::new(live)))
                }
                // A fresh read shows none either, where the server has some: the type does
                // not keep them (a view without `finalizers`), and the finalizer can never
                // be seen.
                Ok(Some(live)) if live.finalizers().is_empty() => {
                    Err(ReconcileError::terminal(format!(
                        "the finalizer {name} cannot be managed on this type: it does not keep metadata.finalizers (a view: keep finalizers and deletion_timestamp in #[view(metadata(...))]); adding it was refused because the object has finalizers this type does not show"
                    )))
                }
                _ => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

/// The finalizer a controller manages itself
/// ([`ControllerBuilder::finalizer`](super::ControllerBuilder::finalizer)): added to each live
/// object before its children, removed once its cleanup finished. Its writes go through the
/// controller's client, so the next reconcile of the key waits for the cache to see them.
#[async_trait::async_trait]
pub(crate) trait OwnFinalizer<P>: Send + Sync {
    /// The finalizer.
    fn name(&self) -> &str;

    /// Adds it to the live `object`: the object with it, `None` when it is gone.
    async fn add(&self, key: &ObjectKey, object: Arc<P>) -> Result<Option<Arc<P>>, ReconcileError>;

    /// Removes it from `object`, being deleted, once its cleanup finished.
    async fn remove(&self, key: &ObjectKey, object: &P) -> Result<(), ReconcileError>;

    /// `object` as the API server holds it now (a quorum read), `None` if it is gone or
    /// was made again under its name (another uid).
    async fn live(&self, key: &ObjectKey, object: &P) -> Result<Option<Arc<P>>, ReconcileError>;
}

/// [`OwnFinalizer`] through the controller's client.
pub(crate) struct FinalizerStep {
    pub(crate) name: String,
    pub(crate) client: Arc<ReconcileClient>,
}

impl FinalizerStep {
    fn api<P: ControllerResource>(&self, key: &ObjectKey) -> Result<Api<P>, ReconcileError> {
        let client = self.client.get().ok_or_else(|| {
            ReconcileError::terminal(format!(
                "the controller has no client to write its finalizer {} with: give the factory or the builder one",
                self.name
            ))
        })?;
        Ok(<P::Scope as ControllerScope>::api::<P>(
            client.clone(),
            key.namespace(),
        ))
    }
}

#[async_trait::async_trait]
impl<P: ControllerResource> OwnFinalizer<P> for FinalizerStep {
    fn name(&self) -> &str {
        &self.name
    }

    async fn add(&self, key: &ObjectKey, object: Arc<P>) -> Result<Option<Arc<P>>, ReconcileError> {
        add_finalizer(&self.api(key)?, object, &self.name).await
    }

    async fn remove(&self, key: &ObjectKey, object: &P) -> Result<(), ReconcileError> {
        let Some(position) = object.finalizers().iter().position(|f| *f == self.name) else {
            return Ok(());
        };
        remove_finalizer(&self.api(key)?, object, &self.name, position).await
    }

    async fn live(&self, key: &ObjectKey, object: &P) -> Result<Option<Arc<P>>, ReconcileError> {
        let live = self
            .api::<P>(key)?
            .get_opt(key.name())
            .await
            .map_err(|source| {
                ReconcileError::transient(LiveReadError {
                    object: key.to_string(),
                    source,
                })
            })?;
        Ok(live
            .filter(|live| live.meta().uid == object.meta().uid)
            .map(Arc::new))
    }
}

/// Reading an object live before its reconcile failed.
#[derive(Debug, thiserror::Error)]
#[error(
    "reading {object} from the API server before its reconcile failed: {}",
    brief(source)
)]
struct LiveReadError {
    object: String,
    #[source]
    source: kube::Error,
}

/// Why `name` cannot be a controller's finalizer, if it cannot: the API server refuses a
/// finalizer that is not a qualified name (apimachinery's `ValidateFinalizerName`) and warns
/// about one without a domain ("prefer a domain-qualified finalizer name"), which a
/// controller's own finalizer must have, so that it never meets another writer's.
pub(crate) fn finalizer_name_problem(name: &str) -> Option<String> {
    let Some((domain, rest)) = name.split_once('/') else {
        return Some(format!(
            "{name:?} has no domain: write a domain-qualified name such as \"example.com/{name}\""
        ));
    };
    if !crate::names::is_qualified_name(name) {
        return Some(format!(
            "{name:?} is not a qualified name: a DNS subdomain ({domain:?}: lowercase letters, digits, '-' and '.'), '/', then at most 63 letters, digits, '-', '_' or '.' starting and ending with a letter or digit ({rest:?})"
        ));
    }
    None
}

/// Removes the finalizer `name`, at `position` in the cached `object`'s list, once its
/// cleanup ran. The patch tests the object's `uid` and the finalizer at that position, so that
/// it never removes the finalizer of another object made since under the same name (whose
/// cleanup has not run) nor someone else's finalizer. When the test fails (the cache was
/// behind), the live object decides: gone, made again, or without the finalizer, there is
/// nothing left to remove; with the finalizer elsewhere in its list, it is removed there.
async fn remove_finalizer<K>(
    api: &Api<K>,
    object: &K,
    name: &str,
    position: usize,
) -> Result<(), ReconcileError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let uid = object.meta().uid.as_deref();
    let removal = |position: usize| {
        let path = format!("/metadata/finalizers/{position}");
        let mut ops = Vec::new();
        if let Some(uid) = uid {
            ops.push(json!({"op": "test", "path": "/metadata/uid", "value": uid}));
        }
        ops.push(json!({"op": "test", "path": path, "value": name}));
        ops.push(json!({"op": "remove", "path": path}));
        Value::Array(ops)
    };
    let error = match patch_finalizers(api, object, removal(position), name, "removing").await {
        Ok(_) => return Ok(()),
        Err(error) if guard_refused(&error) => error,
        Err(error) => return Err(error),
    };
    let Some(object_name) = object.meta().name.as_deref() else {
        return Err(error);
    };
    match api.get_opt(object_name).await {
        // Gone since: nothing holds it any more.
        Ok(None) => Ok(()),
        // Another object under the same name: its own reconcile cleans it up.
        Ok(Some(live)) if uid.is_some() && live.meta().uid.as_deref() != uid => Ok(()),
        Ok(Some(live)) => match live.finalizers().iter().position(|f| f == name) {
            // Removed already (by this controller before a restart, or by someone else).
            None => Ok(()),
            Some(now) => patch_finalizers(api, &live, removal(now), name, "removing")
                .await
                .map(drop),
        },
        Err(_) => Err(error),
    }
}

/// Whether `error` is a finalizer patch whose `test` the server refused (a 422): the
/// object's finalizers are not the ones the patch was made from.
fn guard_refused(error: &ReconcileError) -> bool {
    crate::api_error::api_status(error.as_error()).is_some_and(|status| status.code == 422)
}

/// A failed patch of an object's finalizers, saying which finalizer, which object and what
/// the patch did (the API's error stays its source: `is_conflict` and friends find it).
#[derive(Debug, thiserror::Error)]
#[error(
    "{doing} finalizer {finalizer} on {kind} {object} failed: {}",
    brief(source)
)]
struct FinalizerPatchError {
    doing: &'static str,
    finalizer: String,
    kind: String,
    object: String,
    #[source]
    source: kube::Error,
}

/// Applies a JSON patch of `object`'s finalizers (`doing` what to `finalizer`, for an
/// error's words); `None` if the object is gone.
async fn patch_finalizers<K>(
    api: &Api<K>,
    object: &K,
    patch: Value,
    finalizer: &str,
    doing: &'static str,
) -> Result<Option<K>, ReconcileError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let patch: json_patch::Patch = serde_json::from_value(patch).expect("a well-formed JSON patch");
    let name = object.meta().name.as_deref().ok_or_else(|| {
        ReconcileError::terminal(
            "the object has no metadata.name: its finalizers cannot be patched",
        )
    })?;
    match api
        .patch(name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
    {
        Ok(patched) => Ok(Some(patched)),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(source) => {
            // From the object: K's dynamic type (a DynamicObject's) may have no default.
            let kind = serde_json::to_value(object)
                .ok()
                .and_then(|v| v.get("kind")?.as_str().map(str::to_owned))
                .unwrap_or_else(|| "object".to_owned());
            let object = match object.meta().namespace.as_deref() {
                Some(namespace) => format!("{namespace}/{name}"),
                None => name.to_owned(),
            };
            Err(ReconcileError::transient(FinalizerPatchError {
                doing,
                finalizer: finalizer.to_owned(),
                kind,
                object,
                source,
            }))
        }
    }
}

#[cfg(test)]
mod tests;
