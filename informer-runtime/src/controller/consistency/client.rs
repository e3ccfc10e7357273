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
                    record(response, &gate, &owner, &resource).await
                }
                _ => Ok(response),
            }
        })
    }
}

/// Reads the answer to a write, records it, and hands the same answer on.
async fn record(
    response: Response<Body>,
    gate: &Gate,
    owner: &ObjectKey,
    resource: &ResourceId,
) -> Result<Response<Body>, kube::Error> {
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await?.to_bytes();
    match Answer::parse(&bytes) {
        Some((object, rv, labels)) => {
            gate.wrote_labelled(owner, resource, &object, &rv, Some(&labels))
        }
        None => tracing::trace!(%owner, %resource, "a write's answer holds no object version"),
    }
    Ok(Response::from_parts(parts, Body::from(bytes)))
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
}

impl Answer {
    /// The written object's key, resource version and labels; `None` for a `Status` (a
    /// delete that returned no object, an eviction), a list (a collection delete) or
    /// anything else.
    fn parse(body: &[u8]) -> Option<(ObjectKey, String, BTreeMap<String, String>)> {
        let answer: Answer = serde_json::from_slice(body).ok()?;
        if answer.kind == "Status" || answer.kind.ends_with("List") {
            return None;
        }
        let AnswerMeta {
            name,
            namespace,
            resource_version,
            labels,
        } = answer.metadata;
        let name = name.filter(|n| !n.is_empty())?;
        let rv = resource_version.filter(|rv| !rv.is_empty())?;
        Some((ObjectKey::new(namespace.as_deref(), &name), rv, labels))
    }
}

#[cfg(test)]
pub(crate) fn parse_answer(body: &[u8]) -> Option<(ObjectKey, String)> {
    Answer::parse(body).map(|(key, rv, _)| (key, rv))
}
