//! CEL validation rules (`x-kubernetes-validations`), as kube-apiserver's apiextensions
//! evaluates them (`apiextensions-apiserver/pkg/apiserver/schema/cel`), with the `cel` crate
//! (cel-rust) as the interpreter.
//!
//! - Rules are compiled when the schema is read ([`Schema::parse`]), so once per CRD version
//!   and not per request; a rule that does not compile fails the CRD's create or update at
//!   `...x-kubernetes-validations[i].rule` (`compilation failed: ERROR: <input>:1:9: ...`).
//! - `self` is the value at the node carrying the rule, typed by the schema: `integer` as
//!   `int`, `number` as `double` (even when written `1`), `format: byte` as `bytes`,
//!   `format: duration` as `duration`, `date`/`date-time` as `timestamp`, other strings as
//!   `string`, `x-kubernetes-int-or-string` as an `int` or a `string`; objects with
//!   `properties` show only those (names escaped as upstream: `foo-bar` is `foo__dash__bar`),
//!   maps (`additionalProperties`) every key; at the root of a resource (and of an embedded
//!   resource) `apiVersion`, `kind`, `metadata.name` and `metadata.generateName`.
//! - Transition rules (those that use `oldSelf`) run on update only, where the old value is
//!   found at the same place: object fields and map keys by name, items of
//!   `x-kubernetes-list-type: map` lists by their keys; never under atomic or set lists
//!   (a CRD with such a rule is refused, as upstream does). With `optionalOldSelf: true` they
//!   also run without an old value, `oldSelf` being an optional.
//! - A failed rule is a field error at the node's path (plus the rule's `fieldPath`), of the
//!   rule's `reason` (`FieldValueInvalid` by default), worded with its `message`, else the
//!   result of its `messageExpression`, else `failed rule: <rule>`. As upstream (validation
//!   ratcheting), on update a rule that does not use `oldSelf` is not enforced on a value
//!   that did not change.
//!
//! Not done, unlike upstream: static type checking (a rule that names an unknown field or
//! returns a non-bool fails when evaluated, not when the CRD is written), cost estimation and
//! limits, rules under `allOf`/`anyOf`/`oneOf`/`not`, set and map list equality (lists compare
//! in order), and the `url`, `quantity`, `ip`, `cidr`, `semver` and `format` libraries.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use ::cel::common::types::{self as cel_types, CelOptional as Optional};
use ::cel::common::value::{CowVal, Val};
use ::cel::objects::{Key, Map as CelMap};
use ::cel::{Context, Env, ExecutionError, Program, Value as Cel};
use serde_json::{Map, Value};

use super::super::status::{FieldError, FieldErrorKind};
use super::{ProblemKind, Schema, SchemaProblem, child_path};

/// One rule of `x-kubernetes-validations`, compiled.
#[derive(Clone, Debug)]
pub(crate) struct Rule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    /// `reason`: FieldValueInvalid (empty), FieldValueForbidden, FieldValueRequired or
    /// FieldValueDuplicate.
    pub reason: String,
    /// `fieldPath`, normalised (`spec.x` → `x`, `['a.b']` → `[a.b]`); empty when not given.
    pub field_path: String,
    pub optional_old_self: bool,
    /// The rule refers to `oldSelf`.
    pub uses_old_self: bool,
    program: Option<Arc<Program>>,
    message_program: Option<Arc<Program>>,
}

/// The environment every rule runs in: the standard library, optionals, the strings and lists
/// extensions, and the Kubernetes list and regex libraries.
static ENV: LazyLock<Arc<Env>> = LazyLock::new(|| Arc::new(environment()));

fn environment() -> Env {
    let mut env = Env::stdlib();
    env.add_extension(::cel::extensions::strings)
        .expect("the strings extension");
    env.add_extension(::cel::extensions::lists)
        .expect("the lists extension");
    kubernetes_libraries(&mut env).expect("the Kubernetes CEL libraries");
    env
}

