//! The `PodSecurity` admission plugin, as kube-apiserver (1.25+) runs it by default: a
//! namespace's `pod-security.kubernetes.io/enforce` level refuses the Pods that break it
//! (`403`), its `warn` level answers `Warning` headers for Pods and for the workloads that
//! hold a pod template, its labels must parse (`422`), and raising its enforce level warns
//! of the existing Pods that break the new level.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::common::{RawResponse, pod, raw, server, status, within};
use super::kubectl::{fails, started, write_manifest};

const ENFORCE: &str = "pod-security.kubernetes.io/enforce";
const WARN: &str = "pod-security.kubernetes.io/warn";

/// What kube-apiserver answers for `pod("web")` made privileged, at the restricted level.
const PRIVILEGED_AT_RESTRICTED: &str = concat!(
    r#"violates PodSecurity "restricted:latest": "#,
    r#"privileged (container "app" must not set securityContext.privileged=true), "#,
    r#"allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), "#,
    r#"unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), "#,
    r#"runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), "#,
    r#"seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
);

async fn labelled_namespace(server: &informer_testing::TestApiServer, name: &str, labels: Value) {
    let namespaces: Api<Namespace> = Api::all(server.client());
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap();
    within(namespaces.create(&PostParams::default(), &namespace))
        .await
        .unwrap();
}

fn privileged_pod(name: &str) -> Pod {
    let mut pod = pod(name, &[]);
    pod.spec.as_mut().unwrap().containers[0].security_context =
        Some(serde_json::from_value(json!({"privileged": true})).unwrap());
    pod
}

/// A pod the restricted level allows.
fn restricted_pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "app", "image": "nginx:1.27",
                "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    })
}

/// The `Warning` headers of a response, without their `299 - "..."` framing.
fn warnings(response: &RawResponse) -> Vec<String> {
    response
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("warning"))
        .map(|(_, v)| {
            let quoted = v.strip_prefix("299 - ").expect("a 299 warning");
            serde_json::from_str(quoted).expect("a quoted warning")
        })
        .collect()
}

async fn post(server: &informer_testing::TestApiServer, path: &str, body: &Value) -> RawResponse {
    raw(
        server,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body.to_string().as_bytes(),
    )
    .await
}

#[tokio::test]
async fn a_privileged_pod_in_a_restricted_namespace_is_forbidden() {
    let server = server().await;
    labelled_namespace(&server, "locked", json!({ENFORCE: "restricted"})).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "locked");
    let err = status(
        within(pods.create(&PostParams::default(), &privileged_pod("web")))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        format!(r#"pods "web" is forbidden: {PRIVILEGED_AT_RESTRICTED}"#)
    );
    // A dry run is admitted the same way; nothing is stored.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let err = status(
        within(pods.create(&dry_run, &privileged_pod("web")))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(within(pods.get_opt("web")).await.unwrap().is_none());
    // A pod that follows the restricted standard is created, without warnings.
    let created = post(
        &server,
        "/api/v1/namespaces/locked/pods",
        &restricted_pod("ok"),
    )
    .await;
    assert_eq!(created.status, 201);
    assert!(warnings(&created).is_empty());
    // Elsewhere (no labels: privileged) the privileged pod is fine.
    let default: Api<Pod> = Api::namespaced(server.client(), "default");
    within(default.create(&PostParams::default(), &privileged_pod("web")))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_pinned_baseline_version_is_named_in_the_refusal() {
    let server = server().await;
    labelled_namespace(
        &server,
        "pinned",
        json!({ENFORCE: "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "pinned");
    let mut pod = pod("host", &[]);
    pod.spec.as_mut().unwrap().host_network = Some(true);
    let err = status(
        within(pods.create(&PostParams::default(), &pod))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"pods "host" is forbidden: violates PodSecurity "baseline:v1.30": host namespaces (hostNetwork)"#
    );
}

#[tokio::test]
async fn a_pod_breaking_the_warn_level_is_created_with_a_warning() {
    let server = server().await;
    labelled_namespace(
        &server,
        "watched",
        json!({ENFORCE: "baseline", WARN: "restricted"}),
    )
    .await;
    let body = serde_json::to_value(pod("web", &[])).unwrap();
    let created = post(&server, "/api/v1/namespaces/watched/pods", &body).await;
    assert_eq!(created.status, 201);
    assert_eq!(
        warnings(&created),
        [concat!(
            r#"would violate PodSecurity "restricted:latest": "#,
            r#"allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )]
    );
    // A refused pod gets no warning, only the error.
    let body = serde_json::to_value(privileged_pod("root")).unwrap();
    let refused = post(&server, "/api/v1/namespaces/watched/pods", &body).await;
    refused.assert_status(403, "Forbidden");
    assert!(warnings(&refused).is_empty());
}

#[tokio::test]
async fn workloads_are_warned_of_never_refused() {
    let server = server().await;
    labelled_namespace(
        &server,
        "apps",
        json!({ENFORCE: "restricted", WARN: "baseline"}),
    )
    .await;
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "securityContext": {"privileged": true}}]},
            },
        },
    });
    let created = post(
        &server,
        "/apis/apps/v1/namespaces/apps/deployments",
        &deployment,
    )
    .await;
    assert_eq!(created.status, 201);
    assert_eq!(
        warnings(&created),
        [
            r#"would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)"#
        ]
    );
    // An update is evaluated again; a CronJob's job template too.
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "apps");
    within(deployments.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    ))
    .await
    .unwrap();
    let cronjob = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {
            "schedule": "0 0 * * *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "hostPID": true,
                "containers": [{"name": "job", "image": "busybox"}],
            }}}},
        },
    });
    let created = post(&server, "/apis/batch/v1/namespaces/apps/cronjobs", &cronjob).await;
    assert_eq!(created.status, 201);
    assert_eq!(
        warnings(&created),
        [r#"would violate PodSecurity "baseline:latest": host namespaces (hostPID)"#]
    );
}

