//! Field ownership and server-side apply, as kube-apiserver's field manager
//! (`k8s.io/apimachinery/pkg/util/managedfields`, on `sigs.k8s.io/structured-merge-diff/v4`)
//! keeps them in `metadata.managedFields`:
//!
//! - every write records which manager set which fields: [`track_update`] for creates,
//!   updates and patches (operation `Update`, one entry per manager, API version and
//!   subresource, the fields this write added or changed taken from every other manager),
//!   [`apply`] for server-side apply (operation `Apply`, one entry per manager and
//!   subresource);
//! - an apply that changes a field another manager owns fails with `409 Conflict`, one cause
//!   per field (`conflict with "m1": .spec.replicas`), unless forced, which takes the fields
//!   over; fields a manager applied before and no longer applies are removed unless another
//!   manager owns them;
//! - lists merge as their schema says (`x-kubernetes-list-type` `map` by their keys, `set` by
//!   value, `atomic` as a whole; built-in types as their OpenAPI says), see [`types`];
//! - `metadata.managedFields: [{}]` in an update resets the ownership; an update of an object
//!   that has none does not start tracking it (as the real server: only a create or an apply
//!   does).
//!
//! - `kubectl apply --server-side` after client-side applies: an apply by the `kubectl`
//!   manager may take over, without conflicts, the fields the object's last-applied annotation
//!   still describes, and keeps that annotation up to date (`lastAppliedManager`,
//!   `lastAppliedUpdater`).
//!
//! What the real server does that this does not: converting ownership between versions of a
//! type.

use serde_json::{Map, Value, json};

use super::go_json;
use super::status::{ApiError, StatusReason};

mod path;
pub(crate) mod types;
mod walk;

pub(crate) use path::Set;
use path::{Element, Path};
pub(crate) use types::Shape;
use walk::{compare, ensure_named_fields, field_set, merge, remove_items};

/// The most `Update` entries kept; older ones are merged into `ancient-changes`.
const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// Who writes: the manager and where, as `managedFields` entries record it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Writer {
    /// The field manager (`fieldManager`, or the user agent's first word; `unknown` if empty).
    pub manager: String,
    /// The `apiVersion` of the request.
    pub api_version: String,
    /// `status` or `scale` for writes to a subresource.
    pub subresource: Option<String>,
}

impl Writer {
    /// A writer of the main resource.
    pub(crate) fn new(manager: &str, api_version: &str) -> Self {
        Self {
            manager: if manager.is_empty() {
                "unknown".into()
            } else {
                manager.to_string()
            },
            api_version: api_version.to_string(),
            subresource: None,
        }
    }

    /// The same writer, writing to a subresource.
    pub(crate) fn on(mut self, subresource: Option<&str>) -> Self {
        self.subresource = subresource.map(str::to_string);
        self
    }
}

