//! The versioned object store: objects of every type, one revision counter shared by all of
//! them (like etcd's), a bounded history of changes for watch resumption and consistent
//! paginated snapshots, and the open watches.
//!
//! # Concurrency
//!
//! [`Storage`] has one writer at a time ([`Storage::lock`] hands out the [`Store`]) and any
//! number of readers that wait neither for the writer nor for each other. Every commit
//! publishes an immutable [`Snapshot`]: per resource type a persistent [`Tree`], so
//! publishing costs O(resource types) and a snapshot held by a long read costs only the
//! nodes later writes replace. Reads (get, list, the initial events of a watch) take the
//! latest snapshot and work on it outside any lock. A list at an older revision (a continue
//! token, `resourceVersionMatch=Exact`) undoes the changes made since from the history; it
//! holds the writer lock only to copy those changes' pointers. A page costs O(log n + page)
//! (the tree counts `remainingItemCount` in O(log n)). Objects are serialized once, when
//! committed; responses and watch events send those bytes.
//!
//! # Bounds
//!
//! The history keeps at most [`Limits::history_changes`] changes holding at most
//! [`Limits::history_bytes`] bytes; older changes are compacted away (resuming from them
//! gets `410 Gone`). Each watch's backlog is bounded by [`Limits::watch_backlog`]; a watch
//! that falls further behind is closed (see [`queue`]) and its client watches again.
//!
//! # For in-process controllers
//!
//! [`Storage::subscribe`] delivers every committed [`Change`] of every type in order;
//! [`Storage::dependents`] finds objects by owner UID, [`Storage::object_by_uid`] by UID and
//! [`Snapshot::in_namespace`] everything in a namespace, each without scanning the store.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::ops::{Bound, Deref};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard, RwLock};
use serde_json::{Map, Value, json};

use super::default_classes;
use super::gc::Propagation;
use super::go_json;
use super::namespaces;
use super::patch::{self, PatchKind};
use super::pod_security;
use super::pods;
use super::resource::{Registry, ResourceKey, ResourceType};
use super::selector::{FieldSelector, LabelSelector};
use super::services;
use super::status::{ApiError, FieldError};
use super::strategy;
use super::time::now_rfc3339;
use super::validation;

mod delete;
pub(crate) mod queue;
mod tree;

use queue::{Backlog, Closed, Queue, Weight};
pub(crate) use tree::Tree;

/// A stored object: immutable and shared, with its JSON serialization, made once.
#[derive(Clone)]
pub(crate) struct Object {
    value: Arc<Value>,
    json: Bytes,
}

impl Object {
    /// Wraps a value, serializing it.
    pub(crate) fn new(value: Value) -> Self {
        // Serializing a `Value` cannot fail.
        let json = serde_json::to_vec(&value).unwrap_or_default();
        Self {
            value: Arc::new(value),
            json: Bytes::from(json),
        }
    }

    /// The object as JSON (exactly `serde_json::to_vec` of the value).
    pub(crate) fn json(&self) -> &Bytes {
        &self.json
    }

    /// The size of the JSON, which is what the store accounts an object by.
    pub(crate) fn bytes(&self) -> usize {
        self.json.len()
    }
}

impl Deref for Object {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.value
    }
}

impl AsRef<Value> for Object {
    fn as_ref(&self) -> &Value {
        &self.value
    }
}

impl std::borrow::Borrow<Value> for Object {
    fn borrow(&self) -> &Value {
        &self.value
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

/// The kind of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change, as the history retains it and subscribers receive it.
#[derive(Debug)]
pub(crate) struct Change {
    pub revision: u64,
    pub resource: ResourceKey,
    /// The storage key (`namespace/name` or `name`).
    pub key: Arc<str>,
    pub event: EventType,
    /// The object after the change (for deletions: the deleted object at the deletion revision).
    pub object: Object,
    /// The object before the change, if it existed.
    pub previous: Option<Object>,
    /// The user whose request made the change (`None`: the server's own token, or a direct
    /// call of the test's handle).
    pub actor: Option<Arc<str>>,
}

impl Change {
    /// The bytes the change holds: the states before and after it.
    fn bytes(&self) -> usize {
        self.object.bytes() + self.previous.as_ref().map_or(0, Object::bytes)
    }
}

impl Weight for Arc<Change> {
    fn bytes(&self) -> usize {
        Change::bytes(self)
    }
}

/// What a watch stream is sent.
#[derive(Debug)]
pub(crate) enum WatchMessage {
    /// An object event.
    Event(EventType, Object),
    /// An `ERROR` event carrying a `Status`; the stream ends after it.
    Error(Value),
    /// A raw line (used to inject malformed events).
    Raw(String),
}

/// What a message costs in a watch's backlog besides its payload (the event's envelope).
const MESSAGE_OVERHEAD: usize = 64;

impl Weight for WatchMessage {
    fn bytes(&self) -> usize {
        MESSAGE_OVERHEAD
            + match self {
                WatchMessage::Event(_, object) => object.bytes(),
                WatchMessage::Raw(line) => line.len(),
                WatchMessage::Error(_) => 0,
            }
    }
}

/// Which objects a list or watch selects.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    pub resource: Arc<ResourceType>,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    /// Everything of a resource type in a namespace (or everywhere).
    pub(crate) fn all(resource: Arc<ResourceType>, namespace: Option<String>) -> Self {
        Self {
            resource,
            namespace,
            labels: LabelSelector::default(),
            fields: FieldSelector::default(),
        }
    }

    pub(crate) fn matches(&self, object: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches_object(object)
            && self
                .fields
                .matches(|field| self.resource.field_value(object, field))
    }

    fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }

    /// The storage keys the filter's namespace spans: `ns/` up to `ns0` (`0` follows `/`;
    /// neither can be part of a namespace's or an object's name).
    fn key_range(&self) -> (Bound<String>, Bound<String>) {
        match &self.namespace {
            Some(ns) if self.resource.namespaced => (
                Bound::Included(format!("{ns}/")),
                Bound::Excluded(format!("{ns}0")),
            ),
            _ => (Bound::Unbounded, Bound::Unbounded),
        }
    }

    /// The event a watcher with this filter sees for a change, if any. `gone` caches the
    /// previous state at the new revision, which every watcher that stops matching sees.
    fn translate(
        &self,
        event: EventType,
        object: &Object,
        previous: Option<&Object>,
        gone: &mut Option<Object>,
    ) -> Option<(EventType, Object)> {
        match event {
            EventType::Added => self.matches(object).then(|| (event, object.clone())),
            EventType::Deleted => self.matches(object).then(|| (event, object.clone())),
            EventType::Modified => {
                let was = previous.is_some_and(|p| self.matches(p));
                let is = self.matches(object);
                match (was, is) {
                    (true, true) => Some((EventType::Modified, object.clone())),
                    (false, true) => Some((EventType::Added, object.clone())),
                    (true, false) => {
                        // Like the watch cache: the previous state, at the new revision.
                        let gone = gone.get_or_insert_with(|| {
                            let mut gone = previous.map(|p| p.as_ref().clone()).unwrap_or_default();
                            set_meta(
                                &mut gone,
                                "resourceVersion",
                                json!(resource_version(object)),
                            );
                            Object::new(gone)
                        });
                        Some((EventType::Deleted, gone.clone()))
                    }
                    (false, false) => None,
                }
            }
        }
    }
}

/// The lower bound of the keys after `start`, within `lower`.
fn after(lower: Bound<String>, start: &str) -> Bound<String> {
    match lower {
        Bound::Included(low) if *start < *low => Bound::Included(low),
        _ => Bound::Excluded(start.to_string()),
    }
}

fn as_str(bound: &Bound<String>) -> Bound<&str> {
    bound.as_ref().map(String::as_str)
}

struct Watcher {
    filter: Filter,
    queue: Arc<Queue<WatchMessage>>,
    /// Changes up to this revision are not sent (a watch from a version the store has not
    /// reached yet waits for it, as the watch cache does).
    after: u64,
}

/// Which state a list reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadVersion {
    /// `resourceVersion` unset: the latest state (a consistent read).
    MostRecent,
    /// `resourceVersion=0`: any state; this server serves the latest.
    Any,
    /// At least this revision.
    NotOlderThan(u64),
    /// Exactly this revision.
    Exact(u64),
}

/// A list request against the store.
#[derive(Clone, Debug)]
pub(crate) struct ListRequest {
    pub filter: Filter,
    pub version: ReadVersion,
    pub limit: Option<usize>,
    pub continue_token: Option<ContinueToken>,
}

/// One page of a list.
#[derive(Debug)]
pub(crate) struct ListPage {
    pub items: Vec<Object>,
    pub revision: u64,
    pub continue_token: Option<ContinueToken>,
    pub remaining: Option<usize>,
}

/// A pagination token: the snapshot revision and the key to start after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ContinueToken {
    pub revision: u64,
    pub start: String,
}

impl ContinueToken {
    /// Encodes like the real server (`storage.EncodeContinue`): unpadded URL-safe base64 of
    /// `{"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}`, with `"rv":-1` for an
    /// inconsistent continuation (revision 0 here: it reads the latest state).
    pub(crate) fn encode(&self) -> String {
        let rv = match self.revision {
            0 => json!(-1),
            revision => json!(revision),
        };
        let json = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": self.start});
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
    }

