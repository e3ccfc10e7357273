//! Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`)
//! into the JSON the rest of the server works with.
//!
//! kubectl's typed commands (`create namespace|configmap|secret|deployment|service`,
//! `run`, …) and client-go programs send protobuf, and kubectl does not fall back to JSON
//! when a server answers 415. A body is the four bytes `k8s\0`, then a `runtime.Unknown`
//! whose `typeMeta` names the object's `apiVersion` and `kind` and whose `raw` holds the
//! object's message. Messages are decoded from the field table of [`super::schema`]; the
//! messages with a JSON form of their own become what Kubernetes' JSON has for them:
//!
//! | message | JSON |
//! | --- | --- |
//! | `Time` | RFC 3339 string with seconds (`null` when empty, as Go's zero time) |
//! | `MicroTime` | RFC 3339 string with microseconds |
//! | `Duration` | Go duration string (`1h2m3.5s`) |
//! | `IntOrString` | a number or a string |
//! | `Quantity` | its string |
//! | `RawExtension`, `FieldsV1` | the raw JSON they carry |
//!
//! Nothing is dropped silently: an unknown field number, a wrong wire type, invalid UTF-8,
//! a truncated message or a type the server has no schema for is an error (the caller
//! answers 400 or 415). Protobuf carries every non-pointer scalar field, zero or not; the
//! zero values (`""`, `false`, `0`) of fields whose Go field is tagged `omitempty` are left
//! out, as a real server's JSON (decoded into Go structs) leaves them out. Pointer fields
//! are on the wire only when set, and their zeros mean something (`replicas: 0`): kept.
//! (Protobuf never carries an empty list or map; JSON bodies get the same treatment, and
//! canonical quantities, when the write is stored: `Schema::normalize`.)

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::schema::{self, Cardinality, Field, Kind, Schema};
use super::time::{format_micro_time, format_time};

/// The magic bytes that start every Kubernetes protobuf body.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// The most nested messages a body may have.
const MAX_DEPTH: usize = 64;

/// Why a body could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The bytes are not a valid encoding.
    Malformed(String),
    /// The object's type has no schema here.
    UnsupportedType {
        /// The `apiVersion` in the envelope.
        api_version: String,
        /// The `kind` in the envelope.
        kind: String,
    },
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Malformed(why) => write!(f, "invalid protobuf body: {why}"),
            DecodeError::UnsupportedType { api_version, kind } => write!(
                f,
                "no protobuf schema for {kind} in version {api_version:?}; send JSON or YAML"
            ),
        }
    }
}

fn malformed(why: impl Into<String>) -> DecodeError {
    DecodeError::Malformed(why.into())
}

/// A protobuf value as read off the wire.
#[derive(Clone, Copy, Debug)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    /// A 32-bit value (no field of the served types has one: always a wire-type error).
    Fixed32,
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for i in 0..10 {
            let (&byte, rest) = self
                .bytes
                .split_first()
                .ok_or_else(|| malformed("truncated varint"))?;
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.bytes.len() {
            return Err(malformed("truncated field"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// The next field: its number and value, or `None` at the end.
    fn field(&mut self) -> Result<Option<(u32, Wire<'a>)>, DecodeError> {
        if self.bytes.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| malformed(format!("invalid field number {}", key >> 3)))?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => Wire::Fixed64(u64::from_le_bytes(
                self.take(8)?.try_into().unwrap_or([0; 8]),
            )),
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| malformed("length does not fit in memory"))?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => return Err(malformed(format!("unsupported wire type {other}"))),
        };
        Ok(Some((number, wire)))
    }
}

fn fields(bytes: &[u8]) -> impl Iterator<Item = Result<(u32, Wire<'_>), DecodeError>> {
    let mut reader = Reader { bytes };
    std::iter::from_fn(move || reader.field().transpose())
}

fn utf8(bytes: &[u8], what: &str) -> Result<String, DecodeError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| malformed(format!("{what} is not UTF-8")))
}

/// Decodes a whole body: envelope, then the object. Returns the object as JSON with its
/// `apiVersion` and `kind`.
pub(crate) fn decode(body: &[u8]) -> Result<Value, DecodeError> {
    let envelope = body
        .strip_prefix(MAGIC.as_slice())
        .ok_or_else(|| malformed("the body does not start with the k8s protobuf magic bytes"))?;
    let schema = Schema::builtin();
    let unknown = decode_message(schema, schema::UNKNOWN, envelope, 0)?;
    let type_meta = unknown.get("typeMeta").cloned().unwrap_or_default();
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let (api_version, kind) = (text(&type_meta, "apiVersion"), text(&type_meta, "kind"));
    let encoding = text(&unknown, "contentEncoding");
    if !encoding.is_empty() {
        return Err(malformed(format!(
            "unsupported content encoding {encoding:?}"
        )));
    }
    let content_type = text(&unknown, "contentType");
    if !content_type.is_empty() && content_type != "application/vnd.kubernetes.protobuf" {
        return Err(malformed(format!(
            "unsupported content type {content_type:?}"
        )));
    }
    let raw = unknown.get("raw").and_then(Value::as_str).unwrap_or("");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(|_| malformed("raw is not bytes"))?;
    let message = schema
        .message_name_for(&api_version, &kind)
        .ok_or_else(|| DecodeError::UnsupportedType {
            api_version: api_version.clone(),
            kind: kind.clone(),
        })?;
    let mut object = decode_message(schema, &message, &raw, 0)?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(object)
}

