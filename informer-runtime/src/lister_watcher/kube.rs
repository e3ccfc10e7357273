//! [`KubeListerWatcher`]: list and watch through a `kube::Api<K>`.

use std::fmt::Debug;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;
use http_body_util::BodyExt;
use informer_core::lister_watcher::{
    ListMeta, ListParams, ListWatchError, ListerWatcher, ObjectList, WatchParams, WatchStream,
};
use kube::core::{PartialObjectMeta, Request, Status};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::decode::BodyDecoder;

/// A [`ListerWatcher`] over a `kube::Api<K>`: each call is one HTTP request to the API
/// server, the request `Api::list` and `Api::watch` would make, through the `Api`'s client
/// (so its authentication, retries and middleware apply).
///
/// Works for every `K` a `kube::Api` works for: k8s-openapi types, custom resources
/// (`#[derive(CustomResource)]`), `DynamicObject` (an `Api` made with `Api::all_with` or
/// `Api::namespaced_with` and an `ApiResource`), and `PartialObjectMeta<K>` (metadata-only
/// requests, as kube makes for it; see also [`KubeListerWatcher::metadata`]). The `Api`'s
/// namespace scopes the informer; selectors and pagination come from the reflector's
/// parameters.
///
/// Responses are decoded by [`BodyDecoder`](super::BodyDecoder), not by kube: as they
/// arrive, on the decode pool (beside the informer, not before it), in order; a list is
/// decoded item by item and handed to the reflector in parts
/// ([`ListerWatcher::list_in_parts`]), never held whole. Objects come out with
/// exact-capacity vectors (as compact as a clone; `serde_json` leaves about 6 KB of spare
/// capacity in a typical pod), each already in its `Arc`.
///
/// Errors: a status from the server stays a status (code, reason and message kept), so the
/// reflector can tell `410 Gone` from `429` from `403`; an error status inside a watch
/// stream (a `410 Expired` event) is passed on as `WatchEvent::Error`, a line that is not an
/// event as [`ListWatchError::Decode`]; connection failures are
/// [`ListWatchError::Transport`] (see [`map_kube_error`]). A watch that the server or the
/// network ends (end of stream, a read timeout, a connection cut mid-stream) simply ends, so
/// that the reflector resumes it from the last resource version.
///
/// What it does not do: retry, back off or relist; the reflector does that.
///
/// ```no_run
/// # async fn demo(client: kube::Client) {
/// use std::sync::Arc;
/// use informer_core::ListerWatcher;
/// use informer_runtime::lister_watcher::KubeListerWatcher;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube::Api;
///
/// let lw: Arc<dyn ListerWatcher<Pod>> =
///     Arc::new(KubeListerWatcher::new(Api::<Pod>::namespaced(client, "default")));
/// # }
/// ```
pub struct KubeListerWatcher<K> {
    api: Api<K>,
    endpoint: Endpoint,
}

impl<K: Clone> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api.clone(),
            endpoint: self.endpoint.clone(),
        }
    }
}

impl<K> Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("api", &self.api)
            .finish()
    }
}

impl<K: Resource + Clone> KubeListerWatcher<K> {
    /// Lists and watches through `api`.
    pub fn new(api: Api<K>) -> Self {
        let endpoint = Endpoint::of(&api);
        Self { api, endpoint }
    }

    /// A metadata-only lister-watcher over `api`: it lists and watches
    /// `PartialObjectMeta<K>` (the requests of `Api::list_metadata` and
    /// `Api::watch_metadata`), so the server sends only each object's `metadata`, which
    /// keeps large caches small.
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) {
    /// use informer_core::ListerWatcher;
    /// use informer_runtime::lister_watcher::KubeListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kube::core::PartialObjectMeta;
    ///
    /// let lw = KubeListerWatcher::metadata(kube::Api::<Pod>::all(client));
    /// let _: &dyn ListerWatcher<PartialObjectMeta<Pod>> = &lw;
    /// # }
    /// ```
    pub fn metadata(api: Api<K>) -> MetadataListerWatcher<K> {
        let endpoint = Endpoint::of(&api);
        MetadataListerWatcher { api, endpoint }
    }
}