    /// Decodes as the real server does (`storage.DecodeContinue`), with its errors: `400`
    /// `invalid continue token: continue key is not valid...`.
    pub(crate) fn decode(token: &str) -> Result<Self, ApiError> {
        let invalid = |why: &str| {
            ApiError::bad_request(format!(
                "invalid continue token: continue key is not valid{why}"
            ))
        };
        let bytes = decode_raw_url_base64(token)
            .map_err(|at| invalid(&format!(": illegal base64 data at input byte {at}")))?;
        if let Some(why) = super::go_json::syntax_error(&bytes) {
            return Err(invalid(&format!(": {why}")));
        }
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|err| invalid(&format!(": {err}")))?;
        // Go's decoding into `continueToken{v string, rv int64, start string}`: a value of
        // another type is an error, null leaves the field empty.
        let go_kind = |value: &Value| match value {
            Value::Array(_) => "array".to_string(),
            Value::Object(_) => "object".to_string(),
            Value::String(_) => "string".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Number(n) if n.is_i64() => "number".to_string(),
            Value::Number(n) => format!("number {n}"),
            Value::Null => "null".to_string(),
        };
        let fields = match &value {
            Value::Object(fields) => fields.clone(),
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(invalid(&format!(
                    ": json: cannot unmarshal {} into Go value of type storage.continueToken",
                    go_kind(other)
                )));
            }
        };
        for (field, go_type) in [("v", "string"), ("rv", "int64"), ("start", "string")] {
            let fits = match fields.get(field) {
                None | Some(Value::Null) => true,
                Some(Value::String(_)) => go_type == "string",
                Some(Value::Number(n)) => go_type == "int64" && n.is_i64(),
                Some(_) => false,
            };
            if !fits {
                return Err(invalid(&format!(
                    ": json: cannot unmarshal {} into Go struct field continueToken.{field} of type {go_type}",
                    go_kind(&fields[field])
                )));
            }
        }
        let version = fields.get("v").and_then(Value::as_str).unwrap_or("");
        if version != "meta.k8s.io/v1" {
            return Err(invalid(&format!(
                ": server does not recognize this encoded version {version}"
            )));
        }
        let rv = fields.get("rv").and_then(Value::as_i64).unwrap_or(0);
        let revision = match u64::try_from(rv) {
            Ok(0) => {
                return Err(invalid(
                    ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
                ));
            }
            Ok(revision) => revision,
            // A negative version: the latest state (an inconsistent continuation).
            Err(_) => 0,
        };
        let start = fields.get("start").and_then(Value::as_str).unwrap_or("");
        if start.is_empty() {
            return Err(invalid(
                ": encoded start key empty (version meta.k8s.io/v1)",
            ));
        }
        // Go cleans the key (`path.Clean`) and refuses one that cleaning changes.
        let key = if start.starts_with('/') {
            start.to_string()
        } else {
            format!("/{start}")
        };
        let unclean = key != "/"
            && key
                .split('/')
                .skip(1)
                .any(|segment| matches!(segment, "" | "." | ".."));
        if unclean {
            return Err(invalid(&format!(": {start}")));
        }
        Ok(Self {
            revision,
            start: start.to_string(),
        })
    }
}

/// Go's `base64.RawURLEncoding.DecodeString` (unpadded, trailing bits ignored); the error is
/// the byte offset Go's `CorruptInputError` names.
fn decode_raw_url_base64(text: &str) -> Result<Vec<u8>, usize> {
    let bytes = text.as_bytes();
    if let Some(at) = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_'))
    {
        return Err(at);
    }
    if bytes.len() % 4 == 1 {
        return Err(bytes.len() - 1);
    }
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::URL_SAFE,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    );
    engine.decode(bytes).map_err(|_| bytes.len())
}

/// How a watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WatchStart {
    /// At the latest revision, first sending synthetic ADDED events for the
    /// current state if `initial_events`, then an initial-events-end bookmark
    /// if `end_bookmark`.
    Now {
        initial_events: bool,
        end_bookmark: bool,
    },
    /// With the changes after a revision.
    After(u64),
}

/// Which part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Subresource {
    /// The object itself (status changes ignored when the type has a status subresource).
    Main,
    /// Only `status`.
    Status,
    /// A namespace's `finalize` subresource: the object with the body's `spec.finalizers`.
    Finalize,
    /// A Pod's `ephemeralcontainers` (`kubectl debug`): the object with the body's
    /// `spec.ephemeralContainers`, which may only be added to.
    EphemeralContainers,
    /// A CertificateSigningRequest's `approval`: the object with the body's
    /// `status.conditions` ([`super::certificates`]).
    Approval,
}

/// How a write is made: `dry_run`, who writes it (for `metadata.managedFields`), and for
/// server-side apply whether it takes fields other managers own. `false` (and `true`) convert
/// to the options of a (dry-run) write by the server's default manager.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WriteOptions {
    pub dry_run: bool,
    /// The field manager (`fieldManager`, or from the `User-Agent`); `None`: the default.
    pub manager: Option<String>,
    /// Server-side apply: take over the fields other managers own.
    pub force: bool,
    /// The subresource a managed fields entry names when it is not the one written (`scale`
    /// writes the object).
    pub subresource: Option<String>,
    /// Whether to record the write's fields (an apply records its own).
    pub track: bool,
    /// The `apiVersion` the write came through when it is not the stored one (another
    /// version of a custom resource): its managed fields entry names it, as the field
    /// manager of the request's version does. `None`: the resource's own.
    pub api_version: Option<String>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            dry_run: false,
            manager: None,
            force: false,
            subresource: None,
            track: true,
            api_version: None,
        }
    }
}

impl From<bool> for WriteOptions {
    fn from(dry_run: bool) -> Self {
        Self {
            dry_run,
            ..Self::default()
        }
    }
}

impl WriteOptions {
    /// A write by this field manager.
    pub(crate) fn by(manager: &str) -> Self {
        Self {
            manager: Some(manager.to_string()),
            ..Self::default()
        }
    }
}

/// `DeleteOptions` fields the server honours.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    /// `propagationPolicy`: what happens to the object's dependents.
    pub propagation: Option<Propagation>,
    /// The legacy `orphanDependents` (a request may not set both).
    pub orphan_dependents: Option<bool>,
}

/// The result of a delete.
#[derive(Debug)]
pub(crate) enum DeleteOutcome {
    /// The object is gone (this is its final state).
    Deleted(Object),
    /// The object has finalizers and was only marked with a deletionTimestamp.
    Pending(Object),
}

/// How much the store keeps; see [`TestApiServerBuilder`](super::TestApiServerBuilder) for
/// the defaults and what each bound means to a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Changes retained in the history (at least 1).
    pub history_changes: usize,
    /// Bytes the retained changes may hold.
    pub history_bytes: usize,
    /// How far a watch (or a subscriber) may fall behind before it is closed.
    pub watch_backlog: Backlog,
}

impl Limits {
    /// The defaults with another history length.
    #[cfg(test)]
    pub(crate) fn with_history(changes: usize) -> Self {
        Self {
            history_changes: changes,
            ..Self::default()
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            history_changes: 10_000,
            history_bytes: 128 * 1024 * 1024,
            watch_backlog: Backlog {
                events: 10_000,
                bytes: 64 * 1024 * 1024,
            },
        }
    }
}

/// What the server holds, by its own accounting (see
/// [`TestApiServer::stats`](super::TestApiServer::stats)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// The latest resource version.
    pub revision: u64,
    /// Objects stored (all types).
    pub objects: usize,
    /// The bytes of their JSON.
    pub object_bytes: usize,
    /// Changes retained in the history.
    pub history_changes: usize,
    /// The bytes the retained changes hold (each change's states before and after it).
    pub history_bytes: usize,
    /// Open watches.
    pub watches: usize,
    /// Events waiting in open watches' backlogs (sent to no client yet).
    pub watch_backlog_events: usize,
    /// The bytes of those events.
    pub watch_backlog_bytes: usize,
    /// Watches closed since the start because they fell too far behind.
    pub slow_watches_closed: u64,
}

/// An object's identity in the store.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ObjectRef {
    pub resource: ResourceKey,
    /// The storage key (`namespace/name` or `name`).
    pub key: Arc<str>,
}

/// The state at one revision: immutable, cheap to hold.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    revision: u64,
    compacted: u64,
    objects: Arc<HashMap<ResourceKey, Tree<Object>>>,
}

impl Snapshot {
    /// The oldest revision a watch could resume from when this state was current.
    pub(crate) fn compacted_revision(&self) -> u64 {
        self.compacted
    }

    fn tree(&self, resource: &ResourceKey) -> Option<&Tree<Object>> {
        self.objects.get(resource)
    }

    /// The object at a key.
    pub(crate) fn get(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        self.tree(&resource.key())
            .and_then(|t| t.get(&object_key(resource, namespace, name)))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&resource.qualified_resource(), name))
    }

    /// The names (namespace, name) of the objects a filter selects.
    pub(crate) fn select(&self, filter: &Filter) -> Vec<(Option<String>, String)> {
        let Some(tree) = self.tree(&filter.resource.key()) else {
            return Vec::new();
        };
        let (lower, upper) = filter.key_range();
        tree.range(as_str(&lower), as_str(&upper))
            .map(|(_, o)| o)
            .filter(|o| filter.matches(o))
            .map(|o| {
                (
                    o.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    o.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            })
            .collect()
    }

    /// Every object of every type and where it is stored, for a controller that reads the
    /// whole state (after its subscription ended).
    pub(crate) fn every_object(&self) -> impl Iterator<Item = (ObjectRef, &Object)> + '_ {
        self.objects.iter().flat_map(|(resource, tree)| {
            tree.range(Bound::Unbounded, Bound::Unbounded)
                .map(move |(key, object)| {
                    let at = ObjectRef {
                        resource: resource.clone(),
                        key: key.clone(),
                    };
                    (at, object)
                })
        })
    }

    /// Every object in a namespace, of every namespaced type, in O(types × log n + found).
    pub(crate) fn in_namespace(&self, namespace: &str) -> Vec<(ResourceKey, Object)> {
        let (lower, upper) = (format!("{namespace}/"), format!("{namespace}0"));
        let mut found = Vec::new();
        for (resource, tree) in self.objects.iter() {
            found.extend(
                tree.range(Bound::Included(&lower), Bound::Excluded(&upper))
                    .map(|(_, o)| (resource.clone(), o.clone())),
            );
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }
}