/// The field manager a request's `User-Agent` stands for when it names none: the text before
/// the first `/`, printable characters only, at most 128 bytes (`kubectl/v1.32 ...` is
/// `kubectl`).
pub(crate) fn manager_from_user_agent(user_agent: &str) -> String {
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// The longest field manager name accepted.
pub(crate) const MAX_MANAGER_LENGTH: usize = 128;

/// Checks a `fieldManager` parameter: at most 128 bytes, printable characters only.
pub(crate) fn validate_manager(manager: &str) -> Vec<super::status::FieldError> {
    use super::status::FieldError;
    let mut errors = Vec::new();
    if manager.len() > MAX_MANAGER_LENGTH {
        errors.push(FieldError::too_long("fieldManager", MAX_MANAGER_LENGTH));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            errors.push(FieldError::invalid(
                "fieldManager",
                manager,
                &format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    errors
}

/// Whether a `managedFields` entry is `Apply`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
    time: Option<String>,
    set: Set,
}

impl Entry {
    /// Whether two entries are the same manager: `Update` entries are per API version,
    /// `Apply` ones are not.
    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    fn new(writer: &Writer, operation: Operation) -> Entry {
        Entry {
            manager: writer.manager.clone(),
            operation,
            api_version: writer.api_version.clone(),
            subresource: writer.subresource.clone().unwrap_or_default(),
            time: None,
            set: Set::default(),
        }
    }

    /// How conflict messages name the manager (`"m1"`, `"m1" using v1`).
    fn describe(&self) -> String {
        let mut text = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            text.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            text.push_str(&format!(" using {}", self.api_version));
        }
        text
    }

    fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
            "fieldsType": "FieldsV1",
            "fieldsV1": self.set.to_fields_v1(),
        });
        if let Some(time) = &self.time {
            entry["time"] = json!(time);
        }
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }

    fn from_json(value: &Value, index: usize) -> Result<Entry, String> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or("");
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".into()),
        };
        if text("apiVersion").is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match text("fieldsType") {
            "FieldsV1" => {}
            "" => {
                return Err(format!(
                    "missing fieldsType in managed fields entry {index}"
                ));
            }
            other => {
                return Err(format!(
                    "invalid fieldsType {other:?} in managed fields entry {index}"
                ));
            }
        }
        let set = match value.get("fieldsV1") {
            None | Some(Value::Null) => Set::default(),
            Some(fields) => Set::from_fields_v1(fields)?,
        };
        Ok(Entry {
            manager: text("manager").to_string(),
            operation,
            api_version: text("apiVersion").to_string(),
            subresource: text("subresource").to_string(),
            time: value
                .get("time")
                .and_then(Value::as_str)
                .map(str::to_string),
            set,
        })
    }
}

/// The entries of an object, in the order they were read.
#[derive(Clone, Debug, Default)]
struct Managed(Vec<Entry>);

impl Managed {
    fn decode(list: Option<&Value>) -> Result<Managed, String> {
        let Some(Value::Array(items)) = list else {
            return Ok(Managed::default());
        };
        let mut managed = Managed::default();
        for (i, item) in items.iter().enumerate() {
            let entry = Entry::from_json(item, i)?;
            managed.0.retain(|e| !e.same_manager(&entry));
            managed.0.push(entry);
        }
        Ok(managed)
    }

    fn of(object: &Value) -> Result<Managed, String> {
        Managed::decode(object.pointer("/metadata/managedFields"))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, entry: &Entry) -> Option<usize> {
        self.0.iter().position(|e| e.same_manager(entry))
    }

    /// Entries sorted as the real server writes them: `Apply` before `Update`, then by time
    /// (seconds), manager, API version and subresource.
    fn encode(&self) -> Value {
        let mut entries = self.0.clone();
        entries.sort_by(|a, b| {
            let seconds = |e: &Entry| {
                e.time
                    .as_deref()
                    .and_then(super::time::parse_rfc3339)
                    .map_or(0, |t| t.as_second())
            };
            a.operation
                .cmp(&b.operation)
                .then_with(|| seconds(a).cmp(&seconds(b)))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        Value::Array(entries.iter().map(Entry::to_json).collect())
    }

    fn drop_empty(&mut self) {
        self.0.retain(|e| !e.set.is_empty());
    }

    /// Merges the oldest `Update` entries into `ancient-changes` (one per API version) while
    /// there are more than ten.
    fn cap_updates(&mut self) {
        let mut updaters: Vec<usize> = (0..self.0.len())
            .filter(|i| self.0[*i].operation == Operation::Update)
            .collect();
        if updaters.len() <= MAX_UPDATE_MANAGERS {
            return;
        }
        let seconds = |e: &Entry| {
            e.time
                .as_deref()
                .and_then(super::time::parse_rfc3339)
                .map_or(0, |t| t.as_second())
        };
        updaters.sort_by(|a, b| {
            let (x, y) = (&self.0[*a], &self.0[*b]);
            seconds(x)
                .cmp(&seconds(y))
                .then_with(|| x.manager.cmp(&y.manager))
        });
        let mut length = updaters.len();
        let mut first_of_version: Vec<(String, usize)> = Vec::new();
        let mut gone = Vec::new();
        for &i in &updaters {
            if length <= MAX_UPDATE_MANAGERS {
                break;
            }
            let version = self.0[i].api_version.clone();
            match first_of_version.iter().find(|(v, _)| *v == version) {
                Some((_, first)) => {
                    let first = *first;
                    let merged = self.0[first].set.union(&self.0[i].set);
                    let time = self.0[i].time.clone();
                    let bucket = &mut self.0[first];
                    bucket.manager = ANCIENT_CHANGES.into();
                    bucket.subresource = String::new();
                    bucket.set = merged;
                    bucket.time = time;
                    gone.push(i);
                    length -= 1;
                }
                None => first_of_version.push((version, i)),
            }
        }
        gone.sort_unstable();
        for i in gone.into_iter().rev() {
            self.0.remove(i);
        }
    }

    /// Writes the entries into an object (removing `managedFields` when there are none).
    fn write_to(&self, object: &mut Value) {
        let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        if self.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), self.encode());
        }
    }
}

