//! Strategic merge patch, as apimachinery's `strategicpatch` applies it on the server
//! (`StrategicMergeMapPatchUsingLookupPatchMeta`, with `MergeParallelList` and
//! `IgnoreUnmatchedNulls`):
//!
//! - maps merge key by key; `null` removes a key; a key the object lacks (or holds with
//!   another JSON type) takes the patch's value as sent, nulls and directives dropped;
//! - a list merges only where its Go field is tagged `patchStrategy:"merge"` (see
//!   [`strategy`]): elements by their `patchMergeKey`, primitives as a set; every other
//!   list is replaced. An empty patch list leaves a merging list as it is;
//! - the merged list is ordered as upstream orders it: the patch's elements in the patch's
//!   order (or `$setElementOrder/<field>`'s), the server's other elements keeping their
//!   places among them (`normalizeElementOrder`, `mergeSortedSlice`);
//! - the directives `$patch: replace | delete` (on a map or a list element),
//!   `$retainKeys`, `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>`;
//! - errors as the patch handler answers them (`interpretStrategicMergePatchError`): a
//!   malformed `$retainKeys` or `$setElementOrder` list is a 400, lists of lists a 422,
//!   anything else the library refuses a 500 with its message.

use serde_json::{Map, Value};

use crate::apiserver::status::ApiError;

const DIRECTIVE: &str = "$patch";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const RETAIN_KEYS: &str = "$retainKeys";

