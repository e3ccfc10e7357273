//! What an update may change in the spec of a built-in object, as each type's
//! `Validate*Update` in kube-apiserver decides (`pkg/apis/core/validation`,
//! `pkg/apis/apps/validation`, `pkg/apis/batch/validation`, `pkg/apis/rbac/validation`):
//!
//! | type | what an update may not do |
//! | --- | --- |
//! | Pod | change `spec` beyond the containers' and init containers' images, a lower `activeDeadlineSeconds`, added tolerations (or an existing one's `tolerationSeconds`), removed scheduling gates and a negative `terminationGracePeriodSeconds` made `1`; add or remove containers; empty an image |
//! | StatefulSet | change `spec` beyond `replicas`, `ordinals`, `template`, `updateStrategy`, `revisionHistoryLimit`, `persistentVolumeClaimRetentionPolicy` and `minReadySeconds` |
//! | Job | change `spec.selector`, `spec.template` (a suspended Job that never started may change its pods' node selector, node affinity, tolerations, scheduling gates, labels and annotations), `spec.completions` (but for an `Indexed` Job's, together with `parallelism`), `completionMode`, `podFailurePolicy`, `backoffLimitPerIndex`, `managedBy`, `successPolicy` |
//! | RoleBinding, ClusterRoleBinding | change `roleRef` |
//! | Node | change `spec.podCIDRs` or `spec.providerID` once set |
//!
//! Wording: where the real server appends a Go diff of the two specs (`cmp.Diff`) or prints a
//! whole internal struct as the invalid value, these errors leave it out.

use serde_json::{Map, Value};

use super::json_label_selector;
use crate::apiserver::go_json::go_string;
use crate::apiserver::resource::ResourceType;
use crate::apiserver::status::FieldError;

