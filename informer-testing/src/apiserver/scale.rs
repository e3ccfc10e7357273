//! The `scale` subresource: an `autoscaling/v1` `Scale` view of a workload (Deployments,
//! ReplicaSets, StatefulSets, ReplicationControllers) or of a custom resource that declares
//! one.
//!
//! `spec.replicas` is read from and written to the object's replicas path; `status.replicas`
//! is read from its status path; `status.selector` is the label selector in its string form
//! (`app=web,tier in (a,b)`), from a `LabelSelector` object for the built-in workloads (a map
//! of labels for ReplicationControllers) and from a string field for custom resources, as
//! kube-apiserver serves them.

use serde_json::{Map, Value, json};

use super::resource::{ResourceType, ScaleSubresource};
use super::status::{ApiError, FieldError};
use super::validation;

fn scale_of(resource: &ResourceType) -> Result<&ScaleSubresource, ApiError> {
    resource.scale.as_ref().ok_or_else(ApiError::unknown_path)
}

/// The JSON pointer of a `.a.b` path.
fn pointer(path: &str) -> String {
    path.replace('.', "/")
}

/// A GET of a custom resource's `scale` fails as kube-apiserver's does while the object
/// has no spec replicas field (an update or patch of the `Scale` creates it; a missing
/// status replicas field reads as 0).
pub(crate) fn has_spec_replicas(resource: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let paths = scale_of(resource)?;
    if !resource.custom
        || object
            .pointer(&pointer(&paths.spec_replicas_path))
            .is_some()
    {
        return Ok(());
    }
    let why = format!(
        "the spec replicas field {:?} does not exist",
        paths.spec_replicas_path
    );
    Err(
        ApiError::internal(format!("Internal error occurred: {why}"))
            .with_details(json!({"causes": [{"message": why}]})),
    )
}

/// The `Scale` of an object.
pub(crate) fn scale(resource: &ResourceType, object: &Value) -> Result<Value, ApiError> {
    let paths = scale_of(resource)?;
    let meta = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = meta.get(field) {
            metadata.insert(field.to_string(), value.clone());
        }
    }
    let replicas = |path: &str| {
        object
            .pointer(&pointer(path))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let mut status = json!({"replicas": replicas(&paths.status_replicas_path)});
    if let Some(path) = &paths.label_selector_path {
        let selector = match object.pointer(&pointer(path)) {
            Some(Value::String(text)) => Some(text.clone()),
            // A ReplicationController's selector is a map of labels, not a `LabelSelector`.
            Some(Value::Object(labels)) if is_replication_controller(resource) => {
                let mut selector = Map::new();
                selector.insert("matchLabels".into(), Value::Object(labels.clone()));
                Some(selector_string(&selector))
            }
            Some(Value::Object(selector)) => Some(selector_string(selector)),
            _ => None,
        };
        if let Some(selector) = selector.filter(|s| !s.is_empty()) {
            status["selector"] = json!(selector);
        }
    }
    // `ScaleSpec.Replicas` is `omitempty`, `ScaleStatus.Replicas` is not: no replicas (or
    // 0) leaves `spec` empty.
    let spec = match replicas(&paths.spec_replicas_path) {
        0 => json!({}),
        n => json!({"replicas": n}),
    };
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

fn is_replication_controller(resource: &ResourceType) -> bool {
    !resource.custom && resource.group.is_empty() && resource.kind == "ReplicationController"
}

/// A `LabelSelector` (`matchLabels`, `matchExpressions`) in the string form
/// `metav1.LabelSelectorAsSelector(...).String()` prints: requirements sorted by key,
/// values of set requirements sorted.
pub(crate) fn selector_string(selector: &Map<String, Value>) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or("");
            requirements.push((key.clone(), format!("{key}={value}")));
        }
    }
    if let Some(expressions) = selector.get("matchExpressions").and_then(Value::as_array) {
        for expression in expressions {
            let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
            let mut values: Vec<&str> = expression
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            values.sort_unstable();
            values.dedup();
            let text = match expression.get("operator").and_then(Value::as_str) {
                Some("In") => format!("{key} in ({})", values.join(",")),
                Some("NotIn") => format!("{key} notin ({})", values.join(",")),
                Some("Exists") => key.to_string(),
                Some("DoesNotExist") => format!("!{key}"),
                _ => continue,
            };
            requirements.push((key.to_string(), text));
        }
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The replicas a `Scale` body asks for, checked as the real server checks it: a 32-bit
/// integer, and for built-in types not negative (`ValidateScale`). A custom resource's
/// `Scale` is not validated: the resource is, once its replicas are set (its schema, and
/// `.spec.replicas: should be a non-negative integer`).
pub(crate) fn requested_replicas(
    resource: &ResourceType,
    name: &str,
    scale: &Value,
) -> Result<i64, ApiError> {
    if let Some(body_name) = scale.pointer("/metadata/name").and_then(Value::as_str)
        && !body_name.is_empty()
        && body_name != name
    {
        return Err(ApiError::name_mismatch(body_name, name));
    }
    let mut errors = Vec::new();
    match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => return Ok(0),
        Some(replicas) if resource.custom && replicas.as_i64().is_some_and(|n| n < 0) => {}
        Some(replicas) => validation::replicas("spec.replicas", replicas, &mut errors),
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid_fields("Scale.autoscaling", name, errors));
    }
    Ok(scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0))
}