/// The initial events of a watch, read lazily from the snapshot it started at.
pub(crate) struct InitialEvents {
    tree: Tree<Object>,
    filter: Filter,
    /// The last key scanned.
    cursor: Option<Arc<str>>,
    scanned_all: bool,
    ready: VecDeque<Object>,
    revision: u64,
    end_bookmark: bool,
}

/// The next step of [`InitialEvents`].
pub(crate) enum Initial {
    /// An object to send as `ADDED`.
    Event(Object),
    /// Scanned objects without finding one that matches; yield, then ask again.
    Scanning,
    /// No more objects; send the initial-events-end bookmark at `revision` if `bookmark`.
    End { revision: u64, bookmark: bool },
}

/// How many objects one step of [`InitialEvents`] looks at, at most.
const SCAN_BATCH: usize = 256;

impl InitialEvents {
    /// The next step; after [`Initial::End`], the caller drops this.
    pub(crate) fn next(&mut self) -> Initial {
        if let Some(object) = self.ready.pop_front() {
            return Initial::Event(object);
        }
        if !self.scanned_all {
            let (lower, upper) = self.filter.key_range();
            let lower = match &self.cursor {
                Some(cursor) => after(lower, cursor),
                None => lower,
            };
            let mut scanned = 0;
            for (key, object) in self
                .tree
                .range(as_str(&lower), as_str(&upper))
                .take(SCAN_BATCH)
            {
                scanned += 1;
                self.cursor = Some(key.clone());
                if self.filter.matches(object) {
                    self.ready.push_back(object.clone());
                }
            }
            self.scanned_all = scanned < SCAN_BATCH;
            if let Some(object) = self.ready.pop_front() {
                return Initial::Event(object);
            }
            if !self.scanned_all {
                return Initial::Scanning;
            }
        }
        Initial::End {
            revision: self.revision,
            bookmark: self.end_bookmark,
        }
    }
}

/// A registered watch: its id, its backlog and, for a watch that starts now, its initial
/// events.
pub(crate) struct Registration {
    pub id: u64,
    pub queue: Arc<Queue<WatchMessage>>,
    pub initial: Option<InitialEvents>,
    /// What the watch sends starts after this revision (bookmarks too): the version it
    /// asked for when the store had not reached it, 0 otherwise.
    pub after: u64,
}

/// Every change committed after a revision, of every type, in order; for in-process
/// controllers (garbage collection, namespace lifecycle). Dropping it unsubscribes.
pub(crate) struct Subscription {
    queue: Arc<Queue<Arc<Change>>>,
}

impl Subscription {
    /// The next change, waiting for it; `None` once the subscription ended: it fell further
    /// behind than the watch backlog allows, or the store was reset. Subscribe again from the
    /// last revision seen (a `410` then means: read the current state instead).
    pub(crate) async fn next(&self) -> Option<Arc<Change>> {
        self.queue.pop().await
    }

    /// The next change if one is waiting.
    pub(crate) fn try_next(&self) -> Option<Arc<Change>> {
        self.queue.try_pop()
    }
}

/// What readers share with the writer: the latest snapshot.
#[derive(Default)]
struct Published {
    snapshot: RwLock<Arc<Snapshot>>,
    /// The latest revision, stored after the commit's events are queued for every watch.
    revision: AtomicU64,
    /// Wakes the reads waiting for a revision (see [`Storage::wait_for_revision`]) each time
    /// `revision` moves.
    advanced: tokio::sync::Notify,
}

/// The store with its locks: one writer at a time, readers on snapshots.
pub(crate) struct Storage {
    writer: Mutex<Store>,
    published: Arc<Published>,
}

impl Storage {
    pub(crate) fn new(limits: Limits) -> Self {
        let published = Arc::new(Published::default());
        Self {
            writer: Mutex::new(Store::new(limits, published.clone())),
            published,
        }
    }

    /// The writer. Hold it only for writes and watch registration; reads use
    /// [`Storage::snapshot`].
    pub(crate) fn lock(&self) -> MutexGuard<'_, Store> {
        self.writer.lock()
    }

    /// The latest state (O(1); never waits for a writer).
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.published.snapshot.read().clone()
    }

    /// The latest revision. Every event up to it has been queued for the watches it concerns,
    /// so a watch whose backlog is empty after reading this may send a bookmark at it.
    pub(crate) fn revision(&self) -> u64 {
        self.published.revision.load(Ordering::Acquire)
    }

    /// Waits, without blocking a thread, until the latest revision is at least `revision`
    /// or `timeout` has passed; whether it got there. kube-apiserver's watch cache waits so
    /// (`waitUntilFreshAndBlock`) before it serves a read at a version it has not seen yet.
    pub(crate) async fn wait_for_revision(&self, revision: u64, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the revision is read: a commit in between wakes it.
            let advanced = self.published.advanced.notified();
            let mut advanced = std::pin::pin!(advanced);
            advanced.as_mut().enable();
            if self.revision() >= revision {
                return true;
            }
            if tokio::time::timeout_at(deadline, advanced).await.is_err() {
                return self.revision() >= revision;
            }
        }
    }

    /// The object at a key, in the latest state.
    pub(crate) fn get(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        self.snapshot().get(resource, namespace, name)
    }

    /// One page of a list. Works on a snapshot; takes the writer lock only to copy the
    /// history's pointers for a read at an older revision.
    pub(crate) fn list(&self, request: &ListRequest) -> Result<ListPage, ApiError> {
        let snapshot = self.snapshot();
        let (current, compacted) = (snapshot.revision, snapshot.compacted);
        let resource = &request.filter.resource;
        let expired = |start: &str| {
            let fresh = ContinueToken {
                revision: 0,
                start: start.to_string(),
            };
            ApiError::new(
                super::StatusReason::Expired,
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter, or use the continue token \
                 in this response to retrieve the remainder of the results. Continuing with the provided \
                 token results in an inconsistent list - objects that were created, modified, or deleted \
                 between the time the first chunk was returned and now may show up in the list.",
            )
            .with_metadata(json!({"continue": fresh.encode()}))
        };
        let (revision, start) = match &request.continue_token {
            Some(token) => {
                // Revision 0 marks an inconsistent continuation (handed out
                // with an expiry): it reads the latest state.
                if token.revision != 0 && token.revision < compacted {
                    return Err(expired(&token.start));
                }
                if token.revision > current {
                    return Err(ApiError::bad_request(
                        "continue key is not valid: resource version is in the future",
                    ));
                }
                let revision = if token.revision == 0 {
                    current
                } else {
                    token.revision
                };
                (revision, Some(token.start.as_str()))
            }
            None => {
                let revision = match request.version {
                    ReadVersion::MostRecent | ReadVersion::Any => current,
                    ReadVersion::NotOlderThan(n) => {
                        if n > current {
                            return Err(ApiError::too_large_resource_version(n, current));
                        }
                        current
                    }
                    ReadVersion::Exact(n) => {
                        if n > current {
                            return Err(ApiError::too_large_resource_version(n, current));
                        }
                        if n < compacted {
                            return Err(list_too_old());
                        }
                        n
                    }
                };
                (revision, None)
            }
        };
        let key = resource.key();
        let mut tree = snapshot.tree(&key).cloned().unwrap_or_default();
        if revision < current {
            // Undo the changes since, newest first.
            let changes = self.writer.lock().changes_between(&key, revision, current);
            let Some(changes) = changes else {
                // Compacted since the snapshot was taken.
                return Err(match start {
                    Some(start) => expired(start),
                    None => list_too_old(),
                });
            };
            for change in changes.iter().rev() {
                match &change.previous {
                    Some(previous) => tree.insert(change.key.clone(), previous.clone()),
                    None => tree.remove(&change.key),
                };
            }
        }
        Ok(page(&tree, request, revision, start))
    }

    /// The names (namespace, name) of the current objects a filter selects.
    pub(crate) fn select(&self, filter: &Filter) -> Vec<(Option<String>, String)> {
        self.snapshot().select(filter)
    }

    /// What the store holds, by its own accounting.
    pub(crate) fn stats(&self) -> ServerStats {
        self.writer.lock().stats()
    }

    /// Subscribes to every change committed after `after` (or from now), of every type.
    /// `410 Gone` when the history no longer reaches back to `after`.
    pub(crate) fn subscribe(&self, after: Option<u64>) -> Result<Subscription, ApiError> {
        self.writer.lock().subscribe(after)
    }
}

/// `410 Expired` for an exact list at a version the history no longer holds. The watch
/// cache cannot serve it, so kube-apiserver's `CacheDelegator.GetList` reads from etcd,
/// which has compacted it: etcd3's words (`interpretListError`), not the cache's
/// `too old resource version: X (Y)` that a watch gets.
fn list_too_old() -> ApiError {
    ApiError::new(
        super::StatusReason::Expired,
        "The resourceVersion for the provided list is too old.",
    )
}

