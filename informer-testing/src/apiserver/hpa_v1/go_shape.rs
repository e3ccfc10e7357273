//! Go's shapes of the autoscaling/v1 structs that annotations carry (and of the internal
//! behavior, which has no JSON tags), for decoding annotations as `json.Unmarshal` decodes them
//! and writing them as `json.Marshal` writes them: fields in declaration order, `omitempty`
//! respected, zero quantities `"0"`, a zero time `null`, `<`, `>` and `&` escaped.

use crate::apiserver::go_json::go_string;
use crate::apiserver::schema;
use serde_json::{Map, Value, json};

// `json.Unmarshal` does and writing them as `json.Marshal` does.

/// A Go type, as far as its JSON goes.
#[derive(Clone, Copy)]
pub(super) enum Ty {
    Str,
    Int,
    Quantity,
    Time,
    Struct(&'static [F]),
    Structs(&'static [F]),
    Strings,
    Labels,
}

/// When `json.Marshal` leaves a field out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Omit {
    /// Never: a missing value is written as its zero (`""`, `0`, `"0"`, `null`, `{...}`).
    Never,
    /// `omitempty` on a value: left out when zero.
    Empty,
    /// `omitempty` on a pointer or slice: left out when unset.
    Unset,
    /// A pointer or slice without `omitempty` (the untagged internal behavior): `null` when
    /// unset.
    Null,
}

/// A struct field: its JSON name, Go type and omission rule.
pub(super) struct F(pub(super) &'static str, pub(super) Ty, pub(super) Omit);

const REFERENCE: &[F] = &[
    F("kind", Ty::Str, Omit::Never),
    F("name", Ty::Str, Omit::Never),
    F("apiVersion", Ty::Str, Omit::Empty),
];
const REQUIREMENT: &[F] = &[
    F("key", Ty::Str, Omit::Never),
    F("operator", Ty::Str, Omit::Never),
    F("values", Ty::Strings, Omit::Unset),
];
const SELECTOR: &[F] = &[
    F("matchLabels", Ty::Labels, Omit::Unset),
    F("matchExpressions", Ty::Structs(REQUIREMENT), Omit::Unset),
];
const OBJECT_SOURCE: &[F] = &[
    F("target", Ty::Struct(REFERENCE), Omit::Never),
    F("metricName", Ty::Str, Omit::Never),
    F("targetValue", Ty::Quantity, Omit::Never),
    F("selector", Ty::Struct(SELECTOR), Omit::Unset),
    F("averageValue", Ty::Quantity, Omit::Unset),
];
const PODS_SOURCE: &[F] = &[
    F("metricName", Ty::Str, Omit::Never),
    F("targetAverageValue", Ty::Quantity, Omit::Never),
    F("selector", Ty::Struct(SELECTOR), Omit::Unset),
];
const RESOURCE_SOURCE: &[F] = &[
    F("name", Ty::Str, Omit::Never),
    F("targetAverageUtilization", Ty::Int, Omit::Unset),
    F("targetAverageValue", Ty::Quantity, Omit::Unset),
];
const CONTAINER_RESOURCE_SOURCE: &[F] = &[
    F("name", Ty::Str, Omit::Never),
    F("targetAverageUtilization", Ty::Int, Omit::Unset),
    F("targetAverageValue", Ty::Quantity, Omit::Unset),
    F("container", Ty::Str, Omit::Never),
];
const EXTERNAL_SOURCE: &[F] = &[
    F("metricName", Ty::Str, Omit::Never),
    F("metricSelector", Ty::Struct(SELECTOR), Omit::Unset),
    F("targetValue", Ty::Quantity, Omit::Unset),
    F("targetAverageValue", Ty::Quantity, Omit::Unset),
];
/// v1 `MetricSpec`.
pub(super) const METRIC_SPEC: &[F] = &[
    F("type", Ty::Str, Omit::Never),
    F("object", Ty::Struct(OBJECT_SOURCE), Omit::Unset),
    F("pods", Ty::Struct(PODS_SOURCE), Omit::Unset),
    F("resource", Ty::Struct(RESOURCE_SOURCE), Omit::Unset),
    F(
        "containerResource",
        Ty::Struct(CONTAINER_RESOURCE_SOURCE),
        Omit::Unset,
    ),
    F("external", Ty::Struct(EXTERNAL_SOURCE), Omit::Unset),
];
const OBJECT_STATUS: &[F] = &[
    F("target", Ty::Struct(REFERENCE), Omit::Never),
    F("metricName", Ty::Str, Omit::Never),
    F("currentValue", Ty::Quantity, Omit::Never),
    F("selector", Ty::Struct(SELECTOR), Omit::Unset),
    F("averageValue", Ty::Quantity, Omit::Unset),
];
const PODS_STATUS: &[F] = &[
    F("metricName", Ty::Str, Omit::Never),
    F("currentAverageValue", Ty::Quantity, Omit::Never),
    F("selector", Ty::Struct(SELECTOR), Omit::Unset),
];
const RESOURCE_STATUS: &[F] = &[
    F("name", Ty::Str, Omit::Never),
    F("currentAverageUtilization", Ty::Int, Omit::Unset),
    F("currentAverageValue", Ty::Quantity, Omit::Never),
];
const CONTAINER_RESOURCE_STATUS: &[F] = &[
    F("name", Ty::Str, Omit::Never),
    F("currentAverageUtilization", Ty::Int, Omit::Unset),
    F("currentAverageValue", Ty::Quantity, Omit::Never),
    F("container", Ty::Str, Omit::Never),
];
const EXTERNAL_STATUS: &[F] = &[
    F("metricName", Ty::Str, Omit::Never),
    F("metricSelector", Ty::Struct(SELECTOR), Omit::Unset),
    F("currentValue", Ty::Quantity, Omit::Never),
    F("currentAverageValue", Ty::Quantity, Omit::Unset),
];
/// v1 `MetricStatus`.
pub(super) const METRIC_STATUS: &[F] = &[
    F("type", Ty::Str, Omit::Never),
    F("object", Ty::Struct(OBJECT_STATUS), Omit::Unset),
    F("pods", Ty::Struct(PODS_STATUS), Omit::Unset),
    F("resource", Ty::Struct(RESOURCE_STATUS), Omit::Unset),
    F(
        "containerResource",
        Ty::Struct(CONTAINER_RESOURCE_STATUS),
        Omit::Unset,
    ),
    F("external", Ty::Struct(EXTERNAL_STATUS), Omit::Unset),
];
/// v1 `HorizontalPodAutoscalerCondition` (a zero `lastTransitionTime` is `null`).
pub(super) const CONDITION: &[F] = &[
    F("type", Ty::Str, Omit::Never),
    F("status", Ty::Str, Omit::Never),
    F("lastTransitionTime", Ty::Time, Omit::Never),
    F("reason", Ty::Str, Omit::Empty),
    F("message", Ty::Str, Omit::Empty),
];
/// The internal `HPAScalingPolicy`: no JSON tags, so Go's field names.
const POLICY: &[F] = &[
    F("Type", Ty::Str, Omit::Never),
    F("Value", Ty::Int, Omit::Never),
    F("PeriodSeconds", Ty::Int, Omit::Never),
];
/// The internal `HPAScalingRules`.
const RULES: &[F] = &[
    F("StabilizationWindowSeconds", Ty::Int, Omit::Null),
    F("SelectPolicy", Ty::Str, Omit::Null),
    F("Policies", Ty::Structs(POLICY), Omit::Null),
    F("Tolerance", Ty::Quantity, Omit::Null),
];
/// The internal `HorizontalPodAutoscalerBehavior`.
pub(super) const BEHAVIOR_FIELDS: &[F] = &[
    F("ScaleUp", Ty::Struct(RULES), Omit::Null),
    F("ScaleDown", Ty::Struct(RULES), Omit::Null),
];

/// Whether `omitempty` leaves a value out: a scalar's zero ([`schema::is_zero`]), or nothing,
/// an empty list or an empty map.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        scalar => schema::is_zero(scalar),
    }
}

