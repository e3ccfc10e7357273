//! Server-side printing: `meta.k8s.io/v1` `Table` responses, which `kubectl get` asks for.

use std::borrow::Borrow;

use bytes::Bytes;
use serde_json::{Value, json};

use super::resource::ResourceType;
use super::str_at;
use super::time::parse_rfc3339;

/// `ObjectMeta.name`'s documentation, as the real server describes the `Name` column.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `ObjectMeta.creationTimestamp`'s documentation, the `Age` column's description.
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A `string` column of priority 0.
pub(crate) fn column(name: &str, format: &str, description: &str) -> Value {
    json!({"name": name, "type": "string", "format": format, "description": description, "priority": 0})
}

fn columns(resource: &ResourceType) -> Vec<Value> {
    let name = column("Name", "name", NAME_DESCRIPTION);
    let mut age = column("Age", "", AGE_DESCRIPTION);
    if resource.custom {
        if resource.printer_columns.is_empty() {
            age["type"] = json!("date");
            return vec![name, age];
        }
        let mut columns = vec![name];
        for c in &resource.printer_columns {
            let description = if c.description.is_empty() {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.json_path
                )
            } else {
                c.description.clone()
            };
            columns.push(json!({
                "name": c.name, "type": c.kind, "format": c.format,
                "description": description, "priority": c.priority,
            }));
        }
        return columns;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => vec![
            name,
            column(
                "Ready",
                "",
                "The number of ready containers out of all containers.",
            ),
            column("Status", "", "The aggregate status of the pod."),
            column("Restarts", "", "The number of container restarts."),
            age,
            typed(
                "IP",
                "string",
                1,
                "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            ),
            typed(
                "Node",
                "string",
                1,
                "NodeName indicates in which node this pod is scheduled.",
            ),
            typed(
                "Nominated Node",
                "string",
                1,
                "nominatedNodeName is set only when this pod preempts other pods on the node.",
            ),
            typed(
                "Readiness Gates",
                "string",
                1,
                "If specified, all readiness gates will be evaluated for pod readiness.",
            ),
        ],
        ("", "Namespace") => vec![
            name,
            column("Status", "", "The phase of the namespace."),
            age,
        ],
        ("", "ConfigMap") => vec![
            name,
            typed("Data", "integer", 0, "Number of data in the ConfigMap."),
            age,
        ],
        ("", "Secret") => vec![
            name,
            column("Type", "", "The type of the secret."),
            typed("Data", "integer", 0, "Number of data in the secret."),
            age,
        ],
        ("", "Service") => vec![
            name,
            column("Type", "", "The type of the service."),
            column("Cluster-IP", "", "The IP address of the service."),
            column(
                "External-IP",
                "",
                "The external IP addresses of the service.",
            ),
            column("Port(s)", "", "The ports of the service."),
            age,
            typed("Selector", "string", 1, "The selector of the service."),
        ],
        ("apps", "Deployment") => vec![
            name,
            column("Ready", "", "Number of the pod with ready state"),
            column(
                "Up-to-date",
                "",
                "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
            ),
            column(
                "Available",
                "",
                "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            age,
        ]
        .into_iter()
        .chain(template_columns(Some(WORKLOAD_SELECTOR)))
        .collect(),
        ("apps", "ReplicaSet") => vec![
            name,
            typed(
                "Desired",
                "integer",
                0,
                "Replicas is the number of desired pods.",
            ),
            typed(
                "Current",
                "integer",
                0,
                "Replicas is the most recently observed number of non-terminating pods.",
            ),
            typed(
                "Ready",
                "integer",
                0,
                "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
            ),
            age,
        ]
        .into_iter()
        .chain(template_columns(Some(WORKLOAD_SELECTOR)))
        .collect(),
        ("apps", "StatefulSet") => vec![
            name,
            column("Ready", "", "Number of the pod with ready state"),
            age,
        ]
        .into_iter()
        .chain(template_columns(None))
        .collect(),
        ("coordination.k8s.io", "Lease") => {
            vec![name, column("Holder", "", "The holder of the lease."), age]
        }
        ("", "Event") | (super::events::GROUP, "Event") => {
            let mut name = typed("Name", "string", 1, NAME_DESCRIPTION);
            name["format"] = json!("name");
            vec![
                column("Last Seen", "", "The time at which the most recent occurrence of this event was recorded."),
                column("Type", "", "Type of this event (Normal, Warning), new types could be added in the future"),
                column("Reason", "", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
                column("Object", "", "The object that this event is about."),
                typed("Subobject", "string", 1, "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."),
                typed("Source", "string", 1, "The component reporting this event. Should be a short machine understandable string."),
                column("Message", "", "A human-readable description of the status of this operation."),
                typed("First Seen", "string", 1, "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"),
                typed("Count", "string", 1, "The number of times this event has occurred."),
                name,
            ]
        }
        (super::apiservices::GROUP, "APIService") => super::apiservices::table_columns(name, age),
        (super::certificates::GROUP, super::certificates::KIND) => {
            super::certificates::table_columns(name, age)
        }
        (group, kind) => printers::columns(group, kind, name.clone(), age.clone())
            .or_else(|| more_printers::columns(group, kind, name.clone(), age.clone()))
            .unwrap_or(vec![name, age]),
    }
}

/// The `-o wide` columns of the workload kinds: the template's containers and images, and
/// the selector (described so) if the kind prints one.
fn template_columns(selector: Option<&str>) -> Vec<Value> {
    let mut columns = vec![
        typed(
            "Containers",
            "string",
            1,
            "Names of each container in the template.",
        ),
        typed(
            "Images",
            "string",
            1,
            "Images referenced by each container in the template.",
        ),
    ];
    if let Some(description) = selector {
        columns.push(typed("Selector", "string", 1, description));
    }
    columns
}

/// The `Selector` column's description for Deployments and ReplicaSets.
const WORKLOAD_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";

/// A column of another type than `string`, or shown only with `-o wide` (`priority` 1).
fn typed(name: &str, kind: &str, priority: u8, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": "", "description": description, "priority": priority})
}

/// The `int` at `pointer`, 0 if missing (Go's zero value).
fn int_at(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The number of items of the array at `pointer`.
fn array_len_at(object: &Value, pointer: &str) -> usize {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The number of entries of the map at `pointer`.
fn len_at(object: &Value, pointer: &str) -> usize {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len)
}

/// What the rows of the workload kinds (Deployments, ReplicaSets, StatefulSets) print.
struct Workload {
    /// `spec.replicas` (1 when unset, as the API defaults it).
    desired: i64,
    /// `status.readyReplicas`.
    ready: i64,
    /// The pod template's container names, comma-separated.
    containers: Value,
    /// The pod template's container images, comma-separated.
    images: Value,
    /// `spec.selector`, printed.
    selector: Value,
}

impl Workload {
    fn of(object: &Value) -> Self {
        Self::at(object, "/spec/template")
    }

    /// With the pod template at `template` (a JSON pointer).
    fn at(object: &Value, template: &str) -> Self {
        let containers = object
            .pointer(&format!("{template}/spec/containers"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let field = |key: &str| {
            let values: Vec<&str> = containers
                .iter()
                .map(|c| c[key].as_str().unwrap_or(""))
                .collect();
            json!(values.join(","))
        };
        Self {
            desired: object
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1),
            ready: int_at(object, "/status/readyReplicas"),
            containers: field("name"),
            images: field("image"),
            selector: json!(selector_text(object.pointer("/spec/selector"))),
        }
    }

    /// `ready/desired`.
    fn ready_of_desired(&self) -> String {
        format!("{}/{}", self.ready, self.desired)
    }
}

/// A label selector as the real server prints it (`app=web,tier in (a,b)`, requirements
/// sorted by key; `<none>` if empty).
fn selector_text(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return "<none>".to_string();
    };
    let mut parts: Vec<(String, String)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))))
        .collect();
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or("");
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expression["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        };
        parts.push((key.to_string(), text));
    }
    parts.sort();
    joined_or_none(parts.into_iter().map(|(_, text)| text).collect())
}

