//! What a real API server's round trip through the Go structs does to a built-in object it
//! stores: it decodes every write into its type's struct and encodes that back, so what it
//! stores and returns is not quite what the client sent:
//!
//! - fields tagged `omitempty` whose Go type is not a pointer disappear when empty or zero:
//!   `annotations: {}`, `data: {}`, `nodeSelector: {}`, `env: []`, `args: []`, `stdin:
//!   false`, `namespace: ""` (and `null` in them). Fields not tagged so keep what they had
//!   (rbac's `rules: []` stays, absent stays absent);
//! - a `null` in a map or a list becomes its element's zero value (`labels: {a: null}` →
//!   `{a: ""}`, `limits: {cpu: null}` → `{cpu: "0"}`), which typed clients can read;
//! - resource quantities (`resources.limits`, a claim's `storage`, quota's `hard`) are
//!   written in canonical form (`"0.5"` → `"500m"`, `1073741824` → `"1073741824"`), see
//!   [`informer_core::quantity`];
//! - timestamps are written in UTC: a `metav1.Time` (a Pod's `startTime`, a condition's
//!   `lastTransitionTime`) to the second (`2024-01-01T10:00:00.9+02:00` →
//!   `2024-01-01T08:00:00Z`), a `metav1.MicroTime` (a Lease's `renewTime`, an Event's
//!   `eventTime`) to the microsecond, always with six digits (`...T00:00:00.000000Z`).
//!
//! Which fields are `omitempty` comes from the Go struct tags (`schema/omit_zero.txt`); a
//! message whose Go struct was not read loses nothing. Objects and values whose JSON type
//! does not match the schema are left alone (the decode check refuses them in requests).

use serde_json::Value;

use super::super::time::{format_micro_time, format_time, parse_rfc3339};
use super::{Cardinality, Kind, MICRO_TIME, QUANTITY, Schema, TIME, is_special};

/// How deep objects are followed (the schema's messages nest far less).
const MAX_DEPTH: usize = 64;

impl Schema {
    /// Rewrites `object` (of message `name`) as Go would write it back after decoding it.
    pub(crate) fn normalize(&self, name: &str, object: &mut Value) {
        self.normalize_message(name, object, 0);
    }

    fn normalize_message(&self, name: &str, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(message) = self.messages.get(name) else {
            return;
        };
        let Value::Object(map) = value else { return };
        map.retain(|key, child| {
            let Some(field) = self.accepts(message, key) else {
                return true;
            };
            if !field.omit_zero {
                return true;
            }
            let empty = match (field.cardinality, &*child) {
                (_, Value::Null) => true,
                (Cardinality::Repeated, Value::Array(items)) => items.is_empty(),
                (Cardinality::Map, Value::Object(entries)) => entries.is_empty(),
                (Cardinality::Optional, scalar) if field.kind != Kind::Message => {
                    super::is_zero(scalar)
                }
                _ => false,
            };
            !empty
        });
        for (key, child) in map.iter_mut() {
            let Some(field) = self.accepts(message, key) else {
                continue;
            };
            // A `null` entry of a map or list decodes into its Go type's zero value.
            let entries: Vec<&mut Value> = match (field.cardinality, &mut *child) {
                (Cardinality::Repeated, Value::Array(items)) => items.iter_mut().collect(),
                (Cardinality::Map, Value::Object(entries)) => entries.values_mut().collect(),
                _ => Vec::new(),
            };
            for entry in entries.into_iter().filter(|e| e.is_null()) {
                if let Some(zero) = zero_of(field) {
                    *entry = zero;
                }
            }
            let Some(target) = field.message.as_deref() else {
                continue;
            };
            let values: Vec<&mut Value> = match (field.cardinality, child) {
                (Cardinality::Repeated, Value::Array(items)) => items.iter_mut().collect(),
                (Cardinality::Map, Value::Object(entries)) => entries.values_mut().collect(),
                (Cardinality::Optional, child) => vec![child],
                _ => Vec::new(),
            };
            for value in values {
                if target == QUANTITY {
                    if let Some(canonical) = informer_core::quantity::canonical_json(value) {
                        *value = Value::String(canonical);
                    }
                } else if target == TIME || target == MICRO_TIME {
                    if let Some(at) = value.as_str().and_then(parse_rfc3339) {
                        *value = Value::String(if target == TIME {
                            format_time(at)
                        } else {
                            format_micro_time(at)
                        });
                    }
                } else if !is_special(target) {
                    self.normalize_message(target, value, depth + 1);
                }
            }
        }
    }
}

/// What Go's JSON decoding makes of a `null` element of `field`'s map or list: its element
/// type's zero value (`""` for a string or bytes, `0`, `false`, `"0"` for a quantity, `{}`
/// for a struct); `None` where Go keeps `null` (a time, raw JSON, a pointer).
fn zero_of(field: &super::Field) -> Option<Value> {
    match field.kind {
        Kind::String | Kind::Bytes => Some(Value::String(String::new())),
        Kind::Bool => Some(Value::Bool(false)),
        Kind::Int32 | Kind::Int64 | Kind::Double => Some(Value::from(0)),
        Kind::Message => match field.message.as_deref() {
            Some(QUANTITY) => Some(Value::String("0".into())),
            Some(message) if !is_special(message) => Some(Value::Object(Default::default())),
            _ => None,
        },
        Kind::JsonOnly => None,
    }
}

impl Schema {
    /// Adds to `object` (of message `name`) the fields Go's JSON writes even when empty, as
    /// a real server's object reads after its round trip through the Go struct: a Node
    /// created without a status has `status.nodeInfo.kubeletVersion: ""`, a container
    /// `resources: {}`, a pod template without labels `metadata: {}`
    /// ([`Field::go_zero`](super::Field::go_zero)). What the object has is left as it is.
    pub(crate) fn fill_go_zeros(&self, name: &str, object: &mut Value) {
        self.fill_message(name, object, 0);
    }

    /// The absent fields of `message` (and of the messages it embeds inline) that Go
    /// writes, with what it writes for them.
    fn insert_go_zeros(
        &self,
        message: &super::Message,
        map: &mut serde_json::Map<String, Value>,
        depth: usize,
    ) {
        for field in &message.fields {
            if field.cardinality == Cardinality::Inline {
                if let Some(inner) = field.message.as_deref().and_then(|m| self.messages.get(m))
                    && depth < MAX_DEPTH
                {
                    self.insert_go_zeros(inner, map, depth + 1);
                }
            } else if let Some(zero) = &field.go_zero
                && !map.contains_key(&field.json)
            {
                map.insert(field.json.clone(), zero.clone());
            }
        }
    }

    fn fill_message(&self, name: &str, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Some(message) = self.messages.get(name) else {
            return;
        };
        let Value::Object(map) = value else { return };
        self.insert_go_zeros(message, map, depth);
        for (key, child) in map.iter_mut() {
            let Some(field) = self.accepts(message, key) else {
                continue;
            };
            let Some(target) = field.message.as_deref().filter(|t| !is_special(t)) else {
                continue;
            };
            match (field.cardinality, child) {
                (Cardinality::Repeated, Value::Array(items)) => {
                    for item in items {
                        self.fill_message(target, item, depth + 1);
                    }
                }
                (Cardinality::Map, Value::Object(entries)) => {
                    for entry in entries.values_mut() {
                        self.fill_message(target, entry, depth + 1);
                    }
                }
                (Cardinality::Optional, child) => self.fill_message(target, child, depth + 1),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
