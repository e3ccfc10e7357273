//! Discovery, `/version`, unknown paths and the loopback-only listener.

use informer_testing::{CustomResourceSpec, TestApiServer};
use kube::discovery::{Discovery, Scope};

use super::common::{raw, server, server_with_widgets, within};

#[tokio::test]
async fn discovery_lists_builtin_and_custom_resources() {
    let server = server().await;
    server
        .register_custom_resource(
            CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
                .with_status_subresource()
                .with_short_names(["wd"]),
        )
        .unwrap();
    server
        .register_custom_resource(CustomResourceSpec::cluster_scoped(
            "example.com",
            "v1",
            "Zone",
            "zones",
        ))
        .unwrap();
    let discovery = within(Discovery::new(server.client()).run()).await.unwrap();

    let expect = |group: &str, plural: &str, kind: &str, namespaced: bool| {
        let group = discovery
            .get(group)
            .unwrap_or_else(|| panic!("group {group:?} missing"));
        let (resource, caps) = group
            .recommended_resources()
            .into_iter()
            .find(|(r, _)| r.plural == plural)
            .unwrap_or_else(|| panic!("{plural} missing"));
        assert_eq!(resource.kind, kind);
        assert_eq!(
            caps.scope == Scope::Namespaced,
            namespaced,
            "{plural} scope"
        );
        for verb in [
            "create", "delete", "get", "list", "patch", "update", "watch",
        ] {
            assert!(
                caps.operations.iter().any(|o| o == verb),
                "{plural} lacks {verb}"
            );
        }
        caps
    };
    let pods = expect("", "pods", "Pod", true);
    assert!(
        pods.subresources
            .iter()
            .any(|(r, _)| r.plural == "pods/status" || r.plural == "status")
    );
    expect("", "configmaps", "ConfigMap", true);
    expect("", "secrets", "Secret", true);
    expect("", "services", "Service", true);
    expect("", "namespaces", "Namespace", false);
    expect("", "events", "Event", true);
    expect("apps", "deployments", "Deployment", true);
    expect("apps", "replicasets", "ReplicaSet", true);
    expect("coordination.k8s.io", "leases", "Lease", true);
    expect("", "serviceaccounts", "ServiceAccount", true);
    expect("", "nodes", "Node", false);
    expect("batch", "jobs", "Job", true);
    expect(
        "rbac.authorization.k8s.io",
        "clusterroles",
        "ClusterRole",
        false,
    );
    expect("example.com", "widgets", "Widget", true);
    expect("example.com", "zones", "Zone", false);
}

#[tokio::test]
async fn version_and_group_documents() {
    let server = server().await;
    let version = within(server.client().apiserver_version()).await.unwrap();
    assert_eq!(version.major, "1");
    assert!(version.git_version.starts_with("v1."));

    let groups = within(server.client().list_api_groups()).await.unwrap();
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "apiregistration.k8s.io",
            "apps",
            "authentication.k8s.io",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "certificates.k8s.io",
            "coordination.k8s.io",
            "discovery.k8s.io",
            "events.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "scheduling.k8s.io",
            "storage.k8s.io"
        ]
    );

    let core = within(server.client().list_core_api_versions())
        .await
        .unwrap();
    assert_eq!(core.versions, ["v1"]);

    let apps = raw(&server, "GET", "/apis/apps", &[], b"").await;
    assert_eq!(apps.status, 200);
    assert_eq!(apps.json()["kind"], "APIGroup");
    assert_eq!(apps.json()["preferredVersion"]["groupVersion"], "apps/v1");

    let health = raw(&server, "GET", "/healthz", &[], b"").await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body, b"ok");
}

