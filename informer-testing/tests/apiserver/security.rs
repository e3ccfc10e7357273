//! HTTPS with a CA made at start-up and a bearer token, as a real cluster serves; plain
//! HTTP on request; who a request is from, as the review APIs answer it.

use informer_testing::TestApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::common::{raw, raw_without_token, within};

#[tokio::test]
async fn the_default_server_is_https_with_a_ca_and_a_token() {
    let server = TestApiServer::start().await.unwrap();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let kubeconfig = server.kubeconfig();
    let cluster = kubeconfig.clusters[0].cluster.as_ref().unwrap();
    assert!(cluster.certificate_authority_data.is_some());
    assert!(cluster.insecure_skip_tls_verify.is_none());
    let user = kubeconfig.auth_infos[0].auth_info.as_ref().unwrap();
    assert!(user.token.is_some());

    // A client built from the kubeconfig file alone works.
    let path = std::env::temp_dir().join(format!("tls-kubeconfig-{}", server.address().port()));
    server.write_kubeconfig(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        text.contains(server.token().unwrap()),
        "the token is written, not redacted"
    );
    let config = kube::Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&text).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());
    within(api.list(&ListParams::default())).await.unwrap();
    // So does server.client().
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    within(api.list(&ListParams::default())).await.unwrap();
}

#[tokio::test]
async fn requests_without_the_token_are_unauthorized() {
    let server = TestApiServer::start().await.unwrap();
    for path in ["/version", "/api/v1/namespaces/default/configmaps", "/nope"] {
        raw_without_token(&server, "GET", path, &[], b"")
            .await
            .assert_status(401, "Unauthorized");
        raw_without_token(
            &server,
            "GET",
            path,
            &[("Authorization", "Bearer not-the-token")],
            b"",
        )
        .await
        .assert_status(401, "Unauthorized");
    }
    let response = raw_without_token(&server, "GET", "/version", &[], b"").await;
    assert_eq!(response.json()["message"], "Unauthorized");
    assert_eq!(raw(&server, "GET", "/version", &[], b"").await.status, 200);

    let mut config = server.config();
    config.auth_info.token = None;
    let api: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());
    let err = within(api.list(&ListParams::default())).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(status) if status.code == 401),
        "{err:?}"
    );
}

#[tokio::test]
async fn servers_of_one_process_share_the_ca_but_not_the_token() {
    let a = TestApiServer::start().await.unwrap();
    let b = TestApiServer::start().await.unwrap();
    assert_eq!(a.certificate_authority_pem(), b.certificate_authority_pem());
    assert_ne!(a.token(), b.token());
    raw_without_token(
        &b,
        "GET",
        "/version",
        &[("Authorization", &format!("Bearer {}", a.token().unwrap()))],
        b"",
    )
    .await
    .assert_status(401, "Unauthorized");
}

#[tokio::test]
async fn plain_http_stays_an_option() {
    let server = TestApiServer::builder().plain_http().start().await.unwrap();
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.certificate_authority_pem().is_none());
    assert!(server.token().is_none());
    assert_eq!(
        raw_without_token(&server, "GET", "/version", &[], b"")
            .await
            .status,
        200
    );
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    within(api.list(&ListParams::default())).await.unwrap();
}

