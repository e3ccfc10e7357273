//! What a real server's Service registry allocates: a cluster IP from the service range
//! (`10.96.0.0/12`; the lowest free address from `10.96.0.11`, where a real allocator picks
//! one at random: the `kubernetes` Service, which the server creates, holds `10.96.0.1`, and
//! a kubeadm cluster's DNS `10.96.0.10`), with `clusterIPs`,
//! `ipFamilies: [IPv4]` and `ipFamilyPolicy: SingleStack` (a headless Service without a
//! selector: `[IPv4, IPv6]` and `RequireDualStack`), and node ports (the lowest free
//! one in 30000–32767) for NodePort and LoadBalancer Services. An address or a port asked
//! for is checked against the other Services' (`422`: "provided IP is already allocated").
//! An update keeps what was allocated where the new object leaves it out, as the real
//! registry does, so that `kubectl replace` or an apply that does not mention `clusterIP`
//! does not change it; a cluster IP it changes is refused (`422`: "may not change once
//! set"), as `validateUpgradeDowngradeClusterIPs` refuses it. An update to another type
//! first drops what only the old type used ([`prepare_update`], the strategy's
//! `dropTypeDependentFields`: a NodePort Service patched to ClusterIP keeps no node ports).
//! What is allocated is read from the stored Services, so deleting a Service frees its
//! address and ports.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use super::status::FieldError;
use super::validation::json_string_slice;

/// The address of the `kubernetes` Service every cluster has (the range's first).
pub(crate) const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

/// The service range: `10.96.0.0/12`.
const RANGE_START: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const RANGE_SIZE: u32 = 1 << 20;
/// The first address handed out (offset in the range).
const FIRST_OFFSET: u32 = 11;
/// The node port range.
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30_000..=32_767;

/// The addresses and node ports the other Services hold.
#[derive(Default)]
pub(crate) struct Allocated {
    ips: HashSet<String>,
    node_ports: HashSet<i64>,
}

impl Allocated {
    /// What `services` (every stored Service but the one being written) hold.
    pub(crate) fn of<'a>(services: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut allocated = Self::default();
        for service in services {
            let Some(spec) = service.get("spec") else {
                continue;
            };
            for ip in spec
                .get("clusterIPs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .chain(spec.get("clusterIP"))
                .filter_map(Value::as_str)
            {
                allocated.ips.insert(ip.to_string());
            }
            for port in spec
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(n) = port.get("nodePort").and_then(Value::as_i64) {
                    allocated.node_ports.insert(n);
                }
            }
        }
        allocated
    }

    fn next_ip(&self) -> Option<String> {
        (FIRST_OFFSET..RANGE_SIZE - 1)
            .map(|offset| Ipv4Addr::from(RANGE_START + offset).to_string())
            .find(|ip| !self.ips.contains(ip))
    }

    fn next_node_port(&self) -> Option<i64> {
        NODE_PORTS.clone().find(|p| !self.node_ports.contains(p))
    }
}

