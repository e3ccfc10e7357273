//! What a real server's Service registry allocates: a cluster IP from the service range
//! (`10.96.0.0/12`; the lowest free address from `10.96.0.11`, where a real allocator picks
//! one at random: the `kubernetes` Service, which the server creates, holds `10.96.0.1`, and
//! a kubeadm cluster's DNS `10.96.0.10`), with `clusterIPs`,
//! `ipFamilies: [IPv4]` and `ipFamilyPolicy: SingleStack`, and node ports (the lowest free
//! one in 30000–32767) for NodePort and LoadBalancer Services. An address or a port asked
//! for is checked against the other Services' (`422`: "provided IP is already allocated").
//! An update keeps what was allocated where the new object leaves it out, as the real
//! registry does, so that `kubectl replace` or an apply that does not mention `clusterIP`
//! does not change it; a cluster IP it changes is refused (`422`: "may not change once
//! set"), as `validateUpgradeDowngradeClusterIPs` refuses it. What is allocated is read from
//! the stored Services, so deleting a Service frees its address and ports.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use super::status::FieldError;
use super::validation::go_string_slice;

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
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if kind == "ExternalName" {
        return Ok(());
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")) {
        normalize_cluster_ips(old_spec, spec);
        keep_allocated(old_spec, spec);
        let errors = cluster_ips_kept(old_spec, spec);
        if !errors.is_empty() {
            return Err(errors);
        }
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
    set_if_missing(spec, "ipFamilies", json!(["IPv4"]));
    set_if_missing(spec, "ipFamilyPolicy", json!("SingleStack"));
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
    let go_ips = go_string_slice(after.iter().copied());
    before
        .iter()
        .zip(&after)
        .enumerate()
        .filter(|(_, (b, a))| b != a)
        .map(|(i, _)| {
            FieldError::invalid_go(
                &format!("spec.clusterIPs[{i}]"),
                &go_ips,
                "may not change once set",
            )
        })
        .collect()
}

/// An update keeps the old cluster IPs, IP families and node ports where the new object
/// leaves them out (a port's by its number and protocol).
fn keep_allocated(old: &Value, new: &mut Map<String, Value>) {
    for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(value) = old.get(key) {
            set_if_missing(new, key, value.clone());
        }
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

#[cfg(test)]
mod tests;