/// Why a strategic merge patch was refused, by the status the patch handler gives it.
#[derive(Debug, PartialEq)]
pub(crate) enum SmpError {
    /// 400: `mergepatch`'s malformed-directive errors.
    BadRequest(&'static str),
    /// 422: `lists of lists are not supported`.
    Unprocessable(&'static str),
    /// 500: any other error of the library, with its message.
    Internal(String),
}

impl SmpError {
    pub(crate) fn into_api_error(self) -> ApiError {
        match self {
            SmpError::BadRequest(why) => ApiError::bad_request(why),
            SmpError::Unprocessable(_) => ApiError::patch_rejected(""),
            SmpError::Internal(why) => ApiError::internal(why),
        }
    }
}

const BAD_RETAIN_KEYS: SmpError = SmpError::BadRequest("invalid patch format of retainKeys");

/// How a list field merges (its Go tags).
#[derive(Clone, Copy, Debug, PartialEq)]
enum ListStrategy {
    /// Replaced whole (no `patchStrategy`).
    Replace,
    /// Elements merge by this key (`patchStrategy:"merge"`, `patchMergeKey`).
    ByKey(&'static str),
    /// A set of primitives (`patchStrategy:"merge"` without a key).
    Set,
}

/// The strategy of list `field` of the map at `path` (the fields from the object's root,
/// a list's elements under the list's name) in an object of `kind`, from the Go tags of the
/// built-in types the server serves (`k8s.io/api`, `ObjectMeta`). A name that means
/// different things in different types is told apart by kind and path: a ServiceAccount's
/// `imagePullSecrets` replaces where a pod spec's merges, only a container's and a Service
/// spec's `ports` merge, only a Node status' `addresses`.
fn strategy(kind: &str, path: &[&str], field: &str) -> ListStrategy {
    use ListStrategy::{ByKey, Replace, Set};
    let parent = path.last().copied();
    let top = path.is_empty();
    let in_container = matches!(
        parent,
        Some("containers" | "initContainers" | "ephemeralContainers")
    );
    match field {
        "finalizers" if parent == Some("metadata") => Set,
        "ownerReferences" if parent == Some("metadata") => ByKey("uid"),
        "podCIDRs" if kind == "Node" => Set,
        "imagePullSecrets" if kind == "ServiceAccount" && top => Replace,
        "secrets" if kind == "ServiceAccount" && top => ByKey("name"),
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "resourceClaimStatuses"
        | "schedulingGates" => ByKey("name"),
        "env" if in_container => ByKey("name"),
        "allocatedResourcesStatus"
            if matches!(
                parent,
                Some("containerStatuses" | "initContainerStatuses" | "ephemeralContainerStatuses")
            ) =>
        {
            ByKey("name")
        }
        "volumeMounts" => ByKey("mountPath"),
        "volumeDevices" => ByKey("devicePath"),
        "hostAliases" | "podIPs" | "hostIPs" => ByKey("ip"),
        "topologySpreadConstraints" => ByKey("topologyKey"),
        "ports" if in_container => ByKey("containerPort"),
        "ports" if kind == "Service" && path == ["spec"] => ByKey("port"),
        "addresses" if kind == "Node" && path == ["status"] => ByKey("type"),
        // Every built-in status' conditions but a ValidatingAdmissionPolicy's and a
        // CustomResourceDefinition's.
        "conditions"
            if parent == Some("status")
                && !matches!(
                    kind,
                    "ValidatingAdmissionPolicy" | "CustomResourceDefinition"
                ) =>
        {
            ByKey("type")
        }
        "webhooks" | "matchConditions" | "variables"
            if kind.contains("Webhook") || kind.contains("Admission") =>
        {
            ByKey("name")
        }
        _ => Replace,
    }
}

/// Applies strategic merge `patch` to `target`, an object of built-in `kind`.
pub(crate) fn strategic_merge_patch(
    kind: &str,
    target: &mut Value,
    patch: &Value,
) -> Result<(), SmpError> {
    let Value::Object(patch) = patch else {
        return Err(SmpError::Internal(
            "strategic merge patch must be a JSON object".into(),
        ));
    };
    // A refused patch leaves the target as it was.
    let original = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let walk = Walk { kind };
    *target = Value::Object(walk.merge_map(&mut Vec::new(), original, patch)?);
    Ok(())
}

struct Walk<'a> {
    kind: &'a str,
}

impl Walk<'_> {
    /// `mergeMap`: the merged map; empty for a `$patch: delete` (`handleDirectiveInMergeMap`
    /// answers the empty map, which stays under its key).
    fn merge_map<'p>(
        &self,
        path: &mut Vec<&'p str>,
        mut original: Map<String, Value>,
        patch: &'p Map<String, Value>,
    ) -> Result<Map<String, Value>, SmpError> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            return match directive.as_str() {
                Some("replace") => {
                    let mut replacement = patch.clone();
                    replacement.remove(DIRECTIVE);
                    Ok(replacement)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(SmpError::Internal(format!(
                    "unknown patch type: {} in map: {}",
                    go_text(directive),
                    go_text(&Value::Object(patch.clone()))
                ))),
            };
        }
        retain_keys(&mut original, patch)?;
        let mut handled: Vec<&str> = Vec::new();
        for (key, order) in patch {
            let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) else {
                continue;
            };
            handled.push(field);
            self.ordered_list(path, &mut original, field, order, patch.get(field))?;
        }
        for (key, value) in patch {
            if key == RETAIN_KEYS || key.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            let (field, deletions) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(field) => (field, true),
                None => (key.as_str(), false),
            };
            if !deletions && handled.contains(&field) {
                continue;
            }
            if value.is_null() {
                original.remove(field);
                continue;
            }
            let current = original.remove(field);
            let merged = match (current, value) {
                (None, _) if deletions => None,
                (None, _) => new_value(value),
                (Some(Value::Object(current)), Value::Object(value)) => {
                    path.push(field);
                    let merged = self.merge_map(path, current, value)?;
                    path.pop();
                    Some(Value::Object(merged))
                }
                (Some(Value::Array(current)), Value::Array(value)) => {
                    let strategy = strategy(self.kind, path, field);
                    path.push(field);
                    let merged = self.merge_list(path, strategy, current, value, deletions)?;
                    path.pop();
                    Some(Value::Array(merged))
                }
                (Some(current), _) if deletions => Some(current),
                (Some(_), _) => new_value(value),
            };
            if let Some(merged) = merged {
                original.insert(field.to_string(), merged);
            }
        }
        Ok(original)
    }

    /// `mergeSliceHandler` and `mergeSlice`: the list merged as its strategy says, in
    /// upstream's order.
    fn merge_list<'p>(
        &self,
        path: &mut Vec<&'p str>,
        strategy: ListStrategy,
        original: Vec<Value>,
        patch: &'p [Value],
        deletions: bool,
    ) -> Result<Vec<Value>, SmpError> {
        if strategy == ListStrategy::Replace && !deletions {
            return Ok(patch.to_vec());
        }
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        element_kind(&original, patch)?;
        // Lists of maps merge by key; of anything else, as sets (upstream looks at the
        // elements, not the tags, for this).
        let maps = original
            .iter()
            .chain(patch)
            .next()
            .is_some_and(Value::is_object);
        let key = match strategy {
            ListStrategy::ByKey(key) if maps && !deletions => Some(key),
            _ => None,
        };
        let Some(key) = key else {
            // Primitives: a set, or the values to remove from it.
            if deletions {
                return Ok(original
                    .into_iter()
                    .filter(|v| !patch.contains(v))
                    .collect());
            }
            let mut merged: Vec<Value> = Vec::new();
            for value in original.iter().chain(patch) {
                if !merged.contains(value) {
                    merged.push(value.clone());
                }
            }
            return Ok(ordered(merged, patch, &original, None));
        };
        let (start, patch, replaced) = special_elements(original.clone(), patch, key)?;
        if replaced {
            // The other elements, as sent (`mergeSliceWithSpecialElements` hands them on
            // whole), in their order.
            return Ok(patch.into_iter().map(taken).collect());
        }
        let mut merged = start;
        for &element in &patch {
            let Some(id) = element.get(key) else {
                return Err(no_merge_key(element, key));
            };
            match merged.iter().position(|e| e.get(key) == Some(id)) {
                Some(i) => {
                    let Value::Object(current) = std::mem::take(&mut merged[i]) else {
                        unreachable!("elements are objects");
                    };
                    let Value::Object(element) = element else {
                        unreachable!("elements are objects");
                    };
                    merged[i] = Value::Object(self.merge_map(path, current, element)?);
                }
                None => merged.push(taken(element)),
            }
        }
        Ok(ordered(merged, patch.iter().copied(), &original, Some(key)))
    }

    /// A list with a `$setElementOrder/<field>` directive (`mergePatchIntoOriginal`): the
    /// list merged as usual, then ordered by the directive's list.
    fn ordered_list<'p>(
        &self,
        path: &mut Vec<&'p str>,
        original: &mut Map<String, Value>,
        field: &'p str,
        order: &'p Value,
        patch: Option<&'p Value>,
    ) -> Result<(), SmpError> {
        let Value::Array(order) = order else {
            return Err(not_a_list(order));
        };
        let strategy = strategy(self.kind, path, field);
        let key = match strategy {
            ListStrategy::ByKey(key) => Some(key),
            _ => None,
        };
        let current = original.remove(field);
        let patch_list = match patch {
            Some(Value::Array(list)) => Some(list.as_slice()),
            Some(other) => return Err(not_a_list(other)),
            None => None,
        };
        if let Some(list) = patch_list {
            check_order(list, order, key)?;
        }
        // `sliceElementType` of the two lists, after the merge: a list found on one side
        // and empty on both is refused.
        let empty = |v: Option<&Value>| v.and_then(Value::as_array).is_none_or(Vec::is_empty);
        if (current.is_some() || patch_list.is_some())
            && empty(current.as_ref())
            && patch_list.is_none_or(<[Value]>::is_empty)
        {
            return Err(SmpError::Internal(
                "no elements in any of the given slices".into(),
            ));
        }
        // The merged list, and the server's list its elements keep their places from.
        let (merged, server) = match (current, patch_list) {
            (Some(Value::Array(current)), None) => (current.clone(), current),
            (None, Some(list)) => (list.iter().filter_map(new_value).collect(), Vec::new()),
            (Some(Value::Array(current)), Some(list)) => {
                path.push(field);
                let merged = self.merge_list(path, strategy, current.clone(), list, false)?;
                path.pop();
                let server = match key {
                    Some(key) if current.iter().all(Value::is_object) => {
                        aliased_order(&current, list, key)
                    }
                    _ => current,
                };
                (merged, server)
            }
            (Some(other), _) => {
                original.insert(field.to_string(), other);
                return Ok(());
            }
            (None, None) => return Ok(()),
        };
        let result = ordered(merged, order.iter(), &server, key);
        original.insert(field.to_string(), Value::Array(result));
        Ok(())
    }
}

