//! The defaults a real API server gives a built-in object when it decodes a write: the
//! `SetDefaults_*` functions of `k8s.io/kubernetes/pkg/apis/core/v1` and `apps/v1` for the
//! kinds this server serves, applied to creates, updates and patches alike (before the
//! writer's fields are recorded, as a real server's decoding runs before its field manager).
//!
//! | kind | defaults |
//! | --- | --- |
//! | Pod, and the pod templates of Deployments, ReplicaSets and StatefulSets | `dnsPolicy`, `restartPolicy`, `schedulerName`, `securityContext`, `terminationGracePeriodSeconds`; each container's `imagePullPolicy` (`Always` for `:latest` or no tag, else `IfNotPresent`), `terminationMessagePath` and `-Policy`, `resources`, ports' `protocol`, probes' periods and thresholds, `httpGet` scheme and path, `fieldRef.apiVersion`; volumes' `defaultMode`, and `emptyDir` for a volume with no source |
//! | Pod only | `enableServiceLinks`; requests from limits; host ports from container ports on the host network |
//! | Deployment | `replicas`, the `RollingUpdate` strategy (25% / 25%), `revisionHistoryLimit`, `progressDeadlineSeconds` |
//! | ReplicaSet | `replicas` |
//! | StatefulSet | `replicas`, `podManagementPolicy`, the `RollingUpdate` strategy with partition 0, `revisionHistoryLimit`, `persistentVolumeClaimRetentionPolicy`; claim templates' `volumeMode` and `Pending` phase |
//! | Service | `type`, `sessionAffinity` (and `ClientIP`'s timeout), ports' `protocol` and `targetPort`, `internalTrafficPolicy`, `externalTrafficPolicy` and `allocateLoadBalancerNodePorts` where they apply |
//! | Secret | `type: Opaque`; `stringData` merged into `data` (the conversion from v1) |
//! | DaemonSet | the `RollingUpdate` strategy (1 unavailable, no surge), `revisionHistoryLimit` |
//! | Job | its pod template's labels as its own when it has none; `completions` and `parallelism`, `backoffLimit`, `completionMode`, `suspend`, `podReplacementPolicy`, `manualSelector` |
//! | CronJob | `concurrencyPolicy`, `suspend`, the history limits; its job template's pod template only |
//! | PersistentVolumeClaim | `volumeMode` |
//! | every pod template (and a StatefulSet's claim templates) | no `creationTimestamp: null` in its metadata (a 1.36 server omits a zero time) |
//!
//! What a real server's registry allocates (a Service's cluster IP and node ports, its IP
//! families) is in [`super::services`]; what admission plugins add to a new Pod, and its
//! status and QoS class, in [`super::pods`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::resource::{ADMISSION, ResourceType};

/// Applies the defaults of `resource`'s kind to `object` (nothing for other kinds).
pub(crate) fn apply(resource: &ResourceType, object: &mut Value) {
    if resource.custom {
        return;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pod(object),
        ("", "Service") => service(object),
        ("", "Secret") => secret(object),
        ("apps", "Deployment") => deployment(object),
        ("apps", "ReplicaSet") => {
            if let Some(spec) = child(object, "spec") {
                default_value(spec, "replicas", json!(1));
                template(spec);
            }
        }
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("batch", "Job") => job(object),
        ("batch", "CronJob") => cron_job(object),
        ("", "PersistentVolumeClaim") => {
            if let Some(spec) = child(object, "spec") {
                default_string(spec, "volumeMode", "Filesystem");
            }
        }
        _ => {}
    }
}

/// The object at `key` of `value` (an object), made empty if missing or null, as Go's
/// non-pointer structs always are; `None` if `value` or what is there is not an object.
fn child<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Map<String, Value>> {
    match value {
        Value::Object(map) => child_of(map, key),
        _ => None,
    }
}

/// [`child`] of a map.
pub(crate) fn child_of<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

/// Sets `key` to `value` if it is missing or null (Go: a nil pointer).
fn default_value(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        None | Some(Value::Null) => {
            map.insert(key.to_string(), value);
        }
        Some(_) => {}
    }
}

/// Sets `key` to `value` if it is missing, null or empty (Go: an empty string).
fn default_string(map: &mut Map<String, Value>, key: &str, value: &str) {
    match map.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(_) => return,
    }
    map.insert(key.to_string(), json!(value));
}

