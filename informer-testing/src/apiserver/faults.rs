//! Fault injection and request accounting.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use futures::stream::BoxStream;
use serde_json::json;
use tokio::time::{Instant, Sleep};

use super::server::Shared;
use super::status::ApiError;
use super::storage::{ReadVersion, WatchStart};

/// The kind of request, as the API server's audit log would name its verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Verb {
    /// GET of one object (including its `status` subresource).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST of a new object.
    Create,
    /// PUT of an object (or its status).
    Update,
    /// PATCH of an object (or its status).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// Discovery and other non-resource requests (`/api`, `/apis/...`, `/version`, `/healthz`).
    Discovery,
    /// Requests for unknown paths or with unsupported methods.
    Other,
}

impl Verb {
    /// The verb as Kubernetes spells it.
    ///
    /// ```
    /// use informer_testing::Verb;
    /// assert_eq!(Verb::DeleteCollection.as_str(), "deletecollection");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Discovery => "discovery",
            Verb::Other => "other",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which requests a fault or a count applies to: optionally a verb, optionally a resource
/// (by plural, e.g. `pods`, or kind, e.g. `Pod`), optionally a subresource (`status`,
/// `scale`) and optionally a user (a client made by
/// [`TestApiServer::user_client`](super::TestApiServer::user_client)).
///
/// A [`Verb`] converts into a matcher for that verb on any resource.
///
/// ```
/// use informer_testing::{RequestMatch, Verb};
/// let any_pod_list = RequestMatch::verb(Verb::List).resource("pods");
/// let every_request = RequestMatch::any();
/// let all_watches: RequestMatch = Verb::Watch.into();
/// # let _ = (any_pod_list, every_request, all_watches);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestMatch {
    verb: Option<Verb>,
    resource: Option<String>,
    /// `Some("")`: the object itself, no subresource.
    subresource: Option<String>,
    user: Option<String>,
}

impl RequestMatch {
    /// Matches every request, discovery included.
    ///
    /// ```
    /// # use informer_testing::RequestMatch;
    /// let _ = RequestMatch::any();
    /// ```
    pub fn any() -> Self {
        Self::default()
    }

    /// Matches requests with this verb.
    ///
    /// ```
    /// # use informer_testing::{RequestMatch, Verb};
    /// let _ = RequestMatch::verb(Verb::Create);
    /// ```
    pub fn verb(verb: Verb) -> Self {
        Self {
            verb: Some(verb),
            ..Self::default()
        }
    }

    /// Restricts to a resource, named by plural (`pods`) or kind (`Pod`).
    ///
    /// ```
    /// # use informer_testing::RequestMatch;
    /// let _ = RequestMatch::any().resource("configmaps");
    /// ```
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }

    /// Restricts to requests of a subresource (`status`, `scale`, `eviction`, `log`), or
    /// with `""` to requests of the objects themselves (no subresource). Without it, a
    /// matcher matches both: a patch of `pods/status` is a patch of `pods`.
    ///
    /// ```
    /// # use informer_testing::{RequestMatch, Verb};
    /// let status_writes = RequestMatch::verb(Verb::Patch).resource("widgets").subresource("status");
    /// let spec_writes = RequestMatch::verb(Verb::Patch).resource("widgets").subresource("");
    /// # let _ = (status_writes, spec_writes);
    /// ```
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.to_string());
        self
    }

    /// Restricts to the requests of one user (see
    /// [`TestApiServer::user_client`](super::TestApiServer::user_client)).
    ///
    /// ```
    /// # use informer_testing::{RequestMatch, Verb};
    /// let _ = RequestMatch::verb(Verb::Create).user("controller");
    /// ```
    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_string());
        self
    }

    pub(crate) fn matches(&self, request: &RequestInfo) -> bool {
        if self.verb.is_some_and(|v| v != request.verb) {
            return false;
        }
        if let Some(user) = &self.user
            && request.user.as_deref() != Some(user.as_str())
        {
            return false;
        }
        if let Some(subresource) = &self.subresource
            && request.subresource.as_deref().unwrap_or("") != subresource
        {
            return false;
        }
        match &self.resource {
            None => true,
            Some(r) => {
                request.resource.as_deref() == Some(r.as_str())
                    || request.kind.as_deref() == Some(r.as_str())
            }
        }
    }
}

