//! `apiextensions.k8s.io/v1` CustomResourceDefinitions, served as kube-apiserver serves them
//! (`k8s.io/apiextensions-apiserver/pkg`): the type itself with its defaults and validation
//! (`registry/customresourcedefinition`, [`validation`]), and what the apiserver's CRD
//! controllers do with a stored CRD, here run right after every write of one so that a
//! created CRD is served when the create returns:
//!
//! - names (`controller/status`, the `NamingConditionController`): the names a CRD asks for
//!   are accepted unless another CRD of the group has accepted them
//!   (`status.acceptedNames`, condition `NamesAccepted` `True` `NoConflicts`, or `False` with
//!   `PluralConflict`, `KindConflict`, ...);
//! - establishing (`controller/establish`): `Established` `True` once the names are accepted;
//! - serving: every served version of a CRD whose names are accepted is a [`ResourceType`] in
//!   the registry (discovery, routes, schema, subresources, printer columns), updated when
//!   the CRD changes;
//! - deletion (`controller/finalizer`): deleting a CRD adds the
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer and the `Terminating` condition,
//!   refuses new objects, deletes every object of the type, and once none is left removes the
//!   finalizer, which deletes the CRD and stops serving its types.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::resource::{PrinterColumn, ResourceType, ScaleSubresource};
use super::server::Shared;
use super::status::ApiError;
use super::storage::{DeleteOptions, EventType, Filter, Subresource, WriteOptions};
use super::structural::{Schema, string_list};
use crate::apiserver::str_at;

mod schema_rules;
pub(crate) mod validation;

/// The API group of CustomResourceDefinitions.
pub(crate) const GROUP: &str = "apiextensions.k8s.io";
/// The finalizer that keeps a CRD until its objects are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// The field manager of the server's own CRD status writes (kube-apiserver's user agent).
pub(crate) const MANAGER: &str = "kube-apiserver";

/// The `customresourcedefinitions` resource type.
pub(crate) fn definition_type() -> ResourceType {
    let mut crds = ResourceType {
        group: GROUP.into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        namespaced: false,
        status_subresource: true,
        scale: None,
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        fields: Vec::new(),
        selectable_fields: Vec::new(),
        returns_deleted_object: false,
        tracks_generation: true,
        custom: false,
        list_kind: "CustomResourceDefinitionList".into(),
        storage_version: "v1".into(),
        schema: None,
        openapi_schema: None,
        stored_schema: None,
        printer_columns: Vec::new(),
        crd: None,
        served_since: 0,
        terminating: false,
        deprecation_warning: None,
    };
    crds.returns_deleted_object = false;
    crds
}

/// Whether a type is the CRD type.
pub(crate) fn is_definition(resource: &ResourceType) -> bool {
    resource.group == GROUP && resource.plural == "customresourcedefinitions"
}

/// The storage version of a CRD's spec (the version with `storage: true`).
fn storage_version(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["name"].as_str())
        .map(str::to_string)
}

/// The defaults of a CRD (`SetDefaults_CustomResourceDefinition`): the `None` conversion
/// strategy, `singular` (the kind in lower case) and `listKind` (`<Kind>List`).
pub(crate) fn apply_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if names
            .get("singular")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            names.insert("singular".into(), json!(kind.to_ascii_lowercase()));
        }
        if names
            .get("listKind")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
            && !kind.is_empty()
        {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if let Some(Value::Array(versions)) = spec.get_mut("versions") {
        for version in versions {
            if let Some(schema) = version.pointer_mut("/schema/openAPIV3Schema") {
                drop_null_defaults(schema);
            }
        }
    }
}