impl<K: Resource> KubeListerWatcher<K> {
    fn list_request(&self, params: &ListParams) -> (BuiltRequest, &'static str) {
        let request = if K::metadata_api() {
            self.endpoint.request.list_metadata(params)
        } else {
            self.endpoint.request.list(params)
        };
        (with_resource_version_zero(request, params), "list")
    }
}

impl<K> KubeListerWatcher<K> {
    /// Leaves `metadata.managedFields` out of every object, skipping them while decoding
    /// (see [`JsonDecoder::skip_managed_fields`](super::JsonDecoder::skip_managed_fields)):
    /// the same objects as a transform that drops them, without the time and memory of
    /// decoding them first. [`InformerFactory::drop_managed_fields`] turns this on for the
    /// informers it builds.
    ///
    /// [`InformerFactory::drop_managed_fields`]: crate::factory::InformerFactory::drop_managed_fields
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) {
    /// use informer_runtime::lister_watcher::KubeListerWatcher;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let lw = KubeListerWatcher::new(kube::Api::<Pod>::all(client)).drop_managed_fields();
    /// # let _ = lw;
    /// # }
    /// ```
    pub fn drop_managed_fields(self) -> Self {
        self.dropping_managed_fields(true)
    }

    /// [`drop_managed_fields`](Self::drop_managed_fields) if `drop`.
    pub(crate) fn dropping_managed_fields(mut self, drop: bool) -> Self {
        self.endpoint.skip_managed_fields = drop;
        self
    }

    /// The `Api` requests go through.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }
}

#[async_trait]
impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    async fn list(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, ListWatchError> {
        let (request, verb) = self.list_request(params);
        self.endpoint.list(request, verb).await
    }

    async fn list_in_parts(
        &self,
        params: &ListParams,
        part: &mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let (request, verb) = self.list_request(params);
        self.endpoint.list_in_parts(request, verb, part).await
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        let request = if K::metadata_api() {
            self.endpoint
                .request
                .watch_metadata(params, resource_version)
        } else {
            self.endpoint.request.watch(params, resource_version)
        };
        self.endpoint.watch(request, "watch").await
    }
}

/// A metadata-only [`ListerWatcher`] of `PartialObjectMeta<K>`, made by
/// [`KubeListerWatcher::metadata`]. Behaves as [`KubeListerWatcher`] otherwise.
pub struct MetadataListerWatcher<K> {
    api: Api<K>,
    endpoint: Endpoint,
}

impl<K> MetadataListerWatcher<K> {
    /// Leaves `metadata.managedFields` out, as
    /// [`KubeListerWatcher::drop_managed_fields`] does.
    pub fn drop_managed_fields(self) -> Self {
        self.dropping_managed_fields(true)
    }

    /// [`drop_managed_fields`](Self::drop_managed_fields) if `drop`.
    pub(crate) fn dropping_managed_fields(mut self, drop: bool) -> Self {
        self.endpoint.skip_managed_fields = drop;
        self
    }
}

impl<K: Clone> Clone for MetadataListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api.clone(),
            endpoint: self.endpoint.clone(),
        }
    }
}

impl<K> Debug for MetadataListerWatcher<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataListerWatcher")
            .field("api", &self.api)
            .finish()
    }
}

