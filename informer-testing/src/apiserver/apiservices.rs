//! `apiregistration.k8s.io/v1` APIServices, as kube-apiserver's aggregator serves them
//! (`k8s.io/kube-aggregator`):
//!
//! - **storage**: cluster-scoped, with a `status` subresource, in the `api-extensions`
//!   category; `spec.service.port` defaults to 443 (`SetDefaults_ServiceReference`); a create
//!   drops the status the client sent and marks a local APIService (one without
//!   `spec.service`) `Available` (the strategy's `PrepareForCreate`); validated as
//!   `ValidateAPIService` validates (the name is `<version>.<group>`, priorities in range,
//!   a local APIService has no `caBundle` nor `insecureSkipTLSVerify`, ...);
//!   `kubectl get apiservices` prints `NAME`, `SERVICE`, `AVAILABLE`, `AGE`;
//! - **autoregistration**: a Local APIService for every built-in group version the server
//!   serves and has a priority for (`v1.`, `v1.apps`, `v2.autoscaling`, ..., labelled
//!   `kube-aggregator.kubernetes.io/automanaged: onstart`, made when the server starts), and
//!   one for every group version a CustomResourceDefinition serves (labelled `"true"`, priority
//!   1000/100, removed when no CRD serves it any more), as the autoregister and
//!   crd-autoregistration controllers keep them. The CRD ones are registered by the CRD
//!   reconcile that follows every write of a CRD ([`register`], called from
//!   `crd::reconcile`), so they are in place when the write returns and always written after
//!   the CRD's conditions; the controller registers them again when it starts over;
//! - **availability**: the `Available` condition, as the local and remote availability
//!   controllers set it: `True` (`Local`) for a local APIService; for one backed by a
//!   Service, `False` with upstream's reason and message when the Service is missing
//!   (`ServiceNotFound`), does not listen on the port (`ServicePortError`), has no
//!   EndpointSlices (`EndpointsNotFound`) or no ready address on the port
//!   (`MissingEndpoints`), and otherwise `FailedDiscoveryCheck`: nothing answers behind a
//!   Service here (no Pod runs), so the discovery check fails as a refused connection.
//!
//! Not done: the aggregation itself. An APIService backed by a Service adds nothing to
//! discovery and no request is proxied to it; its group stays unserved (`404`).

use std::collections::{BTreeMap, HashSet, VecDeque};

use serde_json::{Map, Value, json};

use super::controllers::Controller;
use super::resource::{Registry, ResourceKey, ResourceType};
use super::status::FieldError;
use super::storage::{
    Change, DeleteOptions, EventType, Snapshot, Store, Subresource, WriteOptions,
};
use super::str_at;
use super::time::now_rfc3339;
use super::validation::{DNS1035_LABEL, DNS1123_SUBDOMAIN, is_dns_subdomain, is_dns1035_label};

/// The API group of APIServices.
pub(crate) const GROUP: &str = "apiregistration.k8s.io";

/// The label the autoregistration controllers put on the APIServices they manage
/// (`autoregister.AutoRegisterManagedLabel`).
pub(crate) const MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// The field manager of the controllers' writes (kube-apiserver's loopback client).
const MANAGER: &str = "kube-apiserver";

/// Whether `t` is the APIService type.
pub(crate) fn is_apiservice(t: &ResourceType) -> bool {
    t.group == GROUP && t.kind == "APIService" && !t.custom
}

