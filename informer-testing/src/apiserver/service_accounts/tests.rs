use serde_json::json;

use super::*;
use crate::apiserver::controllers::test_support::Harness;
use crate::apiserver::storage::DeleteOptions;

/// [`token_request`] of a request bound to no object (a lookup finds nothing).
fn unbound(account: &Value, request: Value) -> Result<(Value, String), ApiError> {
    token_request(account, request, &|plural, _, name| {
        Err(ApiError::not_found(plural, name))
    })
    .map(|(answer, token, _)| (answer, token))
}

fn harness() -> Harness<ServiceAccountController> {
    let mut h = Harness::new(ServiceAccountController::new);
    h.create("namespaces", None, "team", json!({}));
    h.settle();
    h
}

fn delete_account(h: &Harness<ServiceAccountController>, name: &str) {
    h.delete(
        "serviceaccounts",
        Some("team"),
        name,
        DeleteOptions::default(),
    )
    .unwrap();
}

#[test]
fn a_new_namespace_gets_the_default_service_account() {
    let h = harness();
    let account = h.get("serviceaccounts", Some("team"), DEFAULT).unwrap();
    // It sets no field but its name: no managed fields entry, as on a cluster.
    assert!(
        account["metadata"].get("managedFields").is_none(),
        "{account}"
    );
}

#[test]
fn a_deleted_default_service_account_comes_back() {
    let mut h = harness();
    delete_account(&h, DEFAULT);
    h.settle();
    assert!(h.get("serviceaccounts", Some("team"), DEFAULT).is_some());
}

#[test]
fn a_terminating_namespace_gets_none_and_others_are_left_alone() {
    let mut h = harness();
    h.create("serviceaccounts", Some("team"), "builder", json!({}));
    delete_account(&h, "builder");
    h.delete("namespaces", None, "team", DeleteOptions::default())
        .unwrap();
    delete_account(&h, DEFAULT);
    h.settle();
    assert!(h.get("serviceaccounts", Some("team"), DEFAULT).is_none());
    assert!(h.get("serviceaccounts", Some("team"), "builder").is_none());
}

#[test]
fn a_resync_fills_namespaces_that_have_none() {
    let mut h = Harness::new(ServiceAccountController::new);
    h.create("namespaces", None, "quiet", json!({}));
    h.forget_changes();
    h.resync();
    h.settle();
    assert!(h.get("serviceaccounts", Some("quiet"), DEFAULT).is_some());
}

#[test]
fn a_new_pod_runs_as_the_default_service_account_or_the_one_it_names() {
    let mut pod = json!({"spec": {"containers": []}});
    admit_pod(&mut pod);
    assert_eq!(pod["spec"]["serviceAccountName"], DEFAULT);
    assert_eq!(pod["spec"]["serviceAccount"], DEFAULT);
    let mut named = json!({"spec": {"serviceAccount": "builder"}});
    admit_pod(&mut named);
    assert_eq!(named["spec"]["serviceAccountName"], "builder");
}

fn account() -> Value {
    json!({"metadata": {"name": "builder", "namespace": "ci", "uid": "u-1"}})
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT's payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn a_token_request_gets_a_jwt_of_the_account_with_the_defaults() {
    let (answer, token) = unbound(&account(), json!({"spec": {}})).unwrap();
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["status"]["token"], token.as_str());
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert_eq!(answer["spec"]["audiences"], json!([DEFAULT_AUDIENCE]));
    assert_eq!(answer["metadata"]["namespace"], "ci");
    let claims = claims(&token);
    assert_eq!(claims["sub"], "system:serviceaccount:ci:builder");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], "u-1");
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        3600
    );
    let (_, other) = unbound(&account(), json!({})).unwrap();
    assert_ne!(token, other, "each request gets a token of its own");
}

#[test]
fn a_token_request_keeps_its_audiences_and_lifetime_within_bounds() {
    let (answer, token) = unbound(
        &account(),
        json!({"spec": {"audiences": ["vault"], "expirationSeconds": 7200}}),
    )
    .unwrap();
    assert_eq!(answer["spec"]["audiences"], json!(["vault"]));
    assert_eq!(claims(&token)["aud"], json!(["vault"]));
    let short = unbound(&account(), json!({"spec": {"expirationSeconds": 60}})).unwrap_err();
    assert_eq!(
        short.message(),
        "TokenRequest.authentication.k8s.io \"builder\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    let long = unbound(
        &account(),
        json!({"spec": {"expirationSeconds": 1_i64 << 33}}),
    )
    .unwrap_err();
    assert!(long.message().contains("larger than 2^32 seconds"));
}