/// One page of the objects of `tree` a request selects, after `start`.
fn page(
    tree: &Tree<Object>,
    request: &ListRequest,
    revision: u64,
    start: Option<&str>,
) -> ListPage {
    let filter = &request.filter;
    let (lower, upper) = filter.key_range();
    let lower = match start {
        Some(start) => after(lower, start),
        None => lower,
    };
    let limit = request.limit.filter(|l| *l > 0);
    let entries = tree
        .range(as_str(&lower), as_str(&upper))
        .filter(|(_, object)| filter.matches(object));
    let mut items = Vec::new();
    let mut last_key = None;
    for (key, object) in entries {
        items.push(object.clone());
        last_key = Some(key);
        if limit.is_some_and(|l| items.len() >= l) {
            break;
        }
    }
    let (continue_token, remaining) = match last_key {
        Some(last) if limit.is_some_and(|l| items.len() >= l) => {
            // A full page has a next one when any object follows it in the key range,
            // whether or not it matches the selectors: the watch cache's `hasMoreListItems`
            // (`i < len(resp.Items)-1`, of the unfiltered items) and etcd3's `hasMore`
            // (more keys in the range) alike. The next page may then be empty. Counted in
            // O(log n); `remainingItemCount` only without selectors.
            let remaining = tree.count(Bound::Excluded(last), as_str(&upper));
            let token = (remaining > 0).then(|| ContinueToken {
                revision,
                start: last.to_string(),
            });
            (
                token,
                (remaining > 0 && !filter.has_selectors()).then_some(remaining),
            )
        }
        _ => (None, None),
    };
    ListPage {
        items,
        revision,
        continue_token,
        remaining,
    }
}

/// All objects, history and watches: the writer's side of [`Storage`].
pub(crate) struct Store {
    revision: u64,
    /// Every change after this revision is retained in `history`.
    compacted: u64,
    objects: Arc<HashMap<ResourceKey, Tree<Object>>>,
    object_bytes: usize,
    history: VecDeque<Arc<Change>>,
    history_bytes: usize,
    limits: Limits,
    watchers: HashMap<ResourceKey, BTreeMap<u64, Watcher>>,
    watch_count: usize,
    subscribers: BTreeMap<u64, Arc<Queue<Arc<Change>>>>,
    next_id: u64,
    slow_watches_closed: u64,
    /// Owner UID → the objects whose `ownerReferences` name it.
    owners: HashMap<Arc<str>, HashSet<ObjectRef>>,
    /// UID → object.
    uids: HashMap<Arc<str>, ObjectRef>,
    published: Arc<Published>,
}

/// Maps are shrunk once they are this much larger than what they hold.
const SHRINK_FACTOR: usize = 4;

fn shrink_map<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.capacity() > 64 && map.len() * SHRINK_FACTOR < map.capacity() {
        map.shrink_to(map.len() * 2);
    }
}

impl Store {
    fn new(limits: Limits, published: Arc<Published>) -> Self {
        let limits = Limits {
            history_changes: limits.history_changes.max(1),
            ..limits
        };
        let store = Self {
            revision: 0,
            compacted: 0,
            objects: Arc::default(),
            object_bytes: 0,
            history: VecDeque::new(),
            history_bytes: 0,
            limits,
            watchers: HashMap::new(),
            watch_count: 0,
            subscribers: BTreeMap::new(),
            next_id: 0,
            slow_watches_closed: 0,
            owners: HashMap::new(),
            uids: HashMap::new(),
            published,
        };
        store.publish();
        store
    }

    /// The latest revision.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The number of open watches.
    pub(crate) fn watch_count(&self) -> usize {
        self.watch_count
    }

    /// The current state (O(1)).
    pub(crate) fn current(&self) -> Snapshot {
        Snapshot {
            revision: self.revision,
            compacted: self.compacted,
            objects: self.objects.clone(),
        }
    }

    /// Makes the current state the one readers see, and its revision the one bookmarks
    /// may name.
    fn publish(&self) {
        self.publish_state();
        self.publish_revision();
    }

    /// Makes the current state the one readers (gets and lists) see. A commit does this
    /// before it queues its events: a client that saw an event and reads the object at
    /// once must find it (a real API server reads from etcd, which has it).
    fn publish_state(&self) {
        let snapshot = Arc::new(self.current());
        let previous = std::mem::replace(&mut *self.published.snapshot.write(), snapshot);
        drop(previous);
    }

    /// Makes the current revision the one a watch with nothing queued may send a bookmark
    /// at. A commit does this after it queues its events: a bookmark must never pass an
    /// event it has not delivered.
    fn publish_revision(&self) {
        self.published
            .revision
            .store(self.revision, Ordering::Release);
        self.published.advanced.notify_waiters();
    }

    /// Drops all history: watches and continue tokens from before now get 410.
    pub(crate) fn compact(&mut self) {
        self.history = VecDeque::new();
        self.history_bytes = 0;
        self.compacted = self.revision;
        self.publish();
    }

    /// Removes all objects and history. The loss counts as a change (the
    /// revision moves on) whose events are not retained, so resuming from
    /// any earlier version gets `410 Gone`. Subscriptions end.
    pub(crate) fn reset(&mut self) {
        self.objects = Arc::default();
        self.object_bytes = 0;
        self.owners = HashMap::new();
        self.uids = HashMap::new();
        for subscriber in std::mem::take(&mut self.subscribers).into_values() {
            subscriber.close();
        }
        self.revision += 1;
        self.compact();
    }

    /// Closes every open watch (their streams send what is queued, then end).
    pub(crate) fn drop_watches(&mut self) {
        for watcher in std::mem::take(&mut self.watchers)
            .into_values()
            .flat_map(BTreeMap::into_values)
        {
            watcher.queue.close();
        }
        self.watch_count = 0;
    }

    /// Ends every open watch with an `ERROR` event carrying `status`: kube-apiserver's
    /// watchers stop after sending one. Returns how many watches got it.
    pub(crate) fn end_watches_with_error(&mut self, status: &Value) -> usize {
        let mut sent = 0;
        for watcher in std::mem::take(&mut self.watchers)
            .into_values()
            .flat_map(BTreeMap::into_values)
        {
            if watcher
                .queue
                .push(WatchMessage::Error(status.clone()))
                .is_ok()
            {
                sent += 1;
            }
            watcher.queue.close();
        }
        self.watch_count = 0;
        sent
    }

    /// Closes one watch.
    pub(crate) fn remove_watcher(&mut self, id: u64) {
        let mut emptied = None;
        for (resource, watchers) in self.watchers.iter_mut() {
            if let Some(watcher) = watchers.remove(&id) {
                watcher.queue.close();
                self.watch_count -= 1;
                if watchers.is_empty() {
                    emptied = Some(resource.clone());
                }
                break;
            }
        }
        if let Some(resource) = emptied {
            self.watchers.remove(&resource);
        }
    }

    /// Sends a raw line to every open watch; returns how many got it.
    pub(crate) fn send_raw(&mut self, line: &str) -> usize {
        let mut sent = 0;
        let mut closed = Vec::new();
        for watchers in self.watchers.values() {
            for (id, watcher) in watchers {
                match watcher.queue.push(WatchMessage::Raw(line.to_string())) {
                    Ok(()) => sent += 1,
                    Err(reason) => closed.push((*id, reason)),
                }
            }
        }
        self.forget_watchers(closed);
        sent
    }

    /// Removes watches whose queue closed.
    fn forget_watchers(&mut self, closed: Vec<(u64, Closed)>) {
        for (id, reason) in closed {
            if reason == Closed::Overflowed {
                self.slow_watches_closed += 1;
                tracing::debug!(id, "closed a watch that fell too far behind");
            }
            self.remove_watcher(id);
        }
    }

    fn objects_of(&self, resource: &ResourceType) -> Option<&Tree<Object>> {
        self.objects.get(&resource.key())
    }

    /// The stored objects of a built-in cluster-scoped type.
    fn cluster_objects(&self, group: &str, plural: &str) -> impl Iterator<Item = &Object> {
        self.objects
            .get(&ResourceKey::of(group, plural))
            .into_iter()
            .flat_map(|tree| {
                tree.range(Bound::Unbounded, Bound::Unbounded)
                    .map(|(_, object)| object)
            })
    }

    /// The stored PriorityClasses.
    fn priority_classes(&self) -> impl Iterator<Item = &Object> {
        self.cluster_objects("scheduling.k8s.io", "priorityclasses")
    }

    /// The admission plugins that fill a new built-in object in from others: the default
    /// StorageClass of a PersistentVolumeClaim, the default IngressClass of an Ingress, the
    /// not-ready taint of a Node (see [`default_classes`]).
    fn admit_class_defaults(&self, resource: &ResourceType, object: &mut Value) {
        if resource.custom {
            return;
        }
        match (resource.group.as_str(), resource.plural.as_str()) {
            ("", "persistentvolumeclaims") => default_classes::default_storage_class(
                object,
                self.cluster_objects("storage.k8s.io", "storageclasses")
                    .map(|class| &**class),
            ),
            ("networking.k8s.io", "ingresses") => default_classes::default_ingress_class(
                object,
                self.cluster_objects("networking.k8s.io", "ingressclasses")
                    .map(|class| &**class),
            ),
            ("", "nodes") => default_classes::taint_new_node(object),
            _ => {}
        }
    }