/// An apply's conflict over the object's replicas as a `Scale` apply reports it: the
/// `ScaleHandler` shows the object's managers to the `Scale`'s field manager as owners of
/// `.spec.replicas` in `autoscaling/v1`, so the message and causes name that path and
/// version, whatever the object's replicas path and version are. Other errors pass.
pub(crate) fn as_scale_conflict(resource: &ResourceType, err: ApiError) -> ApiError {
    if err.reason() != super::status::StatusReason::Conflict
        || !err.message().starts_with("Apply failed")
    {
        return err;
    }
    let replicas_path = scale_of(resource)
        .map(|paths| paths.spec_replicas_path.clone())
        .unwrap_or_else(|_| ".spec.replicas".into());
    err.rewritten(|text| {
        let text = scale_version(text);
        if text == replicas_path {
            ".spec.replicas".to_string()
        } else {
            text.replace(&format!(": {replicas_path}"), ": .spec.replicas")
                .replace(&format!("- {replicas_path}"), "- .spec.replicas")
        }
    })
}

/// Whether a managed fields entry of `object` owns its replicas path: the `Scale` the
/// `ScaleHandler` shows the field manager has managed fields only then.
pub(crate) fn replicas_owned(resource: &ResourceType, object: &Value) -> bool {
    let Ok(paths) = scale_of(resource) else {
        return false;
    };
    let path: Vec<&str> = paths.spec_replicas_path[1..].split('.').collect();
    super::fields::owned(object, &path)
}

/// kube-apiserver 1.36's answer to a server-side apply of a custom resource's `Scale` that
/// gets past its conflicts: its field manager converts the `Scale` with the custom
/// resource's converter, which refuses `autoscaling/v1` (a 500). `live`: converting the
/// object's fields before the first apply to them (no entry owns the replicas); otherwise
/// the new object (the replicas change). An apply that changes nothing succeeds.
pub(crate) fn custom_apply_error(live: bool) -> ApiError {
    let (what, prefix) = if live {
        ("live", "failed to create manager for existing fields: ")
    } else {
        ("new", "")
    };
    // A plain error, not an `InternalError` Status: its Status has no reason.
    ApiError::new(
        super::status::StatusReason::Unknown,
        format!(
            "{prefix}failed to convert {what} object (/; autoscaling/v1, Kind=Scale) to proper version: request to convert CR to an invalid group/version: autoscaling/v1"
        ),
    )
}

/// `using <version>` in a conflict's text as `using autoscaling/v1`.
fn scale_version(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" using ") {
        let (before, after) = rest.split_at(at + " using ".len());
        out.push_str(before);
        out.push_str("autoscaling/v1");
        let end = after.find([':', '\n']).unwrap_or(after.len());
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The object with its replicas path set to `replicas` (missing parents created).
pub(crate) fn with_replicas(
    resource: &ResourceType,
    object: &Value,
    replicas: i64,
) -> Result<Value, ApiError> {
    let paths = scale_of(resource)?;
    let mut updated = object.clone();
    let mut node = &mut updated;
    let parts: Vec<&str> = paths.spec_replicas_path[1..].split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else {
            return Err(ApiError::invalid_fields(
                &resource.qualified_kind(),
                object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                vec![FieldError::invalid(
                    &paths.spec_replicas_path[1..],
                    node.clone(),
                    "the scale subresource's replicas path does not lead through objects",
                )],
            ));
        };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), json!(replicas));
            break;
        }
        node = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if node.is_null() {
            *node = Value::Object(Map::new());
        }
    }
    Ok(updated)
}

#[cfg(test)]
mod tests;
