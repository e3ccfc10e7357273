use serde_json::json;

use super::*;

fn review(kind: &str) -> Review {
    *REVIEWS.iter().find(|r| r.kind == kind).unwrap()
}

fn admin() -> UserInfo {
    UserInfo::of(None)
}

fn no_tokens(_: &str, _: &[String]) -> TokenAnswer {
    TokenAnswer::Refused(None)
}

fn answer(kind: &str, namespace: Option<&str>, body: Value) -> Result<Value, ApiError> {
    create(review(kind), namespace, body, &admin(), no_tokens)
}

#[test]
fn routes_are_the_collections_of_the_two_groups_only() {
    let ssar = route(AUTHORIZATION, "v1", &["selfsubjectaccessreviews"]).unwrap();
    assert_eq!((ssar.0.kind, ssar.1), ("SelfSubjectAccessReview", None));
    let local = route(
        AUTHORIZATION,
        "v1",
        &["namespaces", "ns", "localsubjectaccessreviews"],
    )
    .unwrap();
    assert_eq!(local.1.as_deref(), Some("ns"));
    // No item paths, no other versions, namespaced only under a namespace and vice versa.
    assert!(route(AUTHORIZATION, "v1", &["selfsubjectaccessreviews", "x"]).is_none());
    assert!(route(AUTHORIZATION, "v1beta1", &["selfsubjectaccessreviews"]).is_none());
    assert!(route(AUTHORIZATION, "v1", &["localsubjectaccessreviews"]).is_none());
    assert!(
        route(
            AUTHORIZATION,
            "v1",
            &["namespaces", "ns", "subjectaccessreviews"]
        )
        .is_none()
    );
    assert!(route(AUTHENTICATION, "v1", &["selfsubjectaccessreviews"]).is_none());
}

#[test]
fn discovery_lists_each_review_with_create_only() {
    let docs = discovery_docs(AUTHENTICATION, "v1");
    let names: Vec<&str> = docs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["selfsubjectreviews", "tokenreviews"]);
    assert_eq!(docs[0]["verbs"], json!(["create"]));
    assert_eq!(docs[0]["singularName"], "selfsubjectreview");
    assert_eq!(discovery_docs(AUTHORIZATION, "v1").len(), 4);
    assert!(discovery_docs("apps", "v1").is_empty());
}

#[test]
fn an_access_review_is_allowed_and_echoes_its_spec() {
    let spec = json!({"resourceAttributes": {"verb": "get", "resource": "pods"}});
    let answered = answer(
        "SelfSubjectAccessReview",
        None,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "metadata": {"creationTimestamp": null}, "spec": spec}),
    )
    .unwrap();
    assert_eq!(answered["status"], json!({"allowed": true}));
    assert_eq!(answered["spec"], spec);
    assert_eq!(answered["metadata"], json!({}));
}

