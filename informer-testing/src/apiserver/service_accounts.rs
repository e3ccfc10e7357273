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
//!
//! Not done: the plugin's token volume (`kube-api-access-*`) and its refusal of a Pod whose
//! ServiceAccount does not exist; tokens expiring, bound objects' deletion revoking them.

use std::collections::{HashSet, VecDeque};

use base64::Engine as _;
use serde_json::{Value, json};

use super::status::{ApiError, FieldError};
use super::str_at;

use super::controllers::Controller;
use super::namespaces::is_terminating;
use super::resource::{Registry, ResourceKey};
use super::storage::{Change, EventType, Snapshot, Store, WriteOptions};

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
    let (Some(namespace_type), Some(accounts)) = (
        registry.by_path("", "v1", "namespaces"),
        registry.by_path("", "v1", "serviceaccounts"),
    ) else {
        return;
    };
    for &namespace in namespaces {
        let active = store
            .get(&namespace_type, None, namespace)
            .is_ok_and(|ns| !is_terminating(&ns));
        if !active || store.get(&accounts, Some(namespace), DEFAULT).is_ok() {
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
    namespaces: Option<ResourceKey>,
    accounts: Option<ResourceKey>,
    /// Namespaces to check, in order, each once.
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl ServiceAccountController {
    pub(crate) fn new(registry: &Registry) -> Self {
        Self {
            namespaces: registry.by_path("", "v1", "namespaces").map(|t| t.key()),
            accounts: registry
                .by_path("", "v1", "serviceaccounts")
                .map(|t| t.key()),
            queue: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    fn push(&mut self, namespace: &str) {
        if self.queued.insert(namespace.to_string()) {
            self.queue.push_back(namespace.to_string());
        }
    }
}

impl Controller for ServiceAccountController {
    const NAME: &'static str = "serviceaccount-controller";

    fn resync(&mut self, state: &Snapshot) {
        let namespaces: Vec<String> = state
            .every_object()
            .filter(|(at, _)| Some(&at.resource) == self.namespaces.as_ref())
            .map(|(at, _)| at.key.to_string())
            .collect();
        for namespace in namespaces {
            self.push(&namespace);
        }
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        if Some(&change.resource) == self.namespaces.as_ref() {
            if change.event != EventType::Deleted && !is_terminating(&change.object) {
                self.push(&change.key);
            }
        } else if Some(&change.resource) == self.accounts.as_ref()
            && change.event == EventType::Deleted
            && let Some((namespace, DEFAULT)) = change.key.split_once('/')
        {
            self.push(namespace);
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        let Some(namespace) = self.queue.pop_front() else {
            return false;
        };
        self.queued.remove(&namespace);
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
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

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
) -> Result<(Value, String), ApiError> {
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
    let mut claims = json!({
        "aud": audiences,
        "exp": expires.as_second(),
        "iat": now.as_second(),
        "iss": DEFAULT_AUDIENCE,
        "jti": super::tls::new_token(),
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
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": super::time::format_time(now),
        },
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": super::time::format_time(expires),
        },
    });
    Ok((answer, token))
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
