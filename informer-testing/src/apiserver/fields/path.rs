//! Field paths and sets of them, as structured-merge-diff's `fieldpath` package defines them:
//! the unit of field ownership in `metadata.managedFields`.
//!
//! A path is a list of [`Element`]s: a struct field or map key (`.spec`), a list item by its
//! key fields (`[name="app"]`), a set item by its value (`[="x"]`) or a list item by index
//! (`[0]`, for lists whose items have no identity). A [`Set`] holds paths as a tree: the
//! paths that are members of it, and children by their first element. Its `FieldsV1` form is
//! the JSON of `managedFields[*].fieldsV1`: `f:<field>`, `k:<key fields as JSON>`,
//! `v:<value as JSON>`, `i:<index>`, and `.` for a member that also has children.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a path.
#[derive(Clone, Debug)]
pub(crate) enum Element {
    /// A struct field or map key.
    Field(String),
    /// A list item by its key fields (sorted by name), for lists of type `map`.
    Key(Vec<(String, Value)>),
    /// A list item by its value, for lists of type `set`.
    Value(Value),
    /// A list item by its position (lists whose items have no identity).
    Index(usize),
}

impl Element {
    fn rank(&self) -> u8 {
        match self {
            Element::Field(_) => 0,
            Element::Key(_) => 1,
            Element::Value(_) => 2,
            Element::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of the element (`f:name`, `k:{"name":"a"}`, `v:"x"`, `i:0`).
    pub(crate) fn fields_v1_key(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(fields) => {
                let object: Map<String, Value> = fields.iter().cloned().collect();
                format!("k:{}", Value::Object(object))
            }
            Element::Value(value) => format!("v:{value}"),
            Element::Index(index) => format!("i:{index}"),
        }
    }

    /// Reads a `FieldsV1` key back.
    pub(crate) fn from_fields_v1_key(key: &str) -> Result<Self, String> {
        let (kind, rest) = key
            .split_once(':')
            .ok_or_else(|| format!("{key:?} is not a field path element"))?;
        match kind {
            "f" => Ok(Element::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(map)) => {
                    let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(Element::Key(fields))
                }
                _ => Err(format!("{key:?}: the key fields are not a JSON object")),
            },
            "v" => serde_json::from_str(rest)
                .map(Element::Value)
                .map_err(|err| format!("{key:?}: the value is not JSON: {err}")),
            "i" => rest
                .parse()
                .map(Element::Index)
                .map_err(|_| format!("{key:?}: the index is not a number")),
            _ => Err(format!("{key:?}: unknown path element kind {kind:?}")),
        }
    }
}

impl PartialEq for Element {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Element {}

impl PartialOrd for Element {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Element {
    /// structured-merge-diff's order: fields, then keys, then values, then indexes.
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Element::Field(a), Element::Field(b)) => a.cmp(b),
            (Element::Key(a), Element::Key(b)) => compare_fields(a, b),
            (Element::Value(a), Element::Value(b)) => compare_values(a, b),
            (Element::Index(a), Element::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl fmt::Display for Element {
    /// As a conflict message prints it: `.spec`, `[name="app"]`, `[="x"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Field(name) => write!(f, ".{name}"),
            Element::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            Element::Value(value) => write!(f, "[={}]", value_string(value)),
            Element::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A value as structured-merge-diff prints it in a path (Go's `%q` for strings).
fn value_string(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value_string).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_string(v)))
            .collect::<String>(),
        other => other.to_string(),
    }
}

fn compare_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let by_name = x.0.cmp(&y.0);
        if by_name != Ordering::Equal {
            return by_name;
        }
        let by_value = compare_values(&x.1, &y.1);
        if by_value != Ordering::Equal {
            return by_value;
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order of values: numbers (compared numerically), strings,
/// booleans, lists, maps, null.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<(String, Value)> =
                x.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut ys: Vec<(String, Value)> =
                y.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            xs.sort_by(|p, q| p.0.cmp(&q.0));
            ys.sort_by(|p, q| p.0.cmp(&q.0));
            compare_fields(&xs, &ys)
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// A path from the root of an object.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Path(pub Vec<Element>);

impl Path {
    /// This path with one more element.
    pub(crate) fn child(&self, element: Element) -> Path {
        let mut elements = self.0.clone();
        elements.push(element);
        Path(elements)
    }
}

impl fmt::Display for Path {
    /// `.spec.containers[name="app"].image`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for element in &self.0 {
            write!(f, "{element}")?;
        }
        Ok(())
    }
}