/// Reads and compiles the rules of one schema node; `path` is the node's place in the CRD.
pub(crate) fn parse_rules(
    value: Option<&Value>,
    schema: &Schema,
    path: &str,
    problems: &mut Vec<SchemaProblem>,
) -> Vec<Rule> {
    let Some(Value::Array(rules)) = value else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, raw) in rules.iter().enumerate() {
        let at = format!("{path}.x-kubernetes-validations[{i}]");
        let text = |key: &str| {
            raw.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let mut rule = Rule {
            rule: text("rule"),
            message: text("message"),
            message_expression: text("messageExpression"),
            reason: text("reason"),
            field_path: String::new(),
            optional_old_self: raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
            uses_old_self: false,
            program: None,
            message_program: None,
        };
        let mut problem = |field: String, kind, detail: String, value: Option<Value>| {
            problems.push(SchemaProblem {
                field,
                kind,
                detail,
                value,
            })
        };
        if rule.rule.trim().is_empty() {
            problem(
                format!("{at}.rule"),
                ProblemKind::Required,
                "rule is not specified".into(),
                None,
            );
        } else {
            match ENV.compile(&rule.rule) {
                Ok(program) => {
                    rule.uses_old_self = program.references().has_variable("oldSelf");
                    rule.program = Some(Arc::new(program));
                }
                Err(err) => problem(
                    format!("{at}.rule"),
                    ProblemKind::InvalidShownAsIs,
                    format!("compilation failed: {}", cel_go_issues(&err.to_string())),
                    Some(go_rule_struct(raw)),
                ),
            }
        }
        if !rule.message.is_empty() && rule.message.trim().is_empty() {
            problem(
                format!("{at}.message"),
                ProblemKind::Invalid,
                "message must be non-empty if specified".into(),
                Some(Value::String(rule.message.clone())),
            );
        }
        if rule.message.contains('\n') {
            problem(
                format!("{at}.message"),
                ProblemKind::Invalid,
                "message must not contain line breaks".into(),
                Some(Value::String(rule.message.clone())),
            );
        }
        if rule.rule.contains('\n') && rule.message.is_empty() {
            problem(
                format!("{at}.message"),
                ProblemKind::Required,
                "message must be specified if rule contains line breaks".into(),
                None,
            );
        }
        if !rule.message_expression.is_empty() {
            if rule.message_expression.trim().is_empty() {
                problem(
                    format!("{at}.messageExpression"),
                    ProblemKind::Required,
                    "must be non-empty if specified".into(),
                    None,
                );
            } else {
                match ENV.compile(&rule.message_expression) {
                    Ok(program) => rule.message_program = Some(Arc::new(program)),
                    Err(err) => problem(
                        format!("{at}.messageExpression"),
                        ProblemKind::InvalidShownAsIs,
                        format!(
                            "messageExpression compilation failed: {}",
                            cel_go_issues(&err.to_string())
                        ),
                        Some(go_rule_struct(raw)),
                    ),
                }
            }
        }
        match rule.reason.as_str() {
            "" | "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired"
            | "FieldValueDuplicate" => {}
            other => problem(
                format!("{at}.reason"),
                ProblemKind::NotSupported,
                "supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"".into(),
                Some(Value::String(other.to_string())),
            ),
        }
        let field_path = text("fieldPath");
        if !field_path.is_empty() {
            match normalized_field_path(&field_path, schema) {
                Ok(normalized) => rule.field_path = normalized,
                Err(why) => problem(
                    format!("{at}.fieldPath"),
                    ProblemKind::Invalid,
                    {
                        let _ = why;
                        "must be a valid path".to_string()
                    },
                    Some(Value::String(field_path)),
                ),
            }
        }
        out.push(rule);
    }
    out
}

/// Refuses transition rules under atomic or set lists, where an old value cannot be found
/// (`oldSelf cannot be used on the uncorrelatable portion of the schema within <path>`).
pub(crate) fn check_transition_rules(
    schema: &Schema,
    path: &str,
    uncorrelatable: Option<&str>,
    problems: &mut Vec<SchemaProblem>,
) {
    if let Some(within) = uncorrelatable {
        for (i, rule) in schema.rules.iter().enumerate() {
            if rule.uses_old_self {
                problems.push(SchemaProblem {
                    field: format!("{path}.x-kubernetes-validations[{i}].rule"),
                    kind: ProblemKind::Invalid,
                    detail: format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                    ),
                    value: Some(Value::String(rule.rule.clone())),
                });
            }
        }
    }
    for (name, property) in &schema.properties {
        let child = format!("{path}.properties[{name}]");
        check_transition_rules(property, &child, uncorrelatable, problems);
    }
    if let Some(values) = &schema.additional_properties {
        let child = format!("{path}.additionalProperties");
        check_transition_rules(values, &child, uncorrelatable, problems);
    }
    if let Some(items) = &schema.items {
        let child = format!("{path}.items");
        let within = match (uncorrelatable, schema.list_type.as_str()) {
            (Some(within), _) => Some(within.to_string()),
            (None, "map") => None,
            (None, _) => Some(path.to_string()),
        };
        check_transition_rules(items, &child, within.as_deref(), problems);
    }
}

