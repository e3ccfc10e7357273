//! The metrics, current metrics and behavior of an autoscaler in the shapes autoscaling/v1's
//! annotations give them, and back: `Convert_autoscaling_MetricSpec_To_v1_MetricSpec`,
//! `Convert_autoscaling_MetricStatus_To_v1_MetricStatus` (and their inverses) with the
//! per-source functions of `pkg/apis/autoscaling/v1/conversion.go`.

use serde_json::{Map, Value, json};

use super::go_shape::{BEHAVIOR_FIELDS, Ty, marshal_struct, unmarshal_value};
use super::{copy, identifier, quantity_or_zero, reference};
use crate::apiserver::{str_at, value_at};

/// A stored (v2) metric in v1's `MetricSpec` shape.
pub(super) fn metric_to_v1(metric: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(metric, "/type")));
    if let Some(source) = value_at(metric, "/object") {
        let mut v1 = Map::new();
        v1.insert(
            "target".into(),
            reference(value_at(source, "/describedObject")),
        );
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        v1.insert(
            "targetValue".into(),
            quantity_or_zero(source, "/target/value"),
        );
        copy(&mut v1, "selector", source, "/metric/selector");
        copy(&mut v1, "averageValue", source, "/target/averageValue");
        out.insert("object".into(), Value::Object(v1));
    }
    if let Some(source) = value_at(metric, "/pods") {
        let mut v1 = Map::new();
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        v1.insert(
            "targetAverageValue".into(),
            quantity_or_zero(source, "/target/averageValue"),
        );
        copy(&mut v1, "selector", source, "/metric/selector");
        out.insert("pods".into(), Value::Object(v1));
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = value_at(metric, &format!("/{key}")) {
            let mut v1 = Map::new();
            v1.insert("name".into(), json!(str_at(source, "/name")));
            copy(
                &mut v1,
                "targetAverageUtilization",
                source,
                "/target/averageUtilization",
            );
            copy(
                &mut v1,
                "targetAverageValue",
                source,
                "/target/averageValue",
            );
            if key == "containerResource" {
                v1.insert("container".into(), json!(str_at(source, "/container")));
            }
            out.insert(key.into(), Value::Object(v1));
        }
    }
    if let Some(source) = value_at(metric, "/external") {
        let mut v1 = Map::new();
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        copy(&mut v1, "metricSelector", source, "/metric/selector");
        copy(&mut v1, "targetValue", source, "/target/value");
        copy(
            &mut v1,
            "targetAverageValue",
            source,
            "/target/averageValue",
        );
        out.insert("external".into(), Value::Object(v1));
    }
    Value::Object(out)
}

/// A v1 `MetricSpec` (decoded from the annotation) as the v2 metric it stands for.
pub(super) fn metric_from_v1(metric: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(metric, "/type")));
    if let Some(source) = value_at(metric, "/object") {
        let kind = if value_at(source, "/averageValue").is_none() {
            "Value"
        } else {
            "AverageValue"
        };
        let mut target = Map::new();
        target.insert("type".into(), json!(kind));
        target.insert("value".into(), quantity_or_zero(source, "/targetValue"));
        copy(&mut target, "averageValue", source, "/averageValue");
        out.insert(
            "object".into(),
            json!({
                "describedObject": reference(value_at(source, "/target")),
                "metric": identifier(source, "metricName", "selector"),
                "target": target,
            }),
        );
    }
    if let Some(source) = value_at(metric, "/pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(source, "metricName", "selector"),
                "target": {
                    "type": "AverageValue",
                    "averageValue": quantity_or_zero(source, "/targetAverageValue"),
                },
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = value_at(metric, &format!("/{key}")) {
            let kind = if value_at(source, "/targetAverageUtilization").is_none() {
                "AverageValue"
            } else {
                "Utilization"
            };
            let mut target = Map::new();
            target.insert("type".into(), json!(kind));
            copy(&mut target, "averageValue", source, "/targetAverageValue");
            copy(
                &mut target,
                "averageUtilization",
                source,
                "/targetAverageUtilization",
            );
            let mut v2 = Map::new();
            v2.insert("name".into(), json!(str_at(source, "/name")));
            v2.insert("target".into(), Value::Object(target));
            if key == "containerResource" {
                v2.insert("container".into(), json!(str_at(source, "/container")));
            }
            out.insert(key.into(), Value::Object(v2));
        }
    }
    if let Some(source) = value_at(metric, "/external") {
        let kind = if value_at(source, "/targetValue").is_none() {
            "AverageValue"
        } else {
            "Value"
        };
        let mut target = Map::new();
        target.insert("type".into(), json!(kind));
        copy(&mut target, "value", source, "/targetValue");
        copy(&mut target, "averageValue", source, "/targetAverageValue");
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(source, "metricName", "metricSelector"),
                "target": target,
            }),
        );
    }
    Value::Object(out)
}

