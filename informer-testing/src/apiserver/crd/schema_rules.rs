//! The rules of a CRD's schema that [`Schema::parse`] does not check, as
//! `apiextensions-apiserver` checks them (`apiserver/schema/validation.go`
//! `ValidateStructural`, the list and map type rules of `apis/apiextensions/validation`, and
//! `apiserver/schema/defaulting` `ValidateDefaults`), worded as the real server words them:
//!
//! - nothing but value validations under `allOf`/`anyOf`/`oneOf`/`not` (`type`, `default`,
//!   `description`, `nullable`, the `x-kubernetes-*` extensions, `additionalProperties` and a
//!   `metadata` property are refused there), but for the `x-kubernetes-int-or-string`
//!   pattern `anyOf: [{type: integer}, {type: string}]`;
//! - the root: not `nullable`, a `metadata` restricting nothing but `name` and
//!   `generateName` (and without defaults), `apiVersion` and `kind` strings;
//! - `x-kubernetes-preserve-unknown-fields: false`, `x-kubernetes-map-type` on a
//!   non-object, `set` lists of objects that are not atomic, `map` lists of non-objects and
//!   their keys (scalar, required or defaulted, not nullable), embedded resources without
//!   properties;
//! - `default`s: valid against their schema (types, enums, bounds...), without unknown
//!   fields (checked once the schema has no other problem, as upstream does).

use serde_json::{Map, Value};

use super::super::status::FieldError;
use super::super::structural::Schema;

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Every problem of the schema `schema` found at `at` (`spec.validation.openAPIV3Schema`).
/// `clean`: the schema has no other problem (defaults are then checked too).
pub(super) fn check(schema: &Value, at: &str, clean: bool, errors: &mut Vec<FieldError>) {
    let mut found = Vec::new();
    walk(schema, at, Level::Root, &mut found);
    if clean && found.is_empty() {
        defaults(schema, at, Level::Root, &mut found);
    }
    errors.extend(found);
}

fn text<'a>(map: &'a Map<String, Value>, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or("")
}

