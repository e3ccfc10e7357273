//! [`JsonDecoder`]: how objects read from the API server become values.
//!
//! Objects are decoded with simd-json's serde support rather than `serde_json`, for two
//! reasons, both measured on the benchmark pods (`benches/informer.rs`, M1 and I1):
//!
//! - **Memory.** simd-json parses a document into a tape first, so when serde asks how long
//!   an array is, the answer is exact and every `Vec` is allocated at its final size.
//!   `serde_json` cannot know the length in advance: its vectors grow by doubling and keep
//!   the spare capacity for as long as the object is cached. k8s-openapi's element types are
//!   large (a `Container` is 2.3 KB, a `Volume` 3.3 KB before any data), so a pod decoded by
//!   `serde_json` holds about 6 KB more than the same pod decoded here (or cloned), which is
//!   more than 15% of what a cached pod costs.
//! - **Speed.** Decoding is the largest cost of watching (about 11 µs per pod here against
//!   13.5 µs with `serde_json`), and it is reached with reusable buffers.
//!
//! The decoder also bounds nesting (128 levels, as `serde_json` does): a document nested
//! deeper is an error, never a stack overflow.

use std::fmt;

use kube::core::{ObjectList, Status, TypeMeta, WatchEvent};
use serde::de::DeserializeOwned;
use simd_json::Node;
use simd_json::tape::Tape;

use super::decode::decode_list_now;

/// Documents nested deeper than this are refused (`serde_json`'s limit).
pub const MAX_DEPTH: usize = 128;

/// Decodes JSON documents into values, reusing its buffers from one document to the next.
///
/// Every vector in a decoded value has exactly the capacity it needs, so a cached object
/// costs no more than a clone of it would. The input is used as scratch space (strings are
/// unescaped in place), which is why it is taken as `&mut [u8]`.
///
/// ```
/// use informer_runtime::lister_watcher::JsonDecoder;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut decoder = JsonDecoder::new();
/// let mut json = br#"{"metadata":{"name":"web","namespace":"default"},
///                     "spec":{"containers":[{"name":"app"},{"name":"sidecar"}]}}"#.to_vec();
/// let pod: Pod = decoder.decode(&mut json).unwrap();
/// let containers = pod.spec.unwrap().containers;
/// assert_eq!((containers.len(), containers.capacity()), (2, 2));
///
/// let mut bad = b"{\"metadata\":".to_vec();
/// assert!(decoder.decode::<Pod>(&mut bad).is_err());
/// ```
#[derive(Default)]
pub struct JsonDecoder {
    buffers: simd_json::Buffers,
    skip_managed_fields: bool,
}

impl fmt::Debug for JsonDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonDecoder").finish_non_exhaustive()
    }
}

