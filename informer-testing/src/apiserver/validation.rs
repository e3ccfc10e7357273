//! Validation of objects on create and update, as kube-apiserver validates them: every
//! failure is a [`FieldError`], and all of an object's failures go back in one
//! `422 Invalid` whose `details.causes` lists them.
//!
//! What is checked: object metadata for every type (name syntax and length, label keys and
//! values, annotation keys and total size), and for built-in types the rules below that
//! apply to fields which are present (the server does not require the fields a real server
//! would default or demand, so tests can keep creating partial objects):
//!
//! | type | rule |
//! | --- | --- |
//! | Namespace, Service | names are DNS labels (Services: DNS-1035 labels) |
//! | Pod | container names present and unique; `restartPolicy` one of `Always`, `OnFailure`, `Never` |
//! | Deployment, ReplicaSet, StatefulSet, DaemonSet | `spec.replicas` not negative; the selector a valid label selector (`ValidateLabelSelector`) that selects the template's labels; the selector never changes |
//! | Secret | `type` never changes |
//! | Service | `spec.type` supported; `spec.ports[*].port` in 1..=65535 |
//! | ConfigMap, Secret | once `immutable` is true, `data`, `binaryData` and `immutable` stay; keys are config keys, values at most 1 MiB together (`data`) |
//! | Secret | the keys or annotation its `type` needs (`data`) |
//! | Event | `legacyValidateEvent` (`events`) |
//! | Deployment | the strategy (`Recreate` without `rollingUpdate`; a rolling update's `maxUnavailable` and `maxSurge`), `minReadySeconds`, `revisionHistoryLimit`, `progressDeadlineSeconds` (`apps`) |
//! | Job, CronJob | counts and limits not negative; the pod template's restart policy `OnFailure` or `Never`; a CronJob's `schedule` (parsed as the real server's cron parser parses it, with its errors), `timeZone` and `concurrencyPolicy` (`batch`) |
//! | HorizontalPodAutoscaler | `ValidateHorizontalPodAutoscaler` and its update and status update checks, on the stored (v2) shape: replicas bounds, the target reference, the metrics, the behavior (`autoscaling`) |
//! | the admission configurations | webhooks' names, side effects, review versions, timeouts, rules and client configs; policies' and bindings' required fields and supported values (`admission`) |
//! | Pod, StatefulSet, Job, RoleBinding, ClusterRoleBinding | an update changes only what the type lets change (`updates`: a Pod's images, a StatefulSet's replicas and template, a binding never its `roleRef`, ...) |

use std::collections::HashSet;

use serde_json::Value;

use super::crd;
use super::go_json;
use super::resource::{ADMISSION, ResourceType};
use super::status::{ApiError, FieldError};
use super::storage::Subresource;

pub(crate) const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(crate) const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
pub(crate) const DNS1035_LABEL: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
pub(crate) const QUALIFIED_NAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const IMMUTABLE: &str = "field is immutable when `immutable` is set";
/// The most bytes all annotations of an object may hold (keys and values).
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn fail(resource: &ResourceType, name: &str, errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_fields(
            &resource.qualified_kind(),
            name,
            errors,
        ))
    }
}

/// The 422 for an object with neither a name nor a `generateName`.
pub(crate) fn name_required(resource: &ResourceType) -> ApiError {
    ApiError::invalid_fields(
        &resource.qualified_kind(),
        "",
        vec![FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )],
    )
}

/// Checks an object about to be created.
pub(crate) fn validate_create(resource: &ResourceType, object: &Value) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    generate_name(resource, object, &mut errors);
    name(resource, name_of(object), &mut errors);
    metadata(object, &mut errors);
    finalizer_names(resource, object, true, &mut errors);
    spec(resource, object, &mut errors);
    if is_cron_job(resource) {
        batch::cron_job(object, None, &mut errors);
    }
    if super::hpa_v1::is_autoscaler(resource) {
        autoscaling::horizontal_pod_autoscaler(object, None, &mut errors);
    }
    custom(resource, object, None, false, &mut errors);
    if super::certificates::is_csr(resource) {
        errors.extend(super::certificates::validate_create(object));
    }
    if is_priority_class(resource) {
        priority_class(object, &mut errors);
    }
    if let Some(schema) = &resource.schema {
        super::structural::cel_rules::validate_resource(schema, object, None, &mut errors);
    }
    if crd::is_definition(resource) {
        errors.extend(crd::validation::validate(object, None));
    }
    fail(resource, name_of(object), errors)
}

/// Checks an object about to replace `old`.
#[cfg(test)]
pub(crate) fn validate_update(
    resource: &ResourceType,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    validate_update_of(resource, old, new, Subresource::Main)
}