#[async_trait]
impl<K> ListerWatcher<PartialObjectMeta<K>> for MetadataListerWatcher<K>
where
    K: Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    async fn list(
        &self,
        params: &ListParams,
    ) -> Result<ObjectList<Arc<PartialObjectMeta<K>>>, ListWatchError> {
        let request = self.endpoint.request.list_metadata(params);
        self.endpoint
            .list(with_resource_version_zero(request, params), "list_metadata")
            .await
    }

    async fn list_in_parts(
        &self,
        params: &ListParams,
        part: &mut (dyn FnMut(Vec<Arc<PartialObjectMeta<K>>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let request = self.endpoint.request.list_metadata(params);
        self.endpoint
            .list_in_parts(
                with_resource_version_zero(request, params),
                "list_metadata",
                part,
            )
            .await
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<PartialObjectMeta<K>>, ListWatchError> {
        let request = self
            .endpoint
            .request
            .watch_metadata(params, resource_version);
        self.endpoint.watch(request, "watch_metadata").await
    }
}

/// Where an `Api`'s requests go: its client and its resource's URL; and how responses are
/// decoded.
#[derive(Clone)]
struct Endpoint {
    client: Client,
    request: Request,
    skip_managed_fields: bool,
}

type BuiltRequest = Result<http::Request<Vec<u8>>, kube::core::request::Error>;

impl Endpoint {
    fn of<K: Resource + Clone>(api: &Api<K>) -> Self {
        Self {
            request: Request::new(api.resource_url()),
            client: api.clone().into_client(),
            skip_managed_fields: false,
        }
    }

    /// Sends `request` (named `verb` for kube's middleware, as `Api` names it); an error
    /// status becomes [`ListWatchError::Api`].
    async fn send(
        &self,
        request: BuiltRequest,
        verb: &'static str,
    ) -> Result<http::Response<kube::client::Body>, ListWatchError> {
        let mut request = request.map_err(|e| map_kube_error(kube::Error::BuildRequest(e)))?;
        request.extensions_mut().insert(verb);
        let response = self
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(map_kube_error)?;
        let code = response.status();
        if !(code.is_client_error() || code.is_server_error()) {
            return Ok(response);
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(map_kube_error)?
            .to_bytes();
        Err(ListWatchError::Api(Box::new(error_status(code, &body))))
    }

    async fn list<T: Clone + DeserializeOwned + Send + Sync + 'static>(
        &self,
        request: BuiltRequest,
        verb: &'static str,
    ) -> Result<ObjectList<Arc<T>>, ListWatchError> {
        let body = self.send(request, verb).await?.into_body();
        self.decoder().list(BodyBytes::new(body, false)).await
    }

    async fn list_in_parts<T: DeserializeOwned + Send + Sync + 'static>(
        &self,
        request: BuiltRequest,
        verb: &'static str,
        part: &mut (dyn FnMut(Vec<Arc<T>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let body = self.send(request, verb).await?.into_body();
        self.decoder()
            .list_in_parts(BodyBytes::new(body, false), part)
            .await
    }

    async fn watch<T: DeserializeOwned + Send + Sync + 'static>(
        &self,
        request: BuiltRequest,
        verb: &'static str,
    ) -> Result<WatchStream<T>, ListWatchError> {
        // As kube: watch streams are not compressed (servers that gzip them do it one member
        // per event, which kube's decompression does not follow).
        let request = request.map(|mut r| {
            r.headers_mut()
                .entry(http::header::ACCEPT_ENCODING)
                .or_insert(http::HeaderValue::from_static("identity"));
            r
        });
        let body = self.send(request, verb).await?.into_body();
        Ok(self.decoder().watch(BodyBytes::new(body, true)))
    }

    fn decoder(&self) -> BodyDecoder {
        BodyDecoder::new().skip_managed_fields(self.skip_managed_fields)
    }
}

/// Puts `resourceVersion=0` back into a first page list request that kube built without it:
/// kube leaves it out when a `limit` is set, but client-go sends both (an API server with its
/// watch cache on then answers from the cache, whole; one with it off answers in pages,
/// which tells the reflector to page every later list).
fn with_resource_version_zero(request: BuiltRequest, params: &ListParams) -> BuiltRequest {
    let zero_with_limit = params.resource_version.as_deref() == Some("0")
        && params.limit.is_some_and(|l| l > 0)
        && params.continue_token.is_none();
    if !zero_with_limit {
        return request;
    }
    let mut request = request?;
    let uri = request.uri();
    let has_query = uri.query().is_some_and(|q| !q.is_empty());
    let already = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p.starts_with("resourceVersion=")));
    if !already {
        let path_and_query = format!(
            "{}{}resourceVersion=0",
            uri.path_and_query().map_or("", |p| p.as_str()),
            if has_query { "&" } else { "?" }
        );
        let mut parts = uri.clone().into_parts();
        if let Ok(pq) = path_and_query.parse() {
            parts.path_and_query = Some(pq);
            if let Ok(uri) = http::Uri::from_parts(parts) {
                *request.uri_mut() = uri;
            }
        }
    }
    Ok(request)
}

