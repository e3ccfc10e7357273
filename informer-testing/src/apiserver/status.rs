//! Kubernetes `Status` errors as the API server returns them.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};

use super::resource::ResourceType;

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
    /// 406: no media type in `Accept` can be served.
    NotAcceptable,
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
    /// 503: the server cannot serve the request now (for example a proxy to a Pod or Service
    /// it cannot reach).
    ServiceUnavailable,
    /// 504: the request could not be served in time (for example a too large resource version).
    Timeout,
    /// 500 without a reason: an error the real server returns as a plain Go error (the
    /// `Status` has no `reason` field), e.g. a server-side apply configuration that does not
    /// fit the schema.
    Unknown,
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
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Expired => "Expired",
            StatusReason::Gone => "Gone",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::Invalid => "Invalid",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::InternalError => "InternalError",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
            StatusReason::Timeout => "Timeout",
            StatusReason::Unknown => "",
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
            StatusReason::NotAcceptable => 406,
            StatusReason::AlreadyExists | StatusReason::Conflict => 409,
            StatusReason::Expired | StatusReason::Gone => 410,
            StatusReason::RequestEntityTooLarge => 413,
            StatusReason::UnsupportedMediaType => 415,
            StatusReason::Invalid => 422,
            StatusReason::TooManyRequests => 429,
            StatusReason::InternalError | StatusReason::Unknown => 500,
            StatusReason::ServiceUnavailable => 503,
            StatusReason::Timeout => 504,
        }
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `Warning` headers of an [`ApiError`].
#[derive(Clone, Debug, Default, PartialEq)]
struct Warnings(Vec<String>);

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
    /// `Warning` headers of the answer (what the request was warned about before it failed);
    /// boxed, to keep the error small.
    warnings: Option<Box<Warnings>>,
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
            warnings: None,
        }
    }

    /// The same error, answered with these `Warning` headers too.
    pub(crate) fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        if !warnings.is_empty() {
            self.warnings.get_or_insert_default().0.extend(warnings);
        }
        self
    }

    /// The `Warning` headers the error is answered with.
    pub(crate) fn warnings(&self) -> &[String] {
        self.warnings.as_deref().map_or(&[], |w| w.0.as_slice())
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

    /// 400: the body's `metadata.namespace` is not the request's
    /// (`EnsureObjectNamespaceMatchesRequestNamespace`).
    pub(crate) fn namespace_mismatch() -> Self {
        Self::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )
    }

    /// 400: a body the decoder could not read as an object of `kind`
    /// (`transformDecodeError` without a kind: `summary`, the body's start, after `why`).
    pub(crate) fn unrecognized(kind: &str, why: &str, summary: &str) -> Self {
        Self::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {why} ({summary})"
        ))
    }

    /// 400: the body names another object than the URL (the handlers' `checkName`).
    pub(crate) fn name_mismatch(body_name: &str, url_name: &str) -> Self {
        Self::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({url_name})"
        ))
    }

    /// 400: the body of an apply that creates names no object (`checkName`, whose
    /// `ObjectName` refuses an empty name).
    pub(crate) fn name_undeterminable(url_name: &str) -> Self {
        Self::bad_request(format!(
            "the name of the object ({url_name} based on URL) was undeterminable: name must be provided"
        ))
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

    /// 403 Forbidden as an admission plugin's `NewForbidden` words it for a named object
    /// (`pods "web" is forbidden: <why>`).
    pub(crate) fn object_forbidden(resource: &ResourceType, name: &str, why: &str) -> Self {
        let mut details = json!({"name": name, "kind": resource.plural});
        if !resource.group.is_empty() {
            details["group"] = json!(resource.group);
        }
        Self::new(
            StatusReason::Forbidden,
            format!(
                "{} \"{name}\" is forbidden: {why}",
                resource.qualified_resource()
            ),
        )
        .with_details(details)
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
        .with_details(object_details(resource, name))
    }

    /// The same error about resource `to` where it names `from` (`events "x" not found` as
    /// `events.events.k8s.io "x" not found`), its details' group included.
    pub(crate) fn renamed(mut self, from: &str, to: &str) -> Self {
        self.message = self
            .message
            .replacen(&format!("{from} \""), &format!("{to} \""), 1);
        let group = to.split_once('.').map_or("", |(_, group)| group);
        if let Some(details) = self.details.as_mut().and_then(Value::as_object_mut)
            && details.contains_key("name")
            && !group.is_empty()
        {
            details.insert("group".into(), Value::String(group.to_string()));
        }
        self
    }

    /// The same error with `rewrite` applied to its message and to each cause's message and
    /// field.
    pub(crate) fn rewritten(mut self, rewrite: impl Fn(&str) -> String) -> Self {
        self.message = rewrite(&self.message);
        if let Some(causes) = self
            .details
            .as_mut()
            .and_then(|d| d.get_mut("causes"))
            .and_then(Value::as_array_mut)
        {
            for cause in causes.iter_mut().filter_map(Value::as_object_mut) {
                for key in ["message", "field"] {
                    if let Some(Value::String(text)) = cause.get_mut(key) {
                        *text = rewrite(text);
                    }
                }
            }
        }
        self
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
        .with_details(object_details(resource, name))
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
        .with_details(object_details(resource, name))
    }

    /// 409 Conflict of a write at a stale `resourceVersion`, as the storage words it: "the
    /// object has been modified; please apply your changes to the latest version and try
    /// again".
    pub(crate) fn modified(resource: &str, name: &str) -> Self {
        Self::conflict(
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with one message. When `why` has the shape of a field error as the real
    /// server prints it (`<field>: <Required value|Invalid value|Unsupported value|Duplicate
    /// value|Too long|Too many|Forbidden|Not found>...`), it becomes the `details.causes`
    /// entry too; prefer [`ApiError::invalid_fields`] to build causes explicitly.
    ///
    /// ```
    /// # use informer_testing::ApiError;
    /// let err = ApiError::invalid("Pod", "web", "metadata.name: Required value");
    /// assert_eq!(err.code(), 422);
    /// assert_eq!(err.message(), "Pod \"web\" is invalid: metadata.name: Required value");
    /// assert_eq!(err.to_status()["details"]["causes"][0]["field"], "metadata.name");
    /// ```
    pub fn invalid(resource: &str, name: &str, why: &str) -> Self {
        match FieldError::parse(why) {
            Some(cause) => Self::invalid_fields(resource, name, vec![cause]),
            None => {
                let (kind, group) = resource.split_once('.').unwrap_or((resource, ""));
                let mut details = json!({ "name": name, "kind": kind });
                if !group.is_empty() {
                    details["group"] = json!(group);
                }
                Self::new(
                    StatusReason::Invalid,
                    format!("{resource} \"{name}\" is invalid: {why}"),
                )
                .with_details(details)
            }
        }
    }

    /// 422 Invalid listing field errors, as kube-apiserver's `NewInvalid` builds it: the
    /// message is `<Kind[.group]> "<name>" is invalid: <error>` for one error and
    /// `... is invalid: [<error>, <error>]` for several, and `details` carries the kind,
    /// group, name and one cause (`reason`, `message`, `field`) per error.
    ///
    /// ```
    /// use informer_testing::{ApiError, FieldError};
    /// let err = ApiError::invalid_fields(
    ///     "Deployment.apps",
    ///     "web",
    ///     vec![
    ///         FieldError::required("spec.selector", ""),
    ///         FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0"),
    ///     ],
    /// );
    /// assert_eq!(
    ///     err.message(),
    ///     "Deployment.apps \"web\" is invalid: [spec.selector: Required value, \
    ///      spec.replicas: Invalid value: -1: must be greater than or equal to 0]"
    /// );
    /// let status = err.to_status();
    /// assert_eq!(status["details"]["group"], "apps");
    /// assert_eq!(status["details"]["causes"][1]["reason"], "FieldValueInvalid");
    /// ```
    pub fn invalid_fields(qualified_kind: &str, name: &str, errors: Vec<FieldError>) -> Self {
        let (kind, group) = qualified_kind
            .split_once('.')
            .unwrap_or((qualified_kind, ""));
        // The message lists each distinct error once (`ErrorList.ToAggregate`); the causes
        // keep every one.
        let mut distinct: Vec<String> = Vec::new();
        for error in &errors {
            let text = error.to_string();
            if !distinct.contains(&text) {
                distinct.push(text);
            }
        }
        let quoted = go_quote(name);
        let message = match distinct.as_slice() {
            [] => format!("{qualified_kind} {quoted} is invalid"),
            [one] => format!("{qualified_kind} {quoted} is invalid: {one}"),
            many => format!(
                "{qualified_kind} {quoted} is invalid: [{}]",
                many.join(", ")
            ),
        };
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({"reason": e.kind.cause(), "message": e.body(), "field": e.field}))
            .collect();
        // `StatusDetails` leaves empty fields out (a patch that does not decode names no kind).
        let mut details = json!({ "causes": causes });
        if !kind.is_empty() {
            details["kind"] = json!(kind);
        }
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        Self::new(StatusReason::Invalid, message).with_details(details)
    }

    /// 422 for a patch that does not apply, as kube-apiserver answers it
    /// (`NewGenericServerResponse` with `isUnexpectedResponse` false): a fixed message and
    /// empty details. The reason (`_why`, what the patch library said) is not shown to
    /// the client, as kube-apiserver does not show it.
    pub(crate) fn patch_rejected(_why: &str) -> Self {
        Self::new(
            StatusReason::Invalid,
            "the server rejected our request due to an error in our request",
        )
        .with_details(json!({}))
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
            // `NewTimeoutError` prefixes its message with "Timeout: ".
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
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

    /// Advertises `retry_after` as `Retry-After` and `details.retryAfterSeconds` (as
    /// `NewTooManyRequests` and `ErrorNegotiated` do), keeping the other details.
    pub(crate) fn with_retry_after(mut self, retry_after: Duration) -> Self {
        let mut details = self.details.take().unwrap_or_else(|| json!({}));
        details["retryAfterSeconds"] = json!(retry_after.as_secs());
        self.details = Some(details);
        self.retry_after = Some(retry_after);
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
        if self.reason == StatusReason::Unknown
            && let Value::Object(map) = &mut status
        {
            map.remove("reason");
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// A document as JSON. `Status` and the discovery documents (`APIVersions`, `APIGroupList`,
/// `APIGroup`, `APIResourceList`) are written as kube-apiserver's encoder writes them: their
/// fields in the Go structs' order (a `Status`'s `kind`, `apiVersion`, `metadata`, `status`,
/// `message`, `reason`, `details`, `code`; a discovery resource's `name`, `singularName`,
/// `namespaced`, `group`, `version`, `kind`, `verbs`, `shortNames`, `categories`,
/// `storageVersionHash`) and a trailing newline, as `json.Encoder` ends a document. Clients
/// that print the body (Python's `FailToCreateError`: `Error from server (Conflict):
/// {"kind":"Status",...}`) and scripts that grep it (`kubectl get --raw /api/v1`) see the
/// same text as against a cluster. Other documents keep their keys sorted, and end with the
/// same newline.
pub(crate) fn to_json(value: &Value) -> Vec<u8> {
    let top = match (
        value.get("kind").and_then(Value::as_str),
        value.get("apiVersion").and_then(Value::as_str),
    ) {
        (Some("Status"), Some("v1")) => GoStruct::Status,
        (Some("APIVersions"), _) => GoStruct::ApiVersions,
        (Some("APIGroupList"), _) => GoStruct::ApiGroupList,
        (Some("APIGroup"), _) => GoStruct::ApiGroup,
        (Some("APIResourceList"), _) => GoStruct::ApiResourceList,
        _ => {
            // As Go's `json.Encoder` (the API server's JSON serializer) ends a document.
            let mut out = serde_json::to_vec(value).unwrap_or_default();
            out.push(b'\n');
            return out;
        }
    };
    let mut out = String::new();
    write_go(value, top, &mut out);
    out.push('\n');
    out.into_bytes()
}

/// The Go structs whose field order [`to_json`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GoStruct {
    Status,
    ListMeta,
    StatusDetails,
    StatusCause,
    ApiVersions,
    ServerAddressByClientCidr,
    ApiGroupList,
    ApiGroup,
    GroupVersionForDiscovery,
    ApiResourceList,
    ApiResource,
    /// Anything else: keys sorted.
    Other,
}

impl GoStruct {
    /// The JSON names of the struct's fields, in declaration order (`TypeMeta` inline first).
    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Status => &[
                "kind",
                "apiVersion",
                "metadata",
                "status",
                "message",
                "reason",
                "details",
                "code",
            ],
            Self::ListMeta => &[
                "selfLink",
                "resourceVersion",
                "continue",
                "remainingItemCount",
            ],
            Self::StatusDetails => &[
                "name",
                "group",
                "kind",
                "uid",
                "causes",
                "retryAfterSeconds",
            ],
            Self::StatusCause => &["reason", "message", "field"],
            Self::ApiVersions => &[
                "kind",
                "apiVersion",
                "versions",
                "serverAddressByClientCIDRs",
            ],
            Self::ServerAddressByClientCidr => &["clientCIDR", "serverAddress"],
            Self::ApiGroupList => &["kind", "apiVersion", "groups"],
            Self::ApiGroup => &[
                "kind",
                "apiVersion",
                "name",
                "versions",
                "preferredVersion",
                "serverAddressByClientCIDRs",
            ],
            Self::GroupVersionForDiscovery => &["groupVersion", "version"],
            Self::ApiResourceList => &["kind", "apiVersion", "groupVersion", "resources"],
            Self::ApiResource => &[
                "name",
                "singularName",
                "namespaced",
                "group",
                "version",
                "kind",
                "verbs",
                "shortNames",
                "categories",
                "storageVersionHash",
            ],
            Self::Other => &[],
        }
    }

    /// The struct a field's value (or each element of a list field) is.
    fn field(self, key: &str) -> Self {
        match (self, key) {
            (Self::Status, "metadata") => Self::ListMeta,
            (Self::Status, "details") => Self::StatusDetails,
            (Self::StatusDetails, "causes") => Self::StatusCause,
            (Self::ApiVersions | Self::ApiGroup, "serverAddressByClientCIDRs") => {
                Self::ServerAddressByClientCidr
            }
            (Self::ApiGroupList, "groups") => Self::ApiGroup,
            (Self::ApiGroup, "versions" | "preferredVersion") => Self::GroupVersionForDiscovery,
            (Self::ApiResourceList, "resources") => Self::ApiResource,
            _ => Self::Other,
        }
    }
}

/// `value` as the Go struct `go` (its fields in order, then any others sorted); lists'
/// elements each as that struct.
fn write_go(value: &Value, go: GoStruct, out: &mut String) {
    match value {
        Value::Object(map) if go != GoStruct::Other => {
            let order = go.fields();
            let rest = map.keys().filter(|k| !order.contains(&k.as_str()));
            let keys = order
                .iter()
                .copied()
                .filter(|k| map.contains_key(*k))
                .chain(rest.map(String::as_str));
            out.push('{');
            for (i, key) in keys.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).unwrap_or_default());
                out.push(':');
                write_go(&map[key], go.field(key), out);
            }
            out.push('}');
        }
        Value::Array(items) if go != GoStruct::Other => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go(item, go, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.reason, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// The kind of a [`FieldError`] (`field.ErrorType` in apimachinery).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldErrorKind {
    /// `FieldValueRequired`: a required field is missing or empty.
    Required,
    /// `FieldValueInvalid`: the value is malformed.
    Invalid,
    /// `FieldValueNotSupported`: the value is not one of the supported ones.
    NotSupported,
    /// `FieldValueDuplicate`: the value repeats one that must be unique.
    Duplicate,
    /// `FieldValueTooLong`: the value is too long.
    TooLong,
    /// `FieldValueTooMany`: the list has too many items.
    TooMany,
    /// `FieldValueForbidden`: the field may not be set (or changed).
    Forbidden,
    /// `FieldValueNotFound`: a referenced value does not exist.
    NotFound,
    /// `FieldValueTypeInvalid`: the value is of the wrong type (custom resource schemas).
    TypeInvalid,
}

impl FieldErrorKind {
    const ALL: [FieldErrorKind; 9] = [
        FieldErrorKind::Required,
        FieldErrorKind::Invalid,
        FieldErrorKind::NotSupported,
        FieldErrorKind::Duplicate,
        FieldErrorKind::TooLong,
        FieldErrorKind::TooMany,
        FieldErrorKind::Forbidden,
        FieldErrorKind::NotFound,
        FieldErrorKind::TypeInvalid,
    ];

    /// The `reason` of the status cause, e.g. `FieldValueRequired`.
    ///
    /// ```
    /// use informer_testing::FieldErrorKind;
    /// assert_eq!(FieldErrorKind::Duplicate.cause(), "FieldValueDuplicate");
    /// ```
    pub fn cause(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::NotFound => "FieldValueNotFound",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The words kube-apiserver prints for the kind, e.g. `Required value`.
    ///
    /// ```
    /// use informer_testing::FieldErrorKind;
    /// assert_eq!(FieldErrorKind::NotSupported.words(), "Unsupported value");
    /// ```
    pub fn words(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::NotFound => "Not found",
            FieldErrorKind::TypeInvalid => "Invalid value",
        }
    }

    /// Whether the printed error shows the offending value (as `Invalid value: "x"`).
    fn shows_value(self) -> bool {
        matches!(
            self,
            FieldErrorKind::Invalid
                | FieldErrorKind::NotSupported
                | FieldErrorKind::Duplicate
                | FieldErrorKind::NotFound
                | FieldErrorKind::TypeInvalid
                | FieldErrorKind::TooMany
        )
    }
}

/// One validation failure of one field, printed as kube-apiserver prints `field.Error`:
/// `<field>: <kind words>[: <value>][: <detail>]`.
///
/// ```
/// use informer_testing::FieldError;
/// let err = FieldError::not_supported("spec.restartPolicy", "Sometimes", &["Always", "OnFailure", "Never"]);
/// assert_eq!(
///     err.to_string(),
///     "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
/// );
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What kind of failure.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.containers[0].name`.
    pub field: String,
    /// The offending value, for the kinds that print it.
    pub value: Option<Value>,
    /// Why, or what would be accepted (may be empty).
    pub detail: String,
}

impl FieldError {
    /// `FieldValueInvalid` whose value is given already printed as `field.Error` prints it
    /// (`json.Marshal` of the value's Go type: a struct's fields in their order, an internal
    /// type's with Go's field names).
    pub(crate) fn invalid_go(field: &str, go_value: &str, detail: &str) -> Self {
        Self::new(
            FieldErrorKind::Invalid,
            field,
            None,
            &format!("{go_value}: {detail}"),
        )
    }

    fn new(kind: FieldErrorKind, field: &str, value: Option<Value>, detail: &str) -> Self {
        Self {
            kind,
            field: field.to_string(),
            value,
            detail: detail.to_string(),
        }
    }

    /// `FieldValueRequired`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// assert_eq!(FieldError::required("spec.containers", "").to_string(), "spec.containers: Required value");
    /// ```
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }

    /// `FieldValueInvalid`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::invalid("metadata.name", "Web", "must be lower case");
    /// assert_eq!(err.to_string(), "metadata.name: Invalid value: \"Web\": must be lower case");
    /// ```
    pub fn invalid(field: &str, value: impl Into<Value>, detail: &str) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value.into()), detail)
    }

    /// `FieldValueNotSupported`, listing the supported values.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::not_supported("spec.type", "Magic", &["ClusterIP"]);
    /// assert!(err.to_string().ends_with("supported values: \"ClusterIP\""));
    /// ```
    pub fn not_supported(field: &str, value: impl Into<Value>, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        let detail = format!("supported values: {}", supported.join(", "));
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(value.into()),
            &detail,
        )
    }

    /// `FieldValueDuplicate`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::duplicate("spec.containers[1].name", "app");
    /// assert_eq!(err.to_string(), "spec.containers[1].name: Duplicate value: \"app\"");
    /// ```
    pub fn duplicate(field: &str, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(value.into()), "")
    }

    /// `FieldValueTooLong` for a value over `max` bytes.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::too_long("metadata.annotations", 262_144);
    /// assert_eq!(err.to_string(), "metadata.annotations: Too long: may not be more than 262144 bytes");
    /// ```
    pub fn too_long(field: &str, max: usize) -> Self {
        let detail = format!("may not be more than {max} bytes");
        Self::new(FieldErrorKind::TooLong, field, None, &detail)
    }

    /// `FieldValueTooMany` for a list of `actual` items, more than `max`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::too_many("spec.tags", 4, 3);
    /// assert_eq!(err.to_string(), "spec.tags: Too many: 4: must have at most 3 items");
    /// ```
    pub fn too_many(field: &str, actual: usize, max: usize) -> Self {
        let detail = format!("must have at most {max} items");
        Self::new(FieldErrorKind::TooMany, field, Some(actual.into()), &detail)
    }

    /// `FieldValueTypeInvalid`: the value has the wrong type; `value` is what the real
    /// server shows (for schema type errors, the name of the type found).
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// let err = FieldError::type_invalid("spec.size", "string", "spec.size in body must be of type integer: \"string\"");
    /// assert_eq!(
    ///     err.to_string(),
    ///     "spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
    /// );
    /// ```
    pub fn type_invalid(field: &str, value: impl Into<Value>, detail: &str) -> Self {
        Self::new(
            FieldErrorKind::TypeInvalid,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// `FieldValueForbidden`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// assert_eq!(FieldError::forbidden("data", "field is immutable").to_string(), "data: Forbidden: field is immutable");
    /// ```
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }

    /// The error without the field (`StatusCause.message`), e.g. `Required value`.
    ///
    /// ```
    /// # use informer_testing::FieldError;
    /// assert_eq!(FieldError::invalid("a", 3, "too big").body(), "Invalid value: 3: too big");
    /// ```
    pub fn body(&self) -> String {
        let mut body = self.kind.words().to_string();
        if self.kind.shows_value()
            && let Some(value) = &self.value
        {
            body.push_str(": ");
            match value {
                // `%q`: Go's escapes, not JSON's (`"a\x00b"`).
                Value::String(text) => body.push_str(&go_quote(text)),
                // Anything else but a number or a bool: `json.Marshal` (keys sorted, `<`, `>`,
                // `&` escaped).
                Value::Array(_) | Value::Object(_) => {
                    body.push_str(&super::go_json::marshal(value));
                }
                other => body.push_str(&other.to_string()),
            }
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }

    /// Reads back an error printed as `<field>: <kind words>[: <rest>]` (the rest becomes
    /// the detail); `None` for other text.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (field, rest) = text.split_once(": ")?;
        if field.is_empty() || field.contains(' ') {
            return None;
        }
        let kind = FieldErrorKind::ALL
            .into_iter()
            .find(|k| rest == k.words() || rest.starts_with(&format!("{}: ", k.words())))?;
        let detail = rest
            .strip_prefix(kind.words())
            .and_then(|d| d.strip_prefix(": "))
            .unwrap_or("");
        Some(Self::new(kind, field, None, detail))
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Go's `strconv.Quote` (`%q`), as messages quote names and values: `\a \b \f \n \r \t \v`,
/// `\xNN` for the other ASCII controls and DEL, `\uNNNN` for the non-printable characters
/// clients meet (C1 controls, zero-width and line/paragraph separators, the BOM).
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            '\u{80}'..='\u{a0}'
            | '\u{ad}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{feff}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `details` naming an object of a resource given as `plural` or `plural.group`: the
/// plural as `kind`, the group apart, as the real server's `StatusDetails`.
fn object_details(resource: &str, name: &str) -> Value {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    let mut details = json!({ "name": name, "kind": plural });
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    details
}

/// The `Status` of a subresource that creates nothing to return (an eviction, a binding):
/// `Success` with code `201`.
pub(crate) fn created_status() -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    })
}

/// A successful `Status` (returned by deletes of most resource types).
pub(crate) fn success_status(resource: &str, group: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = json!({ "name": name, "kind": resource });
    if !group.is_empty() {
        details["group"] = json!(group);
    }
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
mod tests;
