//! The client a controller hands to its reconciles: a `kube::Client` over the factory's,
//! which passes every request on unchanged and, for a successful write made during a
//! reconcile, records the key, resource and resource version of the object the server
//! returned in the controller's [`Gate`].
//!
//! kube's `Client` is a tower service behind a buffer: the buffer's task only *calls* this
//! service; the future it returns is polled by the task that sent the request — the
//! reconcile's — so the reconcile's task-local [`ReconcileScope`] is visible when the answer
//! comes.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use http_body_util::BodyExt;
use informer_core::ObjectKey;
use kube::Client;
use kube::client::Body;
use serde::Deserialize;

use super::{Gate, ResourceId};

tokio::task_local! {
    /// The key being reconciled, and the gate of its controller.
    static SCOPE: ReconcileScope;
}

/// What the runner sets around one reconcile, so that the writes it makes are attributed to
/// its key.
#[derive(Clone)]
pub(crate) struct ReconcileScope {
    pub(crate) gate: Arc<Gate>,
    pub(crate) key: ObjectKey,
}

impl ReconcileScope {
    /// Runs `reconcile` with this scope.
    pub(crate) fn run<F: Future>(self, reconcile: F) -> impl Future<Output = F::Output> {
        SCOPE.scope(self, reconcile)
    }
}

/// A client over `inner` that records in `gate` the writes made during reconciles.
///
/// Needs a Tokio runtime (kube's client spawns its buffer task).
pub(crate) fn tracking_client(inner: Client, gate: Arc<Gate>) -> Client {
    gate.clients.store(true, Ordering::Release);
    let namespace = inner.default_namespace().to_owned();
    Client::new(Tracking { inner, gate }, namespace)
}

#[derive(Clone)]
struct Tracking {
    inner: Client,
    gate: Arc<Gate>,
}

impl tower_service::Service<Request<Body>> for Tracking {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner client has a buffer of its own; it waits for room in `send`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let gate = self.gate.clone();
        let written = written_resource(request.method(), request.uri());
        let deletion = (request.method() == Method::DELETE)
            .then(|| namespace_of_path(request.uri().path()).map(str::to_owned));
        Box::pin(async move {
            let response = inner.send(request).await?;
            let Some(resource) = written else {
                return Ok(response);
            };
            // Polled on the task that sent the request: the reconcile's, if any.
            let owner = SCOPE
                .try_with(|s| Arc::ptr_eq(&s.gate, &gate).then(|| s.key.clone()))
                .ok()
                .flatten();
            match owner {
                Some(owner) if response.status().is_success() => {
                    let write = Write {
                        gate: &gate,
                        owner: &owner,
                        resource: &resource,
                        deletion_in: deletion,
                    };
                    write.record(response).await
                }
                _ => Ok(response),
            }
        })
    }
}

/// One successful write made during the reconcile of `owner`.
struct Write<'a> {
    gate: &'a Gate,
    owner: &'a ObjectKey,
    resource: &'a ResourceId,
    /// For a DELETE: the namespace in its path (`None`: cluster-scoped). `None` otherwise.
    deletion_in: Option<Option<String>>,
}

impl Write<'_> {
    /// Reads the answer, records it, and hands the same answer on.
    async fn record(self, response: Response<Body>) -> Result<Response<Body>, kube::Error> {
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await?.to_bytes();
        let (gate, owner, resource) = (self.gate, self.owner, self.resource);
        let answer = Answer::read(&bytes);
        if let Some((object, uid)) = answer.as_ref().and_then(Answer::deleted_by_write) {
            // The write emptied the finalizers of an object being deleted: the API server
            // deleted it, answering with the object at the version it had (kube-apiserver's
            // `deleteWithoutFinalizers`), which the cache already holds. Wait for the
            // deletion instead, or the next reconcile would see the object as it was.
            gate.deleted(owner, resource, &object, &uid);
        } else if let Some((object, rv, labels)) = answer.and_then(Answer::written) {
            gate.wrote_labelled(owner, resource, &object, &rv, Some(&labels));
        } else if let Some(namespace) = self.deletion_in
            && let Some((name, uid)) = deleted_status(&bytes)
        {
            let object = ObjectKey::new(namespace.as_deref(), &name);
            gate.deleted(owner, resource, &object, &uid);
        } else {
            tracing::trace!(%owner, %resource, "a write's answer holds no object version");
        }
        Ok(Response::from_parts(parts, Body::from(bytes)))
    }
}

/// The namespace a path addresses (`/api/v1/namespaces/{ns}/...`,
/// `/apis/{group}/{version}/namespaces/{ns}/...`), `None` for a cluster-scoped object or a
/// namespace itself.
pub(crate) fn namespace_of_path(path: &str) -> Option<&str> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let rest = match *segments.first()? {
        "api" => segments.get(2..)?,
        "apis" => segments.get(3..)?,
        _ => return None,
    };
    match rest {
        ["namespaces", namespace, _plural, ..] => Some(namespace),
        _ => None,
    }
}