/// A `default` or `example` of `null` is none: the conversion to the internal
/// `JSONSchemaProps` makes a null `JSON` a nil pointer, so the stored CRD leaves it out and
/// nothing is defaulted to `null`.
fn drop_null_defaults(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    for key in ["default", "example"] {
        if map.get(key).is_some_and(Value::is_null) {
            map.remove(key);
        }
    }
    for key in ["properties", "patternProperties", "definitions"] {
        if let Some(Value::Object(children)) = map.get_mut(key) {
            children.values_mut().for_each(drop_null_defaults);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(children)) = map.get_mut(key) {
            children.iter_mut().for_each(drop_null_defaults);
        }
    }
    for key in ["items", "additionalProperties", "additionalItems", "not"] {
        match map.get_mut(key) {
            Some(Value::Array(children)) => children.iter_mut().for_each(drop_null_defaults),
            Some(child) => drop_null_defaults(child),
            None => {}
        }
    }
}

/// What a created CRD's status starts as: no conditions, no accepted names, the storage
/// version stored.
pub(crate) fn prepare_create(crd: &mut Value) {
    let stored: Vec<Value> = storage_version(crd)
        .map(Value::String)
        .into_iter()
        .collect();
    if let Value::Object(map) = crd {
        map.insert(
            "status".into(),
            json!({
                "conditions": null,
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": stored,
            }),
        );
    }
}

/// An update keeps the status and adds a new storage version to `status.storedVersions`
/// (not a status write: the status strategy stores the `storedVersions` written).
pub(crate) fn prepare_update(new: &mut Value) {
    let Some(storage) = storage_version(new) else {
        return;
    };
    let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let stored = status
        .entry("storedVersions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !stored.is_array() {
        *stored = Value::Array(Vec::new());
    }
    if let Value::Array(versions) = stored
        && !versions
            .iter()
            .any(|v| v == &Value::String(storage.clone()))
    {
        versions.push(Value::String(storage));
    }
}

/// Marks a CRD for deletion: the cleanup finalizer and the `Terminating` condition.
pub(crate) fn mark_deleting(crd: &mut Value) {
    if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
        let finalizers = meta
            .entry("finalizers")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = finalizers
            && !list.iter().any(|f| f == CLEANUP_FINALIZER)
        {
            list.push(json!(CLEANUP_FINALIZER));
        }
    }
    set_condition(
        crd,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
    );
}

