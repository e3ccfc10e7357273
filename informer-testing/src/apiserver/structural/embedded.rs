//! Embedded resources (`x-kubernetes-embedded-resource`), as
//! `apiextensions-apiserver/pkg/apiserver/schema/objectmeta` treats them: decoding a custom
//! resource coerces their `apiVersion`, `kind` and `metadata` into their Go types (a 400 when
//! one does not fit), and validation checks them as any object's type and object metadata.

use serde_json::Value;

use super::super::schema::Schema as BuiltinSchema;
use super::super::status::FieldError;
use super::super::validation;
use super::{Schema, child_path};

const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

impl Schema {
    /// `objectmeta.Coerce` of a decoded custom resource: the first embedded resource whose
    /// `apiVersion` or `kind` is not a string, or whose `metadata` Go's decoder refuses as an
    /// `ObjectMeta`, as the field error the real server's 400 carries
    /// (`spec.template.metadata: Invalid value: "x": json: cannot unmarshal string into Go
    /// value of type v1.ObjectMeta`).
    pub(crate) fn coerce_error(&self, object: &Value) -> Option<String> {
        coerce(object, self, "")
    }

    /// `objectmeta.Coerce` of a custom resource's own `metadata`: what Go's decoder refuses in
    /// it as an `ObjectMeta`, the 400's cause as is (see [`object_meta_error`]).
    pub(crate) fn root_metadata_error(&self, object: &Value) -> Option<String> {
        object.get("metadata").and_then(object_meta_error)
    }

    /// `objectmeta.Validate`: each embedded resource's `apiVersion` and `kind` (required,
    /// a group version, a kind that lower-cased is a DNS-1035 label) and its `metadata`
    /// ([`validation::embedded_metadata`]).
    pub(crate) fn validate_embedded(&self, object: &Value) -> Vec<FieldError> {
        let mut errors = Vec::new();
        walk(object, self, "", &mut errors);
        errors
    }
}

/// The schema of `key` in an object of `schema`: a property, or the map's values.
fn child<'a>(schema: &'a Schema, key: &str) -> Option<&'a Schema> {
    schema
        .properties
        .get(key)
        .or(schema.additional_properties.as_deref())
}

fn child_of(schema: &Schema, path: &str, key: &str) -> String {
    if schema.properties.contains_key(key) {
        child_path(path, key)
    } else {
        format!("{path}[{key}]")
    }
}

/// What Go's decoder refuses in `metadata` decoded into an `ObjectMeta` (`GetObjectMeta`, as
/// `objectmeta.Coerce` calls it on a custom resource's root and its embedded resources):
/// `json: cannot unmarshal string into Go value of type v1.ObjectMeta`, `json: cannot
/// unmarshal string into Go struct field ObjectMeta.labels of type map[string]string`.
fn object_meta_error(metadata: &Value) -> Option<String> {
    match metadata {
        Value::Null | Value::Object(_) => {
            BuiltinSchema::builtin().go_decode_error(OBJECT_META, metadata)
        }
        other => Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            match other {
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                _ => "array",
            }
        )),
    }
}

fn coerce(value: &Value, schema: &Schema, path: &str) -> Option<String> {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let v = &map[key];
                if schema.embedded_resource {
                    match key.as_str() {
                        "apiVersion" | "kind" if !v.is_string() => {
                            return Some(
                                FieldError::invalid(
                                    &child_path(path, key),
                                    v.clone(),
                                    "must be a string",
                                )
                                .to_string(),
                            );
                        }
                        "metadata" => {
                            if let Some(error) = object_meta_error(v) {
                                return Some(
                                    FieldError::invalid(
                                        &child_path(path, "metadata"),
                                        v.clone(),
                                        &error,
                                    )
                                    .to_string(),
                                );
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(s) = child(schema, key)
                    && let Some(error) = coerce(v, s, &child_of(schema, path, key))
                {
                    return Some(error);
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = schema.items.as_deref()?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, item)| coerce(item, item_schema, &format!("{path}[{i}]")))
        }
        _ => None,
    }
}

fn walk(value: &Value, schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            if schema.embedded_resource {
                embedded_resource(map, path, errors);
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                if let Some(s) = child(schema, key) {
                    walk(&map[key], s, &child_of(schema, path, key), errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`.
fn embedded_resource(
    map: &serde_json::Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    for key in ["apiVersion", "kind"] {
        if !map.contains_key(key) {
            errors.push(FieldError::required(&child_path(path, key), ""));
        }
    }
    if let Some(api_version) = map.get("apiVersion") {
        let field = child_path(path, "apiVersion");
        match api_version.as_str() {
            None => errors.push(FieldError::invalid(
                &field,
                api_version.clone(),
                "must be a string",
            )),
            Some("") => errors.push(FieldError::invalid(&field, "", "must not be empty")),
            // `schema.ParseGroupVersion`: at most one `/` (a lone `/` is the empty version).
            Some(text) if text != "/" && text.matches('/').count() > 1 => {
                errors.push(FieldError::invalid(
                    &field,
                    text,
                    &format!("unexpected GroupVersion string: {text}"),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(kind) = map.get("kind") {
        let field = child_path(path, "kind");
        match kind.as_str() {
            None => errors.push(FieldError::invalid(
                &field,
                kind.clone(),
                "must be a string",
            )),
            Some("") => errors.push(FieldError::invalid(&field, "", "must not be empty")),
            Some(text) => {
                let lower = text.to_lowercase();
                let mut problems = Vec::new();
                if lower.len() > 63 {
                    problems.push("must be no more than 63 characters".to_string());
                }
                let b = lower.as_bytes();
                let pattern = b[0].is_ascii_lowercase()
                    && b[b.len() - 1].is_ascii_alphanumeric()
                    && b.iter()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
                if !pattern {
                    problems.push(validation::DNS1035_LABEL.to_string());
                }
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        &field,
                        text,
                        &format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(meta) = map.get("metadata").filter(|m| m.is_object()) {
        errors.extend(validation::embedded_metadata(path, meta));
    }
}