/// Checks an object about to replace `old` through `subresource`: a status write runs the
/// type's status strategy (a custom resource's status against the schema of `status`, a
/// CRD's accepted names without its stored versions).
pub(crate) fn validate_update_of(
    resource: &ResourceType,
    old: &Value,
    new: &Value,
    subresource: Subresource,
) -> Result<(), ApiError> {
    let status_write = subresource == Subresource::Status;
    let mut errors = Vec::new();
    metadata(new, &mut errors);
    no_new_finalizers(old, new, &mut errors);
    finalizer_names(resource, new, false, &mut errors);
    spec(resource, new, &mut errors);
    if is_cron_job(resource) && !status_write {
        batch::cron_job(new, Some(old), &mut errors);
    }
    if super::hpa_v1::is_autoscaler(resource) {
        autoscaling::horizontal_pod_autoscaler(new, Some(old), &mut errors);
    }
    immutability(resource, old, new, &mut errors);
    updates::spec_updates(resource, old, new, &mut errors);
    custom(resource, new, Some(old), status_write, &mut errors);
    // The rules the unchanged values still break are warnings, whatever else fails (a
    // write that succeeds gets them from `write_warnings`).
    let mut ratcheted = Vec::new();
    if let Some(schema) = &resource.schema {
        ratcheted =
            super::structural::cel_rules::validate_resource(schema, new, Some(old), &mut errors);
    }
    if crd::is_definition(resource) && status_write {
        errors.extend(crd::validation::validate_status(new));
    } else if crd::is_definition(resource) {
        errors.extend(crd::validation::validate(new, Some(old)));
    }
    fail(resource, name_of(new), errors).map_err(|err| err.with_warnings(ratcheted))
}

/// A custom resource against its structural schema (on an update, ratcheted against `old`:
/// see `Schema::validate`), the replicas its `scale` subresource
/// reads (`ValidateScaleSpec`, `ValidateScaleStatus`: `.spec.replicas: Invalid value: -1:
/// should be a non-negative integer`), then its embedded resources (`objectmeta.Validate`).
/// A status write (`ValidateStatusUpdate`) checks only `status`, against the schema of
/// `status` (`replicas in body must be ...` at `status.replicas`), and the status replicas.
fn custom(
    resource: &ResourceType,
    object: &Value,
    old: Option<&Value>,
    status_write: bool,
    errors: &mut Vec<FieldError>,
) {
    let Some(schema) = &resource.schema else {
        return;
    };
    if status_write {
        errors.extend(schema.validate_status(object, old));
    } else {
        errors.extend(schema.validate(object, old));
    }
    if let Some(scale) = &resource.scale {
        if !status_write {
            scale_replicas(&scale.spec_replicas_path, object, errors);
        }
        scale_replicas(&scale.status_replicas_path, object, errors);
        if let Some(path) = &scale.label_selector_path
            && let Err((value, why)) = nested(object, path, "string", Value::is_string)
        {
            errors.push(FieldError::invalid(path, value, &why));
        }
    }
    errors.extend(schema.validate_embedded(object));
}

/// `unstructured.NestedInt64` at a scale path: absent is 0, and fine; else a non-negative
/// 32-bit integer.
fn scale_replicas(path: &str, object: &Value, errors: &mut Vec<FieldError>) {
    match nested(object, path, "int64", |v| v.is_i64() || v.is_u64()) {
        Err((_, why)) => errors.push(FieldError::invalid(path, 0, &why)),
        Ok(None) => {}
        Ok(Some(replicas)) => match replicas.as_i64() {
            Some(n) if n < 0 => errors.push(FieldError::invalid(
                path,
                n,
                "should be a non-negative integer",
            )),
            Some(n) if n <= i64::from(i32::MAX) => {}
            _ => errors.push(FieldError::invalid(
                path,
                replicas.clone(),
                &format!("should be less than or equal to {}", i32::MAX),
            )),
        },
    }
}

/// `unstructured.NestedFieldNoCopy` and its type check: the value at a `.a.b` path, `None`
/// when absent, or the accessor error (`.spec.replicas accessor error: str is of the type
/// string, expected map[string]interface{}`) and the value upstream reports with it.
fn nested<'a>(
    object: &'a Value,
    path: &str,
    expected: &str,
    fits: fn(&Value) -> bool,
) -> Result<Option<&'a Value>, (Value, String)> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut value = object;
    for (i, field) in fields.iter().enumerate() {
        let Value::Object(map) = value else {
            return Err((
                Value::from(""),
                format!(
                    ".{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    fields[..=i].join("."),
                    super::schema::go_print(value),
                    json_type(value)
                ),
            ));
        };
        match map.get(*field) {
            Some(child) => value = child,
            None => return Ok(None),
        }
    }
    if fits(value) {
        return Ok(Some(value));
    }
    Err((
        Value::from(""),
        format!(
            "{path} accessor error: {} is of the type {}, expected {expected}",
            super::schema::go_print(value),
            json_type(value)
        ),
    ))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// `IsValidPathSegmentName`'s messages: a name that is a URL path segment (not `.` or `..`,
