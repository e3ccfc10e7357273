//! The review APIs: `authorization.k8s.io/v1` (SelfSubjectAccessReview, SelfSubjectRulesReview,
//! SubjectAccessReview, LocalSubjectAccessReview) and `authentication.k8s.io/v1`
//! (SelfSubjectReview, TokenReview). Each is create-only and stores nothing: a `POST` of a
//! review is answered `201 Created` with the review and its `status` filled in, as
//! kube-apiserver answers it.
//!
//! The server authorizes every request (it has no RBAC), so its authorizer is
//! kube-apiserver's `AlwaysAllow`: every access review is allowed and a rules review lists
//! `*` for everything. Users are who their bearer token says ([`TestApiServer::user_config`]
//! tokens, in group `system:authenticated`); the server's own token (and, on a server that
//! takes requests without one, no token) is [`ADMIN_USER`] in `system:masters`.
//!
//! `kubectl auth can-i`, `kubectl auth can-i --list` and `kubectl auth whoami` use these.
//!
//! [`TestApiServer::user_config`]: super::TestApiServer::user_config

use serde_json::{Map, Value, json};

use super::service_accounts;
use super::status::{ApiError, FieldError, StatusReason};

/// The user the server's own token authenticates as.
pub(crate) const ADMIN_USER: &str = "admin";

const AUTHORIZATION: &str = "authorization.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";
const VERSION: &str = "v1";

/// One review kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Review {
    pub group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

/// Every review kind, in the order discovery lists them (by plural within a group).
pub(crate) const REVIEWS: [Review; 6] = [
    Review {
        group: AUTHENTICATION,
        kind: "SelfSubjectReview",
        plural: "selfsubjectreviews",
        namespaced: false,
    },
    Review {
        group: AUTHENTICATION,
        kind: "TokenReview",
        plural: "tokenreviews",
        namespaced: false,
    },
    Review {
        group: AUTHORIZATION,
        kind: "LocalSubjectAccessReview",
        plural: "localsubjectaccessreviews",
        namespaced: true,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        namespaced: false,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        namespaced: false,
    },
    Review {
        group: AUTHORIZATION,
        kind: "SubjectAccessReview",
        plural: "subjectaccessreviews",
        namespaced: false,
    },
];

/// The two review groups, each with its one version.
pub(crate) const GROUPS: [&str; 2] = [AUTHENTICATION, AUTHORIZATION];

impl Review {
    /// `<group>/v1`.
    pub(crate) fn api_version(&self) -> String {
        format!("{}/{VERSION}", self.group)
    }

    /// `Kind.group`, as validation errors name it.
    fn qualified_kind(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }
}

/// Whether `group/version` holds reviews.
pub(crate) fn serves(group: &str, version: &str) -> bool {
    version == VERSION && GROUPS.contains(&group)
}

/// The review at `rest` (the path after `/apis/<group>/<version>/`), with the namespace of a
/// namespaced one. A review has no item paths: `.../selfsubjectaccessreviews/x` is no route.
pub(crate) fn route(group: &str, version: &str, rest: &[&str]) -> Option<(Review, Option<String>)> {
    if !serves(group, version) {
        return None;
    }
    let (plural, namespace) = match rest {
        [plural] => (*plural, None),
        ["namespaces", namespace, plural] => (*plural, Some((*namespace).to_string())),
        _ => return None,
    };
    let review = REVIEWS
        .iter()
        .find(|r| r.group == group && r.plural == plural)?;
    (review.namespaced == namespace.is_some()).then_some((*review, namespace))
}

/// The discovery entries of `group/version`'s reviews (`verbs: [create]`).
pub(crate) fn discovery_docs(group: &str, version: &str) -> Vec<Value> {
    if !serves(group, version) {
        return Vec::new();
    }
    REVIEWS
        .iter()
        .filter(|r| r.group == group)
        .map(|r| {
            json!({
                "name": r.plural,
                "singularName": r.kind.to_ascii_lowercase(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["create"],
            })
        })
        .collect()
}

/// Who a request is from, as the server authenticated it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub username: String,
    pub groups: Vec<String>,
    /// A service account's UID (empty for other users).
    pub uid: String,
    /// What the authenticator adds (a service account token's ID, Pod and Node).
    pub extra: Map<String, Value>,
}

/// What a token under review authenticates as.
pub(crate) enum TokenAnswer {
    /// Authenticated: the user, and the audiences (of those asked for) it is valid for.
    User(UserInfo, Vec<String>),
    /// Not authenticated, with the authenticator's reason when it gives one.
    Refused(Option<String>),
}

impl UserInfo {
    /// `user`: a user token's user; `None`: the server's own token.
    pub(crate) fn of(user: Option<&str>) -> Self {
        match user {
            Some(user) => {
                // A service account's token: its groups, as the token authenticator adds them.
                let mut groups = Vec::new();
                if let Some(account) = user.strip_prefix(service_accounts::USER_PREFIX)
                    && let Some((namespace, _)) = account.split_once(':')
                {
                    groups.push("system:serviceaccounts".to_string());
                    groups.push(format!("system:serviceaccounts:{namespace}"));
                }
                groups.push("system:authenticated".to_string());
                Self {
                    username: user.to_string(),
                    groups,
                    uid: String::new(),
                    extra: Map::new(),
                }
            }
            None => Self {
                username: ADMIN_USER.to_string(),
                groups: vec![
                    "system:masters".to_string(),
                    "system:authenticated".to_string(),
                ],
                uid: String::new(),
                extra: Map::new(),
            },
        }
    }

