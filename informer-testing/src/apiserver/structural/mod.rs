//! Structural schemas: the `openAPIV3Schema` of a CustomResourceDefinition version, read into
//! a tree the server walks to treat custom resources as kube-apiserver does
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/schema`):
//!
//! - [`prune`](Schema::prune) drops the fields the schema does not declare, except under
//!   `x-kubernetes-preserve-unknown-fields`, and keeps only `apiVersion`, `kind` and the
//!   fields of `ObjectMeta` in `metadata` (of the object and of every
//!   `x-kubernetes-embedded-resource`); it returns the dropped paths for `fieldValidation`;
//! - [`apply_defaults`](Schema::apply_defaults) fills in `default`s (and drops `null`s of
//!   fields that are not `nullable`);
//! - [`validate`](Schema::validate) checks types, `required`, `enum`, bounds, `pattern`,
//!   lengths, item counts, list uniqueness and formats, with field errors worded as the real
//!   server words them (`spec.size: Invalid value: "string": spec.size in body must be of
//!   type integer: "string"`);
//! - [`cel_rules`] compiles the CEL rules of `x-kubernetes-validations` when the schema is
//!   read and evaluates them on creates and updates (transition rules with `oldSelf`).
//!
//! [`Schema::parse`] also reports what makes a schema non-structural, for the CRD's own
//! validation.

use std::collections::BTreeMap;

use serde_json::Value;

pub(crate) mod cel_rules;
mod defaults;
mod embedded;
pub(crate) mod formats;
mod prune;
mod validate;

/// One node of a structural schema.
#[derive(Clone, Debug, Default)]
pub(crate) struct Schema {
    /// `type`: object, array, string, integer, number or boolean (empty: any).
    pub kind: String,
    pub format: String,
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties` as a schema (a map's values).
    pub additional_properties: Option<Box<Schema>>,
    /// `additionalProperties: true`: any field, kept as is.
    pub additional_properties_any: bool,
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub enumeration: Option<Vec<Value>>,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub multiple_of: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub pattern: Option<Pattern>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
    pub unique_items: bool,
    pub min_properties: Option<u64>,
    pub max_properties: Option<u64>,
    pub nullable: bool,
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource`: an object with `apiVersion`, `kind` and `metadata`.
    pub embedded_resource: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`: atomic (the default), set or map.
    pub list_type: String,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`: granular (the default) or atomic.
    pub map_type: String,
    /// `allOf`, `anyOf`, `oneOf`, `not`: value validations only, in a structural schema.
    pub all_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    /// The root of a custom resource: `apiVersion`, `kind` and `metadata` are its own.
    pub resource_root: bool,
    /// `x-kubernetes-validations`: CEL rules, compiled ([`cel_rules`]).
    pub rules: Vec<cel_rules::Rule>,
    /// Whether this node or one under it (properties, map values, items) has rules; set when
    /// the schema is read, so that a write walks only the subtrees with rules.
    pub rules_below: bool,
}

/// A compiled `pattern` with its source (ECMA-262 as Go's RE2 reads it).
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    pub source: String,
    pub regex: regex::Regex,
}

/// A problem with a schema itself, at a path of the CRD (`...openAPIV3Schema.properties[spec].type`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SchemaProblem {
    pub field: String,
    pub kind: ProblemKind,
    pub detail: String,
    pub value: Option<Value>,
}

/// What kind of problem a [`SchemaProblem`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProblemKind {
    Required,
    Invalid,
    Forbidden,
    NotSupported,
    /// `Invalid`, whose value (a `String`) is shown as it is, not quoted: a Go struct as
    /// upstream prints it.
    InvalidShownAsIs,
}

impl Schema {
    /// Reads a schema; `path` is where it sits in the CRD, for the problems found (the schema
    /// is usable whatever they are: unknown constructs are ignored).
    pub(crate) fn parse(value: &Value, path: &str, problems: &mut Vec<SchemaProblem>) -> Schema {
        let schema = Self::parse_node(value, path, true, problems);
        cel_rules::check_transition_rules(&schema, path, None, problems);
        schema
    }