/// `json.Marshal` of a value of type `ty` (`None`: unset, so the type's zero).
fn marshal_value(ty: Ty, value: Option<&Value>, out: &mut String) {
    let value = value.filter(|v| !v.is_null());
    match (ty, value) {
        (Ty::Str, Some(Value::String(s))) => out.push_str(&go_string(s)),
        (Ty::Str, _) => out.push_str("\"\""),
        (Ty::Int, Some(Value::Number(n))) => out.push_str(&n.to_string()),
        (Ty::Int, _) => out.push('0'),
        (Ty::Quantity, Some(v)) => {
            let text = informer_core::quantity::canonical_json(v)
                .unwrap_or_else(|| v.as_str().unwrap_or("0").to_string());
            out.push_str(&go_string(&text));
        }
        (Ty::Quantity, None) => out.push_str("\"0\""),
        (Ty::Time, Some(Value::String(s))) => out.push_str(&go_string(s)),
        (Ty::Time, _) => out.push_str("null"),
        (Ty::Struct(fields), v) => marshal_struct(fields, v.unwrap_or(&Value::Null), out),
        (Ty::Structs(fields), Some(Value::Array(items))) => {
            out.push_str(&marshal_list(fields, items));
        }
        (Ty::Strings, Some(Value::Array(items))) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&go_string(item.as_str().unwrap_or("")));
            }
            out.push(']');
        }
        (Ty::Labels, Some(Value::Object(map))) => {
            // Go writes a map's keys sorted, as the map here keeps them.
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&go_string(key));
                out.push(':');
                out.push_str(&go_string(item.as_str().unwrap_or("")));
            }
            out.push('}');
        }
        (Ty::Structs(_) | Ty::Strings | Ty::Labels, _) => out.push_str("null"),
    }
}

