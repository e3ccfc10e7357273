//! Defaulting, as `apiextensions-apiserver/pkg/apiserver/schema/defaulting` does it: first
//! `null`s of fields that are neither `nullable` nor defaulted are dropped, then every
//! missing (or non-nullable `null`) field with a `default` gets a copy of it, and defaults
//! apply inside defaults too.

use serde_json::Value;

use super::Schema;

impl Schema {
    /// Drops non-nullable nulls without defaults, then applies the defaults.
    pub(crate) fn apply_defaults(&self, object: &mut Value) {
        prune_nulls(object, Some(self));
        apply(object, Some(self));
    }
}

fn is_non_nullable_null(value: &Value, schema: Option<&Schema>) -> bool {
    value.is_null() && schema.is_some_and(|s| !s.nullable)
}

fn prune_nulls(value: &mut Value, schema: Option<&Schema>) {
    let Some(schema) = schema else { return };
    match value {
        Value::Object(map) => {
            map.retain(|key, child| {
                let property = schema
                    .properties
                    .get(key)
                    .or(schema.additional_properties.as_deref());
                match property {
                    Some(p) => !(child.is_null() && p.default.is_none() && !p.nullable),
                    None => true,
                }
            });
            for (key, child) in map.iter_mut() {
                let property = schema
                    .properties
                    .get(key)
                    .or(schema.additional_properties.as_deref());
                prune_nulls(child, property);
            }
        }
        Value::Array(items) => {
            for item in items {
                prune_nulls(item, schema.items.as_deref());
            }
        }
        _ => {}
    }
}

fn apply(value: &mut Value, schema: Option<&Schema>) {
    let Some(schema) = schema else { return };
    match value {
        Value::Object(map) => {
            for (key, property) in &schema.properties {
                let Some(default) = &property.default else {
                    continue;
                };
                let missing = match map.get(key) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, Some(property)),
                };
                if missing {
                    map.insert(key.clone(), default.clone());
                }
            }
            for (key, child) in map.iter_mut() {
                if let Some(property) = schema.properties.get(key) {
                    apply(child, Some(property));
                } else if let Some(values) = schema.additional_properties.as_deref() {
                    if is_non_nullable_null(child, Some(values))
                        && let Some(default) = &values.default
                    {
                        *child = default.clone();
                    }
                    apply(child, Some(values));
                }
            }
        }
        Value::Array(items) => {
            let items_schema = schema.items.as_deref();
            for item in items {
                if is_non_nullable_null(item, items_schema)
                    && let Some(default) = items_schema.and_then(|s| s.default.as_ref())
                {
                    *item = default.clone();
                }
                apply(item, items_schema);
            }
        }
        _ => {}
    }
}
