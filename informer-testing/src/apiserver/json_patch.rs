//! JSON patch as kube-apiserver applies it (`gopkg.in/evanphx/json-patch.v4`: RFC 6902 with
//! that library's leniencies), implemented here so that no patch document can panic or
//! exhaust memory: every operation checks its paths, and the bytes `copy` adds are bounded
//! as kube-apiserver bounds them.
//!
//! The leniencies a client may rely on: `replace` of a missing key of an object sets it
//! (as `add` would), `test` of a missing key of an object against `null` passes, and an
//! operation without a `value` uses `null`.
//!
//! Errors split as the real server splits them: a document that is not a list of JSON
//! objects is a [`JsonPatchError::Malformed`] (400); an operation that cannot be applied
//! (an unknown `op`, a missing or malformed path, a path the object does not have) is a
//! [`JsonPatchError::Failed`] (422, the library's reason not shown: kube-apiserver drops
//! it); more than [`MAX_OPERATIONS`] operations is [`JsonPatchError::TooManyOperations`]
//! (413).

use serde_json::Value;

use super::status::{ApiError, StatusReason};

/// The most operations one patch may have (kube-apiserver's `maxJSONPatchOperations`).
pub(crate) const MAX_OPERATIONS: usize = 10_000;

/// The most bytes `copy` operations of one patch may add together.
pub(crate) const MAX_COPIED_BYTES: usize = 8 * 1024 * 1024;

/// Why a JSON patch was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JsonPatchError {
    /// The document is not a JSON patch.
    Malformed(String),
    /// An operation does not apply to the object.
    Failed(String),
    /// The patch has more operations than [`MAX_OPERATIONS`].
    TooManyOperations(usize),
}

impl JsonPatchError {
    /// The error as the API server returns it.
    pub(crate) fn into_api_error(self) -> ApiError {
        match self {
            JsonPatchError::Malformed(why) => ApiError::bad_request(why),
            JsonPatchError::Failed(why) => ApiError::patch_rejected(&why),
            JsonPatchError::TooManyOperations(n) => ApiError::new(
                StatusReason::RequestEntityTooLarge,
                format!(
                    "The allowed number of operations in the json patch is {MAX_OPERATIONS}, got {n}"
                ),
            ),
        }
    }
}

/// One decoded operation.
#[derive(Clone, Debug, PartialEq)]
enum Operation {
    Add(Vec<String>, Value),
    Remove(Vec<String>),
    Replace(Vec<String>, Value),
    Move { from: Vec<String>, to: Vec<String> },
    Copy { from: Vec<String>, to: Vec<String> },
    Test(Vec<String>, Value),
}

/// Splits a JSON pointer (RFC 6901) into unescaped tokens; `""` is the whole document.
fn pointer(text: &str) -> Result<Vec<String>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!(
            "JSON pointer {text:?} must be empty or start with '/'"
        ));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => return Err(format!("JSON pointer {text:?} has an invalid '~' escape")),
                }
            }
            Ok(out)
        })
        .collect()
}

fn display(path: &[String]) -> String {
    path.iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn decode(patch: &Value) -> Result<Vec<Operation>, JsonPatchError> {
    // `null` decodes into no operations at all, as Go's decoder reads it.
    if patch.is_null() {
        return Ok(Vec::new());
    }
    let Value::Array(items) = patch else {
        return Err(JsonPatchError::Malformed(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into(),
        ));
    };
    if items.len() > MAX_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(items.len()));
    }
    // The library decodes the list first (400 for an item that is not an object), then
    // reads each operation's fields as it applies it (422 for a bad one).
    if let Some((i, _)) = items.iter().enumerate().find(|(_, i)| !i.is_object()) {
        return Err(JsonPatchError::Malformed(format!(
            "operation {i} is not a JSON object"
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let op = item.as_object().expect("checked above");
            let failed = |why: String| JsonPatchError::Failed(why);
            let string = |key: &str| -> Result<&str, JsonPatchError> {
                op.get(key).and_then(Value::as_str).ok_or_else(|| {
                    failed(format!("operation {i} is missing the string field {key:?}"))
                })
            };
            let path = |key: &str| -> Result<Vec<String>, JsonPatchError> {
                pointer(string(key)?).map_err(|e| failed(format!("operation {i}: {e}")))
            };
            // An operation without a value uses null, as the library does.
            let value = || op.get("value").cloned().unwrap_or(Value::Null);
            let kind = op.get("op").and_then(Value::as_str).unwrap_or("unknown");
            Ok(match kind {
                "add" => Operation::Add(path("path")?, value()),
                "remove" => Operation::Remove(path("path")?),
                "replace" => Operation::Replace(path("path")?, value()),
                "move" => Operation::Move {
                    from: path("from")?,
                    to: path("path")?,
                },
                "copy" => Operation::Copy {
                    from: path("from")?,
                    to: path("path")?,
                },
                "test" => Operation::Test(path("path")?, value()),
                other => return Err(failed(format!("Unexpected kind: {other}"))),
            })
        })
        .collect()
}

/// An array index token: digits only (no sign), below `len` (or equal to it, or `-`,
/// when `appending`).
fn index(token: &str, len: usize, appending: bool) -> Option<usize> {
    if appending && token == "-" {
        return Some(len);
    }
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let i: usize = token.parse().ok()?;
    (i < len || (appending && i == len)).then_some(i)
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |node, token| match node {
        Value::Object(map) => map.get(token),
        Value::Array(list) => list.get(index(token, list.len(), false)?),
        _ => None,
    })
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |node, token| match node {
        Value::Object(map) => map.get_mut(token),
        Value::Array(list) => {
            let i = index(token, list.len(), false)?;
            list.get_mut(i)
        }
        _ => None,
    })
}