/// no `/` or `%`).
pub(crate) fn path_segment_errors(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    path_segment_prefix_errors(name)
}

/// `IsValidPathSegmentPrefix`'s messages: no `/` or `%` (a `generateName`).
pub(crate) fn path_segment_prefix_errors(prefix: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|c| prefix.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// apimachinery's `ValidateObjectMeta` of an embedded resource's `metadata`, as
/// `objectmeta.Validate` runs it (`x-kubernetes-embedded-resource`): the name and
/// `generateName` as path segments (an empty name passes), the namespace a DNS label, the
/// labels, annotations, owner references and finalizers as any object's; field paths under
/// the embedded resource's `path` (`spec.template` gives `spec.template.metadata.labels`).
pub(crate) fn embedded_metadata(path: &str, meta: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let text = |key: &str| meta.get(key).and_then(Value::as_str).unwrap_or("");
    let generate_name = text("generateName");
    for message in path_segment_prefix_errors(generate_name) {
        errors.push(FieldError::invalid(
            "metadata.generateName",
            generate_name,
            &message,
        ));
    }
    for message in path_segment_errors(text("name")) {
        errors.push(FieldError::invalid("metadata.name", text("name"), &message));
    }
    let namespace = text("namespace");
    if !namespace.is_empty() {
        if namespace.len() > 63 {
            errors.push(FieldError::invalid(
                "metadata.namespace",
                namespace,
                "must be no more than 63 characters",
            ));
        }
        if !is_dns_label_chars(namespace) {
            errors.push(FieldError::invalid(
                "metadata.namespace",
                namespace,
                DNS1123_LABEL,
            ));
        }
    }
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errors.push(FieldError::invalid(
            "metadata.generation",
            generation,
            "must be greater than or equal to 0",
        ));
    }
    let object = serde_json::json!({ "metadata": meta });
    metadata(&object, &mut errors);
    let list = finalizer_list(&object);
    for finalizer in &list {
        for message in qualified_name_messages(finalizer) {
            errors.push(FieldError::invalid(
                "metadata.finalizers",
                *finalizer,
                &message,
            ));
        }
    }
    for error in &mut errors {
        error.field = super::structural::child_path(path, &error.field);
    }
    errors
}

/// The finalizers every controller knows, which need no domain.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