/// `items` comma-separated, or `<none>`.
fn joined_or_none(items: Vec<String>) -> String {
    if items.is_empty() {
        "<none>".to_string()
    } else {
        items.join(",")
    }
}

/// A Service's `Port(s)` cell: `80/TCP`, `80:30080/TCP` with a node port, `<none>`.
fn service_ports(object: &Value) -> String {
    let ports: Vec<String> = object
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(node) => format!("{}:{node}/{protocol}", int_at(p, "/port")),
                None => format!("{}/{protocol}", int_at(p, "/port")),
            }
        })
        .collect();
    joined_or_none(ports)
}

/// A Service's `External-IP` cell, as kubectl's printer computes it.
fn service_external_ip(object: &Value) -> String {
    let strings = |pointer: &str, key: Option<&str>| -> Vec<String> {
        object
            .pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| match key {
                Some(k) => v.get(k).and_then(Value::as_str),
                None => v.as_str(),
            })
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let external = strings("/spec/externalIPs", None);
    let service_type = object
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    match service_type {
        "ExternalName" => object
            .pointer("/spec/externalName")
            .and_then(Value::as_str)
            .unwrap_or("<none>")
            .to_string(),
        "LoadBalancer" => {
            let mut ips = strings("/status/loadBalancer/ingress", Some("ip"));
            ips.extend(strings("/status/loadBalancer/ingress", Some("hostname")));
            ips.extend(external);
            if ips.is_empty() {
                "<pending>".to_string()
            } else {
                ips.join(",")
            }
        }
        _ => joined_or_none(external),
    }
}

