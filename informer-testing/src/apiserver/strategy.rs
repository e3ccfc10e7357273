//! What happens to an object between a write request and the store, by type, as the real
//! server's decoding and `rest` strategies do it before validation:
//!
//! - custom resources are pruned to their structural schema and defaulted (the real server
//!   does both when it decodes them), and a create drops `status` when the type has a status
//!   subresource; built-in objects get their type's defaults ([`super::defaults`]), and a
//!   create of a built-in type with a status (Pods, Services, the workloads, Jobs,
//!   PersistentVolumes and their claims, HorizontalPodAutoscalers, ...) replaces the status
//!   the client sent with the one the type's strategy starts from (a Pod's: `Pending`, its
//!   QoS class, [`super::pods`]; a PersistentVolume's: `Pending` since now);
//! - CustomResourceDefinitions get their defaults and their status ([`super::crd`]);
//! - every write records its fields in `metadata.managedFields` ([`super::fields`]), and a
//!   server-side apply merges its configuration.

use serde_json::{Map, Value, json};

use super::crd;
use super::defaults;
use super::fields::{self, Writer};
use super::hpa_v1;
use super::pods;
use super::resource::ResourceType;
use super::schema::Schema;
use super::service_accounts;
use super::status::ApiError;
use super::storage::{Subresource, WriteOptions};
use super::time::now_rfc3339;

/// The field manager of writes that name none (the test's own direct writes).
pub(crate) const DEFAULT_MANAGER: &str = "informer-testing";

/// Who a write is, for `managedFields`.
fn writer(resource: &ResourceType, subresource: Subresource, options: &WriteOptions) -> Writer {
    let label = options
        .subresource
        .as_deref()
        .or(subresource_label(subresource));
    Writer::new(
        options.manager.as_deref().unwrap_or(DEFAULT_MANAGER),
        &options
            .api_version
            .clone()
            .unwrap_or_else(|| resource.api_version()),
    )
    .on(label)
}

/// The subresource a write's managed fields entry names.
fn subresource_label(subresource: Subresource) -> Option<&'static str> {
    match subresource {
        Subresource::Status => Some("status"),
        Subresource::Finalize => Some("finalize"),
        Subresource::EphemeralContainers => Some("ephemeralcontainers"),
        Subresource::Approval => Some("approval"),
        Subresource::Main => None,
    }
}

fn reset_fields(resource: &ResourceType, subresource: Subresource) -> fields::Set {
    let set = fields::reset_fields(resource.status_subresource, subresource_label(subresource));
    if resource.custom && matches!(subresource, Subresource::Status) {
        // A custom resource's status strategy keeps nothing of a status write but its
        // `status` (`PrepareForUpdate` starts from the stored object): the labels,
        // annotations or finalizers it sent are not the writer's either (the real server
        // records none of them in the status manager's entry).
        return fields::with_top_level_field(set, "metadata");
    }
    set
}

/// An empty object of the type, as the real server's field manager compares a create with:
/// `apiVersion` and `kind`, and for built-in types the structs Go always serializes.
pub(crate) fn empty_object(resource: &ResourceType) -> Value {
    let mut object = json!({"apiVersion": resource.api_version(), "kind": resource.kind});
    if crd::is_definition(resource) {
        object["metadata"] = json!({"creationTimestamp": null});
        object["spec"] = json!({
            "group": "", "names": {"plural": "", "kind": ""}, "scope": "", "versions": null
        });
        object["status"] = json!({
            "conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null
        });
    } else if !resource.custom {
        for field in ["spec", "status"] {
            let has = fields::types::Types::builtin()
                .name_for(&resource.api_version(), &resource.kind)
                .and_then(|name| fields::types::Types::builtin().get(&name))
                .is_some_and(|def| def.fields.contains_key(field));
            if has {
                object[field] = Value::Object(Map::new());
            }
        }
        // An empty Go struct written out: `spec.template.spec.containers: null`, and so on.
        fill_go_zeros(resource, &mut object);
    }
    object
}

/// The message of every object's `metadata`.
const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// What a real server's decoding does to a written object: a custom resource is pruned and
/// defaulted as its schema says, a built-in one gets its type's defaults and is written as
/// its Go struct writes it back (empty `omitempty` fields left out, quantities canonical:
/// [`Schema::normalize`]), before the write's fields are recorded.
fn decode(resource: &ResourceType, object: &mut Value) {
    if let Some(schema) = &resource.schema {
        schema.prune(object);
        schema.apply_defaults(object);
    }
    defaults::apply(resource, object);
    defaults::apply_more_kinds(resource, object);
    if hpa_v1::is_autoscaler(resource) {
        // The conversion to the internal type drops autoscaling/v1's round-trip annotations,
        // whichever version was written (`Convert_v2_HorizontalPodAutoscaler_To_...`).
        hpa_v1::drop_round_trip_annotations(object);
    }
    if resource.custom {
        // apiextensions coerces a custom resource's metadata through `metav1.ObjectMeta`
        // (`schema/objectmeta`): its empty `omitempty` fields (`labels: {}`,
        // `finalizers: []`) are left out.
        if let Some(metadata) = object.get_mut("metadata") {
            Schema::builtin().normalize(OBJECT_META, metadata);
        }
    }
    if resource.schema.is_none() && !resource.custom {
        let schema = Schema::builtin();
        if let Some(message) = schema.message_name_for(&resource.api_version(), &resource.kind) {
            schema.normalize(&message, object);
            schema.fill_go_zeros(&message, object);
        }
    }
}

