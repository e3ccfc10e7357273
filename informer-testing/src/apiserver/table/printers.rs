//! The columns and cells of the kinds served beside the core workloads: ServiceAccounts,
//! PersistentVolumeClaims, Nodes, DaemonSets, Jobs, CronJobs, the RBAC kinds, Ingresses and
//! PodDisruptionBudgets, as kube-apiserver's printers (`pkg/printers/internalversion`) make
//! them.

use serde_json::{Value, json};

use super::{
    Workload, array_len_at, column, int_at, joined_or_none, selector_text, since, str_at,
    template_columns, typed,
};

/// The columns of `group`/`kind` between `name` and the end, or `None` for a kind not here.
pub(super) fn columns(group: &str, kind: &str, name: Value, age: Value) -> Option<Vec<Value>> {
    let wide = |selector| template_columns(Some(selector));
    let int = |name: &str, description: &str| typed(name, "integer", 0, description);
    Some(match (group, kind) {
        ("", "ServiceAccount") => vec![
            name,
            int("Secrets", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use."),
            age,
        ],
        ("", "PersistentVolumeClaim") => vec![
            name,
            column("Status", "", "Phase represents the current phase of PersistentVolumeClaim."),
            column("Volume", "", "VolumeName is the binding reference to the PersistentVolume backing this claim."),
            column("Capacity", "", "Capacity represents the actual resources of the underlying volume."),
            column("Access Modes", "", "AccessModes contains the desired access modes the volume should have."),
            column("StorageClass", "", "StorageClassName is the name of the StorageClass required by the claim."),
            column("VolumeAttributesClass", "", "VolumeAttributesClassName may be used to set the VolumeAttributesClass used by this claim."),
            age,
            typed("VolumeMode", "string", 1, "VolumeMode defines what type of volume is required by the claim."),
        ],
        ("", "Node") => vec![
            name,
            column("Status", "", "The status of the node"),
            column("Roles", "", "The roles of the node"),
            age,
            column("Version", "", "Kubelet Version reported by the node."),
            typed("Internal-IP", "string", 1, "List of addresses reachable to the node. Queried from cloud provider, if available."),
            typed("External-IP", "string", 1, "List of addresses reachable to the node. Queried from cloud provider, if available."),
            typed("OS-Image", "string", 1, "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
            typed("Kernel-Version", "string", 1, "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
            typed("Container-Runtime", "string", 1, "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
        ],
        ("apps", "DaemonSet") => [
            name,
            int("Desired", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod)."),
            int("Current", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod."),
            int("Ready", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition."),
            int("Up-to-date", "The total number of nodes that are running updated daemon pod"),
            int("Available", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)"),
            column("Node Selector", "", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node."),
            age,
        ]
        .into_iter()
        .chain(wide("A label query over pods that are managed by the daemon set."))
        .collect(),
        ("batch", "Job") => [
            name,
            column("Status", "", "Status of the job."),
            column("Completions", "", "The completed job pods and the desired completions."),
            column("Duration", "", "Time required to complete the job."),
            age,
        ]
        .into_iter()
        .chain(wide("A label query over pods that should match the pod count."))
        .collect(),
        ("batch", "CronJob") => [
            name,
            column("Schedule", "", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
            column("Timezone", "", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
            typed("Suspend", "boolean", 0, "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false."),
            int("Active", "A list of pointers to currently running jobs."),
            column("Last Schedule", "", "Information when was the last time the job was successfully scheduled."),
            age,
        ]
        .into_iter()
        .chain(wide("A label query over pods that should match the pod count."))
        .collect(),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => vec![
            name,
            column("Created At", "", "CreationTimestamp is a timestamp representing the server time when this object was created."),
        ],
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => vec![
            name,
            column("Role", "", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace."),
            age,
            typed("Users", "string", 1, "Users in the roleBinding"),
            typed("Groups", "string", 1, "Groups in the roleBinding"),
            typed("ServiceAccounts", "string", 1, "ServiceAccounts in the roleBinding"),
        ],
        ("networking.k8s.io", "Ingress") => vec![
            name,
            column("Class", "", "The name of the IngressClass cluster resource."),
            column("Hosts", "", "Hosts that incoming requests are matched against before the ingress rule"),
            column("Address", "", "Address is a list containing ingress points for the load-balancer"),
            column("Ports", "", "Ports of TLS configurations that open"),
            age,
        ],
        ("policy", "PodDisruptionBudget") => vec![
            name,
            column("Min Available", "", "The minimum number of pods that must be available simultaneously.  This can be either an integer or a string specifying a percentage, e.g. \"28%\"."),
            column("Max Unavailable", "", "The maximum number of pods that may be unavailable simultaneously.  This can be either an integer or a string specifying a percentage, e.g. \"28%\"."),
            int("Allowed Disruptions", "Calculated number of pods that may be disrupted at this time."),
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
    let deleting = object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    Some(match (group, kind) {
        ("", "ServiceAccount") => {
            let secrets = array_len_at(object, "/secrets");
            vec![name, json!(secrets), age]
        }
        ("", "PersistentVolumeClaim") => {
            let phase = if deleting {
                "Terminating"
            } else {
                text("/status/phase")
            };
            let volume = text("/spec/volumeName");
            let (capacity, modes) = if volume.is_empty() {
                (String::new(), String::new())
            } else {
                (
                    quantity_text(object.pointer("/status/capacity/storage")),
                    access_modes(object),
                )
            };
            let class = object
                .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                .and_then(Value::as_str)
                .unwrap_or_else(|| text("/spec/storageClassName"));
            let or_unset = |value: &str| {
                if value.is_empty() {
                    "<unset>".to_string()
                } else {
                    value.to_string()
                }
            };
            vec![
                name,
                json!(phase),
                json!(volume),
                json!(capacity),
                json!(modes),
                json!(class),
                json!(or_unset(text("/spec/volumeAttributesClassName"))),
                age,
                json!(or_unset(text("/spec/volumeMode"))),
            ]
        }
        ("", "Node") => node_cells(object, name, age),
        ("apps", "DaemonSet") => {
            let w = Workload::at(object, "/spec/template");
            let node_selector = object
                .pointer("/spec/template/spec/nodeSelector")
                .and_then(Value::as_object)
                .map(|labels| {
                    let mut pairs: Vec<String> = labels
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect();
                    pairs.sort();
                    joined_or_none(pairs)
                })
                .unwrap_or_else(|| "<none>".to_string());
            vec![
                name,
                json!(int_at(object, "/status/desiredNumberScheduled")),
                json!(int_at(object, "/status/currentNumberScheduled")),
                json!(int_at(object, "/status/numberReady")),
                json!(int_at(object, "/status/updatedNumberScheduled")),
                json!(int_at(object, "/status/numberAvailable")),
                json!(node_selector),
                age,
                w.containers,
                w.images,
                w.selector,
            ]
        }
        ("batch", "Job") => {
            let w = Workload::at(object, "/spec/template");
            vec![
                name,
                json!(job_status(object, deleting)),
                json!(job_completions(object)),
                json!(job_duration(object)),
                age,
                w.containers,
                w.images,
                w.selector,
            ]
        }
        ("batch", "CronJob") => {
            let w = Workload::at(object, "/spec/jobTemplate/spec/template");
            let time_zone = object
                .pointer("/spec/timeZone")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            let suspend = match object.pointer("/spec/suspend").and_then(Value::as_bool) {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            };
            let active = array_len_at(object, "/status/active");
            let last = object
                .pointer("/status/lastScheduleTime")
                .and_then(Value::as_str)
                .and_then(since)
                .unwrap_or_else(|| "<none>".to_string());
            vec![
                name,
                json!(text("/spec/schedule")),
                json!(time_zone),
                json!(suspend),
                json!(active),
                json!(last),
                age,
                w.containers,
                w.images,
                json!(selector_text(
                    object.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole") => {
            vec![name, json!(text("/metadata/creationTimestamp"))]
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            let role = format!("{}/{}", text("/roleRef/kind"), text("/roleRef/name"));
            let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
            for subject in object
                .pointer("/subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let field = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or("");
                match field("kind") {
                    "User" => users.push(field("name").to_string()),
                    "Group" => groups.push(field("name").to_string()),
                    "ServiceAccount" => {
                        accounts.push(format!("{}/{}", field("namespace"), field("name")))
                    }
                    _ => {}
                }
            }
            vec![
                name,
                json!(role),
                age,
                json!(users.join(", ")),
                json!(groups.join(", ")),
                json!(accounts.join(", ")),
            ]
        }
        ("networking.k8s.io", "Ingress") => {
            let class = object
                .pointer("/spec/ingressClassName")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            let ports = if object
                .pointer("/spec/tls")
                .and_then(Value::as_array)
                .is_some_and(|tls| !tls.is_empty())
            {
                "80, 443"
            } else {
                "80"
            };
            vec![
                name,
                json!(class),
                json!(ingress_hosts(object)),
                json!(ingress_address(object)),
                json!(ports),
                age,
            ]
        }
        ("policy", "PodDisruptionBudget") => {
            let bound = |pointer: &str| match object.pointer(pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => "N/A".to_string(),
            };
            vec![
                name,
                json!(bound("/spec/minAvailable")),
                json!(bound("/spec/maxUnavailable")),
                json!(int_at(object, "/status/disruptionsAllowed")),
                age,
            ]
        }
        _ => return None,
    })
}

/// A quantity as stored (a string, or a number a client sent), `""` if absent.
fn quantity_text(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// A claim's access modes as `kubectl` abbreviates them (`RWO,ROX,RWX,RWOP`, in that order).
fn access_modes(object: &Value) -> String {
    access_modes_at(object, "/status/accessModes")
}

/// The access modes at `pointer`, abbreviated (`helper.GetAccessModesAsString`).
pub(super) fn access_modes_at(object: &Value, pointer: &str) -> String {
    let modes: Vec<&str> = object
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// Whether the Job has a condition of this type with status `True`.
fn has_condition(object: &Value, kind: &str) -> bool {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn job_status(object: &Value, deleting: bool) -> &'static str {
    if has_condition(object, "Complete") {
        "Complete"
    } else if has_condition(object, "Failed") {
        "Failed"
    } else if deleting {
        "Terminating"
    } else if has_condition(object, "Suspended") {
        "Suspended"
    } else if has_condition(object, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(object, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// `succeeded/completions`, or `succeeded/1` (`of <parallelism>` above 1) without completions.
fn job_completions(object: &Value) -> String {
    let succeeded = int_at(object, "/status/succeeded");
    match object.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int_at(object, "/spec/parallelism") {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

/// From the start to the completion (or to now), `""` before it started.
fn job_duration(object: &Value) -> String {
    let time = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .and_then(super::parse_rfc3339)
    };
    let Some(start) = time("/status/startTime") else {
        return String::new();
    };
    let end = time("/status/completionTime")
        .map_or_else(|| jiff::Timestamp::now().as_second(), |t| t.as_second());
    super::human_duration(end - start.as_second())
}

/// The hosts of an Ingress's rules, comma-separated (the first three and `+ N more...`),
/// `*` if none names one.
fn ingress_hosts(object: &Value) -> String {
    let hosts: Vec<&str> = object
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|rule| rule.get("host").and_then(Value::as_str))
        .filter(|host| !host.is_empty())
        .collect();
    match hosts.len() {
        0 => "*".to_string(),
        n if n > 3 => format!("{} + {} more...", hosts[..3].join(","), n - 3),
        _ => hosts.join(","),
    }
}

/// The load balancer's IPs and host names, comma-separated.
fn ingress_address(object: &Value) -> String {
    object
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ingress| {
            ingress
                .get("ip")
                .and_then(Value::as_str)
                .filter(|ip| !ip.is_empty())
                .or_else(|| ingress.get("hostname").and_then(Value::as_str))
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A Node's cells: readiness (and `SchedulingDisabled`), roles from its labels, the
/// kubelet's version, and with `-o wide` its addresses and system.
fn node_cells(object: &Value, name: Value, age: Value) -> Vec<Value> {
    let text = |pointer: &str| str_at(object, pointer);
    let ready = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            if c["status"] == "True" {
                "Ready"
            } else {
                "NotReady"
            }
        });
    let mut status = ready.unwrap_or("Unknown").to_string();
    if object
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        == Some(true)
    {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                (!role.is_empty()).then(|| role.to_string())
            } else if key == "kubernetes.io/role" {
                value.as_str().filter(|v| !v.is_empty()).map(str::to_string)
            } else {
                None
            }
        })
        .collect();
    roles.sort();
    roles.dedup();
    let address = |kind: &str| {
        object
            .pointer("/status/addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|a| a["type"] == kind)
            .and_then(|a| a["address"].as_str())
            .unwrap_or("<none>")
            .to_string()
    };
    let or_unknown = |value: &str| {
        if value.is_empty() {
            "<unknown>".to_string()
        } else {
            value.to_string()
        }
    };
    vec![
        name,
        json!(status),
        json!(joined_or_none(roles)),
        age,
        json!(text("/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_unknown(text("/status/nodeInfo/osImage"))),
        json!(or_unknown(text("/status/nodeInfo/kernelVersion"))),
        json!(or_unknown(text("/status/nodeInfo/containerRuntimeVersion"))),
    ]
}