/// The fields only the server sets: never owned (structured-merge-diff's strip set).
fn strip_set() -> Set {
    let mut set = Set::default();
    for field in ["apiVersion", "kind", "metadata"] {
        set.insert(&[Element::Field(field.into())]);
    }
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[
            Element::Field("metadata".into()),
            Element::Field(field.into()),
        ]);
    }
    set
}

/// The fields a write through the main resource or a subresource does not own because the
/// server resets them (`status` through the main resource of a type with a status
/// subresource, `spec` through `status`).
pub(crate) fn reset_fields(status_subresource: bool, subresource: Option<&str>) -> Set {
    let mut set = Set::default();
    match subresource {
        Some("status") => set.insert(&[Element::Field("spec".into())]),
        None if status_subresource => set.insert(&[Element::Field("status".into())]),
        _ => {}
    }
    set
}

/// `set` with a top-level field (and everything under it) added.
pub(crate) fn with_top_level_field(mut set: Set, field: &str) -> Set {
    set.insert(&[Element::Field(field.into())]);
    set
}

fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    copy
}

/// Whether an update's `managedFields` asks for a reset: `[{}]`.
fn is_reset(list: Option<&Value>) -> bool {
    matches!(list, Some(Value::Array(items)) if items.len() == 1 && items[0] == json!({}))
}

/// The core of an update (structured-merge-diff's `Updater.Update`): the fields this write
/// added or changed become the writer's, taken from every other manager; removed fields are
/// owned by nobody. Returns whether the writer's entry changed.
fn update_managed(
    managed: &mut Managed,
    shape: Shape<'_>,
    live: &Value,
    new: &Value,
    writer: &Writer,
    ignored: &Set,
    now: &str,
) -> Result<(), String> {
    let comparison = compare(shape, live, new)?;
    let changed = comparison
        .modified
        .union(&comparison.added)
        .recursive_difference(ignored);
    let removed = comparison.removed.recursive_difference(ignored);
    let mut mine = changed.difference(&strip_set());
    let scale = writer.subresource.as_deref() == Some("scale");
    if scale && !mine.is_empty() {
        // A write through `scale` is tracked on the `Scale` (`ScaleHandler`): its entries are
        // the object's entries that own the replicas field (`ToScale`). With none, the `Scale`
        // has no managed fields and its update is not tracked: nothing changes. Replicas of
        // 0 are left out of the `Scale` (`omitempty`): the field is removed, owned by nobody.
        if !managed
            .0
            .iter()
            .any(|e| !e.set.intersection(&mine).is_empty())
        {
            return Ok(());
        }
        if mine.paths().iter().all(|path| is_zero_at(new, path)) {
            mine = Set::default();
        }
    }
    for entry in &mut managed.0 {
        entry.set = entry.set.difference(&changed).difference(&removed);
    }
    if !mine.is_empty() {
        let entry = Entry::new(writer, Operation::Update);
        // The scale handler gives the writer's entry on the object the time the object's
        // entries had for it (`ToParent`): none for a new one; an old one keeps its own.
        let time = (!scale).then(|| now.to_string());
        match managed.position(&entry) {
            Some(i) => {
                managed.0[i].set = managed.0[i].set.union(&mine);
                if time.is_some() {
                    managed.0[i].time = time;
                }
            }
            None => managed.0.push(Entry {
                time,
                set: mine,
                ..entry
            }),
        }
    }
    managed.drop_empty();
    managed.cap_updates();
    Ok(())
}