    fn parse_node(
        value: &Value,
        path: &str,
        require_type: bool,
        problems: &mut Vec<SchemaProblem>,
    ) -> Schema {
        let mut schema = Schema::default();
        let Value::Object(map) = value else {
            problems.push(SchemaProblem {
                field: path.to_string(),
                kind: ProblemKind::Invalid,
                detail: "must be a JSON object".into(),
                value: Some(value.clone()),
            });
            return schema;
        };
        let text = |key: &str| {
            map.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let number = |key: &str| map.get(key).and_then(Value::as_f64);
        let count = |key: &str| map.get(key).and_then(Value::as_u64);
        let flag = |key: &str| map.get(key).and_then(Value::as_bool).unwrap_or(false);
        schema.kind = text("type");
        schema.format = text("format");
        schema.nullable = flag("nullable");
        schema.preserve_unknown_fields = flag("x-kubernetes-preserve-unknown-fields");
        schema.embedded_resource = flag("x-kubernetes-embedded-resource");
        schema.int_or_string = flag("x-kubernetes-int-or-string");
        schema.list_type = text("x-kubernetes-list-type");
        schema.map_type = text("x-kubernetes-map-type");
        let strings = |key: &str| map.get(key).map(string_list).unwrap_or_default();
        schema.list_map_keys = strings("x-kubernetes-list-map-keys");
        schema.required = strings("required");
        schema.enumeration = map.get("enum").and_then(Value::as_array).cloned();
        schema.minimum = number("minimum");
        schema.maximum = number("maximum");
        schema.exclusive_minimum = flag("exclusiveMinimum");
        schema.exclusive_maximum = flag("exclusiveMaximum");
        schema.multiple_of = number("multipleOf");
        schema.min_length = count("minLength");
        schema.max_length = count("maxLength");
        schema.min_items = count("minItems");
        schema.max_items = count("maxItems");
        schema.unique_items = flag("uniqueItems");
        schema.min_properties = count("minProperties");
        schema.max_properties = count("maxProperties");
        // A `null` default is none (a nil `*JSON` once converted).
        schema.default = map.get("default").filter(|d| !d.is_null()).cloned();
        if let Some(source) = map.get("pattern").and_then(Value::as_str) {
            match regex::Regex::new(source) {
                Ok(regex) => {
                    schema.pattern = Some(Pattern {
                        source: source.to_string(),
                        regex,
                    })
                }
                Err(err) => problems.push(SchemaProblem {
                    field: format!("{path}.pattern"),
                    kind: ProblemKind::Invalid,
                    detail: format!("must be a valid regular expression, but isn't: {err}"),
                    value: Some(Value::String(source.to_string())),
                }),
            }
        }
        if let Some(Value::Object(properties)) = map.get("properties") {
            for (name, property) in properties {
                let child = format!("{path}.properties[{name}]");
                schema.properties.insert(
                    name.clone(),
                    Self::parse_node(property, &child, true, problems),
                );
            }
        }
        match map.get("additionalProperties") {
            Some(Value::Bool(any)) => schema.additional_properties_any = *any,
            Some(other @ Value::Object(_)) => {
                let child = format!("{path}.additionalProperties");
                schema.additional_properties =
                    Some(Box::new(Self::parse_node(other, &child, true, problems)));
            }
            _ => {}
        }
        if let Some(items) = map.get("items") {
            let child = format!("{path}.items");
            if items.is_array() {
                // Upstream's generic check; the structural ones are not reported then (the
                // schema cannot be made structural: `NewStructural` fails, its errors hidden).
                problems.push(SchemaProblem {
                    field: child,
                    kind: ProblemKind::Forbidden,
                    detail: "items must be a schema object and not an array".into(),
                    value: None,
                });
                schema.items = Some(Box::default());
            } else {
                schema.items = Some(Box::new(Self::parse_node(items, &child, true, problems)));
            }
        }
        let list = |key: &str, problems: &mut Vec<SchemaProblem>| -> Vec<Schema> {
            map.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, s)| {
                            Self::parse_node(s, &format!("{path}.{key}[{i}]"), false, problems)
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        schema.all_of = list("allOf", problems);
        schema.any_of = list("anyOf", problems);
        schema.one_of = list("oneOf", problems);
        if let Some(not) = map.get("not") {
            schema.not = Some(Box::new(Self::parse_node(
                not,
                &format!("{path}.not"),
                false,
                problems,
            )));
        }
        schema.rules =
            cel_rules::parse_rules(map.get("x-kubernetes-validations"), &schema, path, problems);
        schema.rules_below = !schema.rules.is_empty()
            || schema.properties.values().any(|p| p.rules_below)
            || [&schema.additional_properties, &schema.items]
                .into_iter()
                .flatten()
                .any(|s| s.rules_below);
        schema.check_structural(map, path, require_type, problems);
        schema
    }

    /// The rules of a structural schema (`apiextensions-apiserver/pkg/apiserver/schema`
    /// `ValidateStructural`) and of the CRD validation of list types, as far as they are
    /// checked here.
    fn check_structural(
        &self,
        map: &serde_json::Map<String, Value>,
        path: &str,
        require_type: bool,
        problems: &mut Vec<SchemaProblem>,
    ) {
        let mut problem = |field: String, kind, detail: &str, value: Option<Value>| {
            problems.push(SchemaProblem {
                field,
                kind,
                detail: detail.to_string(),
                value,
            })
        };
        if require_type
            && self.kind.is_empty()
            && !self.int_or_string
            && !self.preserve_unknown_fields
        {
            problem(
                format!("{path}.type"),
                ProblemKind::Required,
                "must not be empty for specified object fields",
                None,
            );
        }
        if !self.kind.is_empty()
            && !matches!(
                self.kind.as_str(),
                "object" | "array" | "string" | "integer" | "number" | "boolean"
            )
        {
            problem(
                format!("{path}.type"),
                ProblemKind::NotSupported,
                "supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
                Some(Value::String(self.kind.clone())),
            );
        }
        if self.kind == "array" && self.items.is_none() {
            problem(
                format!("{path}.items"),
                ProblemKind::Required,
                "must be specified",
                None,
            );
        }
        if !self.properties.is_empty() && self.additional_properties.is_some() {
            problem(
                format!("{path}.additionalProperties"),
                ProblemKind::Forbidden,
                "additionalProperties and properties are mutual exclusive",
                None,
            );
        }
        if self.embedded_resource && self.kind != "object" {
            problem(
                format!("{path}.type"),
                ProblemKind::Invalid,
                "must be object if x-kubernetes-embedded-resource is true",
                Some(Value::String(self.kind.clone())),
            );
        }
        for forbidden in [
            "$ref",
            "id",
            "definitions",
            "dependencies",
            "patternProperties",
            "additionalItems",
        ] {
            if map.contains_key(forbidden) {
                problem(
                    format!("{path}.{forbidden}"),
                    ProblemKind::Forbidden,
                    &format!("{forbidden} is not supported"),
                    None,
                );
            }
        }
        if self.unique_items {
            problem(
                format!("{path}.uniqueItems"),
                ProblemKind::Forbidden,
                "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                None,
            );
        }
        match self.list_type.as_str() {
            "" | "atomic" | "set" => {}
            "map" => {
                if self.list_map_keys.is_empty() {
                    problem(
                        format!("{path}.x-kubernetes-list-map-keys"),
                        ProblemKind::Required,
                        "must not be empty if x-kubernetes-list-type is map",
                        None,
                    );
                }
                if let Some(items) = self
                    .items
                    .as_ref()
                    .filter(|i| i.kind.is_empty() || i.kind == "object")
                {
                    for key in &self.list_map_keys {
                        if !items.properties.contains_key(key) {
                            problem(
                                format!("{path}.x-kubernetes-list-map-keys"),
                                ProblemKind::Invalid,
                                "entries must all be names of item properties",
                                Some(Value::from(self.list_map_keys.clone())),
                            );
                            break;
                        }
                    }
                }
            }
            other => problem(
                format!("{path}.x-kubernetes-list-type"),
                ProblemKind::NotSupported,
                "supported values: \"atomic\", \"set\", \"map\"",
                Some(Value::String(other.to_string())),
            ),
        }
        if !self.list_type.is_empty() && self.kind != "array" {
            problem(
                format!("{path}.type"),
                ProblemKind::Invalid,
                "must be array if x-kubernetes-list-type is specified",
                Some(Value::String(self.kind.clone())),
            );
        }
        if !self.list_map_keys.is_empty() && self.list_type != "map" {
            problem(
                format!("{path}.x-kubernetes-list-type"),
                ProblemKind::Invalid,
                "must be map if x-kubernetes-list-map-keys is non-empty",
                Some(Value::String(self.list_type.clone())),
            );
        }
        match self.map_type.as_str() {
            "" | "granular" | "atomic" => {}
            other => problem(
                format!("{path}.x-kubernetes-map-type"),
                ProblemKind::NotSupported,
                "supported values: \"atomic\", \"granular\"",
                Some(Value::String(other.to_string())),
            ),
        }
    }

    /// Whether values here are objects with fields of their own.
    pub(crate) fn is_object(&self) -> bool {
        self.kind == "object" || !self.properties.is_empty() || self.additional_properties.is_some()
    }

    /// The schema of a field of an object here, and whether the field is declared (a
    /// property, rather than a key of a map or an unknown field kept as is). `None`: the
    /// field is unknown and pruned.
    pub(crate) fn field(&self, name: &str) -> Option<FieldSchema<'_>> {
        if self.resource_root || self.embedded_resource {
            match name {
                "apiVersion" | "kind" => return Some(FieldSchema::ResourceString),
                "metadata" => return Some(FieldSchema::ObjectMeta),
                _ => {}
            }
        }
        if let Some(property) = self.properties.get(name) {
            return Some(FieldSchema::Declared(property));
        }
        if let Some(values) = &self.additional_properties {
            return Some(FieldSchema::MapValue(values));
        }
        (self.preserve_unknown_fields || self.additional_properties_any)
            .then_some(FieldSchema::Unknown)
    }

    /// Reads the schema of a custom resource: the root, with `apiVersion`, `kind` and
    /// `metadata` its own.
    pub(crate) fn resource(value: &Value, path: &str, problems: &mut Vec<SchemaProblem>) -> Schema {
        let mut schema = Self::parse(value, path, problems);
        schema.resource_root = true;
        schema
    }

    /// A schema that keeps everything (`type: object`, `x-kubernetes-preserve-unknown-fields`).
    pub(crate) fn preserve_all() -> Schema {
        Schema {
            kind: "object".into(),
            preserve_unknown_fields: true,
            resource_root: true,
            ..Schema::default()
        }
    }
}

/// What [`Schema::field`] finds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FieldSchema<'a> {
    /// A property of the schema.
    Declared(&'a Schema),
    /// A value of a map (`additionalProperties`).
    MapValue(&'a Schema),
    /// A field kept as is (`x-kubernetes-preserve-unknown-fields`).
    Unknown,
    /// `apiVersion` or `kind` of a resource.
    ResourceString,
    /// `metadata` of a resource.
    ObjectMeta,
}

/// The strings of a JSON list (other items and other values ignored).
pub(crate) fn string_list(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Appends a field to a path as the real server prints it (`spec.size`).
pub(crate) fn child_path(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

#[cfg(test)]
mod tests;
