//! [`ListerWatcher`]: how the reflector reads the API server (or anything that acts like one).

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use thiserror::Error;

pub use kube_core::params::{ListParams, VersionMatch, WatchParams};
pub use kube_core::response::{StatusCause, StatusDetails};
pub use kube_core::watch::WatchEvent;
pub use kube_core::{ListMeta, ObjectList, Status};

/// The annotation on the bookmark that ends the initial events of a streaming list
/// (`sendInitialEvents=true`); its value is `"true"`.
///
/// ```
/// assert_eq!(informer_core::lister_watcher::INITIAL_EVENTS_END_ANNOTATION, "k8s.io/initial-events-end");
/// ```
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// The stream a [`ListerWatcher::watch`] returns: each object already in the `Arc` the
/// cache, the FIFO and every handler will share.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<Arc<K>>, ListWatchError>>;

/// Lists and watches one kind of object.
///
/// The parameters and results are kube's own types (`kube::api::ListParams`, `ObjectList`,
/// `WatchEvent`), so an implementation over `kube::Api<K>` is a thin layer; tests and
/// benchmarks implement it over memory.
///
/// - [`list`](ListerWatcher::list) honours label and field selectors, `limit`/`continue`
///   pagination, `resourceVersion` and `resourceVersionMatch`.
/// - [`watch`](ListerWatcher::watch) streams events after `resource_version`: added,
///   modified, deleted, bookmarks, and error statuses (such as `410 Gone`).
///
/// Objects come in `Arc`s, as client-go's come behind pointers: an object is placed once, by
/// whoever decodes it (possibly on another thread), and never copied again on its way to the
/// cache. [`shared`] wraps the objects of a `WatchEvent<K>`.
///
/// Object safe: `Arc<dyn ListerWatcher<K>>` works.
#[async_trait]
pub trait ListerWatcher<K: Clone>: Send + Sync {
    /// One page of the list.
    ///
    /// # Errors
    /// The server's status (for example 410 when a continue token expired) or a transport
    /// or decoding failure.
    async fn list(&self, params: &ListParams) -> Result<ObjectList<Arc<K>>, ListWatchError>;

    /// One page of the list, handed to `part` piece by piece as it is decoded, in the
    /// server's order, and the page's metadata (resource version, continue token) at the
    /// end. A reflector uses it to fill an empty cache while the rest of a large list is
    /// still arriving, so that the whole response is never held at once.
    ///
    /// The default calls [`list`](ListerWatcher::list) and hands over its items in one
    /// part; a source that decodes a response body (as `KubeListerWatcher` does) hands over
    /// each run of decoded objects as soon as it has it. On an error, the parts already
    /// handed over are a prefix of a list that did not complete: the caller must not take
    /// them as a whole list.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use std::sync::Arc;
    /// use informer_core::lister_watcher::{ListMeta, ListParams, ListerWatcher, ListWatchError,
    ///     ObjectList, WatchParams, WatchStream};
    ///
    /// struct Two;
    /// #[async_trait::async_trait]
    /// impl ListerWatcher<String> for Two {
    ///     async fn list(&self, _: &ListParams) -> Result<ObjectList<Arc<String>>, ListWatchError> {
    ///         Ok(ObjectList {
    ///             types: Default::default(),
    ///             metadata: ListMeta { resource_version: Some("3".into()), ..Default::default() },
    ///             items: vec![Arc::new("a".into()), Arc::new("b".into())],
    ///         })
    ///     }
    ///     async fn watch(&self, _: &WatchParams, _: &str) -> Result<WatchStream<String>, ListWatchError> {
    ///         Ok(Box::pin(futures::stream::empty()))
    ///     }
    /// }
    ///
    /// let mut parts = Vec::new();
    /// let meta = Two.list_in_parts(&ListParams::default(), &mut |part| parts.push(part.len())).await?;
    /// assert_eq!(parts, [2]);
    /// assert_eq!(meta.resource_version.as_deref(), Some("3"));
    /// # Ok::<(), ListWatchError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`list`](ListerWatcher::list).
    async fn list_in_parts(
        &self,
        params: &ListParams,
        part: &mut (dyn FnMut(Vec<Arc<K>>) + Send),
    ) -> Result<ListMeta, ListWatchError> {
        let list = self.list(params).await?;
        if !list.items.is_empty() {
            part(list.items);
        }
        Ok(list.metadata)
    }

    /// Starts a watch from `resource_version` (`""` or `"0"` per the API's semantics).
    ///
    /// # Errors
    /// As [`list`](ListerWatcher::list).
    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError>;
}

/// The event with its object (if any) in an `Arc`, as a [`WatchStream`] carries it: for
/// sources that receive kube's `WatchEvent<K>`.
///
/// ```
/// use std::sync::Arc;
/// use informer_core::lister_watcher::{WatchEvent, shared};
///
/// let event = shared(WatchEvent::Added("a".to_string()));
/// assert!(matches!(event, WatchEvent::Added(a) if *a == "a"));
/// ```
pub fn shared<K>(event: WatchEvent<K>) -> WatchEvent<Arc<K>> {
    match event {
        WatchEvent::Added(obj) => WatchEvent::Added(Arc::new(obj)),
        WatchEvent::Modified(obj) => WatchEvent::Modified(Arc::new(obj)),
        WatchEvent::Deleted(obj) => WatchEvent::Deleted(Arc::new(obj)),
        WatchEvent::Bookmark(bookmark) => WatchEvent::Bookmark(bookmark),
        WatchEvent::Error(status) => WatchEvent::Error(status),
    }
}

