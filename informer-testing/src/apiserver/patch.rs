//! JSON merge patch (RFC 7386), strategic merge patch (`strategic`), and JSON patch
//! (RFC 6902, in `json_patch`).

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
            strategic_merge_patch(&resource.kind, &mut doc, patch)
                .map_err(SmpError::into_api_error)?;
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
    // A strategically patched map is converted back into the type by the unstructured
    // converter, and its error shows the patch as Go prints a map; the other patches are
    // decoded from the patched JSON.
    let refused = match kind {
        PatchKind::Strategic => codec::go_convert_error(resource, &doc)
            .map(|error| (super::schema::go_print(patch), error)),
        _ => codec::go_decode_error(resource, &doc).map(|error| (doc.to_string(), error)),
    };
    if let Some((value, error)) = refused {
        return Err(ApiError::invalid_fields(
            "",
            "",
            vec![FieldError::invalid("patch", value, &error)],
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
            // No `application/apply-patch+json`: no such patch type (kube-apiserver: 415).
            "application/apply-patch+yaml" => Some(PatchKind::Apply),
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

/// A merge patch of a custom resource refused with `fieldValidation=Strict` (its unknown or
/// duplicate fields, found in the patch): the real server applies the patch to the current
/// object first and finds them decoding the result, so it answers a 422 on the `patch`
/// whose value is the whole patched object (`" \"\" is invalid: patch: Invalid value:
/// \"{...}\": strict decoding error: unknown field \"spec.x\""`, `patchResource` in
/// `apiserver/pkg/endpoints/handlers/patch.go`). `refused` is the 400 the patch got; other
/// errors are returned as they are.
pub(crate) fn strict_merge_error(current: &Value, patch: &Value, refused: ApiError) -> ApiError {
    const STRICT: &str = "strict decoding error: ";
    let Some(at) = refused.message().find(STRICT) else {
        return refused;
    };
    let mut patched = current.clone();
    merge_patch(&mut patched, patch);
    ApiError::invalid_fields(
        "",
        "",
        vec![FieldError::invalid(
            "patch",
            patched.to_string(),
            &refused.message()[at..],
        )],
    )
}

pub(crate) use super::json_patch::{JsonPatchError, json_patch};

mod strategic;
pub(crate) use strategic::{SmpError, strategic_merge_patch};

#[cfg(test)]
mod tests;
