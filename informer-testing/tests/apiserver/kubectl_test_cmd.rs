//! Rules kubectl's own command-line suite (kubernetes/kubernetes `test/cmd/*.sh`) found the
//! server breaking, each checked through a real client.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use super::common::{pod, raw, server, server_with_widgets, status, within};

/// `core.sh`: `kubectl replace` of a Node manifest carrying `resourceVersion: "0"`. The
/// generic store reads `0` as no version, and an update without one is unconditional for the
/// types whose strategy allows it.
#[tokio::test]
async fn update_with_resource_version_zero_is_unconditional() {
    let server = server().await;
    let nodes: Api<Node> = Api::all(server.client());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-v1-test"}})).unwrap();
    within(nodes.create(&PostParams::default(), &node))
        .await
        .unwrap();
    let replacement: Node = serde_json::from_value(json!({
        "metadata": {"name": "node-v1-test", "annotations": {"a": "b"}, "resourceVersion": "0"}
    }))
    .unwrap();
    let replaced = within(nodes.replace("node-v1-test", &PostParams::default(), &replacement))
        .await
        .expect("resourceVersion 0 is no precondition");
    assert_eq!(
        replaced.metadata.annotations.unwrap()["a"],
        "b",
        "the update is applied"
    );
    assert_ne!(replaced.metadata.resource_version.as_deref(), Some("0"));
}

/// The same update of a custom resource, whose strategy refuses unconditional updates, is
/// a 422 on `metadata.resourceVersion`, not a 409.
#[tokio::test]
async fn custom_resource_update_with_resource_version_zero_is_invalid() {
    let server = server_with_widgets().await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}
    }))
    .unwrap();
    within(widgets.create(&PostParams::default(), &widget))
        .await
        .unwrap();
    let mut replacement = widget.clone();
    replacement.metadata.resource_version = Some("0".into());
    let err = within(widgets.replace("w1", &PostParams::default(), &replacement))
        .await
        .unwrap_err();
    let status = status(err);
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status.message.contains(
            "metadata.resourceVersion: Invalid value: 0: must be specified for an update"
        ),
        "{}",
        status.message
    );
}

/// `rbac.sh`: "make sure the server was properly bootstrapped with clusterroles and
/// bindings". kube-apiserver's `rbac/bootstrap-roles` hook creates `cluster-admin` (bound to
/// `system:masters`) and the discovery roles; `scheduling/bootstrap-system-priority-classes`
/// the two system PriorityClasses.
#[tokio::test]
async fn bootstrap_roles_bindings_and_priority_classes_exist_at_start() {
    let server = server().await;
    let roles: Api<ClusterRole> = Api::all(server.client());
    let admin = within(roles.get("cluster-admin")).await.unwrap();
    let rules = admin.rules.unwrap();
    assert_eq!(rules[0].verbs, ["*"]);
    assert_eq!(
        rules[1].non_resource_urls.as_deref(),
        Some(&["*".to_string()][..])
    );
    assert_eq!(
        admin.metadata.labels.unwrap()["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    for name in [
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        within(roles.get(name)).await.unwrap();
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(server.client());
    let binding = within(bindings.get("cluster-admin")).await.unwrap();
    assert_eq!(binding.role_ref.name, "cluster-admin");
    let subjects = binding.subjects.unwrap();
    assert_eq!(
        (subjects[0].kind.as_str(), subjects[0].name.as_str()),
        ("Group", "system:masters")
    );
    let classes: Api<PriorityClass> = Api::all(server.client());
    let critical = within(classes.get("system-node-critical")).await.unwrap();
    assert_eq!(critical.value, 2_000_001_000);
    let cluster = within(classes.get("system-cluster-critical"))
        .await
        .unwrap();
    assert_eq!(cluster.value, 2_000_000_000);
}

/// RBAC objects' names are path segments (`ValidateRBACName`), not DNS subdomains: a
/// `system:` name is valid, a `/` is not.
#[tokio::test]
async fn rbac_names_are_path_segments() {
    let server = server().await;
    let roles: Api<Role> = Api::namespaced(server.client(), "default");
    let role: Role =
        serde_json::from_value(json!({"metadata": {"name": "system:reader"}})).unwrap();
    within(roles.create(&PostParams::default(), &role))
        .await
        .expect("a name with a colon is valid");
    let cluster_roles: Api<ClusterRole> = Api::all(server.client());
    let bad: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "a/b"}})).unwrap();
    let status = status(
        within(cluster_roles.create(&PostParams::default(), &bad))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains(r#"metadata.name: Invalid value: "a/b": may not contain '/'"#),
        "{}",
        status.message
    );
}