/// A list or watch failed.
#[derive(Debug, Error)]
pub enum ListWatchError {
    /// The server answered with an error status.
    #[error("API server error {}: {} ({})", .0.code, .0.message, .0.reason)]
    Api(Box<Status>),
    /// The request did not reach the server, or the connection broke.
    #[error("connection to the API server failed: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The server sent something that is not a valid object or event.
    #[error("malformed response from the API server: {0}")]
    Decode(String),
}

impl ListWatchError {
    /// A status error with this code, reason and message.
    pub fn status(code: u16, reason: &str, message: impl Into<String>) -> Self {
        let mut status = Status::failure(&message.into(), reason);
        status.code = code;
        ListWatchError::Api(Box::new(status))
    }

    /// The HTTP status code, for [`ListWatchError::Api`].
    pub fn code(&self) -> Option<u16> {
        match self {
            ListWatchError::Api(s) => Some(s.code),
            _ => None,
        }
    }

    /// Whether the requested resource version is too old (`410 Gone`, reason `Expired` or
    /// `Gone`, or a "too old resource version" message): the caller must relist.
    ///
    /// ```
    /// use informer_core::ListWatchError;
    /// assert!(ListWatchError::status(410, "Expired", "too old resource version: 1 (5)").is_gone());
    /// assert!(!ListWatchError::status(500, "InternalError", "boom").is_gone());
    /// ```
    pub fn is_gone(&self) -> bool {
        match self {
            ListWatchError::Api(s) => {
                s.code == 410
                    || s.reason == "Expired"
                    || s.reason == "Gone"
                    || s.message.contains("too old resource version")
            }
            _ => false,
        }
    }

    /// Whether the server asked the client to slow down (`429 Too Many Requests`).
    pub fn is_too_many_requests(&self) -> bool {
        self.code() == Some(429)
    }

    /// Whether the requested resource version is newer than the server has
    /// ("Too large resource version"): the caller should relist with a consistent read.
    ///
    /// Recognised as client-go's `isTooLargeResourceVersionError` does: a status cause of
    /// type `ResourceVersionTooLarge` (servers since 1.18.6), a cause whose message is "Too
    /// large resource version" (1.17.0 to 1.18.5, on a `504 Timeout`), or the text in the
    /// status message (before 1.17). client-go looks at the cause message only on a timeout;
    /// here any status with it counts, since nothing else carries that message.
    ///
    /// ```
    /// use informer_core::ListWatchError;
    /// use informer_core::lister_watcher::Status;
    ///
    /// let status: Status = serde_json::from_value(serde_json::json!({
    ///     "status": "Failure", "code": 504, "reason": "Timeout",
    ///     "message": "Timeout: request did not complete",
    ///     "details": {"causes": [{"reason": "ResourceVersionTooLarge"}]},
    /// }))
    /// .unwrap();
    /// assert!(ListWatchError::Api(Box::new(status)).is_too_large_resource_version());
    /// assert!(ListWatchError::status(504, "Timeout", "Too large resource version: 9, current: 3")
    ///     .is_too_large_resource_version());
    /// ```
    pub fn is_too_large_resource_version(&self) -> bool {
        let ListWatchError::Api(s) = self else {
            return false;
        };
        let causes = s.details.iter().flat_map(|d| &d.causes);
        causes
            .into_iter()
            .any(|c| c.reason == CAUSE_RESOURCE_VERSION_TOO_LARGE || c.message == TOO_LARGE_MESSAGE)
            || s.message.contains(TOO_LARGE_MESSAGE)
    }

    /// Whether the server failed internally: reason `InternalError`, or code 500 with a reason
    /// this library does not know (client-go's `apierrors.IsInternalError`). A `500` with
    /// another known reason (such as `StorageReadError`, sent after an unsafe delete of a
    /// corrupt object) is not.
    ///
    /// ```
    /// use informer_core::ListWatchError;
    /// assert!(ListWatchError::status(500, "InternalError", "boom").is_internal_error());
    /// assert!(ListWatchError::status(500, "", "boom").is_internal_error());
    /// assert!(!ListWatchError::status(500, "StorageReadError", "corrupt object").is_internal_error());
    /// assert!(!ListWatchError::status(503, "ServiceUnavailable", "later").is_internal_error());
    /// ```
    pub fn is_internal_error(&self) -> bool {
        match self {
            ListWatchError::Api(s) => {
                s.reason == "InternalError"
                    || (s.code == 500 && !kube_core::response::reason::is_known(&s.reason))
            }
            _ => false,
        }
    }
}

/// The status cause type of "Too large resource version" (`metav1.CauseTypeResourceVersionTooLarge`).
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// The message of "Too large resource version" errors (and of their cause).
const TOO_LARGE_MESSAGE: &str = "Too large resource version";

#[cfg(test)]
mod tests;
