//! The Pod subresources a kubelet would answer, as kube-apiserver answers them when the Pod
//! has no node or the kubelet is out of reach (there is none here), and `binding`, which a
//! scheduler writes:
//! - `log` (`kubectl logs`): the container named or the only one (400 otherwise, with the
//!   server's message); the text a test set with [`TestApiServer::set_pod_log`] (empty
//!   without), as a Pod with no node answers empty; `tailLines` and `limitBytes` apply;
//! - `exec`, `attach`, `portforward`: 400 `pod <name> does not have a host assigned` for a
//!   Pod with no node, and otherwise 500, as a cluster whose kubelet cannot be dialled;
//! - `binding` (a `Binding` POSTed by a scheduler, to the subresource or to the legacy
//!   `bindings` resource): sets `spec.nodeName`, copies the Binding's annotations and labels
//!   and sets the `PodScheduled` condition; 409 for a Pod already bound, being deleted or
//!   gated, or (the subresource) whose `uid` or `resourceVersion` is not the Binding's;
//! - `proxy` of Pods, Services and Nodes: answered as a cluster whose Pod and node network
//!   cannot be reached (400 `address not allowed` for a Pod without an IP, 503 for the rest,
//!   404 and 503 for a Service without Endpoints or without addresses).
//!
//! [`TestApiServer::set_pod_log`]: crate::TestApiServer::set_pod_log

use serde_json::{Value, json};

use super::StatusReason;
use super::conditions;
use super::status::ApiError;
use super::str_at;
use super::time::now_rfc3339;

/// The containers of a Pod, init containers first, as `podutil.VisitContainers` visits
/// them.
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// The container a log or stream request is for (`validateContainer`): the one named, which
/// must be the Pod's, or the only container of the Pod.
pub(crate) fn container(pod: &Value, requested: Option<&str>) -> Result<String, ApiError> {
    let name = str_at(pod, "/metadata/name");
    let all = container_names(pod);
    match requested.filter(|c| !c.is_empty()) {
        Some(c) if all.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => {
            let main: Vec<&str> = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .collect();
            match main.as_slice() {
                [only] => Ok((*only).to_string()),
                [] => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                ))),
            }
        }
    }
}

/// What a log request returns of `text`: its last `tail_lines` lines, then at most
/// `limit_bytes` bytes (as the kubelet applies them).
pub(crate) fn log_text(text: &str, tail_lines: Option<usize>, limit_bytes: Option<usize>) -> &str {
    let mut from = 0;
    if let Some(n) = tail_lines {
        let body = text.strip_suffix('\n').unwrap_or(text);
        from = if n == 0 {
            text.len()
        } else {
            body.match_indices('\n')
                .rev()
                .nth(n - 1)
                .map_or(0, |(i, _)| i + 1)
        };
    }
    let tail = &text[from..];
    match limit_bytes {
        Some(limit) if limit < tail.len() => {
            let mut end = limit;
            while !tail.is_char_boundary(end) {
                end -= 1;
            }
            &tail[..end]
        }
        _ => tail,
    }
}

/// The error of `exec`, `attach` or `portforward` on `pod` (after its container is checked),
/// as `streamLocation` fails without a kubelet: a Pod on no node is a 400; otherwise the
/// node's kubelet is looked up (`nodes "x" not found` if the Node is gone), its preferred
/// address taken (the same 500 as the node proxy's without one) and dialed, which fails:
/// no kubelet listens.
pub(crate) fn stream_error(pod: &Value, node: Result<&Value, ApiError>) -> ApiError {
    let name = str_at(pod, "/metadata/name");
    if str_at(pod, "/spec/nodeName").is_empty() {
        return ApiError::bad_request(format!("pod {name} does not have a host assigned"));
    }
    let node = match node {
        Ok(node) => node,
        Err(error) => return error,
    };
    match kubelet_address(node) {
        Ok((host, port)) => ApiError::new(
            StatusReason::InternalError,
            format!(
                "error dialing backend: dial tcp {}: connect: connection refused",
                host_port(&host, &port.to_string())
            ),
        ),
        Err(error) => error,
    }
}

