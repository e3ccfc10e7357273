//! Validation of custom resources against their schema, worded as kube-openapi's validator
//! words it and as `apiextensions-apiserver/pkg/apiserver/validation` turns its results into
//! field errors: `<path> in body must be of type integer: "string"` (`FieldValueTypeInvalid`,
//! the value being the type found), `Required value`, `Unsupported value` for `enum`,
//! `Too long` for `maxLength`, `Too many` for `maxItems`, `Duplicate value` for set and map
//! lists, and `Invalid value` for the other bounds.
//!
//! The real server reports several errors of one object in no fixed order; here they come in
//! the order of the schema (an object's own rules, then `required`, then its fields by name).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::super::status::FieldError;
use super::{FieldSchema, Schema, child_path};

impl Schema {
    /// Every way `object` (a whole custom resource) breaks the schema. On an update, `old` is
    /// the object it replaces, and errors are ratcheted as the CRDValidationRatcheting gate
    /// (on by default) has them: see [`Walk`].
    pub(crate) fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let walk = Walk::new(self, old);
        walk.validate(object, self, "", old, &mut errors);
        errors
    }

    /// Every way the `status` of `object` breaks the schema of `status`, as the status
    /// strategy's validator (built from that schema alone) words it: the message's path is
    /// relative to `status` (`replicas in body ...`), the field's under it
    /// (`status.replicas`). On an update, `old` is the object it replaces; errors are
    /// ratcheted against its status.
    pub(crate) fn validate_status(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let (Some(status), Some(FieldSchema::Declared(schema))) =
            (object.get("status"), self.field("status"))
        else {
            return errors;
        };
        let walk = Walk::new(self, old);
        let old_status = old.and_then(|old| old.get("status"));
        walk.validate(status, schema, "", old_status, &mut errors);
        // The status validator's errors are under `status` (`fldPath`); one that names no
        // field (`<nil>` in a whole object's validation) is reported at `status` itself.
        for error in &mut errors {
            error.field = if error.field.is_empty() || error.field == "<nil>" {
                "status".to_string()
            } else if error.field.starts_with('[') {
                format!("status{}", error.field)
            } else {
                format!("status.{}", error.field)
            };
        }
        errors
    }
}

