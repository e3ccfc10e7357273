//! [`ReflectorError`]: why a list or watch failed, and what to do about it.

use std::fmt;
use std::time::Duration;

use informer_core::{FifoError, ListWatchError};

/// A list, watch or push to the FIFO failed. The reflector retries by itself (with backoff);
/// this error is what [`Reflector::last_error`](super::Reflector::last_error) and the
/// watch-error handler report, so that a caller waiting for the cache to sync can say why it
/// has not.
///
/// Its message names the operation, the server's answer and, for the errors a user must fix,
/// what to fix: `403 Forbidden` (RBAC: grant `list` and `watch`), `401 Unauthorized`
/// (credentials) and `404 NotFound` (the resource type is not served, e.g. a CRD that is not
/// installed).
///
/// ```
/// use informer_core::ListWatchError;
/// use informer_runtime::reflector::ReflectorError;
///
/// let err = ReflectorError::List(ListWatchError::status(403, "Forbidden", "pods is forbidden"));
/// assert!(err.is_forbidden());
/// assert!(err.to_string().contains("RBAC"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ReflectorError {
    /// A list request failed (the reflector lists again after a backoff).
    List(ListWatchError),
    /// A watch request failed, or its stream delivered an error (the reflector watches again
    /// after a backoff, or relists when the resource version is too old).
    Watch(ListWatchError),
    /// A streaming list (`sendInitialEvents`) did not deliver its initial-events-end bookmark
    /// within this time; the reflector fell back to list and watch.
    StreamingListTimeout(Duration),
    /// The FIFO refused the objects of a list (the reflector lists again after a backoff).
    Fifo(FifoError),
    /// The server sent a state older than the cache's: a list, watch event or bookmark at a
    /// resource version below the one the cache has reached (a lagging API server). It was
    /// refused; the reflector lists again from a consistent read.
    WentBack {
        /// What was refused: `"list"`, `"watch event"`, `"bookmark"` or `"streaming list"`.
        what: &'static str,
        /// Its resource version.
        resource_version: String,
        /// The cache's resource version.
        cache: String,
    },
}

impl ReflectorError {
    /// The list/watch error underneath, if any.
    pub fn list_watch_error(&self) -> Option<&ListWatchError> {
        match self {
            ReflectorError::List(e) | ReflectorError::Watch(e) => Some(e),
            _ => None,
        }
    }

    /// The HTTP status code of the server's answer, if it answered with an error status.
    pub fn code(&self) -> Option<u16> {
        self.list_watch_error().and_then(ListWatchError::code)
    }

    /// `403 Forbidden`: the client's RBAC role does not allow listing or watching.
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// `404 NotFound`: the API server does not serve this resource (type or namespace).
    pub fn is_not_found(&self) -> bool {
        self.code() == Some(404)
    }

    /// `401 Unauthorized`: the client's credentials were rejected.
    pub fn is_unauthorized(&self) -> bool {
        self.code() == Some(401)
    }

    /// The requested resource version was too old (`410 Gone`); the reflector relists.
    pub fn is_gone(&self) -> bool {
        self.list_watch_error().is_some_and(ListWatchError::is_gone)
    }

    /// What the user can do, for errors the reflector cannot recover from by retrying.
    ///
    /// ```
    /// use informer_core::ListWatchError;
    /// use informer_runtime::reflector::ReflectorError;
    ///
    /// let err = ReflectorError::List(ListWatchError::status(404, "NotFound", "not found"));
    /// assert!(err.hint().unwrap().contains("CustomResourceDefinition"));
    /// let err = ReflectorError::Watch(ListWatchError::status(500, "InternalError", "boom"));
    /// assert_eq!(err.hint(), None); // retried by the reflector
    /// ```
    pub fn hint(&self) -> Option<&'static str> {
        match self.code() {
            Some(401) => Some(
                "the API server rejected the client's credentials; check the kubeconfig or \
                 service account token",
            ),
            Some(403) => Some(
                "the client is not allowed to list/watch this resource; grant the `list` and \
                 `watch` verbs on it to the client's user or service account (RBAC)",
            ),
            Some(404) => Some(
                "the API server does not serve this resource; for a custom resource, check \
                 that its CustomResourceDefinition is installed; for a built-in one, that the \
                 server serves its group and version (a server of custom resources only, \
                 such as EnvTest's, serves none); and that the group, version and namespace \
                 are right",
            ),
            _ => None,
        }
    }
}

impl fmt::Display for ReflectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReflectorError::List(e) => write!(f, "list failed: {e}")?,
            ReflectorError::Watch(e) => write!(f, "watch failed: {e}")?,
            ReflectorError::StreamingListTimeout(d) => write!(
                f,
                "streaming list: no initial-events-end bookmark within {d:?}; fell back to list \
                 and watch"
            )?,
            ReflectorError::Fifo(e) => write!(f, "the FIFO refused the listed objects: {e}")?,
            ReflectorError::WentBack {
                what,
                resource_version,
                cache,
            } => write!(
                f,
                "refused a {what} at resource version {resource_version}, older than the \
                 cache's {cache} (a lagging API server?); listing again from a consistent read"
            )?,
        }
        if let Some(hint) = self.hint() {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ReflectorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReflectorError::List(e) | ReflectorError::Watch(e) => Some(e),
            ReflectorError::Fifo(e) => Some(e),
            ReflectorError::StreamingListTimeout(_) | ReflectorError::WentBack { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests;
