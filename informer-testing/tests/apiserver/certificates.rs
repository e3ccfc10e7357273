//! certificates.k8s.io/v1 CertificateSigningRequests through a real `kube::Client` (and
//! kubectl, where installed): the requester recorded on create (impersonation included), the
//! `approval` and `status` subresources and what each may change, validation with the real
//! server's messages, and `kubectl certificate approve|deny` and `kubectl get csr`.

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::common::{server, status, within};
use super::kubectl::{started, write_manifest};

fn resource() -> ApiResource {
    ApiResource::erase::<CertificateSigningRequest>(&())
}

fn api(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(client, &resource())
}

/// A PEM PKCS#10 request signed by a fresh P-256 key.
fn request_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    rcgen::CertificateParams::new(vec!["demo.example.com".to_string()])
        .unwrap()
        .serialize_request(&key)
        .unwrap()
        .pem()
        .unwrap()
}

/// A PEM self-signed certificate (what a signer would write to `status.certificate`).
fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    rcgen::CertificateParams::new(vec!["demo.example.com".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap()
        .pem()
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn manifest(name: &str) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(&request_pem()),
            "signerName": "example.com/demo",
            "usages": ["client auth"],
        },
    })
}

fn object(value: Value) -> DynamicObject {
    serde_json::from_value(value).unwrap()
}

async fn create(client: kube::Client, value: Value) -> Result<Value, kube::Error> {
    let created = within(api(client).create(&PostParams::default(), &object(value))).await?;
    Ok(serde_json::to_value(created).unwrap())
}

async fn get(client: kube::Client, name: &str) -> Value {
    serde_json::to_value(within(api(client).get(name)).await.unwrap()).unwrap()
}

async fn write(
    client: kube::Client,
    subresource: &str,
    name: &str,
    value: &Value,
) -> Result<Value, kube::Error> {
    let api = api(client);
    let written = match subresource {
        "" => within(api.replace(name, &PostParams::default(), &object(value.clone()))).await?,
        sub => within(api.replace_subresource(sub, name, &PostParams::default(), value)).await?,
    };
    Ok(serde_json::to_value(written).unwrap())
}

fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": "Test", "message": "by the test"})
}