    /// The `Priority` admission plugin on a created Pod (its class's priority, see
    /// [`pods::admit_priority`]) or PriorityClass (one global default at most), and on an
    /// updated PriorityClass `name`: 403 when it refuses.
    fn admit_priority(
        &self,
        resource: &ResourceType,
        name: &str,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        let refused = if pods::is_pod(resource) {
            let class = |wanted: &str| {
                self.priority_classes()
                    .find(|pc| pc.pointer("/metadata/name").and_then(Value::as_str) == Some(wanted))
                    .map(|pc| Value::clone(pc))
            };
            let default = self
                .priority_classes()
                .filter(|pc| pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
                .max_by_key(|pc| pc.get("value").and_then(Value::as_i64).unwrap_or(0))
                .map(|pc| Value::clone(pc));
            pods::admit_priority(object, class, default).err()
        } else if resource.group == "scheduling.k8s.io" && resource.plural == "priorityclasses" {
            let other_default = self.priority_classes().find_map(|pc| {
                let other = pc.pointer("/metadata/name").and_then(Value::as_str)?;
                (other != name && pc.get("globalDefault").and_then(Value::as_bool) == Some(true))
                    .then_some(other)
            });
            pods::admit_priority_class(object, other_default).err()
        } else {
            None
        };
        match refused {
            Some(why) => Err(ApiError::object_forbidden(resource, name, &why)),
            None => Ok(()),
        }
    }

    /// The stored Namespace `name`.
    fn namespace_named(&self, name: &str) -> Option<&Object> {
        self.objects
            .get(&ResourceKey::of("", "namespaces"))?
            .get(name)
    }

    /// The stored namespace of a namespaced object.
    fn namespace_of(&self, object: &Value) -> Option<&Value> {
        let namespace = object.pointer("/metadata/namespace")?.as_str()?;
        self.namespace_named(namespace).map(|ns| &**ns)
    }

    /// The `PodSecurity` admission plugin's refusals (see [`pod_security`]) of a write
    /// (`old` the stored object of an update) that passed validation: a Pod (its main
    /// resource or its ephemeral containers) its namespace's enforce level forbids is a 403;
    /// a Namespace whose `pod-security.kubernetes.io/*` labels do not parse a 422.
    fn admit_pod_security(
        &self,
        resource: &ResourceType,
        name: &str,
        old: Option<&Value>,
        new: &Value,
        subresource: Subresource,
    ) -> Result<(), ApiError> {
        if resource.custom {
            return Ok(());
        }
        if pods::is_pod(resource)
            && matches!(
                subresource,
                Subresource::Main | Subresource::EphemeralContainers
            )
        {
            if let Err(why) = pod_security::admit_pod(self.namespace_of(new), old, new) {
                return Err(ApiError::object_forbidden(resource, name, &why));
            }
        } else if namespaces::is_namespace(resource) && subresource == Subresource::Main {
            let errors = pod_security::namespace_label_errors(old, new);
            if !errors.is_empty() {
                return Err(ApiError::invalid_fields(
                    &resource.qualified_kind(),
                    name,
                    errors,
                ));
            }
        }
        Ok(())
    }

    /// The `PodSecurity` admission plugin's warnings for a write it let through (`old` the
    /// object before an update, `new` the object written): a Pod or a workload's pod
    /// template that breaks its namespace's warn level; the existing Pods that break a
    /// Namespace's raised enforce level.
    pub(crate) fn pod_security_warnings(
        &self,
        resource: &ResourceType,
        old: Option<&Value>,
        new: &Value,
        subresource: Subresource,
    ) -> Vec<String> {
        if resource.custom {
            return Vec::new();
        }
        if pods::is_pod(resource) {
            if !matches!(
                subresource,
                Subresource::Main | Subresource::EphemeralContainers
            ) {
                return Vec::new();
            }
            return pod_security::admit_pod(self.namespace_of(new), old, new).unwrap_or_default();
        }
        if subresource != Subresource::Main {
            return Vec::new();
        }
        if namespaces::is_namespace(resource) {
            let (Some(old), Some(name)) =
                (old, new.pointer("/metadata/name").and_then(Value::as_str))
            else {
                return Vec::new();
            };
            let pods = self.stored_in(&ResourceKey::of("", "pods"), name);
            let pods: Vec<&Value> = pods.iter().map(|pod| &**pod).collect();
            return pod_security::namespace_warnings(old, new, &pods);
        }
        pod_security::admit_pod_controller(
            self.namespace_of(new),
            &resource.group,
            &resource.plural,
            new,
        )
    }

    /// The objects of a type, every namespace's, with their storage keys, in the latest
    /// state.
    pub(crate) fn objects(
        &self,
        resource: &ResourceType,
    ) -> impl Iterator<Item = (&Arc<str>, &Object)> + '_ {
        self.objects_of(resource)
            .into_iter()
            .flat_map(|tree| tree.range(Bound::Unbounded, Bound::Unbounded))
    }

    /// The objects of a namespaced type in `namespace`, in the latest state.
    pub(crate) fn objects_in(&self, resource: &ResourceType, namespace: &str) -> Vec<Object> {
        self.stored_in(&resource.key(), namespace)
    }

