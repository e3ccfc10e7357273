//! ServiceAccounts as a cluster has them:
//! - **the service account controller** (kube-controller-manager's): every namespace that is
//!   not terminating has a ServiceAccount named `default`, created when the namespace is (or
//!   when the server starts), and again if it is deleted;
//! - **the `ServiceAccount` admission plugin**, on a new Pod: `spec.serviceAccountName`
//!   defaults to `default`, and the deprecated `spec.serviceAccount` to the same name.
//!
//! - **the `token` subresource** (TokenRequest, `kubectl create token`): a token that
//!   authenticates as `system:serviceaccount:<namespace>:<name>` for as long as the server
//!   runs, shaped as the JWT a cluster issues (its claims readable; its signature checked by
//!   no one).
//!
//!   A token bound to a Pod, Node or Secret (`kubectl create token --bound-object-kind`) needs
//!   the object (`404`), a Pod running as the account (`400`) and, if given, its `uid` (`409`).
//!   The answer's metadata names the account and its `uid` (as since 1.34); a request naming
//!   another is refused (`400` namespace, `422` name, `409` uid).
//!
//!   Each time a token is presented (a request, a TokenReview) it is checked as
//!   kube-apiserver's authenticator checks it: not expired, issued for one of the target
//!   audiences (the API server's own for a request), its ServiceAccount and bound object
//!   still there with the UIDs it names. A TokenReview's user carries the account's `uid`
//!   and the token's `extra` (its ID, its Pod and Node).
//!
//! Not done: the plugin's token volume (`kube-api-access-*`) and its refusal of a Pod whose
//! ServiceAccount does not exist.

use base64::Engine as _;
use serde_json::{Value, json};

use super::status::{ApiError, FieldError};
use super::str_at;

use super::controllers::{Controller, NamespaceQueue};
use super::namespaces::active;
use super::resource::{Registry, ResourceKey};
use super::storage::{Change, EventType, Object, Snapshot, Store, WriteOptions};

/// The ServiceAccount every namespace has.
pub(crate) const DEFAULT: &str = "default";

/// The field manager of the controller's writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";

/// What the `ServiceAccount` admission plugin sets on a new Pod.
pub(crate) fn admit_pod(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => match spec.get("serviceAccount").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => DEFAULT.to_string(),
        },
    };
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
}

/// Creates the `default` ServiceAccount of each of `namespaces` that exists, is not
/// terminating and has none.
pub(crate) fn create_defaults(store: &mut Store, registry: &Registry, namespaces: &[&str]) {
    let Some(accounts) = registry.by_path("", "v1", "serviceaccounts") else {
        return;
    };
    for namespace in active(store, registry, namespaces) {
        if store.get(&accounts, Some(namespace), DEFAULT).is_ok() {
            continue;
        }
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT, "namespace": namespace}});
        let options = WriteOptions {
            manager: Some(MANAGER.to_string()),
            ..WriteOptions::default()
        };
        if let Err(err) = store.create(&accounts, Some(namespace), account, options) {
            // Lost a race with a client that made it (409), or the namespace began
            // terminating (403): both leave nothing to do.
            tracing::debug!(%namespace, %err, "the default ServiceAccount was not created");
        }
    }
}

/// kube-controller-manager's service account controller (see the module docs).
pub(crate) struct ServiceAccountController {
    namespaces: NamespaceQueue,
    accounts: Option<ResourceKey>,
}

impl ServiceAccountController {
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            namespaces: NamespaceQueue::new(registry),
            accounts: registry
                .by_path("", "v1", "serviceaccounts")
                .map(|t| t.key()),
        }
    }
}

impl Controller for ServiceAccountController {
    const NAME: &'static str = "serviceaccount-controller";