/// The checks `BindingREST.Create` makes of a posted `Binding` before it looks at the Pod
/// (`pkg/registry/core/pod/storage/storage.go`): the name in the URL must be the Binding's
/// (400), and `ValidatePodBinding`'s errors come back as the plain Go error they are (500,
/// no reason: `target.name: Required value`). `url_name` is `None` for the legacy
/// `bindings` resource, which takes the name from the Binding.
pub(crate) fn check_binding(binding: &Value, url_name: Option<&str>) -> Result<(), ApiError> {
    let name = str_at(binding, "/metadata/name");
    if url_name.is_some_and(|url| url != name) {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let text = |pointer: &str| str_at(binding, pointer);
    let mut errors = Vec::new();
    let kind = text("/target/kind");
    if !kind.is_empty() && kind != "Node" {
        errors.push(
            super::FieldError::not_supported("target.kind", kind, &["Node", "<empty>"]).to_string(),
        );
    }
    if text("/target/name").is_empty() {
        errors.push(super::FieldError::required("target.name", "").to_string());
    }
    match errors.as_slice() {
        [] => {}
        [only] => return Err(ApiError::new(StatusReason::Unknown, only.clone())),
        all => {
            return Err(ApiError::new(
                StatusReason::Unknown,
                format!("[{}]", all.join(", ")),
            ));
        }
    }
    if name.is_empty() {
        // `NamespaceKeyFunc` refuses the empty name the legacy resource passes on.
        return Err(ApiError::bad_request("Name parameter required."));
    }
    Ok(())
}

/// The labels the `PodTopologyLabels` admission plugin (on by default since 1.35) copies from
/// the target Node onto a Binding posted to a Pod's `binding` subresource: the Node's
/// `topology.k8s.io/zone` and `topology.k8s.io/region`, where the Binding has none of its own.
pub(crate) fn add_topology_labels(binding: &mut Value, node: Option<&Value>) {
    let Some(node_labels) = node
        .and_then(|n| n.pointer("/metadata/labels"))
        .and_then(Value::as_object)
    else {
        return;
    };
    if binding.pointer("/target/kind").and_then(Value::as_str) != Some("Node") {
        return;
    }
    for key in ["topology.k8s.io/zone", "topology.k8s.io/region"] {
        let Some(value) = node_labels.get(key) else {
            continue;
        };
        if !binding["metadata"].is_object() {
            binding["metadata"] = json!({});
        }
        let labels = &mut binding["metadata"]["labels"];
        if !labels.is_object() {
            *labels = json!({});
        }
        if labels.get(key).is_none() {
            labels[key] = value.clone();
        }
    }
}

/// The Pod a `Binding` to a node makes of `pod` (`setPodNodeAndMetadata`): its node set, its
/// nominated node cleared, the Binding's annotations and labels copied over the Pod's and the
/// `PodScheduled` condition true; 409 for a Pod already bound, being deleted or still gated
/// by `schedulingGates`. With `preconditions` (the `binding` subresource, which keeps the
/// posted metadata; the legacy `bindings` resource wipes it), the Binding's `uid` and
/// `resourceVersion` must be the Pod's (409, in the storage's words).
pub(crate) fn bind(pod: &Value, binding: &Value, preconditions: bool) -> Result<Value, ApiError> {
    let text = |value: &Value, pointer: &str| str_at(value, pointer).to_string();
    let name = text(pod, "/metadata/name");
    if preconditions {
        let namespace = text(pod, "/metadata/namespace");
        let storage_conflict = |why: String| {
            ApiError::conflict(
                "pods",
                &name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: /registry/pods/{namespace}/{name}, ResourceVersion: 0, AdditionalErrorMsg: {why}"
                ),
            )
        };
        let (uid, actual_uid) = (text(binding, "/metadata/uid"), text(pod, "/metadata/uid"));
        if !uid.is_empty() && uid != actual_uid {
            return Err(storage_conflict(format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual_uid}"
            )));
        }
        let (version, actual_version) = (
            text(binding, "/metadata/resourceVersion"),
            text(pod, "/metadata/resourceVersion"),
        );
        if !version.is_empty() && version != actual_version {
            return Err(storage_conflict(format!(
                "Precondition failed: ResourceVersion in precondition: {version}, ResourceVersion in object meta: {actual_version}"
            )));
        }
    }
    let conflict = |why: String| {
        ApiError::new(
            StatusReason::Conflict,
            format!("Operation cannot be fulfilled on pods/binding \"{name}\": {why}"),
        )
        .with_details(json!({"name": name, "kind": "pods/binding"}))
    };
    let target = text(binding, "/target/name");
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Err(conflict(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    let node = text(pod, "/spec/nodeName");
    if !node.is_empty() {
        return Err(conflict(format!(
            "pod {name} is already assigned to node \"{node}\""
        )));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty())
    {
        return Err(conflict(format!(
            "pod {name} has non-empty .spec.schedulingGates"
        )));
    }
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(target);
    if let Some(status) = bound["status"].as_object_mut() {
        status.remove("nominatedNodeName");
    }
    for field in ["annotations", "labels"] {
        let Some(copied) = binding
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .filter(|m| !m.is_empty())
        else {
            continue;
        };
        let into = &mut bound["metadata"][field];
        if !into.is_object() {
            *into = json!({});
        }
        for (key, value) in copied {
            into[key] = value.clone();
        }
    }
    update_pod_condition(&mut bound, "PodScheduled", "True");
    Ok(bound)
}

/// `podutil.UpdatePodCondition` with a bare condition (no reason, message or probe time):
/// added at the end if missing, otherwise replaced where it is, keeping its transition time
/// if the status is unchanged.
fn update_pod_condition(pod: &mut Value, kind: &str, status: &str) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let condition = conditions::set_status(&mut pod["status"]["conditions"], kind, status);
    let since = condition
        .get("lastTransitionTime")
        .cloned()
        .unwrap_or_else(|| json!(now_rfc3339()));
    *condition = json!({
        "type": kind,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": since,
    });
}

