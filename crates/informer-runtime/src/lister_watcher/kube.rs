//! [`KubeListerWatcher`]: list and watch through a `kube::Api<K>`.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use informer_core::lister_watcher::{
    ListParams, ListWatchError, ListerWatcher, ObjectList, WatchParams, WatchStream,
};
use kube::Api;
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

/// A [`ListerWatcher`] over a `kube::Api<K>`: each call is one HTTP request to the API
/// server, exactly as `Api::list` and `Api::watch` make it.
///
/// Works for every `K` a `kube::Api` works for: k8s-openapi types, custom resources
/// (`#[derive(CustomResource)]`), `DynamicObject` (an `Api` made with `Api::all_with` or
/// `Api::namespaced_with` and an `ApiResource`), and `PartialObjectMeta<K>` (kube sends
/// metadata-only requests for it; see also [`KubeListerWatcher::metadata`]). The `Api`'s
/// namespace scopes the informer; selectors and pagination come from the reflector's
/// parameters.
///
/// Errors are mapped by [`map_kube_error`]: a status from the server stays a status (code,
/// reason and message kept), so the reflector can tell `410 Gone` from `429` from `403`.
/// Error statuses inside a watch stream (for example a `410 Expired` event) are passed on as
/// `WatchEvent::Error`.
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
}

impl<K: Clone> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api.clone(),
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

impl<K> KubeListerWatcher<K> {
    /// Lists and watches through `api`.
    pub fn new(api: Api<K>) -> Self {
        Self { api }
    }

    /// A metadata-only lister-watcher over `api`: it lists and watches
    /// `PartialObjectMeta<K>` (`Api::list_metadata`, `Api::watch_metadata`), so the server
    /// sends only each object's `metadata`, which keeps large caches small.
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
        MetadataListerWatcher { api }
    }

    /// The `Api` requests go through.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }
}

#[async_trait]
impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, ListWatchError> {
        self.api.list(params).await.map_err(map_kube_error)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<K>, ListWatchError> {
        let stream = self
            .api
            .watch(params, resource_version)
            .await
            .map_err(map_kube_error)?;
        Ok(stream.map_err(map_kube_error).boxed())
    }
}

/// A metadata-only [`ListerWatcher`] of `PartialObjectMeta<K>`, made by
/// [`KubeListerWatcher::metadata`]. Behaves as [`KubeListerWatcher`] otherwise.
pub struct MetadataListerWatcher<K> {
    api: Api<K>,
}

impl<K: Clone> Clone for MetadataListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            api: self.api.clone(),
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
    ) -> Result<ObjectList<PartialObjectMeta<K>>, ListWatchError> {
        self.api.list_metadata(params).await.map_err(map_kube_error)
    }

    async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<WatchStream<PartialObjectMeta<K>>, ListWatchError> {
        let stream = self
            .api
            .watch_metadata(params, resource_version)
            .await
            .map_err(map_kube_error)?;
        Ok(stream.map_err(map_kube_error).boxed())
    }
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
