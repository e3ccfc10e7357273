//! What a real API server's round trip through the Go structs does to a built-in object it
//! stores: it decodes every write into its type's struct and encodes that back, so what it
//! stores and returns is not quite what the client sent:
//!
//! - fields tagged `omitempty` whose Go type is not a pointer disappear when empty or zero:
//!   `annotations: {}`, `data: {}`, `nodeSelector: {}`, `env: []`, `args: []`, `stdin:
//!   false`, `namespace: ""` (and `null` in them). Fields not tagged so keep what they had
//!   (rbac's `rules: []` stays, absent stays absent);
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

#[cfg(test)]
mod tests;