fn finalizer_list(object: &Value) -> Vec<&str> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| f.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Finalizer names. On create, apimachinery's `ValidateFinalizers` for every type: each a
/// qualified name (errors at `metadata.finalizers`), not both `orphan` and
/// `foregroundDeletion`. On create and update of a built-in type, core's
/// `validateKubeFinalizerName`: a name without a `/` must be a standard finalizer
/// (`metadata.finalizers[i]`). Custom resources take any qualified name, with a warning
/// ([`finalizer_warnings`]); their updates are not checked at all, as upstream's.
fn finalizer_names(
    resource: &ResourceType,
    object: &Value,
    create: bool,
    errors: &mut Vec<FieldError>,
) {
    let list = finalizer_list(object);
    if create {
        for finalizer in &list {
            for message in qualified_name_messages(finalizer) {
                errors.push(FieldError::invalid(
                    "metadata.finalizers",
                    *finalizer,
                    &message,
                ));
            }
        }
        if list.contains(&"orphan") && list.contains(&"foregroundDeletion") {
            errors.push(FieldError::invalid(
                "metadata.finalizers",
                Value::from(list.clone()),
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
    // kube-apiserver's types use core's ObjectMeta checks; CRDs and APIServices (served by
    // their own servers) apimachinery's only.
    let core_rules = !resource.custom
        && !matches!(
            resource.group.as_str(),
            "apiextensions.k8s.io" | "apiregistration.k8s.io"
        );
    if core_rules {
        for (i, finalizer) in list.iter().enumerate() {
            if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(finalizer) {
                errors.push(FieldError::invalid(
                    &format!("metadata.finalizers[{i}]"),
                    *finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                ));
            }
        }
    }
}

/// The warnings of a write that validation and the type's strategy add (`WarningsOnCreate`,
/// `WarningsOnUpdate`): on an update of a custom resource, the validation rules its
/// unchanged values break (ratcheted, see [`super::structural::cel_rules::ratcheted_warnings`]);
/// custom resources' finalizers ([`finalizer_warnings`]) and the formats a CRD's schemas use
/// that the server does not know.
pub(crate) fn write_warnings(
    resource: &ResourceType,
    old: Option<&Value>,
    new: &Value,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let (Some(schema), Some(old)) = (&resource.schema, old)
        && resource.custom
    {
        warnings.extend(super::structural::cel_rules::ratcheted_warnings(
            schema, new, old,
        ));
    }
    warnings.extend(finalizer_warnings(resource, old, new));
    if crd::is_definition(resource) {
        warnings.extend(super::structural::formats::crd_warnings(old, new));
    }
    warnings
}

/// The warnings of a write of a custom resource (`generateWarningsFromObj`): each finalizer
/// it adds that is not domain-qualified, and its qualified-name problems (already errors on
/// create).
pub(crate) fn finalizer_warnings(
    resource: &ResourceType,
    old: Option<&Value>,
    new: &Value,
) -> Vec<String> {
    if !resource.custom {
        return Vec::new();
    }
    let before = old.map(finalizer_list).unwrap_or_default();
    let mut added: Vec<&str> = finalizer_list(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    added.sort_unstable();
    added.dedup();
    let mut warnings = Vec::new();
    for finalizer in added {
        for message in qualified_name_messages(finalizer) {
            warnings.push(format!("metadata.finalizers: {finalizer:?}: {message}"));
        }
        if !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer) {
            let including_path = if finalizer.contains('.') {
                " including a path (/)"
            } else {
                ""
            };
            warnings.push(format!(
                "metadata.finalizers: {finalizer:?}: prefer a domain-qualified finalizer name{including_path} to avoid accidental conflicts with other finalizer writers"
            ));
        }
    }
    warnings
}

/// Finalizers cannot be added to an object being deleted. The real server checks object
/// metadata twice on update (the generic checks and the type's), so the error comes twice.
fn no_new_finalizers(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    if old.pointer("/metadata/deletionTimestamp").is_none() {
        return;
    }
    let list = |object: &Value| -> Vec<String> {
        object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = list(old);
    let added: Vec<String> = list(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return;
    }
    let error = FieldError::forbidden(
        "metadata.finalizers",
        &format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers {}",
            go_string_slice(added.iter().map(String::as_str))
        ),
    );
    errors.push(error.clone());
    errors.push(error);
}

/// The replica count of a `Scale` (or a workload's `spec.replicas`).
pub(crate) fn replicas(field: &str, replicas: &Value, errors: &mut Vec<FieldError>) {
    match replicas.as_i64() {
        Some(n) if n >= 0 && n <= i64::from(i32::MAX) => {}
        Some(n) if n < 0 => errors.push(FieldError::invalid(
            field,
            n,
            "must be greater than or equal to 0",
        )),
        _ => errors.push(FieldError::invalid(
            field,
            replicas.clone(),
            "must be a 32-bit integer",
        )),
    }
}

/// 1 to 63 bytes of `inner`, starting and ending with `edge`.
fn is_label_like(s: &str, edge: fn(&u8) -> bool, inner: fn(&u8) -> bool) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(inner)
}

/// An RFC 1123 label: lower-case alphanumerics and `-`.
pub(crate) fn is_dns_label(s: &str) -> bool {
    is_label_like(
        s,
        |c| c.is_ascii_lowercase() || c.is_ascii_digit(),
        |c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-',
    )
}

/// A DNS-1035 label (`IsDNS1035Label`): a DNS label of at most 63 bytes that starts with a
/// letter.
pub(crate) fn is_dns1035_label(s: &str) -> bool {
    is_dns_label(s) && s.len() <= 63 && s.as_bytes()[0].is_ascii_lowercase()
}

/// An RFC 1123 subdomain (`IsDNS1123Subdomain`): dot-separated labels, at most 253 bytes in
/// all. Go's check is its regex and the total length: a label of more than 63 bytes passes.
pub(crate) fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label_chars)
}

/// `ValidateObjectMeta` of a `generateName`: the type's name rule as a prefix (a trailing
/// `-` masked, `maskTrailingDash`), at `metadata.generateName`, before the generated name's.
fn generate_name(resource: &ResourceType, object: &Value, errors: &mut Vec<FieldError>) {
    let prefix = super::str_at(object, "/metadata/generateName");
    if prefix.is_empty() {
        return;
    }
    let masked = match prefix.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => prefix.to_string(),
    };
    let mut found = Vec::new();
    name(resource, &masked, &mut found);
    for mut error in found {
        error.field = "metadata.generateName".into();
        if error.value.is_some() {
            error.value = Some(Value::from(prefix));
        }
        errors.push(error);
    }
}

