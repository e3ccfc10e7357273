//! JSON merge patch (RFC 7386), the common subset of strategic merge patch,
//! and JSON patch (RFC 6902, in `json_patch`).

use serde_json::{Map, Value};

use super::codec;
use super::resource::ResourceType;
use super::status::{ApiError, FieldError};

/// `doc` with a JSON, merge or strategic merge `patch` applied, as the real server's patchers
/// apply it, with their errors: a merge patch that is not an object is a 400, a patch the
/// format refuses or a result that is not an object a 422, and so is a result that Go's
/// decoder refuses for the type (`"" is invalid: patch: Invalid value: ...`).
pub(crate) fn patched(
    resource: &ResourceType,
    mut doc: Value,
    kind: PatchKind,
    patch: &Value,
) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Merge => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("merge patch must be a JSON object"));
            }
            merge_patch(&mut doc, patch);
        }
        // Go decodes a `null` strategic merge patch into an empty map: nothing changes.
        PatchKind::Strategic if patch.is_null() => {}
        PatchKind::Strategic => {
            strategic_merge_patch(&mut doc, patch).map_err(|why| ApiError::patch_rejected(&why))?;
        }
        PatchKind::Json => {
            json_patch(&mut doc, patch).map_err(JsonPatchError::into_api_error)?;
        }
        PatchKind::Apply => {
            return Err(ApiError::bad_request(
                "an apply configuration is not a patch of the object",
            ));
        }
    }
    if !doc.is_object() {
        return Err(ApiError::patch_rejected(
            "the patched object is not a JSON object",
        ));
    }
    if resource.custom {
        custom_type_meta_kept(&doc)?;
    }
    if let Some(error) = codec::go_decode_error(resource, &doc) {
        return Err(ApiError::invalid_fields(
            "",
            "",
            vec![FieldError::invalid("patch", doc.to_string(), &error)],
        ));
    }
    Ok(doc)
}

/// A patched custom resource is decoded again as an `Unstructured`: without a `kind` that
/// fails as a 422 on the `patch` (`Object 'Kind' is missing in '<the patched object>'`),
/// without an `apiVersion` the store's encoding fails (500).
fn custom_type_meta_kept(doc: &Value) -> Result<(), ApiError> {
    let unset = |field: &str| {
        doc.get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    };
    if unset("kind") {
        let json = doc.to_string();
        return Err(ApiError::invalid_fields(
            "",
            "",
            vec![FieldError::invalid(
                "patch",
                json.clone(),
                &format!("Object 'Kind' is missing in '{json}'"),
            )],
        ));
    }
    if unset("apiVersion") {
        let why = "Object 'apiVersion' is missing in 'object has no apiVersion field'";
        return Err(
            ApiError::internal(format!("Internal error occurred: {why}"))
                .with_details(serde_json::json!({"causes": [{"message": why}]})),
        );
    }
    Ok(())
}

/// A merge patch that is not an object, or a JSON patch that is not a list, refused as the
/// patch handler decodes it first: with `fieldValidation` `Strict` or `Warn` (the default) it
/// is decoded into Go's types, a 400 (`error decoding patch: json: cannot unmarshal array
/// into Go value of type map[string]interface {}`). With `Ignore`, a merge patch that is not
/// an object replaces the object (RFC 7386), which then does not decode (422 on the `patch`,
/// `body` quoted as sent), and a JSON patch fails in its decoder (400, `json: cannot unmarshal
/// object into Go value of type jsonpatch.Patch`). A `null` merge patch is the merge
/// library's `Invalid JSON Patch` (400) either way. A strategic merge patch that is not an
/// object (nor `null`) is a 400 either way (`json: cannot unmarshal string into Go value of
/// type map[string]interface {}`, `strategicPatchObject` in
/// `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`).
pub(crate) fn decode_error(
    kind: PatchKind,
    patch: &Value,
    body: &[u8],
    validation: codec::FieldValidation,
) -> Option<ApiError> {
    let go_type = match patch {
        Value::Null if kind == PatchKind::Merge => {
            return Some(ApiError::bad_request("Invalid JSON Patch"));
        }
        // Go decodes `null` into an empty list of operations.
        Value::Null => return None,
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let strict = validation != codec::FieldValidation::Ignore;
    let error = match kind {
        PatchKind::Merge if patch.is_object() => return None,
        PatchKind::Merge if strict => ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"
        )),
        PatchKind::Merge => ApiError::invalid_fields(
            "",
            "",
            vec![FieldError::invalid(
                "patch",
                String::from_utf8_lossy(body).into_owned(),
                &format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {go_type} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
                ),
            )],
        ),
        PatchKind::Json if patch.is_array() => return None,
        PatchKind::Json if strict => ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {go_type} into Go value of type []handlers.jsonPatchOp"
        )),
        PatchKind::Json => ApiError::bad_request(format!(
            "json: cannot unmarshal {go_type} into Go value of type jsonpatch.Patch"
        )),
        // `strategicPatchObject` decodes the patch into a map whatever the validation, and
        // answers its error as a 400 without a prefix.
        PatchKind::Strategic if patch.is_object() => return None,
        PatchKind::Strategic => ApiError::bad_request(format!(
            "json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"
        )),
        _ => return None,
    };
    Some(error)
}

