//! What decoding a JSON object into a built-in type's Go struct refuses: a value of the
//! wrong JSON type (`data: {port: 8080}` in a ConfigMap), an integer out of its range or with
//! a fraction, bytes that are not base64, a quantity or a time that does not parse. A real
//! API server answers such a body with 400 and the decoder's first error; the test server
//! must too, or it would store objects that typed clients (kube-rs, the Python and Node
//! clients) then fail to read, whole lists included.

use base64::Engine as _;
use serde_json::Value;

use super::{
    Cardinality, DURATION, FIELDS_V1, Field, INT_OR_STRING, Kind, MICRO_TIME, QUANTITY,
    RAW_EXTENSION, Schema, TIME, UNKNOWN, is_extra_value,
};

impl Schema {
    /// The first error Go's JSON decoder (`sigs.k8s.io/json`, as kube-apiserver uses it)
    /// reports for `object` decoded into message `name`, worded as it words it
    /// (`json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of
    /// type int32`); `None` if it decodes. Fields the type does not have are not looked at
    /// (they are the unknown-field check's), and `null` decodes into anything. Objects'
    /// fields are visited in key order, so of several errors the first by key is reported
    /// (Go reports the first in the document).
    pub(crate) fn go_decode_error(&self, name: &str, object: &Value) -> Option<String> {
        self.decode_message(Decoder::Json, name, object, "")
    }

    /// The first error `runtime.DefaultUnstructuredConverter.FromUnstructured` reports for
    /// `object` (a map decoded from JSON with integers kept as `int64`) converted into
    /// message `name`, worded as it words it (`cannot restore map from string`, `cannot
    /// convert int64 to string`); `None` if it converts. This is how kube-apiserver turns a
    /// strategically patched map back into its type. Fields and order as
    /// [`go_decode_error`](Self::go_decode_error).
    pub(crate) fn go_convert_error(&self, name: &str, object: &Value) -> Option<String> {
        self.decode_message(Decoder::Unstructured, name, object, "")
    }

    fn decode_message(
        &self,
        decoder: Decoder,
        name: &str,
        value: &Value,
        path: &str,
    ) -> Option<String> {
        let message = self.messages.get(name)?;
        let Value::Object(map) = value else {
            return None;
        };
        let owner = short_name(name);
        map.iter().find_map(|(key, child)| {
            let field = self.accepts(message, key)?;
            if child.is_null() {
                return None;
            }
            let path = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            self.decode_field(decoder, owner, field, child, &path)
        })
    }

    fn decode_field(
        &self,
        decoder: Decoder,
        owner: &str,
        field: &Field,
        value: &Value,
        path: &str,
    ) -> Option<String> {
        let element = || go_type(field);
        match field.cardinality {
            Cardinality::Repeated => match value {
                Value::Array(items) => items
                    .iter()
                    .filter(|item| !item.is_null())
                    .find_map(|item| self.decode_single(decoder, owner, field, item, path)),
                other => Some(match decoder {
                    Decoder::Json => mismatch(other, owner, path, &format!("[]{}", element())),
                    Decoder::Unstructured => {
                        format!("cannot restore slice from {}", reflect_kind(other))
                    }
                }),
            },
            Cardinality::Map => match value {
                Value::Object(entries) => entries
                    .values()
                    .filter(|item| !item.is_null())
                    .find_map(|item| self.decode_single(decoder, owner, field, item, path)),
                other => Some(match decoder {
                    Decoder::Json => {
                        mismatch(other, owner, path, &format!("map[string]{}", element()))
                    }
                    Decoder::Unstructured => {
                        format!("cannot restore map from {}", reflect_kind(other))
                    }
                }),
            },
            _ => self.decode_single(decoder, owner, field, value, path),
        }
    }