#[test]
fn a_review_without_type_fields_gets_them() {
    let answered = answer("SelfSubjectReview", None, json!({})).unwrap();
    assert_eq!(answered["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(answered["kind"], "SelfSubjectReview");
}

#[test]
fn a_body_of_another_kind_is_refused() {
    let err = answer(
        "SelfSubjectAccessReview",
        None,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview"}),
    )
    .unwrap_err();
    assert_eq!(err.code(), 400);
    let err = answer("TokenReview", None, json!({"apiVersion": "v1"})).unwrap_err();
    assert!(
        err.message()
            .contains("does not match the expected API version")
    );
}

#[test]
fn an_access_review_names_exactly_one_kind_of_attributes() {
    let neither = answer("SelfSubjectAccessReview", None, json!({"spec": {}})).unwrap_err();
    assert_eq!(
        neither.message(),
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    let both = answer(
        "SelfSubjectAccessReview",
        None,
        json!({"spec": {"resourceAttributes": {}, "nonResourceAttributes": {"path": "/x"}}}),
    )
    .unwrap_err();
    assert!(
        both.message()
            .contains("spec.nonResourceAttributes: Invalid value:"),
        "{}",
        both.message()
    );
    assert!(
        both.message()
            .contains("cannot be specified in combination with resourceAttributes")
    );
}

#[test]
fn a_subject_access_review_names_a_user_or_a_group() {
    let err = answer(
        "SubjectAccessReview",
        None,
        json!({"spec": {"resourceAttributes": {"verb": "get"}}}),
    )
    .unwrap_err();
    assert_eq!(err.code(), 422);
    assert!(err.message().contains(
        "spec.user: Invalid value: \"\": at least one of user or group must be specified"
    ));
    let by_group = answer(
        "SubjectAccessReview",
        None,
        json!({"spec": {"groups": ["devs"], "resourceAttributes": {"verb": "get"}}}),
    )
    .unwrap();
    assert_eq!(by_group["status"]["allowed"], true);
}

#[test]
fn a_local_review_is_of_its_namespace_and_of_resources_only() {
    let ok = answer(
        "LocalSubjectAccessReview",
        Some("ns"),
        json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "ns", "verb": "get"}}}),
    )
    .unwrap();
    assert_eq!(ok["metadata"]["namespace"], "ns");
    let elsewhere = answer(
        "LocalSubjectAccessReview",
        Some("ns"),
        json!({"spec": {"user": "u", "resourceAttributes": {"namespace": "other"}}}),
    )
    .unwrap_err();
    assert_eq!(
        (elsewhere.code(), elsewhere.message()),
        (
            400,
            "spec.resourceAttributes.namespace must match namespace: ns"
        )
    );
    let non_resource = answer(
        "LocalSubjectAccessReview",
        Some("ns"),
        json!({"spec": {"user": "u", "nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
    )
    .unwrap_err();
    assert!(
        non_resource
            .message()
            .contains("disallowed on this kind of request")
    );
}

#[test]
fn a_rules_review_allows_everything() {
    let answered = answer(
        "SelfSubjectRulesReview",
        None,
        json!({"spec": {"namespace": "default"}}),
    )
    .unwrap();
    assert_eq!(
        answered["status"]["resourceRules"],
        json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}])
    );
    assert_eq!(answered["status"]["incomplete"], false);
}

#[test]
fn a_self_subject_review_names_the_requester() {
    let user = UserInfo::of(Some("alice"));
    let answered = create(
        review("SelfSubjectReview"),
        None,
        json!({}),
        &user,
        no_tokens,
    )
    .unwrap();
    assert_eq!(
        answered["status"]["userInfo"],
        json!({"username": "alice", "groups": ["system:authenticated"]})
    );
    let admin = answer("SelfSubjectReview", None, json!({})).unwrap();
    assert_eq!(admin["status"]["userInfo"]["username"], ADMIN_USER);
}

#[test]
fn a_token_review_authenticates_known_tokens_only() {
    let tokens = |token: &str, targets: &[String]| match token {
        "server" => TokenAnswer::User(UserInfo::of(None), targets.to_vec()),
        "bobs" => TokenAnswer::User(UserInfo::of(Some("bob")), targets.to_vec()),
        _ => TokenAnswer::Refused(None),
    };
    let ask = |token: &str| {
        create(
            review("TokenReview"),
            None,
            json!({"spec": {"token": token, "audiences": ["api"]}}),
            &admin(),
            tokens,
        )
    };
    let bob = ask("bobs").unwrap();
    assert_eq!(bob["status"]["authenticated"], true);
    assert_eq!(bob["status"]["user"]["username"], "bob");
    assert_eq!(bob["status"]["audiences"], json!(["api"]));
    assert_eq!(
        ask("server").unwrap()["status"]["user"]["username"],
        ADMIN_USER
    );
    let unknown = ask("nope").unwrap();
    assert_eq!(unknown["status"]["user"], json!({}));
    assert!(unknown["status"].get("authenticated").is_none());
    let empty = ask("").unwrap_err();
    assert_eq!(
        (empty.code(), empty.message()),
        (400, "token is required for TokenReview in authentication")
    );
}
