//! The versioned object store: objects of every type, one revision counter
//! shared by all of them (like etcd's), a bounded event history for watch
//! resumption and consistent paginated snapshots, and the open watches.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::patch::{self, PatchKind};
use super::resource::{ResourceKey, ResourceType};
use super::selector::{FieldSelector, LabelSelector};
use super::status::ApiError;
use super::time::now_rfc3339;
use super::validation;

/// A stored object. Stored objects are immutable; changes replace them.
pub(crate) type Object = Arc<Value>;

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

/// One change, as retained in history.
#[derive(Debug)]
struct HistoryEntry {
    revision: u64,
    resource: ResourceKey,
    key: String,
    event: EventType,
    /// The object after the change (for deletions: the deleted object at the deletion revision).
    object: Object,
    /// The object before the change, if it existed.
    previous: Option<Object>,
}

/// What a watch stream is sent.
#[derive(Debug)]
pub(crate) enum WatchMessage {
    /// An object event.
    Event(EventType, Object),
    /// A bookmark at a revision, possibly the end of the initial events.
    Bookmark {
        revision: u64,
        initial_events_end: bool,
    },
    /// An `ERROR` event carrying a `Status`; the stream ends after it.
    Error(Value),
    /// A raw line (used to inject malformed events).
    Raw(String),
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

    /// The event a watcher with this filter sees for a change, if any.
    fn translate(
        &self,
        event: EventType,
        object: &Object,
        previous: Option<&Object>,
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
                        let mut gone = previous?.as_ref().clone();
                        set_meta(
                            &mut gone,
                            "resourceVersion",
                            json!(resource_version(object)),
                        );
                        Some((EventType::Deleted, Arc::new(gone)))
                    }
                    (false, false) => None,
                }
            }
        }
    }
}

struct Watcher {
    id: u64,
    filter: Filter,
    tx: mpsc::UnboundedSender<WatchMessage>,
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
    /// Encodes like the real server: base64 of `{"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}`.
    pub(crate) fn encode(&self) -> String {
        let json = json!({"v": "meta.k8s.io/v1", "rv": self.revision, "start": self.start});
        base64::engine::general_purpose::URL_SAFE.encode(json.to_string())
    }

    pub(crate) fn decode(token: &str) -> Result<Self, ApiError> {
        let invalid =
            |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE
            .decode(token)
            .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
            .map_err(|_| {
                invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
            })?;
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| invalid("not JSON"))?;
        if value["v"] != "meta.k8s.io/v1" {
            return Err(invalid("server does not recognize this encoded key"));
        }
        let revision = value["rv"]
            .as_u64()
            .ok_or_else(|| invalid("incorrect encoded start resourceVersion"))?;
        let start = value["start"]
            .as_str()
            .ok_or_else(|| invalid("missing start key"))?
            .to_string();
        Ok(Self { revision, start })
    }
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
}

/// `DeleteOptions` fields the server honours.
#[derive(Clone, Debug, Default)]
pub(crate) struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// The result of a delete.
#[derive(Debug)]
pub(crate) enum DeleteOutcome {
    /// The object is gone (this is its final state).
    Deleted(Object),
    /// The object has finalizers and was only marked with a deletionTimestamp.
    Pending(Object),
}

/// All objects, history and watches.
pub(crate) struct Store {
    revision: u64,
    objects: HashMap<ResourceKey, BTreeMap<String, Object>>,
    history: VecDeque<HistoryEntry>,
    /// Every change after this revision is retained in `history`.
    compacted: u64,
    history_limit: usize,
    watchers: Vec<Watcher>,
    next_watcher_id: u64,
}

impl Store {
    pub(crate) fn new(history_limit: usize) -> Self {
        Self {
            revision: 0,
            objects: HashMap::new(),
            history: VecDeque::new(),
            compacted: 0,
            history_limit: history_limit.max(1),
            watchers: Vec::new(),
            next_watcher_id: 0,
        }
    }

    /// The latest revision.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The oldest revision a watch can resume from.
    pub(crate) fn compacted_revision(&self) -> u64 {
        self.compacted
    }

