//! Pruning: the fields a structural schema does not declare are dropped, as
//! `apiextensions-apiserver/pkg/apiserver/schema/pruning` drops them, and their paths
//! returned (`spec.items[0].bogus`), sorted, for `fieldValidation`.

use serde_json::{Map, Value};

use super::super::schema::Schema as BuiltinSchema;
use super::{FieldSchema, Schema, child_path};

const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

impl Schema {
    /// Drops the unknown fields of an object of this schema (the root of a custom resource:
    /// `apiVersion`, `kind` and the fields of `metadata` are known) and returns their paths:
    /// the unknown fields of `metadata` first, then the others, each group sorted.
    pub(crate) fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        if let Some(meta) = object.get_mut("metadata") {
            unknown.extend(prune_object_meta(meta, "metadata"));
        }
        let mut found = Found::default();
        prune(object, Some(self), "", &mut found);
        found.fields.sort();
        unknown.extend(found.fields);
        // The real server coerces embedded metadata after pruning: those come last.
        unknown.extend(found.embedded_metadata);
        unknown
    }

    /// Drops the unknown fields of a value of this schema that is not a resource (a
    /// `default`, which the CRD's validation refuses with unknown fields).
    pub(crate) fn prune_value(&self, value: &mut Value) {
        prune(value, Some(self), "", &mut Found::default());
    }
}

/// The unknown fields found: by the schema, and in embedded resources' `metadata`.
#[derive(Default)]
struct Found {
    fields: Vec<String>,
    embedded_metadata: Vec<String>,
}

/// Drops the fields `ObjectMeta` does not have (and a `metadata` that is not an object).
fn prune_object_meta(meta: &mut Value, path: &str) -> Vec<String> {
    let mut unknown = BuiltinSchema::builtin().prune_unknown(OBJECT_META, meta, false);
    for field in &mut unknown {
        *field = child_path(path, field);
    }
    unknown.sort();
    unknown
}

fn prune(value: &mut Value, schema: Option<&Schema>, path: &str, unknown: &mut Found) {
    if let Some(schema) = schema
        && schema.preserve_unknown_fields
    {
        skip_prune(value, schema, path, unknown);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(schema) = schema else {
                for key in map.keys() {
                    unknown.fields.push(child_path(path, key));
                }
                map.clear();
                return;
            };
            prune_fields(map, schema, path, unknown, true);
        }
        Value::Array(items) => {
            let items_schema = schema.and_then(|s| s.items.as_deref());
            for (i, item) in items.iter_mut().enumerate() {
                prune(item, items_schema, &format!("{path}[{i}]"), unknown);
            }
        }
        _ => {}
    }
}

/// The fields of an object: declared ones and map values are pruned below; resource fields
/// are kept (an embedded resource's `metadata` pruned to `ObjectMeta`); others are dropped
/// when `drop_unknown`.
fn prune_fields(
    map: &mut Map<String, Value>,
    schema: &Schema,
    path: &str,
    unknown: &mut Found,
    drop_unknown: bool,
) {
    let mut dropped = Vec::new();
    for (key, child) in map.iter_mut() {
        let child_path = child_path(path, key);
        match schema.field(key) {
            Some(FieldSchema::Declared(s) | FieldSchema::MapValue(s)) => {
                prune(child, Some(s), &child_path, unknown)
            }
            // The root's metadata is pruned by `Schema::prune`, an embedded resource's here.
            Some(FieldSchema::ObjectMeta) if !schema.resource_root => {
                unknown
                    .embedded_metadata
                    .extend(prune_object_meta(child, &child_path));
            }
            Some(FieldSchema::ObjectMeta) => {}
            Some(FieldSchema::ResourceString | FieldSchema::Unknown) => {}
            None if drop_unknown => {
                unknown.fields.push(child_path);
                dropped.push(key.clone());
            }
            None => {}
        }
    }
    for key in dropped {
        map.remove(&key);
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, declared ones are
/// pruned by their schemas.
fn skip_prune(value: &mut Value, schema: &Schema, path: &str, unknown: &mut Found) {
    match value {
        Value::Object(map) => prune_fields(map, schema, path, unknown, false),
        Value::Array(items) => {
            if let Some(items_schema) = schema.items.as_deref() {
                for (i, item) in items.iter_mut().enumerate() {
                    skip_prune(item, items_schema, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}