    /// The stored objects of the type `key` in `namespace` (their keys start `namespace/`).
    fn stored_in(&self, key: &ResourceKey, namespace: &str) -> Vec<Object> {
        let (lower, upper) = (format!("{namespace}/"), format!("{namespace}0"));
        self.objects
            .get(key)
            .map(|tree| {
                tree.range(Bound::Included(&lower), Bound::Excluded(&upper))
                    .map(|(_, object)| object.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// For a Service, what the real registry allocates (cluster IP, node ports; see
    /// [`services`]), given what the other Services hold. `key` is the object's own.
    fn allocate(
        &self,
        resource: &ResourceType,
        key: &str,
        old: Option<&Value>,
        object: &mut Value,
    ) -> Result<(), ApiError> {
        if resource.custom || !resource.group.is_empty() || resource.kind != "Service" {
            return Ok(());
        }
        let others = self
            .objects_of(resource)
            .into_iter()
            .flat_map(|tree| tree.range(Bound::Unbounded, Bound::Unbounded))
            .filter(|(k, _)| &***k != key)
            .map(|(_, service)| &**service);
        services::allocate(services::Allocated::of(others), old, object).map_err(|errors| {
            ApiError::invalid_fields(
                &resource.qualified_kind(),
                object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                errors,
            )
        })
    }

    /// The object at a key, in the latest state.
    pub(crate) fn get(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        self.objects_of(resource)
            .and_then(|t| t.get(&object_key(resource, namespace, name)))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&resource.qualified_resource(), name))
    }

    /// The retained changes of a resource after `after` up to `until`, oldest first; `None`
    /// when the history no longer reaches back to `after`.
    fn changes_between(
        &self,
        resource: &ResourceKey,
        after: u64,
        until: u64,
    ) -> Option<Vec<Arc<Change>>> {
        if after < self.compacted {
            return None;
        }
        let first = self.history.partition_point(|c| c.revision <= after);
        Some(
            self.history
                .range(first..)
                .take_while(|c| c.revision <= until)
                .filter(|c| c.resource == *resource)
                .cloned()
                .collect(),
        )
    }

    /// Opens a watch. Its events go to the registration's queue; a watch that starts now
    /// reads its initial events from the current snapshot.
    pub(crate) fn watch(
        &mut self,
        filter: Filter,
        start: WatchStart,
    ) -> Result<Registration, ApiError> {
        let queue = Arc::new(Queue::new(self.limits.watch_backlog));
        let mut after = 0;
        let key = filter.resource.key();
        let mut initial = None;
        match start {
            WatchStart::Now {
                initial_events,
                end_bookmark,
            } => {
                if initial_events || end_bookmark {
                    let tree = if initial_events {
                        self.objects.get(&key).cloned().unwrap_or_default()
                    } else {
                        Tree::default()
                    };
                    initial = Some(InitialEvents {
                        tree,
                        filter: filter.clone(),
                        cursor: None,
                        scanned_all: false,
                        ready: VecDeque::new(),
                        revision: self.revision,
                        end_bookmark,
                    });
                }
            }
            // A version the store has not reached: nothing to replay, the changes after it
            // come as they are made (the watch cache's `getAllEventsSinceLocked` serves an
            // empty interval and its watchers skip events up to the version asked for).
            WatchStart::After(revision) if revision > self.revision => after = revision,
            WatchStart::After(revision) => {
                let Some(changes) = self.changes_between(&key, revision, self.revision) else {
                    return Err(ApiError::too_old_resource_version(
                        revision,
                        self.compacted + 1,
                    ));
                };
                for change in changes {
                    let mut gone = None;
                    if let Some((event, object)) = filter.translate(
                        change.event,
                        &change.object,
                        change.previous.as_ref(),
                        &mut gone,
                    ) {
                        // The replay is bounded by the history, not by the backlog.
                        queue.push_unbounded(WatchMessage::Event(event, object));
                    }
                }
            }
        }
        self.next_id += 1;
        let id = self.next_id;
        self.watchers.entry(key).or_default().insert(
            id,
            Watcher {
                filter,
                queue: queue.clone(),
                after,
            },
        );
        self.watch_count += 1;
        Ok(Registration {
            id,
            queue,
            initial,
            after,
        })
    }

    /// Subscribes to every change after `after` (or from now).
    fn subscribe(&mut self, after: Option<u64>) -> Result<Subscription, ApiError> {
        let queue = Arc::new(Queue::new(self.limits.watch_backlog));
        if let Some(after) = after {
            if after > self.revision {
                return Err(ApiError::too_large_resource_version(after, self.revision));
            }
            if after < self.compacted {
                return Err(ApiError::too_old_resource_version(
                    after,
                    self.compacted + 1,
                ));
            }
            let first = self.history.partition_point(|c| c.revision <= after);
            for change in self.history.range(first..) {
                queue.push_unbounded(change.clone());
            }
        }
        self.next_id += 1;
        self.subscribers.insert(self.next_id, queue.clone());
        Ok(Subscription { queue })
    }

    /// The objects whose `ownerReferences` name this UID, sorted.
    pub(crate) fn dependents(&self, owner_uid: &str) -> Vec<ObjectRef> {
        let mut found: Vec<ObjectRef> = self
            .owners
            .get(owner_uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        found.sort();
        found
    }

    /// The object with this UID, if one is stored, and where.
    pub(crate) fn object_by_uid(&self, uid: &str) -> Option<(ObjectRef, Object)> {
        let at = self.uids.get(uid)?;
        let object = self.object_at(at)?;
        Some((at.clone(), object))
    }

    /// The object at a place in the store, if one is there.
    pub(crate) fn object_at(&self, at: &ObjectRef) -> Option<Object> {
        self.objects.get(&at.resource)?.get(&at.key).cloned()
    }

    fn stats(&self) -> ServerStats {
        let (watch_backlog_events, watch_backlog_bytes) = self
            .watchers
            .values()
            .flat_map(BTreeMap::values)
            .map(|w| w.queue.backlog())
            .fold((0, 0), |(e, b), (e2, b2)| (e + e2, b + b2));
        ServerStats {
            revision: self.revision,
            objects: self.objects.values().map(Tree::len).sum(),
            object_bytes: self.object_bytes,
            history_changes: self.history.len(),
            history_bytes: self.history_bytes,
            watches: self.watch_count,
            watch_backlog_events,
            watch_backlog_bytes,
            slow_watches_closed: self.slow_watches_closed,
        }
    }

    /// Keeps the owner and UID indexes in step with a change of one object.
    fn reindex(&mut self, at: &ObjectRef, previous: Option<&Value>, current: Option<&Value>) {
        fn owner_uids(object: Option<&Value>) -> Vec<&str> {
            object
                .and_then(|o| o.pointer("/metadata/ownerReferences"))
                .and_then(Value::as_array)
                .map(|refs| {
                    refs.iter()
                        .filter_map(|r| r.get("uid").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default()
        }
        fn uid(object: Option<&Value>) -> Option<&str> {
            object?.pointer("/metadata/uid")?.as_str()
        }
        let (before, now) = (owner_uids(previous), owner_uids(current));
        if before != now {
            for owner in before.iter().filter(|u| !now.contains(u)) {
                if let Some(set) = self.owners.get_mut(*owner) {
                    set.remove(at);
                    if set.is_empty() {
                        self.owners.remove(*owner);
                    }
                }
            }
            for owner in now.iter().filter(|u| !before.contains(u)) {
                self.owners
                    .entry(Arc::from(*owner))
                    .or_default()
                    .insert(at.clone());
            }
            shrink_map(&mut self.owners);
        }
        let (old_uid, new_uid) = (uid(previous), uid(current));
        if old_uid != new_uid {
            if let Some(old) = old_uid {
                self.uids.remove(old);
                shrink_map(&mut self.uids);
            }
            if let Some(new) = new_uid {
                self.uids.insert(Arc::from(new), at.clone());
            }
        }
    }

    /// Queues a change for every watch and subscriber it concerns.
    fn fan_out(&mut self, change: &Arc<Change>) {
        let mut closed = Vec::new();
        if let Some(watchers) = self.watchers.get(&change.resource) {
            let mut gone = None;
            for (id, watcher) in watchers {
                if change.revision <= watcher.after {
                    continue;
                }
                let Some((event, object)) = watcher.filter.translate(
                    change.event,
                    &change.object,
                    change.previous.as_ref(),
                    &mut gone,
                ) else {
                    continue;
                };
                if let Err(reason) = watcher.queue.push(WatchMessage::Event(event, object)) {
                    closed.push((*id, reason));
                }
            }
        }
        self.forget_watchers(closed);
        self.subscribers.retain(|id, queue| {
            // Only the store holds it: the subscriber is gone.
            if Arc::strong_count(queue) == 1 {
                return false;
            }
            match queue.push(change.clone()) {
                Ok(()) => true,
                Err(reason) => {
                    tracing::debug!(id, ?reason, "a store subscription ended");
                    false
                }
            }
        });
    }

    /// Drops the oldest changes while the history is over its bounds.
    fn trim_history(&mut self) {
        while self.history.len() > self.limits.history_changes
            || self.history_bytes > self.limits.history_bytes
        {
            let Some(old) = self.history.pop_front() else {
                break;
            };
            self.history_bytes -= old.bytes();
            self.compacted = old.revision;
        }
        if self.history.capacity() > 1024
            && self.history.len() * SHRINK_FACTOR < self.history.capacity()
        {
            self.history.shrink_to(self.history.len() * 2);
        }
    }

    /// Records a change at the next revision, tells the watches and publishes the new state.
    fn commit(
        &mut self,
        resource: &ResourceType,
        key: String,
        event: EventType,
        mut object: Value,
        previous: Option<Object>,
    ) -> Object {
        self.revision += 1;
        let revision = self.revision;
        set_meta(&mut object, "resourceVersion", json!(revision.to_string()));
        let object = Object::new(object);
        let resource_key = resource.key();
        let key: Arc<str> = Arc::from(key);
        let objects = Arc::make_mut(&mut self.objects);
        match event {
            EventType::Added | EventType::Modified => {
                objects
                    .entry(resource_key.clone())
                    .or_default()
                    .insert(key.clone(), object.clone());
                self.object_bytes += object.bytes();
            }
            EventType::Deleted => {
                if let Some(tree) = objects.get_mut(&resource_key) {
                    tree.remove(&key);
                    if tree.is_empty() {
                        objects.remove(&resource_key);
                    }
                }
            }
        }
        if let Some(previous) = &previous {
            self.object_bytes -= previous.bytes();
        }
        let at = ObjectRef {
            resource: resource_key.clone(),
            key: key.clone(),
        };
        let current = (event != EventType::Deleted).then_some(object.as_ref());
        self.reindex(&at, previous.as_deref(), current);
        let change = Arc::new(Change {
            revision,
            resource: resource_key,
            key,
            event,
            object: object.clone(),
            previous,
            actor: super::intercept::current_actor(),
        });
        self.history_bytes += change.bytes();
        self.history.push_back(change.clone());
        self.trim_history();
        // Readers first, then the watches, then the bookmarks (see `publish_state`).
        self.publish_state();
        self.fan_out(&change);
        self.publish_revision();
        object
    }

    /// Creates an object (`namespace` is the request's namespace for namespaced types).
    pub(crate) fn create(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        body: Value,
        options: impl Into<WriteOptions>,
    ) -> Result<Object, ApiError> {
        let options = options.into();
        let dry_run = options.dry_run;
        let mut object = check_body(resource, body)?;
        let meta = metadata_mut(&mut object, resource)?;
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // Admission runs before a name is generated: it names the object by its prefix.
        let mut admitted_as = name.clone();
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if generate.is_empty() {
                return Err(validation::name_required(resource));
            }
            admitted_as = generate.to_string();
            // As `names.SimpleNameGenerator`: the prefix is cut to 58 bytes, so that with
            // the 5 random characters a name fits in 63.
            let mut cut = generate.len().min(MAX_GENERATED_PREFIX);
            while !generate.is_char_boundary(cut) {
                cut -= 1;
            }
            name = format!("{}{}", &generate[..cut], random_suffix());
        }
        // apiextensions-apiserver's `forbidCreateAdmission` (since 1.26; a 405 before).
        if resource.terminating {
            return Err(ApiError::object_forbidden(
                resource,
                &admitted_as,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        let namespace = resolve_namespace(resource, namespace, meta, &name)?;
        meta.insert("name".into(), json!(name));
        match &namespace {
            Some(ns) => {
                meta.insert("namespace".into(), json!(ns));
            }
            None => {
                meta.remove("namespace");
            }
        }
        // A resource version the client set: etcd3's `Create` refuses a non-zero one
        // (`ErrResourceVersionSetOnCreate`, a plain error: 500 without a reason) once
        // everything else passed; a dry run (`DryRunnableStorage.Create`) never gets there
        // and answers the object with it.
        let client_version = meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty())
            .map(str::to_string);
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            meta.remove(field);
        }
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        if resource.tracks_generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
        apply_create_defaults(resource, &mut object);
        namespaces::canonicalize(resource, None, &mut object);
        self.admit_priority(resource, &admitted_as, &mut object)?;
        self.admit_class_defaults(resource, &mut object);
        strategy::prepare_create(resource, &mut object, &options);
        namespaces::prepare_create(resource, &mut object);
        let key = object_key(resource, namespace.as_deref(), &name);
        self.allocate(resource, &key, None, &mut object)?;
        validation::validate_create(resource, &object)?;
        self.admit_pod_security(resource, &admitted_as, None, &object, Subresource::Main)?;
        to_stored_schema(resource, &mut object);

        if !dry_run
            && client_version
                .as_deref()
                .and_then(|rv| rv.parse::<u64>().ok())
                .is_some_and(|rv| rv != 0)
        {
            return Err(ApiError::new(
                super::StatusReason::Unknown,
                "resourceVersion should not be set on objects to be created",
            ));
        }
        if self
            .objects_of(resource)
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::already_exists(
                &resource.qualified_resource(),
                &name,
            ));
        }
        if dry_run {
            // Not stored: no resource version at all (the field is omitted, not ""), or the
            // one the client sent.
            if let Some(rv) = client_version
                && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("resourceVersion".into(), json!(rv));
            }
            return Ok(Object::new(object));
        }
        Ok(self.commit(resource, key, EventType::Added, object, None))
    }

    /// Replaces an object (PUT).
    pub(crate) fn update(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        body: Value,
        subresource: Subresource,
        options: impl Into<WriteOptions>,
    ) -> Result<Object, ApiError> {
        let options = options.into();
        let old = self.get(resource, namespace, name)?;
        let mut new = prepare_update(resource, &old, body, subresource, &options)?;
        self.admit_pod_security(resource, name, Some(&old), &new, subresource)?;
        let key = object_key(resource, namespace, name);
        if subresource == Subresource::Main && !pods::is_pod(resource) {
            self.admit_priority(resource, name, &mut new)?;
        }
        self.allocate(resource, &key, Some(&old), &mut new)?;
        Ok(self.write(resource, namespace, name, old, new, options.dry_run))
    }

    /// Patches an object. Server-side apply creates it when missing.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn patch(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        kind: PatchKind,
        patch: &Value,
        subresource: Subresource,
        options: impl Into<WriteOptions>,
    ) -> Result<Object, ApiError> {
        let options = options.into();
        let dry_run = options.dry_run;
        if kind == PatchKind::Strategic && resource.custom {
            return Err(ApiError::new(
                super::StatusReason::UnsupportedMediaType,
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            ));
        }
        if kind == PatchKind::Apply && !patch.is_object() {
            return Err(ApiError::bad_request(
                "apply configuration must be a JSON object",
            ));
        }
        let old = match self.get(resource, namespace, name) {
            Ok(old) => old,
            Err(err) if kind == PatchKind::Apply && subresource == Subresource::Main => {
                // The configuration applied to an empty object must name the URL's
                // (`checkName` after the patch; an update keeps the stored name instead).
                match patch.pointer("/metadata/name").and_then(Value::as_str) {
                    Some(body_name) if body_name == name => {}
                    None | Some("") => return Err(ApiError::name_undeterminable(name)),
                    Some(body_name) => return Err(ApiError::name_mismatch(body_name, name)),
                }
                let mut config = patch.clone();
                if resource_version(&config).is_empty()
                    && let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut)
                {
                    meta.remove("resourceVersion");
                }
                let body = strategy::apply(resource, None, &config, subresource, &options)?;
                let options = WriteOptions {
                    track: false,
                    ..options
                };
                return self
                    .create(resource, namespace, body, options)
                    .map_err(|e| if e.code() == 409 { err } else { e });
            }
            Err(err) => return Err(err),
        };
        // An object stored in a former storage version is patched as the current one (the
        // `None` conversion a custom resource has), so that the patch keeps that version.
        let old = if resource.custom {
            resource.present(&old)
        } else {
            old
        };
        let doc = match kind {
            PatchKind::Apply => {
                // The configuration's resourceVersion is a precondition.
                let wanted = resource_version(patch);
                if !wanted.is_empty() && wanted != resource_version(&old) {
                    return Err(ApiError::modified(&resource.qualified_resource(), name));
                }
                let mut doc = strategy::apply(resource, Some(&old), patch, subresource, &options)?;
                set_meta(&mut doc, "resourceVersion", json!(resource_version(&old)));
                if !doc.is_object() {
                    return Err(ApiError::patch_rejected(
                        "the patched object is not a JSON object",
                    ));
                }
                doc
            }
            _ => patch::patched(resource, old.as_ref().clone(), kind, patch)?,
        };
        let options = WriteOptions {
            track: options.track && kind != PatchKind::Apply,
            ..options
        };
        let mut new = prepare_update(resource, &old, doc, subresource, &options)?;
        self.admit_pod_security(resource, name, Some(&old), &new, subresource)?;
        let key = object_key(resource, namespace, name);
        if subresource == Subresource::Main && !pods::is_pod(resource) {
            self.admit_priority(resource, name, &mut new)?;
        }
        self.allocate(resource, &key, Some(&old), &mut new)?;
        Ok(self.write(resource, namespace, name, old, new, dry_run))
    }

    /// Stores `new` in place of the object, spec and status alike, as the server's own
    /// registry code does (a Pod's binding): no strategy, no field tracking.
    pub(crate) fn replace_whole(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        new: Value,
    ) -> Result<Object, ApiError> {
        let old = self.get(resource, namespace, name)?;
        Ok(self.write(resource, namespace, name, old, new, false))
    }

    /// Stores an updated object unless nothing changed; removing the last
    /// finalizer of an object being deleted deletes it.
    fn write(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        old: Object,
        mut new: Value,
        dry_run: bool,
    ) -> Object {
        set_meta(&mut new, "resourceVersion", json!(resource_version(&old)));
        if new == *old {
            return old;
        }
        if dry_run {
            return Object::new(new);
        }
        let key = object_key(resource, namespace, name);
        let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && namespaces::finalized(resource, &new) {
            // The update that deletes is not stored: it answers with the last stored version.
            let last = resource_version(&old);
            let deleted = self.commit(resource, key, EventType::Deleted, new, Some(old));
            let mut answer = deleted.as_ref().clone();
            set_meta(&mut answer, "resourceVersion", json!(last));
            Object::new(answer)
        } else {
            self.commit(resource, key, EventType::Modified, new, Some(old))
        }
    }
}

/// Gives `result` (the old object with a subresource's part of the write) the write's
/// `metadata.managedFields`, which field tracking computed for it.
fn keep_managed_fields_of(write: &Value, result: &mut Value) {
    keep_meta_of(write, result, "managedFields");
}

/// The storage key of an object: `namespace/name` or `name`.
fn object_key(resource: &ResourceType, namespace: Option<&str>, name: &str) -> String {
    match (resource.namespaced, namespace) {
        (true, Some(ns)) => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// `metadata.resourceVersion` of an object.
pub(crate) fn resource_version(object: &Value) -> String {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn finalizers(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn set_meta(object: &mut Value, field: &str, value: Value) {
    if let Value::Object(map) = object {
        let meta = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(field.to_string(), value);
        }
    }
}

/// Checks a request body is an object of the resource's kind and sets `kind`/`apiVersion`.
fn check_body(resource: &ResourceType, body: Value) -> Result<Value, ApiError> {
    let Value::Object(mut map) = body else {
        return Err(unrecognized(resource, &body));
    };
    if resource.custom {
        custom_type_meta(resource, &map)?;
    }
    if let Some(kind) = map.get("kind") {
        let kind = kind.as_str().unwrap_or("");
        if !kind.is_empty() && kind != resource.kind {
            let api_version = map.get("apiVersion").and_then(Value::as_str);
            return Err(another_kind(
                resource,
                kind,
                api_version.unwrap_or(&resource.api_version()),
            ));
        }
    }
    if let Some(api_version) = map.get("apiVersion") {
        let api_version = api_version.as_str().unwrap_or("");
        if !api_version.is_empty() && api_version != resource.api_version() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                resource.api_version()
            )));
        }
    }
    map.insert("kind".into(), json!(resource.kind));
    map.insert("apiVersion".into(), json!(resource.api_version()));
    Ok(Value::Object(map))
}