/// Decodes one message into a JSON object (or a special message into its JSON form).
fn decode_message(
    schema: &Schema,
    name: &str,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(malformed("messages nested too deeply"));
    }
    if schema::is_special(name) {
        return special(name, bytes);
    }
    let message = schema
        .message(name)
        .ok_or_else(|| malformed(format!("no schema for message {name}")))?;
    let mut object = Map::new();
    for item in fields(bytes) {
        let (number, wire) = item?;
        let field = message
            .by_number(number)
            .ok_or_else(|| malformed(format!("unknown field number {number} in message {name}")))?;
        match field.cardinality {
            Cardinality::Optional => {
                let value = scalar_or_message(schema, field, wire, depth)?;
                object.insert(field.json.clone(), value);
            }
            Cardinality::Repeated => {
                let list = object
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(list) = list else {
                    return Err(malformed(format!("field {} repeated and not", field.json)));
                };
                match (field.kind, wire) {
                    // Packed numbers.
                    (
                        Kind::Int32 | Kind::Int64 | Kind::Bool | Kind::Double,
                        Wire::Bytes(packed),
                    ) => {
                        let mut reader = Reader { bytes: packed };
                        while !reader.bytes.is_empty() {
                            let wire = if field.kind == Kind::Double {
                                Wire::Fixed64(u64::from_le_bytes(
                                    reader.take(8)?.try_into().unwrap_or([0; 8]),
                                ))
                            } else {
                                Wire::Varint(reader.varint()?)
                            };
                            list.push(scalar(field, wire)?);
                        }
                    }
                    _ => list.push(scalar_or_message(schema, field, wire, depth)?),
                }
            }
            Cardinality::Map => {
                let Wire::Bytes(entry) = wire else {
                    return Err(wrong_wire(field));
                };
                let (key, value) = map_entry(schema, field, entry, depth)?;
                let map = object
                    .entry(field.json.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(map) = map {
                    map.insert(key, value);
                }
            }
            Cardinality::Inline => {
                let Wire::Bytes(inner) = wire else {
                    return Err(wrong_wire(field));
                };
                let target = field.message.as_deref().unwrap_or("");
                if let Value::Object(inner) = decode_message(schema, target, inner, depth + 1)? {
                    object.extend(inner);
                }
            }
        }
    }
    // Protobuf carries every non-pointer scalar, zero or not; Go's JSON leaves out the zero
    // values of fields tagged `omitempty`. Where the Go tags are not known, the empty
    // strings of optional fields.
    object.retain(|key, value| {
        let Some(field) = message.fields.iter().find(|f| f.json == *key) else {
            return true;
        };
        if message.go_tags {
            !(field.omit_zero && schema::is_zero(value))
        } else {
            !(value.as_str() == Some("") && field.kind == Kind::String && !field.required)
        }
    });
    Ok(Value::Object(object))
}

fn wrong_wire(field: &Field) -> DecodeError {
    malformed(format!("field {:?} has the wrong wire type", field.json))
}

fn scalar_or_message(
    schema: &Schema,
    field: &Field,
    wire: Wire<'_>,
    depth: usize,
) -> Result<Value, DecodeError> {
    if field.kind != Kind::Message {
        return scalar(field, wire);
    }
    let Wire::Bytes(bytes) = wire else {
        return Err(wrong_wire(field));
    };
    decode_message(
        schema,
        field.message.as_deref().unwrap_or(""),
        bytes,
        depth + 1,
    )
}