/// Prepares an object to create (after the server set its metadata): type defaults, then
/// the creator's fields.
pub(crate) fn prepare_create(resource: &ResourceType, object: &mut Value, options: &WriteOptions) {
    decode(resource, object);
    if crd::is_definition(resource) {
        crd::apply_defaults(object);
    }
    if options.track {
        let writer = writer(resource, Subresource::Main, options);
        let ignored = reset_fields(resource, Subresource::Main);
        fields::track_update(
            resource.shape(),
            &empty_object(resource),
            object,
            &writer,
            &ignored,
            &now_rfc3339(),
        );
    }
    if resource.custom
        && resource.status_subresource
        && let Value::Object(map) = object
    {
        map.remove("status");
    }
    if !resource.custom {
        // What admission and the type's strategy add, outside the creator's fields.
        match (resource.group.as_str(), resource.kind.as_str()) {
            ("", "Pod") => {
                service_accounts::admit_pod(object);
                pods::admit_create(object);
            }
            ("batch", "Job") => {
                generate_job_selector(object);
                defaults::job_labels(object);
            }
            (super::certificates::GROUP, super::certificates::KIND) => {
                super::certificates::prepare_create(object);
            }
            _ => {}
        }
        if let Some(status) = builtin_status_on_create(resource, object)
            && let Value::Object(map) = object
        {
            map.insert("status".into(), status);
        }
    }
    if crd::is_definition(resource) {
        crd::prepare_create(object);
    }
    fill_go_zeros(resource, object);
}

/// What a built-in object reads as after its round trip through its Go struct: the fields
/// Go's JSON never leaves out are there, empty (`status: {}`, a container's
/// `resources: {}`, a pod template's `metadata: {}`; [`Schema::fill_go_zeros`]). Done when
/// a write is decoded, before its fields are recorded (so an unchanged object compares
/// equal to the stored one, as after the real server's round trip), and again last, for
/// what the type's strategy set since (a status reset on create).
fn fill_go_zeros(resource: &ResourceType, object: &mut Value) {
    if resource.schema.is_some() || resource.custom {
        return;
    }
    let schema = Schema::builtin();
    if let Some(message) = schema.message_name_for(&resource.api_version(), &resource.kind) {
        schema.fill_go_zeros(&message, object);
    }
}

/// What the Job strategy does to a new Job whose `manualSelector` is not `true`: its pod
/// template gets the labels `batch.kubernetes.io/controller-uid` and `controller-uid` (the
/// Job's UID), `batch.kubernetes.io/job-name` and `job-name` (its name), each unless set,
/// and its selector matches `batch.kubernetes.io/controller-uid`.
fn generate_job_selector(job: &mut Value) {
    let name = job
        .pointer("/metadata/name")
        .cloned()
        .unwrap_or(Value::Null);
    let uid = job.pointer("/metadata/uid").cloned().unwrap_or(Value::Null);
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let labels = defaults::child_of(spec, "template")
        .and_then(|template| defaults::child_of(template, "metadata"))
        .and_then(|meta| defaults::child_of(meta, "labels"));
    if let Some(labels) = labels {
        for (key, value) in [
            ("batch.kubernetes.io/controller-uid", &uid),
            ("batch.kubernetes.io/job-name", &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels.entry(key).or_insert_with(|| value.clone());
        }
    }
    let matching = defaults::child_of(spec, "selector")
        .and_then(|selector| defaults::child_of(selector, "matchLabels"));
    if let Some(matching) = matching {
        matching
            .entry("batch.kubernetes.io/controller-uid")
            .or_insert(uid);
    }
}

/// The status a create of a built-in type stores, whatever the client sent, as the type's
/// registry strategy sets it (`PrepareForCreate`); `None` for the types whose status is
/// left alone here (Namespaces' is set in [`super::namespaces`], CRDs' in [`super::crd`]).
/// Go's zero status structs keep their fields without `omitempty`.
fn builtin_status_on_create(resource: &ResourceType, object: &Value) -> Option<Value> {
    Some(match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pods::status_on_create(object),
        ("", "Service") => json!({"loadBalancer": {}}),
        ("apps", "Deployment") => json!({}),
        ("apps", "ReplicaSet") => json!({"replicas": 0}),
        ("apps", "StatefulSet") => json!({"replicas": 0, "availableReplicas": 0}),
        ("apps", "DaemonSet") => json!({
            "currentNumberScheduled": 0, "numberMisscheduled": 0,
            "desiredNumberScheduled": 0, "numberReady": 0
        }),
        ("batch", "Job" | "CronJob") => json!({}),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("", "ReplicationController") => json!({"replicas": 0}),
        ("", "PersistentVolume") => json!({
            "phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()
        }),
        ("", "ResourceQuota") => json!({}),
        ("autoscaling", "HorizontalPodAutoscaler") => {
            json!({"currentMetrics": null, "desiredReplicas": 0})
        }
        ("networking.k8s.io", "Ingress") => json!({"loadBalancer": {}}),
        ("policy", "PodDisruptionBudget") => json!({
            "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0
        }),
        (super::apiservices::GROUP, "APIService") => super::apiservices::status_on_create(object),
        _ => return None,
    })
}