fn missing(op: &str, path: &[String]) -> JsonPatchError {
    JsonPatchError::Failed(format!(
        "{op} operation does not apply: doc is missing path: {:?}: missing value",
        display(path)
    ))
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match get_mut(doc, parent) {
        Some(Value::Object(map)) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Some(Value::Array(list)) => {
            let i = index(last, list.len(), true).ok_or_else(|| {
                JsonPatchError::Failed(format!(
                    "add operation does not apply: index {last:?} is out of bounds at {:?}",
                    display(path)
                ))
            })?;
            list.insert(i, value);
            Ok(())
        }
        _ => Err(missing("add", path)),
    }
}

fn remove(doc: &mut Value, path: &[String], op: &str) -> Result<Value, JsonPatchError> {
    let Some((last, parent)) = path.split_last() else {
        return Err(JsonPatchError::Failed(format!(
            "{op} operation does not apply: the whole document cannot be removed"
        )));
    };
    let removed = match get_mut(doc, parent) {
        Some(Value::Object(map)) => map.remove(last),
        Some(Value::Array(list)) => index(last, list.len(), false).map(|i| list.remove(i)),
        _ => None,
    };
    removed.ok_or_else(|| missing(op, path))
}

fn apply(doc: &mut Value, operation: Operation, copied: &mut usize) -> Result<(), JsonPatchError> {
    match operation {
        Operation::Add(path, value) => add(doc, &path, value),
        Operation::Remove(path) => remove(doc, &path, "remove").map(drop),
        Operation::Replace(path, value) => {
            // A missing key of an object is set, as the library's `replace` does.
            if let Some((last, parent)) = path.split_last()
                && let Some(Value::Object(map)) = get_mut(doc, parent)
            {
                map.insert(last.clone(), value);
                return Ok(());
            }
            let target = get_mut(doc, &path).ok_or_else(|| missing("replace", &path))?;
            *target = value;
            Ok(())
        }
        Operation::Move { from, to } => {
            if from == to {
                return get(doc, &from)
                    .map(drop)
                    .ok_or_else(|| missing("move", &from));
            }
            if to.starts_with(&from) {
                return Err(JsonPatchError::Failed(format!(
                    "move operation does not apply: {:?} cannot be moved into its own child {:?}",
                    display(&from),
                    display(&to)
                )));
            }
            let value = remove(doc, &from, "move")?;
            add(doc, &to, value)
        }
        Operation::Copy { from, to } => {
            let value = get(doc, &from)
                .ok_or_else(|| missing("copy", &from))?
                .clone();
            *copied += serde_json::to_vec(&value).map_or(usize::MAX, |b| b.len());
            if *copied > MAX_COPIED_BYTES {
                return Err(JsonPatchError::Failed(format!(
                    "Unable to copy, accumulated size increased to more than {MAX_COPIED_BYTES} bytes"
                )));
            }
            add(doc, &to, value)
        }
        Operation::Test(path, expected) => match get(doc, &path) {
            Some(actual) if *actual == expected => Ok(()),
            // A missing key of an object tests equal to null, as in the library.
            None if expected.is_null()
                && path.split_last().is_some_and(|(_, parent)| {
                    matches!(get(doc, parent), Some(Value::Object(_)))
                }) =>
            {
                Ok(())
            }
            _ => Err(JsonPatchError::Failed(format!(
                "testing value {} failed: test failed",
                display(&path)
            ))),
        },
    }
}

/// Applies an RFC 6902 JSON patch to `doc`. On error `doc` may hold the operations applied
/// before the failing one: apply to a copy when the patch must be all or nothing.
pub(crate) fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), JsonPatchError> {
    let mut copied = 0;
    for operation in decode(patch)? {
        apply(doc, operation, &mut copied)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