/// Whether an entry of `object`'s managed fields owns the field at `path` (struct fields,
/// outermost first). Managed fields that do not decode own nothing.
pub(crate) fn owned(object: &Value, path: &[&str]) -> bool {
    let path: Vec<Element> = path.iter().map(|f| Element::Field((*f).into())).collect();
    Managed::of(object).is_ok_and(|managed| managed.0.iter().any(|e| e.set.has(&path)))
}

/// Whether the value at `path` (struct fields only) of `object` is the number 0.
fn is_zero_at(object: &Value, path: &Path) -> bool {
    let mut value = object;
    for element in &path.0 {
        let Element::Field(name) = element else {
            return false;
        };
        match value.get(name) {
            Some(child) => value = child,
            None => return false,
        }
    }
    value.as_f64() == Some(0.0)
}

/// Records a create, update or patch in `new` (the object to store, as the request left it):
/// `managedFields` from `new` if it carries valid ones (`[{}]` resets them), else from `live`
/// (the stored object; for a create, an empty object of the type), then this write's fields.
/// An existing object without managed fields is not tracked (until an apply). If the fields
/// cannot be worked out (an object the schema cannot read), `new` keeps `live`'s.
pub(crate) fn track_update(
    shape: Shape<'_>,
    live: &Value,
    new: &mut Value,
    writer: &Writer,
    ignored: &Set,
    now: &str,
) {
    let requested = new.pointer("/metadata/managedFields");
    let live_managed = || Managed::of(live).unwrap_or_default();
    let mut managed = if writer.subresource.is_some() {
        live_managed()
    } else if is_reset(requested) {
        Managed::default()
    } else {
        match Managed::decode(requested) {
            Ok(m) if !m.is_empty() => m,
            _ => live_managed(),
        }
    };
    let live_plain = without_managed_fields(live);
    let new_plain = without_managed_fields(new);
    let existing = live.pointer("/metadata/uid").is_some();
    if managed.is_empty() && existing {
        Managed::default().write_to(new);
        return;
    }
    match update_managed(
        &mut managed,
        shape,
        &live_plain,
        &new_plain,
        writer,
        ignored,
        now,
    ) {
        Ok(()) => managed.write_to(new),
        Err(err) => {
            tracing::debug!(%err, "managed fields not updated: the object does not fit its schema");
            live_managed().write_to(new);
        }
    }
}

/// Why an apply failed.
#[derive(Debug)]
pub(crate) enum ApplyError {
    /// Fields other managers own would change (`409`): (manager description, path).
    Conflicts(Vec<(String, Path)>),
    /// The request is wrong (`400`).
    BadRequest(String),
    /// The configuration does not fit the schema (`500`, as the real server answers).
    Typed(String),
}

impl ApplyError {
    /// The `Status` the real server answers with; `object` names the object for typed errors
    /// (`/w4; example.com/v1, Kind=Widget`).
    pub(crate) fn into_api_error(self, object: &str) -> ApiError {
        match self {
            ApplyError::Conflicts(conflicts) => conflict_error(conflicts),
            ApplyError::BadRequest(message) => ApiError::bad_request(message),
            ApplyError::Typed(err) => ApiError::new(
                StatusReason::Unknown,
                format!("failed to create typed patch object ({object}): {err}"),
            ),
        }
    }
}