impl JsonDecoder {
    /// A decoder with empty buffers (they grow to the largest document decoded).
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether to leave `metadata.managedFields` out of decoded objects (as if a transform
    /// had set it to `None`), default `false`. They are skipped while decoding, so they
    /// cost neither decoding time nor memory: in a typical pod they are a third of the JSON
    /// and about 10 KB once decoded.
    ///
    /// ```
    /// use informer_runtime::lister_watcher::JsonDecoder;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let mut json = br#"{"metadata":{"name":"c","managedFields":[{"manager":"kubectl"}]}}"#.to_vec();
    /// let cm: ConfigMap = JsonDecoder::new().skip_managed_fields(true).decode(&mut json).unwrap();
    /// assert_eq!(cm.metadata.name.as_deref(), Some("c"));
    /// assert!(cm.metadata.managed_fields.is_none());
    /// ```
    pub fn skip_managed_fields(mut self, skip: bool) -> Self {
        self.skip_managed_fields = skip;
        self
    }

    /// [`skip_managed_fields`](Self::skip_managed_fields) in place.
    pub(crate) fn set_skip_managed_fields(&mut self, skip: bool) {
        self.skip_managed_fields = skip;
    }

    /// Decodes one JSON document, an object or any other value (`json` is overwritten in
    /// the process).
    ///
    /// # Errors
    /// A [`DecodeError`] saying what is wrong: the input is not JSON, is nested more than
    /// [`MAX_DEPTH`] levels, or does not have the shape of `T`.
    pub fn decode<T: DeserializeOwned>(&mut self, json: &mut [u8]) -> Result<T, DecodeError> {
        self.decode_item(json, None)
    }

    /// Decodes one item of a list: as [`decode`](Self::decode), and an object with neither
    /// `kind` nor `apiVersion` takes `types` (the list's; see [`item_types`]) when given.
    /// kube-apiserver leaves both out of the items of a built-in type's list, where a watch
    /// event's object and a single object carry them; client-go's unstructured list
    /// decoding fills them in the same way, so an object with its own `TypeMeta`
    /// (`DynamicObject`, `PartialObjectMeta`) has it whether it was listed or watched.
    pub(crate) fn decode_item<T: DeserializeOwned>(
        &mut self,
        json: &mut [u8],
        types: Option<&TypeMeta>,
    ) -> Result<T, DecodeError> {
        let mut nodes = self.tape(json)?.0;
        if self.skip_managed_fields {
            skip_managed_fields(&mut nodes, 0);
        }
        if let Some(types) = types {
            set_missing_types(&mut nodes, types);
        }
        // Which object it is, for the error: the names point into `json`, not the tape.
        let (namespace, name) = object_name(&nodes);
        Tape(nodes).deserialize().map_err(|e| {
            let object = match (namespace, name) {
                (Some(ns), Some(name)) => format!(" {ns}/{name}"),
                (None, Some(name)) => format!(" {name}"),
                _ => String::new(),
            };
            DecodeError(format!(
                "cannot decode {}{object}: {e} (a field of the JSON whose type is not the Rust type's: for a view, declare each field with the resource's own type, such as `Quantity` for a quantity)",
                std::any::type_name::<T>()
            ))
        })
    }

    /// Decodes a list response (`{"items": [...], "metadata": {...}}`); with
    /// [`skip_managed_fields`](Self::skip_managed_fields), every item's are skipped. The
    /// items are found without parsing the response whole, then decoded one by one (see
    /// [`BodyDecoder::list_in_parts`](super::BodyDecoder::list_in_parts) to decode a body as
    /// it arrives, on the decode pool).
    ///
    /// ```
    /// use informer_runtime::lister_watcher::JsonDecoder;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let mut json = br#"{"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}}]}"#.to_vec();
    /// let list = JsonDecoder::new().decode_list::<ConfigMap>(&mut json).unwrap();
    /// assert_eq!(list.metadata.resource_version.as_deref(), Some("9"));
    /// assert_eq!(list.items.len(), 1);
    /// ```
    ///
    /// # Errors
    /// As [`decode`](Self::decode).
    pub fn decode_list<T: Clone + DeserializeOwned>(
        &mut self,
        json: &mut [u8],
    ) -> Result<ObjectList<T>, DecodeError> {
        let (types, metadata, items) =
            decode_list_now(json, |item, types| self.decode_item(item, types))?;
        Ok(ObjectList {
            types,
            metadata,
            items,
        })
    }

    /// Decodes one line of a watch stream: a watch event, or (as some servers and proxies
    /// send instead of an `ERROR` event) a bare `Status`, told apart by the presence of a
    /// top-level `type` field, without decoding twice.
    pub(crate) fn decode_watch_line<T: DeserializeOwned>(
        &mut self,
        json: &mut [u8],
    ) -> Result<Result<WatchEvent<T>, Status>, DecodeError> {
        let mut tape = self.tape(json)?;
        let is_status = entry(&tape.0, 0, "type").is_none()
            && matches!(
                entry(&tape.0, 0, "kind").map(|at| tape.0[at]),
                Some(Node::String("Status"))
            );
        if is_status {
            return tape.deserialize().map(Err).map_err(DecodeError::from);
        }
        if self.skip_managed_fields
            && let Some(object) = entry(&tape.0, 0, "object")
        {
            skip_managed_fields(&mut tape.0, object);
        }
        tape.deserialize().map(Ok).map_err(DecodeError::from)
    }

    /// Parses `json` into a tape, checking its depth.
    fn tape<'j>(&mut self, json: &'j mut [u8]) -> Result<simd_json::tape::Tape<'j>, DecodeError> {
        let tape =
            simd_json::to_tape_with_buffers(json, &mut self.buffers).map_err(DecodeError::from)?;
        check_depth(&tape.0)?;
        Ok(tape)
    }
}

/// What `metadata.managedFields` is renamed to on a tape so that serde skips it: no
/// Kubernetes type has such a field, and k8s-openapi's types (like every type that does not
/// deny unknown fields) skip unknown ones without allocating.
const SKIPPED_FIELD: &str = "informer.skipped/managedFields";

