//! The OpenAPI v3 surface (`/openapi/v3` and one document per group/version).
//!
//! kubectl reads it to learn that the server validates fields itself (the
//! `fieldValidation` parameter on PATCH operations), so `kubectl apply` skips
//! client-side schema validation, which would need the full OpenAPI v2
//! schema. Each document's `components.schemas` describe its kinds (see
//! [`schemas`]: field names, types and required fields of built-in types,
//! custom resources as their CRDs give them), which `kubectl explain` reads. The
//! PATCH operations list no request body types, so kubectl does not take strategic
//! merge patch information from the documents: it computes strategic merge patches
//! from its compiled-in types, and JSON merge patches for custom resources, as it
//! does against a real server whose documents it does not use for patches.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

use serde_json::{Map, Value, json};

use super::resource::{Registry, ResourceType};

mod descriptions;
mod schemas;

/// `api/v1` or `apis/<group>/<version>`.
fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn group_versions(registry: &Registry) -> BTreeMap<String, Vec<Arc<ResourceType>>> {
    let mut groups: BTreeMap<String, Vec<Arc<ResourceType>>> = BTreeMap::new();
    for t in registry.types() {
        groups
            .entry(group_version_path(&t.group, &t.version))
            .or_default()
            .push(t.clone());
    }
    groups
}

fn parameter(name: &str, kind: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": true}})
}

fn item_path(t: &ResourceType) -> String {
    let prefix = format!("/{}", group_version_path(&t.group, &t.version));
    if t.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
    } else {
        format!("{prefix}/{}/{{name}}", t.plural)
    }
}

fn document(types: &[&ResourceType]) -> Value {
    let mut paths = Map::new();
    for t in types {
        let patch = json!({
            "operationId": format!("patch{}", t.kind),
            "parameters": [
                parameter("dryRun", "string"),
                parameter("fieldManager", "string"),
                parameter("fieldValidation", "string"),
                parameter("force", "boolean"),
            ],
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
        });
        paths.insert(item_path(t), json!({ "patch": patch }));
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", super::discovery::SERVER_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas::components(types)},
    })
}

fn hash(value: &Value) -> String {
    let mut hasher = DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// The documents made so far, by group version path, each beside the types it was made
/// from: a document is made again only when its group version's types change (a CRD
/// written, installed or removed), not on every request (the root lists every document's
/// hash, and a document of the built-in types is hundreds of kilobytes).
///
/// A type is immutable once registered, and a change registers new ones, so a document is
/// current while its types are the same allocations; the entry holds them, so that no
/// address it compares can be reused while it does.
#[derive(Default)]
pub(crate) struct Documents {
    made: Mutex<HashMap<String, Made>>,
}

struct Made {
    types: Vec<Arc<ResourceType>>,
    hash: String,
    document: Arc<Value>,
}

impl Documents {
    /// `/openapi/v3`: the group/versions and where their documents are.
    pub(crate) fn root(&self, registry: &Registry) -> Value {
        let groups = group_versions(registry);
        let paths: Map<String, Value> = groups
            .iter()
            .map(|(path, types)| {
                let (hash, _) = self.document(path, types);
                let url = format!("/openapi/v3/{path}?hash={hash}");
                (path.clone(), json!({ "serverRelativeURL": url }))
            })
            .collect();
        // Group versions no longer served keep nothing.
        self.made.lock().retain(|path, _| groups.contains_key(path));
        json!({ "paths": paths })
    }

    /// `/openapi/v3/<api/v1 | apis/group/version>`, if served.
    pub(crate) fn group_version(&self, registry: &Registry, path: &str) -> Option<Arc<Value>> {
        let groups = group_versions(registry);
        let types = groups.get(path)?;
        Some(self.document(path, types).1)
    }

    /// The document of `path`'s `types` and its hash, made if not made from them already.
    fn document(&self, path: &str, types: &[Arc<ResourceType>]) -> (String, Arc<Value>) {
        let mut made = self.made.lock();
        if let Some(m) = made.get(path)
            && m.types.len() == types.len()
            && m.types.iter().zip(types).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return (m.hash.clone(), m.document.clone());
        }
        let refs: Vec<&ResourceType> = types.iter().map(|t| &**t).collect();
        let document = document(&refs);
        let hash = hash(&document);
        let document = Arc::new(document);
        made.insert(
            path.to_string(),
            Made {
                types: types.to_vec(),
                hash: hash.clone(),
                document: document.clone(),
            },
        );
        (hash, document)
    }
}

/// The media type kubectl asks `/openapi/v2` for.
pub(crate) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The `Content-Type` of the protobuf answer (Go's MIME parser refuses the `@` form).
const V2_PROTOBUF_RESPONSE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: a document with no definitions, as JSON or in the protobuf form kubectl
/// asks for (gnostic's `openapi_v2.Document`: `swagger` = 1, `info` = 2 with `title` = 1
/// and `version` = 2, `paths` = 8). kubectl reads it when `/openapi/v3` does not list an
/// object's group/version; finding no schema there, it goes on to tell the user the kind is
/// not served (`no matches for kind ...`), as against a real server.
pub(crate) fn v2(protobuf: bool) -> (Vec<u8>, &'static str) {
    let version = format!("v1.{}.0", super::discovery::SERVER_MINOR);
    if !protobuf {
        let document = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": version},
            "paths": {},
        });
        return (document.to_string().into_bytes(), "application/json");
    }
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        // Every piece is far below 128 bytes: one-byte lengths.
        let mut out = vec![number << 3 | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }
    let info = [field(1, b"Kubernetes"), field(2, version.as_bytes())].concat();
    let document = [field(1, b"2.0"), field(2, &info), field(8, b"")].concat();
    (document, V2_PROTOBUF_RESPONSE)
}

#[cfg(test)]
mod tests;