/// The status of an error response: the body if it is a `Status`, else one made from the
/// HTTP code and the body's text (a proxy's or load balancer's page, say).
fn error_status(code: http::StatusCode, body: &[u8]) -> Status {
    match serde_json::from_slice::<Status>(body) {
        Ok(status) => status,
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let reason = code
                .canonical_reason()
                .unwrap_or("Failed to parse error data");
            Status::failure(text.trim(), reason).with_code(code.as_u16())
        }
    }
}

/// A response body as a stream of byte chunks. Read errors become
/// [`ListWatchError::Transport`]; for a watch (`quiet_end`), an error that is the watch
/// ending rather than failing (see [`ends_the_watch`]) ends the stream instead.
struct BodyBytes<B = kube::client::Body> {
    body: B,
    quiet_end: bool,
    ended: bool,
}

impl<B> BodyBytes<B> {
    fn new(body: B, quiet_end: bool) -> Self {
        Self {
            body,
            quiet_end,
            ended: false,
        }
    }
}

impl<B> Stream for BodyBytes<B>
where
    B: hyper::body::Body<Data = Bytes, Error = kube::Error> + Unpin,
{
    type Item = Result<Bytes, ListWatchError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.ended {
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                None => this.ended = true,
                Some(Err(e)) => {
                    this.ended = true;
                    if this.quiet_end && ends_the_watch(&e) {
                        tracing::debug!(error = %e, "watch connection ended");
                    } else {
                        return Poll::Ready(Some(Err(map_kube_error(e))));
                    }
                }
            }
        }
    }
}

/// Whether a body read error is the watch ending rather than failing: the connection cut
/// (an unexpected EOF, possibly nested in TLS and HTTP errors, or a chunked body cut short)
/// or the client's read timeout. kube treats these the same way.
fn ends_the_watch(err: &kube::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    // HTTP and TLS stacks nest a few errors; stop should a `source` chain cycle.
    for _ in 0..16 {
        let Some(e) = current else {
            return false;
        };
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::TimedOut
            )
        {
            return true;
        }
        if e.to_string().contains("unexpected EOF during chunk") {
            return true;
        }
        current = e.source();
    }
    false
}

/// Maps a `kube::Error` to a [`ListWatchError`]:
///
/// - `Api(status)` → [`ListWatchError::Api`], status kept whole (code, reason, message);
/// - a response that is not valid JSON or not the expected type (`SerdeError`, invalid UTF-8,
///   an over-long line) → [`ListWatchError::Decode`];
/// - a request kube refused to build (invalid parameters) → a `400 BadRequest` status;
/// - everything else (connection, TLS, HTTP, auth, I/O while reading a stream) →
///   [`ListWatchError::Transport`], with the kube error as its source.
///
/// ```
/// use informer_core::ListWatchError;
/// use informer_runtime::lister_watcher::map_kube_error;
/// use kube::core::Status;
///
/// let err = map_kube_error(kube::Error::Api(Status::failure("gone", "Expired").with_code(410).boxed()));
/// assert!(err.is_gone());
/// let bad: serde_json::Error = serde_json::from_str::<u8>("x").unwrap_err();
/// assert!(matches!(map_kube_error(kube::Error::SerdeError(bad)), ListWatchError::Decode(_)));
/// ```
pub fn map_kube_error(err: kube::Error) -> ListWatchError {
    match err {
        kube::Error::Api(status) => ListWatchError::Api(status),
        kube::Error::SerdeError(e) => ListWatchError::Decode(e.to_string()),
        kube::Error::FromUtf8(e) => ListWatchError::Decode(e.to_string()),
        kube::Error::LinesCodecMaxLineLengthExceeded => {
            ListWatchError::Decode("a watch event line exceeded the maximum length".to_owned())
        }
        kube::Error::BuildRequest(e) => {
            ListWatchError::status(400, "BadRequest", format!("invalid request: {e}"))
        }
        other => ListWatchError::Transport(Box::new(other)),
    }
}

#[cfg(test)]
mod tests;
