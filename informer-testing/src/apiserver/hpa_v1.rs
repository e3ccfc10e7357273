//! `autoscaling/v1` HorizontalPodAutoscalers: a second view of the `autoscaling/v2` ones, as
//! kube-apiserver serves it (one storage, in `autoscaling/v2`): an autoscaler written through
//! either version is read, listed, watched, updated, patched and deleted through both, with
//! the same name and resource version.
//!
//! Objects are stored in `autoscaling/v2` (the internal type's shape) and converted as
//! `pkg/apis/autoscaling/v1/conversion.go` converts them:
//!
//! - `targetCPUUtilizationPercentage` is the first `Resource` metric for `cpu` (when it has a
//!   utilization target), and becomes one such metric; `currentCPUUtilizationPercentage` is
//!   the last current `cpu` utilization, and becomes one current `Resource` metric;
//! - what v1 cannot hold travels in annotations, written on the way to v1 and read (then
//!   dropped) on the way back: the other metrics (`autoscaling.alpha.kubernetes.io/metrics`,
//!   in v1's `MetricSpec` shape), the current metrics, all of them
//!   (`.../current-metrics`), the `behavior` (`.../behavior`, Go's internal struct marshalled
//!   without JSON tags: `{"ScaleUp":{"StabilizationWindowSeconds":0,...},...}`) and the
//!   conditions (`.../conditions`); an annotation that does not decode is dropped, as the
//!   reference drops it ("only move well-formed data from annotations to fields");
//! - an autoscaler with no metric at all gets the CPU utilization target v1 always implied
//!   (80%), and v1's defaulting sets `minReplicas: 1`.
//!
//! Annotation values are written as Go's `encoding/json` writes the v1 structs: fields in
//! declaration order, `omitempty` respected, zero quantities `"0"`, `<`, `>` and `&` escaped.
//!
//! A JSON, merge or strategic merge patch sent to v1 applies to the object in the v1 shape; a
//! server-side apply configuration of v1 is turned into the v2 configuration it stands for
//! (only the fields it sets) and applied to the stored object, whose managed fields are
//! recorded in the v2 shape. Validation is `ValidateHorizontalPodAutoscaler`'s, of the
//! converted object (so errors name v2 fields: `spec.metrics[0].resource.target...`).

use serde_json::{Map, Value, json};

use super::patch::{self, PatchKind};
use super::resource::ResourceType;
use super::status::ApiError;
use super::storage::{Object, Store, Subresource, WriteOptions};
use super::{str_at, value_at};

mod go_shape;
mod metrics;

use go_shape::{CONDITION, METRIC_SPEC, METRIC_STATUS, marshal_list, unmarshal_list};
use metrics::{
    behavior_annotation, behavior_from_annotation, metric_from_v1, metric_status_from_v1,
    metric_status_to_v1, metric_to_v1,
};

/// The API group of both versions.
const GROUP: &str = "autoscaling";

