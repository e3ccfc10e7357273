//! HorizontalPodAutoscalers, as `ValidateHorizontalPodAutoscaler`,
//! `ValidateHorizontalPodAutoscalerUpdate` and `ValidateHorizontalPodAutoscalerStatusUpdate`
//! validate them (`pkg/apis/autoscaling/validation/validation.go`), on the stored
//! (autoscaling/v2, the internal type's) shape, whichever version was written: an
//! autoscaling/v1 write is converted first, so its errors name v2 fields, as the real
//! server's do.
//!
//! - `minReplicas` at least 1 (0 only for an object that already has 0: `HPAScaleToZero` is
//!   off), `maxReplicas` at least 1 and not below `minReplicas`;
//! - `scaleTargetRef` (and an Object metric's `describedObject`): `kind` and `name` set and
//!   valid path segments;
//! - each metric: a known `type` whose source is the one set, the source's fields (metric
//!   names, target types, positive quantities, a utilization above 0, one of a target value
//!   and a utilization), and `minReplicas: 0` only with an Object or External metric;
//! - `behavior`: stabilization windows within 0..=3600, a known `selectPolicy`, at least one
//!   policy, each a known type with a positive value and a period within 1..=1800, a
//!   tolerance not below 0;
//! - `status.currentReplicas` and `status.desiredReplicas` not negative.
//!
//! The status update's checks and the spec's are made on every write: an update of the main
//! resource keeps the stored status, a status update the stored spec.

use serde_json::Value;

use crate::apiserver::pods::quantity_nanos;
use crate::apiserver::status::FieldError;
use crate::apiserver::{str_at, value_at};

/// `MaxPeriodSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
/// `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
/// `validMetricSourceTypesList` (sorted, as `sets.String.List` returns it).
const METRIC_SOURCE_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
/// `validSelectPolicyTypesList`.
const SELECT_POLICIES: [&str; 3] = ["Disabled", "Max", "Min"];
/// `validPolicyTypesList`.
const POLICY_TYPES: [&str; 2] = ["Percent", "Pods"];

fn int_at(value: &Value, pointer: &str) -> Option<i64> {
    value_at(value, pointer).and_then(Value::as_i64)
}

/// `Quantity.Sign()`: -1, 0 or 1 (0 for one that does not parse: decoding refused it).
fn sign(quantity: &Value) -> i8 {
    match quantity_nanos(quantity) {
        Some(n) if n > 0 => 1,
        Some(n) if n < 0 => -1,
        _ => 0,
    }
}