/// Sets the number at `key` to `value` if it is missing, null or 0 (Go: an `int32` left
/// at its zero value).
fn default_number(map: &mut Map<String, Value>, key: &str, value: i64) {
    match map.get(key) {
        None | Some(Value::Null) => {}
        Some(n) if n.as_i64() == Some(0) => {}
        Some(_) => return,
    }
    map.insert(key.to_string(), json!(value));
}

/// The objects of the array at `key`, if any.
fn each<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

fn pod(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    pod_spec(spec);
    for key in ["containers", "initContainers"] {
        for container in each(spec, key) {
            requests_from_limits(container);
        }
    }
    default_value(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&json!(true)) {
        for key in ["containers", "initContainers"] {
            for container in each(spec, key) {
                for port in each(container, "ports") {
                    if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0
                        && let Some(container_port) = port.get("containerPort").cloned()
                    {
                        port.insert("hostPort".into(), container_port);
                    }
                }
            }
        }
    }
}

/// A Pod's (not a template's) containers request what they limit, where they request
/// nothing else.
fn requests_from_limits(container: &mut Map<String, Value>) {
    let Some(resources) = container
        .get_mut("resources")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(requests) = child_of(resources, "requests") {
        for (name, quantity) in limits {
            requests.entry(name).or_insert(quantity);
        }
    }
}

/// The pod template of a workload (`spec.template`): its pod spec's defaults, and no
/// `creationTimestamp: null` in its metadata (a 1.36 server omits a zero time).
fn template(spec: &mut Map<String, Value>) {
    let Some(template) = child_of(spec, "template") else {
        return;
    };
    drop_null_creation_timestamp(template);
    if let Some(pod) = child_of(template, "spec") {
        pod_spec(pod);
    }
}

/// Removes `metadata.creationTimestamp: null` from an embedded object (a template): Go
/// decodes it to the zero time, which `omitzero` leaves out.
fn drop_null_creation_timestamp(object: &mut Map<String, Value>) {
    if let Some(Value::Object(meta)) = object.get_mut("metadata")
        && meta.get("creationTimestamp") == Some(&Value::Null)
    {
        meta.remove("creationTimestamp");
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    default_string(spec, "dnsPolicy", "ClusterFirst");
    default_string(spec, "restartPolicy", "Always");
    default_value(spec, "securityContext", json!({}));
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_string(spec, "schedulerName", "default-scheduler");
    for key in ["containers", "initContainers", "ephemeralContainers"] {
        for container in each(spec, key) {
            self::container(container);
        }
    }
    for volume in each(spec, "volumes") {
        self::volume(volume);
    }
}

/// `Always` for an image tagged `latest` or not tagged (nor pinned by digest), otherwise
/// `IfNotPresent`, as the real server parses the image name.
fn pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
        None if digest || image.is_empty() => "IfNotPresent",
        None => "Always",
    }
}

fn container(container: &mut Map<String, Value>) {
    if container
        .get("imagePullPolicy")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        let image = container.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = pull_policy(image);
        container.insert("imagePullPolicy".into(), json!(policy));
    }
    default_string(container, "terminationMessagePath", "/dev/termination-log");
    default_string(container, "terminationMessagePolicy", "File");
    default_value(container, "resources", json!({}));
    for port in each(container, "ports") {
        default_string(port, "protocol", "TCP");
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(key).and_then(Value::as_object_mut) {
            default_number(probe, "timeoutSeconds", 1);
            default_number(probe, "periodSeconds", 10);
            default_number(probe, "successThreshold", 1);
            default_number(probe, "failureThreshold", 3);
            http_get(probe);
            // `GRPCAction.Service` is `// +default=""`.
            if let Some(grpc) = probe.get_mut("grpc").and_then(Value::as_object_mut) {
                default_string(grpc, "service", "");
            }
        }
    }
    if let Some(lifecycle) = container
        .get_mut("lifecycle")
        .and_then(Value::as_object_mut)
    {
        for key in ["postStart", "preStop"] {
            if let Some(handler) = lifecycle.get_mut(key).and_then(Value::as_object_mut) {
                http_get(handler);
            }
        }
    }
    for env in each(container, "env") {
        if let Some(field_ref) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .and_then(Value::as_object_mut)
        {
            default_string(field_ref, "apiVersion", "v1");
        }
    }
}