/// `mergepatch.ErrBadArgType` for a value that should be a list: `reflect.TypeOf` through
/// `%s`, which prints `nil` as `%!s(<nil>)`.
fn not_a_list(value: &Value) -> SmpError {
    let received = match value {
        Value::Null => "%!s(<nil>)",
        other => go_type(other),
    };
    SmpError::Internal(format!(
        "expected a []interface {{}}, but received a {received}"
    ))
}

/// `applyRetainKeysDirective`: every key the patch sets is in the list, and the object keeps
/// only the listed keys.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), SmpError> {
    let Some(retain) = patch.get(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(BAD_RETAIN_KEYS);
    };
    let kept = |key: &str| retain.iter().any(|r| r.as_str() == Some(key));
    for (key, value) in patch {
        let directive = key == RETAIN_KEYS
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER);
        if !value.is_null() && !directive && !kept(key) {
            return Err(BAD_RETAIN_KEYS);
        }
    }
    original.retain(|key, _| kept(key));
    Ok(())
}

/// `mergeSliceWithSpecialElements`: `$patch: delete` elements remove their match from the
/// original, `$patch: replace` makes the other elements the whole list. Returns the list to
/// merge into, the patch's plain elements, and whether they replace the list.
fn special_elements<'p>(
    original: Vec<Value>,
    patch: &'p [Value],
    key: &str,
) -> Result<(Vec<Value>, Vec<&'p Value>, bool), SmpError> {
    let mut plain = Vec::new();
    let mut original = original;
    let mut replace = false;
    for element in patch {
        match element.get(DIRECTIVE) {
            None => plain.push(element),
            Some(directive) => match directive.as_str() {
                Some("delete") => {
                    let Some(id) = element.get(key) else {
                        return Err(no_merge_key(element, key));
                    };
                    original.retain(|e| e.get(key) != Some(id));
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(SmpError::Internal(
                        "merging lists cannot yet be specified in the patch".into(),
                    ));
                }
                _ => {
                    return Err(SmpError::Internal(format!(
                        "unknown patch type: {} in map: {}",
                        go_text(directive),
                        go_text(element)
                    )));
                }
            },
        }
    }
    Ok((original, plain, replace))
}

