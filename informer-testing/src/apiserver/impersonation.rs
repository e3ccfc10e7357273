//! Who a request comes from, impersonation included: kube-apiserver's `WithImpersonation`
//! filter (`k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`), which `kubectl --as`,
//! `--as-group` and `--as-uid` and client-go's `ImpersonationConfig` use.
//!
//! A request may act as another user with the headers `Impersonate-User`, `Impersonate-Group`
//! (repeated), `Impersonate-Uid` and `Impersonate-Extra-<key>` (the key percent-decoded and
//! lower-cased). The server authorizes everything (`AlwaysAllow`), so every impersonation is
//! allowed. The user then has the groups asked for, plus `system:authenticated` unless they
//! include it or `system:unauthenticated`; a service account (`system:serviceaccount:<ns>:<n>`)
//! impersonated without groups gets its own (`system:serviceaccounts`,
//! `system:serviceaccounts:<ns>`). Groups, a UID or extras without a user are refused (`500`,
//! as upstream answers it).
//!
//! The request is then the impersonated user's everywhere the server names a user: its
//! counts and matches ([`super::RequestMatch::user`]), the author of its changes, a
//! SelfSubjectReview's answer and a CertificateSigningRequest's `spec.username`.

use std::cell::RefCell;

use http::HeaderMap;
use serde_json::{Map, json};

use super::reviews::UserInfo;
use super::service_accounts;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// The user a request impersonates, if it impersonates one.
/// `Err`: the error upstream's filter answers with (a plain-text `500`, see [`refusal`]).
pub(crate) fn from_headers(headers: &HeaderMap) -> Result<Option<UserInfo>, String> {
    let value = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect()
    };
    let user = value(USER).into_iter().next().filter(|u| !u.is_empty());
    let groups = value(GROUP);
    let uid = value(UID).into_iter().next().filter(|u| !u.is_empty());
    let mut extra = Map::new();
    let mut extra_keys: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with(EXTRA_PREFIX))
        .collect();
    extra_keys.sort();
    extra_keys.dedup();
    for header in extra_keys {
        let key = percent_encoding::percent_decode_str(&header[EXTRA_PREFIX.len()..])
            .decode_utf8_lossy()
            .to_lowercase();
        extra.insert(key, json!(value(header)));
    }
    let Some(username) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(None);
        }
        // Go's `%v` of the `[]v1.ObjectReference` requested (Kind, Namespace, Name, UID,
        // APIVersion, ResourceVersion, FieldPath).
        let reference = |kind: &str, name: &str, api_version: &str, field_path: &str| {
            format!("{{{kind}  {name}  {api_version}  {field_path}}}")
        };
        let mut requested: Vec<String> = groups
            .iter()
            .map(|g| reference("Group", g, "", ""))
            .collect();
        for (key, values) in &extra {
            for value in values.as_array().into_iter().flatten() {
                let value = value.as_str().unwrap_or("");
                requested.push(reference(
                    "UserExtra",
                    value,
                    "authentication.k8s.io/v1",
                    key,
                ));
            }
        }
        if let Some(uid) = &uid {
            requested.push(reference("UID", uid, "authentication.k8s.io/v1", ""));
        }
        return Err(format!(
            "requested [{}] without impersonating a user",
            requested.join(" ")
        ));
    };
    let groups_given = !groups.is_empty();
    let mut all_groups = groups;
    if let Some(account) = username.strip_prefix(service_accounts::USER_PREFIX)
        && let Some((namespace, name)) = account.split_once(':')
        && !namespace.is_empty()
        && !name.is_empty()
        && !groups_given
    {
        all_groups = vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ];
    }
    if username == "system:anonymous" {
        if !all_groups.iter().any(|g| g == "system:unauthenticated") {
            all_groups.push("system:unauthenticated".into());
        }
    } else if !all_groups
        .iter()
        .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        all_groups.push("system:authenticated".into());
    }
    Ok(Some(UserInfo {
        username,
        groups: all_groups,
        uid: uid.unwrap_or_default(),
        extra,
    }))
}

/// The answer to a request refused with `why` (`responsewriters.InternalError`: plain text).
pub(crate) fn refusal(uri: &str, why: &str) -> (http::StatusCode, String) {
    (
        http::StatusCode::INTERNAL_SERVER_ERROR,
        format!("Internal Server Error: {uri:?}: {why}\n"),
    )
}

thread_local! {
    static REQUESTER: RefCell<Option<UserInfo>> = const { RefCell::new(None) };
}

/// Runs `work` (a request's handler) with `requester` as the user the request acts as
/// (`None`: the user of its token).
pub(crate) fn with_requester<T>(requester: Option<UserInfo>, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<UserInfo>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            REQUESTER.with(|r| *r.borrow_mut() = previous);
        }
    }
    let previous = REQUESTER.with(|r| r.replace(requester));
    let _restore = Restore(previous);
    work()
}

/// The user the request handled on this thread impersonates, if it does.
pub(crate) fn impersonated() -> Option<UserInfo> {
    REQUESTER.with(|r| r.borrow().clone())
}

/// The user the request handled on this thread acts as: the impersonated one, else its
/// token's ([`super::intercept::current_actor`]; the server's own token is `admin`).
pub(crate) fn requester() -> UserInfo {
    REQUESTER
        .with(|r| r.borrow().clone())
        .unwrap_or_else(|| UserInfo::of(super::intercept::current_actor().as_deref()))
}

#[cfg(test)]
mod tests;