/// The fields of a Pod's spec an update may change, as `ValidatePodUpdate` lists them.
const POD_UPDATABLE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidateStatefulSetUpdate`'s refusal.
const STATEFUL_SET_UPDATABLE: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";

const IMMUTABLE: &str = "field is immutable";

/// The errors of an update of `old` to `new` that its type forbids.
pub(super) fn spec_updates(
    resource: &ResourceType,
    old: &Value,
    new: &Value,
    errors: &mut Vec<FieldError>,
) {
    if resource.custom {
        return;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pod(old, new, errors),
        ("apps", "StatefulSet") => stateful_set(old, new, errors),
        ("", "Node") => node(old, new, errors),
        ("batch", "Job") => job(old, new, errors),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            role_ref(old, new, errors);
        }
        _ => {}
    }
}

/// `ValidateNodeUpdate`: `podCIDRs` and `providerID` may be set once (by the controller
/// manager, or the cloud provider), never changed.
fn node(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    const CIDRS: &str = "node updates may not change podCIDR except from \"\" to valid";
    let cidrs = |o: &Value| -> Vec<Value> {
        o.pointer("/spec/podCIDRs")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (before, after) = (cidrs(old), cidrs(new));
    if !before.is_empty() {
        if before.len() != after.len() {
            errors.push(FieldError::forbidden("spec.podCIDRs", CIDRS));
        } else {
            for (b, a) in before.iter().zip(&after) {
                if b != a {
                    errors.push(FieldError::forbidden("spec.podCIDRs", CIDRS));
                }
            }
        }
    }
    let provider = |o: &Value| {
        o.pointer("/spec/providerID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let was = provider(old);
    if !was.is_empty() && was != provider(new) {
        errors.push(FieldError::forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
}

fn spec_of(object: &Value) -> Map<String, Value> {
    match object.get("spec") {
        Some(Value::Object(spec)) => spec.clone(),
        _ => Map::new(),
    }
}

/// Go's semantic equality of two decoded values: a missing field, `null`, and (for a field
/// re-encoded without it) an empty list or map are the same.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn present(v: Option<&Value>) -> Option<&Value> {
        v.filter(|v| match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        })
    }
    match (present(a), present(b)) {
        (None, None) => true,
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            a.keys().chain(b.keys()).all(|k| same(a.get(k), b.get(k)))
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(Some(a), Some(b)))
        }
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Sets `field` of `spec` to `value` (removing it for `None`).
fn put(spec: &mut Map<String, Value>, field: &str, value: Option<&Value>) {
    match value {
        Some(v) => spec.insert(field.to_string(), v.clone()),
        None => spec.remove(field),
    };
}

/// `ValidatePodUpdate`.
fn pod(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    let old_spec = spec_of(old);
    let new_spec = spec_of(new);
    let list = |spec: &Map<String, Value>, field: &str| -> Vec<Value> {
        spec.get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    // `ValidateContainerUpdates`: the same containers, each with an image.
    for field in ["containers", "initContainers"] {
        let before = list(&old_spec, field);
        let after = list(&new_spec, field);
        if before.len() != after.len() {
            errors.push(FieldError::forbidden(
                &format!("spec.{field}"),
                "pod updates may not add or remove containers",
            ));
            return;
        }
        for (i, container) in after.iter().enumerate() {
            let image = container.get("image").and_then(Value::as_str).unwrap_or("");
            if image.is_empty() {
                errors.push(FieldError::required(
                    &format!("spec.{field}[{i}].image"),
                    "",
                ));
            } else if image.trim() != image {
                errors.push(FieldError::invalid(
                    &format!("spec.{field}[{i}].image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline = |spec: &Map<String, Value>| spec.get("activeDeadlineSeconds").cloned();
    match (deadline(&old_spec), deadline(&new_spec)) {
        (_, Some(after)) => {
            let n = after.as_i64().unwrap_or(-1);
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                errors.push(FieldError::invalid(
                    "spec.activeDeadlineSeconds",
                    after,
                    &format!("must be between 0 and {}, inclusive", i32::MAX),
                ));
                return;
            }
            if let Some(before) = deadline(&old_spec).and_then(|b| b.as_i64())
                && before < n
            {
                errors.push(FieldError::invalid(
                    "spec.activeDeadlineSeconds",
                    n,
                    "must be less than or equal to previous value",
                ));
                return;
            }
        }
        (Some(_), None) => errors.push(FieldError::invalid(
            "spec.activeDeadlineSeconds",
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        (None, None) => {}
    }
    only_added_tolerations(
        &list(&old_spec, "tolerations"),
        &list(&new_spec, "tolerations"),
        errors,
    );
    only_deleted_scheduling_gates(
        &list(&old_spec, "schedulingGates"),
        &list(&new_spec, "schedulingGates"),
        errors,
    );
    // What is left once the updatable fields are taken from the old spec must not differ.
    let mut munged = new_spec.clone();
    for field in ["containers", "initContainers"] {
        if let (Some(Value::Array(after)), Some(Value::Array(before))) =
            (munged.get_mut(field), old_spec.get(field))
        {
            for (container, old_container) in after.iter_mut().zip(before) {
                if let Value::Object(container) = container {
                    put(container, "image", old_container.get("image"));
                }
            }
        }
    }
    // The `ephemeralcontainers` subresource writes them through its own rules.
    for field in [
        "activeDeadlineSeconds",
        "tolerations",
        "schedulingGates",
        "ephemeralContainers",
    ] {
        put(&mut munged, field, old_spec.get(field));
    }
    let grace = |spec: &Map<String, Value>| {
        spec.get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
    };
    if grace(&old_spec).is_some_and(|g| g < 0) && grace(&munged) == Some(1) {
        put(
            &mut munged,
            "terminationGracePeriodSeconds",
            old_spec.get("terminationGracePeriodSeconds"),
        );
    }
    if !same(Some(&Value::Object(munged)), Some(&Value::Object(old_spec))) {
        errors.push(FieldError::forbidden("spec", POD_UPDATABLE));
    }
}

/// `validateOnlyAddedTolerations`: every old toleration is still there, but for its
/// `tolerationSeconds`.
fn only_added_tolerations(old: &[Value], new: &[Value], errors: &mut Vec<FieldError>) {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Value::Object(map) = &mut t {
            map.remove("tolerationSeconds");
        }
        t
    };
    let kept = old.iter().all(|before| {
        new.iter().any(|after| {
            same(
                Some(&without_seconds(before)),
                Some(&without_seconds(after)),
            )
        })
    });
    if !kept {
        errors.push(FieldError::forbidden(
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
}

/// `validateOnlyDeletedSchedulingGates`: no gate a Pod did not have.
fn only_deleted_scheduling_gates(old: &[Value], new: &[Value], errors: &mut Vec<FieldError>) {
    let name = |gate: &Value| {
        gate.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let before: Vec<String> = old.iter().map(name).collect();
    for (i, gate) in new.iter().enumerate() {
        let gate = name(gate);
        if !before.contains(&gate) {
            errors.push(FieldError::forbidden(
                &format!("spec.schedulingGates[{i}].name"),
                &format!("only deletion is allowed, but found new scheduling gate '{gate}'"),
            ));
        }
    }
}

/// `ValidateStatefulSetUpdate`.
fn stateful_set(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    let old_spec = spec_of(old);
    let mut munged = spec_of(new);
    for field in [
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
    ] {
        put(&mut munged, field, old_spec.get(field));
    }
    if !same(Some(&Value::Object(munged)), Some(&Value::Object(old_spec))) {
        errors.push(FieldError::forbidden("spec", STATEFUL_SET_UPDATABLE));
    }
}

/// `ValidateJobSpecUpdate`.
fn job(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    let old_spec = spec_of(old);
    let new_spec = spec_of(new);
    // Completions may change only for an Indexed Job, and only to its parallelism.
    let indexed = new_spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let (before, after) = (old_spec.get("completions"), new_spec.get("completions"));
    if !same(before, after) {
        match after {
            Some(n) if indexed && !n.is_null() => {
                if Some(n) != new_spec.get("parallelism") {
                    errors.push(FieldError::invalid(
                        "spec.completions",
                        n.clone(),
                        "can only be modified in tandem with spec.parallelism",
                    ));
                }
            }
            _ if indexed => {}
            _ => errors.push(FieldError::invalid(
                "spec.completions",
                after.cloned().unwrap_or(Value::Null),
                IMMUTABLE,
            )),
        }
    }
    if !same(old_spec.get("selector"), new_spec.get("selector")) {
        // `ValidateImmutableField` of the `*metav1.LabelSelector`: `null` when unset.
        let json = match new_spec.get("selector") {
            None | Some(Value::Null) => "null".to_string(),
            Some(selector) => json_label_selector(selector),
        };
        errors.push(FieldError::invalid_go("spec.selector", &json, IMMUTABLE));
    }
    let suspended = old_spec.get("suspend") == Some(&Value::Bool(true));
    let started = old
        .pointer("/status/startTime")
        .is_some_and(|t| !t.is_null());
    let mut old_template = old_spec.get("template").cloned().unwrap_or(Value::Null);
    let new_template = new_spec.get("template").cloned().unwrap_or(Value::Null);
    if suspended && !started {
        // A suspended Job that never started may still be told where its pods go.
        mutable_scheduling_directives(&mut old_template, &new_template);
    }
    if !same(Some(&old_template), Some(&new_template)) {
        errors.push(FieldError::invalid_go(
            "spec.template",
            "core.PodTemplateSpec{...}",
            IMMUTABLE,
        ));
    }
    for field in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        if !same(old_spec.get(field), new_spec.get(field)) {
            errors.push(FieldError::invalid(
                &format!("spec.{field}"),
                new_spec.get(field).cloned().unwrap_or(Value::Null),
                IMMUTABLE,
            ));
        }
    }
}

/// `validatePodTemplateUpdate` with `AllowMutableSchedulingDirectives`: `old` takes `new`'s
/// labels, annotations, node selector, tolerations, scheduling gates and node affinity.
fn mutable_scheduling_directives(old: &mut Value, new: &Value) {
    let Value::Object(old) = old else { return };
    for field in ["labels", "annotations"] {
        let value = new.pointer(&format!("/metadata/{field}"));
        let metadata = old
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(metadata) = metadata {
            put(metadata, field, value);
        }
    }
    let spec = old
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(spec) = spec else { return };
    for field in ["nodeSelector", "tolerations", "schedulingGates"] {
        put(spec, field, new.pointer(&format!("/spec/{field}")));
    }
    let new_affinity = new.pointer("/spec/affinity").filter(|a| !a.is_null());
    match (spec.get_mut("affinity"), new_affinity) {
        (Some(Value::Object(affinity)), None) => {
            // It may be cleared if node affinity was all it held.
            affinity.remove("nodeAffinity");
            if affinity.is_empty() {
                spec.remove("affinity");
            }
        }
        (Some(Value::Object(affinity)), Some(new_affinity)) => {
            put(affinity, "nodeAffinity", new_affinity.get("nodeAffinity"));
        }
        (_, Some(new_affinity)) => {
            let mut affinity = Map::new();
            put(
                &mut affinity,
                "nodeAffinity",
                new_affinity.get("nodeAffinity"),
            );
            spec.insert("affinity".into(), Value::Object(affinity));
        }
        (_, None) => {}
    }
}

/// `ValidateRoleBindingUpdate` and `ValidateClusterRoleBindingUpdate`.
fn role_ref(old: &Value, new: &Value, errors: &mut Vec<FieldError>) {
    let (before, after) = (old.get("roleRef"), new.get("roleRef"));
    if same(before, after) {
        return;
    }
    let text = |field: &str| {
        go_string(
            after
                .and_then(|r| r.get(field))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    };
    // The internal `rbac.RoleRef` has no JSON tags: `json.Marshal` writes its Go field names.
    let json = format!(
        "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
        text("apiGroup"),
        text("kind"),
        text("name")
    );
    errors.push(FieldError::invalid_go(
        "roleRef",
        &json,
        "cannot change roleRef",
    ));
}
