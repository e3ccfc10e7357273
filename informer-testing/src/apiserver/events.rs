//! `events.k8s.io/v1` Events: a second view of the core v1 Events, as kube-apiserver serves
//! it (the two share one storage, `cohabitating resources`): an Event written through either
//! API is read, listed, watched, updated, patched and deleted through both, with the same name
//! and resource version.
//!
//! Objects are stored as core v1 Events and converted field by field as
//! `pkg/apis/events/v1/conversion.go` converts them (`regarding` is `involvedObject`, `note`
//! is `message`, `reportingController` is `reportingComponent`, the `deprecated*` fields are
//! `source`, `firstTimestamp`, `lastTimestamp` and `count`; `eventTime`, `series`, `action`,
//! `reason`, `related` and `type` are the same), each side written as Go's JSON writes its
//! struct (`eventTime: null`, `regarding: {}`, `deprecatedSource: {}` and the deprecated
//! timestamps' `null` are always there; empty `omitempty` strings are not). A patch sent to
//! events.k8s.io applies to the object in the events.k8s.io shape. Writes through
//! events.k8s.io are validated as `ValidateEventCreate` and `ValidateEventUpdate` validate a
//! request of that version (`pkg/apis/core/validation/events.go`), and its field selectors
//! are the converted labels (`regarding.name`, `reportingController`, ...).

use serde_json::{Map, Value, json};

use super::patch::{self, PatchKind};
use super::resource::ResourceType;
use super::status::{ApiError, FieldError};
use super::storage::{Object, Store, Subresource, WriteOptions};
use super::validation;

/// The API group of the view.
pub(crate) const GROUP: &str = "events.k8s.io";

/// events.k8s.io/v1's names of the fields whose core v1 names differ.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The field selectors of events.k8s.io/v1 Events (`AddFieldLabelConversionsForEvent`).
pub(crate) const FIELDS: [(&str, &str); 11] = [
    ("regarding.kind", ""),
    ("regarding.namespace", ""),
    ("regarding.name", ""),
    ("regarding.uid", ""),
    ("regarding.apiVersion", ""),
    ("regarding.resourceVersion", ""),
    ("regarding.fieldPath", ""),
    ("reason", ""),
    ("reportingController", ""),
    ("source", ""),
    ("type", ""),
];

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Whether `resource` is the events.k8s.io/v1 view of core Events.
pub(crate) fn is_view(resource: &ResourceType) -> bool {
    !resource.custom && resource.group == GROUP && resource.kind == "Event"
}

/// Whether `resource` is an Event type (core v1 or the view).
fn is_event(resource: &ResourceType) -> bool {
    !resource.custom && resource.kind == "Event" && (resource.group.is_empty() || is_view(resource))
}

/// The JSON path of an Event field selector's value in a stored (core v1) Event, and the
/// field its value falls back to when empty (`source`: the reporting controller, as
/// `ToSelectableFields` has it); `None` for the types that are not Events.
pub(crate) fn stored_field_path(
    resource: &ResourceType,
    label: &str,
) -> Option<(String, Option<&'static str>)> {
    if !is_event(resource) {
        return None;
    }
    Some(match label {
        "source" => ("source.component".into(), Some("reportingComponent")),
        "reportingController" => ("reportingComponent".into(), None),
        label => match label.strip_prefix("regarding.") {
            Some(rest) => (format!("involvedObject.{rest}"), None),
            None => (label.to_string(), None),
        },
    })
}

fn rename(key: &str, from_events: bool) -> &str {
    RENAMED
        .iter()
        .find_map(|(events, core)| match from_events {
            true if *events == key => Some(*core),
            false if *core == key => Some(*events),
            _ => None,
        })
        .unwrap_or(key)
}

/// An events.k8s.io/v1 Event (or an apply configuration of one) in the core v1 shape:
/// fields renamed, nothing added. Names of the other shape (a core `message` sent to
/// events.k8s.io) are not fields of the type and are dropped.
pub(crate) fn rename_to_core(object: &mut Value) {
    rename_object(object, true);
}