/// `schemaInfoForType` of kube-openapi's `typeValidator`: the JSON type and the format of a
/// value as the API server decodes it (a number that `strconv.ParseInt` takes is an `int64`,
/// any other a `float64`, so `3.0`, `1e3` and integers past 2^63 are `float64`s).
fn data_info(value: &Value) -> (&'static str, &'static str) {
    match value {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger` (the version kube-openapi is built with): a
/// float within ±(2^53 - 1) equal to its conversion to an integer, or within a relative
/// error of 1e-9 of its conversion to `uint64` (so `1.0000000001` is an integer, but
/// `0.9999999999` and `-1.0000000001` are not: the conversion truncates, and, on amd64,
/// takes a negative number's two's complement).
fn is_float64_a_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    // Go's `uint64(f)` on amd64 for |f| < 2^63: the truncated `int64`'s bits.
    let g = f as i64 as u64 as f64;
    let diff = (f - g).abs();
    if f == g || f == f as i64 as f64 {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < f64::from_bits(1) {
        return diff < 1e-9 * f64::from_bits(1);
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

/// The format a CRD schema node validates with: apiextensions-apiserver drops the formats
/// it does not support for the node's type (`StripUnsupportedFormatsPostProcess`: `uint32`
/// on an integer, `float64` on a number, any format on a boolean), so they check nothing.
fn effective_format(schema: &Schema) -> &str {
    if super::formats::unrecognized(&schema.kind, &schema.format) {
        ""
    } else {
        &schema.format
    }
}

/// kube-openapi's `typeValidator.Validate` for a value that is not null: the error, if
/// any, as apiextensions-apiserver reports it (`FieldValueTypeInvalid`, the type or format
/// found as the value). In order:
///
/// 1. The format: a value that is neither a string nor an array, under a schema with a
///    format, must be of one of the schema's types, or have the format's data format
///    (`int64`, `float64`), or be a whole float under `integer` (`isFloatInt`), or an
///    integer under `number` (`isIntFloat`): otherwise `must be of type <format>: "<data
///    format>"` (`int32: "float64"` for `1.5`, `int32: ""` for `true` or an object).
/// 2. A string or an array under a schema with a format and neither `integer` nor `number`
///    passes (a string format is the format validator's to check; an array is not checked).
/// 3. The type: one of the schema's types, or a whole float under `integer`, or an integer
///    under `number`: otherwise `must be of type <types>: "<type found>"`.
fn type_error(value: &Value, schema: &Schema, path: &str) -> Option<FieldError> {
    let declared = [schema.kind.as_str()];
    let types: &[&str] = if schema.int_or_string {
        &["integer", "string"]
    } else if schema.kind.is_empty() {
        &[]
    } else {
        &declared
    };
    let format = effective_format(schema);
    if types.is_empty() && format.is_empty() {
        return None;
    }
    let shown = if path.is_empty() { "<root>" } else { path };
    let contains = |t: &str| types.contains(&t);
    let (found_type, found_format) = data_info(value);
    let is_lower_int = format == "int64" && found_format == "int32";
    let is_lower_float = format == "float64" && found_format == "float32";
    let is_float_int = found_type == "number"
        && value.as_f64().is_some_and(is_float64_a_json_integer)
        && contains("integer");
    let is_int_float = found_type == "integer" && contains("number");
    let string_or_array = matches!(value, Value::String(_) | Value::Array(_));
    if !string_or_array
        && !format.is_empty()
        && !(contains(found_type)
            || found_format == format
            || is_float_int
            || is_int_float
            || is_lower_int
            || is_lower_float)
    {
        return Some(FieldError::type_invalid(
            path,
            found_format,
            &format!("{shown} in body must be of type {format}: \"{found_format}\""),
        ));
    }
    if string_or_array && !format.is_empty() && !contains("number") && !contains("integer") {
        return None;
    }
    if contains(found_type) || is_float_int || is_int_float {
        return None;
    }
    Some(FieldError::type_invalid(
        path,
        found_type,
        &format!(
            "{shown} in body must be of type {}: \"{found_type}\"",
            types.join(",")
        ),
    ))
}

/// Go's `%v` of a float64 bound: `10`, `0.5`.
fn bound(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// How a value is checked.
///
/// - Ratcheting (`CRDValidationRatcheting`, `ratchetingValueValidator`): on an update, the
///   errors found at a node whose value equals its old value are dropped, with those of every
///   node under it. A node's old value is found through its parents: an object's field (or
///   map value) by its key, an item of an `x-kubernetes-list-type: map` list by its keys; the
///   items of other lists have none (the list as a whole does).
/// - Duplicates in `set` and `map` lists (`ValidateListSetsAndMaps`) are checked unless the
///   old object has some already (anywhere).
struct Walk {
    lists: bool,
}

impl Walk {
    fn new(root: &Schema, old: Option<&Value>) -> Self {
        Self {
            lists: old.is_none_or(|old| !has_duplicates(old, root)),
        }
    }

    /// Checks `value` against `schema`; `old` is its old value, if it has one.
    fn validate(
        &self,
        value: &Value,
        schema: &Schema,
        path: &str,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        let mark = errors.len();
        self.validate_node(value, schema, path, old, errors);
        if old == Some(value) {
            errors.truncate(mark);
        }
    }

    fn validate_node(
        &self,
        value: &Value,
        schema: &Schema,
        path: &str,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        let shown = if path.is_empty() { "<root>" } else { path };
        if value.is_null() {
            if !schema.nullable && !schema.kind.is_empty() {
                errors.push(FieldError::type_invalid(
                    path,
                    "null",
                    &format!("{shown} in body must be of type {}: \"null\"", schema.kind),
                ));
            }
            return;
        }
        if let Some(error) = type_error(value, schema, path) {
            errors.push(error);
            // kube-openapi's other validators still run: a number is still range checked
            // (`Checked value must be of type integer (default format) in spec.size`).
            if let Value::Number(number) = value {
                numeric(number.as_f64().unwrap_or(0.0), value, schema, path, errors);
            }
            return;
        }
        if let Some(allowed) = &schema.enumeration
            && !allowed.iter().any(|a| a == value)
        {
            let supported: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            errors.push(FieldError::not_supported(path, value.clone(), &supported));
        }
        match value {
            Value::Number(number) => {
                numeric(number.as_f64().unwrap_or(0.0), value, schema, path, errors)
            }
            Value::String(text) => string(text, schema, path, errors),
            Value::Array(items) => self.array(items, schema, path, old, errors),
            Value::Object(map) => self.object(map, schema, path, old, errors),
            _ => {}
        }
        self.combinators(value, schema, path, errors);
    }

    fn array(
        &self,
        items: &[Value],
        schema: &Schema,
        path: &str,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        count(
            items.len(),
            (schema.min_items, schema.max_items),
            "items",
            path,
            errors,
        );
        if let Some(item_schema) = schema.items.as_deref() {
            let old_items = old.and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                let old_item = old_items
                    .filter(|_| schema.list_type == "map")
                    .and_then(|olds| {
                        olds.iter()
                            .find(|o| same_keys(o, item, &schema.list_map_keys, item_schema))
                    });
                self.validate(item, item_schema, &format!("{path}[{i}]"), old_item, errors);
            }
        }
        if !self.lists {
            return;
        }
        match schema.list_type.as_str() {
            "set" => {
                let mut seen: Vec<&Value> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    if seen.contains(&item) {
                        errors.push(FieldError::duplicate(&format!("{path}[{i}]"), item.clone()));
                    } else {
                        seen.push(item);
                    }
                }
            }
            "map" => {
                let mut seen = HashSet::new();
                for (i, item) in items.iter().enumerate() {
                    let key: Map<String, Value> = schema
                        .list_map_keys
                        .iter()
                        .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                        .collect();
                    let key = Value::Object(key);
                    if !seen.insert(key.to_string()) {
                        errors.push(FieldError::duplicate(&format!("{path}[{i}]"), key));
                    }
                }
            }
            _ => {}
        }
    }

    fn object(
        &self,
        map: &Map<String, Value>,
        schema: &Schema,
        path: &str,
        old: Option<&Value>,
        errors: &mut Vec<FieldError>,
    ) {
        count(
            map.len(),
            (schema.min_properties, schema.max_properties),
            "properties",
            path,
            errors,
        );
        for required in &schema.required {
            if !map.contains_key(required) {
                errors.push(FieldError::required(&child_path(path, required), ""));
            }
        }
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for key in keys {
            let child = &map[key];
            if let Some(FieldSchema::Declared(s) | FieldSchema::MapValue(s)) = schema.field(key) {
                let old_child = old.and_then(|old| old.get(key));
                self.validate(child, s, &child_path(path, key), old_child, errors);
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf` and `not` (value validations: no types or fields of their own).
    fn combinators(
        &self,
        value: &Value,
        schema: &Schema,
        path: &str,
        errors: &mut Vec<FieldError>,
    ) {
        let passes = |s: &Schema| {
            let mut found = Vec::new();
            self.validate(value, s, path, None, &mut found);
            found.is_empty()
        };
        for s in &schema.all_of {
            self.validate(value, s, path, None, errors);
        }
        // kube-openapi's junctor errors name no field (`<nil>: Invalid value: ""`) but quote
        // the path; a failed `anyOf` or `oneOf` adds the errors of its best failing branch (here
        // the first).
        let fail = |why: &str| FieldError::invalid("<nil>", "", &format!("\"{path}\" {why}"));
        let first_failure = |branches: &[Schema]| {
            let mut found = Vec::new();
            if let Some(branch) = branches.first() {
                self.validate(value, branch, path, None, &mut found);
            }
            found
        };
        if !schema.any_of.is_empty() && !schema.any_of.iter().any(passes) {
            errors.push(fail("must validate at least one schema (anyOf)"));
            errors.extend(first_failure(&schema.any_of));
        }
        if !schema.one_of.is_empty() {
            match schema.one_of.iter().filter(|s| passes(s)).count() {
                1 => {}
                0 => {
                    errors.push(fail(
                        "must validate one and only one schema (oneOf). Found none valid",
                    ));
                    errors.extend(first_failure(&schema.one_of));
                }
                n => errors.push(fail(&format!(
                    "must validate one and only one schema (oneOf). Found {n} valid alternatives"
                ))),
            }
        }
        if let Some(not) = &schema.not
            && passes(not)
        {
            errors.push(fail("must not validate the schema (not)"));
        }
    }
}

/// `IsValueValidAgainstRange`: whether a number, as Go prints it (`FormatInt64`, or
/// `FormatFloat(f, 'f', -1, 64)`: `2.5`, `3000000000`), converts without loss to the
/// schema's type and format (`int32`, else `int64`, for `integer`; `float` for the others;
/// the formats apiextensions-apiserver drops, such as `uint32`, are no format); when not,
/// kube-openapi's plain error, which names no field (`<nil>: Invalid value: "": Maximum
/// boundary value must be of type integer (default format) in spec.size`).
fn out_of_range(shown: &str, schema: &Schema, prefix: &str, path: &str) -> Option<FieldError> {
    let format = effective_format(schema);
    let fits = match (schema.kind.as_str(), format) {
        ("integer", "int32") => shown.parse::<i32>().is_ok(),
        ("integer", _) => shown.parse::<i64>().is_ok(),
        (_, "float") => shown.parse::<f32>().is_ok_and(f32::is_finite),
        _ => true,
    };
    if fits {
        return None;
    }
    let kind = &schema.kind;
    let format = if format.is_empty() {
        "(default format)".to_string()
    } else {
        format!("with format {format}")
    };
    Some(FieldError::invalid(
        "<nil>",
        "",
        &format!("{prefix} value must be of type {kind} {format} in {path}"),
    ))
}

fn numeric(n: f64, value: &Value, schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    let invalid = |detail: String| {
        FieldError::invalid(path, value.clone(), &format!("{path} in body {detail}"))
    };
    // kube-openapi's `numberValidator`: the value, then each of the factor, the minimum and
    // the maximum, must fit the type and format. A bound that fits is applied natively: to
    // an integer value (Go's int64; a float otherwise) cut to an integer (`int64(maximum)`),
    // so that `multipleOf: 0.5` becomes `0`, which must be positive, and `minimum: 0.5`
    // lets `0` pass. A bound that does not fit is reported, then applied as a float.
    let whole_value = value.is_i64();
    let shown = match value.as_i64() {
        Some(i) => i.to_string(),
        None => n.to_string(),
    };
    errors.extend(out_of_range(&shown, schema, "Checked", path));
    let fitting = |bound: f64, prefix: &str, errors: &mut Vec<FieldError>| {
        let error = out_of_range(&bound.to_string(), schema, prefix, path);
        let fits = error.is_none();
        errors.extend(error);
        whole_value && fits
    };
    if let Some(factor) = schema.multiple_of {
        if fitting(factor, "MultipleOf", errors) {
            let whole = factor.trunc();
            if whole <= 0.0 {
                errors.push(FieldError::invalid(
                    path,
                    whole as i64,
                    &format!(
                        "factor MultipleOf declared for {path} must be positive: {}",
                        whole as i64
                    ),
                ));
            } else if n % whole != 0.0 {
                errors.push(invalid(format!("should be a multiple of {}", bound(whole))));
            }
        } else if factor != 0.0 && (n / factor).fract() != 0.0 {
            errors.push(invalid(format!(
                "should be a multiple of {}",
                bound(factor)
            )));
        }
    }
    if let Some(min) = schema.minimum {
        let min = if fitting(min, "Minimum boundary", errors) {
            min.trunc()
        } else {
            min
        };
        if schema.exclusive_minimum && n <= min {
            errors.push(invalid(format!("should be greater than {}", bound(min))));
        } else if !schema.exclusive_minimum && n < min {
            errors.push(invalid(format!(
                "should be greater than or equal to {}",
                bound(min)
            )));
        }
    }
    if let Some(max) = schema.maximum {
        let max = if fitting(max, "Maximum boundary", errors) {
            max.trunc()
        } else {
            max
        };
        if schema.exclusive_maximum && n >= max {
            errors.push(invalid(format!("should be less than {}", bound(max))));
        } else if !schema.exclusive_maximum && n > max {
            errors.push(invalid(format!(
                "should be less than or equal to {}",
                bound(max)
            )));
        }
    }
}

fn string(text: &str, schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    string_rules(text, schema, path, errors);
    // The format is a validator of its own: checked whatever the other rules found.
    let format = effective_format(schema);
    if !format.is_empty() && !super::formats::valid(format, text) {
        errors.push(FieldError::type_invalid(
            path,
            text,
            &format!("{path} in body must be of type {format}: {text:?}"),
        ));
    }
}

fn string_rules(text: &str, schema: &Schema, path: &str, errors: &mut Vec<FieldError>) {
    let length = text.chars().count() as u64;
    // kube-openapi stops at the first string rule that fails.
    if let Some(max) = schema.max_length
        && length > max
    {
        errors.push(FieldError::too_long(path, max as usize));
        return;
    }
    if let Some(min) = schema.min_length
        && length < min
    {
        errors.push(FieldError::invalid(
            path,
            text,
            &format!("{path} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(pattern) = &schema.pattern
        && !pattern.regex.is_match(text)
    {
        errors.push(FieldError::invalid(
            path,
            text,
            &format!("{path} in body should match '{}'", pattern.source),
        ));
    }
}

/// `maxItems`/`minItems` and `maxProperties`/`minProperties`: `Too many` above the maximum,
/// `should have at least <min> <noun>` below the minimum.
fn count(
    found: usize,
    (min, max): (Option<u64>, Option<u64>),
    noun: &str,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    if let Some(max) = max
        && found as u64 > max
    {
        errors.push(FieldError::too_many(path, found, max as usize));
    }
    if let Some(min) = min
        && (found as u64) < min
    {
        errors.push(FieldError::invalid(
            path,
            found,
            &format!("{path} in body should have at least {min} {noun}"),
        ));
    }
}

/// Whether two items of a map list have the same keys (a missing key taking its default).
fn same_keys(a: &Value, b: &Value, keys: &[String], item: &Schema) -> bool {
    keys.iter().all(|key| {
        let default = item.properties.get(key).and_then(|p| p.default.as_ref());
        let of = |v: &Value| v.get(key).or(default).cloned();
        of(a) == of(b)
    })
}

/// Whether `value` has a duplicate item in a `set` or `map` list anywhere.
fn has_duplicates(value: &Value, schema: &Schema) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(key, child)| match schema.field(key) {
            Some(FieldSchema::Declared(s) | FieldSchema::MapValue(s)) => has_duplicates(child, s),
            _ => false,
        }),
        Value::Array(items) => {
            let duplicate = match schema.list_type.as_str() {
                "set" => items
                    .iter()
                    .enumerate()
                    .any(|(i, item)| items[..i].contains(item)),
                "map" => {
                    let mut seen = HashSet::new();
                    items.iter().any(|item| {
                        let key: Map<String, Value> = schema
                            .list_map_keys
                            .iter()
                            .filter_map(|k| item.get(k).map(|v| (k.clone(), v.clone())))
                            .collect();
                        !seen.insert(Value::Object(key).to_string())
                    })
                }
                _ => false,
            };
            duplicate
                || schema
                    .items
                    .as_deref()
                    .is_some_and(|s| items.iter().any(|item| has_duplicates(item, s)))
        }
        _ => false,
    }
}