    /// One value of `field` (an element of a list or map field, or the field's value).
    fn decode_single(
        &self,
        decoder: Decoder,
        owner: &str,
        field: &Field,
        value: &Value,
        path: &str,
    ) -> Option<String> {
        if decoder == Decoder::Unstructured {
            return self.convert_single(owner, field, value, path);
        }
        let wrong = || Some(mismatch(value, owner, path, &go_type(field)));
        match field.kind {
            Kind::String if !value.is_string() => wrong(),
            Kind::Bool if !value.is_boolean() => wrong(),
            Kind::Double if !value.is_number() => wrong(),
            Kind::String | Kind::Bool | Kind::Double => None,
            Kind::Int32 | Kind::Int64 => {
                let Value::Number(number) = value else {
                    return wrong();
                };
                let fits = match (field.kind, number.as_i64()) {
                    (Kind::Int32, Some(n)) => i32::try_from(n).is_ok(),
                    (_, Some(_)) => true,
                    _ => false,
                };
                (!fits).then(|| {
                    format!(
                        "json: cannot unmarshal number {number} into Go struct field {owner}.{path} of type {}",
                        go_type(field)
                    )
                })
            }
            Kind::Bytes => match value {
                Value::String(text) => base64_error(text),
                _ => wrong(),
            },
            Kind::JsonOnly => None,
            Kind::Message => {
                let target = field.message.as_deref()?;
                match target {
                    TIME | MICRO_TIME => time_error(value),
                    QUANTITY => quantity_error(value),
                    INT_OR_STRING => int_or_string_error(value),
                    DURATION => (!value.is_string()).then(|| go_value_mismatch(value, "string")),
                    extra if is_extra_value(extra) => match value {
                        Value::Array(items) => items
                            .iter()
                            .any(|item| !item.is_string() && !item.is_null())
                            .then(|| go_value_mismatch(value, "[]string")),
                        _ => wrong(),
                    },
                    FIELDS_V1 | RAW_EXTENSION | UNKNOWN => None,
                    _ if value.is_object() => {
                        self.decode_message(Decoder::Json, target, value, path)
                    }
                    _ => wrong(),
                }
            }
        }
    }

    /// One value of `field` as the unstructured converter converts it: scalars by Go's
    /// conversion rules between JSON's value kinds, types with their own `UnmarshalJSON`
    /// through it (the same errors as decoding), structs from maps only.
    fn convert_single(
        &self,
        owner: &str,
        field: &Field,
        value: &Value,
        path: &str,
    ) -> Option<String> {
        let cannot_convert =
            |to: &str| Some(format!("cannot convert {} to {to}", go_value_type(value)));
        match field.kind {
            Kind::String | Kind::JsonOnly => (!value.is_string())
                .then(|| cannot_convert("string"))
                .flatten(),
            Kind::Bool => (!value.is_boolean())
                .then(|| cannot_convert("bool"))
                .flatten(),
            Kind::Double => (!value.is_number())
                .then(|| cannot_convert("float64"))
                .flatten(),
            Kind::Int32 | Kind::Int64 => match value {
                // Integers convert; a float only without a fraction.
                Value::Number(n) if n.is_i64() || n.is_u64() => {
                    self.decode_single(Decoder::Json, owner, field, value, path)
                }
                Value::Number(n) if n.as_f64().is_some_and(|f| f == f.trunc()) => None,
                _ => cannot_convert(&go_type(field)),
            },
            Kind::Bytes => match value {
                Value::String(text) => base64_error(text),
                Value::Array(_) => None,
                other => Some(format!("cannot restore slice from {}", reflect_kind(other))),
            },
            Kind::Message => {
                let target = field.message.as_deref()?;
                match target {
                    TIME | MICRO_TIME | QUANTITY | INT_OR_STRING | DURATION => {
                        self.decode_single(Decoder::Json, owner, field, value, path)
                    }
                    extra if is_extra_value(extra) => match value {
                        Value::Array(items) => items
                            .iter()
                            .find(|item| !item.is_string() && !item.is_null())
                            .map(|item| {
                                format!("cannot convert {} to string", go_value_type(item))
                            }),
                        other => Some(format!("cannot restore slice from {}", reflect_kind(other))),
                    },
                    FIELDS_V1 | RAW_EXTENSION | UNKNOWN => None,
                    _ if value.is_object() => {
                        self.decode_message(Decoder::Unstructured, target, value, path)
                    }
                    _ => Some(format!(
                        "cannot restore struct from: {}",
                        reflect_kind(value)
                    )),
                }
            }
        }
    }
}

/// Which of Go's decoders judges a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decoder {
    /// `encoding/json` (as `sigs.k8s.io/json`): a request body.
    Json,
    /// `runtime.DefaultUnstructuredConverter`: a strategically patched map.
    Unstructured,
}

/// The `reflect.Kind` of a JSON value decoded into `interface{}` with integers kept
/// (`UnmarshalCaseSensitivePreserveInts`).
fn reflect_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "invalid",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