/// Prepares the object an update or patch stores (before the subresource's rules pick what
/// it may change): type defaults, then this write's fields.
pub(crate) fn prepare_update(
    resource: &ResourceType,
    old: &Value,
    new: &mut Value,
    subresource: Subresource,
    options: &WriteOptions,
) {
    decode(resource, new);
    if crd::is_definition(resource) {
        crd::apply_defaults(new);
    }
    if options.track {
        let writer = writer(resource, subresource, options);
        let ignored = reset_fields(resource, subresource);
        fields::track_update(
            resource.shape(),
            old,
            new,
            &writer,
            &ignored,
            &now_rfc3339(),
        );
    }
    // `DefaultTolerationSeconds` admits updates too (`NewHandler(Create, Update)`), of the
    // Pod proper only: a replaced Pod that leaves out the tolerations it was given gets them
    // back before the update is validated, outside the writer's fields.
    if subresource == Subresource::Main && !resource.custom && pods::is_pod(resource) {
        pods::admit_create(new);
    }
}

/// What an update keeps of the type's own rules after the subresource's (a CRD's stored
/// versions; a PersistentVolume's `lastPhaseTransitionTime`).
pub(crate) fn finish_update(
    resource: &ResourceType,
    old: &Value,
    subresource: Subresource,
    new: &mut Value,
) {
    // The status strategy keeps the written `storedVersions` (a storage migration trims
    // them); only a write of the CRD proper adds its storage version back.
    if crd::is_definition(resource) && subresource != Subresource::Status {
        crd::prepare_update(new);
    }
    if super::certificates::is_csr(resource) {
        super::certificates::finish_update(old, subresource, new);
    }
    if subresource == Subresource::Main
        && !resource.custom
        && resource.group.is_empty()
        && resource.kind == "Service"
    {
        super::services::prepare_update(old, new);
    }
    fill_go_zeros(resource, new);
    if subresource == Subresource::Status
        && !resource.custom
        && resource.group.is_empty()
        && resource.kind == "PersistentVolume"
    {
        volume_phase_transition(old, new);
    }
}

/// The PersistentVolume status strategy: a status write that keeps the phase keeps its
/// transition time unless it sets one; one that changes the phase without a new time gets
/// now.
fn volume_phase_transition(old: &Value, new: &mut Value) {
    let old_phase = old.pointer("/status/phase").cloned();
    let old_time = old.pointer("/status/lastPhaseTransitionTime").cloned();
    let Some(Value::Object(status)) = new.get_mut("status") else {
        return;
    };
    let new_time = status
        .get("lastPhaseTransitionTime")
        .filter(|t| !t.is_null())
        .cloned();
    let time = if status.get("phase").cloned() == old_phase {
        match new_time {
            None => old_time.filter(|t| !t.is_null()),
            set => set,
        }
    } else if new_time.is_none() || new_time == old_time {
        Some(json!(now_rfc3339()))
    } else {
        new_time
    };
    match time {
        Some(time) => status.insert("lastPhaseTransitionTime".into(), time),
        None => status.remove("lastPhaseTransitionTime"),
    };
}

/// Server-side apply: the object to store, from the stored one (`None`: the object does not
/// exist yet) and the applied configuration.
pub(crate) fn apply(
    resource: &ResourceType,
    live: Option<&Value>,
    config: &Value,
    subresource: Subresource,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let writer = writer(resource, subresource, options);
    let ignored = reset_fields(resource, subresource);
    let empty;
    let live = match live {
        Some(live) => live,
        None => {
            empty = empty_object(resource);
            &empty
        }
    };
    let object_name = format!(
        "{}/{}; {}",
        config
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(""),
        config
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(""),
        resource.group_version_kind()
    );
    let mut config = config.clone();
    if let Some(meta) = config.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    // A configuration applied through another version than the stored one was checked
    // against the request's version, then given the stored `apiVersion`: the field manager
    // works in the request's version.
    if let (Some(version), Some(map)) = (&options.api_version, config.as_object_mut()) {
        map.insert("apiVersion".into(), json!(version));
    }
    let mut applied = fields::apply(
        resource.shape(),
        live,
        &config,
        &writer,
        &ignored,
        options.force,
        &now_rfc3339(),
    )
    .map_err(|err| err.into_api_error(&object_name))?;
    // Stored in the stored version all the same.
    if options.api_version.is_some()
        && let Some(map) = applied.as_object_mut()
    {
        map.insert("apiVersion".into(), json!(resource.api_version()));
    }
    Ok(applied)
}

#[cfg(test)]
mod tests;