fn scalar(field: &Field, wire: Wire<'_>) -> Result<Value, DecodeError> {
    Ok(match (field.kind, wire) {
        (Kind::String, Wire::Bytes(b)) => json!(utf8(b, &field.json)?),
        (Kind::Bytes, Wire::Bytes(b)) => {
            json!(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Kind::Bool, Wire::Varint(v)) => json!(v != 0),
        // int32 is sign-extended to 64 bits on the wire.
        (Kind::Int32, Wire::Varint(v)) => json!(v as i64 as i32),
        (Kind::Int64, Wire::Varint(v)) => json!(v as i64),
        (Kind::Double, Wire::Fixed64(v)) => {
            let f = f64::from_bits(v);
            serde_json::Number::from_f64(f)
                .map(Value::Number)
                .ok_or_else(|| {
                    malformed(format!("field {:?} is not a finite number", field.json))
                })?
        }
        _ => return Err(wrong_wire(field)),
    })
}

fn map_entry(
    schema: &Schema,
    field: &Field,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), DecodeError> {
    let mut key = String::new();
    let mut value = None;
    for item in fields(entry) {
        match item? {
            (1, Wire::Bytes(k)) => key = utf8(k, "a map key")?,
            (2, wire) => value = Some(scalar_or_message(schema, field, wire, depth)?),
            (n, _) => {
                return Err(malformed(format!(
                    "unknown field number {n} in an entry of {:?}",
                    field.json
                )));
            }
        }
    }
    // A missing value is the zero value of its kind.
    let value = match value {
        Some(value) => value,
        None => match field.kind {
            Kind::String | Kind::Bytes => json!(""),
            Kind::Message => decode_message(
                schema,
                field.message.as_deref().unwrap_or(""),
                &[],
                depth + 1,
            )?,
            Kind::Bool => json!(false),
            _ => json!(0),
        },
    };
    Ok((key, value))
}

/// The fields of a special message, by number.
fn special_fields(bytes: &[u8]) -> Result<Vec<(u32, Wire<'_>)>, DecodeError> {
    fields(bytes).collect()
}

fn special(name: &str, bytes: &[u8]) -> Result<Value, DecodeError> {
    let fields = special_fields(bytes)?;
    let unknown = |n: u32| malformed(format!("unknown field number {n} in message {name}"));
    match name {
        schema::TIME | schema::MICRO_TIME => {
            if fields.is_empty() {
                return Ok(Value::Null);
            }
            let (mut seconds, mut nanos) = (0i64, 0i32);
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Varint(v)) => seconds = v as i64,
                    (2, Wire::Varint(v)) => nanos = v as i64 as i32,
                    (n, _) => return Err(unknown(n)),
                }
            }
            let at = jiff::Timestamp::new(seconds, nanos)
                .map_err(|e| malformed(format!("invalid time: {e}")))?;
            Ok(json!(if name == schema::TIME {
                format_time(at)
            } else {
                format_micro_time(at)
            }))
        }
        schema::DURATION => {
            let mut nanos = 0i64;
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Varint(v)) => nanos = v as i64,
                    (n, _) => return Err(unknown(n)),
                }
            }
            Ok(json!(go_duration(nanos)))
        }
        schema::QUANTITY => {
            let mut text = String::new();
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Bytes(b)) => text = utf8(b, "a quantity")?,
                    (n, _) => return Err(unknown(n)),
                }
            }
            Ok(json!(text))
        }
        schema::INT_OR_STRING => {
            let (mut kind, mut int, mut text) = (0u64, 0i32, String::new());
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Varint(v)) => kind = v,
                    (2, Wire::Varint(v)) => int = v as i64 as i32,
                    (3, Wire::Bytes(b)) => text = utf8(b, "an int-or-string")?,
                    (n, _) => return Err(unknown(n)),
                }
            }
            match kind {
                0 => Ok(json!(int)),
                1 => Ok(json!(text)),
                other => Err(malformed(format!("invalid IntOrString type {other}"))),
            }
        }
        schema::RAW_EXTENSION | schema::FIELDS_V1 => {
            let mut raw: &[u8] = b"";
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Bytes(b)) => raw = b,
                    (n, _) => return Err(unknown(n)),
                }
            }
            if raw.is_empty() {
                return Ok(Value::Null);
            }
            serde_json::from_slice(raw)
                .map_err(|e| malformed(format!("embedded raw object is not JSON: {e}")))
        }
        extra if schema::is_extra_value(extra) => {
            let mut items = Vec::new();
            for (number, wire) in fields {
                match (number, wire) {
                    (1, Wire::Bytes(b)) => items.push(Value::String(utf8(b, "an extra value")?)),
                    (n, _) => return Err(unknown(n)),
                }
            }
            Ok(Value::Array(items))
        }
        other => Err(malformed(format!("no decoder for message {other}"))),
    }
}

/// Formats nanoseconds as Go's `time.Duration.String()` does.
pub(crate) fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_string();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    let fraction = |value: u64, unit: u64, digits: usize| -> String {
        let whole = value / unit;
        let rest = value % unit;
        if rest == 0 {
            whole.to_string()
        } else {
            let text = format!("{rest:0digits$}");
            format!("{whole}.{}", text.trim_end_matches('0'))
        }
    };
    if n < 1_000 {
        return format!("{sign}{n}ns");
    }
    if n < 1_000_000 {
        return format!("{sign}{}µs", fraction(n, 1_000, 3));
    }
    if n < 1_000_000_000 {
        return format!("{sign}{}ms", fraction(n, 1_000_000, 6));
    }
    let total_seconds = n / 1_000_000_000;
    let sub = n % 1_000_000_000;
    let (hours, minutes, seconds) = (
        total_seconds / 3600,
        (total_seconds / 60) % 60,
        total_seconds % 60,
    );
    let seconds = fraction(seconds * 1_000_000_000 + sub, 1_000_000_000, 9);
    match (hours, minutes) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

#[cfg(test)]
mod tests;