fn conflict_error(mut conflicts: Vec<(String, Path)>) -> ApiError {
    conflicts.sort();
    let message = match conflicts.as_slice() {
        [(manager, path)] => {
            format!("Apply failed with 1 conflict: conflict with {manager}: {path}")
        }
        many => {
            let mut lines = Vec::new();
            let mut current: Option<&str> = None;
            for (manager, path) in many {
                if current != Some(manager.as_str()) {
                    lines.push(format!("conflicts with {manager}:"));
                    current = Some(manager);
                }
                lines.push(format!("- {path}"));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                many.len(),
                lines.join("\n")
            )
        }
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(manager, path)| {
            json!({
                "reason": "FieldManagerConflict",
                "message": format!("conflict with {manager}"),
                "field": path.to_string(),
            })
        })
        .collect();
    ApiError::new(StatusReason::Conflict, message).with_details(json!({ "causes": causes }))
}

/// Server-side apply of `config` to `live` (the stored object, or an empty object of the type
/// when it does not exist yet): the object to store with its `managedFields` (the live object
/// when only the ownership changed, or nothing), or why it fails.
pub(crate) fn apply(
    shape: Shape<'_>,
    live: &Value,
    config: &Value,
    writer: &Writer,
    ignored: &Set,
    force: bool,
    now: &str,
) -> Result<Value, ApplyError> {
    let version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if version != writer.api_version {
        return Err(ApplyError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            writer.api_version
        )));
    }
    if config
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|m| !m.is_empty())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    walk::check_config(shape, config).map_err(ApplyError::Typed)?;
    let mut managed = Managed::of(live)
        .map_err(|err| ApplyError::Typed(format!("failed to decode managed fields: {err}")))?;
    let live = without_managed_fields(live);
    let typed = |err: String| ApplyError::Typed(err);
    if managed.is_empty() && live.pointer("/metadata/uid").is_some() {
        // Until an object is applied to, nobody owns its fields: they become
        // `before-first-apply`'s, so an apply cannot silently take them.
        let empty = json!({"apiVersion": live["apiVersion"], "kind": live["kind"]});
        let before = Writer {
            manager: BEFORE_FIRST_APPLY.into(),
            ..writer.clone()
        };
        update_managed(&mut managed, shape, &empty, &live, &before, ignored, now).map_err(typed)?;
    }
    let merged = merge(shape, Some(&live), Some(config))
        .map_err(typed)?
        .unwrap_or_else(|| json!({}));
    let key = Entry::new(writer, Operation::Apply);
    let last = managed.position(&key).map(|i| managed.0[i].set.clone());
    let applied = field_set(shape, config)
        .map_err(typed)?
        .recursive_difference(ignored);
    match managed.position(&key) {
        Some(i) => {
            managed.0[i].set = applied;
            managed.0[i].api_version = writer.api_version.clone();
        }
        None => managed.0.push(Entry {
            set: applied,
            ..key.clone()
        }),
    }
    let merged = match &last {
        Some(last) if !last.is_empty() => prune(shape, &merged, &managed, last).map_err(typed)?,
        _ => merged,
    };
    let comparison = compare(shape, &live, &merged).map_err(typed)?;
    let changed = comparison
        .modified
        .union(&comparison.added)
        .recursive_difference(ignored);
    let removed = comparison.removed.recursive_difference(ignored);
    let mut conflicts = Vec::new();
    for entry in managed.0.iter().filter(|e| !e.same_manager(&key)) {
        for path in entry.set.intersection(&changed).paths() {
            conflicts.push((entry.describe(), path));
        }
    }
    if !force && !conflicts.is_empty() {
        // `kubectl apply --server-side` after client-side applies: the fields the
        // last-applied annotation still describes are taken over as if forced.
        let allowed = (writer.manager == KUBECTL)
            .then(|| allowed_by_last_applied(shape, &live, &writer.api_version))
            .flatten();
        let Some(allowed) = allowed else {
            return Err(ApplyError::Conflicts(conflicts));
        };
        conflicts.retain(|(_, path)| !allowed.has(&path.0));
        if !conflicts.is_empty() {
            return Err(ApplyError::Conflicts(conflicts));
        }
    }
    for entry in managed.0.iter_mut().filter(|e| !e.same_manager(&key)) {
        entry.set = entry.set.difference(&changed).difference(&removed);
    }
    let i = managed.position(&key).unwrap_or(0);
    managed.0[i].set = managed.0[i].set.difference(&strip_set());
    // As the real server, the applier's time moves only when the object changes; an apply
    // through `scale` has the time the object's entries had for it (`ScaleHandler.ToParent`):
    // none for a new entry, an old one's own.
    let unchanged = walk::values_equal(&live, &merged);
    if !unchanged && writer.subresource.as_deref() != Some("scale") {
        managed.0[i].time = Some(now.to_string());
    }
    managed.drop_empty();
    managed.cap_updates();
    let mut result = if unchanged { live } else { merged };
    if writer.manager == KUBECTL {
        sync_last_applied(&mut result, config);
    }
    managed.write_to(&mut result);
    Ok(result)
}