fn name(resource: &ResourceType, name: &str, errors: &mut Vec<FieldError>) {
    if super::apiservices::is_apiservice(resource) {
        // Its own rule (`<version>.<group>`), checked with its spec.
        return;
    }
    let field = "metadata.name";
    if resource.group == "rbac.authorization.k8s.io" {
        // `ValidateRBACName` is `IsValidPathSegmentName`: `system:discovery` is a name.
        for message in path_segment_errors(name) {
            errors.push(FieldError::invalid(field, name, &message));
        }
        return;
    }
    let (valid, limit, rule) = match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => (is_dns_label(name), 63, DNS1123_LABEL),
        ("", "Service") => (is_dns1035_label(name), 63, DNS1035_LABEL),
        _ => (is_dns_subdomain(name), 253, DNS1123_SUBDOMAIN),
    };
    if name.len() > limit {
        errors.push(FieldError::invalid(
            field,
            name,
            &format!("must be no more than {limit} characters"),
        ));
    } else if !valid {
        errors.push(FieldError::invalid(field, name, rule));
    }
}

/// A label or annotation key: `[prefix/]name`.
pub(crate) fn qualified_name(field: &str, key: &str, errors: &mut Vec<FieldError>) {
    for message in qualified_name_messages(key) {
        errors.push(FieldError::invalid(field, key, &message));
    }
}

/// `IsQualifiedName` (`content.IsLabelKey`): an optional DNS subdomain prefix and `/`, and a
/// name part of at most 63 bytes of alphanumerics, `-`, `_` and `.`, alphanumeric at both
/// ends. Lengths are counted in bytes, as upstream words them.
pub(crate) fn qualified_name_messages(key: &str) -> Vec<String> {
    let mut messages = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts[..] {
        [name] => name,
        [prefix, name] => {
            if prefix.is_empty() {
                messages.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    messages.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !prefix.split('.').all(is_dns_label_chars) {
                    messages.push(format!("prefix part {DNS1123_SUBDOMAIN}"));
                }
            }
            name
        }
        _ => {
            messages.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                QUALIFIED_NAME.trim_start_matches("name part ")
            ));
            return messages;
        }
    };
    if name.is_empty() {
        messages.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        messages.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_qualified_name_chars(name) {
        messages.push(QUALIFIED_NAME.to_string());
    }
    messages
}