/// Splits a proxy request's `[scheme:]name[:port]` (`utilnet.SplitSchemeNamePort`); `None`
/// if it is malformed.
pub(crate) fn split_scheme_name_port(id: &str) -> Option<(&str, &str, &str)> {
    let parts: Vec<&str> = id.split(':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    if name.is_empty() || !matches!(scheme, "" | "http" | "https") {
        return None;
    }
    Some((scheme, name, port))
}

/// The answer of a Pod's `proxy` subresource when the Pod exists: `ResourceLocation` refuses
/// a Pod without a global unicast IP (400 `address not allowed`); with one, the dial fails,
/// as there is no Pod network here (503, the proxy's `error trying to reach service`). The
/// port is the one asked for, else the first container port, else 80.
pub(crate) fn pod_proxy_error(pod: &Value, port: &str) -> ApiError {
    let ip = str_at(pod, "/status/podIP");
    let Some(address) = global_unicast(ip) else {
        return ApiError::bad_request("address not allowed");
    };
    let port = if port.is_empty() {
        pod.pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find_map(|c| c.pointer("/ports/0/containerPort").and_then(Value::as_i64))
            .map_or_else(|| "80".to_string(), |p| p.to_string())
    } else {
        port.to_string()
    };
    unreachable(&address, &port)
}