/// The 400 of a decoder given JSON that is not an object: Go's JSON cannot read a type from
/// it (`transformDecodeError`, the body summarized as `summarizeData` does: in hex, unless
/// it is an object).
fn unrecognized(resource: &ResourceType, body: &Value) -> ApiError {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    ApiError::unrecognized(
        &resource.kind,
        &go_json::no_type_meta(body),
        &go_json::summarize(&bytes),
    )
}

/// The 400 of a built-in type's decoder given an object of another kind: the scheme makes
/// the kind the body names (if it knows it), then finds no conversion to the type the
/// request is for (`transformDecodeError`).
fn another_kind(resource: &ResourceType, kind: &str, api_version: &str) -> ApiError {
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let known = Registry::builtin().by_kind(api_version, kind).is_some();
    let why = if known {
        // The internal types' Go packages are named after their group's first label (the
        // core group's `core`).
        let package = match resource.group.split('.').next() {
            Some("" | "events") | None => "core",
            Some(first) => first,
        };
        format!(
            "converting ({version}.{kind}) to ({package}.{}): unknown conversion",
            resource.kind
        )
    } else {
        format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        )
    };
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {}: {why}",
        resource.kind
    ))
}

/// A custom resource's `kind` and `apiVersion`, as its validation checks them first
/// (`customResourceValidator.ValidateTypeMeta`): a 422 naming the object's own kind and group
/// when either is not the type's. Unset ones are defaulted by the caller (a request's body
/// without them was refused before, as [`codec::check_custom_type_meta`] refuses it).
///
/// [`codec::check_custom_type_meta`]: super::codec::check_custom_type_meta
fn custom_type_meta(resource: &ResourceType, map: &Map<String, Value>) -> Result<(), ApiError> {
    let text = |field: &str| map.get(field).and_then(Value::as_str).unwrap_or("");
    let (kind, api_version) = (text("kind"), text("apiVersion"));
    let mut errors = Vec::new();
    if !kind.is_empty() && kind != resource.kind {
        errors.push(FieldError::invalid(
            "kind",
            kind,
            &format!("must be {}", resource.kind),
        ));
    }
    let expected = resource.api_version();
    if !api_version.is_empty() && api_version != expected {
        errors.push(FieldError::invalid(
            "apiVersion",
            api_version,
            &format!("must be {expected}"),
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    let kind = if kind.is_empty() {
        &resource.kind
    } else {
        kind
    };
    let group = match api_version.split_once('/') {
        Some((group, _)) => group,
        None if api_version.is_empty() => &resource.group,
        None => "",
    };
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let name = map
        .get("metadata")
        .and_then(|meta| meta.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Err(ApiError::invalid_fields(&qualified, name, errors))
}

fn metadata_mut<'a>(
    object: &'a mut Value,
    resource: &ResourceType,
) -> Result<&'a mut Map<String, Value>, ApiError> {
    let Value::Object(map) = object else {
        return Err(ApiError::bad_request("object is not a JSON object"));
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().ok_or_else(|| {
        ApiError::bad_request(format!(
            "unable to decode {}: metadata must be an object",
            resource.kind
        ))
    })
}

fn resolve_namespace(
    resource: &ResourceType,
    request_namespace: Option<&str>,
    meta: &Map<String, Value>,
    name: &str,
) -> Result<Option<String>, ApiError> {
    let body_namespace = match meta.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(ApiError::bad_request("metadata.namespace must be a string")),
    };
    if !resource.namespaced {
        return Ok(None);
    }
    let Some(namespace) = request_namespace else {
        return Err(ApiError::bad_request(format!(
            "the server could not find the requested resource: {} \"{name}\" is namespaced",
            resource.plural
        )));
    };
    if let Some(body) = body_namespace
        && body != namespace
    {
        return Err(ApiError::namespace_mismatch());
    }
    Ok(Some(namespace.to_string()))
}

fn apply_create_defaults(resource: &ResourceType, object: &mut Value) {
    let default_phase = match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => "Active",
        _ => return,
    };
    if let Value::Object(map) = object {
        let status = map
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(status) = status {
            status
                .entry("phase")
                .or_insert_with(|| json!(default_phase));
        }
    }
}

/// Builds the object an update stores, or the error it fails with.
fn prepare_update(
    resource: &ResourceType,
    old: &Value,
    body: Value,
    subresource: Subresource,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let mut body = body;
    if resource.custom
        && subresource != Subresource::Main
        && let Value::Object(map) = &mut body
    {
        // A custom resource's status strategy keeps all but the status of the stored
        // object, its kind and apiVersion too: the body's are not validated.
        map.remove("kind");
        map.remove("apiVersion");
    }
    let name = old
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    // A custom resource's kind and apiVersion are validated with the object, after the
    // storage's resourceVersion precondition: a stale update of another kind is a 409.
    if resource.custom
        && let Some(rv) = body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        && rv.parse::<u64>().is_ok_and(|number| number != 0)
        && rv != resource_version(old)
    {
        return Err(ApiError::modified(&resource.qualified_resource(), name));
    }
    let mut new = check_body(resource, body)?;
    let meta = metadata_mut(&mut new, resource)?;
    match meta.get("name").and_then(Value::as_str) {
        None | Some("") => {}
        Some(body_name) if body_name == name => {}
        Some(body_name) => return Err(ApiError::name_mismatch(body_name, name)),
    }
    let old_namespace = old.pointer("/metadata/namespace").and_then(Value::as_str);
    if let Some(ns) = meta.get("namespace").and_then(Value::as_str)
        && !ns.is_empty()
        && Some(ns) != old_namespace
    {
        return Err(ApiError::namespace_mismatch());
    }
    match meta.get("resourceVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(rv)) if rv.is_empty() => {}
        Some(Value::String(rv)) => {
            let Ok(number) = rv.parse::<u64>() else {
                return Err(ApiError::bad_request(format!(
                    "metadata.resourceVersion: Invalid value: \"{rv}\": must be a decimal integer"
                )));
            };
            // `0` is no precondition: the generic store reads it as an unset version, and
            // an update without one is unconditional (`kubectl replace` of a manifest
            // carrying `resourceVersion: "0"`).
            if number != 0 && *rv != resource_version(old) {
                return Err(ApiError::modified(&resource.qualified_resource(), name));
            }
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "metadata.resourceVersion must be a string",
            ));
        }
    }

    strategy::prepare_update(resource, old, &mut new, subresource, options);
    let mut result = match subresource {
        // A custom resource's status strategy keeps nothing of the write but its status.
        Subresource::Status if resource.custom => {
            let mut result = old.clone();
            replace_field(&mut result, "status", new.get("status").cloned());
            keep_managed_fields_of(&new, &mut result);
            result
        }
        // A built-in type's status strategy resets the spec (every field but metadata and
        // status), and what its kind's resets of metadata: a Pod's owner references, an
        // apps workload's labels. The rest of metadata (labels, annotations, finalizers)
        // is written as sent.
        Subresource::Status => status_write_of_builtin(resource, old, new),
        Subresource::EphemeralContainers => {
            let mut result = old.clone();
            let wanted = new.pointer("/spec/ephemeralContainers").cloned();
            if let Some(spec) = result.get_mut("spec").and_then(Value::as_object_mut) {
                match wanted {
                    Some(wanted) => spec.insert("ephemeralContainers".into(), wanted),
                    None => spec.remove("ephemeralContainers"),
                };
            }
            keep_managed_fields_of(&new, &mut result);
            pods::keep_ephemeral_containers(old, &result)?;
            result
        }
        Subresource::Approval => super::certificates::approval_update(old, &new),
        Subresource::Main | Subresource::Finalize => {
            if resource.status_subresource {
                replace_field(&mut new, "status", old.get("status").cloned());
            }
            new
        }
    };
    // A uid the body sets must be the object's (`ValidateObjectMetaUpdate`; an empty one is
    // the object's). kube-apiserver validates an update's metadata twice (the common
    // fields, then the strategy's), so the cause is there twice.
    let sent_uid = result.pointer("/metadata/uid").and_then(Value::as_str);
    if let Some(sent) = sent_uid.filter(|uid| !uid.is_empty())
        && Some(sent) != old.pointer("/metadata/uid").and_then(Value::as_str)
    {
        let error = FieldError::invalid("metadata.uid", sent, "field is immutable");
        return Err(ApiError::invalid_fields(
            &resource.qualified_kind(),
            name,
            vec![error.clone(), error],
        ));
    }
    // Fields only the server sets.
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        keep_meta_of(old, &mut result, field);
    }
    strategy::finish_update(resource, old, subresource, &mut result);
    namespaces::canonicalize(resource, Some((old, subresource)), &mut result);
    if super::certificates::is_csr(resource) {
        let errors = super::certificates::validate_update(old, &result, subresource);
        if !errors.is_empty() {
            return Err(ApiError::invalid_fields(
                &resource.qualified_kind(),
                name,
                errors,
            ));
        }
    }
    validation::validate_update_of(resource, old, &result, subresource)?;
    if subresource == Subresource::Main
        && resource.tracks_generation
        && spec_changed(resource, old, &result)
    {
        let generation = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        set_meta(&mut result, "generation", json!(generation + 1));
    }
    to_stored_schema(resource, &mut result);
    Ok(result)
}