    /// The number of open watches.
    pub(crate) fn watch_count(&self) -> usize {
        self.watchers.len()
    }

    /// Drops all history: watches and continue tokens from before now get 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.revision;
    }

    /// Removes all objects and history. The loss counts as a change (the
    /// revision moves on) whose events are not retained, so resuming from
    /// any earlier version gets `410 Gone`.
    pub(crate) fn reset(&mut self) {
        self.objects.clear();
        self.revision += 1;
        self.compact();
    }

    /// Closes every open watch (their streams end).
    pub(crate) fn drop_watches(&mut self) {
        self.watchers.clear();
    }

    /// Closes one watch.
    pub(crate) fn remove_watcher(&mut self, id: u64) {
        self.watchers.retain(|w| w.id != id);
    }

    /// Sends a raw line to every open watch.
    pub(crate) fn send_raw(&mut self, line: &str) -> usize {
        self.watchers
            .retain(|w| w.tx.send(WatchMessage::Raw(line.to_string())).is_ok());
        self.watchers.len()
    }

    /// Queues a bookmark at the current revision on a watch; false when the watch is gone.
    pub(crate) fn bookmark(&mut self, id: u64) -> bool {
        let revision = self.revision;
        let Some(index) = self.watchers.iter().position(|w| w.id == id) else {
            return false;
        };
        let message = WatchMessage::Bookmark {
            revision,
            initial_events_end: false,
        };
        if self.watchers[index].tx.send(message).is_err() {
            self.watchers.swap_remove(index);
            return false;
        }
        true
    }

    fn objects_of(&self, resource: &ResourceType) -> Option<&BTreeMap<String, Object>> {
        self.objects.get(&resource.key())
    }

    /// The object at a key.
    pub(crate) fn get(
        &self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Object, ApiError> {
        self.objects_of(resource)
            .and_then(|m| m.get(&object_key(resource, namespace, name)))
            .cloned()
            .ok_or_else(|| ApiError::not_found(&resource.plural, name))
    }

    /// The objects of a resource at a past revision (rebuilt from history).
    fn snapshot(
        &self,
        resource: &ResourceType,
        revision: u64,
    ) -> Result<BTreeMap<String, Object>, ApiError> {
        let mut state = self.objects_of(resource).cloned().unwrap_or_default();
        if revision >= self.revision {
            return Ok(state);
        }
        if revision < self.compacted {
            return Err(ApiError::too_old_resource_version(
                revision,
                self.compacted + 1,
            ));
        }
        let key = resource.key();
        for entry in self.history.iter().rev() {
            if entry.revision <= revision {
                break;
            }
            if entry.resource != key {
                continue;
            }
            match &entry.previous {
                Some(previous) => state.insert(entry.key.clone(), previous.clone()),
                None => state.remove(&entry.key),
            };
        }
        Ok(state)
    }

    /// One page of a list.
    pub(crate) fn list(&self, request: &ListRequest) -> Result<ListPage, ApiError> {
        let resource = &request.filter.resource;
        let (revision, start) = match &request.continue_token {
            Some(token) => {
                // Revision 0 marks an inconsistent continuation (handed out
                // with an expiry): it reads the latest state.
                if token.revision != 0 && token.revision < self.compacted {
                    let fresh = ContinueToken {
                        revision: 0,
                        start: token.start.clone(),
                    };
                    return Err(ApiError::new(
                        super::StatusReason::Expired,
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter, or use the continue token \
                         in this response to retrieve the remainder of the results. Continuing with the provided \
                         token results in an inconsistent list - objects that were created, modified, or deleted \
                         between the time the first chunk was returned and now may show up in the list.",
                    )
                    .with_metadata(json!({"continue": fresh.encode()})));
                }
                if token.revision > self.revision {
                    return Err(ApiError::bad_request(
                        "continue key is not valid: resource version is in the future",
                    ));
                }
                let revision = if token.revision == 0 {
                    self.revision
                } else {
                    token.revision
                };
                (revision, Some(token.start.as_str()))
            }
            None => {
                let revision = match request.version {
                    ReadVersion::MostRecent | ReadVersion::Any => self.revision,
                    ReadVersion::NotOlderThan(n) => {
                        if n > self.revision {
                            return Err(ApiError::too_large_resource_version(n, self.revision));
                        }
                        self.revision
                    }
                    ReadVersion::Exact(n) => {
                        if n > self.revision {
                            return Err(ApiError::too_large_resource_version(n, self.revision));
                        }
                        if n < self.compacted {
                            return Err(ApiError::too_old_resource_version(n, self.compacted + 1));
                        }
                        n
                    }
                };
                (revision, None)
            }
        };
        let state = self.snapshot(resource, revision)?;
        let range = match start {
            Some(start) => state
                .range::<str, _>((std::ops::Bound::Excluded(start), std::ops::Bound::Unbounded)),
            None => state.range::<str, _>(..),
        };
        let mut items = Vec::new();
        let mut matching = range.filter(|(_, object)| request.filter.matches(object));
        let limit = request.limit.filter(|l| *l > 0);
        let mut last_key = None;
        for (key, object) in matching.by_ref() {
            items.push(object.clone());
            last_key = Some(key.clone());
            if limit.is_some_and(|l| items.len() >= l) {
                break;
            }
        }
        let remaining = matching.count();
        let continue_token = (remaining > 0).then(|| ContinueToken {
            revision,
            start: last_key.unwrap_or_default(),
        });
        let remaining = (remaining > 0 && !request.filter.has_selectors()).then_some(remaining);
        Ok(ListPage {
            items,
            revision,
            continue_token,
            remaining,
        })
    }

    /// Opens a watch; queued messages go to `tx`. Returns the watch id.
    pub(crate) fn watch(
        &mut self,
        filter: Filter,
        start: WatchStart,
        tx: mpsc::UnboundedSender<WatchMessage>,
    ) -> Result<u64, ApiError> {
        match start {
            WatchStart::Now {
                initial_events,
                end_bookmark,
            } => {
                if initial_events && let Some(objects) = self.objects_of(&filter.resource) {
                    for object in objects.values().filter(|o| filter.matches(o)) {
                        let _ = tx.send(WatchMessage::Event(EventType::Added, object.clone()));
                    }
                }
                if end_bookmark {
                    let _ = tx.send(WatchMessage::Bookmark {
                        revision: self.revision,
                        initial_events_end: true,
                    });
                }
            }
            WatchStart::After(revision) => {
                if revision < self.compacted {
                    return Err(ApiError::too_old_resource_version(
                        revision,
                        self.compacted + 1,
                    ));
                }
                if revision > self.revision {
                    return Err(ApiError::too_large_resource_version(
                        revision,
                        self.revision,
                    ));
                }
                let key = filter.resource.key();
                for entry in self
                    .history
                    .iter()
                    .filter(|e| e.revision > revision && e.resource == key)
                {
                    if let Some((event, object)) =
                        filter.translate(entry.event, &entry.object, entry.previous.as_ref())
                    {
                        let _ = tx.send(WatchMessage::Event(event, object));
                    }
                }
            }
        }
        self.next_watcher_id += 1;
        let id = self.next_watcher_id;
        self.watchers.push(Watcher { id, filter, tx });
        Ok(id)
    }

    /// Records a change at the next revision and tells the watches.
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
        let object = Arc::new(object);
        let resource_key = resource.key();
        let objects = self.objects.entry(resource_key.clone()).or_default();
        match event {
            EventType::Added | EventType::Modified => {
                objects.insert(key.clone(), object.clone());
            }
            EventType::Deleted => {
                objects.remove(&key);
            }
        }
        self.watchers.retain(|w| {
            if w.filter.resource.key() != resource_key {
                return true;
            }
            match w.filter.translate(event, &object, previous.as_ref()) {
                Some((event, object)) => w.tx.send(WatchMessage::Event(event, object)).is_ok(),
                None => !w.tx.is_closed(),
            }
        });
        self.history.push_back(HistoryEntry {
            revision,
            resource: resource_key,
            key,
            event,
            object: object.clone(),
            previous,
        });
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.revision;
            }
        }
        object
    }

    /// Creates an object (`namespace` is the request's namespace for namespaced types).
    pub(crate) fn create(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        body: Value,
        dry_run: bool,
    ) -> Result<Object, ApiError> {
        let mut object = check_body(resource, body)?;
        let meta = metadata_mut(&mut object, resource)?;
        let mut name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            let generate = meta
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if generate.is_empty() {
                return Err(validation::name_required(resource));
            }
            name = format!("{generate}{}", random_suffix());
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
        validation::validate_create(resource, &object)?;

        let key = object_key(resource, namespace.as_deref(), &name);
        if self
            .objects_of(resource)
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::already_exists(&resource.plural, &name));
        }
        if dry_run {
            set_meta(&mut object, "resourceVersion", json!(""));
            return Ok(Arc::new(object));
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
        dry_run: bool,
    ) -> Result<Object, ApiError> {
        let old = self.get(resource, namespace, name)?;
        let new = prepare_update(resource, &old, body, subresource)?;
        Ok(self.write(resource, namespace, name, old, new, dry_run))
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
        dry_run: bool,
    ) -> Result<Object, ApiError> {
        if kind == PatchKind::Strategic && resource.custom {
            return Err(ApiError::new(
                super::StatusReason::UnsupportedMediaType,
                "strategic merge patch is not supported for custom resources",
            ));
        }
        let old = match self.get(resource, namespace, name) {
            Ok(old) => old,
            Err(err) if kind == PatchKind::Apply && subresource == Subresource::Main => {
                let mut body = patch.clone();
                if body.is_object() {
                    set_meta(&mut body, "name", json!(name));
                }
                return self
                    .create(resource, namespace, body, dry_run)
                    .map_err(|e| if e.code() == 409 { err } else { e });
            }
            Err(err) => return Err(err),
        };
        let mut doc = old.as_ref().clone();
        let invalid = |why: String| ApiError::patch_rejected(&why);
        match kind {
            PatchKind::Merge => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request("merge patch must be a JSON object"));
                }
                patch::merge_patch(&mut doc, patch);
            }
            PatchKind::Strategic => {
                patch::strategic_merge_patch(&mut doc, patch).map_err(invalid)?;
            }
            PatchKind::Json => {
                patch::json_patch(&mut doc, patch)
                    .map_err(patch::JsonPatchError::into_api_error)?;
            }
            PatchKind::Apply => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request(
                        "apply configuration must be a JSON object",
                    ));
                }
                // Approximation of server-side apply: merge the applied
                // configuration (maps recursively, keyed lists by key).
                let mut config = patch.clone();
                if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
                patch::strategic_merge_patch(&mut doc, &config).map_err(invalid)?;
            }
        }
        if !doc.is_object() {
            return Err(invalid("the patched object is not a JSON object".into()));
        }
        let new = prepare_update(resource, &old, doc, subresource)?;
        Ok(self.write(resource, namespace, name, old, new, dry_run))
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
            return Arc::new(new);
        }
        let key = object_key(resource, namespace, name);
        let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
        if deleting && finalizers(&new).is_empty() {
            self.commit(resource, key, EventType::Deleted, new, Some(old))
        } else {
            self.commit(resource, key, EventType::Modified, new, Some(old))
        }
    }

    /// Deletes an object, or marks it when it has finalizers.
    pub(crate) fn delete(
        &mut self,
        resource: &ResourceType,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<DeleteOutcome, ApiError> {
        let old = self.get(resource, namespace, name)?;
        if let Some(uid) = &options.uid {
            let actual = old
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("");
            if uid != actual {
                return Err(ApiError::conflict(
                    &resource.plural,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    ),
                ));
            }
        }
        if let Some(rv) = &options.resource_version {
            let actual = resource_version(&old);
            if *rv != actual {
                return Err(ApiError::conflict(
                    &resource.plural,
                    name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                ));
            }
        }
        let key = object_key(resource, namespace, name);
        if !finalizers(&old).is_empty() {
            if old.pointer("/metadata/deletionTimestamp").is_some() || dry_run {
                return Ok(DeleteOutcome::Pending(old));
            }
            let mut marked = old.as_ref().clone();
            set_meta(&mut marked, "deletionTimestamp", json!(now_rfc3339()));
            set_meta(&mut marked, "deletionGracePeriodSeconds", json!(0));
            let marked = self.commit(resource, key, EventType::Modified, marked, Some(old));
            return Ok(DeleteOutcome::Pending(marked));
        }
        if dry_run {
            return Ok(DeleteOutcome::Deleted(old));
        }
        let last = old.as_ref().clone();
        let deleted = self.commit(resource, key, EventType::Deleted, last, Some(old));
        Ok(DeleteOutcome::Deleted(deleted))
    }

    /// The names (namespace, name) of the current objects a filter selects.
    pub(crate) fn select(&self, filter: &Filter) -> Vec<(Option<String>, String)> {
        self.objects_of(&filter.resource)
            .map(|m| {
                m.values()
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
            })
            .unwrap_or_default()
    }
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
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format - accepted media types include: application/json",
        ));
    };
    if let Some(kind) = map.get("kind") {
        let kind = kind.as_str().unwrap_or("");
        if !kind.is_empty() && kind != resource.kind {
            return Err(ApiError::bad_request(format!(
                "the kind of the object ({kind}) does not match the expected kind ({})",
                resource.kind
            )));
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
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(Some(namespace.to_string()))
}

fn apply_create_defaults(resource: &ResourceType, object: &mut Value) {
    let default_phase = match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => "Active",
        ("", "Pod") => "Pending",
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
) -> Result<Value, ApiError> {
    let mut new = check_body(resource, body)?;
    let name = old
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let meta = metadata_mut(&mut new, resource)?;
    match meta.get("name").and_then(Value::as_str) {
        None | Some("") => {}
        Some(body_name) if body_name == name => {}
        Some(body_name) => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
    }
    let old_namespace = old.pointer("/metadata/namespace").and_then(Value::as_str);
    if let Some(ns) = meta.get("namespace").and_then(Value::as_str)
        && !ns.is_empty()
        && Some(ns) != old_namespace
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match meta.get("resourceVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(rv)) if rv.is_empty() => {}
        Some(Value::String(rv)) => {
            if rv.parse::<u64>().is_err() {
                return Err(ApiError::bad_request(format!(
                    "metadata.resourceVersion: Invalid value: \"{rv}\": must be a decimal integer"
                )));
            }
            if *rv != resource_version(old) {
                return Err(ApiError::conflict(
                    &format!("{}{}", resource.plural, group_suffix(resource)),
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "metadata.resourceVersion must be a string",
            ));
        }
    }

    let mut result = match subresource {
        Subresource::Status => {
            let mut result = old.clone();
            replace_field(&mut result, "status", new.get("status").cloned());
            result
        }
        Subresource::Main => {
            if resource.status_subresource {
                replace_field(&mut new, "status", old.get("status").cloned());
            }
            new
        }
    };
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
        let old_value = old.get("metadata").and_then(|m| m.get(field)).cloned();
        if let Value::Object(map) = &mut result
            && let Some(Value::Object(meta)) = map.get_mut("metadata")
        {
            match old_value {
                Some(v) => meta.insert(field.to_string(), v),
                None => meta.remove(field),
            };
        }
    }
    validation::validate_update(resource, old, &result)?;
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
    Ok(result)
}

/// `.group` for grouped resources, empty for the core group (`deployments.apps`).
pub(crate) fn group_suffix(resource: &ResourceType) -> String {
    if resource.group.is_empty() {
        String::new()
    } else {
        format!(".{}", resource.group)
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

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|_| ALPHABET[rand::random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// A random version-4 UUID.
fn new_uid() -> String {
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
mod tests {
    use super::*;
    use crate::apiserver::resource::Registry;

    fn pods() -> Arc<ResourceType> {
        Registry::builtin().by_path("", "v1", "pods").unwrap()
    }

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"app": "x"}}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn uids_look_like_uuids() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        assert_ne!(uid, new_uid());
    }

    #[test]
    fn create_sets_server_fields() {
        let mut store = Store::new(100);
        let created = store.create(&pods(), Some("ns"), pod("a"), false).unwrap();
        assert_eq!(created["kind"], "Pod");
        assert_eq!(created["metadata"]["namespace"], "ns");
        assert_eq!(created["metadata"]["resourceVersion"], "1");
        assert_eq!(created["metadata"]["generation"], 1);
        assert!(created["metadata"]["uid"].is_string());
        assert_eq!(created["status"]["phase"], "Pending");
        let err = store
            .create(&pods(), Some("ns"), pod("a"), false)
            .unwrap_err();
        assert_eq!(err.code(), 409);
        let err = store
            .create(&pods(), Some("ns"), json!({"metadata": {}}), false)
            .unwrap_err();
        assert_eq!(err.code(), 422);
        let generated = store
            .create(
                &pods(),
                Some("ns"),
                json!({"metadata": {"generateName": "w-"}}),
                false,
            )
            .unwrap();
        assert!(
            generated["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with("w-")
        );
    }

    #[test]
    fn update_conflicts_and_generation() {
        let mut store = Store::new(100);
        let rt = pods();
        let created = store.create(&rt, Some("ns"), pod("a"), false).unwrap();
        let mut stale = created.as_ref().clone();
        let mut change = created.as_ref().clone();
        change["metadata"]["labels"]["app"] = json!("y");
        let updated = store
            .update(&rt, Some("ns"), "a", change, Subresource::Main, false)
            .unwrap();
        assert_eq!(
            updated["metadata"]["generation"], 1,
            "labels don't bump generation"
        );
        stale["spec"]["nodeName"] = json!("n2");
        let err = store
            .update(&rt, Some("ns"), "a", stale, Subresource::Main, false)
            .unwrap_err();
        assert_eq!(err.code(), 409);
        let mut spec = updated.as_ref().clone();
        spec["spec"]["nodeName"] = json!("n2");
        spec["status"]["phase"] = json!("Running");
        let updated = store
            .update(&rt, Some("ns"), "a", spec, Subresource::Main, false)
            .unwrap();
        assert_eq!(updated["metadata"]["generation"], 2);
        assert_eq!(
            updated["status"]["phase"], "Pending",
            "status is ignored on the main resource"
        );
        let mut status = updated.as_ref().clone();
        status["status"]["phase"] = json!("Running");
        status["spec"]["nodeName"] = json!("ignored");
        let updated = store
            .update(&rt, Some("ns"), "a", status, Subresource::Status, false)
            .unwrap();
        assert_eq!(updated["status"]["phase"], "Running");
        assert_eq!(updated["spec"]["nodeName"], "n2");
        assert_eq!(updated["metadata"]["generation"], 2);
        // No-op updates don't bump the revision.
        let rv = store.revision();
        store
            .update(
                &rt,
                Some("ns"),
                "a",
                updated.as_ref().clone(),
                Subresource::Main,
                false,
            )
            .unwrap();
        assert_eq!(store.revision(), rv);
    }

    #[test]
    fn finalizers_delay_deletion() {
        let mut store = Store::new(100);
        let rt = pods();
        let mut body = pod("a");
        body["metadata"]["finalizers"] = json!(["example.com/f"]);
        store.create(&rt, Some("ns"), body, false).unwrap();
        let outcome = store
            .delete(&rt, Some("ns"), "a", &DeleteOptions::default(), false)
            .unwrap();
        let DeleteOutcome::Pending(marked) = outcome else {
            panic!("expected pending deletion");
        };
        assert!(marked["metadata"]["deletionTimestamp"].is_string());
        let mut cleared = marked.as_ref().clone();
        cleared["metadata"]["finalizers"] = json!([]);
        store
            .update(&rt, Some("ns"), "a", cleared, Subresource::Main, false)
            .unwrap();
        assert_eq!(store.get(&rt, Some("ns"), "a").unwrap_err().code(), 404);
    }

    #[test]
    fn snapshots_and_pagination() {
        let mut store = Store::new(100);
        let rt = pods();
        for name in ["a", "b", "c"] {
            store.create(&rt, Some("ns"), pod(name), false).unwrap();
        }
        let request = |limit, token| ListRequest {
            filter: Filter::all(rt.clone(), None),
            version: ReadVersion::MostRecent,
            limit,
            continue_token: token,
        };
        let first = store.list(&request(Some(2), None)).unwrap();
        assert_eq!(first.items.len(), 2);
        assert_eq!(first.revision, 3);
        assert_eq!(first.remaining, Some(1));
        store
            .delete(&rt, Some("ns"), "c", &DeleteOptions::default(), false)
            .unwrap();
        store.create(&rt, Some("ns"), pod("d"), false).unwrap();
        let token = first.continue_token.unwrap();
        let token = ContinueToken::decode(&token.encode()).unwrap();
        let second = store.list(&request(Some(2), Some(token.clone()))).unwrap();
        let names: Vec<_> = second
            .items
            .iter()
            .map(|o| o["metadata"]["name"].clone())
            .collect();
        assert_eq!(
            names,
            [json!("c")],
            "the snapshot at revision 3 still has c and not d"
        );
        assert!(second.continue_token.is_none());
        store.compact();
        let err = store.list(&request(Some(2), Some(token))).unwrap_err();
        assert_eq!(err.code(), 410);
    }

    #[test]
    fn exact_reads() {
        let mut store = Store::new(2);
        let rt = pods();
        for name in ["a", "b", "c", "d"] {
            store.create(&rt, Some("ns"), pod(name), false).unwrap();
        }
        let request = |version| ListRequest {
            filter: Filter::all(rt.clone(), None),
            version,
            limit: None,
            continue_token: None,
        };
        assert_eq!(
            store
                .list(&request(ReadVersion::Exact(3)))
                .unwrap()
                .items
                .len(),
            3
        );
        assert_eq!(
            store
                .list(&request(ReadVersion::Exact(1)))
                .unwrap_err()
                .code(),
            410
        );
        assert_eq!(
            store
                .list(&request(ReadVersion::Exact(9)))
                .unwrap_err()
                .code(),
            504
        );
        assert_eq!(
            store
                .list(&request(ReadVersion::NotOlderThan(9)))
                .unwrap_err()
                .code(),
            504
        );
        assert_eq!(store.compacted_revision(), 2);
    }

    #[test]
    fn reset_makes_every_earlier_version_too_old() {
        let mut store = Store::new(100);
        let rt = pods();
        store.create(&rt, Some("ns"), pod("a"), false).unwrap();
        let before = store.revision();
        store.reset();
        assert!(store.revision() > before);
        assert_eq!(store.get(&rt, Some("ns"), "a").unwrap_err().code(), 404);
        let (tx, _rx) = mpsc::unbounded_channel();
        let filter = Filter::all(rt.clone(), None);
        let err = store
            .watch(filter.clone(), WatchStart::After(before), tx.clone())
            .unwrap_err();
        assert_eq!(err.code(), 410);
        store
            .watch(filter, WatchStart::After(store.revision()), tx)
            .unwrap();
    }

    #[test]
    fn watch_replays_history_and_filters() {
        let mut store = Store::new(100);
        let rt = pods();
        store.create(&rt, Some("ns"), pod("a"), false).unwrap();
        let mut filter = Filter::all(rt.clone(), Some("ns".into()));
        filter.labels = LabelSelector::parse("app=x").unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        store.watch(filter, WatchStart::After(0), tx).unwrap();
        let mut relabel = store.get(&rt, Some("ns"), "a").unwrap().as_ref().clone();
        relabel["metadata"]["labels"]["app"] = json!("other");
        store
            .update(&rt, Some("ns"), "a", relabel, Subresource::Main, false)
            .unwrap();
        let events: Vec<_> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|m| match m {
                WatchMessage::Event(e, o) => (e, resource_version(&o)),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            events,
            [
                (EventType::Added, "1".to_string()),
                (EventType::Deleted, "2".to_string())
            ]
        );
    }
}