/// The answer of a Service's `proxy` subresource (`ResourceLocation` in the Service
/// registry): a numeric port must be one of the Service's (503 otherwise), its Endpoints
/// must exist (404) and have an address serving the port (503 `no endpoints available`);
/// with one, the dial fails (503).
pub(crate) fn service_proxy_error(
    service: &Value,
    endpoints: Option<&Value>,
    port: &str,
) -> ApiError {
    let name = str_at(service, "/metadata/name");
    let mut port_name = port.to_string();
    if let Ok(number) = port.parse::<i64>() {
        let found = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number));
        match found {
            Some(p) => {
                port_name = p
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
            }
            None => {
                return ApiError::new(
                    StatusReason::ServiceUnavailable,
                    format!("no service port {number} found for service \"{name}\""),
                );
            }
        }
    }
    let Some(endpoints) = endpoints else {
        return ApiError::not_found("endpoints", name);
    };
    let no_endpoints = || {
        ApiError::new(
            StatusReason::ServiceUnavailable,
            format!("no endpoints available for service \"{name}\""),
        )
    };
    let subsets = endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if subsets.is_empty() {
        return no_endpoints();
    }
    for subset in &subsets {
        let address = str_at(subset, "/addresses/0/ip");
        if address.is_empty() {
            continue;
        }
        let matching = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name);
        if let Some(p) = matching {
            let number = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            return unreachable(address, &number.to_string());
        }
    }
    no_endpoints()
}

/// The answer of a Node's `proxy` subresource when the Node exists: with no address
/// (`GetPreferredNodeAddress`) a plain 500, with an IP that is not global unicast 400
/// `address not allowed`, otherwise the kubelet is out of reach (503).
pub(crate) fn node_proxy_error(node: &Value, port: &str) -> ApiError {
    let (host, kubelet_port) = match kubelet_address(node) {
        Ok(address) => address,
        Err(error) => return error,
    };
    // `isProxyableHostname`: an address must be global unicast.
    if host.parse::<std::net::IpAddr>().is_ok() && global_unicast(&host).is_none() {
        return ApiError::bad_request("address not allowed");
    }
    let port = if port.is_empty() {
        kubelet_port.to_string()
    } else {
        port.to_string()
    };
    unreachable(&host, &port)
}

/// Where a Node's kubelet listens: its preferred address (`GetPreferredNodeAddress`:
/// hostname, internal DNS, internal IP, external DNS, external IP) and its kubelet port
/// (10250 unless `daemonEndpoints` says); the plain 500 kube-apiserver answers when the Node
/// has no address.
pub(crate) fn kubelet_address(node: &Value) -> Result<(String, i64), ApiError> {
    let addresses: Vec<&Value> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let preferred = [
        "Hostname",
        "InternalDNS",
        "InternalIP",
        "ExternalDNS",
        "ExternalIP",
    ]
    .iter()
    .find_map(|kind| {
        addresses
            .iter()
            .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
            .and_then(|a| a.get("address").and_then(Value::as_str))
    });
    let Some(host) = preferred else {
        let known: Vec<String> = addresses
            .iter()
            .map(|a| {
                format!(
                    "{{{} {}}}",
                    a.get("type").and_then(Value::as_str).unwrap_or(""),
                    a.get("address").and_then(Value::as_str).unwrap_or("")
                )
            })
            .collect();
        return Err(ApiError::new(
            StatusReason::Unknown,
            format!(
                "no preferred addresses found; known addresses: [{}]",
                known.join(" ")
            ),
        ));
    };
    let port = node
        .pointer("/status/daemonEndpoints/kubeletEndpoint/Port")
        .and_then(Value::as_i64)
        .filter(|p| *p > 0)
        .unwrap_or(10250);
    Ok((host.to_owned(), port))
}

/// `ip` if it parses as a global unicast address (`IsGlobalUnicast`), as the Pod proxy
/// requires.
fn global_unicast(ip: &str) -> Option<String> {
    let address: std::net::IpAddr = ip.parse().ok()?;
    let global = match address {
        std::net::IpAddr::V4(v4) => {
            !(v4.is_loopback()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_link_local())
        }
        std::net::IpAddr::V6(v6) => {
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
    };
    global.then(|| address.to_string())
}

/// The proxy's answer when its dial fails: there is no Pod or node network to reach.
fn unreachable(host: &str, port: &str) -> ApiError {
    let target = host_port(host, port);
    ApiError::new(
        StatusReason::ServiceUnavailable,
        format!(
            "error trying to reach service: dial tcp {target}: connect: no route to host (the test API server reaches no Pod or node network)"
        ),
    )
}

/// `host:port`, an IPv6 host in brackets (`net.JoinHostPort`).
fn host_port(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests;