/// A custom resource written through a version other than its storage version (validated by
/// that version's schema, see `written_as` in `server.rs`) as the storage version stores it:
/// pruned and defaulted by the storage version's schema, as the real server's conversion to
/// the storage version and its decoding from storage do.
fn to_stored_schema(resource: &ResourceType, object: &mut Value) {
    if let Some(schema) = &resource.stored_schema {
        schema.prune(object);
        schema.apply_defaults(object);
    }
}

/// What a write to a built-in type's `status` subresource stores: `new`, with every
/// top-level field but `metadata` and `status` as `old` has it, and the metadata its kind's
/// status strategy resets (`podStatusStrategy`: owner references; the apps workloads':
/// labels) as `old` has it.
fn status_write_of_builtin(resource: &ResourceType, old: &Value, mut new: Value) -> Value {
    let kept = ["apiVersion", "kind", "metadata", "status"];
    if let (Some(old), Some(result)) = (old.as_object(), new.as_object_mut()) {
        result.retain(|key, _| kept.contains(&key.as_str()) || old.contains_key(key));
        for (key, value) in old {
            if !kept.contains(&key.as_str()) {
                result.insert(key.clone(), value.clone());
            }
        }
    }
    let reset: &[&str] = match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => &["ownerReferences"],
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => &["labels"],
        _ => &[],
    };
    for field in reset {
        keep_meta_of(old, &mut new, field);
    }
    new
}

/// Sets `result`'s `metadata.<field>` to `from`'s (removed if `from` has none).
fn keep_meta_of(from: &Value, result: &mut Value, field: &str) {
    let value = from.get("metadata").and_then(|m| m.get(field)).cloned();
    if let Some(Value::Object(meta)) = result.get_mut("metadata") {
        match value {
            Some(value) => meta.insert(field.to_string(), value),
            None => meta.remove(field),
        };
    }
}

fn replace_field(object: &mut Value, field: &str, value: Option<Value>) {
    if let Value::Object(map) = object {
        match value {
            Some(v) => map.insert(field.to_string(), v),
            None => map.remove(field),
        };
    }
}

/// Whether anything but metadata (and status, for types with a status subresource) changed.
fn spec_changed(resource: &ResourceType, old: &Value, new: &Value) -> bool {
    let ignored = |k: &str| {
        k == "metadata"
            || k == "kind"
            || k == "apiVersion"
            || (resource.status_subresource && k == "status")
    };
    let strip = |v: &Value| -> Map<String, Value> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !ignored(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    };
    strip(old) != strip(new)
}

/// The longest `generateName` prefix kept (apiserver's `maxGeneratedNameLength`: 63 less
/// the random suffix).
const MAX_GENERATED_PREFIX: usize = 58;

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A random version-4 UUID.
pub(crate) fn new_uid() -> String {
    let mut bits: u128 = rand::random();
    bits = (bits & !(0xf << 76)) | (0x4 << 76);
    bits = (bits & !(0x3 << 62)) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests;