/// The priorities kube-apiserver registers its built-in group versions with
/// (`apiVersionPriorities`: `DefaultGenericAPIServicePriorities` merged with
/// `cmd/kube-apiserver/app/aggregator.go`'s), for the group versions this server can serve.
/// A served group version missing here gets no APIService, as upstream's `makeAPIService`
/// skips it.
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// `SetDefaults_ServiceReference`: a Service reference's port is 443.
pub(crate) fn apply_defaults(object: &mut Map<String, Value>) {
    if let Some(Value::Object(spec)) = object.get_mut("spec")
        && let Some(Value::Object(service)) = spec.get_mut("service")
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// Whether an APIService is served by this server itself (no `spec.service`).
fn is_local(object: &Value) -> bool {
    object
        .pointer("/spec/service")
        .is_none_or(|service| !service.is_object())
}

/// The `Available` condition of a local APIService
/// (`apiregistration.NewLocalAvailableAPIServiceCondition`).
fn local_available() -> Value {
    json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": now_rfc3339(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    })
}

/// The status a create stores (the strategy's `PrepareForCreate`): empty, with a local
/// APIService marked available.
pub(crate) fn status_on_create(object: &Value) -> Value {
    if is_local(object) {
        json!({"conditions": [local_available()]})
    } else {
        json!({})
    }
}

/// `ValidateAPIService` and `ValidateAPIServiceStatus`
/// (`kube-aggregator/pkg/apis/apiregistration/validation`).
pub(crate) fn validate(object: &Value, errors: &mut Vec<FieldError>) {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let int = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let (group, version) = (text("/spec/group"), text("/spec/version"));
    let name = text("/metadata/name");
    // `ValidateObjectMeta` with the APIService's own name rule.
    let required_name = format!("{version}.{group}");
    let mut name_problems = super::validation::path_segment_errors(name);
    if name_problems.is_empty() && !name.is_empty() && name != required_name {
        name_problems.push(format!(
            "must be `spec.version+\".\"+spec.group`: {required_name:?}"
        ));
    }
    for problem in name_problems {
        errors.push(FieldError::invalid("metadata.name", name, &problem));
    }
    if group.is_empty() && version != "v1" {
        errors.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        if group.len() > 253 {
            errors.push(FieldError::invalid(
                "spec.group",
                group,
                "must be no more than 253 characters",
            ));
        }
        if !is_dns_subdomain(group) {
            errors.push(FieldError::invalid("spec.group", group, DNS1123_SUBDOMAIN));
        }
    }
    if version.len() > 63 {
        errors.push(FieldError::invalid(
            "spec.version",
            version,
            "must be no more than 63 characters",
        ));
    }
    if !is_dns1035_label(version) {
        errors.push(FieldError::invalid("spec.version", version, DNS1035_LABEL));
    }
    let group_priority = int("/spec/groupPriorityMinimum");
    if group_priority <= 0 || group_priority > 20000 {
        errors.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int("/spec/versionPriority");
    if version_priority <= 0 || version_priority > 1000 {
        errors.push(FieldError::invalid(
            "spec.versionPriority",
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = text("/spec/caBundle");
    let insecure = object
        .pointer("/spec/insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if is_local(object) {
        if !ca_bundle.is_empty() {
            // The bytes the base64 text decodes to.
            let bytes = ca_bundle.trim_end_matches('=').len() * 3 / 4;
            errors.push(FieldError::invalid(
                "spec.caBundle",
                format!("{bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errors.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
    } else {
        if text("/spec/service/namespace").is_empty() {
            errors.push(FieldError::required("spec.service.namespace", ""));
        }
        if text("/spec/service/name").is_empty() {
            errors.push(FieldError::required("spec.service.name", ""));
        }
        let port = int("/spec/service/port");
        if !(1..=65535).contains(&port) {
            errors.push(FieldError::invalid(
                "spec.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            ));
        }
        if insecure && !ca_bundle.is_empty() {
            errors.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "may not be true if caBundle is present",
            ));
        }
    }
    let conditions = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, condition) in conditions.iter().enumerate() {
        let status = condition
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !matches!(status, "True" | "False" | "Unknown") {
            errors.push(FieldError::not_supported(
                &format!("status.conditions[{i}].status"),
                status,
                &["True", "False", "Unknown"],
            ));
        }
    }
}

/// The columns `kubectl get apiservices` shows (`kube-aggregator`'s `etcd.go` table
/// convertor), given the `Name` and `Age` columns.
pub(crate) fn table_columns(name: Value, age: Value) -> Vec<Value> {
    let column = |title: &str, description: &str| super::table::column(title, "", description);
    vec![
        name,
        column(
            "Service",
            "The reference to the service that hosts this API endpoint.",
        ),
        column("Available", "Whether this service is available."),
        age,
    ]
}

/// An APIService's cells: `Local` or `<namespace>/<name>`, and `True`, `False (<reason>)`
/// or `Unknown` from its `Available` condition.
pub(crate) fn table_cells(object: &Value, name: Value, age: Value) -> Vec<Value> {
    let service = match object.pointer("/spec/service") {
        Some(service) if service.is_object() => format!(
            "{}/{}",
            service
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            service.get("name").and_then(Value::as_str).unwrap_or("")
        ),
        _ => "Local".to_string(),
    };
    let available = available_condition(object)
        .map(|condition| {
            let text = |key: &str| condition.get(key).and_then(Value::as_str).unwrap_or("");
            match (text("status"), text("reason")) {
                ("True", _) => "True".to_string(),
                (status, "") => status.to_string(),
                (status, reason) => format!("{status} ({reason})"),
            }
        })
        .unwrap_or_else(|| "Unknown".to_string());
    vec![name, json!(service), json!(available), age]
}

fn available_condition(object: &Value) -> Option<&Value> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"))
}

/// The group versions the server serves itself, each with whether only CRDs serve it: the
/// built-in types' from the registry, and every served version of every stored CRD (as
/// kube-aggregator's `crdregistration` controller reads them from its CRD lister, whatever
/// their conditions). Reading the CRDs from the store, not the registry, makes a change of a
/// CRD the controller observes the change it acts on: the registry is brought in line with a
/// CRD just after its write, and a controller running in between would miss it.
fn served_group_versions(store: &Store, registry: &Registry) -> BTreeMap<(String, String), bool> {
    let mut served = BTreeMap::new();
    for t in registry.types().iter().filter(|t| t.crd.is_none()) {
        served.insert((t.group.clone(), t.version.clone()), false);
    }
    for group in super::reviews::GROUPS {
        served.insert((group.to_string(), "v1".to_string()), false);
    }
    let crds = registry.by_path(super::crd::GROUP, "v1", "customresourcedefinitions");
    for (_, crd) in crds.iter().flat_map(|crds| store.objects(crds)) {
        let group = str_at(crd, "/spec/group");
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            if version["served"] == true {
                let name = str_at(version, "/name").to_string();
                served.entry((group.to_string(), name)).or_insert(true);
            }
        }
    }
    served
}

/// The Local APIService of a group version.
fn local_apiservice(group: &str, version: &str, priorities: (i64, i64), managed: &str) -> Value {
    let mut spec = json!({
        "version": version,
        "groupPriorityMinimum": priorities.0,
        "versionPriority": priorities.1,
    });
    if !group.is_empty() {
        spec["group"] = json!(group);
    }
    json!({
        "apiVersion": format!("{GROUP}/v1"),
        "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {MANAGED_LABEL: managed}},
        "spec": spec,
    })
}

/// The autoregistration, crd-autoregistration and availability controllers of the
/// aggregator (see the module docs).
pub(crate) struct ApiServiceController {
    apiservices: Option<ResourceKey>,
    services: Option<ResourceKey>,
    slices: Option<ResourceKey>,
    /// Every managed Local APIService is due (at start, and after the store was reset or
    /// the subscription lost).
    register_on_start: bool,
    /// A Service or an EndpointSlice changed: every APIService backed by a Service is
    /// checked again.
    recheck_remote: bool,
    /// APIServices to check, each once.
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl ApiServiceController {
    pub(crate) fn new(registry: &Registry) -> Self {
        let key =
            |group: &str, plural: &str| registry.by_path(group, "v1", plural).map(|t| t.key());
        Self {
            apiservices: key(GROUP, "apiservices"),
            services: key("", "services"),
            slices: key("discovery.k8s.io", "endpointslices"),
            register_on_start: false,
            recheck_remote: false,
            queue: VecDeque::new(),
            queued: HashSet::new(),
        }
    }

    fn push(&mut self, name: &str) {
        if self.queued.insert(name.to_string()) {
            self.queue.push_back(name.to_string());
        }
    }
}

/// Sets the `Available` condition of one APIService, as the local and remote
/// availability controllers do.
fn check(store: &mut Store, registry: &Registry, name: &str) {
    let Some(apiservices) = registry.by_path(GROUP, "v1", "apiservices") else {
        return;
    };
    let Ok(current) = store.get(&apiservices, None, name) else {
        return;
    };
    let condition = availability(store, registry, &current);
    let mut updated = current.as_ref().clone();
    set_condition(&mut updated, condition);
    if updated.get("status") == current.get("status") {
        return;
    }
    if let Err(err) = store.update(
        &apiservices,
        None,
        name,
        updated,
        Subresource::Status,
        WriteOptions::by(MANAGER),
    ) {
        tracing::debug!(%name, %err, "the APIService status was not updated");
    }
}

/// The value of an APIService's `MANAGED_LABEL` (`onstart` or `true`), if the
/// autoregistration controllers manage it.
fn managed_by(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/labels")
        .and_then(|labels| labels.get(MANAGED_LABEL))
        .and_then(Value::as_str)
}

/// Creates, updates or deletes the managed Local APIServices: the built-in ones only
/// when `on_start` (the autoregister controller's "sync on start"), the CRD ones always.
/// One it creates gets its `Available` condition in the same call.
pub(crate) fn register(store: &mut Store, registry: &Registry, on_start: bool) {
    let Some(apiservices) = registry.by_path(GROUP, "v1", "apiservices") else {
        return;
    };
    let mut desired: BTreeMap<String, Value> = BTreeMap::new();
    for ((group, version), by_crd) in served_group_versions(store, registry) {
        if by_crd {
            desired.insert(
                format!("{version}.{group}"),
                local_apiservice(&group, &version, (1000, 100), "true"),
            );
        } else if on_start
            && let Some(&(_, _, g, v)) = PRIORITIES
                .iter()
                .find(|(pg, pv, _, _)| *pg == group && *pv == version)
        {
            desired.insert(
                format!("{version}.{group}"),
                local_apiservice(&group, &version, (g, v), "onstart"),
            );
        }
    }
    let options = || WriteOptions::by(MANAGER);
    for (name, wanted) in &desired {
        match store.get(&apiservices, None, name) {
            Err(_) => {
                match store.create(&apiservices, None, wanted.clone(), options()) {
                    // A Local APIService is available at once.
                    Ok(_) => check(store, registry, name),
                    Err(err) => tracing::debug!(%name, %err, "the APIService was not registered"),
                }
            }
            Ok(current) => {
                let managed = managed_by(&current);
                if managed.is_none() {
                    // Not the controllers' own: left alone.
                    continue;
                }
                if current.get("spec") != wanted.get("spec") || managed != managed_by(wanted) {
                    let mut updated = current.as_ref().clone();
                    updated["spec"] = wanted["spec"].clone();
                    updated["metadata"]["labels"][MANAGED_LABEL] =
                        wanted["metadata"]["labels"][MANAGED_LABEL].clone();
                    if let Err(err) = store.update(
                        &apiservices,
                        None,
                        name,
                        updated,
                        Subresource::Main,
                        options(),
                    ) {
                        tracing::debug!(%name, %err, "the APIService was not updated");
                    }
                }
            }
        }
    }
    // The managed ones nothing serves any more: those of CRDs always, the built-in ones
    // only at start.
    let stale: Vec<String> = store
        .objects(&apiservices)
        .filter(|(key, _)| !desired.contains_key(&key[..]))
        .filter(|(_, object)| match managed_by(object) {
            Some("true") => true,
            Some("onstart") => on_start,
            _ => false,
        })
        .map(|(key, _)| key.to_string())
        .collect();
    for name in stale {
        if let Err(err) = store.delete(&apiservices, None, &name, &DeleteOptions::default(), false)
        {
            tracing::debug!(%name, %err, "the APIService was not removed");
        }
    }
}

/// `SetAPIServiceCondition`: the condition replaces the one of its type, keeping its
/// `lastTransitionTime` while its status does not change.
fn set_condition(object: &mut Value, condition: Value) {
    if !object.get("status").is_some_and(Value::is_object) {
        object["status"] = json!({});
    }
    let set = super::conditions::set_status(
        &mut object["status"]["conditions"],
        str_at(&condition, "/type"),
        str_at(&condition, "/status"),
    );
    set["reason"] = condition["reason"].clone();
    set["message"] = condition["message"].clone();
}

/// The `Available` condition an APIService should have now.
fn availability(store: &Store, registry: &Registry, apiservice: &Value) -> Value {
    if is_local(apiservice) {
        return local_available();
    }
    let text = |value: &Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (namespace, name) = (
        text(apiservice, "/spec/service/namespace"),
        text(apiservice, "/spec/service/name"),
    );
    let port = apiservice
        .pointer("/spec/service/port")
        .and_then(Value::as_i64)
        .unwrap_or(443);
    let unavailable = |reason: &str, message: String| {
        json!({
            "type": "Available",
            "status": "False",
            "lastTransitionTime": now_rfc3339(),
            "reason": reason,
            "message": message,
        })
    };
    let service = registry
        .by_path("", "v1", "services")
        .and_then(|services| store.get(&services, Some(&namespace), &name).ok());
    let Some(service) = service else {
        return unavailable(
            "ServiceNotFound",
            format!("service/{name} in {namespace:?} is not present"),
        );
    };
    let service_type = match text(&service, "/spec/type").as_str() {
        "" => "ClusterIP".to_string(),
        other => other.to_string(),
    };
    if service_type == "ClusterIP" {
        let ports = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(service_port) = ports
            .iter()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        else {
            return unavailable(
                "ServicePortError",
                format!("service/{name} in {namespace:?} is not listening on port {port}"),
            );
        };
        let port_name = text(service_port, "/name");
        let slices: Vec<Value> = registry
            .by_path("discovery.k8s.io", "v1", "endpointslices")
            .map(|slices| store.objects_in(&slices, &namespace))
            .unwrap_or_default()
            .into_iter()
            .map(|slice| slice.as_ref().clone())
            .filter(|slice| text(slice, "/metadata/labels/kubernetes.io~1service-name") == name)
            .collect();
        if slices.is_empty() {
            return unavailable(
                "EndpointsNotFound",
                format!("cannot find endpointslices for service/{name} in {namespace:?}"),
            );
        }
        if !slices
            .iter()
            .any(|slice| has_available_endpoint(slice, &port_name))
        {
            return unavailable(
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
                ),
            );
        }
    }
    // The discovery check: the cluster IP resolver's address, where nothing answers.
    let cluster_ip = text(&service, "/spec/clusterIP");
    let host = if service_type == "ExternalName" {
        text(&service, "/spec/externalName")
    } else {
        cluster_ip.clone()
    };
    let message = if service_type == "ClusterIP" && cluster_ip == "None" {
        "cannot route to service with ClusterIP \"None\"".to_string()
    } else {
        let path = if text(apiservice, "/metadata/name") == "v1." {
            format!("/api/{}", text(apiservice, "/spec/version"))
        } else {
            format!(
                "/apis/{}/{}",
                text(apiservice, "/spec/group"),
                text(apiservice, "/spec/version")
            )
        };
        let url = format!("https://{host}:{port}{path}");
        format!(
            "failing or missing response from {url}: Get {url:?}: dial tcp {host}:{port}: connect: connection refused"
        )
    };
    unavailable("FailedDiscoveryCheck", message)
}

/// `hasAvailableEndpoint`: a slice with a ready (or unknown) endpoint and a port of the name.
fn has_available_endpoint(slice: &Value, port_name: &str) -> bool {
    let ready = slice
        .get("endpoints")
        .and_then(Value::as_array)
        .is_some_and(|endpoints| {
            endpoints.iter().any(|e| {
                e.pointer("/conditions/ready")
                    .is_none_or(|r| r.is_null() || r == &json!(true))
            })
        });
    ready
        && slice
            .get("ports")
            .and_then(Value::as_array)
            .is_some_and(|ports| {
                ports.iter().any(|p| {
                    p.get("name").and_then(Value::as_str) == Some(port_name)
                        && p.get("port").is_some_and(|port| !port.is_null())
                })
            })
}

impl Controller for ApiServiceController {
    const NAME: &'static str = "apiservice-controllers";

    fn resync(&mut self, state: &Snapshot) {
        self.register_on_start = true;
        let names: Vec<String> = state
            .every_object()
            .filter(|(at, _)| Some(&at.resource) == self.apiservices.as_ref())
            .map(|(at, _)| at.key.to_string())
            .collect();
        for name in names {
            self.push(&name);
        }
    }

    fn observe(&mut self, _store: &Store, change: &Change) {
        let resource = Some(&change.resource);
        if resource == self.apiservices.as_ref() {
            if change.event != EventType::Deleted {
                self.push(&change.key);
            }
        } else if resource == self.services.as_ref() || resource == self.slices.as_ref() {
            self.recheck_remote = true;
        }
    }

    fn step(&mut self, store: &mut Store, registry: &Registry) -> bool {
        if std::mem::take(&mut self.register_on_start) {
            register(store, registry, true);
            return true;
        }
        if std::mem::take(&mut self.recheck_remote) {
            let apiservices = registry.by_path(GROUP, "v1", "apiservices");
            let remote: Vec<String> = apiservices
                .iter()
                .flat_map(|apiservices| store.objects(apiservices))
                .filter(|(_, object)| !is_local(object))
                .map(|(key, _)| key.to_string())
                .collect();
            for name in remote {
                self.push(&name);
            }
            return true;
        }
        let Some(name) = self.queue.pop_front() else {
            return false;
        };
        self.queued.remove(&name);
        check(store, registry, &name);
        true
    }
}

#[cfg(test)]
mod tests;