fn cells(resource: &ResourceType, object: &Value) -> Vec<Value> {
    let name = object
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or(json!(""));
    let age = json!(age(object));
    if resource.custom && !resource.printer_columns.is_empty() {
        let mut cells = vec![name];
        for c in &resource.printer_columns {
            cells.push(printer_cell(&c.kind, lookup(object, &c.json_path)));
        }
        return cells;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => {
            let containers = array_len_at(object, "/spec/containers");
            let statuses = object
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let ready = statuses.iter().filter(|s| s["ready"] == true).count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|s| s["restartCount"].as_i64())
                .sum();
            let status = if object.pointer("/metadata/deletionTimestamp").is_some() {
                "Terminating".to_string()
            } else {
                object
                    .pointer("/status/phase")
                    .and_then(Value::as_str)
                    .unwrap_or("Unknown")
                    .to_string()
            };
            let or_none = |pointer: &str| {
                json!(
                    object
                        .pointer(pointer)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                        .unwrap_or("<none>")
                )
            };
            // Readiness gates: how many of the gates' condition types are `True`.
            let gates: Vec<&Value> = object
                .pointer("/spec/readinessGates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|g| &g["conditionType"])
                .collect();
            let gates_true = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|c| c["status"] == "True" && gates.contains(&&c["type"]))
                .count();
            let gates = if gates.is_empty() {
                json!("<none>")
            } else {
                json!(format!("{gates_true}/{}", gates.len()))
            };
            vec![
                name,
                json!(format!("{ready}/{containers}")),
                json!(status),
                json!(restarts),
                age,
                or_none("/status/podIP"),
                or_none("/spec/nodeName"),
                or_none("/status/nominatedNodeName"),
                gates,
            ]
        }
        ("", "Namespace") => {
            let phase = object
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![name, json!(phase), age]
        }
        ("", "ConfigMap") => {
            let data = len_at(object, "/data") + len_at(object, "/binaryData");
            vec![name, json!(data), age]
        }
        ("", "Secret") => {
            let kind = object
                .pointer("/type")
                .and_then(Value::as_str)
                .unwrap_or("");
            let data = len_at(object, "/data");
            vec![name, json!(kind), json!(data), age]
        }
        ("", "Service") => {
            let kind = object
                .pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let cluster_ip = object
                .pointer("/spec/clusterIP")
                .and_then(Value::as_str)
                .filter(|ip| !ip.is_empty())
                .unwrap_or("<none>");
            vec![
                name,
                json!(kind),
                json!(cluster_ip),
                json!(service_external_ip(object)),
                json!(service_ports(object)),
                age,
                json!(selector_text(
                    object
                        .pointer("/spec/selector")
                        .map(|labels| json!({"matchLabels": labels}))
                        .as_ref()
                )),
            ]
        }
        ("apps", "Deployment") => {
            let w = Workload::of(object);
            vec![
                name,
                json!(w.ready_of_desired()),
                json!(int_at(object, "/status/updatedReplicas")),
                json!(int_at(object, "/status/availableReplicas")),
                age,
                w.containers,
                w.images,
                w.selector,
            ]
        }
        ("apps", "ReplicaSet") => {
            let w = Workload::of(object);
            vec![
                name,
                json!(w.desired),
                json!(int_at(object, "/status/replicas")),
                json!(w.ready),
                age,
                w.containers,
                w.images,
                w.selector,
            ]
        }
        ("apps", "StatefulSet") => {
            let w = Workload::of(object);
            vec![
                name,
                json!(w.ready_of_desired()),
                age,
                w.containers,
                w.images,
            ]
        }
        ("coordination.k8s.io", "Lease") => {
            let holder = object
                .pointer("/spec/holderIdentity")
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![name, json!(holder), age]
        }
        ("", "Event") => event_cells(object, name),
        (super::events::GROUP, "Event") => event_cells(&super::events::to_core(object), name),
        // The printer reads the internal (v2) shape.
        ("autoscaling", "HorizontalPodAutoscaler") if super::hpa_v1::is_view(resource) => {
            let stored = super::hpa_v1::to_v2(object);
            more_printers::cells("autoscaling", "HorizontalPodAutoscaler", &stored, name, age)
                .unwrap_or_default()
        }
        (super::apiservices::GROUP, "APIService") => {
            super::apiservices::table_cells(object, name, age)
        }
        (super::certificates::GROUP, super::certificates::KIND) => {
            super::certificates::table_cells(object, name, age)
        }
        (group, kind) => printers::cells(group, kind, object, name.clone(), age.clone())
            .or_else(|| more_printers::cells(group, kind, object, name.clone(), age.clone()))
            .unwrap_or(vec![name, age]),
    }
}