impl From<Verb> for RequestMatch {
    fn from(verb: Verb) -> Self {
        Self::verb(verb)
    }
}

/// How injected failures fail.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum FailureCode {
    /// 500 InternalError.
    InternalError,
    /// 429 TooManyRequests with a `Retry-After` header (whole seconds).
    ///
    /// Note that `kube::Client` retries 429 responses by itself (up to its
    /// retry limit), so a test sees the retries in the request counts.
    TooManyRequests {
        /// The delay advertised in `Retry-After`.
        retry_after: Duration,
    },
    /// Any other error.
    Status(ApiError),
}

impl FailureCode {
    fn to_error(&self) -> ApiError {
        match self {
            FailureCode::InternalError => {
                ApiError::internal("Internal error occurred: injected failure")
            }
            FailureCode::TooManyRequests { retry_after } => {
                ApiError::too_many_requests(*retry_after)
            }
            FailureCode::Status(err) => err.clone(),
        }
    }
}

/// What a restart keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestartMode {
    /// Objects, revision and history survive; only connections and watches are lost.
    KeepData,
    /// All objects and history are lost. The loss counts as one revision
    /// (the counter never goes back), so clients resuming from any earlier
    /// version get `410 Gone` and relist an empty store. The default
    /// namespaces are recreated.
    ResetData,
}

/// What the server knows about a request, for faults, counts and interceptors.
#[derive(Clone, Debug)]
pub(crate) struct RequestInfo {
    pub verb: Verb,
    pub resource: Option<String>,
    pub kind: Option<String>,
    /// The subresource (`status`, `scale`), if the request is of one.
    pub subresource: Option<String>,
    /// The resource's `apiVersion`.
    pub api_version: Option<String>,
    /// The user its token belongs to; `None` for the server's own token.
    pub user: Option<Arc<str>>,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Default for RequestInfo {
    fn default() -> Self {
        Self {
            verb: Verb::Other,
            resource: None,
            kind: None,
            subresource: None,
            api_version: None,
            user: None,
            namespace: None,
            name: None,
        }
    }
}

impl RequestInfo {
    /// Whether the request may change objects.
    pub(crate) fn is_write(&self) -> bool {
        matches!(
            self.verb,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }
}

/// Request counts by verb, resource, kind, subresource and user.
type CountKey = (
    Verb,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<Arc<str>>,
);

struct FailRule {
    matcher: RequestMatch,
    remaining: usize,
    code: FailureCode,
}

struct StallRule {
    matcher: RequestMatch,
    remaining: Option<usize>,
    delay: Duration,
}

/// Fault rules and request counts.
#[derive(Default)]
pub(crate) struct FaultState {
    failures: Vec<FailRule>,
    stalls: Vec<StallRule>,
    counts: HashMap<CountKey, u64>,
    /// Streaming lists send their initial events without the bookmark that ends them.
    pub(crate) withhold_initial_events_end: bool,
    /// Every chunk of watches opened from now on reaches the client this much later.
    watch_delay: Option<Duration>,
    /// Lists that are not consistent reads, and resumed watches, are served this many
    /// revisions behind.
    lag: u64,
}

impl FaultState {
    /// Counts a request and returns the stall and failure it gets, if any.
    pub(crate) fn on_request(
        &mut self,
        request: &RequestInfo,
    ) -> (Option<Duration>, Option<ApiError>) {
        *self
            .counts
            .entry((
                request.verb,
                request.resource.clone(),
                request.kind.clone(),
                request.subresource.clone(),
                request.user.clone(),
            ))
            .or_default() += 1;
        let mut stall = None;
        if let Some(rule) = self.stalls.iter_mut().find(|r| r.matcher.matches(request)) {
            stall = Some(rule.delay);
            if let Some(remaining) = &mut rule.remaining {
                *remaining -= 1;
            }
        }
        self.stalls.retain(|r| r.remaining != Some(0));
        let mut failure = None;
        if let Some(rule) = self
            .failures
            .iter_mut()
            .find(|r| r.matcher.matches(request))
        {
            failure = Some(rule.code.to_error());
            rule.remaining -= 1;
        }
        self.failures.retain(|r| r.remaining > 0);
        (stall, failure)
    }

