//! Discovery documents: `/api`, `/api/v1`, `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` and `/version`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde_json::{Value, json};

use super::resource::{Registry, ResourceType};

/// The Kubernetes version the server claims to be.
pub(crate) const SERVER_MINOR: &str = "35";

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": SERVER_MINOR,
        "gitVersion": format!("v1.{SERVER_MINOR}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`.
pub(crate) fn core_versions(address: SocketAddr) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address.to_string()}]
    })
}

fn groups(registry: &Registry) -> BTreeMap<&str, Vec<&str>> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in registry.types().iter().filter(|t| !t.group.is_empty()) {
        let versions = groups.entry(t.group.as_str()).or_default();
        if !versions.contains(&t.version.as_str()) {
            versions.push(t.version.as_str());
        }
    }
    groups
}

fn group_doc(group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub(crate) fn group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> = groups(registry)
        .iter()
        .map(|(g, v)| group_doc(g, v))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, if the group is served.
pub(crate) fn group(registry: &Registry, group: &str) -> Option<Value> {
    let groups = groups(registry);
    let versions = groups.get(group)?;
    let mut doc = group_doc(group, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn resource_docs(t: &ResourceType) -> Vec<Value> {
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    });
    if !t.short_names.is_empty() {
        main["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    if super::namespaces::is_namespace(t) {
        // Namespaces are deleted one by one (each through the namespace lifecycle).
        main["verbs"] = json!([
            "create", "delete", "get", "list", "patch", "update", "watch"
        ]);
    }
    let mut docs = vec![main];
    if super::namespaces::is_namespace(t) {
        docs.push(json!({
            "name": "namespaces/finalize",
            "singularName": "",
            "namespaced": false,
            "kind": "Namespace",
            "verbs": ["update"],
        }));
    }
    if t.status_subresource {
        docs.push(json!({
            "name": format!("{}/status", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if t.scale.is_some() {
        docs.push(json!({
            "name": format!("{}/scale", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }));
    }
    docs
}

/// `/api/v1` or `/apis/<group>/<version>`, if served.
pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    if !registry.serves_group_version(group, version) {
        return None;
    }
    let resources: Vec<Value> = registry
        .types()
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .flat_map(|t| resource_docs(t))
        .collect();
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

/// `/`: the served paths.
pub(crate) fn root_paths(registry: &Registry) -> Value {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
        "/healthz".to_string(),
        "/livez".to_string(),
        "/readyz".to_string(),
        "/version".to_string(),
    ];
    for (group, versions) in groups(registry) {
        paths.push(format!("/apis/{group}"));
        for v in versions {
            paths.push(format!("/apis/{group}/{v}"));
        }
    }
    paths.sort();
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::CustomResourceSpec;

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
        assert_eq!(group_names, ["apps", "coordination.k8s.io", "example.com"]);
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
}