/// The name and UID of the object a successful DELETE removed at once, when its answer is a
/// `Status` (`{"kind": "Status", "status": "Success", "details": {"name", "uid"}}`, what the
/// API server answers for most built-in types) rather than the object.
pub(crate) fn deleted_status(body: &[u8]) -> Option<(String, String)> {
    #[derive(Deserialize)]
    struct Status {
        #[serde(default)]
        kind: String,
        #[serde(default)]
        status: String,
        details: Option<Details>,
    }
    #[derive(Deserialize)]
    struct Details {
        name: Option<String>,
        uid: Option<String>,
    }
    let status: Status = serde_json::from_slice(body).ok()?;
    if status.kind != "Status" || status.status != "Success" {
        return None;
    }
    let details = status.details?;
    let name = details.name.filter(|n| !n.is_empty())?;
    let uid = details.uid.filter(|u| !u.is_empty())?;
    Some((name, uid))
}

/// The resource a request writes, if it is a write (POST, PUT, PATCH or DELETE of a
/// resource path, not a dry run).
pub(crate) fn written_resource(method: &Method, uri: &http::Uri) -> Option<ResourceId> {
    if !matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return None;
    }
    if uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.starts_with("dryRun=")))
    {
        return None;
    }
    resource_of_path(uri.path())
}

/// The resource a path addresses: `/api/v1[/namespaces/{ns}]/{plural}[/{name}[/{sub}]]` or
/// `/apis/{group}/{version}[/namespaces/{ns}]/{plural}[/...]`.
pub(crate) fn resource_of_path(path: &str) -> Option<ResourceId> {
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    let group = match segments.next()? {
        "api" => {
            segments.next()?;
            ""
        }
        "apis" => {
            let group = segments.next()?;
            segments.next()?;
            group
        }
        _ => return None,
    };
    let rest: Vec<&str> = segments.collect();
    let plural = match rest.as_slice() {
        // A namespace itself, or its status/finalize subresource.
        ["namespaces"] | ["namespaces", _] => "namespaces",
        ["namespaces", _, "status" | "finalize"] if group.is_empty() => "namespaces",
        ["namespaces", _, plural, ..] => plural,
        [plural, ..] => plural,
        [] => return None,
    };
    Some(ResourceId {
        group: group.to_owned(),
        plural: plural.to_owned(),
    })
}

/// The parts of a write's answer the gate needs.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: AnswerMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AnswerMeta {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    uid: Option<String>,
    deletion_timestamp: Option<String>,
    deletion_grace_period_seconds: Option<i64>,
    #[serde(default)]
    finalizers: Vec<String>,
}

impl Answer {
    /// A write's answer, read once: `None` if it is not JSON of an object.
    fn read(body: &[u8]) -> Option<Answer> {
        serde_json::from_slice(body).ok()
    }

    /// The written object's key, resource version and labels; `None` for a `Status` (a
    /// delete that returned no object, an eviction), a list (a collection delete) or
    /// anything else.
    fn written(self) -> Option<(ObjectKey, String, BTreeMap<String, String>)> {
        if self.kind == "Status" || self.kind.ends_with("List") {
            return None;
        }
        let AnswerMeta {
            name,
            namespace,
            resource_version,
            labels,
            ..
        } = self.metadata;
        let name = name.filter(|n| !n.is_empty())?;
        let rv = resource_version.filter(|rv| !rv.is_empty())?;
        Some((ObjectKey::new(namespace.as_deref(), &name), rv, labels))
    }
}

impl Answer {
    /// The key and uid of an object a write (an update or patch) deleted: its answer has a
    /// `deletionTimestamp`, no finalizers left and no grace period to wait for, which is
    /// when kube-apiserver deletes an object during an update (`ShouldDeleteDuringUpdate`).
    fn deleted_by_write(&self) -> Option<(ObjectKey, String)> {
        let meta = &self.metadata;
        let deleted = self.kind != "Status"
            && meta.deletion_timestamp.is_some()
            && meta.finalizers.is_empty()
            && meta.deletion_grace_period_seconds.unwrap_or(0) == 0;
        if !deleted {
            return None;
        }
        let name = meta.name.as_deref().filter(|n| !n.is_empty())?;
        let uid = meta.uid.clone().filter(|u| !u.is_empty())?;
        Some((ObjectKey::new(meta.namespace.as_deref(), name), uid))
    }
}

#[cfg(test)]
pub(crate) fn parse_deleted_by_write(body: &[u8]) -> Option<(ObjectKey, String)> {
    Answer::read(body)?.deleted_by_write()
}

#[cfg(test)]
pub(crate) fn parse_answer(body: &[u8]) -> Option<(ObjectKey, String)> {
    Answer::read(body)?.written().map(|(key, rv, _)| (key, rv))
}