/// `initIPFamilyFields` on this single-stack IPv4 cluster: a policy left out is
/// `SingleStack`, except for a headless Service without a selector, which is
/// `RequireDualStack` and (unless `SingleStack`) gets both families on any cluster; any other
/// Service asking for dual-stack or for IPv6 is refused.
fn init_ip_families(spec: &mut Map<String, Value>, errors: &mut Vec<FieldError>) {
    let headless_without_selector = spec.get("clusterIP").and_then(Value::as_str) == Some("None")
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    let policy = if headless_without_selector {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    set_if_missing(spec, "ipFamilyPolicy", json!(policy));
    let policy = spec
        .get("ipFamilyPolicy")
        .and_then(Value::as_str)
        .unwrap_or(policy)
        .to_string();
    if headless_without_selector {
        set_if_missing(spec, "ipFamilies", json!(["IPv4"]));
        if policy != "SingleStack"
            && let Some(Value::Array(families)) = spec.get_mut("ipFamilies")
            && families.len() < 2
        {
            let other = if families.first() == Some(&json!("IPv6")) {
                "IPv4"
            } else {
                "IPv6"
            };
            families.push(json!(other));
        }
        return;
    }
    if policy == "RequireDualStack" {
        errors.push(FieldError::invalid(
            "spec.ipFamilyPolicy",
            policy.as_str(),
            "this cluster is not configured for dual-stack services",
        ));
    }
    let families = spec.get("ipFamilies").and_then(Value::as_array);
    for (i, family) in families.into_iter().flatten().enumerate() {
        if family != "IPv4" {
            errors.push(FieldError::invalid(
                &format!("spec.ipFamilies[{i}]"),
                family.clone(),
                "not configured on this cluster",
            ));
        }
    }
    set_if_missing(spec, "ipFamilies", json!(["IPv4"]));
}

/// Allocates what `service` needs and has not got (keeping, on an update, what `old` was
/// given), or says which field asks for what another Service holds.
pub(crate) fn allocate(
    mut allocated: Allocated,
    old: Option<&Value>,
    service: &mut Value,
) -> Result<(), Vec<FieldError>> {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let kind = service_type(spec).to_string();
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        normalize_cluster_ips(old_spec, spec);
        if let Value::Object(old_spec) = old_spec {
            keep_allocated(old_spec, spec);
        }
        let errors = cluster_ips_kept(old_spec, spec);
        if !errors.is_empty() {
            return Err(errors);
        }
    }
    if kind == "ExternalName" {
        return Ok(());
    }
    let mut errors = Vec::new();
    let wanted = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ip = if wanted.is_empty() {
        match allocated.next_ip() {
            Some(ip) => ip,
            None => {
                errors.push(FieldError::invalid("spec.clusterIP", "", "range is full"));
                String::new()
            }
        }
    } else {
        if wanted != "None" && allocated.ips.contains(&wanted) {
            errors.push(FieldError::invalid(
                "spec.clusterIP",
                wanted.clone(),
                "provided IP is already allocated",
            ));
        }
        wanted
    };
    if !ip.is_empty() {
        spec.insert("clusterIP".into(), json!(ip));
        let ips = spec.entry("clusterIPs").or_insert_with(|| json!([]));
        if ips.as_array().is_none_or(Vec::is_empty) {
            *ips = json!([ip]);
        }
        allocated.ips.insert(ip);
    }
    init_ip_families(spec, &mut errors);
    let wants_node_ports = kind == "NodePort"
        || (kind == "LoadBalancer"
            && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if wants_node_ports {
        let ports = spec
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten();
        for (i, port) in ports.enumerate() {
            let Value::Object(port) = port else { continue };
            match port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) {
                0 => match allocated.next_node_port() {
                    Some(n) => {
                        port.insert("nodePort".into(), json!(n));
                        allocated.node_ports.insert(n);
                    }
                    None => errors.push(FieldError::invalid(
                        &format!("spec.ports[{i}].nodePort"),
                        0,
                        "range is full",
                    )),
                },
                n if !allocated.node_ports.insert(n) => errors.push(FieldError::invalid(
                    &format!("spec.ports[{i}].nodePort"),
                    n,
                    "provided port is already allocated",
                )),
                _ => {}
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Sets `key` if it is missing, null or an empty list.
fn set_if_missing(spec: &mut Map<String, Value>, key: &str, value: Value) {
    let missing = match spec.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    };
    if missing {
        spec.insert(key.to_string(), value);
    }
}

fn cluster_ips(spec: &Map<String, Value>) -> Vec<&str> {
    spec.get("clusterIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The registry's `normalizeClusterIPs`: an update that changes or clears `clusterIP` and
/// leaves `clusterIPs` as they were changes or clears them too.
fn normalize_cluster_ips(old: &Value, new: &mut Map<String, Value>) {
    let Value::Object(old) = old else { return };
    let old_ip = old.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    let old_ips = cluster_ips(old);
    if old_ip.is_empty() || old_ips.first() != Some(&old_ip) {
        return;
    }
    if cluster_ips(new) != old_ips {
        return;
    }
    match new.get("clusterIP").and_then(Value::as_str).unwrap_or("") {
        "" => {
            new.remove("clusterIPs");
        }
        ip if ip != old_ip => {
            let ip = json!(ip);
            if let Some(Value::Array(ips)) = new.get_mut("clusterIPs") {
                ips[0] = ip;
            }
        }
        _ => {}
    }
}

/// `validateUpgradeDowngradeClusterIPs`: a cluster IP, once set, stays (a second family may
/// be added or removed; a headless Service stays headless).
fn cluster_ips_kept(old: &Value, new: &Map<String, Value>) -> Vec<FieldError> {
    let Value::Object(old) = old else {
        return Vec::new();
    };
    let external = |spec: &Map<String, Value>| {
        spec.get("type").and_then(Value::as_str) == Some("ExternalName")
    };
    let headless =
        |spec: &Map<String, Value>| spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    if external(old) || external(new) || (headless(old) && headless(new)) {
        return Vec::new();
    }
    let (before, after) = (cluster_ips(old), cluster_ips(new));
    if before.len() != after.len() {
        return Vec::new();
    }
    // `field.Invalid(.., service.Spec.ClusterIPs, ..)`: the `[]string` as JSON.
    let json_ips = json_string_slice(after.iter().copied());
    before
        .iter()
        .zip(&after)
        .enumerate()
        .filter(|(_, (b, a))| b != a)
        .map(|(i, _)| {
            FieldError::invalid_go(
                &format!("spec.clusterIPs[{i}]"),
                &json_ips,
                "may not change once set",
            )
        })
        .collect()
}

/// An update keeps the old cluster IPs, IP families and node ports where the new object
/// leaves them out (a port's by its number and protocol), when the old and the new type
/// both use them (`patchAllocatedValues`).
fn keep_allocated(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    if !needs_cluster_ip(old) || !needs_cluster_ip(new) {
        return;
    }
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(value) = old.get(key) {
            set_if_missing(new, key, value.clone());
        }
    }
    if !needs_node_port(old) || !needs_node_port(new) {
        return;
    }
    let old_ports: Vec<&Value> = old
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    for port in new
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            continue;
        }
        let same = old_ports.iter().find(|o| {
            o.get("port") == port.get("port")
                && o.get("protocol").unwrap_or(&json!("TCP"))
                    == port.get("protocol").unwrap_or(&json!("TCP"))
        });
        if let Some(node_port) = same.and_then(|o| o.get("nodePort"))
            && let Value::Object(port) = port
        {
            port.insert("nodePort".into(), node_port.clone());
        }
    }
}

/// A Service's `spec.type` (`ClusterIP` when left out).
pub(crate) fn service_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

fn needs_cluster_ip(spec: &Map<String, Value>) -> bool {
    service_type(spec) != "ExternalName"
}

fn needs_node_port(spec: &Map<String, Value>) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

fn needs_health_check_node_port(spec: &Map<String, Value>) -> bool {
    service_type(spec) == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
}

/// `ExternallyAccessible`: a NodePort or LoadBalancer Service, or a ClusterIP one with
/// external IPs.
fn externally_accessible(spec: &Map<String, Value>) -> bool {
    needs_node_port(spec)
        || (service_type(spec) == "ClusterIP"
            && spec
                .get("externalIPs")
                .and_then(Value::as_array)
                .is_some_and(|ips| !ips.is_empty()))
}

/// Whether `key` is the same in both specs, an absent, `null`, empty string or empty list
/// value being the same as another.
fn same(old: &Map<String, Value>, new: &Map<String, Value>, key: &str) -> bool {
    let value = |spec: &Map<String, Value>| match spec.get(key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(v) => Some(v.clone()),
    };
    value(old) == value(new)
}

fn node_ports(spec: &Map<String, Value>) -> HashSet<i64> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
        .filter(|n| *n != 0)
        .collect()
}

/// The Service strategy's `dropTypeDependentFields`: an update to a type that does not use
/// what the old type had allocated or defaulted drops it, unless the update changed it (then
/// validation judges it): cluster IPs, IP families and policy (to `ExternalName`), node ports
/// (no longer NodePort or LoadBalancer, and no new one), the health check node port,
/// `allocateLoadBalancerNodePorts` and `loadBalancerClass` (no longer a LoadBalancer),
/// `externalTrafficPolicy` (no longer externally accessible). So `kubectl patch svc -p
/// '{"spec":{"type":"ClusterIP"}}'` of a NodePort Service leaves no node ports.
fn drop_type_dependent_fields(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    if needs_cluster_ip(old) && !needs_cluster_ip(new) {
        if same(old, new, "clusterIP") && same(old, new, "clusterIPs") {
            new.remove("clusterIP");
            new.remove("clusterIPs");
        }
        for key in ["ipFamilies", "ipFamilyPolicy"] {
            if same(old, new, key) {
                new.remove(key);
            }
        }
    }
    if needs_node_port(old)
        && !needs_node_port(new)
        && node_ports(old).is_superset(&node_ports(new))
    {
        for port in new
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Value::Object(port) = port {
                port.remove("nodePort");
            }
        }
    }
    if needs_health_check_node_port(old)
        && !needs_health_check_node_port(new)
        && same(old, new, "healthCheckNodePort")
    {
        new.remove("healthCheckNodePort");
    }
    let load_balancer = |spec: &Map<String, Value>| service_type(spec) == "LoadBalancer";
    if load_balancer(old) && !load_balancer(new) {
        let key = "allocateLoadBalancerNodePorts";
        if old.get(key).is_some_and(Value::is_boolean) && old.get(key) == new.get(key) {
            new.remove(key);
        }
        if same(old, new, "loadBalancerClass") {
            new.remove("loadBalancerClass");
        }
    }
    if externally_accessible(old)
        && !externally_accessible(new)
        && same(old, new, "externalTrafficPolicy")
    {
        new.remove("externalTrafficPolicy");
    }
}

/// The Service strategy's `PrepareForUpdate` of an update (before validation): what the new
/// type does not use goes ([`drop_type_dependent_fields`]), and the load balancer status of a
/// Service that stops being a LoadBalancer.
pub(crate) fn prepare_update(old: &Value, new: &mut Value) {
    drop_load_balancer_status(old, new);
    if let (Some(Value::Object(old_spec)), Some(Value::Object(new_spec))) =
        (old.get("spec"), new.get_mut("spec"))
    {
        drop_type_dependent_fields(old_spec, new_spec);
    }
}

/// The rest of `dropTypeDependentFields`: a Service that stops being a LoadBalancer loses
/// its load balancer status.
fn drop_load_balancer_status(old: &Value, service: &mut Value) {
    let load_balancer =
        |s: &Value| s.pointer("/spec/type").and_then(Value::as_str) == Some("LoadBalancer");
    if load_balancer(old)
        && !load_balancer(service)
        && let Some(Value::Object(status)) = service.get_mut("status")
        && status.contains_key("loadBalancer")
    {
        status.insert("loadBalancer".into(), json!({}));
    }
}

#[cfg(test)]
mod tests;
