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

/// Answers a TokenRequest for the ServiceAccount `account` (as stored): the request with its
/// `status.token` and `status.expirationTimestamp`, and the token, to be registered as the
/// user [`user_name`] of the account.
pub(crate) fn token_request(account: &Value, request: Value) -> Result<(Value, String), ApiError> {
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
    let now = jiff::Timestamp::now();
    let expires = now
        .checked_add(jiff::SignedDuration::from_secs(expiration))
        .unwrap_or(now);
    let claims = json!({
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

/// The user a service account's tokens authenticate as.
pub(crate) fn user_name(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

#[cfg(test)]
mod tests;
