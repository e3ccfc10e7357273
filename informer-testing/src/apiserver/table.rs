//! Server-side printing: `meta.k8s.io/v1` `Table` responses, which `kubectl get` asks for.

use std::borrow::Borrow;

use bytes::Bytes;
use serde_json::{Value, json};

use super::resource::ResourceType;
use super::time::parse_rfc3339;

/// `ObjectMeta.name`'s documentation, as the real server describes the `Name` column.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// `ObjectMeta.creationTimestamp`'s documentation, the `Age` column's description.
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

fn column(name: &str, format: &str, description: &str) -> Value {
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
        ],
        ("", "Namespace") => vec![
            name,
            column("Status", "", "The phase of the namespace."),
            age,
        ],
        _ => vec![name, age],
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
            let containers = object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
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
            vec![
                name,
                json!(format!("{ready}/{containers}")),
                json!(status),
                json!(restarts),
                age,
            ]
        }
        ("", "Namespace") => {
            let phase = object
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            vec![name, json!(phase), age]
        }
        _ => vec![name, age],
    }
}

fn row(resource: &ResourceType, object: &Value) -> Value {
    json!({
        "cells": cells(resource, object),
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
        }
    })
}

/// A `Table` of objects, with list metadata when given.
pub(crate) fn table<T: Borrow<Value>>(
    resource: &ResourceType,
    objects: &[T],
    revision: Option<u64>,
    continue_token: Option<&str>,
) -> Value {
    let mut metadata = json!({});
    if let Some(revision) = revision {
        metadata["resourceVersion"] = json!(revision.to_string());
    }
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns(resource),
        "rows": objects.iter().map(|o| row(resource, o.borrow())).collect::<Vec<_>>(),
    })
}

/// Rewrites one watch event line so its object is a one-row `Table`.
pub(crate) fn event_as_table(resource: &ResourceType, chunk: Bytes) -> Bytes {
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
    event["object"] = table(resource, &[object], None, None);
    let mut out = serde_json::to_vec(&event).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

/// The value at a simple JSON path (`.spec.size`, `.status.conditions[0].type`).
fn lookup<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = object;
    for part in path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
    {
        let (field, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !field.is_empty() {
            current = current.get(field)?;
        }
        for index in indexes.split('[').filter(|i| !i.is_empty()) {
            let index: usize = index.trim_end_matches(']').parse().ok()?;
            current = current.get(index)?;
        }
    }
    Some(current)
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
        "number" => value.as_f64().map_or(Value::Null, Value::from),
        "boolean" => value.as_bool().map_or(Value::Null, Value::from),
        "date" => match value.as_str().map(parse_rfc3339) {
            Some(Some(at)) => json!(human_duration(
                u64::try_from(jiff::Timestamp::now().as_second() - at.as_second()).unwrap_or(0)
            )),
            Some(None) => json!("<invalid>"),
            None => Value::Null,
        },
        _ => match value {
            Value::String(s) => json!(s),
            other => json!(other.to_string()),
        },
    }
}

/// The age of an object, formatted like kubectl's `AGE` column.
fn age(object: &Value) -> String {
    let Some(created) = object
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(parse_rfc3339)
    else {
        return "<unknown>".to_string();
    };
    let elapsed = jiff::Timestamp::now().as_second() - created.as_second();
    human_duration(u64::try_from(elapsed).unwrap_or(0))
}

fn human_duration(secs: u64) -> String {
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86_400);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{m}m{}s", s % 60),
        s if s < 3 * 3600 => format!("{m}m"),
        s if s < 8 * 3600 => format!("{h}h{}m", m % 60),
        s if s < 48 * 3600 => format!("{h}h"),
        s if s < 8 * 86_400 => format!("{d}d{}h", h % 24),
        _ => format!("{d}d"),
    }
}

#[cfg(test)]
mod tests;