/// An Event's cells, as the real printer makes them: when it was last and first seen
/// (from the series, `eventTime` or the timestamps), what it is about, who reported it.
fn event_cells(object: &Value, name: Value) -> Vec<Value> {
    let text = |pointer: &str| str_at(object, pointer);
    let first = match since(text("/firstTimestamp")) {
        Some(first) => first,
        None => since(text("/eventTime")).unwrap_or_else(|| "<unknown>".to_string()),
    };
    let mut last = since(text("/lastTimestamp")).unwrap_or_else(|| first.clone());
    let mut count = object
        .pointer("/count")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if object.pointer("/series").is_some_and(Value::is_object) {
        last = since(text("/series/lastObservedTime")).unwrap_or_else(|| "<unknown>".to_string());
        count = object
            .pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = text("/involvedObject/kind").to_lowercase();
    let target = match text("/involvedObject/name") {
        "" => kind,
        involved => format!("{kind}/{involved}"),
    };
    let or = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = or(text("/source/component"), text("/reportingComponent"));
    let instance = or(text("/source/host"), text("/reportingInstance"));
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(text("/type")),
        json!(text("/reason")),
        json!(target),
        json!(text("/involvedObject/fieldPath")),
        json!(source),
        json!(text("/message").trim()),
        json!(first),
        json!(count),
        name,
    ]
}

/// How long ago an RFC 3339 time was, as kubectl prints ages; `None` if empty or invalid.
fn since(time: &str) -> Option<String> {
    let at = parse_rfc3339(time)?;
    // Whole seconds, cut toward zero as Go's `int(d.Seconds())` cuts them.
    let elapsed = (jiff::Timestamp::now().as_nanosecond() - at.as_nanosecond()) / 1_000_000_000;
    Some(human_duration(i64::try_from(elapsed).unwrap_or(i64::MAX)))
}

/// What each row's `object` holds: the `includeObject` query parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    /// `null`.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The value of `includeObject` (anything else is the default).
    pub(crate) fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

fn row(resource: &ResourceType, object: &Value, include: IncludeObject) -> Value {
    let embedded = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => object.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
        }),
    };
    json!({"cells": cells(resource, object), "object": embedded})
}

/// A `Table` of objects with this metadata, rows holding what `include` says, and column
/// definitions or `null` for them.
pub(crate) fn table_of<T: Borrow<Value>>(
    resource: &ResourceType,
    objects: &[T],
    metadata: Value,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": if with_columns { Value::from(columns(resource)) } else { Value::Null },
        "rows": objects.iter().map(|o| row(resource, o.borrow(), include)).collect::<Vec<_>>(),
    })
}

/// The one-row `Table` of one object, at the object's resource version (as the real
/// server's table convertors answer a get and each watch event).
pub(crate) fn object_table(
    resource: &ResourceType,
    object: &Value,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let mut metadata = json!({});
    if let Some(rv) = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
    {
        metadata["resourceVersion"] = json!(rv);
    }
    table_of(
        resource,
        std::slice::from_ref(object),
        metadata,
        include,
        with_columns,
    )
}