/// The qualified name part's pattern, whatever its length.
fn is_qualified_name_chars(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// An RFC 1123 label's pattern, whatever its length.
pub(crate) fn is_dns_label_chars(s: &str) -> bool {
    let lower = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let b = s.as_bytes();
    b.first().is_some_and(lower)
        && b.last().is_some_and(lower)
        && b.iter().all(|c| lower(c) || *c == b'-')
}

/// `ValidateLabels`: each key a qualified name, each value a label value, all errors at
/// `field` (no key in the path, as upstream's).
fn labels_of(field: &str, labels: &serde_json::Map<String, Value>, errors: &mut Vec<FieldError>) {
    for (key, value) in labels {
        qualified_name(field, key, errors);
        label_value(field, value.as_str().unwrap_or(""), errors);
    }
}

/// `IsValidLabelValue` (`content.IsLabelValue`): at most 63 bytes, empty or a qualified
/// name part's pattern (both checked).
fn label_value(field: &str, value: &str, errors: &mut Vec<FieldError>) {
    for message in label_value_messages(value) {
        errors.push(FieldError::invalid(field, value, &message));
    }
}

/// `IsValidLabelValue`'s messages for `value` (none when it is valid).
pub(crate) fn label_value_messages(value: &str) -> Vec<String> {
    let mut messages = Vec::new();
    if value.len() > 63 {
        messages.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !is_qualified_name_chars(value) {
        messages.push(LABEL_VALUE.to_string());
    }
    messages
}

/// `metav1validation.ValidateLabelSelector` (invalid label values refused): `matchLabels`
/// as labels, and each of `matchExpressions` with a known operator, values when the operator
/// takes them (and none when it does not), a qualified key and label values.
pub(crate) fn label_selector(field: &str, selector: &Value, errors: &mut Vec<FieldError>) {
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        labels_of(&format!("{field}.matchLabels"), labels, errors);
    }
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    for (i, expression) in expressions.enumerate() {
        let path = format!("{field}.matchExpressions[{i}]");
        let values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap_or(""))
            .collect();
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or("");
        match operator {
            "In" | "NotIn" if values.is_empty() => errors.push(FieldError::required(
                &format!("{path}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errors.push(FieldError::forbidden(
                &format!("{path}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(FieldError::invalid(
                &format!("{path}.operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
        qualified_name(&format!("{path}.key"), key, errors);
        for (j, value) in values.iter().enumerate() {
            label_value(&format!("{path}.values[{j}]"), value, errors);
        }
    }
}

fn metadata(object: &Value, errors: &mut Vec<FieldError>) {
    if let Some(references) = object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    {
        owner_references(references, errors);
    }
    if let Some(labels) = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        labels_of("metadata.labels", labels, errors);
    }
    if let Some(annotations) = object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        let mut total = 0;
        for (key, value) in annotations {
            qualified_name("metadata.annotations", &key.to_lowercase(), errors);
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE {
            errors.push(FieldError::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_SIZE,
            ));
        }
    }
}

fn spec(resource: &ResourceType, object: &Value, errors: &mut Vec<FieldError>) {
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pod_spec("spec", object.get("spec"), errors),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            if let Some(n) = object.pointer("/spec/replicas").filter(|v| !v.is_null()) {
                replicas("spec.replicas", n, errors);
            }
            if let Some(selector) = object.pointer("/spec/selector").filter(|s| s.is_object()) {
                label_selector("spec.selector", selector, errors);
            }
            if !resource.custom {
                workload_selector_given(&resource.kind, object, errors);
            }
            selector_matches_template(object, errors);
            pod_spec(
                "spec.template.spec",
                object.pointer("/spec/template/spec"),
                errors,
            );
            if resource.kind == "Deployment" && !resource.custom {
                apps::deployment(object, errors);
            }
        }
        ("", "Service") => service_spec(object.get("spec"), errors),
        ("", "Event") => errors.extend(super::events::validate_core(object)),
        ("", "ConfigMap") => data::config_map(object, errors),
        ("", "Secret") => data::secret(object, errors),
        (ADMISSION, kind) => admission::validate(kind, object, errors),
        (super::apiservices::GROUP, "APIService") => super::apiservices::validate(object, errors),
        ("batch", "Job") if !resource.custom => batch::job(object, errors),
        _ => {}
    }
}

fn is_cron_job(resource: &ResourceType) -> bool {
    resource.group == "batch" && resource.kind == "CronJob" && !resource.custom
}

fn is_priority_class(resource: &ResourceType) -> bool {
    resource.group == "scheduling.k8s.io" && resource.kind == "PriorityClass" && !resource.custom
}

/// `ValidatePriorityClass` (on create): names starting `system-` are the built-in classes'
/// only, with their values and not the global default; other classes' values are at most
/// `HighestUserDefinablePriority`; the preemption policy is one of the two.
fn priority_class(object: &Value, errors: &mut Vec<FieldError>) {
    use super::pods::{HIGHEST_USER_DEFINABLE_PRIORITY, SYSTEM_PRIORITY_CLASSES};
    let name = super::str_at(object, "/metadata/name");
    let value = object.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global_default = object.get("globalDefault").and_then(Value::as_bool) == Some(true);
    if name.starts_with("system-") {
        let known = SYSTEM_PRIORITY_CLASSES.iter().find(|(n, ..)| *n == name);
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v, _)) if *v != value => {
                Some(format!("value of {n} PriorityClass must be {v}"))
            }
            Some((n, ..)) if global_default => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errors.push(FieldError::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errors.push(FieldError::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    match object.get("preemptionPolicy") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if p == "PreemptLowerPriority" || p == "Never" => {}
        Some(Value::String(p)) if p.is_empty() => {
            errors.push(FieldError::required("preemptionPolicy", ""));
        }
        Some(other) => errors.push(FieldError::not_supported(
            "preemptionPolicy",
            other.clone(),
            &["Never", "PreemptLowerPriority"],
        )),
    }
}

/// `metadata.ownerReferences` as apimachinery's `ValidateOwnerReferences` checks them: each
/// names a version, a kind, a name and a UID, no Event owns anything, and at most one is
/// the controller. The field path carries no index, as upstream's does not.
fn owner_references(references: &[Value], errors: &mut Vec<FieldError>) {
    const FIELD: &str = "metadata.ownerReferences";
    let mut first_controller: Option<String> = None;
    for reference in references {
        let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        // schema.FromAPIVersionAndKind: `group/version`, or a lone version; more slashes
        // parse as nothing.
        let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
            [version] => ("", version),
            [group, version] => (group, version),
            _ => ("", ""),
        };
        if version.is_empty() {
            errors.push(FieldError::invalid(
                &format!("{FIELD}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for (key, value) in [("kind", kind), ("name", text("name")), ("uid", text("uid"))] {
            if value.is_empty() {
                errors.push(FieldError::invalid(
                    &format!("{FIELD}.{key}"),
                    value,
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errors.push(FieldError::invalid_go(
                FIELD,
                &json_owner_reference(reference),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if reference.get("controller") == Some(&Value::Bool(true)) {
            let current = format!("{kind}/{}", text("name"));
            match &first_controller {
                Some(first) => errors.push(FieldError::invalid_go(
                    FIELD,
                    &format!(
                        "[{}]",
                        references
                            .iter()
                            .map(json_owner_reference)
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
}

/// An owner reference as a 1.34+ server prints a bad value (`field.Error`: the value's
/// JSON, here a `metav1.OwnerReference`'s: its fields in struct order, the two `*bool`s
/// left out when unset).
fn json_owner_reference(reference: &Value) -> String {
    let text = |key: &str| {
        super::go_json::go_string(reference.get(key).and_then(Value::as_str).unwrap_or(""))
    };
    let mut out = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
        text("apiVersion"),
        text("kind"),
        text("name"),
        text("uid"),
    );
    for key in ["controller", "blockOwnerDeletion"] {
        if let Some(Value::Bool(flag)) = reference.get(key) {
            out.push_str(&format!(",\"{key}\":{flag}"));
        }
    }
    out.push('}');
    out
}

/// A workload's selector is required (but a DaemonSet's: `ValidateDeploymentSpec`,
/// `ValidateReplicaSetSpec`, `ValidateStatefulSetSpec`, `ValidateDaemonSetSpec`); without one
/// the selector is `labels.Nothing()`, which the template's labels never match.
///
/// Checked only where the template has labels (a manifest written for `extensions/v1beta1`,
/// which defaulted the selector from them). Not checked (yet), though the real server refuses
/// them: a workload without a selector nor template labels (`ReplicaSet::default()`), an empty
/// selector (`{}`: "empty selector is invalid for deployment") and a template without labels
/// or containers, which typed clients' `..Default::default()` workloads send and tests here
/// rely on.
fn workload_selector_given(kind: &str, object: &Value, errors: &mut Vec<FieldError>) {
    let Some(Value::Object(labels)) = object.pointer("/spec/template/metadata/labels") else {
        return;
    };
    if labels.is_empty() || !matches!(object.pointer("/spec/selector"), None | Some(Value::Null)) {
        return;
    }
    if kind != "DaemonSet" {
        errors.push(FieldError::required("spec.selector", ""));
    }
    errors.push(FieldError::invalid_go(
        "spec.template.metadata.labels",
        &json_string_map(labels),
        "`selector` does not match template `labels`",
    ));
}

/// A workload's selector, where both it and its template's labels are given, must select the
/// template's labels (`ValidateDeploymentSpec` and the others).
fn selector_matches_template(object: &Value, errors: &mut Vec<FieldError>) {
    let (Some(Value::Object(selector)), Some(Value::Object(labels))) = (
        object.pointer("/spec/selector"),
        object.pointer("/spec/template/metadata/labels"),
    ) else {
        return;
    };
    let text = super::scale::selector_string(selector);
    let Ok(parsed) = super::selector::LabelSelector::parse(&text) else {
        return;
    };
    if text.is_empty() || parsed.matches(|key| labels.get(key).and_then(Value::as_str)) {
        return;
    }
    errors.push(FieldError::invalid_go(
        "spec.template.metadata.labels",
        &json_string_map(labels),
        "`selector` does not match template `labels`",
    ));
}

/// A slice of strings as Go's `%#v` prints it: `[]string{"a", "b"}` (a detail that upstream
/// formats itself, not a bad value, which prints as JSON).
fn go_string_slice<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let inner: Vec<String> = items.into_iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// A field error's bad value of Go type `map[string]string`, as `field.Error` prints it
/// (`json.Marshal`: keys sorted, strings with Go's escapes): `{"a":"b","c":"d"}`.
fn json_string_map(map: &serde_json::Map<String, Value>) -> String {
    go_json::map_with(map, |v| go_json::go_string(v.as_str().unwrap_or("")))
}

/// A field error's bad value of Go type `[]string`, as `field.Error` prints it
/// (`json.Marshal`): `["a","b"]`.
pub(crate) fn json_string_slice<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let inner: Vec<String> = items.into_iter().map(go_json::go_string).collect();
    format!("[{}]", inner.join(","))
}

/// A field error's bad value of Go type `*metav1.LabelSelector`, as `field.Error` prints it
/// (`json.Marshal` of the external type, which the internal API types share): `matchLabels`
/// then `matchExpressions`, each left out when empty (`omitempty`), a requirement's `key`,
/// `operator` and, unless empty, `values`: `{"matchLabels":{"app":"web"}}`.
pub(crate) fn json_label_selector(selector: &Value) -> String {
    let mut fields = Vec::new();
    if let Some(labels) = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        fields.push(format!("\"matchLabels\":{}", json_string_map(labels)));
    }
    if let Some(list) = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
    {
        let items: Vec<String> = list
            .iter()
            .map(|requirement| {
                let text = |key: &str| {
                    go_json::go_string(requirement.get(key).and_then(Value::as_str).unwrap_or(""))
                };
                let mut out = format!(
                    "{{\"key\":{},\"operator\":{}",
                    text("key"),
                    text("operator")
                );
                if let Some(values) = requirement
                    .get("values")
                    .and_then(Value::as_array)
                    .filter(|v| !v.is_empty())
                {
                    let values = json_string_slice(values.iter().map(|v| v.as_str().unwrap_or("")));
                    out.push_str(&format!(",\"values\":{values}"));
                }
                out.push('}');
                out
            })
            .collect();
        fields.push(format!("\"matchExpressions\":[{}]", items.join(",")));
    }
    format!("{{{}}}", fields.join(","))
}

fn pod_spec(path: &str, spec: Option<&Value>, errors: &mut Vec<FieldError>) {
    let Some(spec) = spec else { return };
    let mut seen = HashSet::new();
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (i, container) in containers.iter().enumerate() {
            let field = format!("{path}.{list}[{i}].name");
            match container.get("name").and_then(Value::as_str) {
                None | Some("") => errors.push(FieldError::required(&field, "")),
                Some(name) if !seen.insert(name.to_string()) => {
                    errors.push(FieldError::duplicate(&field, name));
                }
                Some(name) if !is_dns_label(name) => {
                    errors.push(FieldError::invalid(&field, name, DNS1123_LABEL));
                }
                Some(_) => {}
            }
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str)
        && !["Always", "OnFailure", "Never"].contains(&policy)
    {
        errors.push(FieldError::not_supported(
            &format!("{path}.restartPolicy"),
            policy,
            &["Always", "OnFailure", "Never"],
        ));
    }
}

fn service_spec(spec: Option<&Value>, errors: &mut Vec<FieldError>) {
    let Some(spec) = spec else { return };
    const TYPES: [&str; 4] = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];
    if let Some(kind) = spec.get("type").and_then(Value::as_str)
        && !TYPES.contains(&kind)
    {
        errors.push(FieldError::not_supported("spec.type", kind, &TYPES));
    }
    if let Some(ports) = spec.get("ports").and_then(Value::as_array) {
        for (i, port) in ports.iter().enumerate() {
            let Some(number) = port.get("port") else {
                continue;
            };
            if !number.as_i64().is_some_and(|n| (1..=65535).contains(&n)) {
                errors.push(FieldError::invalid(
                    &format!("spec.ports[{i}].port"),
                    number.clone(),
                    "must be between 1 and 65535, inclusive",
                ));
            }
        }
        // `ValidateService`: node ports are for NodePort and LoadBalancer Services (an
        // update to ClusterIP has dropped the old ones: `services::prepare_update`).
        if spec
            .as_object()
            .map_or("ClusterIP", super::services::service_type)
            == "ClusterIP"
        {
            for (i, port) in ports.iter().enumerate() {
                if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    errors.push(FieldError::forbidden(
                        &format!("spec.ports[{i}].nodePort"),
                        "may not be used when `type` is 'ClusterIP'",
                    ));
                }
            }
        }
    }
}

fn immutability(resource: &ResourceType, old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    if is_priority_class(resource) {
        // `ValidatePriorityClassUpdate`: the value and the preemption policy stay.
        if old.get("value") != new.get("value") {
            errors.push(FieldError::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if old.get("preemptionPolicy") != new.get("preemptionPolicy") {
            errors.push(FieldError::invalid(
                "preemptionPolicy",
                new.get("preemptionPolicy").cloned().unwrap_or(Value::Null),
                "field is immutable",
            ));
        }
    }
    if resource.group == "apps"
        && !resource.custom
        && matches!(
            resource.kind.as_str(),
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        )
        && let (Some(before), Some(after)) =
            (old.pointer("/spec/selector"), new.pointer("/spec/selector"))
        && !after.is_null()
        && before != after
    {
        // apps/v1 selectors cannot change (`ValidateDeploymentUpdate` and the others).
        errors.push(FieldError::invalid_go(
            "spec.selector",
            &json_label_selector(after),
            "field is immutable",
        ));
    }
    if resource.group.is_empty()
        && resource.kind == "Secret"
        && let (Some(before), Some(after)) = (old.get("type"), new.get("type"))
        && before != after
    {
        errors.push(FieldError::invalid(
            "type",
            after.clone(),
            "field is immutable",
        ));
    }
    if !resource.group.is_empty() || !matches!(resource.kind.as_str(), "ConfigMap" | "Secret") {
        return;
    }
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return;
    }
    if new.get("immutable") != Some(&Value::Bool(true)) {
        errors.push(FieldError::forbidden("immutable", IMMUTABLE));
    }
    for field in ["data", "binaryData"] {
        if old.get(field) != new.get(field) {
            errors.push(FieldError::forbidden(field, IMMUTABLE));
        }
    }
}

mod admission;
mod apps;
mod autoscaling;
mod batch;
mod data;
mod updates;

#[cfg(test)]
mod tests;