/// Adds to `errors` (those already found in the object) every rule `object` breaks, `old`
/// being the object it replaces; as upstream, no rule runs when `errors` has a missing,
/// unsupported, too long, too many or wrongly typed value. Returns the warnings of the rules
/// that ratcheting forgave (see [`ratcheted_warnings`]).
pub(crate) fn validate_resource(
    schema: &Schema,
    object: &Value,
    old: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> Vec<String> {
    use super::super::status::FieldErrorKind as K;
    if !schema.rules_below {
        return Vec::new();
    }
    let blocking = errors.iter().any(|e| {
        matches!(
            e.kind,
            K::NotSupported | K::Required | K::TooLong | K::TooMany | K::TypeInvalid
        )
    });
    if blocking {
        errors.push(FieldError::invalid(
            "<nil>",
            Value::Null,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
        return Vec::new();
    }
    let mut found = Found::default();
    walk(schema, object, old, "", false, &mut found);
    errors.extend(found.errors);
    found.ratcheted.iter().map(ToString::to_string).collect()
}

/// Every rule `object` (a whole custom resource) breaks; `old` is the object it replaces.
#[cfg(test)]
pub(crate) fn validate(schema: &Schema, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut found = Found::default();
    walk(schema, object, old, "", false, &mut found);
    found.errors
}

/// The warnings of an update of `old` to `object` that the rules allowed: each rule an
/// unchanged value broke and breaks still (and is not held to, ratcheting) is a warning of
/// its error's text (`spec.owner: Invalid value: "oscar": must start with o`), as the real
/// validator adds it (`warning.AddWarning`).
pub(crate) fn ratcheted_warnings(schema: &Schema, object: &Value, old: &Value) -> Vec<String> {
    if !schema.rules_below {
        return Vec::new();
    }
    let mut found = Found::default();
    walk(schema, object, Some(old), "", false, &mut found);
    found.ratcheted.iter().map(ToString::to_string).collect()
}

/// What the rules found: errors, and the errors of unchanged values that ratcheting forgives.
#[derive(Default)]
struct Found {
    errors: Vec<FieldError>,
    ratcheted: Vec<FieldError>,
}

/// Evaluates the rules of `schema` at `value`, then those of the nodes under it.
/// `parent_unchanged`: the nearest ancestor with an old value did not change (ratcheting).
fn walk(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    parent_unchanged: bool,
    found: &mut Found,
) {
    if value.is_null() || !schema.rules_below {
        return;
    }
    let old = old.filter(|old| !old.is_null());
    let unchanged = match old {
        Some(old) => old == value,
        None => parent_unchanged,
    };
    if !schema.rules.is_empty() {
        evaluate(schema, value, old, path, unchanged, found);
    }
    match value {
        Value::Object(map) => {
            let old_map = old.and_then(Value::as_object);
            for (key, child) in map {
                let child_schema = if let Some(property) = schema.properties.get(key) {
                    property
                } else if let Some(values) = &schema.additional_properties {
                    values
                } else {
                    continue;
                };
                let at = if schema.properties.contains_key(key) {
                    child_path(path, key)
                } else {
                    format!("{path}[{key}]")
                };
                let old_child = old_map.and_then(|m| m.get(key));
                walk(child_schema, child, old_child, &at, unchanged, found);
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = &schema.items else {
                return;
            };
            let old_items = old.and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                let old_item = if schema.list_type == "map" {
                    old_items.and_then(|olds| {
                        olds.iter()
                            .find(|o| same_keys(o, item, &schema.list_map_keys, item_schema))
                    })
                } else {
                    None
                };
                walk(
                    item_schema,
                    item,
                    old_item,
                    &format!("{path}[{i}]"),
                    unchanged,
                    found,
                );
            }
        }
        _ => {}
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

fn evaluate(
    schema: &Schema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    unchanged: bool,
    found: &mut Found,
) {
    let type_value = Value::String(schema.kind.clone());
    // Upstream's root path is nil, printed `<nil>`.
    let node_path = if path.is_empty() { "<nil>" } else { path };
    // The value a failed rule shows: scalars as they are, objects and lists not at all.
    let shown = match value {
        Value::Object(_) | Value::Array(_) => None,
        scalar => Some(scalar.clone()),
    };
    let this = to_cel(
        value,
        Some(schema),
        schema.resource_root || schema.embedded_resource,
    );
    let previous = old.map(|old| {
        to_cel(
            old,
            Some(schema),
            schema.resource_root || schema.embedded_resource,
        )
    });
    for rule in &schema.rules {
        let Some(program) = &rule.program else {
            continue;
        };
        if rule.uses_old_self && previous.is_none() && !rule.optional_old_self {
            continue;
        }
        let mut context = Context::with_env(Arc::clone(&ENV));
        context.add_variable_from_value("self", this.clone());
        if rule.optional_old_self {
            let optional = match previous.clone().map(Box::<dyn Val>::try_from) {
                Some(Ok(val)) => Optional::of(val),
                _ => Optional::none(),
            };
            context.add_variable_as_val("oldSelf", Box::new(optional));
        } else if let Some(previous) = &previous {
            context.add_variable_from_value("oldSelf", previous.clone());
        }
        match program.execute(&context) {
            Ok(Cel::Bool(true)) => continue,
            Ok(Cel::Bool(false)) => {}
            Ok(other) => {
                found.errors.push(FieldError::invalid(
                    node_path,
                    type_value.clone(),
                    &format!(
                        "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {} (it evaluated to {other:?}, not a bool)",
                        rule_error_string(rule)
                    ),
                ));
                continue;
            }
            Err(err) => {
                found.errors.push(FieldError::invalid(
                    node_path,
                    type_value.clone(),
                    &execution_error(&err, rule),
                ));
                continue;
            }
        }
        // Ratcheting: an unchanged value is not held to a rule it already broke (the
        // error is a warning instead).
        let ratcheted = !rule.uses_old_self && unchanged;
        let at = if rule.field_path.is_empty() {
            node_path.to_string()
        } else if rule.field_path.starts_with('[') || path.is_empty() {
            format!("{path}{}", rule.field_path)
        } else {
            format!("{path}.{}", rule.field_path)
        };
        let detail = rule
            .message_program
            .as_ref()
            .and_then(|program| message_expression(program, &context))
            .unwrap_or_else(|| {
                if rule.message.is_empty() {
                    format!("failed rule: {}", rule_error_string(rule))
                } else {
                    rule.message.trim().to_string()
                }
            });
        let error = match rule.reason.as_str() {
            "FieldValueForbidden" => FieldError::forbidden(&at, &detail),
            "FieldValueRequired" => FieldError::required(&at, &detail),
            "FieldValueDuplicate" => FieldError {
                kind: FieldErrorKind::Duplicate,
                field: at,
                value: shown.clone(),
                detail: String::new(),
            },
            _ => FieldError {
                kind: FieldErrorKind::Invalid,
                field: at,
                value: shown.clone(),
                detail,
            },
        };
        if ratcheted {
            found.ratcheted.push(error);
        } else {
            found.errors.push(error);
        }
    }
}

/// The result of a `messageExpression`, or `None` when it fails, is not a one-line non-empty
/// string (the rule's message is used then, as upstream).
fn message_expression(program: &Program, context: &Context) -> Option<String> {
    match program.execute(context) {
        Ok(Cel::String(text)) => {
            let text = text.trim();
            (!text.is_empty() && !text.contains('\n') && text.len() <= 5 * 1024)
                .then(|| text.to_string())
        }
        _ => None,
    }
}

fn rule_error_string(rule: &Rule) -> String {
    if rule.message.is_empty() {
        rule.rule.trim().to_string()
    } else {
        rule.message.trim().to_string()
    }
}

/// An evaluation error as upstream words it (`no such key: x evaluating rule: <rule>`).
fn execution_error(err: &ExecutionError, rule: &Rule) -> String {
    let rule_text = rule_error_string(rule);
    match err {
        ExecutionError::NoSuchOverload(_) => format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
        ),
        ExecutionError::NoSuchKey(key) => {
            format!("no such key: {key} evaluating rule: {rule_text}")
        }
        ExecutionError::DivisionByZero(_) => {
            format!("division by zero evaluating rule: {rule_text}")
        }
        ExecutionError::RemainderByZero(_) => {
            format!("modulus by zero evaluating rule: {rule_text}")
        }
        ExecutionError::Overflow(..) => format!("integer overflow evaluating rule: {rule_text}"),
        ExecutionError::IndexOutOfBounds(index) => {
            format!(
                "index out of bounds: {} evaluating rule: {rule_text}",
                cel_text(index)
            )
        }
        other => format!("{other} evaluating rule: {rule_text}"),
    }
}

fn cel_text(value: &Cel) -> String {
    match value {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// cel-rust's parse errors in cel-go's layout (`ERROR: <input>:1:9: ...` then the source line
/// and a caret, each after ` | `).
fn cel_go_issues(text: &str) -> String {
    text.lines()
        .map(|line| match line.strip_prefix("| ") {
            Some(rest) => format!(" | {rest}"),
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// An `apiextensions.ValidationRule` as upstream shows it for a rule that does not compile:
/// JSON with Go's field names, in their order.
pub(crate) fn go_rule_struct(raw: &Value) -> Value {
    let text = |key: &str| {
        crate::apiserver::go_json::go_string(raw.get(key).and_then(Value::as_str).unwrap_or(""))
    };
    let reason = raw
        .get("reason")
        .and_then(Value::as_str)
        .map_or_else(|| "null".to_string(), crate::apiserver::go_json::go_string);
    let optional = raw
        .get("optionalOldSelf")
        .filter(|r| r.is_boolean())
        .cloned()
        .unwrap_or(Value::Null);
    Value::String(format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{reason},\"FieldPath\":{},\"OptionalOldSelf\":{optional}}}",
        text("rule"),
        text("message"),
        text("messageExpression"),
        text("fieldPath"),
    ))
}

/// Checks a rule's `fieldPath` against the schema (fields and map keys only, as upstream's
/// `ValidFieldPath`) and returns it as a field path relative to the node.
fn normalized_field_path(path: &str, schema: &Schema) -> Result<String, String> {
    let mut out = String::new();
    let mut node = schema;
    let mut rest = path;
    let step = |name: &str, out: &mut String, node: &mut &Schema| -> Result<(), String> {
        if let Some(property) = node.properties.get(name) {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            *node = property;
            Ok(())
        } else if let Some(values) = &node.additional_properties {
            out.push_str(&format!("[{name}]"));
            *node = values;
            Ok(())
        } else {
            Err("does not refer to a valid field".into())
        }
    };
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return Err("unexpected end of JSON path".into());
            }
            step(name, &mut out, &mut node)?;
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let Some(end) = after.find("']") else {
                return Err("unexpected end of JSON path".into());
            };
            step(&after[..end], &mut out, &mut node)?;
            rest = &after[end + 2..];
        } else {
            let token: String = rest
                .chars()
                .take_while(|c| !matches!(c, '.' | '['))
                .collect();
            return Err(format!("expected [ or . but got: {token}"));
        }
    }
    Ok(out)
}

/// A JSON value as CEL sees it at a node of `schema` (`None`: no schema, taken as is).
/// `resource`: the root of a resource, whose `apiVersion`, `kind` and `metadata.name` and
/// `metadata.generateName` are visible.
fn to_cel(value: &Value, schema: Option<&Schema>, resource: bool) -> Cel {
    let Some(schema) = schema else {
        return plain(value);
    };
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if schema.kind == "number" {
                Cel::Float(n.as_f64().unwrap_or(0.0))
            } else if let Some(i) = n.as_i64() {
                Cel::Int(i)
            } else if schema.kind == "integer" {
                Cel::Int(n.as_f64().unwrap_or(0.0) as i64)
            } else {
                plain(value)
            }
        }
        Value::String(s) => string(s, &schema.format),
        Value::Array(items) => Cel::List(Arc::new(
            items
                .iter()
                .map(|item| {
                    let item_schema = schema.items.as_deref();
                    to_cel(
                        item,
                        item_schema,
                        item_schema.is_some_and(|s| s.embedded_resource),
                    )
                })
                .collect(),
        )),
        Value::Object(map) => object(map, schema, resource),
    }
}

fn object(map: &Map<String, Value>, schema: &Schema, resource: bool) -> Cel {
    let mut out = HashMap::new();
    if let Some(values) = &schema.additional_properties {
        for (key, child) in map {
            out.insert(
                Key::String(Arc::new(key.clone())),
                to_cel(child, Some(values), values.embedded_resource),
            );
        }
    } else if schema.properties.is_empty() && schema.kind.is_empty() && !resource {
        return plain(&Value::Object(map.clone()));
    } else {
        for (key, child) in map {
            if resource {
                match key.as_str() {
                    "apiVersion" | "kind" if child.is_string() => {
                        out.insert(Key::String(Arc::new(key.clone())), plain(child));
                        continue;
                    }
                    "metadata" => {
                        let mut meta = HashMap::new();
                        for field in ["name", "generateName"] {
                            if let Some(Value::String(s)) = child.get(field) {
                                meta.insert(
                                    Key::String(Arc::new(field.to_string())),
                                    Cel::String(Arc::new(s.clone())),
                                );
                            }
                        }
                        out.insert(
                            Key::String(Arc::new(key.clone())),
                            Cel::Map(CelMap {
                                map: Arc::new(meta),
                            }),
                        );
                        continue;
                    }
                    _ => {}
                }
            }
            let Some(property) = schema.properties.get(key) else {
                continue;
            };
            if !exposed(property) {
                continue;
            }
            let Some(name) = escape(key) else {
                continue;
            };
            out.insert(
                Key::String(Arc::new(name)),
                to_cel(child, Some(property), property.embedded_resource),
            );
        }
    }
    Cel::Map(CelMap { map: Arc::new(out) })
}

/// Whether a property is visible to rules (upstream's `SchemaDeclType` is not nil).
fn exposed(schema: &Schema) -> bool {
    if schema.int_or_string {
        return true;
    }
    match schema.kind.as_str() {
        "array" => schema.items.as_deref().is_some_and(exposed),
        "object" => schema.additional_properties.as_deref().is_none_or(exposed),
        "string" | "boolean" | "number" | "integer" => true,
        _ => false,
    }
}

/// A string at a node of `format`: `bytes` for `byte`, `duration` for `duration`,
/// `timestamp` for `date` and `date-time`, else a string.
fn string(text: &str, format: &str) -> Cel {
    let converted = match format {
        "byte" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .ok()
                .map(|bytes| Cel::Bytes(Arc::new(bytes)))
        }
        "duration" => convert("duration(s)", text),
        "date" => convert("timestamp(s + 'T00:00:00Z')", text),
        "date-time" => convert("timestamp(s)", text),
        _ => None,
    };
    converted.unwrap_or_else(|| Cel::String(Arc::new(text.to_string())))
}

/// The conversions of [`convert`], compiled once.
static CONVERSIONS: LazyLock<HashMap<&'static str, Program>> = LazyLock::new(|| {
    [
        "duration(s)",
        "timestamp(s)",
        "timestamp(s + 'T00:00:00Z')",
        "duration('0s')",
    ]
    .into_iter()
    .map(|e| (e, ENV.compile(e).expect("a conversion compiles")))
    .collect()
});