    fn count(&self, matcher: &RequestMatch) -> u64 {
        self.counts
            .iter()
            .filter(|((verb, resource, kind, subresource, user), _)| {
                matcher.matches(&RequestInfo {
                    verb: *verb,
                    resource: resource.clone(),
                    kind: kind.clone(),
                    subresource: subresource.clone(),
                    user: user.clone(),
                    ..RequestInfo::default()
                })
            })
            .map(|(_, n)| *n)
            .sum()
    }
}

/// A handle for making the server misbehave and for counting its requests.
///
/// Get one from [`TestApiServer::faults`](super::TestApiServer::faults); it
/// stays usable (as a no-op) after the server shuts down.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use informer_testing::{FailureCode, RestartMode, TestApiServer, Verb};
///
/// let server = TestApiServer::start().await?;
/// let faults = server.faults();
/// faults.fail_next(Verb::List, 2, FailureCode::InternalError);
/// faults.fail_next(Verb::Watch, 1, FailureCode::TooManyRequests { retry_after: Duration::from_secs(1) });
/// faults.drop_watches();
/// faults.compact();
/// faults.restart(RestartMode::KeepData);
/// assert_eq!(faults.request_count(Verb::Create), 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults").finish_non_exhaustive()
    }
}

impl Faults {
    /// Ends every open watch stream (cleanly, as when the server's watch
    /// timeout fires). Returns how many were open.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let dropped = server.faults().drop_watches();
    /// # let _ = dropped; }
    /// ```
    pub fn drop_watches(&self) -> usize {
        let mut store = self.shared.store.lock();
        let open = store.watch_count();
        store.drop_watches();
        tracing::debug!(open, "fault: dropped all watches");
        open
    }

    /// Fails the next `n` requests that match with `code` (before they touch any data).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// use informer_testing::{FailureCode, RequestMatch, Verb};
    /// server.faults().fail_next(RequestMatch::verb(Verb::Create).resource("pods"), 1, FailureCode::InternalError);
    /// # }
    /// ```
    pub fn fail_next(&self, matcher: impl Into<RequestMatch>, n: usize, code: FailureCode) {
        if n == 0 {
            return;
        }
        self.shared.faults.lock().failures.push(FailRule {
            matcher: matcher.into(),
            remaining: n,
            code,
        });
    }

    /// Delays every request by `delay` before handling it, until [`Faults::clear`].
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().stall(std::time::Duration::from_millis(200));
    /// # }
    /// ```
    pub fn stall(&self, delay: Duration) {
        self.shared.faults.lock().stalls.push(StallRule {
            matcher: RequestMatch::any(),
            remaining: None,
            delay,
        });
    }

    /// Delays the next `n` matching requests by `delay` before handling them.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// use informer_testing::Verb;
    /// server.faults().stall_next(Verb::List, 1, std::time::Duration::from_secs(2));
    /// # }
    /// ```
    pub fn stall_next(&self, matcher: impl Into<RequestMatch>, n: usize, delay: Duration) {
        if n == 0 {
            return;
        }
        self.shared.faults.lock().stalls.push(StallRule {
            matcher: matcher.into(),
            remaining: Some(n),
            delay,
        });
    }