pub(super) fn marshal_struct(fields: &[F], value: &Value, out: &mut String) {
    out.push('{');
    let mut first = true;
    for F(name, ty, omit) in fields {
        let field = value.get(*name).filter(|v| !v.is_null());
        let skip = match omit {
            Omit::Never | Omit::Null => false,
            Omit::Unset => field.is_none(),
            Omit::Empty => field.is_none_or(is_zero),
        };
        if skip {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&go_string(name));
        out.push(':');
        match (omit, field) {
            (Omit::Null, None) => out.push_str("null"),
            _ => marshal_value(*ty, field, out),
        }
    }
    out.push('}');
}

/// `json.Marshal` of a slice of structs.
pub(super) fn marshal_list(fields: &[F], items: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        marshal_struct(fields, item, &mut out);
    }
    out.push(']');
    out
}

/// What `json.Unmarshal` into a value of type `ty` keeps of `value`, with the struct fields'
/// own names (Go matches them exactly, else ignoring case); `Err` where it fails (a value of
/// the wrong JSON type, an integer out of `int32`, a quantity that does not parse). Unknown
/// fields are ignored and `null` leaves a field unset.
pub(super) fn unmarshal_value(ty: Ty, value: &Value) -> Result<Option<Value>, ()> {
    if value.is_null() {
        return Ok(None);
    }
    Ok(Some(match (ty, value) {
        (Ty::Str | Ty::Time, Value::String(_)) => value.clone(),
        (Ty::Int, Value::Number(n)) => match n.as_i64().map(i32::try_from) {
            Some(Ok(n)) => json!(n),
            _ => return Err(()),
        },
        (Ty::Quantity, Value::String(_) | Value::Number(_)) => {
            json!(informer_core::quantity::canonical_json(value).ok_or(())?)
        }
        (Ty::Struct(fields), Value::Object(_)) => unmarshal_struct(fields, value)?,
        (Ty::Structs(fields), Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|item| match item {
                    Value::Null => Ok(json!({})),
                    item => unmarshal_struct(fields, item),
                })
                .collect::<Result<_, _>>()?,
        ),
        (Ty::Strings, Value::Array(items)) => Value::Array(
            items
                .iter()
                .map(|item| match item {
                    Value::Null => Ok(json!("")),
                    Value::String(_) => Ok(item.clone()),
                    _ => Err(()),
                })
                .collect::<Result<_, _>>()?,
        ),
        (Ty::Labels, Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| match v {
                    Value::Null => Ok((k.clone(), json!(""))),
                    Value::String(_) => Ok((k.clone(), v.clone())),
                    _ => Err(()),
                })
                .collect::<Result<_, _>>()?,
        ),
        _ => return Err(()),
    }))
}

fn unmarshal_struct(fields: &[F], value: &Value) -> Result<Value, ()> {
    let Value::Object(map) = value else {
        return Err(());
    };
    let mut out = Map::new();
    for F(name, ty, _) in fields {
        let found = map.get(*name).or_else(|| {
            map.iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        });
        if let Some(found) = found
            && let Some(decoded) = unmarshal_value(*ty, found)?
        {
            out.insert(name.to_string(), decoded);
        }
    }
    Ok(Value::Object(out))
}

/// An annotation holding a JSON list of structs, as `json.Unmarshal` decodes it; `None`
/// when it does not (`null` is an empty list).
pub(super) fn unmarshal_list(fields: &'static [F], text: &str) -> Option<Vec<Value>> {
    let value: Value = serde_json::from_str(text).ok()?;
    match unmarshal_value(Ty::Structs(fields), &value).ok()? {
        Some(Value::Array(items)) => Some(items),
        _ => Some(Vec::new()),
    }
}