/// The field manager `kubectl apply --server-side` applies as by default: only its applies
/// take over and update the client-side apply annotation (any other manager opts out).
const KUBECTL: &str = "kubectl";

/// The annotation client-side apply keeps the last applied configuration in.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn last_applied(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// The conflicts an apply by `kubectl` may override (`lastAppliedManager`): the fields of the
/// live object's last-applied configuration, of the same version, whose values the live
/// object still has. `None` without a usable annotation.
fn allowed_by_last_applied(shape: Shape<'_>, live: &Value, api_version: &str) -> Option<Set> {
    let last: Value = serde_json::from_str(last_applied(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let fields = field_set(shape, &last).ok()?;
    let comparison = compare(shape, &last, live).ok()?;
    Some(
        fields
            .difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

/// `lastAppliedUpdater`: when the object keeps a last-applied annotation, an apply by
/// `kubectl` replaces it with the applied configuration (without that annotation), encoded as
/// Go encodes an `Unstructured`: keys sorted, a newline at the end.
fn sync_last_applied(result: &mut Value, config: &Value) {
    if last_applied(result).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(annotations) = applied
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
    }
    let encoded = format!("{}\n", sorted(&applied));
    if let Some(annotations) = result
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.insert(LAST_APPLIED.into(), Value::String(encoded));
    }
}

/// `value` as Go encodes an `Unstructured`'s content: keys sorted, integers exact (they
/// decode to int64) and other numbers as Go writes a float64 (`2.0` is `2`).
fn sorted(value: &Value) -> String {
    match value {
        Value::Object(map) => go_json::map_with(map, sorted),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(sorted).collect();
            format!("[{}]", items.join(","))
        }
        Value::String(text) => go_json::go_string(text),
        Value::Number(n) if !n.is_f64() => n.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), go_json::float),
        other => other.to_string(),
    }
}

/// Removes what the applier applied last time and no longer applies, unless another manager
/// owns it (structured-merge-diff's `prune`, with `addBackOwnedItems` and
/// `addBackDanglingItems`).
fn prune(shape: Shape<'_>, merged: &Value, managed: &Managed, last: &Set) -> Result<Value, String> {
    let empty = || Value::Object(Map::new());
    let ensure = |set: &Set| ensure_named_fields(shape, set);
    let last = ensure(last);
    let pruned = remove_items(shape, merged, &last).unwrap_or_else(empty);
    // Add back what any manager owns.
    let owned = managed
        .0
        .iter()
        .fold(Set::default(), |all, e| all.union(&e.set));
    let merged_set = ensure(&field_set(shape, merged)?);
    let pruned_set = ensure(&field_set(shape, &pruned)?);
    let pruned = remove_items(
        shape,
        merged,
        &merged_set.difference(&pruned_set.union(&ensure(&owned))),
    )
    .unwrap_or_else(empty);
    // Only remove what the applier owned.
    let pruned_set = ensure(&field_set(shape, &pruned)?);
    Ok(remove_items(
        shape,
        merged,
        &merged_set.difference(&pruned_set).intersection(&last),
    )
    .unwrap_or_else(empty))
}

#[cfg(test)]
mod tests;