    fn resync(&mut self, state: &Snapshot) {
        self.namespaces.push_all(state);
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        if self.namespaces.observe_namespace(change) {
            return;
        }
        if Some(&change.resource) == self.accounts.as_ref()
            && change.event == EventType::Deleted
            && let Some((namespace, DEFAULT)) = change.key.split_once('/')
        {
            self.namespaces.push(namespace);
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(namespace) = self.namespaces.pop() else {
            return false;
        };
        create_defaults(store, registry, &[namespace.as_str()]);
        true
    }
}

/// Whether `t` is the ServiceAccount type.
pub(crate) fn is_service_account(t: &super::resource::ResourceType) -> bool {
    t.group.is_empty() && t.plural == "serviceaccounts"
}

/// The prefix of a service account's user name.
pub(crate) const USER_PREFIX: &str = "system:serviceaccount:";

/// The audience a token gets when its request names none: the server's own, as a cluster
/// whose `--api-audiences` is its service account issuer.
pub(crate) const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// A token request's lifetime when it asks for none, and its bounds (kube-apiserver's).
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;

/// How a TokenRequest reads the object its token is bound to: `(plural, namespace, name)`
/// of a core v1 object to the stored object or the store's `404`.
pub(crate) type BoundObjectLookup<'a> =
    &'a dyn Fn(&str, Option<&str>, &str) -> Result<Value, ApiError>;

/// Answers a TokenRequest for the ServiceAccount `account` (as stored): the request with its
/// `status.token` and `status.expirationTimestamp`, and the token, to be registered as the
/// user [`user_name`] of the account. A `spec.boundObjectRef` is checked as kube-apiserver's
/// `TokenREST` checks it (see [`bound_object`]) and named in the token's claims.
pub(crate) fn token_request(
    account: &Value,
    request: Value,
    lookup: BoundObjectLookup<'_>,
) -> Result<(Value, String, IssuedToken), ApiError> {
    let namespace = str_at(account, "/metadata/namespace");
    let name = str_at(account, "/metadata/name");
    let uid = str_at(account, "/metadata/uid");
    let mut request = match request {
        Value::Object(request) => request,
        _ => {
            return Err(ApiError::bad_request(
                "the body of a TokenRequest must be a JSON object",
            ));
        }
    };
    let metadata = request_metadata(&mut request, namespace, name, uid)?;
    let mut spec = match request.remove("spec") {
        Some(Value::Object(spec)) => spec,
        _ => serde_json::Map::new(),
    };
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION,
        Some(value) => value.as_i64().unwrap_or(0),
    };
    let why = if expiration < MIN_EXPIRATION {
        Some("may not specify a duration less than 10 minutes")
    } else if expiration > MAX_EXPIRATION {
        Some("may not specify a duration larger than 2^32 seconds")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(ApiError::invalid_fields(
            "TokenRequest.authentication.k8s.io",
            name,
            vec![FieldError::invalid(
                "spec.expirationSeconds",
                expiration,
                why,
            )],
        ));
    }
    let audiences = match spec.get("audiences").and_then(Value::as_array) {
        Some(audiences) if !audiences.is_empty() => audiences.clone(),
        _ => vec![json!(DEFAULT_AUDIENCE)],
    };
    spec.insert("audiences".into(), Value::Array(audiences.clone()));
    spec.insert("expirationSeconds".into(), json!(expiration));
    spec.entry("boundObjectRef").or_insert(Value::Null);
    let bound = bound_object(account, spec.get("boundObjectRef"), lookup)?;
    let now = jiff::Timestamp::now();
    let expires = now
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .unwrap_or(now);
    let jti = super::tls::new_token();
    let issued = IssuedToken {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        account_uid: uid.to_owned(),
        audiences: audiences
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        expires: expires.as_second(),
        jti: jti.clone(),
        bound: bound
            .iter()
            .map(|(claim, value)| {
                let text = |field: &str| value.get(field).and_then(Value::as_str).unwrap_or("");
                (
                    (*claim).to_owned(),
                    text("name").to_owned(),
                    text("uid").to_owned(),
                )
            })
            .collect(),
    };
    let mut claims = json!({
        "aud": audiences,
        "exp": expires.as_second(),
        "iat": now.as_second(),
        "iss": DEFAULT_AUDIENCE,
        "jti": jti,
        "kubernetes.io": {
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        },
        "nbf": now.as_second(),
        "sub": user_name(namespace, name),
    });
    for (claim, value) in bound {
        claims["kubernetes.io"][claim] = value;
    }
    let encode =
        |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let token = format!(
        "{}.{}.{}",
        encode(&json!({"alg": "RS256", "kid": "informer-testing"})),
        encode(&claims),
        super::tls::new_token()
    );
    let answer = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": with_creation_timestamp(metadata, now),
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": super::time::format_time(expires),
        },
    });
    Ok((answer, token, issued))
}