/// The patch formats the server accepts, keyed by `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; JSON bodies only).
    Apply,
}

impl PatchKind {
    /// The patch kind for a `Content-Type` header value.
    pub(crate) fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => {
                Some(PatchKind::Apply)
            }
            _ => None,
        }
    }
}

/// Applies an RFC 7386 JSON merge patch: objects merge recursively, `null`
/// removes a key, everything else (lists included) replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(target_map) = target {
        for (key, value) in patch_map {
            if value.is_null() {
                target_map.remove(key);
            } else {
                merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

pub(crate) use super::json_patch::{JsonPatchError, json_patch};

/// Fields whose list elements merge by a key under strategic merge patch.
///
/// The real server reads this from Go struct tags (`patchStrategy:"merge"`,
/// `patchMergeKey`); this table covers the built-in types the server registers. Lists
/// without the tag (`tolerations`, `readinessGates`, `args`, ...) are replaced. `ports` is
/// ambiguous (container ports merge on `containerPort`, service ports on `port`) and is
/// resolved from the elements themselves.
fn merge_key(field: &str, elements: &[&Value]) -> Option<&'static str> {
    let has = |key: &str| elements.iter().any(|e| e.get(key).is_some());
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "resourceClaimStatuses"
        | "schedulingGates"
        | "secrets"
        | "allocatedResourcesStatus"
        | "webhooks"
        | "matchConditions"
        | "variables" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "hostAliases" | "podIPs" | "hostIPs" => Some("ip"),
        // A Node's addresses; an Endpoints subset's (no `type`) replace.
        "addresses" if has("type") => Some("type"),
        "ownerReferences" => Some("uid"),
        "conditions" => Some("type"),
        "topologySpreadConstraints" => Some("topologyKey"),
        "ports" if has("containerPort") => Some("containerPort"),
        "ports" if has("port") => Some("port"),
        _ => None,
    }
}

/// Lists of primitives that strategic merge patch unions instead of replacing.
fn merges_primitives(field: &str) -> bool {
    matches!(field, "finalizers" | "podCIDRs")
}

const DIRECTIVE: &str = "$patch";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const RETAIN_KEYS: &str = "$retainKeys";