/// The errors of a HorizontalPodAutoscaler about to be stored (`old`: the stored one, for an
/// update).
pub(super) fn horizontal_pod_autoscaler(
    object: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) {
    // An object that already scales to zero may keep doing so.
    let lower_bound = match old.and_then(|old| int_at(old, "/spec/minReplicas")) {
        Some(0) => 0,
        _ => 1,
    };
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let min = int_at(spec, "/minReplicas");
    let max = int_at(spec, "/maxReplicas").unwrap_or(0);
    if let Some(min) = min
        && min < lower_bound
    {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            min,
            &format!("must be greater than or equal to {lower_bound}"),
        ));
    }
    if max < 1 {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if let Some(min) = min
        && max < min
    {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    reference(spec.get("scaleTargetRef"), "spec.scaleTargetRef", errors);
    metrics(spec, min, errors);
    if let Some(behavior) = value_at(spec, "/behavior") {
        for (key, path) in [
            ("scaleUp", "spec.behavior.scaleUp"),
            ("scaleDown", "spec.behavior.scaleDown"),
        ] {
            if let Some(rules) = value_at(behavior, &format!("/{key}")) {
                scaling_rules(rules, path, errors);
            }
        }
    }
    for key in ["currentReplicas", "desiredReplicas"] {
        if let Some(n) = int_at(object, &format!("/status/{key}"))
            && n < 0
        {
            errors.push(FieldError::invalid(
                &format!("status.{key}"),
                n,
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// `ValidateCrossVersionObjectReference`.
fn reference(reference: Option<&Value>, path: &str, errors: &mut Vec<FieldError>) {
    let reference = reference.unwrap_or(&Value::Null);
    for field in ["kind", "name"] {
        let value = str_at(reference, &format!("/{field}"));
        let path = format!("{path}.{field}");
        if value.is_empty() {
            errors.push(FieldError::required(&path, ""));
        }
        for message in super::path_segment_errors(value) {
            errors.push(FieldError::invalid(&path, value, &message));
        }
    }
}

/// `validateMetrics`.
fn metrics(spec: &Value, min: Option<i64>, errors: &mut Vec<FieldError>) {
    let metrics = value_at(spec, "/metrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (i, metric) in metrics.iter().enumerate() {
        metric_spec(metric, &format!("spec.metrics[{i}]"), errors);
    }
    let scales_on_objects = metrics
        .iter()
        .any(|m| matches!(str_at(m, "/type"), "Object" | "External"));
    if min == Some(0) && !scales_on_objects {
        errors.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
}

/// `validateMetricSpec`.
fn metric_spec(metric: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let kind = str_at(metric, "/type");
    if kind.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&kind) {
        errors.push(FieldError::not_supported(
            &format!("{path}.type"),
            kind,
            &METRIC_SOURCE_TYPES,
        ));
    }
    // The sources set, in the order the reference looks at them; only the first is checked.
    let mut present: Vec<&str> = Vec::new();
    for source in [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ] {
        let Some(value) = value_at(metric, &format!("/{source}")) else {
            continue;
        };
        present.push(source);
        if present.len() > 1 {
            continue;
        }
        let path = format!("{path}.{source}");
        match source {
            "object" => object_source(value, &path, errors),
            "external" => external_source(value, &path, errors),
            "pods" => pods_source(value, &path, errors),
            "resource" => resource_source(value, &path, false, errors),
            _ => resource_source(value, &path, true, errors),
        }
    }
    let expected = match kind {
        "Object" => Some("object"),
        "Pods" => Some("pods"),
        "Resource" => Some("resource"),
        "External" => Some("external"),
        "ContainerResource" => Some("containerResource"),
        _ => None,
    };
    match expected {
        Some(source) if !present.contains(&source) => errors.push(FieldError::required(
            &format!("{path}.{source}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        None => errors.push(FieldError::not_supported(
            &format!("{path}.type"),
            kind,
            &METRIC_SOURCE_TYPES,
        )),
    }
    if present.len() != 1 {
        for source in present.iter().filter(|s| Some(**s) != expected) {
            errors.push(FieldError::forbidden(
                &format!("{path}.{source}"),
                "must populate the given metric source only",
            ));
        }
    }
}

/// `validateObjectSource`.
fn object_source(source: &Value, path: &str, errors: &mut Vec<FieldError>) {
    reference(
        source.get("describedObject"),
        &format!("{path}.describedObject"),
        errors,
    );
    metric_identifier(source, &format!("{path}.metric"), errors);
    metric_target(source, &format!("{path}.target"), errors);
    if value_at(source, "/target/value").is_none()
        && value_at(source, "/target/averageValue").is_none()
    {
        errors.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

/// `validateExternalSource`.
fn external_source(source: &Value, path: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(source, &format!("{path}.metric"), errors);
    metric_target(source, &format!("{path}.target"), errors);
    let value = value_at(source, "/target/value").is_some();
    let average = value_at(source, "/target/averageValue").is_some();
    if !value && !average {
        errors.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        ));
    }
    if value && average {
        errors.push(FieldError::forbidden(
            &format!("{path}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        ));
    }
}

/// `validatePodsSource`.
fn pods_source(source: &Value, path: &str, errors: &mut Vec<FieldError>) {
    metric_identifier(source, &format!("{path}.metric"), errors);
    metric_target(source, &format!("{path}.target"), errors);
    if value_at(source, "/target/averageValue").is_none() {
        errors.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
}

/// The standard resources of a container (`IsStandardContainerResourceName`).
fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// `validateResourceSource` and `validateContainerResourceSource`.
fn resource_source(source: &Value, path: &str, container: bool, errors: &mut Vec<FieldError>) {
    let name = str_at(source, "/name");
    if name.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.name"),
            "must specify a resource name",
        ));
    } else if container && !name.contains('/') && !is_standard_container_resource(name) {
        errors.push(FieldError::invalid(
            &format!("{path}.name"),
            name,
            "must be a standard resource for containers",
        ));
    }
    if container {
        let container = str_at(source, "/container");
        let field = format!("{path}.container");
        if container.is_empty() {
            errors.push(FieldError::required(&field, "must specify a container"));
        } else {
            // `IsDNS1123Label`: the length and the pattern, each on its own.
            if container.len() > 63 {
                errors.push(FieldError::invalid(
                    &field,
                    container,
                    "must be no more than 63 characters",
                ));
            }
            if !is_label_pattern(container) {
                errors.push(FieldError::invalid(&field, container, super::DNS1123_LABEL));
            }
        }
    }
    metric_target(source, &format!("{path}.target"), errors);
    let utilization = value_at(source, "/target/averageUtilization").is_some();
    let average = value_at(source, "/target/averageValue").is_some();
    if !utilization && !average {
        errors.push(FieldError::required(
            &format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if utilization && average {
        errors.push(FieldError::forbidden(
            &format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
}

/// The pattern of an RFC 1123 label, whatever its length: lower-case alphanumerics and `-`,
/// alphanumeric at both ends.
fn is_label_pattern(label: &str) -> bool {
    let bytes = label.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|c| edge(c) || *c == b'-')
}

/// `validateMetricTarget`.
fn metric_target(source: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let target = source.get("target").unwrap_or(&Value::Null);
    let kind = str_at(target, "/type");
    if kind.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(kind, "Utilization" | "Value" | "AverageValue") {
        errors.push(FieldError::invalid(
            &format!("{path}.type"),
            kind,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(quantity) = value_at(target, &format!("/{field}"))
            && sign(quantity) != 1
        {
            errors.push(FieldError::invalid(
                &format!("{path}.{field}"),
                quantity.clone(),
                "must be positive",
            ));
        }
    }
    if let Some(utilization) = int_at(target, "/averageUtilization")
        && utilization < 1
    {
        errors.push(FieldError::invalid(
            &format!("{path}.averageUtilization"),
            utilization,
            "must be greater than 0",
        ));
    }
}

/// `validateMetricIdentifier`.
fn metric_identifier(source: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let name = str_at(source, "/metric/name");
    let field = format!("{path}.name");
    if name.is_empty() {
        errors.push(FieldError::required(&field, "must specify a metric name"));
    }
    for message in super::path_segment_errors(name) {
        errors.push(FieldError::invalid(&field, name, &message));
    }
}

/// `validateScalingRules` (its tolerance as `ValidateNonnegativeQuantity`).
fn scaling_rules(rules: &Value, path: &str, errors: &mut Vec<FieldError>) {
    if let Some(window) = int_at(rules, "/stabilizationWindowSeconds") {
        let field = format!("{path}.stabilizationWindowSeconds");
        if window < 0 {
            errors.push(FieldError::invalid(
                &field,
                window,
                "must be greater than or equal to zero",
            ));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            errors.push(FieldError::invalid(
                &field,
                window,
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(policy) = value_at(rules, "/selectPolicy")
        && !SELECT_POLICIES.contains(&policy.as_str().unwrap_or(""))
    {
        errors.push(FieldError::not_supported(
            &format!("{path}.selectPolicy"),
            policy.clone(),
            &SELECT_POLICIES,
        ));
    }
    let policies = value_at(rules, "/policies")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if policies.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        let path = format!("{path}.policies[{i}]");
        let kind = str_at(policy, "/type");
        if !POLICY_TYPES.contains(&kind) {
            errors.push(FieldError::not_supported(
                &format!("{path}.type"),
                kind,
                &POLICY_TYPES,
            ));
        }
        let value = int_at(policy, "/value").unwrap_or(0);
        if value <= 0 {
            errors.push(FieldError::invalid(
                &format!("{path}.value"),
                value,
                "must be greater than zero",
            ));
        }
        let period = int_at(policy, "/periodSeconds").unwrap_or(0);
        let field = format!("{path}.periodSeconds");
        if period <= 0 {
            errors.push(FieldError::invalid(
                &field,
                period,
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errors.push(FieldError::invalid(
                &field,
                period,
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    if let Some(tolerance) = value_at(rules, "/tolerance")
        && sign(tolerance) < 0
    {
        errors.push(FieldError::invalid(
            &format!("{path}.tolerance"),
            tolerance.clone(),
            "must be greater than or equal to 0",
        ));
    }
}

#[cfg(test)]
mod tests;