/// A set of paths, as a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Set {
    members: BTreeSet<Element>,
    children: BTreeMap<Element, Set>,
}

impl Set {
    /// Whether the set holds no path.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    /// Adds a path (the empty path is not a member of anything and is ignored).
    pub(crate) fn insert(&mut self, path: &[Element]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether a path is a member.
    pub(crate) fn has(&self, path: &[Element]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether an element is a member at the top level.
    pub(crate) fn has_member(&self, element: &Element) -> bool {
        self.members.contains(element)
    }

    /// The paths under an element, relative to it (empty if none).
    pub(crate) fn with_prefix(&self, element: &Element) -> Option<&Set> {
        self.children.get(element).filter(|c| !c.is_empty())
    }

    /// The top-level members.
    pub(crate) fn members(&self) -> impl Iterator<Item = &Element> {
        self.members.iter()
    }

    /// The children by their first element.
    pub(crate) fn children(&self) -> impl Iterator<Item = (&Element, &Set)> {
        self.children.iter()
    }

    /// Adds a top-level member.
    pub(crate) fn insert_member(&mut self, element: Element) {
        self.members.insert(element);
    }

    /// The set of paths in either.
    pub(crate) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            let merged = match out.children.get(element) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(element.clone(), merged);
        }
        out
    }

    /// The paths in both.
    pub(crate) fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let both = child.intersection(other.children.get(element)?);
                (!both.is_empty()).then(|| (element.clone(), both))
            })
            .collect();
        Set { members, children }
    }

    /// The paths in this set and not in `other` (paths under a removed member stay).
    pub(crate) fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(theirs) => child.difference(theirs),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        Set { members, children }
    }

    /// Like [`Set::difference`], but a member of `other` also removes every path under it.
    pub(crate) fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(element, _)| !other.members.contains(element))
            .filter_map(|(element, child)| {
                let rest = match other.children.get(element) {
                    Some(theirs) => child.recursive_difference(theirs),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (element.clone(), rest))
            })
            .collect();
        Set { members, children }
    }

    /// Every member path, members of a node before its children's.
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&Path::default(), &mut out);
        out
    }

    fn collect(&self, prefix: &Path, out: &mut Vec<Path>) {
        for member in &self.members {
            out.push(prefix.child(member.clone()));
        }
        for (element, child) in &self.children {
            child.collect(&prefix.child(element.clone()), out);
        }
    }

    /// The `FieldsV1` JSON of the set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        self.fields_v1(false)
    }

    fn fields_v1(&self, include_self: bool) -> Value {
        let mut map = Map::new();
        if include_self {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for member in &self.members {
            if self.children.get(member).is_none_or(Set::is_empty) {
                map.insert(member.fields_v1_key(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            if child.is_empty() {
                continue;
            }
            let is_member = self.members.contains(element);
            map.insert(element.fields_v1_key(), child.fields_v1(is_member));
        }
        Value::Object(map)
    }

    /// Reads a `FieldsV1` JSON object.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<Set, String> {
        let Value::Object(map) = value else {
            return Err("fieldsV1 is not a JSON object".into());
        };
        let mut set = Set::default();
        for (key, child) in map {
            if key == "." {
                continue;
            }
            let element = Element::from_fields_v1_key(key)?;
            let Value::Object(inner) = child else {
                return Err(format!("the value of {key:?} is not a JSON object"));
            };
            if inner.is_empty() {
                set.members.insert(element);
                continue;
            }
            if inner.contains_key(".") {
                set.members.insert(element.clone());
            }
            let nested = Set::from_fields_v1(child)?;
            if !nested.is_empty() {
                set.children.insert(element, nested);
            }
        }
        Ok(set)
    }
}

#[cfg(test)]
pub(crate) fn path(elements: &[Element]) -> Path {
    Path(elements.to_vec())
}