fn condition_types(object: &Value) -> Vec<String> {
    object["status"]["conditions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| c["type"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The 422's message of a write expected to fail.
fn invalid(result: Result<Value, kube::Error>) -> String {
    let status = status(result.expect_err("the write should fail"));
    assert_eq!(status.code, 422, "{}", status.message);
    status.message
}

#[tokio::test]
async fn create_records_the_requester_and_drops_the_status_sent() {
    let server = server().await;
    let mut sent = manifest("requester");
    sent["spec"]["username"] = json!("mallory");
    sent["spec"]["groups"] = json!(["system:masters"]);
    sent["status"] = json!({"conditions": [condition("Approved")]});
    let created = create(server.client(), sent).await.unwrap();
    assert_eq!(created["spec"]["username"], "admin");
    assert_eq!(
        created["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(created["status"], json!({}));

    let created = create(server.user_client("alice"), manifest("alices"))
        .await
        .unwrap();
    assert_eq!(created["spec"]["username"], "alice");
    assert_eq!(created["spec"]["groups"], json!(["system:authenticated"]));
}

#[tokio::test]
async fn create_records_the_impersonated_user_and_groups() {
    let server = server().await;
    let mut config = server.config();
    config.auth_info.impersonate = Some("user1".to_string());
    config.auth_info.impersonate_groups = Some(vec!["group2".into(), "group1".into()]);
    let client = kube::Client::try_from(config).unwrap();
    let created = create(client, manifest("impersonated")).await.unwrap();
    assert_eq!(created["spec"]["username"], "user1");
    assert_eq!(
        created["spec"]["groups"],
        json!(["group2", "group1", "system:authenticated"])
    );
}

#[tokio::test]
async fn request_must_be_a_pem_certificate_request_that_verifies() {
    let server = server().await;
    let mut sent = manifest("garbage");
    sent["spec"]["request"] = json!(b64("not a request"));
    let message = invalid(create(server.client(), sent).await);
    assert!(
        message.contains("spec.request: Invalid value: \"bm90IGEgcmVxdWVzdA==\": "),
        "{message}"
    );
    assert!(
        message.ends_with("PEM block type must be CERTIFICATE REQUEST"),
        "{message}"
    );

    // A request whose signature does not match its content.
    let pem = request_pem();
    let key = rcgen::KeyPair::generate().unwrap();
    let other = rcgen::CertificateParams::new(vec!["other.example.com".to_string()])
        .unwrap()
        .serialize_request(&key)
        .unwrap();
    let mut der = other.der().to_vec();
    let last = der.len() - 1;
    der[last] ^= 0xff;
    let tampered = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
        {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.encode(&der)
        }
    );
    assert_ne!(pem, tampered);
    let mut sent = manifest("tampered");
    sent["spec"]["request"] = json!(b64(&tampered));
    let message = invalid(create(server.client(), sent).await);
    assert!(
        message.ends_with("x509: ECDSA verification failure"),
        "{message}"
    );
}

#[tokio::test]
async fn usages_signer_name_and_expiration_are_validated() {
    let server = server().await;
    let mut sent = manifest("bad");
    sent["spec"]["usages"] = json!(["client auth", "flying", "client auth"]);
    sent["spec"]["signerName"] = json!("no-slash");
    sent["spec"]["expirationSeconds"] = json!(300);
    let message = invalid(create(server.client(), sent).await);
    assert!(
        message.contains("spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\""),
        "{message}"
    );
    assert!(
        message.contains("spec.usages[2]: Duplicate value: \"client auth\""),
        "{message}"
    );
    assert!(
        message.contains("spec.signerName: Invalid value: \"no-slash\": must be a fully qualified domain and path of the form 'example.com/signer-name'"),
        "{message}"
    );
    assert!(
        message.contains("spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 600 seconds (10 minutes)"),
        "{message}"
    );

    let mut sent = manifest("nothing");
    sent["spec"]["usages"] = json!([]);
    sent["spec"]["signerName"] = json!("kubernetes.io/legacy-unknown");
    let message = invalid(create(server.client(), sent).await);
    assert!(message.contains("spec.usages: Required value"), "{message}");
    assert!(
        message.contains("the legacy signerName is not allowed via this API version"),
        "{message}"
    );
}

#[tokio::test]
async fn approval_subresource_changes_only_the_conditions() {
    let server = server().await;
    let created = create(server.client(), manifest("approve-me"))
        .await
        .unwrap();
    let mut body = created.clone();
    body["status"]["conditions"] = json!([condition("Approved")]);
    body["spec"]["signerName"] = json!("example.com/other");
    let approved = write(server.client(), "approval", "approve-me", &body)
        .await
        .unwrap();
    assert_eq!(condition_types(&approved), ["Approved"]);
    assert_eq!(approved["spec"]["signerName"], "example.com/demo");
    let condition = &approved["status"]["conditions"][0];
    assert!(condition["lastUpdateTime"].is_string(), "{condition}");
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");

    // Denying an approved request is refused: the two exclude each other.
    let mut body = approved.clone();
    body["status"]["conditions"] = json!([condition.clone(), self::condition("Denied")]);
    let message = invalid(write(server.client(), "approval", "approve-me", &body).await);
    assert!(
        message.contains("status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"),
        "{message}"
    );

    // Removing it is refused too.
    let mut body = approved;
    body["status"]["conditions"] = json!([]);
    let message = invalid(write(server.client(), "approval", "approve-me", &body).await);
    assert!(
        message.contains(
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        ),
        "{message}"
    );
    let stored = get(server.client(), "approve-me").await;
    assert_eq!(condition_types(&stored), ["Approved"]);
}

#[tokio::test]
async fn status_subresource_may_not_approve_but_may_issue_once() {
    let server = server().await;
    let created = create(server.client(), manifest("issue-me")).await.unwrap();
    let mut body = created.clone();
    body["status"]["conditions"] = json!([condition("Approved")]);
    let message = invalid(write(server.client(), "status", "issue-me", &body).await);
    assert!(
        message.contains(
            "status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
        ),
        "{message}"
    );

    // The object itself never takes a certificate (its status is kept).
    let mut body = created.clone();
    body["status"]["certificate"] = json!(b64(&certificate_pem()));
    let updated = write(server.client(), "", "issue-me", &body).await.unwrap();
    assert!(updated["status"].get("certificate").is_none(), "{updated}");

    // A signer's write through /status does, with a Failed condition if it likes.
    let mut body = updated.clone();
    body["status"]["certificate"] = json!(b64(&certificate_pem()));
    let issued = write(server.client(), "status", "issue-me", &body)
        .await
        .unwrap();
    assert!(issued["status"]["certificate"].is_string());

    // Once.
    let mut body = issued.clone();
    body["status"]["certificate"] = json!(b64(&certificate_pem()));
    let message = invalid(write(server.client(), "status", "issue-me", &body).await);
    assert!(
        message.contains(
            "status.certificate: Forbidden: updates may not modify existing certificate content"
        ),
        "{message}"
    );

    // Not a certificate.
    let created = create(server.client(), manifest("not-a-cert"))
        .await
        .unwrap();
    let mut body = created;
    body["status"]["certificate"] = json!(b64(&request_pem()));
    let message = invalid(write(server.client(), "status", "not-a-cert", &body).await);
    assert!(
        message.contains("status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\""),
        "{message}"
    );
}

#[tokio::test]
async fn conditions_need_a_type_and_a_true_status_for_approval_types() {
    let server = server().await;
    let created = create(server.client(), manifest("conditions"))
        .await
        .unwrap();
    let mut body = created;
    body["status"]["conditions"] = json!([
        {"type": "Approved", "status": "False"},
        {"type": "", "status": "True"},
        {"type": "Custom", "status": "Maybe"},
    ]);
    let message = invalid(write(server.client(), "approval", "conditions", &body).await);
    for expected in [
        "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
        "status.conditions[1].type: Required value",
        "status.conditions[2].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
    ] {
        assert!(message.contains(expected), "{expected} in {message}");
    }
}

#[tokio::test]
async fn discovery_serves_csr_with_status_and_approval() {
    let server = server().await;
    let list = within(
        server
            .client()
            .list_api_group_resources("certificates.k8s.io/v1"),
    )
    .await
    .unwrap();
    let names: Vec<&str> = list.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "certificatesigningrequests",
            "certificatesigningrequests/approval",
            "certificatesigningrequests/status"
        ]
    );
    let csr = &list.resources[0];
    assert_eq!(csr.short_names.as_deref(), Some(&["csr".to_string()][..]));
    assert!(!csr.namespaced);
}

#[tokio::test]
async fn kubectl_certificate_approve_deny_and_get_columns() {
    let Some((_server, kubectl)) = started().await else {
        return;
    };
    let file = write_manifest(
        &kubectl,
        "csr.yaml",
        &serde_json::to_string(&manifest("kc")).unwrap(),
    );
    kubectl.ok(&["create", "-f", &file]).await;
    let table = kubectl.ok(&["get", "csr"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert!(table.contains("example.com/demo"), "{table}");
    assert!(table.contains("Pending"), "{table}");
    kubectl.ok(&["certificate", "approve", "kc"]).await;
    let types = kubectl
        .ok(&[
            "get",
            "csr/kc",
            "-o",
            "go-template={{range .status.conditions}}{{.type}}:{{.reason}}{{end}}",
        ])
        .await;
    assert_eq!(types, "Approved:KubectlApprove");
    let table = kubectl.ok(&["get", "csr", "kc"]).await;
    assert!(table.contains("Approved"), "{table}");
    // kubectl itself refuses to deny an approved request (the server would: see
    // `approval_subresource_changes_only_the_conditions`).
    let denied = kubectl.run(&["certificate", "deny", "kc"]).await;
    assert!(!denied.status.success());
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(stderr.contains("is already Approved"), "{stderr}");
    kubectl.ok(&["delete", "csr", "kc"]).await;
    kubectl.ok(&["create", "-f", &file]).await;
    kubectl.ok(&["certificate", "deny", "kc"]).await;
    let table = kubectl.ok(&["get", "csr", "kc", "--no-headers"]).await;
    assert!(table.trim_end().ends_with("Denied"), "{table}");
    kubectl.cleanup();
}