#[tokio::test]
async fn each_user_has_a_token_of_its_own_and_its_requests_are_counted_as_its() {
    use informer_testing::{RequestMatch, Verb};
    let server = TestApiServer::start().await.unwrap();
    let alice: Api<ConfigMap> = Api::default_namespaced(server.user_client("alice"));
    let bob: Api<ConfigMap> = Api::default_namespaced(server.user_client("bob"));
    within(alice.list(&ListParams::default())).await.unwrap();
    within(alice.list(&ListParams::default())).await.unwrap();
    within(bob.list(&ListParams::default())).await.unwrap();
    let lists = |user: &str| {
        server
            .faults()
            .request_count(RequestMatch::verb(Verb::List).user(user))
    };
    assert_eq!((lists("alice"), lists("bob"), lists("carol")), (2, 1, 0));
    assert_eq!(server.faults().request_count(Verb::List), 3);

    // A user's token is not the server's, and a token of another server means nothing.
    let token = server.user_config("dave").auth_info.token.unwrap();
    let other = TestApiServer::start().await.unwrap();
    use secrecy::ExposeSecret as _;
    let header = format!("Bearer {}", token.expose_secret());
    raw_without_token(
        &other,
        "GET",
        "/version",
        &[("Authorization", &header)],
        b"",
    )
    .await
    .assert_status(401, "Unauthorized");
    assert_eq!(
        raw_without_token(
            &server,
            "GET",
            "/version",
            &[("Authorization", &header)],
            b""
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn faults_aimed_at_a_user_leave_the_others_alone() {
    use informer_testing::{FailureCode, RequestMatch, Verb};
    let server = TestApiServer::start().await.unwrap();
    server.faults().fail_next(
        RequestMatch::verb(Verb::List).user("alice"),
        1,
        FailureCode::InternalError,
    );
    let bob: Api<ConfigMap> = Api::default_namespaced(server.user_client("bob"));
    within(bob.list(&ListParams::default())).await.unwrap();
    let alice: Api<ConfigMap> = Api::default_namespaced(server.user_client("alice"));
    let err = within(alice.list(&ListParams::default()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 500),
        "{err:?}"
    );
    within(alice.list(&ListParams::default())).await.unwrap();
}

#[tokio::test]
async fn access_reviews_are_allowed_and_name_who_asked() {
    use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview, TokenReviewSpec};
    use k8s_openapi::api::authorization::v1::{
        LocalSubjectAccessReview, ResourceAttributes, SelfSubjectAccessReview,
        SelfSubjectAccessReviewSpec, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
        SubjectAccessReviewSpec,
    };
    use kube::api::PostParams;
    let server = TestApiServer::start().await.unwrap();
    let pp = PostParams::default();
    let attributes = ResourceAttributes {
        namespace: Some("default".into()),
        verb: Some("delete".into()),
        resource: Some("pods".into()),
        ..Default::default()
    };
    let ssar = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(attributes.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let reviews: Api<SelfSubjectAccessReview> = Api::all(server.client());
    let answered = within(reviews.create(&pp, &ssar)).await.unwrap();
    assert!(answered.status.unwrap().allowed);
    assert_eq!(answered.spec, ssar.spec, "the spec comes back as sent");

    let rules: Api<SelfSubjectRulesReview> = Api::all(server.client());
    let rules = within(rules.create(
        &pp,
        &SelfSubjectRulesReview {
            spec: SelfSubjectRulesReviewSpec {
                namespace: Some("default".into()),
            },
            ..Default::default()
        },
    ))
    .await
    .unwrap()
    .status
    .unwrap();
    assert_eq!(rules.resource_rules[0].verbs, ["*"]);
    assert!(!rules.incomplete);

    let local: Api<LocalSubjectAccessReview> = Api::namespaced(server.client(), "default");
    let mut lsar = LocalSubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("bob".into()),
            resource_attributes: Some(attributes),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(
        within(local.create(&pp, &lsar))
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    );
    lsar.spec.resource_attributes.as_mut().unwrap().namespace = Some("other".into());
    let err = within(local.create(&pp, &lsar)).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400 && s.message.contains("must match namespace: default")),
        "{err:?}"
    );

    // Who the requester is: the server's own token is the admin, a user's token the user.
    let whoami = |client: kube::Client| async move {
        let api: Api<SelfSubjectReview> = Api::all(client);
        let review = within(api.create(&PostParams::default(), &SelfSubjectReview::default()))
            .await
            .unwrap();
        review.status.unwrap().user_info.unwrap()
    };
    let admin = whoami(server.client()).await;
    assert_eq!(admin.username.as_deref(), Some("admin"));
    assert_eq!(
        admin.groups.unwrap_or_default(),
        ["system:masters", "system:authenticated"]
    );
    let alice = whoami(server.user_client("alice")).await;
    assert_eq!(alice.username.as_deref(), Some("alice"));

    // A token under review: a user's is that user, an unknown one authenticates nobody.
    use secrecy::ExposeSecret as _;
    let token = server.user_config("carol").auth_info.token.unwrap();
    let tokens: Api<TokenReview> = Api::all(server.client());
    let review = |token: &str| TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let known = within(tokens.create(&pp, &review(token.expose_secret())))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(known.authenticated, Some(true));
    assert_eq!(known.user.unwrap().username.as_deref(), Some("carol"));
    let unknown = within(tokens.create(&pp, &review("not-a-token")))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_ne!(unknown.authenticated, Some(true));
}

#[tokio::test]
async fn reviews_are_create_only_and_validated_as_kube_apiserver_does() {
    let server = TestApiServer::start().await.unwrap();
    let client = server.client();
    let request = |method: &str, path: &str, body: serde_json::Value| {
        http::Request::builder()
            .method(method)
            .uri(path)
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap()
    };
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let err = within(client.request::<serde_json::Value>(request(
        "POST",
        ssar,
        serde_json::json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}}),
    )))
    .await
    .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message == "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"),
        "{err:?}"
    );
    let err =
        within(client.request::<serde_json::Value>(request("GET", ssar, serde_json::Value::Null)))
            .await
            .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 405),
        "{err:?}"
    );
    let err = within(client.request::<serde_json::Value>(request(
        "POST",
        &format!("{ssar}/named"),
        serde_json::json!({}),
    )))
    .await
    .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_service_accounts_token_authenticates_as_the_account() {
    use k8s_openapi::api::authentication::v1::{
        SelfSubjectReview, TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
    };
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::PostParams;
    let server = TestApiServer::start().await.unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(server.client(), "default");
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(1200),
            ..Default::default()
        },
        ..Default::default()
    };
    let pp = PostParams::default();
    let answered = within(accounts.create_token_request("default", &pp, &request))
        .await
        .unwrap();
    let token = answered.status.unwrap().token;

    let mut config = server.config();
    config.auth_info.token = Some(token.clone().into());
    let as_account = kube::Client::try_from(config).unwrap();
    let whoami: Api<SelfSubjectReview> = Api::all(as_account.clone());
    let user = within(whoami.create(&pp, &SelfSubjectReview::default()))
        .await
        .unwrap()
        .status
        .unwrap()
        .user_info
        .unwrap();
    assert_eq!(
        user.username.as_deref(),
        Some("system:serviceaccount:default:default")
    );
    assert_eq!(
        user.groups.unwrap_or_default(),
        [
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ]
    );
    // The account's requests are its own, as a user's are.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(as_account);
    within(configmaps.list(&ListParams::default()))
        .await
        .unwrap();
    use informer_testing::{RequestMatch, Verb};
    assert_eq!(
        server.faults().request_count(
            RequestMatch::verb(Verb::List).user("system:serviceaccount:default:default")
        ),
        1
    );
    let reviews: Api<TokenReview> = Api::all(server.client());
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token),
            ..Default::default()
        },
        ..Default::default()
    };
    let status = within(reviews.create(&pp, &review))
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(status.authenticated, Some(true));

    let err = within(accounts.create_token_request("missing", &pp, &request))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 404),
        "{err:?}"
    );
}