/// The request's `metadata` as `TokenREST.Create` keeps it (`PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate`):
/// its namespace, name and `uid` (`TokenRequestServiceAccountUIDValidation`, on since 1.34)
/// those of the account, filled in when unset; `400` for another namespace (the create
/// handler's check), `422` for another name, `409` for another `uid`.
fn request_metadata(
    request: &mut serde_json::Map<String, Value>,
    namespace: &str,
    name: &str,
    uid: &str,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    let given = match request.remove("metadata") {
        Some(Value::Object(metadata)) => metadata,
        _ => serde_json::Map::new(),
    };
    let text = |field: &str| given.get(field).and_then(Value::as_str).unwrap_or("");
    if !text("namespace").is_empty() && text("namespace") != namespace {
        return Err(ApiError::namespace_mismatch());
    }
    if !text("name").is_empty() && text("name") != name {
        return Err(ApiError::invalid_fields(
            "TokenRequest.authentication.k8s.io",
            name,
            vec![FieldError::invalid(
                "metadata.name",
                text("name"),
                "must match the service account name if specified",
            )],
        ));
    }
    if !text("uid").is_empty() && text("uid") != uid {
        return Err(ApiError::conflict(
            "TokenRequest.authentication.k8s.io",
            name,
            &format!(
                "the UID in the token request ({}) does not match the UID of the service account ({uid})",
                text("uid")
            ),
        ));
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("uid".into(), json!(uid));
    for (key, value) in given {
        if !matches!(
            key.as_str(),
            "name" | "namespace" | "uid" | "creationTimestamp"
        ) {
            metadata.insert(key, value);
        }
    }
    Ok(metadata)
}

/// `metadata` with the time the token was made as its `creationTimestamp`.
fn with_creation_timestamp(
    mut metadata: serde_json::Map<String, Value>,
    now: jiff::Timestamp,
) -> Value {
    metadata.insert(
        "creationTimestamp".into(),
        json!(super::time::format_time(now)),
    );
    Value::Object(metadata)
}

/// What the server recorded of a token it issued to a ServiceAccount: what it checks each
/// time the token is presented, as kube-apiserver's service account token authenticator
/// checks the token's claims.
#[derive(Clone, Debug)]
pub(crate) struct IssuedToken {
    namespace: String,
    name: String,
    account_uid: String,
    audiences: Vec<String>,
    /// Unix seconds.
    expires: i64,
    jti: String,
    /// The objects it is bound to: `(claim, name, uid)`, the claim `pod`, `node` or `secret`.
    bound: Vec<(String, String, String)>,
}

/// How a token check reads a live object: `(plural, namespace, name)` to the stored object,
/// `None` if there is none.
pub(crate) type LiveLookup<'a> = &'a dyn Fn(&str, Option<&str>, &str) -> Option<Object>;

impl IssuedToken {
    /// The user the token authenticates as.
    pub(crate) fn user(&self) -> String {
        user_name(&self.namespace, &self.name)
    }

    /// Whether the token authenticates now for one of `targets` (the API server's own
    /// audience when empty): the audiences it is valid for, or kube-apiserver's reason it is
    /// not (expired, another audience, its ServiceAccount or bound object deleted or made
    /// again since).
    pub(crate) fn check(
        &self,
        targets: &[String],
        live: LiveLookup<'_>,
    ) -> Result<Vec<String>, String> {
        if jiff::Timestamp::now().as_second() >= self.expires {
            return Err("service account token has expired".to_owned());
        }
        let api_audience = [DEFAULT_AUDIENCE.to_owned()];
        let targets = if targets.is_empty() {
            &api_audience[..]
        } else {
            targets
        };
        let matching: Vec<String> = targets
            .iter()
            .filter(|target| self.audiences.contains(target))
            .cloned()
            .collect();
        if matching.is_empty() {
            return Err(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&self.audiences),
                go_quoted(targets)
            ));
        }
        let same = |plural: &str, namespace: Option<&str>, name: &str, uid: &str, what: &str| {
            let Some(object) = live(plural, namespace, name) else {
                return Err("service account token has been invalidated".to_owned());
            };
            let live_uid = str_at(&object, "/metadata/uid");
            if live_uid != uid {
                return Err(format!(
                    "{what} UID ({live_uid}) does not match claim ({uid})"
                ));
            }
            Ok(())
        };
        same(
            "serviceaccounts",
            Some(&self.namespace),
            &self.name,
            &self.account_uid,
            "service account",
        )?;
        for (claim, name, uid) in &self.bound {
            match claim.as_str() {
                "pod" => same("pods", Some(&self.namespace), name, uid, "pod")?,
                "secret" => same("secrets", Some(&self.namespace), name, uid, "secret")?,
                // A Pod's node is named for information; a token bound to a Node needs it.
                "node" if self.bound.iter().all(|(c, _, _)| c == "node") => {
                    same("nodes", None, name, uid, "node")?;
                }
                _ => {}
            }
        }
        Ok(matching)
    }

    /// The user's `uid` and `extra`, as the authenticator fills them: the account's UID, the
    /// token's ID and the Pod and Node it is bound to.
    pub(crate) fn user_details(&self) -> (String, serde_json::Map<String, Value>) {
        let mut extra = serde_json::Map::new();
        extra.insert(
            "authentication.kubernetes.io/credential-id".into(),
            json!([format!("JTI={}", self.jti)]),
        );
        for (claim, name, uid) in &self.bound {
            if claim == "pod" || claim == "node" {
                extra.insert(
                    format!("authentication.kubernetes.io/{claim}-name"),
                    json!([name]),
                );
                if !uid.is_empty() {
                    extra.insert(
                        format!("authentication.kubernetes.io/{claim}-uid"),
                        json!([uid]),
                    );
                }
            }
        }
        (self.account_uid.clone(), extra)
    }
}