/// A probe's or a lifecycle handler's `httpGet`: path `/`, scheme `HTTP`.
fn http_get(handler: &mut Map<String, Value>) {
    if let Some(action) = handler.get_mut("httpGet").and_then(Value::as_object_mut) {
        default_string(action, "path", "/");
        default_string(action, "scheme", "HTTP");
    }
}

fn volume(volume: &mut Map<String, Value>) {
    if volume.keys().all(|key| key == "name") {
        volume.insert("emptyDir".into(), json!({}));
    }
    for source in ["configMap", "secret", "downwardAPI", "projected"] {
        if let Some(source) = volume.get_mut(source).and_then(Value::as_object_mut) {
            default_value(source, "defaultMode", json!(0o644));
        }
    }
}

fn deployment(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default_value(spec, "replicas", json!(1));
    if let Some(strategy) = child_of(spec, "strategy") {
        default_string(strategy, "type", "RollingUpdate");
        if strategy.get("type") == Some(&json!("RollingUpdate"))
            && let Some(rolling) = child_of(strategy, "rollingUpdate")
        {
            default_value(rolling, "maxUnavailable", json!("25%"));
            default_value(rolling, "maxSurge", json!("25%"));
        }
    }
    default_value(spec, "revisionHistoryLimit", json!(10));
    default_value(spec, "progressDeadlineSeconds", json!(600));
    template(spec);
}

fn stateful_set(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default_string(spec, "podManagementPolicy", "OrderedReady");
    if let Some(strategy) = child_of(spec, "updateStrategy") {
        if strategy
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            strategy.insert("type".into(), json!("RollingUpdate"));
            default_value(strategy, "rollingUpdate", json!({}));
        }
        if strategy.get("type") == Some(&json!("RollingUpdate"))
            && let Some(rolling) = strategy
                .get_mut("rollingUpdate")
                .and_then(Value::as_object_mut)
        {
            default_value(rolling, "partition", json!(0));
        }
    }
    if let Some(retention) = child_of(spec, "persistentVolumeClaimRetentionPolicy") {
        default_string(retention, "whenDeleted", "Retain");
        default_string(retention, "whenScaled", "Retain");
    }
    default_value(spec, "replicas", json!(1));
    default_value(spec, "revisionHistoryLimit", json!(10));
    for claim in each(spec, "volumeClaimTemplates") {
        drop_null_creation_timestamp(claim);
        if let Some(claim_spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
            default_string(claim_spec, "volumeMode", "Filesystem");
        }
        if let Some(status) = child_of(claim, "status") {
            default_string(status, "phase", "Pending");
        }
    }
    template(spec);
}

fn daemon_set(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    if let Some(strategy) = child_of(spec, "updateStrategy") {
        default_string(strategy, "type", "RollingUpdate");
        if strategy.get("type") == Some(&json!("RollingUpdate"))
            && let Some(rolling) = child_of(strategy, "rollingUpdate")
        {
            default_value(rolling, "maxUnavailable", json!(1));
            default_value(rolling, "maxSurge", json!(0));
        }
    }
    default_value(spec, "revisionHistoryLimit", json!(10));
    template(spec);
}

/// A Job (`SetDefaults_Job`): its spec's defaults, and its pod template's labels as its
/// own when it has none.
fn job(object: &mut Value) {
    job_labels(object);
    if let Some(spec) = child(object, "spec") {
        job_spec(spec);
    }
}

/// A Job's pod template's labels as its own when it has none. The real server defaults
/// every Job it reads from storage, after the strategy gave the template its
/// `controller-uid` and `job-name` labels: so a new Job is read back with them too.
pub(crate) fn job_labels(object: &mut Value) {
    let template_labels = object
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .filter(|labels| !labels.is_empty())
        .cloned();
    if let Some(labels) = template_labels
        && let Some(meta) = child(object, "metadata")
        && meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        meta.insert("labels".into(), Value::Object(labels));
    }
}