    /// Removes all pending failures and stalls, sends streaming lists' end bookmark again, and
    /// ends watch delays and lag (for watches and lists made from now on).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().clear();
    /// # }
    /// ```
    pub fn clear(&self) {
        let mut faults = self.shared.faults.lock();
        faults.failures.clear();
        faults.stalls.clear();
        faults.withhold_initial_events_end = false;
        faults.watch_delay = None;
        faults.lag = 0;
    }

    /// Whether watches opened from now on with `sendInitialEvents=true` (streaming lists)
    /// get their initial events without the bookmark annotated `k8s.io/initial-events-end`
    /// that should end them, as from a server or proxy that does not finish streaming
    /// lists. Until [`Faults::clear`] or a call with `false`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().withhold_initial_events_end(true);
    /// # }
    /// ```
    pub fn withhold_initial_events_end(&self, withhold: bool) {
        self.shared.faults.lock().withhold_initial_events_end = withhold;
    }

    /// Writes a line that is not valid JSON (`{this is not json}`) to every
    /// open watch stream. Returns how many watches got it.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let reached = server.faults().send_malformed_event();
    /// # let _ = reached; }
    /// ```
    pub fn send_malformed_event(&self) -> usize {
        self.shared.store.lock().send_raw("{this is not json}")
    }

    /// Ends every open watch stream with an `ERROR` event carrying this status, as the API
    /// server does when a watch fails (for example `500 StorageReadError` after an unsafe
    /// delete of a corrupt object, or `410 Expired`): the event, then the end of the stream,
    /// as kube-apiserver's watchers stop after an error (a client that waits for the stream
    /// to end, as client-node's informer does, sees it end). Returns how many watches got it.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let reached = server.faults().send_watch_error(500, "StorageReadError", "corrupt object");
    /// # let _ = reached; }
    /// ```
    pub fn send_watch_error(&self, code: u16, reason: &str, message: &str) -> usize {
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        });
        self.shared.store.lock().end_watches_with_error(&status)
    }

    /// Delays every chunk (event, bookmark, error) of the watches opened from now on by
    /// `delay`, keeping their order, as a slow network or a busy server would: a client's
    /// cache sees each write `delay` after it was made. Until [`Faults::clear`] or a call with
    /// `Duration::ZERO`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().delay_watch_events(std::time::Duration::from_millis(50));
    /// # }
    /// ```
    pub fn delay_watch_events(&self, delay: Duration) {
        self.shared.faults.lock().watch_delay = (!delay.is_zero()).then_some(delay);
    }

    /// Makes the server answer from a view `revisions` behind its state, as a lagging replica
    /// behind a load balancer that does not honour the resource version asked for: lists
    /// other than consistent reads (`resourceVersion` set, `"0"` included) are served as of
    /// `revisions` revisions ago (never before the compacted revision), and a watch resumed
    /// from a resource version replays from `revisions` before it (events the client has
    /// already seen). Consistent lists (`resourceVersion` unset) are served from the current
    /// state, as the real server reads them from etcd. Until [`Faults::clear`] or `lag(0)`.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().lag(5);
    /// # }
    /// ```
    pub fn lag(&self, revisions: u64) {
        self.shared.faults.lock().lag = revisions;
    }

    /// Drops all retained history, like an etcd compaction at the current
    /// revision: watches resuming from an older version get an `ERROR` event
    /// with `410 Expired`, and so do continue tokens and `Exact` reads of older versions.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().compact();
    /// # }
    /// ```
    pub fn compact(&self) {
        self.shared.store.lock().compact();
    }

    /// Simulates a server restart: closes every connection (open watches end
    /// abruptly) and, with [`RestartMode::ResetData`], loses all data. The
    /// server keeps listening on the same address. As with a real restart, a
    /// client's next request on a pooled connection may fail once (the connection is
    /// gone): a controller retries it; a test's own request right after the restart
    /// should come from a client made after it (each [`TestApiServer::client`] has
    /// connections of its own), or be retried.
    ///
    /// [`TestApiServer::client`]: crate::TestApiServer::client
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// use informer_testing::RestartMode;
    /// server.faults().restart(RestartMode::ResetData);
    /// # }
    /// ```
    pub fn restart(&self, mode: RestartMode) {
        self.shared.restart(mode);
    }

    /// The number of requests received that match (failed and stalled ones included).
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// use informer_testing::{RequestMatch, Verb};
    /// let lists = server.faults().request_count(Verb::List);
    /// let pod_watches = server.faults().request_count(RequestMatch::verb(Verb::Watch).resource("pods"));
    /// # let _ = (lists, pod_watches); }
    /// ```
    pub fn request_count(&self, matcher: impl Into<RequestMatch>) -> u64 {
        self.shared.faults.lock().count(&matcher.into())
    }

    /// Resets all request counts to zero.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// server.faults().reset_request_counts();
    /// # }
    /// ```
    pub fn reset_request_counts(&self) {
        self.shared.faults.lock().counts.clear();
    }

    /// The number of currently open watch streams.
    ///
    /// ```no_run
    /// # async fn demo(server: informer_testing::TestApiServer) {
    /// let open = server.faults().open_watches();
    /// # let _ = open; }
    /// ```
    pub fn open_watches(&self) -> usize {
        self.shared.store.lock().watch_count()
    }
}