fn no_merge_key(element: &Value, key: &str) -> SmpError {
    SmpError::Internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_text(element)
    ))
}

/// `sliceElementType`: the elements of both lists are of one JSON type, and not lists.
fn element_kind(original: &[Value], patch: &[Value]) -> Result<(), SmpError> {
    let mut kinds = original.iter().chain(patch).map(go_type);
    let Some(first) = kinds.next() else {
        return Ok(());
    };
    if first == "[]interface {}" {
        return Err(SmpError::Unprocessable("lists of lists are not supported"));
    }
    if kinds.any(|k| k != first) {
        let all: Vec<String> = [original, patch]
            .iter()
            .map(|l| go_text(&Value::Array(l.to_vec())))
            .collect();
        return Err(SmpError::Internal(format!(
            "list element types are not identical: [{}]",
            all.join(" ")
        )));
    }
    Ok(())
}

/// The order of the server's elements as `mergePatchIntoOriginal` compares with: its
/// `originalFieldValue`, which shares Go's backing array with the list being merged, so
/// that the merge's in-place deletions (`deleteMatchingEntries` shifts what follows left)
/// and appends (into the room the deletions left) show through it, at the original length.
/// (On `[d, sidecar, c]`, deleting `c` and adding `a` gives `[d, sidecar, a]`, as kubectl
/// apply does on a cluster, not `[d, a, sidecar]`.)
fn aliased_order(original: &[Value], patch: &[Value], key: &str) -> Vec<Value> {
    let length = original.len();
    let mut view = original.to_vec();
    let mut slice = original.to_vec();
    let shown = |slice: &[Value], view: &mut Vec<Value>, from: usize| {
        let end = slice.len().min(length);
        if from < end {
            view[from..end].clone_from_slice(&slice[from..end]);
        }
    };
    let replace = patch
        .iter()
        .any(|e| e.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"));
    for element in patch {
        if element.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") {
            continue;
        }
        let Some(id) = element.get(key) else { continue };
        while let Some(i) = slice.iter().position(|e| e.get(key) == Some(id)) {
            slice.remove(i);
            shown(&slice, &mut view, i);
        }
    }
    if !replace {
        for element in patch.iter().filter(|e| e.get(DIRECTIVE).is_none()) {
            let Some(id) = element.get(key) else { continue };
            if !slice.iter().any(|e| e.get(key) == Some(id)) {
                slice.push(element.clone());
                shown(&slice, &mut view, slice.len() - 1);
            }
        }
    }
    view
}