/// Evaluates a conversion (`duration(s)`) of a string with the standard library.
fn convert(expression: &str, text: &str) -> Option<Cel> {
    let program = CONVERSIONS.get(expression)?;
    let mut context = Context::with_env(Arc::clone(&ENV));
    context.add_variable_from_value("s", text.to_string());
    program.execute(&context).ok()
}

/// A JSON value without a schema: numbers as `int` when whole, else `double`.
fn plain(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => Cel::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(plain).collect())),
        Value::Object(map) => Cel::Map(CelMap {
            map: Arc::new(
                map.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), plain(v)))
                    .collect(),
            ),
        }),
    }
}

/// CEL's reserved words, which upstream escapes as `__<word>__` in field names.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as rules write it (`k8s.io/apiserver/pkg/cel` `Escape`): `__` →
/// `__underscores__`, `.` → `__dot__`, `-` → `__dash__`, `/` → `__slash__`, a reserved word
/// `w` → `__w__`; `None` for a name that cannot be escaped.
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let mut out = String::new();
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

// The Kubernetes CEL libraries (`k8s.io/apiserver/pkg/cel/library`) the crate lacks.

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;

fn values(args: &[CowVal<'_, '_>]) -> Result<Vec<Cel>, ExecutionError> {
    args.iter().map(|arg| Cel::try_from(&**arg)).collect()
}

