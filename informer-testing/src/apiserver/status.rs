//! Kubernetes `Status` errors as the API server returns them.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

/// The `reason` field of a failed `Status` (`metav1.StatusReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusReason {
    /// 400: the request itself was invalid (malformed body, bad parameter).
    BadRequest,
    /// 401: the client's credentials were missing or refused.
    Unauthorized,
    /// 403: the client may not do this (RBAC).
    Forbidden,
    /// 404: the object or path does not exist.
    NotFound,
    /// 405: the verb is not supported on this path.
    MethodNotAllowed,
    /// 409: an object with that name already exists.
    AlreadyExists,
    /// 409: a write raced with another one (stale `resourceVersion`, failed precondition).
    Conflict,
    /// 410: the requested resource version is no longer available.
    Expired,
    /// 410: the resource is gone (used by watch for "too old resource version").
    Gone,
    /// 413: the request body is too large.
    RequestEntityTooLarge,
    /// 415: the request's content type is not supported.
    UnsupportedMediaType,
    /// 422: the object failed validation (for example it has no name).
    Invalid,
    /// 429: the client must retry later.
    TooManyRequests,
    /// 500: an unexpected server error.
    InternalError,
    /// 504: the request could not be served in time (for example a too large resource version).
    Timeout,
}

impl StatusReason {
    /// The reason as it appears on the wire.
    ///
    /// ```
    /// use informer_testing::StatusReason;
    /// assert_eq!(StatusReason::NotFound.as_str(), "NotFound");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            StatusReason::BadRequest => "BadRequest",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Expired => "Expired",
            StatusReason::Gone => "Gone",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::Invalid => "Invalid",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::InternalError => "InternalError",
            StatusReason::Timeout => "Timeout",
        }
    }

    /// The HTTP status code the real API server uses for this reason.
    ///
    /// ```
    /// use informer_testing::StatusReason;
    /// assert_eq!(StatusReason::Conflict.code(), 409);
    /// ```
    pub fn code(self) -> u16 {
        match self {
            StatusReason::BadRequest => 400,
            StatusReason::Unauthorized => 401,
            StatusReason::Forbidden => 403,
            StatusReason::NotFound => 404,
            StatusReason::MethodNotAllowed => 405,
            StatusReason::AlreadyExists | StatusReason::Conflict => 409,
            StatusReason::Expired | StatusReason::Gone => 410,
            StatusReason::RequestEntityTooLarge => 413,
            StatusReason::UnsupportedMediaType => 415,
            StatusReason::Invalid => 422,
            StatusReason::TooManyRequests => 429,
            StatusReason::InternalError => 500,
            StatusReason::Timeout => 504,
        }
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed API request, rendered to clients as a `Status` object.
///
/// Every error the server returns over HTTP (and every error from the direct
/// data-access methods on [`TestApiServer`](super::TestApiServer)) is one of these.
///
/// ```
/// use informer_testing::{ApiError, StatusReason};
/// let err = ApiError::not_found("pods", "web");
/// assert_eq!(err.code(), 404);
/// assert_eq!(err.reason(), StatusReason::NotFound);
/// assert_eq!(err.to_status()["message"], "pods \"web\" not found");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    reason: StatusReason,
    code: u16,
    message: String,
    details: Option<Value>,
    metadata: Option<Value>,
    retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with the given reason (and its usual HTTP code) and message.
    ///
    /// ```
    /// use informer_testing::{ApiError, StatusReason};
    /// let err = ApiError::new(StatusReason::InternalError, "boom");
    /// assert_eq!(err.code(), 500);
    /// ```
    pub fn new(reason: StatusReason, message: impl Into<String>) -> Self {
        Self {
            reason,
            code: reason.code(),
            message: message.into(),
            details: None,
            metadata: None,
            retry_after: None,
        }
    }

    /// 400 BadRequest.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::bad_request("nope").code(), 400);
    /// ```
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusReason::BadRequest, message)
    }

    /// 403 Forbidden, worded as RBAC denies a verb on a resource
    /// (`pods is forbidden: User "u" cannot list resource "pods" ...`).
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// let err = ApiError::forbidden("system:serviceaccount:default:app", "list", "pods", Some("default"));
    /// assert_eq!((err.code(), err.reason().as_str()), (403, "Forbidden"));
    /// assert!(err.message().contains("cannot list resource \"pods\""));
    /// ```
    pub fn forbidden(user: &str, verb: &str, resource: &str, namespace: Option<&str>) -> Self {
        let scope = match namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_owned(),
        };
        Self::new(
            StatusReason::Forbidden,
            format!(
                "{resource} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"\" {scope}"
            ),
        )
        .with_details(json!({ "kind": resource }))
    }

    /// 404 NotFound for a named object of a resource (`pods "web" not found`).
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::not_found("pods", "a").code(), 404);
    /// ```
    pub fn not_found(resource: &str, name: &str) -> Self {
        Self::new(
            StatusReason::NotFound,
            format!("{resource} \"{name}\" not found"),
        )
        .with_details(json!({ "name": name, "kind": resource }))
    }

    /// 404 NotFound for a path the server does not serve.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::unknown_path().code(), 404);
    /// ```
    pub fn unknown_path() -> Self {
        Self::new(
            StatusReason::NotFound,
            "the server could not find the requested resource",
        )
    }

    /// 409 AlreadyExists.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::already_exists("pods", "a").code(), 409);
    /// ```
    pub fn already_exists(resource: &str, name: &str) -> Self {
        Self::new(
            StatusReason::AlreadyExists,
            format!("{resource} \"{name}\" already exists"),
        )
        .with_details(json!({ "name": name, "kind": resource }))
    }

    /// 409 Conflict for an update based on a stale object.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::conflict("pods", "a", "stale").code(), 409);
    /// ```
    pub fn conflict(resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on {resource} \"{name}\": {why}"),
        )
        .with_details(json!({ "name": name, "kind": resource }))
    }

    /// 422 Invalid.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::invalid("pods", "", "metadata.name: Required value").code(), 422);
    /// ```
    pub fn invalid(resource: &str, name: &str, why: &str) -> Self {
        let kind = resource;
        Self::new(
            StatusReason::Invalid,
            format!("{kind} \"{name}\" is invalid: {why}"),
        )
        .with_details(json!({ "name": name, "kind": kind }))
    }

    /// 410 Expired for a resource version that history no longer holds.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// let err = ApiError::too_old_resource_version(3, 10);
    /// assert_eq!(err.code(), 410);
    /// assert_eq!(err.message(), "too old resource version: 3 (10)");
    /// ```
    pub fn too_old_resource_version(requested: u64, oldest: u64) -> Self {
        Self::new(
            StatusReason::Expired,
            format!("too old resource version: {requested} ({oldest})"),
        )
    }

    /// 504 Timeout for a resource version newer than the server's.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::too_large_resource_version(30, 10).code(), 504);
    /// ```
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self::new(
            StatusReason::Timeout,
            format!("Too large resource version: {requested}, current: {current}"),
        )
        .with_details(json!({
            "causes": [{
                "reason": "ResourceVersionTooLarge",
                "message": "Too large resource version"
            }],
            "retryAfterSeconds": 1
        }))
    }

    /// 500 InternalError.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::internal("injected").code(), 500);
    /// ```
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusReason::InternalError, message)
    }

    /// 429 TooManyRequests with a `Retry-After` header.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// # use std::time::Duration;
    /// let err = ApiError::too_many_requests(Duration::from_secs(1));
    /// assert_eq!(err.retry_after(), Some(Duration::from_secs(1)));
    /// ```
    pub fn too_many_requests(retry_after: Duration) -> Self {
        let secs = retry_after.as_secs();
        let mut err = Self::new(
            StatusReason::TooManyRequests,
            "Too many requests, please try again later.",
        )
        .with_details(json!({ "retryAfterSeconds": secs }));
        err.retry_after = Some(retry_after);
        err
    }

    /// Replaces the `details` field.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// let err = ApiError::internal("x").with_details(serde_json::json!({"name": "a"}));
    /// assert_eq!(err.to_status()["details"]["name"], "a");
    /// ```
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// Sets the `Status`'s list metadata (the real server puts a continue
    /// token there when an expired one is refused).
    pub(crate) fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The HTTP status code.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::bad_request("x").code(), 400);
    /// ```
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The `reason` field.
    ///
    /// ```
    /// # use informer_testing::{ApiError, StatusReason};
    /// assert_eq!(ApiError::bad_request("x").reason(), StatusReason::BadRequest);
    /// ```
    pub fn reason(&self) -> StatusReason {
        self.reason
    }

    /// The human-readable message.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::bad_request("x").message(), "x");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The delay sent in `Retry-After`, for 429 errors.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// assert_eq!(ApiError::bad_request("x").retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The error as a `Status` JSON object.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// let status = ApiError::bad_request("x").to_status();
    /// assert_eq!(status["kind"], "Status");
    /// assert_eq!(status["code"], 400);
    /// ```
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": self.metadata.clone().unwrap_or_else(|| json!({})),
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// A successful `Status` (returned by deletes of most resource types).
pub(crate) fn success_status(resource: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = json!({ "name": name, "kind": resource });
    if let Some(uid) = uid {
        details["uid"] = json!(uid);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_shape_matches_the_api_server() {
        let status = ApiError::not_found("pods", "web").to_status();
        assert_eq!(
            status,
            json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "pods \"web\" not found",
                "reason": "NotFound",
                "details": {"name": "web", "kind": "pods"},
                "code": 404
            })
        );
    }

    #[test]
    fn too_many_requests_carries_retry_after() {
        let err = ApiError::too_many_requests(Duration::from_secs(2));
        assert_eq!(err.code(), 429);
        assert_eq!(err.to_status()["details"]["retryAfterSeconds"], 2);
    }
}
