//! What `ValidateDeploymentSpec` (`pkg/apis/apps/validation`) checks beyond the replicas,
//! selector and template, for the fields that are present:
//!
//! | field | rule |
//! | --- | --- |
//! | `spec.strategy` | `Recreate` without `rollingUpdate` (`Forbidden`: what `kubectl patch` of the type alone, without `$retainKeys`, runs into); a `RollingUpdate`'s `maxUnavailable` and `maxSurge` non-negative integers or percentages, not both 0, `maxUnavailable` at most 100% |
//! | `spec.minReadySeconds`, `spec.revisionHistoryLimit`, `spec.progressDeadlineSeconds` | not negative; the deadline greater than `minReadySeconds` |
//!
//! Values that are an `IntOrString` print as `field.Error` prints one: its `MarshalJSON`, the
//! number or the quoted string (`0`, `"150%"`).

use serde_json::Value;

use crate::apiserver::status::FieldError;

const NEGATIVE: &str = "must be greater than or equal to 0";
const PERCENT: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// A Deployment's strategy and its timing fields.
pub(super) fn deployment(object: &Value, errors: &mut Vec<FieldError>) {
    let Some(spec) = object.get("spec") else {
        return;
    };
    if let Some(strategy) = spec.get("strategy").filter(|s| s.is_object()) {
        let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
        match strategy.get("type").and_then(Value::as_str) {
            Some("Recreate") if rolling.is_some() => errors.push(FieldError::forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            )),
            Some("RollingUpdate") => {
                if let Some(rolling) = rolling {
                    rolling_update(rolling, errors);
                }
            }
            _ => {}
        }
    }
    let int = |field: &str| spec.get(field).and_then(Value::as_i64);
    if let Some(n) = int("minReadySeconds").filter(|n| *n < 0) {
        errors.push(FieldError::invalid("spec.minReadySeconds", n, NEGATIVE));
    }
    if let Some(n) = int("revisionHistoryLimit").filter(|n| *n < 0) {
        errors.push(FieldError::invalid(
            "spec.revisionHistoryLimit",
            n,
            NEGATIVE,
        ));
    }
    if let Some(deadline) = int("progressDeadlineSeconds") {
        if deadline < 0 {
            errors.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                deadline,
                NEGATIVE,
            ));
        }
        if deadline <= int("minReadySeconds").unwrap_or(0) {
            errors.push(FieldError::invalid(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
}

/// `ValidateRollingUpdateDeployment`.
fn rolling_update(rolling: &Value, errors: &mut Vec<FieldError>) {
    const UNAVAILABLE: &str = "spec.strategy.rollingUpdate.maxUnavailable";
    const SURGE: &str = "spec.strategy.rollingUpdate.maxSurge";
    let unavailable = rolling.get("maxUnavailable").unwrap_or(&Value::Null);
    let surge = rolling.get("maxSurge").unwrap_or(&Value::Null);
    positive_int_or_percent(UNAVAILABLE, unavailable, errors);
    positive_int_or_percent(SURGE, surge, errors);
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
        errors.push(FieldError::invalid_go(
            UNAVAILABLE,
            &json_int_or_string(unavailable),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    if let Some(percent) = percent(unavailable)
        && percent > 100
    {
        errors.push(FieldError::invalid_go(
            UNAVAILABLE,
            &json_int_or_string(unavailable),
            "must not be greater than 100%",
        ));
    }
}

/// `ValidatePositiveIntOrPercent`: a percentage (`[0-9]+%`) or a non-negative integer.
fn positive_int_or_percent(field: &str, value: &Value, errors: &mut Vec<FieldError>) {
    match value {
        Value::String(s) if !is_percent(s) => {
            errors.push(FieldError::invalid_go(
                field,
                &json_int_or_string(value),
                PERCENT,
            ));
        }
        Value::Number(n) => {
            if let Some(n) = n.as_i64().filter(|n| *n < 0) {
                errors.push(FieldError::invalid(field, n, NEGATIVE));
            }
        }
        _ => {}
    }
}

fn is_percent(s: &str) -> bool {
    s.strip_suffix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// `getPercentValue`: the number of a valid percentage.
fn percent(value: &Value) -> Option<i64> {
    let s = value.as_str().filter(|s| is_percent(s))?;
    Some(s[..s.len() - 1].parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a percentage's number, else the integer (`IntValue`: a string
/// that is not a number is 0).
fn int_or_percent_value(value: &Value) -> i64 {
    match (percent(value), value) {
        (Some(p), _) => p,
        (None, Value::String(s)) => s.parse().unwrap_or(0),
        (None, v) => v.as_i64().unwrap_or(0),
    }
}

/// A field error's bad value of Go type `intstr.IntOrString`, as `field.Error` prints it (the
/// type's `MarshalJSON`: `25`, `"150%"`; an unset one is the integer 0).
fn json_int_or_string(value: &Value) -> String {
    match value {
        Value::String(s) => crate::apiserver::go_json::go_string(s),
        v => v.as_i64().unwrap_or(0).to_string(),
    }
}

#[cfg(test)]
mod tests;