/// `save-config.sh` (`kubectl replace -f pod.yaml`): the `DefaultTolerationSeconds` admission
/// plugin admits updates as well as creates, so a replaced Pod whose manifest leaves out the
/// two tolerations it was given on create gets them back, and the update is not refused for
/// removing them.
#[tokio::test]
async fn pod_update_gets_the_default_tolerations_back() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = within(pods.create(&PostParams::default(), &pod("p", &[])))
        .await
        .unwrap();
    let mut replacement = created.clone();
    replacement.spec.as_mut().unwrap().tolerations = None;
    replacement
        .metadata
        .labels
        .get_or_insert_default()
        .insert("edited".into(), "yes".into());
    let replaced = within(pods.replace("p", &PostParams::default(), &replacement))
        .await
        .expect("the admission plugin puts the tolerations back");
    let keys: Vec<_> = replaced
        .spec
        .unwrap()
        .tolerations
        .unwrap()
        .into_iter()
        .map(|t| (t.key.unwrap(), t.toleration_seconds))
        .collect();
    assert_eq!(
        keys,
        [
            ("node.kubernetes.io/not-ready".to_string(), Some(300)),
            ("node.kubernetes.io/unreachable".to_string(), Some(300)),
        ]
    );
    assert_eq!(replaced.metadata.labels.unwrap()["edited"], "yes");
}

/// `authorization.sh` greps `curl`'s answer for `"allowed": true`: kube-apiserver indents
/// its JSON (`isPrettyPrint`) for `?pretty=true` and for a `curl`, `Wget` or browser
/// `User-Agent`, errors included, as `json.MarshalIndent` does (no final newline);
/// `?pretty=false` keeps it compact whoever asks (one line and its newline).
#[tokio::test]
async fn json_is_indented_for_curl_and_for_pretty() {
    let server = server().await;
    let request = http::Request::get("/api/v1/namespaces/default?pretty=true")
        .body(Vec::new())
        .unwrap();
    let text = within(server.client().request_text(request)).await.unwrap();
    assert!(text.starts_with("{\n  \""), "{text}");
    assert!(text.contains("\n  \"kind\": \"Namespace\",\n"), "{text}");
    assert!(text.ends_with("\n}"), "{text:?}");
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"verb": "create", "resource": "pods"}}});
    let answer = raw(
        &server,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &[
            ("Content-Type", "application/json"),
            ("User-Agent", "curl/8.5.0"),
        ],
        review.to_string().as_bytes(),
    )
    .await;
    let body = String::from_utf8(answer.body).unwrap();
    assert!(body.contains("\"allowed\": true"), "{body}");
    let missing = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/pods/none",
        &[("User-Agent", "Wget/1.21")],
        b"",
    )
    .await;
    let body = String::from_utf8(missing.body).unwrap();
    assert!(body.contains("\n  \"reason\": \"NotFound\",\n"), "{body}");
    let compact = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default?pretty=false",
        &[("User-Agent", "curl/8.5.0")],
        b"",
    )
    .await;
    // One line, ended as `json.Encoder` ends a document.
    let line = compact.body.strip_suffix(b"\n").unwrap_or(&compact.body);
    assert!(
        compact.body.ends_with(b"}\n") && line.starts_with(b"{\"") && !line.contains(&b'\n'),
        "{}",
        String::from_utf8_lossy(&compact.body)
    );
}

/// `/version` and `/` are written by `WriteRawJSON`: always indented, and `/version` in
/// `version.Info`'s field order (`major` first, `platform` last).
#[tokio::test]
async fn version_and_root_are_always_indented() {
    let server = server().await;
    let request = http::Request::get("/version").body(Vec::new()).unwrap();
    let text = within(server.client().request_text(request)).await.unwrap();
    assert!(
        text.starts_with("{\n  \"major\": \"1\",\n  \"minor\": "),
        "{text}"
    );
    assert!(text.ends_with("\"platform\": \"linux/amd64\"\n}"), "{text}");
    let request = http::Request::get("/").body(Vec::new()).unwrap();
    let text = within(server.client().request_text(request)).await.unwrap();
    assert!(
        text.starts_with("{\n  \"paths\": [\n    \"/api\",\n"),
        "{text}"
    );
}