/// `validatePatchWithSetOrderList`: the patch's elements (deletions aside) appear in the
/// `$setElementOrder` list, in its order.
fn check_order(patch: &[Value], order: &[Value], key: Option<&str>) -> Result<(), SmpError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    // Deletions aside (`extractToDeleteItems`, lists of maps only); another directive
    // element is stepped over while the order list lasts, and counts against it after.
    let is_delete =
        |e: &&Value| key.is_some() && e.get(DIRECTIVE).and_then(Value::as_str) == Some("delete");
    let plain: Vec<&Value> = patch.iter().filter(|e| !is_delete(e)).collect();
    let (mut p, mut o) = (0, 0);
    while p < plain.len() && o < order.len() {
        if plain[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if same_element(plain[p], &order[o], key) {
            p += 1;
        }
        o += 1;
    }
    if p < plain.len() {
        return Err(SmpError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            go_text(&Value::Array(patch.to_vec())),
            go_text(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

/// Whether two elements of a list are the same one: by their merge key (`mergeKeyValueEqual`,
/// `index`; an element without it is no match), or by value in a list of primitives.
fn same_element(a: &Value, b: &Value, key: Option<&str>) -> bool {
    match key {
        Some(k) => a.get(k).is_some() && a.get(k) == b.get(k),
        None => a == b,
    }
}

/// `normalizeElementOrder` over `merged`: the elements present in `patch_order` first in its
/// order, the others in `server_order`'s, interleaved by `mergeSortedSlice`.
fn ordered<'a>(
    merged: Vec<Value>,
    patch_order: impl IntoIterator<Item = &'a Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let patch_order: Vec<&Value> = patch_order.into_iter().collect();
    let index =
        |list: &[Value], value: &Value| list.iter().position(|e| same_element(e, value, key));
    let patch_index = |value: &Value| patch_order.iter().position(|e| same_element(e, value, key));
    let (mut from_patch, mut server_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|e| patch_index(e).is_some());
    from_patch.sort_by_key(|e| patch_index(e).unwrap_or(usize::MAX));
    server_only.sort_by_key(|e| index(server_order, e).unwrap_or(usize::MAX));
    // `mergeSortedSlice(serverOnly, patch, serverOrder)`: a server-only element goes first
    // only when both it and the next patch element are in the server's list, in that order.
    let mut out = Vec::with_capacity(from_patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => match (index(server_order, l), index(server_order, r)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// A value for a key the object lacks (or holds with another JSON type), as `mergeMap`
/// takes it from the patch: nulls dropped (`discardNullValuesFromPatch`), then every map
/// with a `$patch` directive removed, with its key or from its list (`removeDirectives`);
/// `None` when the value itself is such a map.
fn new_value(value: &Value) -> Option<Value> {
    match value {
        Value::Object(map) if map.contains_key(DIRECTIVE) => None,
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter(|(k, v)| !v.is_null() && !is_directive(k))
                .filter_map(|(k, v)| Some((k.clone(), new_value(v)?)))
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(items.iter().filter_map(new_value).collect())),
        other => Some(other.clone()),
    }
}

/// A directive key other than `$patch` (which [`new_value`] handles).
fn is_directive(key: &str) -> bool {
    key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// A list element the original lacks, appended as the patch sent it
/// (`mergeSliceWithoutSpecialElements`): what Go's decoding into the built-in type keeps of
/// it, the directives being unknown fields to it. Its nulls are kept, as upstream keeps
/// them: decoding then makes them zero values (`limits: {cpu: null}` → `"0"`).
fn taken(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != DIRECTIVE && !is_directive(k))
                .map(|(k, v)| (k.clone(), taken(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(taken).collect()),
        other => other.clone(),
    }
}

/// The Go type a JSON value decodes to in an `interface{}`, as `reflect.TypeOf` names it.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// A JSON value as Go's `%v` prints what it decodes to (`map[a:1 b:[x y]]`).
fn go_text(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_text).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by_key(|(k, _)| *k);
            let inner: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_text(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}
