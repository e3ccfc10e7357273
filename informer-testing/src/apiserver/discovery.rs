//! Discovery documents: `/api`, `/api/v1`, `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` and `/version`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde_json::{Value, json};

use super::resource::{Registry, ResourceType};
use super::str_at;

/// The Kubernetes version the server claims to be.
pub(crate) const SERVER_MINOR: &str = "35";

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": SERVER_MINOR,
        // Compatibility versions (1.31+): a server emulates its own version and can be
        // rolled back to the previous minor.
        "emulationMajor": "1",
        "emulationMinor": SERVER_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": (SERVER_MINOR.parse::<u32>().unwrap_or(1) - 1).to_string(),
        "gitVersion": format!("v1.{SERVER_MINOR}.0"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.25.5",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/version` as written: [`version`] in `version.Info`'s field order, compact.
pub(crate) fn version_json() -> Vec<u8> {
    let info = version();
    let fields = [
        "major",
        "minor",
        "emulationMajor",
        "emulationMinor",
        "minCompatibilityMajor",
        "minCompatibilityMinor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    ];
    let members: Vec<String> = fields
        .iter()
        .map(|field| format!("{}:{}", Value::from(*field), info[field]))
        .collect();
    format!("{{{}}}", members.join(",")).into_bytes()
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
    for group in super::reviews::GROUPS {
        groups.entry(group).or_default().push("v1");
    }
    for versions in groups.values_mut() {
        versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    }
    groups
}

/// How Kubernetes orders API versions, highest first (`version.CompareKubeAwareVersionStrings`):
/// GA before beta before alpha, higher numbers first, then anything else by name.
pub(crate) fn version_priority(version: &str) -> (u8, u64, u64, std::cmp::Reverse<String>) {
    let parse = || -> Option<(u8, u64, u64)> {
        let rest = version.strip_prefix('v')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        let (level, minor) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((level, major, minor.parse().ok()?))
    };
    match parse() {
        Some((level, major, minor)) => (level, major, minor, std::cmp::Reverse(String::new())),
        None => (0, 0, 0, std::cmp::Reverse(version.to_string())),
    }
}

/// `storageVersionHash`: the first 8 bytes of the SHA-256 of `group/version/kind` of the
/// storage version, in base64 (`discovery.StorageVersionHash`).
fn storage_version_hash(t: &ResourceType) -> String {
    use base64::Engine as _;
    // A view of another group's objects (events.k8s.io/v1 Events) hashes where they are
    // stored, as the real server's cohabitating resources do.
    let (group, version) = t
        .stored_as()
        .unwrap_or((t.group.as_str(), t.storage_version.as_str()));
    let text = format!("{group}/{version}/{}", t.kind);
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
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
        "verbs": if t.custom {
            // The order the real server lists a custom resource's verbs in.
            json!(["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"])
        } else {
            json!(["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"])
        },
    });
    // The real server lists no hash for the CRD type itself.
    if !super::crd::is_definition(t) {
        main["storageVersionHash"] = json!(storage_version_hash(t));
    }
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
    // The create-only subresources, whose requests are objects of another group.
    let posted = |name: &str, group: &str, kind: &str| {
        json!({
            "name": name,
            "singularName": "",
            "namespaced": true,
            "group": group,
            "version": "v1",
            "kind": kind,
            "verbs": ["create"],
        })
    };
    if super::pods::is_pod(t) {
        let pod_subresource = |name: &str, kind: &str, verbs: &[&str]| {
            json!({
                "name": name,
                "singularName": "",
                "namespaced": true,
                "kind": kind,
                "verbs": verbs,
            })
        };
        docs.push(pod_subresource(
            "pods/attach",
            "PodAttachOptions",
            &["create", "get"],
        ));
        docs.push(pod_subresource("pods/binding", "Binding", &["create"]));
        docs.push(pod_subresource(
            "pods/ephemeralcontainers",
            "Pod",
            &["get", "patch", "update"],
        ));
        docs.push(posted("pods/eviction", "policy", "Eviction"));
        docs.push(pod_subresource(
            "pods/exec",
            "PodExecOptions",
            &["create", "get"],
        ));
        docs.push(pod_subresource("pods/log", "Pod", &["get"]));
        docs.push(pod_subresource(
            "pods/portforward",
            "PodPortForwardOptions",
            &["create", "get"],
        ));
    }
    if t.group.is_empty() && matches!(t.plural.as_str(), "pods" | "services" | "nodes") {
        docs.push(json!({
            "name": format!("{}/proxy", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "kind": format!("{}ProxyOptions", t.kind),
            "verbs": ["create", "delete", "get", "patch", "update"],
        }));
    }
    if super::service_accounts::is_service_account(t) {
        docs.push(posted(
            "serviceaccounts/token",
            "authentication.k8s.io",
            "TokenRequest",
        ));
    }
    if super::certificates::is_csr(t) {
        docs.push(json!({
            "name": "certificatesigningrequests/approval",
            "singularName": "",
            "namespaced": false,
            "kind": t.kind,
            "verbs": ["get", "patch", "update"],
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
    if !registry.serves_group_version(group, version) && !super::reviews::serves(group, version) {
        return None;
    }
    // The core group's legacy `bindings` resource (create-only, `LegacyBindingREST`).
    let legacy_bindings = (group.is_empty() && version == "v1").then(|| {
        json!({
            "name": "bindings",
            "singularName": "binding",
            "namespaced": true,
            "kind": "Binding",
            "verbs": ["create"],
        })
    });
    let resources: Vec<Value> = legacy_bindings
        .into_iter()
        .chain(
            registry
                .types()
                .iter()
                .filter(|t| t.group == group && t.version == version)
                .flat_map(|t| resource_docs(t)),
        )
        .chain(super::reviews::discovery_docs(group, version))
        .collect();
    // kube-apiserver's API installer registers a group version's paths sorted, so its list
    // is sorted by name, each subresource right after its resource. The CRD discovery
    // controller lists each custom resource (in no set order of its own) followed by its
    // `status`, then its `scale`: a stable sort by resource keeps that order.
    let custom = registry
        .types()
        .iter()
        .any(|t| t.group == group && t.version == version && t.custom);
    let mut resources = resources;
    if custom {
        fn resource(doc: &Value) -> &str {
            str_at(doc, "/name").split('/').next().unwrap_or("")
        }
        resources.sort_by(|a, b| resource(a).cmp(resource(b)));
    } else {
        resources.sort_by(|a, b| str_at(a, "/name").cmp(str_at(b, "/name")));
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut list = json!({
        "kind": "APIResourceList",
        "groupVersion": group_version,
        "resources": resources,
    });
    // kube-apiserver's legacy `/api/v1` document carries no `apiVersion`; the groups' do.
    if !group.is_empty() {
        list["apiVersion"] = json!("v1");
    }
    Some(list)
}

/// `/apis` (or, with `core`, `/api`) as aggregated discovery (`apidiscovery.k8s.io/v2`
/// `APIGroupDiscoveryList`): each group with its versions (preferred first) and each version's
/// resources, their subresources inside, as kube-apiserver aggregates its groups' documents.
/// A built-in resource's `responseKind` leaves its group and version empty (the document's
/// own), a custom resource's names them, as the real servers do.
pub(crate) fn aggregated(registry: &Registry, core: bool) -> Value {
    let version_doc = |group: &str, version: &str| {
        let list = resource_list(registry, group, version).unwrap_or(Value::Null);
        let entries = list["resources"].as_array().cloned().unwrap_or_default();
        let custom = registry
            .types()
            .iter()
            .any(|t| t.group == group && t.version == version && t.custom);
        let response_kind = |entry: &Value| {
            let (kind_group, kind_version) = match entry.get("group").and_then(Value::as_str) {
                Some(other) => (
                    other.to_string(),
                    entry["version"].as_str().unwrap_or("").to_string(),
                ),
                None if custom => (group.to_string(), version.to_string()),
                None => (String::new(), String::new()),
            };
            json!({"group": kind_group, "version": kind_version, "kind": entry["kind"]})
        };
        let mut resources: Vec<Value> = Vec::new();
        for entry in &entries {
            let name = entry["name"].as_str().unwrap_or("");
            if let Some((parent, subresource)) = name.split_once('/') {
                let Some(owner) = resources.iter_mut().find(|r| r["resource"] == parent) else {
                    continue;
                };
                if !owner["subresources"].is_array() {
                    owner["subresources"] = json!([]);
                }
                if let Some(list) = owner["subresources"].as_array_mut() {
                    list.push(json!({
                        "subresource": subresource,
                        "responseKind": response_kind(entry),
                        "verbs": entry["verbs"],
                    }));
                }
                continue;
            }
            let mut resource = json!({
                "resource": name,
                "responseKind": response_kind(entry),
                "scope": if entry["namespaced"] == true { "Namespaced" } else { "Cluster" },
                "singularResource": entry["singularName"],
                "verbs": entry["verbs"],
            });
            for field in ["shortNames", "categories"] {
                if let Some(value) = entry.get(field) {
                    resource[field] = value.clone();
                }
            }
            resources.push(resource);
        }
        json!({"version": version, "resources": resources, "freshness": "Current"})
    };
    let items: Vec<Value> = if core {
        vec![json!({"metadata": {}, "versions": [version_doc("", "v1")]})]
    } else {
        groups(registry)
            .into_iter()
            .map(|(group, versions)| {
                let versions: Vec<Value> = versions.iter().map(|v| version_doc(group, v)).collect();
                json!({"metadata": {"name": group}, "versions": versions})
            })
            .collect()
    };
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
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
mod tests;