fn answer<'b, 'v>(value: Cel) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = Box::<dyn Val>::try_from(value)?;
    Ok(CowVal::from(boxed))
}

fn list_arg(value: &Cel) -> Result<&[Cel], ExecutionError> {
    match value {
        Cel::List(items) => Ok(items),
        other => Err(ExecutionError::UnexpectedType {
            got: other.type_of().to_string(),
            want: "list".into(),
        }),
    }
}

fn compare(a: &Cel, b: &Cel) -> Result<std::cmp::Ordering, ExecutionError> {
    a.partial_cmp(b)
        .ok_or_else(|| ExecutionError::ValuesNotComparable(a.clone(), b.clone()))
}

fn is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let items = list_arg(&args[0])?;
    for pair in items.windows(2) {
        if compare(&pair[0], &pair[1])? == std::cmp::Ordering::Greater {
            return answer(Cel::Bool(false));
        }
    }
    answer(Cel::Bool(true))
}

fn sum<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let items = list_arg(&args[0])?;
    let mut total = match items.first() {
        Some(Cel::Float(_)) => Cel::Float(0.0),
        Some(Cel::UInt(_)) => Cel::UInt(0),
        #[allow(unreachable_patterns)]
        Some(Cel::Duration(_)) => convert("duration('0s')", "").unwrap_or(Cel::Int(0)),
        _ => Cel::Int(0),
    };
    for item in items {
        total = match (&total, item) {
            (Cel::Int(a), Cel::Int(b)) => Cel::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::Overflow("+", total.clone(), item.clone()))?,
            ),
            (Cel::UInt(a), Cel::UInt(b)) => Cel::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::Overflow("+", total.clone(), item.clone()))?,
            ),
            (Cel::Float(a), Cel::Float(b)) => Cel::Float(a + b),
            (Cel::Duration(a), Cel::Duration(b)) => Cel::Duration(*a + *b),
            _ => {
                return Err(ExecutionError::no_such_member_overload(
                    "sum",
                    vec!["list".into()],
                ));
            }
        };
    }
    answer(total)
}