/// The one-row `Table` of a built-in object's `Scale` (`kubectl get deploy web
/// --subresource=scale`): the `ScaleREST` hands the `Scale` to the type's table convertor,
/// whose printers print it as `printScale` does (`Name`, `Desired`, `Available`, `Age`).
///
/// A custom resource's `Scale` goes to the CRD's scale table convertor instead
/// (`getScaleColumnsForVersion`, `custom`): `Desired` and `Available` read the `Scale`'s
/// `.spec.replicas` (`null` for 0, which its JSON leaves out) and `.status.replicas`, and
/// `Age` is a `date` column.
pub(crate) fn scale_table(scale: &Value, include: IncludeObject, custom: bool) -> Value {
    let embedded = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => scale.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": scale.get("metadata").cloned().unwrap_or(json!({})),
        }),
    };
    let mut metadata = json!({});
    if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
        metadata["resourceVersion"] = rv.clone();
    }
    let name = scale
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or(json!(""));
    let (columns, cells) = if custom {
        (
            json!([
                column("Name", "name", NAME_DESCRIPTION),
                typed("Desired", "integer", 0, "Number of desired replicas"),
                typed("Available", "integer", 0, "Number of actual replicas"),
                typed("Age", "date", 0, AGE_DESCRIPTION),
            ]),
            json!([
                name,
                printer_cell("integer", scale.pointer("/spec/replicas")),
                printer_cell("integer", scale.pointer("/status/replicas")),
                printer_cell("date", scale.pointer("/metadata/creationTimestamp")),
            ]),
        )
    } else {
        (
            json!([
                column("Name", "", NAME_DESCRIPTION),
                typed(
                    "Desired",
                    "integer",
                    0,
                    "replicas is the desired number of instances for the scaled object."
                ),
                typed(
                    "Available",
                    "integer",
                    0,
                    "replicas is the actual number of observed instances of the scaled object."
                ),
                column("Age", "", AGE_DESCRIPTION),
            ]),
            json!([
                name,
                int_at(scale, "/spec/replicas"),
                int_at(scale, "/status/replicas"),
                age(scale),
            ]),
        )
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": [{"cells": cells, "object": embedded}],
    })
}

/// Rewrites one watch event line so its object is a one-row `Table`, its row holding what
/// `include` says; the column definitions only in the first table of a stream (`first`,
/// then false), `null` after it, as the real server sends them.
pub(crate) fn event_as_table(
    resource: &ResourceType,
    chunk: Bytes,
    include: IncludeObject,
    first: &mut bool,
) -> Bytes {
    let Ok(mut event) = serde_json::from_slice::<Value>(&chunk) else {
        return chunk;
    };
    if !matches!(
        event["type"].as_str(),
        Some("ADDED" | "MODIFIED" | "DELETED")
    ) {
        return chunk;
    }
    let object = event["object"].take();
    event["object"] = object_table(resource, &object, include, *first);
    *first = false;
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

/// A printer column's value: the first value its JSONPath finds, none when it finds
/// nothing or fails (the API server's CRD table convertor leaves the cell empty then).
fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let path = jsonpath::JsonPath::parse(path).ok()?;
    path.find(object).ok()?.into_iter().next()
}

/// A printer column's cell, typed as the column says (`null` when the value is missing or
/// of another type), as the real server's CRD table convertor makes it.
fn printer_cell(kind: &str, value: Option<&Value>) -> Value {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match kind {
        "integer" => value
            .as_i64()
            .or_else(|| value.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        // A float64, which Go writes without a fraction when it has none (`3`, `100000000`).
        "number" => value.as_f64().map_or(Value::Null, |f| {
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::from(f as i64)
            } else {
                Value::from(f)
            }
        }),
        "boolean" => value.as_bool().map_or(Value::Null, Value::from),
        // `metav1.Time.UnmarshalQueryParameter`: "" and "null" are the zero time, which
        // `ConvertToHumanReadableDateType` prints `<unknown>`.
        "date" => value.as_str().map_or(Value::Null, |time| match time {
            "" | "null" => json!("<unknown>"),
            time => json!(since(time).unwrap_or_else(|| "<invalid>".to_string())),
        }),
        // JSONPath's `PrintResults`: maps and lists as `json.Marshal` writes them (keys
        // sorted, HTML characters escaped), other values as text.
        _ => match value {
            Value::String(s) => json!(s),
            Value::Object(_) | Value::Array(_) => json!(super::go_json::marshal(value)),
            other => json!(other.to_string()),
        },
    }
}

/// The age of an object, formatted like kubectl's `AGE` column.
fn age(object: &Value) -> String {
    object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(since)
        .unwrap_or_else(|| "<unknown>".to_string())
}

/// A duration as apimachinery's `duration.HumanDuration` prints it (`5s`, `2m10s`, `5m`,
/// `4h1m`, `3d`, `3d4h`, `400d`, `2y206d`, `9y`); `seconds` is negative for a time in the
/// future: `0s` within a second, else `<invalid>`.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

mod jsonpath;
mod more_printers;
mod printers;

#[cfg(test)]
mod tests;