/// Strings as Go's `%q` prints a `[]string`: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// A TokenRequest's `boundObjectRef` checked as kube-apiserver's `TokenREST.Create` checks
/// it: a Pod (running as the account), a Node or a Secret that exists (the store's `404`
/// otherwise), `400` for another kind, `409` for a `uid` that is not the object's. Returns the
/// token's claims naming it (`pod`, with its node when it has one, `node` or `secret`).
fn bound_object(
    account: &Value,
    reference: Option<&Value>,
    lookup: BoundObjectLookup<'_>,
) -> Result<Vec<(&'static str, Value)>, ApiError> {
    let Some(reference) = reference.filter(|r| r.is_object()) else {
        return Ok(Vec::new());
    };
    let text = |field: &str| reference.get(field).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    let namespace = str_at(account, "/metadata/namespace");
    let account_name = str_at(account, "/metadata/name");
    let named = |object: &Value| json!({"name": str_at(object, "/metadata/name"), "uid": str_at(object, "/metadata/uid")});
    let mut claims = Vec::new();
    let object = match (group, kind) {
        ("", "Pod") => {
            let pod = lookup("pods", Some(namespace), name)?;
            if str_at(&pod, "/spec/serviceAccountName") != account_name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {account_name:?} to pod running with different serviceaccount name."
                )));
            }
            claims.push(("pod", named(&pod)));
            let node = str_at(&pod, "/spec/nodeName");
            if !node.is_empty() {
                let claim = match lookup("nodes", None, node) {
                    Ok(found) => named(&found),
                    Err(_) => json!({"name": node}),
                };
                claims.push(("node", claim));
            }
            pod
        }
        ("", "Node") => {
            let node = lookup("nodes", None, name)?;
            claims.push(("node", named(&node)));
            node
        }
        ("", "Secret") => {
            let secret = lookup("secrets", Some(namespace), name)?;
            claims.push(("secret", named(&secret)));
            secret
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let wanted = text("uid");
    if !wanted.is_empty() && wanted != str_at(&object, "/metadata/uid") {
        return Err(ApiError::conflict(
            kind,
            name,
            &format!(
                "the UID in the bound object reference ({wanted}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(claims)
}

/// The user a service account's tokens authenticate as.
pub(crate) fn user_name(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

#[cfg(test)]
mod tests;