fn extreme<'b, 'v>(
    args: Args<'b, 'v>,
    function: &str,
    keep: std::cmp::Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let items = list_arg(&args[0])?;
    let Some(mut best) = items.first().cloned() else {
        return Err(ExecutionError::function_error(
            function,
            format!("{function}(list) called on empty list"),
        ));
    };
    for item in &items[1..] {
        if compare(item, &best)? == keep {
            best = item.clone();
        }
    }
    answer(best)
}

fn min<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", std::cmp::Ordering::Less)
}

fn max<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", std::cmp::Ordering::Greater)
}

fn list_index_of<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let items = list_arg(&args[0])?;
    let found = items.iter().position(|item| item == &args[1]);
    answer(Cel::Int(found.map_or(-1, |i| i as i64)))
}

fn list_last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let items = list_arg(&args[0])?;
    let found = items.iter().rposition(|item| item == &args[1]);
    answer(Cel::Int(found.map_or(-1, |i| i as i64)))
}

fn regex_of(pattern: &Cel) -> Result<regex::Regex, ExecutionError> {
    let Cel::String(pattern) = pattern else {
        return Err(ExecutionError::UnexpectedType {
            got: pattern.type_of().to_string(),
            want: "string".into(),
        });
    };
    regex::Regex::new(pattern).map_err(|err| ExecutionError::function_error("find", err))
}

fn find<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let (Cel::String(text), pattern) = (&args[0], &args[1]) else {
        return Err(ExecutionError::no_such_member_overload("find", vec![]));
    };
    let found = regex_of(pattern)?
        .find(text)
        .map_or("", |m| m.as_str())
        .to_string();
    answer(Cel::String(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(&args)?;
    let (Cel::String(text), pattern) = (&args[0], &args[1]) else {
        return Err(ExecutionError::no_such_member_overload("findAll", vec![]));
    };
    let limit = match args.get(2) {
        Some(Cel::Int(n)) if *n >= 0 => *n as usize,
        Some(Cel::Int(_)) | None => usize::MAX,
        Some(_) => return Err(ExecutionError::no_such_member_overload("findAll", vec![])),
    };
    let found = regex_of(pattern)?
        .find_iter(text)
        .take(limit)
        .map(|m| Cel::String(Arc::new(m.as_str().to_string())))
        .collect();
    answer(Cel::List(Arc::new(found)))
}

fn kubernetes_libraries(env: &mut Env) -> Result<(), ::cel::DeclarationError> {
    use cel_types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_last_index_of,
    )?;
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
