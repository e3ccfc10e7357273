//! What a real server does to a new Pod after decoding it and recording its creator's fields:
//! - the default admission plugins `Priority` (see [`admit_priority`]: the priority and
//!   preemption policy of its PriorityClass, or of the global default class, 0 without one;
//!   403 for a class that does not exist or a `priority` that is not its class's) and
//!   `DefaultTolerationSeconds` (tolerating `not-ready` and `unreachable` nodes for 300 s, on
//!   updates too);
//! - the Pod registry's strategy: its status starts over as `Pending`, with the QoS class of
//!   its resources (`k8s.io/kubernetes/pkg/apis/core/helper/qos`) and, while it has scheduling
//!   gates, the `PodScheduled=False` condition with reason `SchedulingGated`.
//!
//! (The `ServiceAccount` plugin is in `service_accounts.rs`, evictions in `eviction.rs`.)

use serde_json::{Map, Value, json};

use super::time::now_rfc3339;

/// The built-in PriorityClasses (`scheduling.SystemPriorityClasses`): name, value and
/// description; neither is the global default.
pub(crate) const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The highest value a PriorityClass not of the system's may have
/// (`scheduling.HighestUserDefinablePriority`).
pub(crate) const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

/// The `Priority` admission plugin on a new Pod: its `priorityClassName` names a stored
/// PriorityClass (found by `class`) whose value and preemption policy the Pod gets; without
/// a name, the global default class's (`default`: the globally default class with the highest
/// value), whose name it gets too, or priority 0. A `priority` or `preemptionPolicy` the
/// client sent that differs from the class's is refused (`Err`: why, for a 403), as is a
/// class that does not exist.
pub(crate) fn admit_priority(
    pod: &mut Value,
    class: impl Fn(&str) -> Option<Value>,
    default: Option<Value>,
) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let name = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let found = if name.is_empty() {
        default
    } else {
        Some(class(&name).ok_or_else(|| format!("no PriorityClass with name {name} was found"))?)
    };
    let (priority, policy) = match &found {
        Some(pc) => (
            pc.get("value").and_then(Value::as_i64).unwrap_or(0),
            pc.get("preemptionPolicy").and_then(Value::as_str),
        ),
        // `DefaultPriorityWhenNoDefaultClassExists`, preempting lower priorities.
        None => (0, Some("PreemptLowerPriority")),
    };
    if name.is_empty()
        && let Some(pc) = &found
    {
        let default_name = pc.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
        spec.insert("priorityClassName".into(), default_name);
    }
    if let Some(sent) = spec.get("priority").and_then(Value::as_i64)
        && sent != priority
    {
        return Err(format!(
            "the integer value of priority ({sent}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        ));
    }
    spec.insert("priority".into(), json!(priority));
    if let Some(policy) = policy {
        if let Some(sent) = spec.get("preemptionPolicy").and_then(Value::as_str)
            && sent != policy
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({sent}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            ));
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// The `Priority` admission plugin on a PriorityClass: at most one is the global default
/// (`others_default`: the name of another class marked so; `Err`: why, for a 403).
pub(crate) fn admit_priority_class(
    class: &Value,
    others_default: Option<&str>,
) -> Result<(), String> {
    let default = class.get("globalDefault").and_then(Value::as_bool) == Some(true);
    match others_default {
        Some(other) if default => Err(format!(
            "PriorityClass {other} is already marked as default. Only one default can exist"
        )),
        _ => Ok(()),
    }
}

/// How long a Pod stays bound to a node that is not ready or unreachable.
const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// The `ephemeralcontainers` subresource's rule: the ephemeral containers `old` has stay, as
/// they were (new ones may be added): a 422 `Forbidden` otherwise.
pub(crate) fn keep_ephemeral_containers(
    old: &Value,
    new: &Value,
) -> Result<(), super::status::ApiError> {
    let list = |pod: &Value| {
        pod.pointer("/spec/ephemeralContainers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let name_of = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (before, after) = (list(old), list(new));
    let pod = old
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    for (i, container) in before.iter().enumerate() {
        let name = name_of(container);
        let error = match after.iter().position(|c| name_of(c) == name) {
            None => super::status::FieldError::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers \"{name}\" may not be removed"),
            ),
            Some(j) if after[j] != *container => super::status::FieldError::forbidden(
                &format!("spec.ephemeralContainers[{i}]"),
                &format!("existing ephemeral containers \"{name}\" may not be changed"),
            ),
            Some(_) => continue,
        };
        return Err(super::status::ApiError::invalid_fields(
            "Pod",
            pod,
            vec![error],
        ));
    }
    Ok(())
}

/// Whether `t` is the Pod type.
pub(crate) fn is_pod(t: &super::resource::ResourceType) -> bool {
    t.group.is_empty() && t.plural == "pods"
}

/// What the `DefaultTolerationSeconds` admission plugin adds to a Pod's spec on create and
/// on update of the Pod proper (the `Priority` plugin's part, which reads the stored
/// PriorityClasses, is [`admit_priority`]).
pub(crate) fn admit_create(pod: &mut Value) {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(tolerations) = tolerations.as_array_mut() else {
        return;
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = tolerations.iter().any(|t| {
            let field = |name| t.get(name).and_then(Value::as_str).unwrap_or("");
            (field("key") == key || field("key").is_empty())
                && matches!(field("effect"), "NoExecute" | "")
        });
        if !tolerated {
            tolerations.push(json!({
                "key": key,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
            }));
        }
    }
}

/// The status a real server gives a Pod it creates, whatever status the client sent.
pub(crate) fn status_on_create(pod: &Value) -> Value {
    let mut status = Map::new();
    status.insert("phase".into(), json!("Pending"));
    let gated = pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|gates| !gates.is_empty());
    if gated {
        status.insert(
            "conditions".into(),
            json!([{
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": null,
                "lastTransitionTime": now_rfc3339(),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }]),
        );
    }
    status.insert("qosClass".into(), json!(qos_class(pod)));
    Value::Object(status)
}

/// A Pod's QoS class, from the requests and limits of its containers and init containers
/// (or of the pod itself, when `spec.resources` is set), CPU and memory only:
/// - `BestEffort` when nothing requests or limits either;
/// - `Guaranteed` when every container limits both, and the summed requests equal the summed
///   limits for each (requests default to limits before this runs);
/// - `Burstable` otherwise.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    let mut requests = Totals::default();
    let mut limits = Totals::default();
    let mut guaranteed = true;
    let mut count = |resources: &Value| {
        requests.add(resources.get("requests"));
        if limits.add(resources.get("limits")) != [true, true] {
            guaranteed = false;
        }
    };
    match pod.pointer("/spec/resources") {
        Some(resources) if resources.is_object() => count(resources),
        _ => {
            for key in ["containers", "initContainers"] {
                let containers = pod
                    .pointer(&format!("/spec/{key}"))
                    .and_then(Value::as_array);
                for container in containers.into_iter().flatten() {
                    count(container.get("resources").unwrap_or(&Value::Null));
                }
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let same = (0..2).all(|i| requests.0[i].is_none() || requests.0[i] == limits.0[i]);
    if guaranteed && same && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The positive CPU and memory amounts seen so far, in nano-units (`None`: none seen).
#[derive(Default)]
struct Totals([Option<i128>; 2]);

impl Totals {
    const NAMES: [&'static str; 2] = ["cpu", "memory"];

    /// Adds the positive CPU and memory amounts of a resource list; which of the two it had.
    fn add(&mut self, list: Option<&Value>) -> [bool; 2] {
        let mut found = [false; 2];
        for (i, name) in Self::NAMES.iter().enumerate() {
            let amount = list
                .and_then(|l| l.get(name))
                .and_then(quantity_nanos)
                .filter(|&n| n > 0);
            if let Some(amount) = amount {
                found[i] = true;
                self.0[i] = Some(self.0[i].unwrap_or(0).saturating_add(amount));
            }
        }
        found
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn len(&self) -> usize {
        self.0.iter().flatten().count()
    }
}

/// A resource quantity (`250m`, `1.5Gi`, `2e3`, `128974848`, or a JSON number) in
/// nano-units, rounded up as the API's quantities are; `None` when it does not parse.
pub(crate) fn quantity_nanos(value: &Value) -> Option<i128> {
    let text = match value {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    let digits_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(digits_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return None;
    }
    let (mut exp10, binary): (i32, u32) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exponent => {
            let exponent = exponent
                .strip_prefix('e')
                .or_else(|| exponent.strip_prefix('E'))?;
            (exponent.parse().ok()?, 0)
        }
    };
    // mantissa × 10^exp10 × 2^binary, in nano-units.
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let mut mantissa: i128 = if digits.is_empty() {
        0
    } else if digits.len() > 30 {
        return Some(if negative { i128::MIN } else { i128::MAX });
    } else {
        digits.parse().ok()?
    };
    exp10 += 9 - i32::try_from(fraction.len()).ok()?;
    mantissa = mantissa.saturating_mul(1i128.checked_shl(binary)?);
    let nanos = if exp10 >= 0 {
        10i128
            .checked_pow(u32::try_from(exp10).ok()?)
            .map_or(i128::MAX, |scale| mantissa.saturating_mul(scale))
    } else {
        match 10i128.checked_pow(exp10.unsigned_abs()) {
            Some(scale) => mantissa.saturating_add(scale - 1) / scale,
            None => i128::from(mantissa > 0),
        }
    };
    Some(if negative { -nanos } else { nanos })
}

#[cfg(test)]
mod tests;