/// A Job's spec; a CronJob's job template gets only its pod template's defaults.
fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default_value(spec, "parallelism", json!(1));
    let per_index = !unset(spec, "backoffLimitPerIndex");
    default_value(
        spec,
        "backoffLimit",
        json!(if per_index { i32::MAX } else { 6 }),
    );
    default_value(spec, "completionMode", json!("NonIndexed"));
    default_value(spec, "suspend", json!(false));
    let policy = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    default_value(spec, "podReplacementPolicy", json!(policy));
    default_value(spec, "manualSelector", json!(false));
    template(spec);
}

fn cron_job(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default_string(spec, "concurrencyPolicy", "Allow");
    default_value(spec, "suspend", json!(false));
    default_value(spec, "successfulJobsHistoryLimit", json!(3));
    default_value(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(job) = child_of(spec, "jobTemplate") {
        drop_null_creation_timestamp(job);
        if let Some(job_spec) = child_of(job, "spec") {
            template(job_spec);
        }
    }
}

/// A Secret as the real server decodes it: `stringData` merged into `data`, base64-encoded
/// and over a key of the same name, then dropped (the conversion from v1 does this, so
/// `stringData` is never stored nor read back); `type: Opaque` when unset. A `stringData`
/// with a value that is not a string (which a real server cannot decode) is left as it came,
/// its values neither encoded nor lost.
fn secret(object: &mut Value) {
    let Value::Object(secret) = object else {
        return;
    };
    match secret.get("stringData") {
        Some(Value::Null) => {
            secret.remove("stringData");
        }
        Some(Value::Object(strings)) if strings.values().all(Value::is_string) => {
            let strings = strings.clone();
            secret.remove("stringData");
            if let Some(data) = child_of(secret, "data") {
                for (key, value) in strings {
                    let text = value.as_str().unwrap_or_default();
                    data.insert(key, json!(BASE64.encode(text)));
                }
            }
        }
        _ => {}
    }
    default_string(secret, "type", "Opaque");
}

fn service(object: &mut Value) {
    let Some(spec) = child(object, "spec") else {
        return;
    };
    default_string(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10_800}}),
                );
            }
        }
        _ => {}
    }
    default_string(spec, "type", "ClusterIP");
    for port in each(spec, "ports") {
        default_string(port, "protocol", "TCP");
        let unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(n) => n.as_i64() == Some(0),
        };
        if unset && let Some(number) = port.get("port").cloned() {
            port.insert("targetPort".into(), number);
        }
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
        default_string(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(kind.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        default_value(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        default_value(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

/// The defaults of the kinds served beside those of [`apply`] (kept apart from it): the
/// `SetDefaults_*` functions of `k8s.io/kubernetes/pkg/apis/{core,discovery,networking,
/// autoscaling,storage,scheduling}/v1` (`autoscaling/v2` for HorizontalPodAutoscalers).
///
/// | kind | defaults |
/// | --- | --- |
/// | ReplicationController | `replicas`; `selector` and the object's labels from its template's labels when empty; its pod template's defaults |
/// | PodTemplate | its pod template's defaults |
/// | PersistentVolume | `persistentVolumeReclaimPolicy: Retain`, `volumeMode: Filesystem`, `hostPath.type: ""`, `status.phase: Pending` |
/// | Endpoints | ports' `protocol` |
/// | EndpointSlice | ports' `name` (`""`) and `protocol` |
/// | LimitRange | a `Container` item's `default` from `max`, and `defaultRequest` from `default`, then `min` |
/// | NetworkPolicy | `policyTypes` (`Ingress`, and `Egress` with egress rules); ports' `protocol` |
/// | IngressClass | `parameters.scope: Cluster` |
/// | HorizontalPodAutoscaler | `minReplicas: 1`; a CPU utilization target of 80% without metrics; a `behavior`'s missing scale-up and scale-down rules |
/// | StorageClass | `reclaimPolicy: Delete`, `volumeBindingMode: Immediate` |
/// | PriorityClass | `preemptionPolicy: PreemptLowerPriority` |
/// | Node | `spec.podCIDR` and `spec.podCIDRs` in step (the conversions through the internal type) |
/// | ValidatingWebhookConfiguration, MutatingWebhookConfiguration | each webhook's `failurePolicy: Fail`, `matchPolicy: Equivalent`, empty `namespaceSelector` and `objectSelector`, `timeoutSeconds: 10` (and `reinvocationPolicy: Never` when mutating), rules' `scope: "*"`, a service's `port: 443` |
/// | ValidatingAdmissionPolicy | `failurePolicy: Fail`; its `matchConstraints` as a binding's `matchResources` |
/// | ValidatingAdmissionPolicyBinding | `matchResources`' `matchPolicy: Equivalent`, empty `namespaceSelector` and `objectSelector`, rules' `scope: "*"` |
pub(crate) fn apply_more_kinds(resource: &ResourceType, object: &mut Value) {
    if resource.custom {
        return;
    }
    let Value::Object(map) = object else {
        return;
    };
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "ReplicationController") => replication_controller(map),
        ("", "PodTemplate") => template(map),
        ("", "PersistentVolume") => {
            if let Some(spec) = child_of(map, "spec") {
                default_string(spec, "persistentVolumeReclaimPolicy", "Retain");
                default_value(spec, "volumeMode", json!("Filesystem"));
                if let Some(host_path) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                    default_value(host_path, "type", json!(""));
                }
            }
            if let Some(status) = child_of(map, "status") {
                default_string(status, "phase", "Pending");
            }
        }
        ("", "Endpoints") => {
            for subset in each(map, "subsets") {
                for port in each(subset, "ports") {
                    default_string(port, "protocol", "TCP");
                }
            }
        }
        ("discovery.k8s.io", "EndpointSlice") => {
            for port in each(map, "ports") {
                default_value(port, "name", json!(""));
                default_value(port, "protocol", json!("TCP"));
            }
        }
        ("", "LimitRange") => {
            if let Some(spec) = child_of(map, "spec") {
                for item in each(spec, "limits") {
                    limit_range_item(item);
                }
            }
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy(map),
        ("networking.k8s.io", "IngressClass") => {
            if let Some(Value::Object(spec)) = map.get_mut("spec")
                && let Some(Value::Object(parameters)) = spec.get_mut("parameters")
            {
                default_value(parameters, "scope", json!("Cluster"));
            }
        }
        ("autoscaling", "HorizontalPodAutoscaler") => horizontal_pod_autoscaler(map),
        ("storage.k8s.io", "StorageClass") => {
            default_value(map, "reclaimPolicy", json!("Delete"));
            default_value(map, "volumeBindingMode", json!("Immediate"));
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            default_value(map, "preemptionPolicy", json!("PreemptLowerPriority"));
        }
        ("", "Node") => {
            if let Some(Value::Object(spec)) = map.get_mut("spec") {
                node_pod_cidrs(spec);
            }
        }
        (ADMISSION, "ValidatingWebhookConfiguration") => {
            each(map, "webhooks").for_each(|hook| webhook(hook, false));
        }
        (ADMISSION, "MutatingWebhookConfiguration") => {
            each(map, "webhooks").for_each(|hook| webhook(hook, true));
        }
        (ADMISSION, "ValidatingAdmissionPolicy") => {
            if let Some(spec) = child_of(map, "spec") {
                default_value(spec, "failurePolicy", json!("Fail"));
                if let Some(Value::Object(constraints)) = spec.get_mut("matchConstraints") {
                    match_resources(constraints);
                }
            }
        }
        (ADMISSION, "ValidatingAdmissionPolicyBinding") => {
            if let Some(Value::Object(spec)) = map.get_mut("spec")
                && let Some(Value::Object(resources)) = spec.get_mut("matchResources")
            {
                match_resources(resources);
            }
        }
        (super::apiservices::GROUP, "APIService") => super::apiservices::apply_defaults(map),
        _ => {}
    }
}

/// A Node spec's `podCIDR` and `podCIDRs` kept in step, as the conversions through the
/// internal type (which has `podCIDRs` only) keep them: `podCIDRs` wins, or is `[podCIDR]`
/// when empty, and `podCIDR` is its first entry.
fn node_pod_cidrs(spec: &mut Map<String, Value>) {
    let listed = spec
        .get("podCIDRs")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .cloned();
    let single = spec
        .get("podCIDR")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let cidrs = match (listed, single) {
        (Some(listed), _) => listed,
        (None, Some(single)) => vec![json!(single)],
        (None, None) => return,
    };
    spec.insert("podCIDR".into(), cidrs[0].clone());
    spec.insert("podCIDRs".into(), Value::Array(cidrs));
}

/// `SetDefaults_ValidatingWebhook` and `SetDefaults_MutatingWebhook`, with the rules' and
/// the service's defaults.
fn webhook(hook: &mut Map<String, Value>, mutating: bool) {
    default_value(hook, "failurePolicy", json!("Fail"));
    default_value(hook, "matchPolicy", json!("Equivalent"));
    default_value(hook, "namespaceSelector", json!({}));
    default_value(hook, "objectSelector", json!({}));
    default_value(hook, "timeoutSeconds", json!(10));
    if mutating {
        default_value(hook, "reinvocationPolicy", json!("Never"));
    }
    for rule in each(hook, "rules") {
        default_value(rule, "scope", json!("*"));
    }
    if let Some(Value::Object(config)) = hook.get_mut("clientConfig")
        && let Some(Value::Object(service)) = config.get_mut("service")
    {
        default_value(service, "port", json!(443));
    }
}

/// `SetDefaults_MatchResources`, with its rules' `SetDefaults_Rule`.
fn match_resources(resources: &mut Map<String, Value>) {
    default_value(resources, "matchPolicy", json!("Equivalent"));
    default_value(resources, "namespaceSelector", json!({}));
    default_value(resources, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in each(resources, key) {
            default_value(rule, "scope", json!("*"));
        }
    }
}

fn replication_controller(object: &mut Map<String, Value>) {
    let template_labels = object
        .get("spec")
        .and_then(|spec| spec.pointer("/template/metadata/labels"))
        .and_then(Value::as_object)
        .filter(|labels| !labels.is_empty())
        .cloned();
    if let Some(labels) = template_labels {
        let empty =
            |value: Option<&Value>| value.and_then(Value::as_object).is_none_or(Map::is_empty);
        if let Some(spec) = child_of(object, "spec")
            && empty(spec.get("selector"))
        {
            spec.insert("selector".into(), Value::Object(labels.clone()));
        }
        if let Some(meta) = child_of(object, "metadata")
            && empty(meta.get("labels"))
        {
            meta.insert("labels".into(), Value::Object(labels));
        }
    }
    if let Some(spec) = child_of(object, "spec") {
        default_value(spec, "replicas", json!(1));
        if spec.get("template").is_some_and(Value::is_object) {
            template(spec);
        }
    }
}

/// A `Container` limit's `default` (from `max`) and `defaultRequest` (from `default`, then
/// `min`), each resource only where unset; empty maps are left out, as Go writes them.
fn limit_range_item(item: &mut Map<String, Value>) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let resources = |item: &Map<String, Value>, key: &str| {
        item.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut default = resources(item, "default");
    for (name, quantity) in resources(item, "max") {
        default.entry(name).or_insert(quantity);
    }
    let mut request = resources(item, "defaultRequest");
    for source in [&default, &resources(item, "min")] {
        for (name, quantity) in source {
            request
                .entry(name.clone())
                .or_insert_with(|| quantity.clone());
        }
    }
    for (key, values) in [("default", default), ("defaultRequest", request)] {
        if !values.is_empty() {
            item.insert(key.into(), Value::Object(values));
        }
    }
}

fn network_policy(object: &mut Map<String, Value>) {
    let Some(spec) = child_of(object, "spec") else {
        return;
    };
    for rules in ["ingress", "egress"] {
        for rule in each(spec, rules) {
            for port in each(rule, "ports") {
                default_value(port, "protocol", json!("TCP"));
            }
        }
    }
    let unset = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if unset {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|rules| !rules.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

fn horizontal_pod_autoscaler(object: &mut Map<String, Value>) {
    let Some(spec) = child_of(object, "spec") else {
        return;
    };
    default_value(spec, "minReplicas", json!(1));
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}
            }}]),
        );
    }
    // A behavior given gets every rule it leaves out (`GenerateHPAScale{Up,Down}Rules`).
    if let Some(Value::Object(behavior)) = spec.get_mut("behavior") {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        });
        let down = json!({
            "stabilizationWindowSeconds": 300,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let Some(rules) = child_of(behavior, key) else {
                continue;
            };
            // An empty list of policies gets the default ones too (`len(Policies) == 0`).
            if rules
                .get("policies")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
            {
                rules.remove("policies");
            }
            if let Value::Object(defaults) = defaults {
                for (field, value) in defaults {
                    default_value(rules, &field, value);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