fn rename_object(object: &mut Value, from_events: bool) {
    let Value::Object(map) = object else {
        return;
    };
    let (own_version, other_version) = if from_events {
        ("events.k8s.io/v1", "v1")
    } else {
        ("v1", "events.k8s.io/v1")
    };
    let mut out = Map::new();
    for (key, value) in std::mem::take(map) {
        let foreign = RENAMED.iter().any(|(events, core)| {
            let other = if from_events { core } else { events };
            *other == key
        });
        if foreign {
            continue;
        }
        let value = match key.as_str() {
            "apiVersion" if value.as_str() == Some(own_version) => json!(other_version),
            _ => value,
        };
        out.insert(rename(&key, from_events).to_string(), value);
    }
    *map = out;
}

/// Sets the fields Go's JSON always writes of a struct (`default`) where they are missing,
/// and drops the `omitempty` scalars that hold their zero.
fn go_shape(object: &mut Value, always: &[(&str, Value)], omit_empty: &[&str]) {
    let Value::Object(map) = object else {
        return;
    };
    for (key, zero) in always {
        map.entry(key.to_string()).or_insert_with(|| zero.clone());
    }
    for key in omit_empty {
        if map
            .get(*key)
            .is_some_and(|v| v.as_str() == Some("") || v.as_i64() == Some(0) || v.is_null())
        {
            map.remove(*key);
        }
    }
}

/// A stored core v1 Event as events.k8s.io/v1 serves it.
pub(crate) fn from_core(object: &Value) -> Value {
    let mut object = object.clone();
    rename_object(&mut object, false);
    go_shape(
        &mut object,
        &[
            ("eventTime", Value::Null),
            ("regarding", json!({})),
            ("deprecatedSource", json!({})),
            ("deprecatedFirstTimestamp", Value::Null),
            ("deprecatedLastTimestamp", Value::Null),
        ],
        &[
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "note",
            "type",
            "deprecatedCount",
        ],
    );
    object
}

/// An events.k8s.io/v1 Event as core v1 stores it (the fields Go writes of the core struct
/// included: `involvedObject`, `source`, the timestamps, the reporting fields).
pub(crate) fn to_core(object: &Value) -> Value {
    let mut object = object.clone();
    rename_object(&mut object, true);
    core_shape(&mut object);
    object
}

fn core_shape(object: &mut Value) {
    go_shape(
        object,
        &[
            ("involvedObject", json!({})),
            ("source", json!({})),
            ("firstTimestamp", Value::Null),
            ("lastTimestamp", Value::Null),
            ("eventTime", Value::Null),
            ("reportingComponent", json!("")),
            ("reportingInstance", json!("")),
        ],
        &["message", "reason", "type", "action", "count"],
    );
}

/// A value with its zeros left out (`null`, `""`, `0`, `false`, empty objects and lists,
/// recursively): how Go compares what it decoded (an absent field is its zero).
fn zeroless(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) if s.is_empty() => Value::Null,
        Some(Value::Bool(false)) => Value::Null,
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Value::Null,
        Some(Value::Array(items)) if items.is_empty() => Value::Null,
        Some(Value::Object(map)) => {
            let kept: Map<String, Value> = map
                .iter()
                .map(|(k, v)| (k.clone(), zeroless(Some(v))))
                .filter(|(_, v)| !v.is_null())
                .collect();
            if kept.is_empty() {
                Value::Null
            } else {
                Value::Object(kept)
            }
        }
        Some(other) => other.clone(),
    }
}

/// The fields of a written Event that mean what the stored one's do keep the stored form
/// (an update through events.k8s.io that changes nothing is no change).
fn keep_unchanged(old: &Value, new: &mut Value) {
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return;
    };
    let keys: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| !matches!(k.as_str(), "metadata" | "apiVersion" | "kind"))
        .cloned()
        .collect();
    for key in keys {
        if zeroless(old.get(&key)) == zeroless(new.get(&key)) {
            match old.get(&key) {
                Some(value) => new.insert(key, value.clone()),
                None => new.remove(&key),
            };
        }
    }
}