/// The version a list is served at: behind, as [`Faults::lag`] asks.
pub(crate) fn lagged_read(shared: &Shared, version: ReadVersion) -> ReadVersion {
    let lag = shared.faults.lock().lag;
    if lag == 0 || matches!(version, ReadVersion::MostRecent) {
        return version;
    }
    let snapshot = shared.store.snapshot();
    ReadVersion::Exact(
        shared
            .store
            .revision()
            .saturating_sub(lag)
            .max(snapshot.compacted_revision()),
    )
}

/// Where a watch starts: behind, as [`Faults::lag`] asks.
pub(crate) fn lagged_watch(shared: &Shared, start: WatchStart) -> WatchStart {
    let lag = shared.faults.lock().lag;
    match start {
        WatchStart::After(revision) if lag > 0 => {
            let compacted = shared.store.snapshot().compacted_revision();
            WatchStart::After(revision.saturating_sub(lag).max(compacted))
        }
        other => other,
    }
}

/// A watch body, delayed as [`Faults::delay_watch_events`] asks (unchanged without a delay).
pub(crate) fn delayed_watch(
    shared: &Shared,
    chunks: BoxStream<'static, Bytes>,
) -> BoxStream<'static, Bytes> {
    match shared.faults.lock().watch_delay {
        None => chunks,
        Some(delay) => Box::pin(Delayed {
            inner: Some(chunks),
            delay,
            pending: VecDeque::new(),
            timer: None,
        }),
    }
}

/// Hands out each chunk of `inner` `delay` after it was produced, in order. Takes chunks from
/// `inner` as soon as they come, so that the delay does not add up.
struct Delayed {
    inner: Option<BoxStream<'static, Bytes>>,
    delay: Duration,
    pending: VecDeque<(Instant, Bytes)>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Stream for Delayed {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = self.get_mut();
        while let Some(inner) = this.inner.as_mut() {
            match inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(chunk)) => {
                    this.pending.push_back((Instant::now() + this.delay, chunk));
                }
                Poll::Ready(None) => this.inner = None,
                Poll::Pending => break,
            }
        }
        let Some(&(due, _)) = this.pending.front() else {
            return if this.inner.is_none() {
                Poll::Ready(None)
            } else {
                Poll::Pending
            };
        };
        if due <= Instant::now() {
            this.timer = None;
            return Poll::Ready(this.pending.pop_front().map(|(_, chunk)| chunk));
        }
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if timer.deadline() != due {
            timer.as_mut().reset(due);
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.timer = None;
                Poll::Ready(this.pending.pop_front().map(|(_, chunk)| chunk))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests;