/// The Go type of a JSON value decoded into `interface{}`, as `reflect.Type.String` prints
/// it.
fn go_value_type(value: &Value) -> &'static str {
    match value {
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        other => reflect_kind(other),
    }
}

/// A JSON value as Go's `fmt` prints the map it decodes into with `%+v`
/// (`map[metadata:map[labels:invalid]]`): keys sorted, strings bare, `<nil>` for null.
pub(crate) fn go_print(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if n.is_u64() => format_go_float(f),
            (None, Some(f)) => format_go_float(f),
            (None, None) => n.to_string(),
        },
        Value::String(text) => text.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_print).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let entries: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_print(v)))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
    }
}

/// A `float64` as `fmt`'s `%v` prints it: the shortest digits, in `%e` form (two exponent
/// digits at least) when the exponent is below -4 or at least 6 (`1e+06`, `123456`,
/// `1.5e-05`).
fn format_go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: `1.234567e6`.
    let shortest = format!("{f:e}");
    let (mantissa, exp) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        // Shortest digits in plain form: Rust's `Display` of an f64 is that.
        let plain = format!("{f}");
        plain
            .strip_suffix(".0")
            .map(str::to_string)
            .unwrap_or(plain)
    }
}

/// A Go struct's name: the last label of its message (`ContainerPort`).
fn short_name(message: &str) -> &str {
    message.rsplit('.').next().unwrap_or(message)
}

/// The Go type of one value of `field`, as `reflect` prints it (`int32`, `v1.PodSpec`,
/// `resource.Quantity`).
fn go_type(field: &Field) -> String {
    match field.kind {
        Kind::String | Kind::JsonOnly => "string".into(),
        Kind::Bool => "bool".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Double => "float64".into(),
        Kind::Bytes => "[]uint8".into(),
        Kind::Message => {
            let message = field.message.as_deref().unwrap_or_default();
            let mut labels = message.rsplit('.');
            let name = labels.next().unwrap_or_default();
            let package = labels.next().unwrap_or_default();
            format!("{package}.{name}")
        }
    }
}

/// What Go calls a JSON value's type in its errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn mismatch(value: &Value, owner: &str, path: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {owner}.{path} of type {go_type}",
        json_kind(value)
    )
}

/// The error of a type's own `UnmarshalJSON` calling `json.Unmarshal` into a plain value.
fn go_value_mismatch(value: &Value, go_type: &str) -> String {
    match value {
        Value::Number(n) => {
            format!("json: cannot unmarshal number {n} into Go value of type {go_type}")
        }
        other => format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            json_kind(other)
        ),
    }
}

/// `metav1.Time` and `MicroTime`: an RFC 3339 string.
fn time_error(value: &Value) -> Option<String> {
    let Value::String(text) = value else {
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_kind(value)
        ));
    };
    let parses = text.contains('T') && text.parse::<jiff::Timestamp>().is_ok();
    (!parses).then(|| {
        format!(
            "parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {text:?} as \"2006\""
        )
    })
}

/// `intstr.IntOrString`: a string, or an integer that fits `int32`.
fn int_or_string_error(value: &Value) -> Option<String> {
    match value {
        Value::String(_) => None,
        Value::Number(n) if n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()) => None,
        other => Some(go_value_mismatch(other, "int32")),
    }
}

/// `resource.Quantity`: a string or a number that `ParseQuantity` takes (`500m`, `1Gi`,
/// `1e3`, `0.5`); anything else is parsed as its JSON text, as `UnmarshalJSON` does, and
/// refused.
fn quantity_error(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    };
    informer_core::quantity::parse_error(&text).map(str::to_string)
}

/// Go's `base64.StdEncoding` (padded; line breaks skipped): where it stops.
fn base64_error(text: &str) -> Option<String> {
    let cleaned: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    // Go's decoder is not strict: bits after the last byte may be set.
    let lenient = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    if lenient.decode(&cleaned).is_ok() {
        return None;
    }
    // The first byte that is neither of the alphabet nor padding at the end, else the start
    // of the last incomplete group of four.
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let padding_from = cleaned
        .iter()
        .rposition(|&b| b != b'=')
        .map_or(0, |i| i + 1);
    let at = cleaned
        .iter()
        .enumerate()
        .find(|&(i, &b)| !(alphabet(b) || (b == b'=' && i >= padding_from)))
        .map_or(cleaned.len() - cleaned.len() % 4, |(i, _)| i);
    Some(format!("illegal base64 data at input byte {at}"))
}

#[cfg(test)]
mod tests;
