//! The columns and cells of the kinds served beside those of [`super::printers`]:
//! ReplicationControllers, PodTemplates, Endpoints, PersistentVolumes, ResourceQuotas,
//! LimitRanges, ControllerRevisions, EndpointSlices, NetworkPolicies, IngressClasses,
//! HorizontalPodAutoscalers, StorageClasses, PriorityClasses and the admission configurations
//! (webhook configurations, policies and their bindings), as kube-apiserver's printers
//! (`pkg/printers/internalversion`) make them (LimitRanges, which have no printer, and
//! CustomResourceDefinitions, whose storage uses it, as the default table convertor does:
//! `Name` and `Created At`).

use serde_json::{Value, json};

use super::super::resource::ADMISSION;
use super::{
    AGE_DESCRIPTION, Workload, column, int_at, selector_text, str_at, template_columns, typed,
};

/// The columns of `group`/`kind` between `name` and the end, or `None` for a kind not here.
pub(super) fn columns(group: &str, kind: &str, name: Value, age: Value) -> Option<Vec<Value>> {
    let int = |name: &str, description: &str| typed(name, "integer", 0, description);
    Some(match (group, kind) {
        ("", "ReplicationController") => [
            name,
            int("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1."),
            int("Current", "Replicas is the most recently observed number of replicas."),
            int("Ready", "The number of ready replicas for this replication controller."),
            age,
        ]
        .into_iter()
        .chain(template_columns(Some("Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template.")))
        .collect(),
        ("", "PodTemplate") => vec![
            name,
            column("Containers", "", "Names of each container in the template."),
            column("Images", "", "Images referenced by each container in the template."),
            column("Pod Labels", "", "The labels for the pod template."),
        ],
        ("", "Endpoints") => vec![
            name,
            column("Endpoints", "", "The set of all endpoints is the union of all subsets."),
            age,
        ],
        ("", "PersistentVolume") => vec![
            name,
            column("Capacity", "", "capacity is the description of the persistent volume's resources and capacity."),
            column("Access Modes", "", "accessModes contains all ways the volume can be mounted."),
            column("Reclaim Policy", "", "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim."),
            column("Status", "", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
            column("Claim", "", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
            column("StorageClass", "", "StorageClass of the pv"),
            column("VolumeAttributesClass", "", "VolumeAttributesClass of the pv"),
            column("Reason", "", "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI."),
            age,
            typed("VolumeMode", "string", 1, "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state."),
        ],
        ("", "ResourceQuota") => vec![
            name,
            column("Request", "", "Request represents a minimum amount of cpu/memory that a container may consume."),
            column("Limit", "", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
            age,
        ],
        ("", "LimitRange") | ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            vec![name, typed("Created At", "date", 0, AGE_DESCRIPTION)]
        }
        ("apps", "ControllerRevision") => vec![
            name,
            column("Controller", "", "Controller of the object"),
            column("Revision", "", "Revision indicates the revision of the state represented by Data."),
            age,
        ],
        ("discovery.k8s.io", "EndpointSlice") => vec![
            name,
            column("AddressType", "", "addressType specifies the type of address carried by this EndpointSlice."),
            column("Ports", "", "ports specifies the list of network ports exposed by each endpoint in this slice."),
            column("Endpoints", "", "endpoints is a list of unique endpoints in this slice."),
            age,
        ],
        ("networking.k8s.io", "NetworkPolicy") => vec![
            name,
            column("Pod-Selector", "", "podSelector selects the pods to which this NetworkPolicy object applies."),
            age,
        ],
        ("networking.k8s.io", "IngressClass") => vec![
            name,
            column("Controller", "", "Controller that is responsible for handling this class"),
            column("Parameters", "", "A reference to a resource with additional parameters"),
            age,
        ],
        ("autoscaling", "HorizontalPodAutoscaler") => vec![
            name,
            column("Reference", "", "scaleTargetRef points to the target resource to scale."),
            column("Targets", "", "metrics contains the specifications for which to use to calculate the desired replica count."),
            column("MinPods", "", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."),
            column("MaxPods", "", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."),
            column("Replicas", "", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
            age,
        ],
        ("storage.k8s.io", "StorageClass") => vec![
            name,
            column("Provisioner", "", "provisioner indicates the type of the provisioner."),
            column("ReclaimPolicy", "", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete."),
            column("VolumeBindingMode", "", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound."),
            column("AllowVolumeExpansion", "", "allowVolumeExpansion shows whether the storage class allow volume expand."),
            age,
        ],
        ("scheduling.k8s.io", "PriorityClass") => vec![
            name,
            int("Value", "value represents the integer value of this priority class."),
            typed("Global-Default", "boolean", 0, "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class."),
            age,
            column("PreemptionPolicy", "", "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset."),
        ],
        (ADMISSION, "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => vec![
            name,
            int("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration"),
            age,
        ],
        (ADMISSION, "ValidatingAdmissionPolicy") => vec![
            name,
            int("Validations", "Validations indicates the number of validation rules defined in this configuration"),
            column("ParamKind", "", "ParamKind specifies the kind of resources used to parameterize this policy"),
            age,
        ],
        (ADMISSION, "ValidatingAdmissionPolicyBinding") => vec![
            name,
            column("PolicyName", "", "PolicyName indicates the policy definition which the policy binding binded to"),
            column("ParamRef", "", "ParamRef indicates the param resource which sets the configration param"),
            age,
        ],
        _ => return None,
    })
}

/// The cells of `object` of `group`/`kind`, or `None` for a kind not here.
pub(super) fn cells(
    group: &str,
    kind: &str,
    object: &Value,
    name: Value,
    age: Value,
) -> Option<Vec<Value>> {
    let text = |pointer: &str| str_at(object, pointer);
    Some(match (group, kind) {
        ("", "ReplicationController") => {
            let w = Workload::at(object, "/spec/template");
            vec![
                name,
                json!(w.desired),
                json!(int_at(object, "/status/replicas")),
                json!(w.ready),
                age,
                w.containers,
                w.images,
                json!(labels_text(object.pointer("/spec/selector"))),
            ]
        }
        ("", "PodTemplate") => {
            let w = Workload::at(object, "/template");
            vec![
                name,
                w.containers,
                w.images,
                json!(labels_text(object.pointer("/template/metadata/labels"))),
            ]
        }
        ("", "Endpoints") => vec![name, json!(endpoints_text(object)), age],
        ("", "PersistentVolume") => {
            let phase = if object
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
            {
                "Terminating"
            } else {
                text("/status/phase")
            };
            let claim = match object.pointer("/spec/claimRef") {
                Some(Value::Object(claim)) => format!(
                    "{}/{}",
                    claim.get("namespace").and_then(Value::as_str).unwrap_or(""),
                    claim.get("name").and_then(Value::as_str).unwrap_or("")
                ),
                _ => String::new(),
            };
            let class = object
                .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                .and_then(Value::as_str)
                .unwrap_or_else(|| text("/spec/storageClassName"));
            let or_unset = |pointer: &str| {
                object
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or("<unset>")
                    .to_string()
            };
            vec![
                name,
                json!(quantity_or_zero(object.pointer("/spec/capacity/storage"))),
                json!(super::printers::access_modes_at(
                    object,
                    "/spec/accessModes"
                )),
                json!(text("/spec/persistentVolumeReclaimPolicy")),
                json!(phase),
                json!(claim),
                json!(class),
                json!(or_unset("/spec/volumeAttributesClassName")),
                json!(text("/status/reason")),
                age,
                json!(or_unset("/spec/volumeMode")),
            ]
        }
        ("", "ResourceQuota") => {
            let (requests, limits) = quota_text(object);
            vec![name, json!(requests), json!(limits), age]
        }
        ("", "LimitRange") | ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            vec![name, json!(text("/metadata/creationTimestamp"))]
        }
        ("apps", "ControllerRevision") => {
            let controller = object
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|owner| owner["controller"] == true)
                .map_or_else(
                    || "<none>".to_string(),
                    |owner| {
                        let kind = owner["kind"].as_str().unwrap_or("");
                        let api_version = owner["apiVersion"].as_str().unwrap_or("");
                        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                        let name = owner["name"].as_str().unwrap_or("");
                        match (kind, group) {
                            ("", "") => name.to_string(),
                            (kind, "") => format!("{}/{name}", kind.to_lowercase()),
                            (kind, group) => format!("{}.{group}/{name}", kind.to_lowercase()),
                        }
                    },
                );
            vec![
                name,
                json!(controller),
                json!(int_at(object, "/revision")),
                age,
            ]
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            let ports: Vec<String> = object
                .pointer("/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|port| match (port.get("port"), port.get("name")) {
                    (Some(Value::Number(n)), _) => n.to_string(),
                    (_, Some(Value::String(name))) => name.clone(),
                    _ => "*".to_string(),
                })
                .collect();
            let addresses: Vec<String> = object
                .pointer("/endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|endpoint| {
                    endpoint["addresses"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            vec![
                name,
                json!(text("/addressType")),
                json!(list_with_more(ports, 3)),
                json!(list_with_more(addresses, 3)),
                age,
            ]
        }
        ("networking.k8s.io", "NetworkPolicy") => vec![
            name,
            json!(selector_text(Some(
                object.pointer("/spec/podSelector").unwrap_or(&json!({}))
            ))),
            age,
        ],
        ("networking.k8s.io", "IngressClass") => {
            let parameters = match object.pointer("/spec/parameters") {
                Some(Value::Object(p)) => {
                    let field = |key: &str| p.get(key).and_then(Value::as_str);
                    let mut text = field("kind").unwrap_or("").to_string();
                    if let Some(group) = field("apiGroup") {
                        text = format!("{text}.{group}");
                    }
                    format!("{text}/{}", field("name").unwrap_or(""))
                }
                _ => "<none>".to_string(),
            };
            vec![
                name,
                json!(text("/spec/controller")),
                json!(parameters),
                age,
            ]
        }
        ("autoscaling", "HorizontalPodAutoscaler") => {
            let reference = format!(
                "{}/{}",
                text("/spec/scaleTargetRef/kind"),
                text("/spec/scaleTargetRef/name")
            );
            let min = object
                .pointer("/spec/minReplicas")
                .and_then(Value::as_i64)
                .map_or_else(|| "<unset>".to_string(), |n| n.to_string());
            vec![
                name,
                json!(reference),
                json!(hpa_metrics(object)),
                json!(min),
                json!(int_at(object, "/spec/maxReplicas")),
                json!(int_at(object, "/status/currentReplicas")),
                age,
            ]
        }
        ("storage.k8s.io", "StorageClass") => {
            let default = [
                "storageclass.kubernetes.io",
                "storageclass.beta.kubernetes.io",
            ]
            .iter()
            .any(|prefix| {
                object
                    .pointer(&format!("/metadata/annotations/{prefix}~1is-default-class"))
                    .and_then(Value::as_str)
                    == Some("true")
            });
            let name = match (name, default) {
                (Value::String(name), true) => json!(format!("{name} (default)")),
                (name, _) => name,
            };
            let or = |pointer: &str, default: &str| {
                object
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or(default)
                    .to_string()
            };
            vec![
                name,
                json!(text("/provisioner")),
                json!(or("/reclaimPolicy", "Delete")),
                json!(or("/volumeBindingMode", "Immediate")),
                json!(
                    object
                        .pointer("/allowVolumeExpansion")
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                ),
                age,
            ]
        }
        ("scheduling.k8s.io", "PriorityClass") => vec![
            name,
            json!(int_at(object, "/value")),
            json!(
                object
                    .pointer("/globalDefault")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            ),
            age,
            json!(text("/preemptionPolicy")),
        ],
        (ADMISSION, "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => {
            vec![name, json!(len_at(object, "/webhooks")), age]
        }
        (ADMISSION, "ValidatingAdmissionPolicy") => {
            let param_kind = match object.pointer("/spec/paramKind") {
                Some(kind) if kind.is_object() => {
                    format!("{}/{}", str_at(kind, "/apiVersion"), str_at(kind, "/kind"))
                }
                _ => "<unset>".to_string(),
            };
            vec![
                name,
                json!(len_at(object, "/spec/validations")),
                json!(param_kind),
                age,
            ]
        }
        (ADMISSION, "ValidatingAdmissionPolicyBinding") => vec![
            name,
            json!(text("/spec/policyName")),
            json!(param_ref(object.pointer("/spec/paramRef"))),
            age,
        ],
        _ => return None,
    })
}

/// A map of labels as `labels.FormatLabels` prints it (`a=1,b=2`, sorted; `<none>`).
fn labels_text(labels: Option<&Value>) -> String {
    let selector = labels.map(|labels| json!({ "matchLabels": labels }));
    selector_text(selector.as_ref())
}

/// A quantity as stored, `0` (Go's zero `Quantity`) if absent.
fn quantity_or_zero(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// The first `max` items comma-separated, then `+ N more...`; `<unset>` for none
/// (`listWithMoreString`).
fn list_with_more(items: Vec<String>, max: usize) -> String {
    if items.len() > max {
        format!("{} + {} more...", items[..max].join(","), items.len() - max)
    } else if items.is_empty() {
        "<unset>".to_string()
    } else {
        items.join(",")
    }
}

/// An Endpoints' addresses (`ip:port` for each port of a subset, the IPs alone for a subset
/// without ports), the first three then `+ N more...`; `<none>` without subsets.
fn endpoints_text(object: &Value) -> String {
    let subsets = object
        .pointer("/subsets")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list = Vec::new();
    let mut count = 0;
    for subset in subsets {
        let addresses: Vec<&str> = subset["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a["ip"].as_str().unwrap_or(""))
            .collect();
        let ports = subset["ports"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if ports.is_empty() {
            count += addresses.len();
            list.extend(addresses.iter().map(|ip| ip.to_string()));
            continue;
        }
        for port in ports {
            count += addresses.len();
            let number = int_at(port, "/port");
            list.extend(addresses.iter().map(|ip| {
                if ip.contains(':') {
                    format!("[{ip}]:{number}")
                } else {
                    format!("{ip}:{number}")
                }
            }));
        }
    }
    if count > 3 {
        format!("{} + {} more...", list[..3].join(","), count - 3)
    } else {
        list.join(",")
    }
}

/// A ResourceQuota's `Request` and `Limit` cells: `name: used/hard` for each resource of
/// `status.hard` (sorted), those named `limits.*` in the second.
fn quota_text(object: &Value) -> (String, String) {
    let hard = object
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for resource in names {
        let used = quantity_or_zero(object.pointer(&format!(
            "/status/used/{}",
            resource.replace('~', "~0").replace('/', "~1")
        )));
        let entry = format!(
            "{resource}: {used}/{}",
            quantity_or_zero(hard.get(resource))
        );
        let pieces: Vec<&str> = resource.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    (requests.join(", "), limits.join(", "))
}

/// A HorizontalPodAutoscaler's `Targets` cell (`formatHPAMetrics`): each metric as
/// `current/target`, the first two then `+ N more...`; `<none>` without metrics.
fn hpa_metrics(object: &Value) -> String {
    let specs = object
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = object
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let quantity = |value: Option<&Value>| match value {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        // The status of this metric's source, if the autoscaler reported it.
        let current = |source: &str| {
            statuses
                .get(i)
                .and_then(|s| s.get(source))
                .filter(|s| s.is_object())
        };
        let current_value = |source: &str, field: &str| {
            current(source)
                .and_then(|s| quantity(s.pointer(&format!("/current/{field}"))))
                .unwrap_or_else(|| "<unknown>".to_string())
        };
        let target = |source: &str, field: &str| {
            quantity(spec.pointer(&format!("/{source}/target/{field}"))).unwrap_or_default()
        };
        let has_average = |source: &str| {
            spec.pointer(&format!("/{source}/target/averageValue"))
                .is_some_and(|v| !v.is_null())
        };
        let text = match spec["type"].as_str().unwrap_or("") {
            kind @ ("External" | "Object") => {
                let source = if kind == "External" {
                    "external"
                } else {
                    "object"
                };
                if has_average(source) {
                    format!(
                        "{}/{} (avg)",
                        current_value(source, "averageValue"),
                        target(source, "averageValue")
                    )
                } else {
                    format!(
                        "{}/{}",
                        current_value(source, "value"),
                        target(source, "value")
                    )
                }
            }
            "Pods" => format!(
                "{}/{}",
                current_value("pods", "averageValue"),
                target("pods", "averageValue")
            ),
            kind @ ("Resource" | "ContainerResource") => {
                let source = if kind == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let resource = spec
                    .pointer(&format!("/{source}/name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if has_average(source) {
                    format!(
                        "{resource}: {}/{}",
                        current_value(source, "averageValue"),
                        target(source, "averageValue")
                    )
                } else {
                    let current = current(source)
                        .and_then(|s| s.pointer("/current/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<unknown>".to_string(), |n| format!("{n}%"));
                    let target = spec
                        .pointer(&format!("/{source}/target/averageUtilization"))
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<auto>".to_string(), |n| format!("{n}%"));
                    format!("{resource}: {current}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(text);
    }
    let count = list.len();
    if count > 2 {
        format!("{} + {} more...", list[..2].join(", "), count - 2)
    } else {
        list.join(", ")
    }
}

/// The length of the list at `pointer` (0 when absent).
fn len_at(object: &Value, pointer: &str) -> usize {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// A binding's `paramRef` as its printer shows it: `namespace/name`, `*/name` without a
/// namespace, the selector as its generated `String()` writes it, or `<unset>`.
fn param_ref(reference: Option<&Value>) -> String {
    let Some(reference) = reference.filter(|r| r.is_object()) else {
        return "<unset>".to_string();
    };
    let name = str_at(reference, "/name");
    let namespace = str_at(reference, "/namespace");
    match reference.get("selector").filter(|s| s.is_object()) {
        _ if !name.is_empty() && !namespace.is_empty() => format!("{namespace}/{name}"),
        _ if !name.is_empty() => format!("*/{name}"),
        Some(selector) => go_selector_string(selector),
        None => "<unset>".to_string(),
    }
}

/// `(*metav1.LabelSelector).String()`, as gogo-protobuf generates it.
fn go_selector_string(selector: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by_key(|(k, _)| *k);
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let expressions: String = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_at(e, "/key"),
                str_at(e, "/operator"),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}
