//! Whether a cached child already holds what would be applied: the check that keeps a
//! controller from rewriting an object that is already as it wants it.

use informer_core::quantity;
use serde_json::Value;

/// Whether `actual` (the cached object, as JSON) holds every field of `desired` (what
/// would be applied) with the same value.
///
/// - Objects: every field of `desired` is in `actual` and holds there; fields only in
///   `actual` (set by the server, or by other field managers) do not matter.
/// - Lists: the same length, each element holding its counterpart (server defaults inside
///   list items, such as a container's `terminationMessagePath`, do not matter).
/// - A field `desired` leaves at its zero value (`null`, `false`, `0`, `""`, `{}`, `[]`)
///   holds where `actual` lacks it: the API server omits such fields (Go's `omitempty`).
/// - Numbers compare by value (`1` and `1.0` are equal).
/// - Resource quantities (the values of `limits`, `requests`, `capacity`, `hard` and the
///   other maps of quantities of built-in types, and `sizeLimit`) hold where `actual` is the
///   canonical form of `desired`: the server stores them so (`0.5` as `500m`, `1024Mi` as
///   `1Gi`, a number as a string). Anywhere else a string holds only as written.
pub(crate) fn holds(actual: &Value, desired: &Value) -> bool {
    holds_at(actual, desired, Values::Any)
}

/// What the values being compared are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Values {
    Any,
    /// An object whose fields' values are quantities (`limits`, `requests`...).
    QuantityMap,
    /// A quantity.
    Quantity,
}

/// The fields whose values are maps of quantities, or a quantity.
fn values_of(field: &str) -> Values {
    match field {
        "limits"
        | "requests"
        | "capacity"
        | "allocatable"
        | "hard"
        | "used"
        | "overhead"
        | "max"
        | "min"
        | "default"
        | "defaultRequest"
        | "maxLimitRequestRatio" => Values::QuantityMap,
        "sizeLimit" => Values::Quantity,
        _ => Values::Any,
    }
}

fn holds_at(actual: &Value, desired: &Value, values: Values) -> bool {
    match (actual, desired) {
        (Value::Object(actual), Value::Object(desired)) => desired.iter().all(|(field, want)| {
            let inner = if values == Values::QuantityMap {
                Values::Quantity
            } else {
                values_of(field)
            };
            match actual.get(field) {
                Some(have) => holds_at(have, want, inner),
                None => is_zero(want),
            }
        }),
        (Value::Array(actual), Value::Array(desired)) => {
            actual.len() == desired.len()
                && actual
                    .iter()
                    .zip(desired)
                    .all(|(have, want)| holds_at(have, want, Values::Any))
        }
        (Value::Number(have), Value::Number(want)) => {
            have == want || (have.as_f64().is_some() && have.as_f64() == want.as_f64())
        }
        (Value::Null, want) => is_zero(want),
        (Value::String(have), want) if values == Values::Quantity => {
            want.as_str() == Some(have.as_str())
                || quantity::canonical_json(want).as_deref() == Some(have.as_str())
        }
        (have, want) => have == want,
    }
}

/// Go's zero values, which the API server leaves out of the objects it returns.
fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.values().all(is_zero),
    }
}

#[cfg(test)]
mod tests;
