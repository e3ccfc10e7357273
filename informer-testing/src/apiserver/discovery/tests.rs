use super::*;
use crate::apiserver::CustomResourceSpec;

#[test]
fn versions_sort_by_kubernetes_priority() {
    let mut versions = vec![
        "v1alpha1", "v1", "v2beta1", "v10", "foo", "v2", "v1beta2", "v1beta1",
    ];
    versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    assert_eq!(
        versions,
        [
            "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
        ]
    );
}

#[test]
fn storage_version_hashes_are_the_real_servers() {
    let registry = Registry::with_widgets();
    let widgets = registry.by_path("example.com", "v1", "widgets").unwrap();
    assert_eq!(storage_version_hash(&widgets), "gIwvi5rymmg=");
    let docs = resource_docs(&widgets);
    assert_eq!(
        docs[0]["verbs"][0], "delete",
        "custom resources list their verbs as the real server"
    );
}

#[test]
fn documents_list_registered_resources() {
    let mut registry = Registry::builtin();
    registry
        .register(
            &CustomResourceSpec::cluster_scoped("example.com", "v1alpha1", "Zone", "zones")
                .with_status_subresource(),
        )
        .unwrap();
    let core = resource_list(&registry, "", "v1").unwrap();
    assert_eq!(core["groupVersion"], "v1");
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for expected in [
        "pods",
        "pods/status",
        "configmaps",
        "secrets",
        "services",
        "namespaces",
        "events",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let groups = group_list(&registry);
    let group_names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        group_names,
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
            "example.com",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "scheduling.k8s.io",
            "storage.k8s.io"
        ]
    );
    let zones = resource_list(&registry, "example.com", "v1alpha1").unwrap();
    assert_eq!(zones["resources"][0]["namespaced"], false);
    assert_eq!(zones["resources"][1]["name"], "zones/status");
    assert!(resource_list(&registry, "example.com", "v1").is_none());
    assert_eq!(
        group(&registry, "apps").unwrap()["preferredVersion"]["version"],
        "v1"
    );
    assert!(group(&registry, "nope.io").is_none());
}

#[test]
fn aggregated_discovery_nests_subresources_and_names_custom_kinds_groups() {
    let registry = Registry::with_widgets();
    let apis = aggregated(&registry, false);
    assert_eq!(apis["kind"], "APIGroupDiscoveryList");
    assert_eq!(apis["apiVersion"], "apidiscovery.k8s.io/v2");
    let group = |name: &str| {
        apis["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == name)
            .unwrap()
            .clone()
    };
    let apps = group("apps");
    let deployments = apps["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap()
        .clone();
    // A built-in kind's responseKind leaves its group and version to the document.
    assert_eq!(
        deployments["responseKind"],
        json!({"group": "", "version": "", "kind": "Deployment"})
    );
    assert_eq!(deployments["scope"], "Namespaced");
    assert_eq!(deployments["shortNames"], json!(["deploy"]));
    let subresources: Vec<&str> = deployments["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["subresource"].as_str().unwrap())
        .collect();
    // Sorted by name, as the API installer registers the paths.
    assert_eq!(subresources, ["scale", "status"]);
    assert_eq!(
        deployments["subresources"][0]["responseKind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    // A custom resource's names its group and version.
    let widgets = &group("example.com")["versions"][0]["resources"][0];
    assert_eq!(
        widgets["responseKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(group("example.com")["versions"][0]["freshness"], "Current");

    let core = aggregated(&registry, true);
    let core_items = core["items"].as_array().unwrap();
    assert_eq!(core_items.len(), 1);
    assert_eq!(core_items[0]["metadata"], json!({}));
    let pods = core_items[0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap();
    assert!(
        pods["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["subresource"] == "eviction" && s["responseKind"]["group"] == "policy")
    );
}