#[tokio::test]
async fn discovery_documents_are_written_in_go_field_order_as_kube_apiserver_writes_them() {
    // Scripts grep `kubectl get --raw` output: the fields come in the Go structs' order, the
    // legacy `/api/v1` list has no `apiVersion`, and each document ends with a newline.
    let server = server().await;
    let text = |path: &'static str| {
        let server = &server;
        async move {
            let response = raw(server, "GET", path, &[], b"").await;
            assert_eq!(response.status, 200, "{path}");
            String::from_utf8(response.body).unwrap()
        }
    };
    let api = text("/api").await;
    assert!(
        api.starts_with(r#"{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"#),
        "{api}"
    );
    assert!(api.ends_with("}\n"), "{api:?}");
    let core = text("/api/v1").await;
    assert!(
        core.starts_with(r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"bindings","singularName":"binding","namespaced":true,"kind":"Binding","verbs":["create"]},"#),
        "{core}"
    );
    assert!(
        core.contains(
            r#"{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["#
        ),
        "{core}"
    );
    let apps = text("/apis/apps/v1").await;
    assert!(
        apps.starts_with(r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[{"name":"controllerrevisions","singularName":"controllerrevision","namespaced":true,"kind":"ControllerRevision","verbs":["#),
        "{apps}"
    );
    let group = text("/apis/apps").await;
    assert_eq!(
        group,
        "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}}\n"
    );
    let groups = text("/apis").await;
    assert!(
        groups.starts_with(r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"#),
        "{groups}"
    );
}

#[tokio::test]
async fn unknown_paths_are_not_found_statuses() {
    let server = server().await;
    for path in [
        "/nope",
        "/api/v2",
        "/apis/apps/v9",
        "/apis/nope.io",
        "/api/v1/widgets",
        "/api/v1/pods/some-pod",
        "/api/v1/namespaces/default/pods/p/exec",
        "/apis/apps/v1/namespaces/default/deployments/d/scale/extra",
        "/api/v1/namespaces/default/configmaps/c/scale",
        "/openapi/v4",
    ] {
        raw(&server, "GET", path, &[], b"")
            .await
            .assert_status(404, "NotFound");
    }
    raw(&server, "POST", "/version", &[], b"{}")
        .await
        .assert_status(405, "MethodNotAllowed");
    raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/pods/p",
        &[],
        b"{}",
    )
    .await
    .assert_status(405, "MethodNotAllowed");
    raw(
        &server,
        "DELETE",
        "/api/v1/namespaces/default/pods/p/status",
        &[],
        b"",
    )
    .await
    .assert_status(405, "MethodNotAllowed");
}

#[tokio::test]
async fn listens_on_loopback_only() {
    let server = TestApiServer::start().await.unwrap();
    assert!(server.address().ip().is_loopback());
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let kubeconfig = server.kubeconfig();
    assert_eq!(
        kubeconfig.clusters[0]
            .cluster
            .as_ref()
            .unwrap()
            .server
            .as_deref(),
        Some(server.url().as_str())
    );
    let path =
        std::env::temp_dir().join(format!("apiserver-kubeconfig-{}", server.address().port()));
    server.write_kubeconfig(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&path).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let _ = std::fs::remove_file(&path);
    let client = kube::Client::try_from(config).unwrap();
    within(client.apiserver_version()).await.unwrap();

    let address = server.address();
    server.shutdown();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "listener closed"
    );
}

#[tokio::test]
async fn aggregated_discovery_finds_what_the_legacy_documents_list() {
    let server = server_with_widgets().await;
    let summary = |discovery: &Discovery| {
        let mut found: Vec<String> = discovery
            .groups()
            .flat_map(|group| {
                group.recommended_resources().into_iter().map(|(r, caps)| {
                    let mut subresources: Vec<String> = caps
                        .subresources
                        .iter()
                        .map(|(s, _)| s.plural.clone())
                        .collect();
                    subresources.sort();
                    format!(
                        "{}/{} {} {} {:?} {:?}",
                        r.group, r.version, r.plural, r.kind, caps.scope, subresources
                    )
                })
            })
            .collect();
        found.sort();
        found
    };
    let legacy = within(Discovery::new(server.client()).run()).await.unwrap();
    let aggregated = within(Discovery::new(server.client()).run_aggregated())
        .await
        .unwrap();
    let (legacy, aggregated) = (summary(&legacy), summary(&aggregated));
    assert!(
        aggregated
            .iter()
            .any(|r| r.starts_with("example.com/v1 widgets Widget Namespaced")),
        "{aggregated:?}"
    );
    assert_eq!(aggregated, legacy);
}

#[tokio::test]
async fn version_states_the_compatibility_versions() {
    let server = server().await;
    let version = raw(&server, "GET", "/version", &[], b"").await.json();
    let minor = version["minor"].as_str().unwrap().parse::<u32>().unwrap();
    assert_eq!(version["emulationMajor"], "1");
    assert_eq!(version["emulationMinor"], minor.to_string());
    assert_eq!(version["minCompatibilityMajor"], "1");
    assert_eq!(version["minCompatibilityMinor"], (minor - 1).to_string());
}