/// `autoscaling.MetricSpecsAnnotation`: the metrics v1 cannot express.
pub(crate) const METRIC_SPECS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`: every current metric.
pub(crate) const METRIC_STATUSES: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`.
pub(crate) const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.BehaviorSpecsAnnotation`.
pub(crate) const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The annotations `DropRoundTripHorizontalPodAutoscalerAnnotations` removes, converting
/// either way (v2beta2's tolerance annotations included).
const ROUND_TRIP: [&str; 6] = [
    METRIC_SPECS,
    BEHAVIOR,
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
    "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
    METRIC_STATUSES,
    CONDITIONS,
];

/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Whether `resource` is the autoscaling/v1 view.
pub(crate) fn is_view(resource: &ResourceType) -> bool {
    is_autoscaler(resource) && resource.version == "v1"
}

/// Whether `resource` is a HorizontalPodAutoscaler type (either version).
pub(crate) fn is_autoscaler(resource: &ResourceType) -> bool {
    !resource.custom && resource.group == GROUP && resource.kind == "HorizontalPodAutoscaler"
}

// ---------------------------------------------------------------------------------------
// Field access on stored (v2) and v1 objects.

fn list_at<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    value_at(value, pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Copies `from[from_key]` to `to[to_key]` when set.
fn copy(to: &mut Map<String, Value>, to_key: &str, from: &Value, pointer: &str) {
    if let Some(value) = value_at(from, pointer) {
        to.insert(to_key.to_string(), value.clone());
    }
}

/// A quantity that Go declares by value (not a pointer): `"0"` when unset.
fn quantity_or_zero(from: &Value, pointer: &str) -> Value {
    value_at(from, pointer)
        .cloned()
        .unwrap_or_else(|| json!("0"))
}

/// A `CrossVersionObjectReference` (the same in both versions): `kind` and `name` always,
/// `apiVersion` when set.
fn reference(from: Option<&Value>) -> Value {
    let from = from.unwrap_or(&Value::Null);
    let mut out = Map::new();
    out.insert("kind".into(), json!(str_at(from, "/kind")));
    out.insert("name".into(), json!(str_at(from, "/name")));
    if !str_at(from, "/apiVersion").is_empty() {
        out.insert("apiVersion".into(), json!(str_at(from, "/apiVersion")));
    }
    Value::Object(out)
}

/// A v2 `MetricIdentifier` from a v1 source's metric name and selector.
fn identifier(from: &Value, name: &str, selector: &str) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(str_at(from, &format!("/{name}"))));
    copy(&mut out, "selector", from, &format!("/{selector}"));
    Value::Object(out)
}

fn is_cpu_resource(metric: &Value) -> bool {
    str_at(metric, "/type") == "Resource"
        && value_at(metric, "/resource").is_some()
        && str_at(metric, "/resource/name") == "cpu"
}

/// The metric `targetCPUUtilizationPercentage` stands for (and `currentCPU...` for current
/// ones).
fn cpu_utilization(current: bool, percent: &Value) -> Value {
    let (side, kind) = if current {
        ("current", json!({"averageUtilization": percent}))
    } else {
        (
            "target",
            json!({"type": "Utilization", "averageUtilization": percent}),
        )
    };
    json!({"type": "Resource", "resource": {"name": "cpu", side: kind}})
}

// ---------------------------------------------------------------------------------------
// Annotations.

fn annotations_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    object
        .get_mut("metadata")?
        .get_mut("annotations")?
        .as_object_mut()
}

fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// `DropRoundTripHorizontalPodAutoscalerAnnotations`: the conversion annotations are
/// removed (and the map with them, when nothing else is left: Go leaves an empty map out).
pub(crate) fn drop_round_trip_annotations(object: &mut Value) {
    let Some(annotations) = annotations_mut(object) else {
        return;
    };
    if !ROUND_TRIP.iter().any(|key| annotations.contains_key(*key)) {
        return;
    }
    for key in ROUND_TRIP {
        annotations.remove(key);
    }
    if annotations.is_empty()
        && let Some(Value::Object(meta)) = object.get_mut("metadata")
    {
        meta.remove("annotations");
    }
}

fn set_annotation(object: &mut Value, key: &str, value: String) {
    let Value::Object(map) = object else {
        return;
    };
    let meta = map.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Value::Object(meta) = meta {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Value::Object(annotations) = annotations {
            annotations.insert(key.to_string(), Value::String(value));
        }
    }
}

// ---------------------------------------------------------------------------------------
// The conversions.

/// A stored (autoscaling/v2) HorizontalPodAutoscaler as autoscaling/v1 serves it
/// (`Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`).
pub(crate) fn from_v2(object: &Value) -> Value {
    let mut out = object.clone();
    if !out.is_object() {
        return out;
    }
    out["apiVersion"] = json!("autoscaling/v1");
    drop_round_trip_annotations(&mut out);
    let metrics = list_at(object, "/spec/metrics");

    let mut spec = Map::new();
    spec.insert(
        "scaleTargetRef".into(),
        reference(value_at(object, "/spec/scaleTargetRef")),
    );
    copy(&mut spec, "minReplicas", object, "/spec/minReplicas");
    spec.insert(
        "maxReplicas".into(),
        value_at(object, "/spec/maxReplicas")
            .cloned()
            .unwrap_or(json!(0)),
    );
    // The first CPU metric decides, whatever it targets.
    if let Some(percent) = metrics
        .iter()
        .find(|m| is_cpu_resource(m))
        .and_then(|m| value_at(m, "/resource/target/averageUtilization"))
    {
        spec.insert("targetCPUUtilizationPercentage".into(), percent.clone());
    }
    out["spec"] = Value::Object(spec);

    let current = list_at(object, "/status/currentMetrics");
    let mut status = Map::new();
    copy(
        &mut status,
        "observedGeneration",
        object,
        "/status/observedGeneration",
    );
    copy(
        &mut status,
        "lastScaleTime",
        object,
        "/status/lastScaleTime",
    );
    for key in ["currentReplicas", "desiredReplicas"] {
        let value = value_at(object, &format!("/status/{key}")).cloned();
        status.insert(key.into(), value.unwrap_or(json!(0)));
    }
    // The last current CPU utilization wins.
    if let Some(percent) = current
        .iter()
        .filter(|m| is_cpu_resource(m))
        .filter_map(|m| value_at(m, "/resource/current/averageUtilization"))
        .next_back()
    {
        status.insert("currentCPUUtilizationPercentage".into(), percent.clone());
    }
    out["status"] = Value::Object(status);

    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| {
            !(is_cpu_resource(m) && value_at(m, "/resource/target/averageUtilization").is_some())
        })
        .map(metric_to_v1)
        .collect();
    if !others.is_empty() {
        set_annotation(&mut out, METRIC_SPECS, marshal_list(METRIC_SPEC, &others));
    }
    if !current.is_empty() {
        let statuses: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        set_annotation(
            &mut out,
            METRIC_STATUSES,
            marshal_list(METRIC_STATUS, &statuses),
        );
    }
    if let Some(behavior) = value_at(object, "/spec/behavior") {
        set_annotation(&mut out, BEHAVIOR, behavior_annotation(behavior));
    }
    let conditions = list_at(object, "/status/conditions");
    if !conditions.is_empty() {
        set_annotation(&mut out, CONDITIONS, marshal_list(CONDITION, conditions));
    }
    out
}

/// A v1 object's metrics: those of the metrics annotation, then the CPU utilization target.
/// `None` when it has neither.
fn metrics_from_v1(object: &Value) -> Option<Vec<Value>> {
    let annotated =
        annotation(object, METRIC_SPECS).and_then(|text| unmarshal_list(METRIC_SPEC, text));
    let cpu = value_at(object, "/spec/targetCPUUtilizationPercentage");
    if annotated.is_none() && cpu.is_none() {
        return None;
    }
    let mut metrics: Vec<Value> = annotated
        .unwrap_or_default()
        .iter()
        .map(metric_from_v1)
        .collect();
    metrics.extend(cpu.map(|percent| cpu_utilization(false, percent)));
    Some(metrics)
}

/// A v1 object's status in the v2 shape: the fields both have, the current metrics (the
/// annotation's, else the CPU utilization) and the conditions of the annotation.
fn status_from_v1(object: &Value) -> Map<String, Value> {
    let mut status = Map::new();
    copy(
        &mut status,
        "observedGeneration",
        object,
        "/status/observedGeneration",
    );
    copy(
        &mut status,
        "lastScaleTime",
        object,
        "/status/lastScaleTime",
    );
    for key in ["currentReplicas", "desiredReplicas"] {
        let value = value_at(object, &format!("/status/{key}")).cloned();
        status.insert(key.into(), value.unwrap_or(json!(0)));
    }
    if let Some(percent) = value_at(object, "/status/currentCPUUtilizationPercentage") {
        status.insert(
            "currentMetrics".into(),
            json!([cpu_utilization(true, percent)]),
        );
    }
    // "ignore any existing status values -- the ones here have more information"
    if let Some(current) =
        annotation(object, METRIC_STATUSES).and_then(|text| unmarshal_list(METRIC_STATUS, text))
    {
        let current: Vec<Value> = current.iter().map(metric_status_from_v1).collect();
        status.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(conditions) =
        annotation(object, CONDITIONS).and_then(|text| unmarshal_list(CONDITION, text))
    {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    status
}

/// An autoscaling/v1 HorizontalPodAutoscaler as it is stored (autoscaling/v2), after v1's
/// defaulting (`minReplicas: 1`) and `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_...`
/// (metrics, behavior, current metrics and conditions from the annotations, which are then
/// dropped; the 80% CPU target when there is no metric).
pub(crate) fn to_v2(object: &Value) -> Value {
    let mut out = object.clone();
    if !out.is_object() {
        return out;
    }
    if out.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
        out["apiVersion"] = json!("autoscaling/v2");
    }
    let mut spec = Map::new();
    spec.insert(
        "scaleTargetRef".into(),
        reference(value_at(object, "/spec/scaleTargetRef")),
    );
    spec.insert(
        "minReplicas".into(),
        value_at(object, "/spec/minReplicas")
            .cloned()
            .unwrap_or(json!(1)),
    );
    spec.insert(
        "maxReplicas".into(),
        value_at(object, "/spec/maxReplicas")
            .cloned()
            .unwrap_or(json!(0)),
    );
    let metrics = metrics_from_v1(object)
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| vec![cpu_utilization(false, &json!(DEFAULT_CPU_UTILIZATION))]);
    spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(behavior) = annotation(object, BEHAVIOR).and_then(behavior_from_annotation) {
        spec.insert("behavior".into(), behavior);
    }
    out["spec"] = Value::Object(spec);
    out["status"] = Value::Object(status_from_v1(object));
    drop_round_trip_annotations(&mut out);
    out
}

/// A server-side apply configuration sent to autoscaling/v1 as the autoscaling/v2
/// configuration it stands for: only the fields it sets. Setting
/// `targetCPUUtilizationPercentage` or the metrics annotation sets the whole (atomic)
/// `metrics` list, the other part taken from `live` (the stored object) where the
/// configuration does not give it, as the v1 object the real server applies it to would
/// carry it.
pub(crate) fn config_to_v2(config: &Value, live: Option<&Value>) -> Value {
    let mut out = config.clone();
    if !out.is_object() {
        return out;
    }
    if out.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1") {
        out["apiVersion"] = json!("autoscaling/v2");
    }
    let live = live.unwrap_or(&Value::Null);
    let live_metrics = list_at(live, "/spec/metrics");
    let is_cpu_target = |m: &Value| {
        is_cpu_resource(m) && value_at(m, "/resource/target/averageUtilization").is_some()
    };
    if let Some(spec_in) = value_at(config, "/spec") {
        let mut spec = Map::new();
        if let Some(reference) = value_at(spec_in, "/scaleTargetRef") {
            spec.insert("scaleTargetRef".into(), reference.clone());
        }
        copy(&mut spec, "minReplicas", spec_in, "/minReplicas");
        copy(&mut spec, "maxReplicas", spec_in, "/maxReplicas");
        let annotated = annotation(config, METRIC_SPECS)
            .and_then(|text| unmarshal_list(METRIC_SPEC, text))
            .map(|list| list.iter().map(metric_from_v1).collect::<Vec<_>>());
        let cpu = value_at(spec_in, "/targetCPUUtilizationPercentage");
        if annotated.is_some() || cpu.is_some() {
            let mut metrics = annotated.unwrap_or_else(|| {
                live_metrics
                    .iter()
                    .filter(|m| !is_cpu_target(m))
                    .cloned()
                    .collect()
            });
            match cpu {
                Some(percent) => metrics.push(cpu_utilization(false, percent)),
                None => metrics.extend(live_metrics.iter().filter(|m| is_cpu_target(m)).cloned()),
            }
            if metrics.is_empty() {
                metrics.push(cpu_utilization(false, &json!(DEFAULT_CPU_UTILIZATION)));
            }
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(behavior) = annotation(config, BEHAVIOR).and_then(behavior_from_annotation) {
            spec.insert("behavior".into(), behavior);
        }
        out["spec"] = Value::Object(spec);
    }
    if let Some(status_in) = value_at(config, "/status") {
        let mut status = Map::new();
        for key in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            copy(&mut status, key, status_in, &format!("/{key}"));
        }
        if let Some(percent) = value_at(status_in, "/currentCPUUtilizationPercentage") {
            status.insert(
                "currentMetrics".into(),
                json!([cpu_utilization(true, percent)]),
            );
        }
        out["status"] = Value::Object(status);
    }
    drop_round_trip_annotations(&mut out);
    out
}

/// A patch through `resource` of the object stored as `storage`: for autoscaling/v1, a JSON,
/// merge or strategic merge patch applies to the object as v1 serves it and the result is
/// stored as an update through v1 would store it; an apply configuration is converted
/// ([`config_to_v2`]) and applied to the stored object. Only for the view (the server
/// patches other types through the store).
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
    if kind == PatchKind::Apply {
        let live = store.get(storage, namespace, name).ok();
        let config = config_to_v2(document, live.as_deref());
        return store.patch(
            storage,
            namespace,
            name,
            kind,
            &config,
            subresource,
            options,
        );
    }
    let old = store.get(storage, namespace, name)?;
    let doc = patch::patched(resource, from_v2(&old), kind, document)?;
    store.update(storage, namespace, name, to_v2(&doc), subresource, options)
}

#[cfg(test)]
mod tests;