#[tokio::test]
async fn pod_updates_are_checked_only_when_they_change_what_matters() {
    let server = server().await;
    labelled_namespace(&server, "later", json!({})).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "later");
    within(pods.create(&PostParams::default(), &privileged_pod("web")))
        .await
        .unwrap();
    let namespaces: Api<Namespace> = Api::all(server.client());
    within(namespaces.patch(
        "later",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {ENFORCE: "baseline"}}})),
    ))
    .await
    .unwrap();
    // A label: allowed, though the pod breaks the level.
    within(pods.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
    ))
    .await
    .unwrap();
    // A new image: checked, refused.
    let err = status(
        within(pods.patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}),
            ),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        r#"pods "web" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)"#
    );
    // A privileged ephemeral container (`kubectl debug --profile=sysadmin`): refused.
    let fine: Pod = serde_json::from_value(json!({
        "metadata": {"name": "fine"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }))
    .unwrap();
    within(pods.create(&PostParams::default(), &fine))
        .await
        .unwrap();
    let err = status(
        within(pods.patch_subresource(
            "ephemeralcontainers",
            "fine",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"ephemeralContainers": [{
                "name": "debugger", "image": "busybox",
                "securityContext": {"privileged": true},
            }]}})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        r#"pods "fine" is forbidden: violates PodSecurity "baseline:latest": privileged (container "debugger" must not set securityContext.privileged=true)"#
    );
}

#[tokio::test]
async fn namespace_labels_that_do_not_parse_are_invalid() {
    let server = server().await;
    let created = post(
        &server,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "typo", "labels": {ENFORCE: "strict", "pod-security.kubernetes.io/warn-version": "1.30"},
        }}),
    )
    .await;
    created.assert_status(422, "Invalid");
    let body = created.json();
    assert_eq!(
        body["message"],
        concat!(
            r#"Namespace "typo" is invalid: ["#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, "#,
            r#"metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"]"#,
        )
    );
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "metadata.labels[pod-security.kubernetes.io/enforce]"
    );
    let namespaces: Api<Namespace> = Api::all(server.client());
    let err = status(
        within(namespaces.patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {WARN: "everything"}}})),
        ))
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
}

/// Sets a namespace's enforce level with a merge patch.
async fn enforce(
    server: &informer_testing::TestApiServer,
    namespace: &str,
    level: &str,
) -> RawResponse {
    raw(
        server,
        "PATCH",
        &format!("/api/v1/namespaces/{namespace}"),
        &[("Content-Type", "application/merge-patch+json")],
        json!({"metadata": {"labels": {ENFORCE: level}}})
            .to_string()
            .as_bytes(),
    )
    .await
}

#[tokio::test]
async fn raising_a_namespaces_enforce_level_warns_of_the_pods_that_break_it() {
    let server = server().await;
    labelled_namespace(&server, "busy", json!({})).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "busy");
    for name in ["b", "a", "c"] {
        within(pods.create(&PostParams::default(), &privileged_pod(name)))
            .await
            .unwrap();
    }
    let mut host = pod("host", &[]);
    host.spec.as_mut().unwrap().host_ipc = Some(true);
    within(pods.create(&PostParams::default(), &host))
        .await
        .unwrap();
    let patched = enforce(&server, "busy", "baseline").await;
    assert_eq!(patched.status, 200);
    assert_eq!(
        warnings(&patched),
        [
            r#"existing pods in namespace "busy" violate the new PodSecurity enforce level "baseline:latest""#,
            "a (and 2 other pods): privileged",
            "host: host namespaces",
        ]
    );
    // Relaxing it warns of nothing; the pods stay.
    let relaxed = enforce(&server, "busy", "privileged").await;
    assert_eq!(relaxed.status, 200);
    assert!(warnings(&relaxed).is_empty());
    assert_eq!(
        within(pods.list(&Default::default()))
            .await
            .unwrap()
            .items
            .len(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_the_warnings_and_the_refusal() {
    let Some((server, kubectl)) = started().await else {
        return;
    };
    labelled_namespace(
        &server,
        "team",
        json!({ENFORCE: "baseline", WARN: "restricted"}),
    )
    .await;
    let manifest = write_manifest(
        &kubectl,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: team\nspec:\n  containers:\n  - name: app\n    image: nginx:1.27\n",
    );
    let output = kubectl.run(&["apply", "-f", &manifest]).await;
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with(r#"Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false"#),
        "{stderr}"
    );
    let privileged = write_manifest(
        &kubectl,
        "privileged.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: root\n  namespace: team\nspec:\n  containers:\n  - name: app\n    image: nginx:1.27\n    securityContext:\n      privileged: true\n",
    );
    let stderr = fails(&kubectl, &["create", "-f", &privileged]).await;
    assert!(
        stderr.contains(r#"Error from server (Forbidden): error when creating ""#)
            && stderr.contains(r#"pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)"#),
        "{stderr}"
    );
    let output = kubectl
        .run(&[
            "label",
            "namespace",
            "team",
            "--overwrite",
            &format!("{ENFORCE}=restricted"),
        ])
        .await;
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(r#"Warning: existing pods in namespace "team" violate the new PodSecurity enforce level "restricted:latest""#)
            && stderr.contains("Warning: web: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"),
        "{stderr}"
    );
    kubectl.cleanup();
}