/// Applies a strategic merge patch (the subset described in the module docs).
///
/// Maps merge like a JSON merge patch. Lists of objects with a known merge key
/// merge element-wise by that key (`$patch: delete` on an element removes it,
/// `$patch: replace` replaces the list); `finalizers` is unioned; other lists
/// replace. `$setElementOrder/<field>` orders the merged list,
/// `$deleteFromPrimitiveList/<field>` removes values, `$retainKeys` keeps only
/// the listed keys, and `$patch: replace|delete` on a map replaces or deletes it.
pub(crate) fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), String> {
    let Value::Object(patch_map) = patch else {
        return Err("strategic merge patch must be a JSON object".to_string());
    };
    match patch_map.get(DIRECTIVE).and_then(Value::as_str) {
        Some("replace") => {
            let mut replacement = patch_map.clone();
            replacement.remove(DIRECTIVE);
            *target = Value::Object(replacement);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some(other) => return Err(format!("unknown patch type: {other}")),
        None if patch_map.contains_key(DIRECTIVE) => {
            return Err("$patch directive must be a string".to_string());
        }
        None => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        return Ok(());
    };

    for (key, value) in patch_map {
        if key.starts_with(SET_ELEMENT_ORDER)
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key == RETAIN_KEYS
        {
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        let current = target_map.get_mut(key);
        match (current, value) {
            (Some(current @ Value::Object(_)), Value::Object(_)) => {
                strategic_merge_patch(current, value)?;
                if current.is_null() {
                    target_map.remove(key);
                }
            }
            (Some(Value::Array(current)), Value::Array(patch_list)) => {
                let merged = merge_list(key, current, patch_list)?;
                *current = merged;
            }
            (_, Value::Object(_)) => {
                let mut fresh = Value::Object(Map::new());
                strategic_merge_patch(&mut fresh, value)?;
                if fresh.is_null() {
                    target_map.remove(key);
                } else {
                    target_map.insert(key.clone(), fresh);
                }
            }
            (_, Value::Array(patch_list)) => {
                let merged = merge_list(key, &[], patch_list)?;
                target_map.insert(key.clone(), Value::Array(merged));
            }
            _ => {
                target_map.insert(key.clone(), value.clone());
            }
        }
    }

    for (key, value) in patch_map {
        if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let Value::Array(remove) = value else {
                return Err(format!("{key} must be a list"));
            };
            if let Some(Value::Array(list)) = target_map.get_mut(field) {
                list.retain(|v| !remove.contains(v));
            }
        } else if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            let Value::Array(order) = value else {
                return Err(format!("{key} must be a list"));
            };
            if let Some(Value::Array(list)) = target_map.get_mut(field) {
                reorder(field, list, order);
            }
        }
    }
    if let Some(retain) = patch_map.get(RETAIN_KEYS) {
        let Value::Array(retain) = retain else {
            return Err("$retainKeys must be a list".to_string());
        };
        let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
        target_map.retain(|k, _| keep.contains(&k.as_str()));
    }
    Ok(())
}

fn element_key<'a>(element: &'a Value, merge_key: &str) -> Option<&'a Value> {
    element.get(merge_key)
}

fn merge_list(field: &str, current: &[Value], patch: &[Value]) -> Result<Vec<Value>, String> {
    // A `{"$patch": "replace"}` element replaces the whole list with the other elements.
    let replace = patch
        .iter()
        .any(|e| e.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"));
    if replace {
        return Ok(patch
            .iter()
            .filter(|e| e.get(DIRECTIVE).is_none())
            .cloned()
            .collect());
    }
    if patch.iter().all(Value::is_object) && !patch.is_empty() {
        let all: Vec<&Value> = current.iter().chain(patch.iter()).collect();
        if let Some(merge_key) = merge_key(field, &all) {
            let mut merged: Vec<Value> = current.to_vec();
            for element in patch {
                let directive = element.get(DIRECTIVE).and_then(Value::as_str);
                let Some(key) = element_key(element, merge_key) else {
                    return Err(format!(
                        "map: {element} does not contain declared merge key: {merge_key}"
                    ));
                };
                let position = merged
                    .iter()
                    .position(|e| element_key(e, merge_key) == Some(key));
                match (directive, position) {
                    (Some("delete"), Some(i)) => {
                        merged.remove(i);
                    }
                    (Some("delete"), None) => {}
                    (Some(other), _) if other != "merge" => {
                        return Err(format!("unknown patch type: {other}"));
                    }
                    (_, Some(i)) => strategic_merge_patch(&mut merged[i], element)?,
                    (_, None) => {
                        let mut fresh = Value::Object(Map::new());
                        strategic_merge_patch(&mut fresh, element)?;
                        merged.push(fresh);
                    }
                }
            }
            return Ok(merged);
        }
    }
    if merges_primitives(field) {
        let mut merged = current.to_vec();
        for value in patch {
            if !merged.contains(value) {
                merged.push(value.clone());
            }
        }
        return Ok(merged);
    }
    Ok(patch.to_vec())
}

/// Orders `list` by `order` (elements or merge-key maps); unlisted elements keep
/// their relative order after the listed ones.
fn reorder(field: &str, list: &mut Vec<Value>, order: &[Value]) {
    let all: Vec<&Value> = list.iter().chain(order.iter()).collect();
    let merge_key = merge_key(field, &all);
    let rank = |element: &Value| {
        order.iter().position(|o| match merge_key {
            Some(k) => element_key(o, k).is_some() && element_key(o, k) == element_key(element, k),
            None => o == element,
        })
    };
    let mut ranked: Vec<(usize, usize, Value)> = list
        .drain(..)
        .enumerate()
        .map(|(i, e)| (rank(&e).unwrap_or(usize::MAX), i, e))
        .collect();
    ranked.sort_by_key(|(r, i, _)| (*r, *i));
    list.extend(ranked.into_iter().map(|(_, _, e)| e));
}

#[cfg(test)]
mod tests;