/// Renames `metadata.managedFields` of the object at `object` (if it is one and has them).
fn skip_managed_fields(nodes: &mut [Node<'_>], object: usize) {
    if let Some(metadata) = entry(nodes, object, "metadata")
        && let Some(value) = entry(nodes, metadata, "managedFields")
    {
        nodes[value - 1] = Node::String(SKIPPED_FIELD);
    }
}

/// The `kind` and `apiVersion` the items of a list take when they have neither, as
/// client-go's unstructured list decoding (`decodeToList`) gives them: the list's
/// `apiVersion`, and its `kind` less `List`. None if the list has no `kind` or no
/// `apiVersion`.
pub(crate) fn item_types(list: &TypeMeta) -> Option<TypeMeta> {
    if list.kind.is_empty() || list.api_version.is_empty() {
        return None;
    }
    let kind = list.kind.strip_suffix("List").unwrap_or(&list.kind);
    Some(TypeMeta {
        api_version: list.api_version.clone(),
        kind: kind.to_owned(),
    })
}

/// Gives the object at the root of `nodes` `types` if it has neither `kind` nor
/// `apiVersion`. The root object's entries run to the end of the tape, so the two are
/// appended there (the order of keys does not matter to a deserializer), moving nothing.
fn set_missing_types<'a>(nodes: &mut Vec<Node<'a>>, types: &'a TypeMeta) {
    if entry(nodes, 0, "kind").is_some() || entry(nodes, 0, "apiVersion").is_some() {
        return;
    }
    let Some(Node::Object { len, count }) = nodes.first_mut() else {
        return;
    };
    *len += 2;
    *count += 4;
    nodes.extend([
        Node::String("apiVersion"),
        Node::String(&types.api_version),
        Node::String("kind"),
        Node::String(&types.kind),
    ]);
}

/// How many nodes follow `node` as its contents.
fn subtree_len(node: &Node<'_>) -> usize {
    match node {
        Node::Object { count, .. } | Node::Array { count, .. } => *count,
        _ => 0,
    }
}

/// The index of the value of `key` in the object at `object` (none if it is not an object
/// or has no such key). Visits only that object's keys: values are stepped over.
fn entry(nodes: &[Node<'_>], object: usize, key: &str) -> Option<usize> {
    let Some(Node::Object { len, .. }) = nodes.get(object) else {
        return None;
    };
    let mut at = object + 1;
    for _ in 0..*len {
        let Node::String(k) = nodes.get(at)? else {
            return None;
        };
        let value = at + 1;
        if *k == key {
            return Some(value);
        }
        at = value + 1 + subtree_len(nodes.get(value)?);
    }
    None
}

/// The `metadata.namespace` and `metadata.name` of the object at the root of `nodes`.
fn object_name<'a>(nodes: &[Node<'a>]) -> (Option<&'a str>, Option<&'a str>) {
    let Some(metadata) = entry(nodes, 0, "metadata") else {
        return (None, None);
    };
    let text = |key| match entry(nodes, metadata, key).and_then(|at| nodes.get(at)) {
        Some(Node::String(text)) => Some(*text),
        _ => None,
    };
    (text("namespace"), text("name"))
}

/// Decodes one JSON document with a fresh [`JsonDecoder`] (`json` is overwritten).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let mut json = br#"{"metadata":{"name":"settings"},"data":{"mode":"fast"}}"#.to_vec();
/// let cm: ConfigMap = informer_runtime::lister_watcher::decode_json(&mut json).unwrap();
/// assert_eq!(cm.metadata.name.as_deref(), Some("settings"));
/// ```
///
/// # Errors
/// As [`JsonDecoder::decode`].
pub fn decode_json<T: DeserializeOwned>(json: &mut [u8]) -> Result<T, DecodeError> {
    JsonDecoder::new().decode(json)
}

/// A JSON document that could not be decoded, and why.
///
/// ```
/// use informer_runtime::lister_watcher::decode_json;
///
/// let err = decode_json::<u32>(&mut b"\"seven\"".to_vec()).unwrap_err();
/// assert!(!err.to_string().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(String);

impl DecodeError {
    pub(crate) fn new(message: String) -> Self {
        DecodeError(message)
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl From<simd_json::Error> for DecodeError {
    fn from(e: simd_json::Error) -> Self {
        DecodeError(e.to_string())
    }
}

/// Refuses a tape nested more than [`MAX_DEPTH`] levels, without visiting most of it: a
/// container of `count` nodes at depth `d` cannot reach deeper than `d + count`, so only
/// containers too large to rule out are entered (for a pod, a handful of nodes).
fn check_depth(nodes: &[Node<'_>]) -> Result<(), DecodeError> {
    // End (exclusive) of each container entered, innermost last.
    let mut ends = [0usize; MAX_DEPTH];
    let mut depth = 0;
    let mut i = 0;
    while i < nodes.len() {
        while depth > 0 && ends[depth - 1] <= i {
            depth -= 1;
        }
        match nodes[i] {
            Node::Object { count, .. } | Node::Array { count, .. } => {
                // This container is at depth + 1; its contents at most `count` deeper.
                if depth + 1 + count <= MAX_DEPTH {
                    i += 1 + count;
                    continue;
                }
                if depth == MAX_DEPTH {
                    return Err(DecodeError(format!(
                        "the document is nested more than {MAX_DEPTH} levels deep"
                    )));
                }
                ends[depth] = i + 1 + count;
                depth += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