/// A stored (v2) current metric in v1's `MetricStatus` shape.
pub(super) fn metric_status_to_v1(metric: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(metric, "/type")));
    if let Some(source) = value_at(metric, "/object") {
        let mut v1 = Map::new();
        v1.insert(
            "target".into(),
            reference(value_at(source, "/describedObject")),
        );
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        v1.insert(
            "currentValue".into(),
            quantity_or_zero(source, "/current/value"),
        );
        copy(&mut v1, "selector", source, "/metric/selector");
        copy(&mut v1, "averageValue", source, "/current/averageValue");
        out.insert("object".into(), Value::Object(v1));
    }
    if let Some(source) = value_at(metric, "/pods") {
        let mut v1 = Map::new();
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        v1.insert(
            "currentAverageValue".into(),
            quantity_or_zero(source, "/current/averageValue"),
        );
        copy(&mut v1, "selector", source, "/metric/selector");
        out.insert("pods".into(), Value::Object(v1));
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = value_at(metric, &format!("/{key}")) {
            let mut v1 = Map::new();
            v1.insert("name".into(), json!(str_at(source, "/name")));
            copy(
                &mut v1,
                "currentAverageUtilization",
                source,
                "/current/averageUtilization",
            );
            v1.insert(
                "currentAverageValue".into(),
                quantity_or_zero(source, "/current/averageValue"),
            );
            if key == "containerResource" {
                v1.insert("container".into(), json!(str_at(source, "/container")));
            }
            out.insert(key.into(), Value::Object(v1));
        }
    }
    if let Some(source) = value_at(metric, "/external") {
        let mut v1 = Map::new();
        v1.insert("metricName".into(), json!(str_at(source, "/metric/name")));
        copy(&mut v1, "metricSelector", source, "/metric/selector");
        v1.insert(
            "currentValue".into(),
            quantity_or_zero(source, "/current/value"),
        );
        copy(
            &mut v1,
            "currentAverageValue",
            source,
            "/current/averageValue",
        );
        out.insert("external".into(), Value::Object(v1));
    }
    Value::Object(out)
}

/// A v1 `MetricStatus` (decoded from the annotation) as the v2 current metric.
pub(super) fn metric_status_from_v1(metric: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!(str_at(metric, "/type")));
    if let Some(source) = value_at(metric, "/object") {
        let mut current = Map::new();
        current.insert("value".into(), quantity_or_zero(source, "/currentValue"));
        copy(&mut current, "averageValue", source, "/averageValue");
        out.insert(
            "object".into(),
            json!({
                "metric": identifier(source, "metricName", "selector"),
                "current": current,
                "describedObject": reference(value_at(source, "/target")),
            }),
        );
    }
    if let Some(source) = value_at(metric, "/pods") {
        out.insert(
            "pods".into(),
            json!({
                "metric": identifier(source, "metricName", "selector"),
                "current": {"averageValue": quantity_or_zero(source, "/currentAverageValue")},
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(source) = value_at(metric, &format!("/{key}")) {
            let mut current = Map::new();
            current.insert(
                "averageValue".into(),
                quantity_or_zero(source, "/currentAverageValue"),
            );
            copy(
                &mut current,
                "averageUtilization",
                source,
                "/currentAverageUtilization",
            );
            let mut v2 = Map::new();
            v2.insert("name".into(), json!(str_at(source, "/name")));
            v2.insert("current".into(), Value::Object(current));
            if key == "containerResource" {
                v2.insert("container".into(), json!(str_at(source, "/container")));
            }
            out.insert(key.into(), Value::Object(v2));
        }
    }
    if let Some(source) = value_at(metric, "/external") {
        let mut current = Map::new();
        current.insert("value".into(), quantity_or_zero(source, "/currentValue"));
        copy(&mut current, "averageValue", source, "/currentAverageValue");
        out.insert(
            "external".into(),
            json!({
                "metric": identifier(source, "metricName", "metricSelector"),
                "current": current,
            }),
        );
    }
    Value::Object(out)
}

/// Go's field name for a v2 JSON name (`scaleUp` -> `ScaleUp`), and back.
fn go_name(json_name: &str) -> String {
    let mut chars = json_name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

fn json_name(go_name: &str) -> String {
    let mut chars = go_name.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_lowercase().to_string() + chars.as_str()
    })
}

/// Renames an object's keys, recursively (lists included).
fn renamed(value: &Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (rename(k), renamed(v, rename)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| renamed(v, rename)).collect()),
        other => other.clone(),
    }
}

/// The behavior annotation's text: `json.Marshal` of the internal behavior.
pub(super) fn behavior_annotation(behavior: &Value) -> String {
    let mut out = String::new();
    marshal_struct(BEHAVIOR_FIELDS, &renamed(behavior, go_name), &mut out);
    out
}

/// The behavior an annotation holds, if it decodes into the internal struct and sets a
/// rule (`behavior != HorizontalPodAutoscalerBehavior{}`).
pub(super) fn behavior_from_annotation(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    let decoded = unmarshal_value(Ty::Struct(BEHAVIOR_FIELDS), &value).ok()??;
    let rules = decoded.as_object()?;
    if rules.is_empty() {
        return None;
    }
    Some(renamed(&decoded, json_name))
}