#[test]
fn a_bound_token_needs_its_object_running_as_the_account_with_its_uid() {
    let objects = |plural: &str, _: Option<&str>, name: &str| -> Result<Value, ApiError> {
        match (plural, name) {
            ("pods", "web-0") => Ok(json!({"metadata": {"name": "web-0", "uid": "p-1"},
                "spec": {"serviceAccountName": "builder", "nodeName": "n1"}})),
            ("pods", "other") => Ok(json!({"metadata": {"name": "other", "uid": "p-2"},
                "spec": {"serviceAccountName": "default"}})),
            ("nodes", "n1") => Ok(json!({"metadata": {"name": "n1", "uid": "n-1"}})),
            _ => Err(ApiError::not_found(plural, name)),
        }
    };
    let bound = |reference: Value| {
        token_request(
            &account(),
            json!({"spec": {"boundObjectRef": reference}}),
            &objects,
        )
        .map(|(answer, token, _)| (answer, token))
    };
    let (answer, token) =
        bound(json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0"})).unwrap();
    assert_eq!(answer["spec"]["boundObjectRef"]["name"], "web-0");
    let claims = claims(&token);
    assert_eq!(
        claims["kubernetes.io"]["pod"],
        json!({"name": "web-0", "uid": "p-1"})
    );
    assert_eq!(
        claims["kubernetes.io"]["node"],
        json!({"name": "n1", "uid": "n-1"})
    );

    let missing = bound(json!({"apiVersion": "v1", "kind": "Pod", "name": "gone"})).unwrap_err();
    assert_eq!(
        (missing.code(), missing.message()),
        (404, "pods \"gone\" not found")
    );
    let foreign = bound(json!({"apiVersion": "v1", "kind": "Pod", "name": "other"})).unwrap_err();
    assert_eq!(
        (foreign.code(), foreign.message()),
        (
            400,
            "cannot bind token for serviceaccount \"builder\" to pod running with different serviceaccount name."
        )
    );
    let recreated =
        bound(json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "p-0"}))
            .unwrap_err();
    assert_eq!(recreated.code(), 409);
    assert_eq!(
        recreated.message(),
        "Operation cannot be fulfilled on Pod \"web-0\": the UID in the bound object reference (p-0) does not match the UID in record. The object might have been deleted and then recreated"
    );
    let other_kind =
        bound(json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})).unwrap_err();
    assert_eq!(
        (other_kind.code(), other_kind.message()),
        (
            400,
            "cannot bind token to object of type apps/v1, Kind=Deployment"
        )
    );
}

/// Since 1.34 the answer names the account, with its `uid`, whatever of that the request left
/// out; a request naming another account, namespace or `uid` is refused.
#[test]
fn a_token_request_carries_the_accounts_name_and_uid_and_refuses_others() {
    let (answer, _) = unbound(
        &account(),
        json!({"metadata": {"labels": {"a": "b"}}, "spec": {}}),
    )
    .unwrap();
    let metadata = &answer["metadata"];
    assert_eq!(
        (&metadata["name"], &metadata["namespace"], &metadata["uid"]),
        (&json!("builder"), &json!("ci"), &json!("u-1"))
    );
    assert_eq!(metadata["labels"], json!({"a": "b"}));
    assert!(metadata["creationTimestamp"].is_string());
    let refused = |metadata: Value| {
        let err = unbound(&account(), json!({"metadata": metadata})).unwrap_err();
        (err.code(), err.message().to_owned())
    };
    assert_eq!(
        refused(json!({"name": "other"})),
        (
            422,
            "TokenRequest.authentication.k8s.io \"builder\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified".to_owned()
        )
    );
    assert_eq!(
        refused(json!({"uid": "u-2"})),
        (
            409,
            "Operation cannot be fulfilled on TokenRequest.authentication.k8s.io \"builder\": the UID in the token request (u-2) does not match the UID of the service account (u-1)".to_owned()
        )
    );
    assert_eq!(refused(json!({"namespace": "prod"})).0, 400);
    assert!(
        unbound(
            &account(),
            json!({"metadata": {"name": "builder", "uid": "u-1"}})
        )
        .is_ok()
    );
}