/// A token of ServiceAccount `default/bot` for `audiences` (none: the API server's).
async fn token_for(server: &TestApiServer, audiences: &[&str]) -> String {
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": audiences}});
    let answer = raw(
        server,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/bot/token",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.json());
    answer.json()["status"]["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The status of GET configmaps with `token`.
async fn status_with(server: &TestApiServer, token: &str) -> u16 {
    let bearer = format!("Bearer {token}");
    raw_without_token(
        server,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Authorization", &bearer)],
        b"",
    )
    .await
    .status
}

/// A TokenReview of `token` for `audiences`: its status.
async fn review(server: &TestApiServer, token: &str, audiences: &[&str]) -> serde_json::Value {
    let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences}});
    raw(
        server,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
    .json()["status"]
        .clone()
}

#[tokio::test]
async fn a_service_account_token_is_checked_for_its_audience_and_its_account_each_time() {
    let server = TestApiServer::start().await.unwrap();
    let account = serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "bot", "namespace": "default"}});
    let bot = server.create_json(account.clone()).unwrap();
    let api_token = token_for(&server, &[]).await;
    let vault_token = token_for(&server, &["vault"]).await;
    assert_eq!(status_with(&server, &api_token).await, 200);
    assert_eq!(
        status_with(&server, &vault_token).await,
        401,
        "not for the API server"
    );

    let reviewed = review(&server, &api_token, &[]).await;
    assert_eq!(reviewed["authenticated"], true);
    assert_eq!(
        reviewed["audiences"],
        serde_json::json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(reviewed["user"]["uid"], bot["metadata"]["uid"]);
    assert!(
        reviewed["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap()
            .starts_with("JTI=")
    );
    let vault = review(&server, &vault_token, &["vault"]).await;
    assert_eq!(
        (&vault["authenticated"], &vault["audiences"]),
        (&serde_json::json!(true), &serde_json::json!(["vault"]))
    );
    let wrong = review(&server, &vault_token, &[]).await;
    assert!(wrong.get("authenticated").is_none(), "{wrong}");
    assert_eq!(
        wrong["error"],
        "token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
    );

    // The account deleted, then made again: its old tokens are invalid.
    raw(
        &server,
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/bot",
        &[],
        b"",
    )
    .await;
    assert_eq!(status_with(&server, &api_token).await, 401);
    server.create_json(account).unwrap();
    assert_eq!(status_with(&server, &api_token).await, 401);
    let again = review(&server, &api_token, &[]).await;
    assert!(
        again["error"]
            .as_str()
            .unwrap()
            .starts_with("service account UID ("),
        "{again}"
    );
    assert_eq!(
        status_with(&server, &token_for(&server, &[]).await).await,
        200
    );
}