fn flag(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn properties(map: &Map<String, Value>) -> Option<&Map<String, Value>> {
    map.get("properties").and_then(Value::as_object)
}

fn walk(node: &Value, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    let Value::Object(map) = node else { return };
    let kind = text(map, "type");
    if map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errors.push(FieldError::invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    if map.contains_key("x-kubernetes-map-type") && !kind.is_empty() && kind != "object" {
        errors.push(FieldError::invalid(
            &format!("{path}.type"),
            kind,
            "must be object if x-kubernetes-map-type is specified",
        ));
    }
    if let Some(Value::Object(items)) = map.get("items") {
        let item_kind = text(items, "type");
        match text(map, "x-kubernetes-list-type") {
            "set" if item_kind == "object" && text(items, "x-kubernetes-map-type") != "atomic" => {
                errors.push(FieldError::invalid(
                    &format!("{path}.items.x-kubernetes-map-type"),
                    items
                        .get("x-kubernetes-map-type")
                        .cloned()
                        .unwrap_or(Value::Null),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            "map" if !item_kind.is_empty() && item_kind != "object" => {
                errors.push(FieldError::invalid(
                    &format!("{path}.items.type"),
                    item_kind,
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            }
            "map" => map_keys(map, items, path, errors),
            _ => {}
        }
    }
    let embedded = flag(map, "x-kubernetes-embedded-resource");
    if embedded
        && !flag(map, "x-kubernetes-preserve-unknown-fields")
        && properties(map).is_none_or(Map::is_empty)
    {
        errors.push(FieldError::required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    if level == Level::Root && flag(map, "nullable") {
        errors.push(FieldError::forbidden(
            &format!("{path}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if (level == Level::Root || embedded)
        && let Some(props) = properties(map)
    {
        for key in ["kind", "apiVersion"] {
            if let Some(Value::Object(p)) = props.get(key)
                && text(p, "type") != "string"
            {
                errors.push(FieldError::invalid(
                    &format!("{path}.properties[{key}].type"),
                    text(p, "type"),
                    "must be string",
                ));
            }
        }
        if let Some(Value::Object(meta)) = props.get("metadata") {
            metadata(meta, &format!("{path}.properties[metadata]"), level, errors);
        }
    }
    junctors(map, path, errors);
    if let Some(items) = map.get("items") {
        walk(items, &format!("{path}.items"), Level::Item, errors);
    }
    for (name, property) in properties(map).into_iter().flatten() {
        walk(
            property,
            &format!("{path}.properties[{name}]"),
            Level::Field,
            errors,
        );
    }
    if let Some(values @ Value::Object(_)) = map.get("additionalProperties") {
        walk(
            values,
            &format!("{path}.additionalProperties"),
            Level::Field,
            errors,
        );
    }
}

fn map_keys(
    map: &Map<String, Value>,
    items: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let keys = map
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array);
    for key in keys.into_iter().flatten().filter_map(Value::as_str) {
        let Some(Value::Object(property)) = properties(items).and_then(|p| p.get(key)) else {
            continue;
        };
        let at = format!("{path}.items.properties[{key}]");
        let kind = text(property, "type");
        if matches!(kind, "object" | "array") {
            errors.push(FieldError::invalid(
                &format!("{at}.type"),
                kind,
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
            ));
        }
        if property.get("default").is_none_or(Value::is_null) && !required.contains(&key) {
            errors.push(FieldError::required(
                &format!("{at}.default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if flag(property, "nullable") {
            errors.push(FieldError::forbidden(
                &format!("{at}.nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

/// The `metadata` property of a resource (the root or an embedded resource).
fn metadata(meta: &Map<String, Value>, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    let kind = text(meta, "type");
    if kind != "object" {
        errors.push(FieldError::invalid(
            &format!("{path}.type"),
            kind,
            "must be object",
        ));
    }
    if level != Level::Root {
        return;
    }
    let props = properties(meta);
    for (name, property) in props.into_iter().flatten() {
        if matches!(name.as_str(), "name" | "generateName")
            && property.get("default").is_some_and(|d| !d.is_null())
        {
            errors.push(FieldError::forbidden(
                &format!("{path}.properties[{name}].default"),
                "must not be set in top-level metadata",
            ));
        }
    }
    // Only `name` and `generateName` may be restricted; nothing else may be said.
    let names_only = props.is_some_and(|p| {
        p.keys()
            .all(|k| matches!(k.as_str(), "name" | "generateName"))
    });
    let other = meta.keys().any(|k| match k.as_str() {
        "type" | "default" => false,
        "properties" => !names_only,
        _ => true,
    });
    if other {
        errors.push(FieldError::forbidden(
            path,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// `anyOf: [{type: integer}, {type: string}]`, the one shape of `anyOf` with types allowed.
fn is_int_or_string_any_of(value: Option<&Value>) -> bool {
    value == Some(&serde_json::json!([{"type": "integer"}, {"type": "string"}]))
}

/// The junctors of a schema (`validateValueValidation`).
fn junctors(map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let skip_any_of =
        flag(map, "x-kubernetes-int-or-string") && is_int_or_string_any_of(map.get("anyOf"));
    let skip_first_all_of_any_of = flag(map, "x-kubernetes-int-or-string")
        && map
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|all| all.first())
            .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    junctors_of(map, path, skip_any_of, skip_first_all_of_any_of, errors);
}

fn junctors_of(
    map: &Map<String, Value>,
    path: &str,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    errors: &mut Vec<FieldError>,
) {
    let list = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    if !skip_any_of {
        for (i, s) in list("anyOf").iter().enumerate() {
            nested(s, &format!("{path}.anyOf[{i}]"), false, errors);
        }
    }
    for (i, s) in list("allOf").iter().enumerate() {
        nested(
            s,
            &format!("{path}.allOf[{i}]"),
            skip_first_all_of_any_of && i == 0,
            errors,
        );
    }
    for (i, s) in list("oneOf").iter().enumerate() {
        nested(s, &format!("{path}.oneOf[{i}]"), false, errors);
    }
    if let Some(not) = map.get("not") {
        nested(not, &format!("{path}.not"), false, errors);
    }
}

/// A schema under a junctor (`validateNestedValueValidation`).
fn nested(node: &Value, path: &str, skip_any_of: bool, errors: &mut Vec<FieldError>) {
    let Value::Object(map) = node else { return };
    junctors_of(map, path, skip_any_of, false, errors);
    if let Some(items) = map.get("items") {
        nested(items, &format!("{path}.items"), false, errors);
    }
    for (name, property) in properties(map).into_iter().flatten() {
        nested(
            property,
            &format!("{path}.properties[{name}]"),
            false,
            errors,
        );
    }
    let forbidden = |errors: &mut Vec<FieldError>, key: &str, detail: &str| {
        errors.push(FieldError::forbidden(&format!("{path}.{key}"), detail));
    };
    if !text(map, "type").is_empty() {
        forbidden(errors, "type", "must be empty to be structural");
    }
    if map.contains_key("additionalProperties") {
        forbidden(
            errors,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if map.get("default").is_some_and(|d| !d.is_null()) {
        forbidden(errors, "default", "must be undefined to be structural");
    }
    for key in ["title", "description"] {
        if !text(map, key).is_empty() {
            forbidden(errors, key, "must be empty to be structural");
        }
    }
    if flag(map, "nullable") {
        forbidden(errors, "nullable", "must be false to be structural");
    }
    if map.contains_key("externalDocs") {
        forbidden(errors, "externalDocs", "must be undefined to be structural");
    }
    for key in [
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if flag(map, key) {
            forbidden(errors, key, "must be false to be structural");
        }
    }
    if map
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .is_some_and(|k| !k.is_empty())
    {
        forbidden(
            errors,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    for key in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if map.contains_key(key) {
            forbidden(errors, key, "must be undefined to be structural");
        }
    }
    if properties(map).is_some_and(|p| p.contains_key("metadata")) {
        forbidden(
            errors,
            "properties[metadata]",
            "must not be specified in a nested context",
        );
    }
}

/// The `default`s of the schema (`ValidateDefaults`): each valid against the schema it
/// sits in, without unknown fields. Not under the root's `metadata` (refused above).
fn defaults(node: &Value, path: &str, level: Level, errors: &mut Vec<FieldError>) {
    let Value::Object(map) = node else { return };
    if let Some(default) = map.get("default").filter(|d| !d.is_null()) {
        let at = format!("{path}.default");
        if level == Level::Root {
            // The root is a resource: its default needs the type's `apiVersion` and `kind`.
            for key in ["apiVersion", "kind"] {
                if default.get(key).is_none() {
                    errors.push(FieldError::required(&format!("{at}.{key}"), ""));
                }
            }
        } else {
            let schema = Schema::parse(node, "", &mut Vec::new());
            let mut pruned = default.clone();
            schema.prune_value(&mut pruned);
            if &pruned != default {
                errors.push(FieldError::invalid(
                    &at,
                    default.clone(),
                    "must not have unknown fields",
                ));
            } else {
                let found = schema.validate(default, None);
                // And as an embedded resource, when it is one (`objectmeta.Validate`).
                let found = found.into_iter().chain(schema.validate_embedded(default));
                for mut error in found {
                    // The default is validated as a value of its own: its messages name no
                    // field (`: Invalid value: "string":  in body must be of type integer`).
                    if let Some(rest) = error.detail.strip_prefix("<root>") {
                        error.detail = rest.to_string();
                    }
                    // An error naming no field (`<nil>`) takes the default's.
                    error.field = if error.field.is_empty() || error.field == "<nil>" {
                        at.clone()
                    } else {
                        format!("{at}.{}", error.field)
                    };
                    errors.push(error);
                }
            }
        }
    }
    if let Some(items) = map.get("items") {
        defaults(items, &format!("{path}.items"), Level::Item, errors);
    }
    for (name, property) in properties(map).into_iter().flatten() {
        if level == Level::Root && name == "metadata" {
            continue;
        }
        defaults(
            property,
            &format!("{path}.properties[{name}]"),
            Level::Field,
            errors,
        );
    }
    if let Some(values @ Value::Object(_)) = map.get("additionalProperties") {
        defaults(
            values,
            &format!("{path}.additionalProperties"),
            Level::Field,
            errors,
        );
    }
}