/// Sets the request's namespace where the object names none, as the store will (validation
/// compares it with the object's).
fn in_namespace(object: &mut Value, namespace: Option<&str>) {
    if let (Some(namespace), Some(Value::Object(meta))) = (namespace, object.get_mut("metadata"))
        && meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    {
        meta.insert("namespace".into(), json!(namespace));
    }
}

fn str_of<'a>(event: &'a Value, pointer: &str) -> &'a str {
    event.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn is_unset(event: &Value, pointer: &str) -> bool {
    zeroless(event.pointer(pointer)).is_null()
}

/// `legacyValidateEvent`: what every Event must pass, through either API. A core v1 write is
/// checked by this alone (`ValidateEventCreate` and `ValidateEventUpdate` of that version),
/// and names `reportingController` by its v1 field, `source`.
pub(crate) fn validate_core(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    legacy(event, "source", &mut errors);
    errors
}

/// `legacyValidateEvent`, with `controller` the name the request's version gives
/// `reportingController`.
fn legacy(event: &Value, controller_field: &str, errors: &mut Vec<FieldError>) {
    let namespace = str_of(event, "/metadata/namespace");
    let involved = str_of(event, "/involvedObject/namespace");
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            involved,
            "does not match event.namespace",
        )
    };
    if is_unset(event, "/eventTime") {
        if involved.is_empty() {
            if !namespace.is_empty() && namespace != "default" {
                errors.push(mismatch());
            }
        } else if namespace != involved {
            errors.push(mismatch());
        }
        return;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    let controller = str_of(event, "/reportingComponent");
    if controller.is_empty() {
        errors.push(FieldError::required(controller_field, ""));
    }
    for message in validation::qualified_name_messages(controller) {
        errors.push(FieldError::invalid(controller_field, controller, &message));
    }
    let lengths = [
        ("reportingInstance", REPORTING_INSTANCE_LIMIT, true),
        ("action", ACTION_LIMIT, true),
        ("reason", REASON_LIMIT, true),
        ("message", NOTE_LIMIT, false),
    ];
    for (field, limit, required) in lengths {
        let value = str_of(event, &format!("/{field}"));
        if required && value.is_empty() {
            errors.push(FieldError::required(field, ""));
        }
        if value.len() > limit {
            errors.push(FieldError::invalid(
                field,
                "",
                &format!("can have at most {limit} characters"),
            ));
        }
    }
}

/// `validateV1EventSeries`.
fn series(event: &Value, errors: &mut Vec<FieldError>) {
    if event.get("series").is_none_or(Value::is_null) {
        return;
    }
    if event
        .pointer("/series/count")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        < 2
    {
        errors.push(FieldError::invalid(
            "series.count",
            "",
            "should be at least 2",
        ));
    }
    if is_unset(event, "/series/lastObservedTime") {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
}

/// `ValidateEventCreate` for a request to events.k8s.io/v1 (the object in the core shape).
fn create_errors(event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    legacy(event, "reportingController", &mut errors);
    series(event, &mut errors);
    if is_unset(event, "/eventTime") {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = str_of(event, "/type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(FieldError::invalid(
            "type",
            "",
            &format!("has invalid value: {kind}"),
        ));
    }
    for field in ["firstTimestamp", "lastTimestamp", "count"] {
        if !is_unset(event, &format!("/{field}")) {
            errors.push(FieldError::invalid(field, "", "needs to be unset"));
        }
    }
    if !str_of(event, "/source/component").is_empty() || !str_of(event, "/source/host").is_empty() {
        errors.push(FieldError::invalid("source", "", "needs to be unset"));
    }
    errors
}