fn conditions(crd: &Value) -> Vec<Value> {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn condition_is(crd: &Value, kind: &str, status: &str) -> bool {
    conditions(crd)
        .iter()
        .any(|c| c["type"] == kind && c["status"] == status)
}

/// Sets a condition as `SetCRDCondition` does: the transition time moves only when the
/// status changes; a new type is appended.
fn set_condition(crd: &mut Value, kind: &str, status: &str, reason: &str, message: &str) {
    if !crd["status"].is_object() {
        crd["status"] = Value::Object(Map::new());
    }
    let condition = super::conditions::set_status(&mut crd["status"]["conditions"], kind, status);
    condition["reason"] = json!(reason);
    condition["message"] = json!(message);
}

/// The names a CRD may have given the names the other CRDs of its group accepted, and the
/// `NamesAccepted` and `Established` conditions that follow
/// (`NamingConditionController.calculateNamesAndConditions`).
pub(crate) fn accept_names(crd: &Value, others: &[Value]) -> Value {
    let mut resources = std::collections::HashSet::new();
    let mut kinds = std::collections::HashSet::new();
    for other in others {
        let accepted = &other["status"]["acceptedNames"];
        for key in ["plural", "singular"] {
            resources.insert(str_at(accepted, &format!("/{key}")).to_string());
        }
        for short in accepted["shortNames"].as_array().into_iter().flatten() {
            resources.insert(short.as_str().unwrap_or("").to_string());
        }
        kinds.insert(str_at(accepted, "/kind").to_string());
        kinds.insert(str_at(accepted, "/listKind").to_string());
    }
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    let mut names = match accepted {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    names.entry("plural").or_insert(json!(""));
    names.entry("kind").or_insert(json!(""));
    let mut failure: Option<(&str, String)> = None;
    let fresh = |requested: &str, accepted: &str, used: &std::collections::HashSet<String>| {
        requested == accepted || !used.contains(requested)
    };
    for (key, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
    ] {
        let want = str_at(requested, &format!("/{key}"));
        if fresh(want, str_at(accepted, &format!("/{key}")), used) {
            if !want.is_empty() {
                names.insert(key.into(), json!(want));
            }
        } else {
            failure = Some((reason, format!("{want:?} is already in use")));
        }
    }
    let wanted_short: Vec<&str> = requested["shortNames"]
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let accepted_short: Vec<&str> = accepted["shortNames"]
        .as_array()
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if wanted_short != accepted_short {
        let taken: Vec<String> = wanted_short
            .iter()
            .filter(|s| !accepted_short.contains(s) && resources.contains(**s))
            .map(|s| format!("{s:?} is already in use"))
            .collect();
        if taken.is_empty() {
            if wanted_short.is_empty() {
                names.remove("shortNames");
            } else {
                names.insert("shortNames".into(), json!(wanted_short));
            }
        } else {
            let message = if taken.len() == 1 {
                taken[0].clone()
            } else {
                format!("[{}]", taken.join(", "))
            };
            failure = Some(("ShortNamesConflict", message));
        }
    }
    for (key, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        let want = str_at(requested, &format!("/{key}"));
        if fresh(want, str_at(accepted, &format!("/{key}")), &kinds) {
            if !want.is_empty() {
                names.insert(key.into(), json!(want));
            }
        } else {
            failure = Some((reason, format!("{want:?} is already in use")));
        }
    }
    match requested.get("categories") {
        Some(categories) => {
            names.insert("categories".into(), categories.clone());
        }
        None => {
            names.remove("categories");
        }
    }
    let mut out = crd.clone();
    if let Value::Object(map) = &mut out {
        let status = map
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if !status.is_object() {
            *status = Value::Object(Map::new());
        }
        status["acceptedNames"] = Value::Object(names);
    }
    match failure {
        None => {
            set_condition(
                &mut out,
                "NamesAccepted",
                "True",
                "NoConflicts",
                "no conflicts found",
            );
            if !condition_is(&out, "Established", "True") {
                set_condition(
                    &mut out,
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                );
            }
        }
        Some((reason, message)) => {
            set_condition(&mut out, "NamesAccepted", "False", reason, &message);
            if !condition_is(&out, "Established", "True") {
                set_condition(
                    &mut out,
                    "Established",
                    "False",
                    "NotAccepted",
                    "not all names are accepted",
                );
            }
        }
    }
    out
}

/// The types a CRD serves: one per served version, under the names it was granted
/// (`status.acceptedNames`; its requested names when it has none yet, for a registry without
/// a server). `served_since` is the revision they start being served at.
pub(crate) fn served_types(crd: &Value, served_since: u64) -> Result<Vec<ResourceType>, ApiError> {
    let name = str_at(crd, "/metadata/name").to_string();
    let accepted = &crd["status"]["acceptedNames"];
    let names = if str_at(accepted, "/plural").is_empty() || str_at(accepted, "/kind").is_empty() {
        &crd["spec"]["names"]
    } else {
        accepted
    };
    let group = str_at(crd, "/spec/group").to_string();
    let storage = storage_version(crd).unwrap_or_default();
    let kind = str_at(names, "/kind").to_string();
    let terminating = crd.pointer("/metadata/deletionTimestamp").is_some();
    let mut types = Vec::new();
    for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
        if version["served"] != true {
            continue;
        }
        let version_name = version["name"].as_str().unwrap_or("").to_string();
        let mut problems = Vec::new();
        let schema = match version.pointer("/schema/openAPIV3Schema") {
            Some(schema) => Schema::resource(schema, "", &mut problems),
            None => Schema::preserve_all(),
        };
        let scale = version.pointer("/subresources/scale").map(|scale| {
            let mut subresource = ScaleSubresource::new(
                str_at(scale, "/specReplicasPath"),
                str_at(scale, "/statusReplicasPath"),
            );
            if let Some(selector) = scale["labelSelectorPath"].as_str() {
                subresource = subresource.with_label_selector_path(selector);
            }
            subresource
        });
        let printer_columns = version["additionalPrinterColumns"]
            .as_array()
            .map(|columns| {
                columns
                    .iter()
                    .map(|c| PrinterColumn {
                        name: str_at(c, "/name").to_string(),
                        kind: str_at(c, "/type").to_string(),
                        format: str_at(c, "/format").to_string(),
                        description: str_at(c, "/description").to_string(),
                        priority: c["priority"].as_i64().unwrap_or(0),
                        json_path: str_at(c, "/jsonPath").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let singular = match str_at(names, "/singular") {
            "" => kind.to_ascii_lowercase(),
            s => s.to_string(),
        };
        types.push(ResourceType {
            group: group.clone(),
            version: version_name,
            kind: kind.clone(),
            plural: str_at(names, "/plural").to_string(),
            singular,
            namespaced: str_at(crd, "/spec/scope") == "Namespaced",
            status_subresource: version.pointer("/subresources/status").is_some(),
            scale,
            short_names: string_list(&names["shortNames"]),
            categories: string_list(&names["categories"]),
            fields: Vec::new(),
            selectable_fields: version["selectableFields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| {
                    f["jsonPath"]
                        .as_str()?
                        .strip_prefix('.')
                        .map(str::to_string)
                })
                .collect(),
            returns_deleted_object: false,
            tracks_generation: true,
            custom: true,
            list_kind: match str_at(names, "/listKind") {
                "" => format!("{kind}List"),
                l => l.to_string(),
            },
            storage_version: storage.clone(),
            schema: Some(Arc::new(schema)),
            openapi_schema: version
                .pointer("/schema/openAPIV3Schema")
                .map(|schema| Arc::new(schema.clone())),
            stored_schema: None,
            printer_columns,
            crd: Some(name.clone()),
            served_since,
            terminating,
            deprecation_warning: deprecation_warning(crd, version),
        });
    }
    Ok(types)
}

/// The warning of a `deprecated` CRD version: its `deprecationWarning`, or the CRD handler's
/// `defaultDeprecationWarning`: `<group>/<version> <Kind> is deprecated`, and `; use
/// <group>/<version> <Kind>` of the highest served, not deprecated version that ranks above it
/// (`version.CompareKubeAwareVersionStrings`), if any. (The kind is `spec.names.kind`.)
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version["deprecated"] != true {
        return None;
    }
    if let Some(warning) = version["deprecationWarning"].as_str() {
        return Some(warning.to_string());
    }
    let group = str_at(crd, "/spec/group");
    let kind = str_at(crd, "/spec/names/kind");
    let name = str_at(version, "/name");
    let mut warning = format!("{group}/{name} {kind} is deprecated");
    let rank = super::discovery::version_priority;
    let better = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true && v["deprecated"] != true)
        .map(|v| str_at(v, "/name"))
        .filter(|v| rank(name) < rank(v))
        .max_by_key(|v| rank(v));
    if let Some(better) = better {
        warning.push_str(&format!("; use {group}/{better} {kind}"));
    }
    Some(warning)
}

/// Brings the server in line with one CRD, as the apiserver's CRD controllers would: its
/// names and conditions, what is served, and its deletion. Idempotent; the server runs it
/// after every write of a CRD, and of an object of a terminating CRD.
pub(crate) fn reconcile(shared: &Shared, name: &str) {
    let _serial = shared.crd_lock.lock();
    reconcile_locked(shared, name, true);
    // kube-aggregator's `crdregistration` controller: the Local APIServices of the CRDs'
    // group versions, in place (and available) when the write returns, as the CRD's names
    // and conditions are, and always written after them. (The server's APIService
    // controller registers them only when it starts over.)
    let registry = shared.registry.read().clone();
    super::apiservices::register(&mut shared.store.lock(), &registry, false);
}

fn all_crds(shared: &Shared) -> Vec<Value> {
    let filter = Filter::all(Arc::new(definition_type()), None);
    shared
        .store
        .select(&filter)
        .into_iter()
        .filter_map(|(_, name)| shared.store.get(&definition_type(), None, &name).ok())
        .map(|o| o.as_ref().clone())
        .collect()
}

fn write_status(shared: &Shared, crd: Value) -> Option<Value> {
    let name = str_at(&crd, "/metadata/name").to_string();
    let options = WriteOptions::by(MANAGER);
    match shared.store.lock().update(
        &definition_type(),
        None,
        &name,
        crd,
        Subresource::Status,
        options,
    ) {
        Ok(updated) => Some(updated.as_ref().clone()),
        Err(err) => {
            tracing::warn!(%err, crd = name, "failed to update a CRD's status");
            None
        }
    }
}

fn reconcile_locked(shared: &Shared, name: &str, cascade: bool) {
    let Ok(stored) = shared.store.get(&definition_type(), None, name) else {
        shared.registry.write().uninstall(name);
        return;
    };
    let mut crd = stored.as_ref().clone();
    let group = str_at(&crd, "/spec/group").to_string();
    if crd.pointer("/metadata/deletionTimestamp").is_some() {
        finalize(shared, crd);
        if cascade {
            requeue_group(shared, &group, name);
        }
        return;
    }
    let others: Vec<Value> = all_crds(shared)
        .into_iter()
        .filter(|c| str_at(c, "/spec/group") == group && str_at(c, "/metadata/name") != name)
        .collect();
    let desired = accept_names(&crd, &others);
    let names_changed = desired["status"] != crd["status"];
    if names_changed && let Some(updated) = write_status(shared, desired) {
        crd = updated;
    }
    install(shared, &crd);
    if names_changed && cascade {
        requeue_group(shared, &group, name);
    }
}

/// The other CRDs of a group whose names were refused may be accepted now.
fn requeue_group(shared: &Shared, group: &str, except: &str) {
    for other in all_crds(shared) {
        let other_name = str_at(&other, "/metadata/name");
        if str_at(&other, "/spec/group") == group
            && other_name != except
            && !condition_is(&other, "NamesAccepted", "True")
        {
            reconcile_locked(shared, other_name, false);
        }
    }
}

/// Serves the CRD's versions if its names are accepted (or it was established), else nothing.
fn install(shared: &Shared, crd: &Value) {
    let name = str_at(crd, "/metadata/name");
    let serve =
        condition_is(crd, "NamesAccepted", "True") || condition_is(crd, "Established", "True");
    let mut registry = shared.registry.write();
    if !serve {
        registry.uninstall(name);
        return;
    }
    let since = registry
        .of_crd(name)
        .first()
        .map_or_else(|| shared.store.revision(), |t| t.served_since);
    match served_types(crd, since) {
        Ok(types) => registry.install(name, types),
        Err(err) => tracing::warn!(%err, crd = name, "a stored CRD cannot be served"),
    }
}

/// The finalizer controller: delete every object of the CRD's types, then let the CRD go.
fn finalize(shared: &Shared, mut crd: Value) {
    let name = str_at(&crd, "/metadata/name").to_string();
    install(shared, &crd);
    let has_finalizer = crd["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == CLEANUP_FINALIZER));
    if !has_finalizer {
        return;
    }
    let established = condition_is(&crd, "Established", "True");
    let storage = {
        let registry = shared.registry.read();
        registry
            .of_crd(&name)
            .into_iter()
            .map(|t| t.storage(&registry))
            .next()
    };
    let done = match (established, storage) {
        (true, Some(storage)) => {
            set_condition(
                &mut crd,
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            );
            if let Some(updated) = write_status(shared, crd.clone()) {
                crd = updated;
            }
            if !delete_instances(shared, &storage) {
                return;
            }
            set_condition(
                &mut crd,
                "Terminating",
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            );
            true
        }
        _ => {
            set_condition(
                &mut crd,
                "Terminating",
                "False",
                "NeverEstablished",
                "resource was never established",
            );
            true
        }
    };
    if !done {
        return;
    }
    if let Some(updated) = write_status(shared, crd.clone()) {
        crd = updated;
    }
    if let Some(list) = crd["metadata"]["finalizers"].as_array_mut() {
        list.retain(|f| f != CLEANUP_FINALIZER);
    }
    let result = shared.store.lock().update(
        &definition_type(),
        None,
        &name,
        crd,
        Subresource::Main,
        WriteOptions::by(MANAGER),
    );
    if let Err(err) = result {
        tracing::warn!(%err, crd = name, "failed to remove the cleanup finalizer of a CRD");
    }
    if shared.store.get(&definition_type(), None, &name).is_err() {
        shared.registry.write().uninstall(&name);
    }
}

/// Deletes every object of a type; whether none is left (objects with finalizers stay until
/// their finalizers are removed).
fn delete_instances(shared: &Shared, storage: &Arc<ResourceType>) -> bool {
    let filter = Filter::all(storage.clone(), None);
    for (namespace, object) in shared.store.select(&filter) {
        let result = shared.store.lock().delete(
            storage,
            namespace.as_deref(),
            &object,
            &DeleteOptions::default(),
            false,
        );
        if let Err(err) = result
            && err.code() != 404
        {
            tracing::warn!(%err, object, "failed to delete an object of a deleted CRD");
        }
    }
    shared.store.select(&filter).is_empty()
}

/// Lets a terminating CRD go once its last object goes, whoever deletes it, and starts the
/// deletion of a CRD whoever marks it deleted: the requests reconcile after their own
/// writes; this catches the server's other controllers (the garbage collector, the
/// namespace controller), which write to the store directly. Runs until the task is
/// aborted, on the store's change subscription.
pub(crate) async fn finish_deletions(shared: Arc<Shared>) {
    loop {
        let subscription = match shared.store.subscribe(None) {
            Ok(subscription) => subscription,
            Err(err) => {
                tracing::warn!(%err, "the CRD finalizer failed to subscribe to the store");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        for name in terminating(&shared) {
            reconcile(&shared, &name);
        }
        let definitions = definition_type().key();
        while let Some(change) = subscription.next().await {
            if change.resource == definitions {
                // A CRD someone other than a request marked deleted (the garbage
                // collector, for one with owners): its deletion starts here.
                let marked = |o: &Value| o.pointer("/metadata/deletionTimestamp").is_some();
                if marked(&change.object) && !change.previous.as_deref().is_some_and(marked) {
                    reconcile(&shared, &change.key);
                }
                continue;
            }
            if change.event != EventType::Deleted {
                continue;
            }
            let definition = shared
                .registry
                .read()
                .types()
                .iter()
                .find(|t| t.terminating && t.key() == change.resource)
                .and_then(|t| t.crd.clone());
            if let Some(name) = definition {
                reconcile(&shared, &name);
            }
        }
    }
}

/// The CRDs whose types are terminating.
fn terminating(shared: &Shared) -> Vec<String> {
    let mut names: Vec<String> = shared
        .registry
        .read()
        .types()
        .iter()
        .filter(|t| t.terminating)
        .filter_map(|t| t.crd.clone())
        .collect();
    names.dedup();
    names
}

/// The CRDs in a registry, for tests of the registry alone.
#[cfg(test)]
pub(crate) fn registry_with(crds: &[Value]) -> super::resource::Registry {
    let mut registry = super::resource::Registry::builtin();
    for crd in crds {
        let name = str_at(crd, "/metadata/name").to_string();
        registry.install(&name, served_types(crd, 0).unwrap_or_default());
    }
    registry
}

#[cfg(test)]
mod tests;
