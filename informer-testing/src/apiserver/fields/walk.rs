//! The operations structured-merge-diff's `typed` package does on values of a shape: the set
//! of fields a value sets, the merge of an applied configuration into an object, the
//! comparison of two versions of an object, and the removal of a set of fields.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::super::go_json::unstructured_type;
use super::path::{Element, Set, compare_values};
use super::types::{Class, Field, ListKind, Shape};

/// The element that identifies a list item (`[name="a"]` or `[="x"]`).
fn item_element(shape: &Shape<'_>, kind: &ListKind, item: &Value) -> Result<Element, String> {
    match kind {
        ListKind::Map(keys) => {
            let Value::Object(map) = item else {
                return Err(if item.is_null() {
                    "associative list with keys may not have a null element".into()
                } else {
                    "associative list with keys may not have non-map elements".into()
                });
            };
            let mut fields = Vec::with_capacity(keys.len());
            for key in keys {
                match map.get(key).cloned().or_else(|| shape.key_default(key)) {
                    Some(value) => fields.push((key.clone(), value)),
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field {key:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(Element::Key(fields))
        }
        ListKind::Set | ListKind::Atomic => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            other => Ok(Element::Value(other.clone())),
        },
    }
}

/// The elements of a list's items, in order; duplicates are an error unless `allow_duplicates`.
fn item_elements<'v>(
    shape: &Shape<'_>,
    kind: &ListKind,
    items: &'v [Value],
    allow_duplicates: bool,
) -> Result<Vec<(Element, &'v Value)>, String> {
    let mut out: Vec<(Element, &Value)> = Vec::with_capacity(items.len());
    for item in items {
        let element = item_element(shape, kind, item)?;
        if out.iter().any(|(e, _)| *e == element) {
            if allow_duplicates {
                continue;
            }
            return Err(format!("duplicate entries for key {element}"));
        }
        out.push((element, item));
    }
    Ok(out)
}

/// The set of fields a value sets (structured-merge-diff's `ToFieldSet`): every leaf, every
/// list item, every map key that is not a declared struct field, and every empty or null
/// field.
pub(crate) fn field_set(shape: Shape<'_>, value: &Value) -> Result<Set, String> {
    let mut set = Set::default();
    fields(shape, value, &mut Vec::new(), &mut set)?;
    Ok(set)
}

fn fields(
    shape: Shape<'_>,
    value: &Value,
    path: &mut Vec<Element>,
    out: &mut Set,
) -> Result<(), String> {
    match shape.class(value) {
        Class::Leaf => out.insert(path),
        Class::Map => {
            let Value::Object(map) = value else {
                return Ok(());
            };
            for (key, child) in map {
                // Stored objects were pruned; anything left unknown counts as a map key.
                let field = shape.field(key).unwrap_or(Field {
                    shape: Shape::Deduced,
                    declared: false,
                });
                path.push(Element::Field(key.clone()));
                fields(field.shape, child, path, out)?;
                let empty = child.is_null() || child.as_object().is_some_and(Map::is_empty);
                if empty || !field.declared {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Class::List(kind) => {
            let Value::Array(items) = value else {
                return Ok(());
            };
            let items_shape = shape.items();
            for (element, item) in item_elements(&shape, &kind, items, true)? {
                path.push(element);
                fields(items_shape, item, path, out)?;
                out.insert(path);
                path.pop();
            }
        }
    }
    Ok(())
}

/// Merges an applied configuration into an object (structured-merge-diff's `Merge`): maps
/// field by field, `set` and `map` lists item by item (keeping the object's order and placing
/// new items as the configuration orders them), everything else replaced by the
/// configuration.
pub(crate) fn merge(
    shape: Shape<'_>,
    live: Option<&Value>,
    config: Option<&Value>,
) -> Result<Option<Value>, String> {
    let class = match (config, live) {
        (Some(v), _) | (None, Some(v)) => shape.class(v),
        (None, None) => return Ok(None),
    };
    match class {
        Class::Leaf => Ok(config.or(live).cloned()),
        Class::Map => {
            let left = live.and_then(Value::as_object);
            let right = config.and_then(Value::as_object);
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if empty(left) && empty(right) {
                return Ok(config.or(live).cloned());
            }
            let mut out = Map::new();
            let keys: std::collections::BTreeSet<&String> =
                left.into_iter().chain(right).flat_map(Map::keys).collect();
            for key in keys {
                let field = shape.field(key).map_or(Shape::Deduced, |f| f.shape);
                let l = left.and_then(|m| m.get(key));
                let r = right.and_then(|m| m.get(key));
                if let Some(merged) = merge(field, l, r)? {
                    out.insert(key.clone(), merged);
                }
            }
            Ok(Some(Value::Object(out)))
        }
        Class::List(kind) => {
            let left = live.and_then(Value::as_array);
            let right = config.and_then(Value::as_array);
            let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
            if empty(left) && empty(right) {
                return Ok(config.or(live).cloned());
            }
            let items_shape = shape.items();
            let lhs = item_elements(&shape, &kind, left.map_or(&[][..], Vec::as_slice), true)?;
            let rhs = item_elements(&shape, &kind, right.map_or(&[][..], Vec::as_slice), false)?;
            let mut out = Vec::new();
            for (element, l, r) in merge_order(&lhs, &rhs) {
                let _ = element;
                if let Some(item) = merge(items_shape, l, r)? {
                    out.push(item);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Array(out)))
        }
    }
}

/// The items of a merged list in structured-merge-diff's order: the object's items in their
/// order, with the items both have taking the configuration's relative order, and the
/// configuration's new items placed after the item that precedes them there.
fn merge_order<'v>(
    lhs: &[(Element, &'v Value)],
    rhs: &[(Element, &'v Value)],
) -> Vec<(Element, Option<&'v Value>, Option<&'v Value>)> {
    let lhs_map: BTreeMap<&Element, &Value> = lhs.iter().map(|(e, v)| (e, *v)).collect();
    let rhs_map: BTreeMap<&Element, &Value> = rhs.iter().map(|(e, v)| (e, *v)).collect();
    let mut shared: std::collections::VecDeque<&Element> = rhs
        .iter()
        .map(|(e, _)| e)
        .filter(|e| lhs_map.contains_key(e))
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs: std::collections::BTreeSet<&Element> = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let (mut l, mut r) = (0, 0);
    while l < lhs.len() || r < rhs.len() {
        if l < lhs.len() && r < rhs.len() {
            let element = &lhs[l].0;
            if *element == rhs[r].0 {
                merged_rhs.insert(element);
                out.push((
                    element.clone(),
                    lhs_map.get(element).copied(),
                    rhs_map.get(element).copied(),
                ));
                l += 1;
                r += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if rhs_map.contains_key(element)
                && next_shared.is_some_and(|n| n.cmp(element) != Ordering::Equal)
            {
                l += 1;
                continue;
            }
        }
        if l < lhs.len() {
            let element = &lhs[l].0;
            if !rhs_map.contains_key(element) {
                out.push((element.clone(), Some(lhs[l].1), None));
                l += 1;
                continue;
            } else if merged_rhs.contains(element) {
                l += 1;
                continue;
            }
        }
        if r < rhs.len() {
            let element = &rhs[r].0;
            merged_rhs.insert(element);
            out.push((
                element.clone(),
                lhs_map.get(element).copied(),
                Some(rhs[r].1),
            ));
            r += 1;
            if next_shared.is_some_and(|n| n == element) {
                next_shared = shared.pop_front();
            }
        }
    }
    out
}

/// What changed between two versions of an object (structured-merge-diff's `Compare`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub added: Set,
    pub modified: Set,
    pub removed: Set,
}

/// Compares two versions of an object: leaves and items added, modified (leaves only) or
/// removed, and the maps and lists added or removed as a whole.
pub(crate) fn compare(shape: Shape<'_>, old: &Value, new: &Value) -> Result<Comparison, String> {
    let mut comparison = Comparison::default();
    compare_node(
        shape,
        Some(old),
        Some(new),
        &mut Vec::new(),
        &mut comparison,
    )?;
    Ok(comparison)
}

fn compare_node(
    shape: Shape<'_>,
    old: Option<&Value>,
    new: Option<&Value>,
    path: &mut Vec<Element>,
    out: &mut Comparison,
) -> Result<(), String> {
    let class = match (new, old) {
        (Some(v), _) | (None, Some(v)) => shape.class(v),
        (None, None) => return Ok(()),
    };
    let leaf = |out: &mut Comparison, path: &[Element]| match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(a), Some(b)) if !values_equal(a, b) => out.modified.insert(path),
        _ => {}
    };
    match class {
        Class::Leaf => leaf(out, path),
        Class::Map => {
            let left = old.and_then(Value::as_object);
            let right = new.and_then(Value::as_object);
            let empty = |m: Option<&Map<String, Value>>| m.is_none_or(Map::is_empty);
            if empty(left) && empty(right) {
                leaf(out, path);
                return Ok(());
            }
            let keys: std::collections::BTreeSet<&String> =
                left.into_iter().chain(right).flat_map(Map::keys).collect();
            for key in keys {
                let field = shape.field(key).map_or(Shape::Deduced, |f| f.shape);
                path.push(Element::Field(key.clone()));
                compare_node(
                    field,
                    left.and_then(|m| m.get(key)),
                    right.and_then(|m| m.get(key)),
                    path,
                    out,
                )?;
                path.pop();
            }
            added_or_removed(old, new, path, out);
        }
        Class::List(kind) => {
            let left = old.and_then(Value::as_array);
            let right = new.and_then(Value::as_array);
            let empty = |l: Option<&Vec<Value>>| l.is_none_or(Vec::is_empty);
            if empty(left) && empty(right) {
                leaf(out, path);
                return Ok(());
            }
            let items_shape = shape.items();
            let lhs = item_elements(&shape, &kind, left.map_or(&[][..], Vec::as_slice), true)?;
            let rhs = item_elements(&shape, &kind, right.map_or(&[][..], Vec::as_slice), false)?;
            for (element, l, r) in merge_order(&lhs, &rhs) {
                path.push(element);
                compare_node(items_shape, l, r, path, out)?;
                path.pop();
            }
            added_or_removed(old, new, path, out);
        }
    }
    Ok(())
}

/// Records a map or list that appeared or disappeared as a whole.
fn added_or_removed(
    old: Option<&Value>,
    new: Option<&Value>,
    path: &[Element],
    out: &mut Comparison,
) {
    match (old, new) {
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        _ => {}
    }
}

/// Value equality as structured-merge-diff's: numbers compare numerically.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// The object without the fields and items of `set` (structured-merge-diff's `RemoveItems`):
/// a removed member goes with everything under it; maps and lists left empty go too
/// (`None`).
pub(crate) fn remove_items(shape: Shape<'_>, value: &Value, set: &Set) -> Option<Value> {
    match shape.class(value) {
        Class::Leaf => Some(value.clone()),
        Class::Map => {
            let map = value.as_object()?;
            let mut out = Map::new();
            for (key, child) in map {
                let element = Element::Field(key.clone());
                if set.has_member(&element) {
                    continue;
                }
                let kept = match set.with_prefix(&element) {
                    Some(below) => {
                        let field = shape.field(key).map_or(Shape::Deduced, |f| f.shape);
                        remove_items(field, child, below)
                    }
                    None => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(key.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Class::List(kind) => {
            let items = value.as_array()?;
            let items_shape = shape.items();
            let mut out = Vec::new();
            for item in items {
                let Ok(element) = item_element(&shape, &kind, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&element) {
                    continue;
                }
                let kept = match set.with_prefix(&element) {
                    Some(below) => remove_items(items_shape, item, below),
                    None => Some(item.clone()),
                };
                if let Some(kept) = kept {
                    out.push(kept);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
    }
}

/// The set with every declared struct field that has paths under it made a member too
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`), so that removing it removes the
/// field rather than leaving an empty struct.
pub(crate) fn ensure_named_fields(shape: Shape<'_>, set: &Set) -> Set {
    let mut out = Set::default();
    for member in set.members() {
        out.insert_member(member.clone());
    }
    for (element, child) in set.children() {
        let child_shape = match element {
            Element::Field(name) => match shape.field(name) {
                Some(field) => {
                    if field.declared {
                        out.insert_member(element.clone());
                    }
                    field.shape
                }
                None => Shape::Deduced,
            },
            Element::Key(_) => shape.items(),
            _ => Shape::Leaf,
        };
        let ensured = ensure_named_fields(child_shape, child);
        if !ensured.is_empty() {
            add_child(&mut out, element, ensured);
        }
    }
    out
}

fn add_child(set: &mut Set, element: &Element, child: Set) {
    let mut wrapper = Set::default();
    for path in child.paths() {
        let mut full = vec![element.clone()];
        full.extend(path.0);
        wrapper.insert(&full);
    }
    *set = set.union(&wrapper);
}

/// Checks an applied configuration against the shape, as structured-merge-diff's typed
/// conversion does before an apply: fields a struct does not declare and scalars of the
/// wrong type are errors (`.spec.bogus: field not declared in schema`).
pub(crate) fn check_config(shape: Shape<'_>, value: &Value) -> Result<(), String> {
    let mut errors = Vec::new();
    check(shape, value, &mut Vec::new(), &mut errors);
    match errors.as_slice() {
        [] => Ok(()),
        [one] => Err(one.clone()),
        many => Err(format!(
            "errors:\n{}",
            many.iter()
                .map(|e| format!("  {e}"))
                .collect::<Vec<_>>()
                .join("\n")
        )),
    }
}

fn check(shape: Shape<'_>, value: &Value, path: &mut Vec<Element>, errors: &mut Vec<String>) {
    fn here(path: &[Element]) -> String {
        path.iter().map(ToString::to_string).collect()
    }
    if value.is_null() {
        return;
    }
    if let Some(scalar) = shape.scalar() {
        let ok = match scalar {
            "numeric" => value.is_number(),
            "string" => value.is_string(),
            _ => value.is_boolean(),
        };
        if !ok {
            let got = match (scalar, value) {
                ("numeric", _) => unstructured_type(value).to_string(),
                ("string", _) => format!("&value.valueUnstructured{{Value:{}}}", go_value(value)),
                _ => go_value(value),
            };
            errors.push(format!(
                "{}: expected {scalar}{}, got {got}",
                here(path),
                if scalar == "numeric" {
                    " (int or float)"
                } else {
                    ""
                }
            ));
        }
        return;
    }
    if shape.expects_map() && !value.is_object() {
        errors.push(format!(
            "{}: expected map, got {}",
            here(path),
            go_value(value)
        ));
        return;
    }
    if shape.expects_list() && !value.is_array() {
        errors.push(format!(
            "{}: expected list, got {}",
            here(path),
            go_value(value)
        ));
        return;
    }
    match shape.class(value) {
        Class::Leaf => {}
        Class::Map => {
            if let Value::Object(map) = value {
                for (key, child) in map {
                    match shape.field(key) {
                        Some(field) => {
                            path.push(Element::Field(key.clone()));
                            check(field.shape, child, path, errors);
                            path.pop();
                        }
                        None => errors.push(format!(
                            "{}.{key}: field not declared in schema",
                            here(path)
                        )),
                    }
                }
            }
        }
        Class::List(kind) => {
            if let Value::Array(items) = value {
                match item_elements(&shape, &kind, items, false) {
                    Ok(elements) => {
                        let items_shape = shape.items();
                        for (element, item) in elements {
                            path.push(element);
                            check(items_shape, item, path, errors);
                            path.pop();
                        }
                    }
                    Err(err) => errors.push(format!("{}: {err}", here(path))),
                }
            }
        }
    }
}

/// A decoded JSON value as Go's `%v` prints it.
fn go_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_value).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => format!(
            "map[{}]",
            map.iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        other => other.to_string(),
    }
}