/// `ValidateEventUpdate` for a request to events.k8s.io/v1 (both objects in the core shape):
/// only `series` (and metadata) may change.
fn update_errors(old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    legacy(new, "reportingController", &mut errors);
    if zeroless(old.get("series")) != zeroless(new.get("series")) {
        series(new, &mut errors);
    }
    let immutable = [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
        // Checked twice, as the real validation does.
        ("reason", "reason"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
    ];
    for (field, path) in immutable {
        if zeroless(old.get(field)) != zeroless(new.get(field)) {
            let value = new.get(field).cloned().unwrap_or(Value::Null);
            errors.push(FieldError::invalid(path, value, "field is immutable"));
        }
    }
    errors
}

fn fail(event: &Value, errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    // The real server names the internal kind, the core `Event`, whichever API was used.
    Err(ApiError::invalid_fields(
        "Event",
        str_of(event, "/metadata/name"),
        errors,
    ))
}

/// A create through `resource`: for events.k8s.io, the object (already renamed to the core
/// shape) gets the fields Go writes of a core Event, and is validated as a create of that
/// version. Other types are left as they are.
pub(crate) fn prepare_create(
    resource: &ResourceType,
    namespace: Option<&str>,
    object: &mut Value,
) -> Result<(), ApiError> {
    if !is_view(resource) {
        return Ok(());
    }
    core_shape(object);
    in_namespace(object, namespace);
    fail(object, create_errors(object))
}

/// An update (PUT) through `resource` of the object stored as `storage`: for events.k8s.io,
/// the object (already renamed to the core shape) gets the core shape, keeps the stored form
/// of what it does not change, and is validated as an update (a create, when there is nothing
/// to update) of that version. Other types are left as they are.
pub(crate) fn prepare_update(
    resource: &ResourceType,
    store: &Store,
    storage: &ResourceType,
    namespace: Option<&str>,
    name: &str,
    object: &mut Value,
) -> Result<(), ApiError> {
    if !is_view(resource) {
        return Ok(());
    }
    core_shape(object);
    in_namespace(object, namespace);
    match store.get(storage, namespace, name) {
        Ok(old) => {
            keep_unchanged(&old, object);
            fail(object, update_errors(&old, object))
        }
        Err(_) => fail(object, create_errors(object)),
    }
}

/// A patch through `resource` of the object stored as `storage`: for events.k8s.io, a JSON,
/// merge or strategic merge patch applies to the object as events.k8s.io serves it, and the
/// result is stored back as an update of that version would be; a server-side apply (its
/// configuration renamed to the core shape by the caller) is applied to the stored object and
/// validated before it is stored. Only for the view (the server patches other types through
/// the store).
#[allow(clippy::too_many_arguments)]
pub(crate) fn patch(
    store: &mut Store,
    resource: &ResourceType,
    storage: &ResourceType,
    namespace: Option<&str>,
    name: &str,
    kind: PatchKind,
    document: &Value,
    subresource: Subresource,
    options: WriteOptions,
) -> Result<Object, ApiError> {
    let old = store.get(storage, namespace, name);
    if kind == PatchKind::Apply {
        // Applied for a dry run first: validated as the real server validates the result.
        let apply = |store: &mut Store, options| {
            store.patch(
                storage,
                namespace,
                name,
                kind,
                document,
                subresource,
                options,
            )
        };
        let trial = WriteOptions {
            dry_run: true,
            ..options.clone()
        };
        let result = apply(store, trial)?;
        match &old {
            Ok(old) => fail(&result, update_errors(old, &result))?,
            Err(_) => fail(&result, create_errors(&result))?,
        }
        if options.dry_run {
            return Ok(result);
        }
        return apply(store, options);
    }
    let old = old?;
    let doc = patch::patched(resource, from_core(&old), kind, document)?;
    let mut new = to_core(&doc);
    keep_unchanged(&old, &mut new);
    fail(&new, update_errors(&old, &new))?;
    store.update(storage, namespace, name, new, subresource, options)
}

#[cfg(test)]
mod tests;