    /// This user with a UID and extra attributes.
    pub(crate) fn with_details(mut self, uid: String, extra: Map<String, Value>) -> Self {
        self.uid = uid;
        self.extra = extra;
        self
    }

    fn to_json(&self) -> Value {
        let mut user = json!({"username": self.username, "groups": self.groups});
        if !self.uid.is_empty() {
            user["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            user["extra"] = Value::Object(self.extra.clone());
        }
        user
    }
}

/// Answers a review: `object` is the decoded body, `namespace` the path's (namespaced
/// reviews), `requester` who sent it, `token_user` what a token under review authenticates
/// as (`None`: no user; `Some(None)`: the server's own token).
pub(crate) fn create(
    review: Review,
    namespace: Option<&str>,
    object: Value,
    requester: &UserInfo,
    token_user: impl Fn(&str, &[String]) -> TokenAnswer,
) -> Result<Value, ApiError> {
    let Value::Object(mut object) = object else {
        return Err(ApiError::bad_request(format!(
            "the body of a {} must be a JSON object",
            review.kind
        )));
    };
    check_type(review, &object)?;
    object.insert("apiVersion".into(), json!(review.api_version()));
    object.insert("kind".into(), json!(review.kind));
    let metadata = match object.remove("metadata") {
        Some(Value::Object(mut metadata)) => {
            // Nothing is stored: the review gets no identity of its own.
            metadata.remove("creationTimestamp");
            if let Some(ns) = namespace {
                metadata.insert("namespace".into(), json!(ns));
            }
            metadata
        }
        _ => namespace
            .map(|ns| Map::from_iter([("namespace".to_string(), json!(ns))]))
            .unwrap_or_default(),
    };
    object.insert("metadata".into(), Value::Object(metadata));
    let spec = object
        .get("spec")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let status = match review.kind {
        "SelfSubjectReview" => json!({"userInfo": requester.to_json()}),
        "TokenReview" => {
            let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
            if token.is_empty() {
                return Err(ApiError::bad_request(
                    "token is required for TokenReview in authentication",
                ));
            }
            let targets: Vec<String> = spec
                .get("audiences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            match token_user(token, &targets) {
                TokenAnswer::User(user, audiences) => json!({
                    "authenticated": true,
                    "user": user.to_json(),
                    "audiences": audiences,
                }),
                TokenAnswer::Refused(Some(why)) => json!({"user": {}, "error": why}),
                TokenAnswer::Refused(None) => json!({"user": {}}),
            }
        }
        "SelfSubjectRulesReview" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => {
            check_access_review(review, namespace, &spec)?;
            json!({"allowed": true})
        }
    };
    object.insert("status".into(), status);
    Ok(Value::Object(object))
}

/// The body's `apiVersion` and `kind`, when given, must be the review's.
fn check_type(review: Review, object: &Map<String, Value>) -> Result<(), ApiError> {
    let expected = review.api_version();
    if let Some(api_version) = object.get("apiVersion").and_then(Value::as_str)
        && api_version != expected
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        )));
    }
    if let Some(kind) = object.get("kind").and_then(Value::as_str)
        && kind != review.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            review.kind
        )));
    }
    Ok(())
}

/// What kube-apiserver's validation asks of an access review's spec.
fn check_access_review(
    review: Review,
    namespace: Option<&str>,
    spec: &Value,
) -> Result<(), ApiError> {
    let present = |field: &str| spec.get(field).is_some_and(|v| !v.is_null());
    let resource = present("resourceAttributes");
    let non_resource = present("nonResourceAttributes");
    let mut errors = Vec::new();
    if resource && non_resource {
        errors.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            spec["nonResourceAttributes"].clone(),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !resource && !non_resource {
        // kube-apiserver names the missing resourceAttributes with the (null)
        // nonResourceAttributes as the value.
        errors.push(FieldError::invalid(
            "spec.resourceAttributes",
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if review.kind == "LocalSubjectAccessReview" && non_resource {
        errors.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            spec["nonResourceAttributes"].clone(),
            "disallowed on this kind of request",
        ));
    }
    let subject = matches!(
        review.kind,
        "SubjectAccessReview" | "LocalSubjectAccessReview"
    );
    if subject {
        let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
        let groups = spec
            .get("groups")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if user.is_empty() && !groups {
            errors.push(FieldError::invalid(
                "spec.user",
                user,
                "at least one of user or group must be specified",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(invalid(review, errors));
    }
    if let Some(namespace) = namespace {
        let asked = spec
            .pointer("/resourceAttributes/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if asked != namespace {
            return Err(ApiError::new(
                StatusReason::BadRequest,
                format!("spec.resourceAttributes.namespace must match namespace: {namespace}"),
            ));
        }
    }
    Ok(())
}

fn invalid(review: Review, errors: Vec<FieldError>) -> ApiError {
    ApiError::invalid_fields(&review.qualified_kind(), "", errors)
}

#[cfg(test)]
mod tests;
