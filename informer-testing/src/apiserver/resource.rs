//! The resource types the server knows: built-in ones and registered custom resources.

use std::any::TypeId;
use std::sync::Arc;

use serde_json::{Value, json};

use super::fields::Shape;
use super::storage::Object;
use super::structural::Schema;

/// A custom resource type to serve, as a CustomResourceDefinition would declare it.
///
/// ```
/// use informer_testing::CustomResourceSpec;
/// let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
///     .with_status_subresource()
///     .with_short_names(["wd"]);
/// assert!(spec.namespaced);
/// assert_eq!(spec.api_version(), "example.com/v1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CustomResourceSpec {
    /// API group, for example `example.com`. Must not be empty.
    pub group: String,
    /// API version within the group, for example `v1`.
    pub version: String,
    /// Kind, for example `Widget`.
    pub kind: String,
    /// Lower-case plural resource name used in URLs, for example `widgets`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the type has a `status` subresource (status changes are then
    /// ignored on the main resource and `generation` tracks everything but
    /// `metadata` and `status`).
    pub status_subresource: bool,
    /// Short names for discovery (kubectl uses them, e.g. `kubectl get wd`).
    pub short_names: Vec<String>,
    /// The `scale` subresource, as a CustomResourceDefinition declares it.
    pub scale: Option<ScaleSubresource>,
}

/// Where a custom resource keeps what its `scale` subresource (an `autoscaling/v1` `Scale`)
/// shows, as JSON paths like `.spec.replicas` (CustomResourceDefinition's
/// `subresources.scale`).
///
/// ```
/// use informer_testing::ScaleSubresource;
/// let scale = ScaleSubresource::new(".spec.replicas", ".status.replicas")
///     .with_label_selector_path(".status.selector");
/// assert_eq!(scale.label_selector_path.as_deref(), Some(".status.selector"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// The desired replicas (`Scale.spec.replicas`), e.g. `.spec.replicas`. Must be under `.spec`.
    pub spec_replicas_path: String,
    /// The observed replicas (`Scale.status.replicas`), e.g. `.status.replicas`. Must be
    /// under `.status`.
    pub status_replicas_path: String,
    /// The label selector in its string form (`Scale.status.selector`), e.g.
    /// `.status.selector`. Must be under `.status` or `.spec`.
    pub label_selector_path: Option<String>,
}

impl ScaleSubresource {
    /// A scale subresource without a label selector.
    ///
    /// ```
    /// # use informer_testing::ScaleSubresource;
    /// let scale = ScaleSubresource::new(".spec.replicas", ".status.replicas");
    /// assert!(scale.label_selector_path.is_none());
    /// ```
    pub fn new(spec_replicas_path: &str, status_replicas_path: &str) -> Self {
        Self {
            spec_replicas_path: spec_replicas_path.to_string(),
            status_replicas_path: status_replicas_path.to_string(),
            label_selector_path: None,
        }
    }

    /// Adds the path of the label selector string.
    ///
    /// ```
    /// # use informer_testing::ScaleSubresource;
    /// let scale = ScaleSubresource::new(".spec.replicas", ".status.replicas")
    ///     .with_label_selector_path(".status.selector");
    /// assert!(scale.label_selector_path.is_some());
    /// ```
    pub fn with_label_selector_path(mut self, path: &str) -> Self {
        self.label_selector_path = Some(path.to_string());
        self
    }
}

impl CustomResourceSpec {
    /// A namespaced custom resource without a status subresource.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
    /// assert!(spec.namespaced && !spec.status_subresource);
    /// ```
    pub fn namespaced(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            namespaced: true,
            ..Self::default()
        }
    }

    /// A cluster-scoped custom resource without a status subresource.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// let spec = CustomResourceSpec::cluster_scoped("example.com", "v1", "Zone", "zones");
    /// assert!(!spec.namespaced);
    /// ```
    pub fn cluster_scoped(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self {
            namespaced: false,
            ..Self::namespaced(group, version, kind, plural)
        }
    }

    /// The spec of a statically typed [`kube::Resource`] (for example one made
    /// with `#[derive(CustomResource)]`); it is namespaced when its `Scope` is
    /// `NamespaceResourceScope`.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// # fn spec_for<K>() -> CustomResourceSpec
    /// # where K: kube::Resource<DynamicType = ()>, K::Scope: 'static {
    /// CustomResourceSpec::for_resource::<K>()
    /// # }
    /// ```
    pub fn for_resource<K>() -> Self
    where
        K: kube::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        let namespaced =
            TypeId::of::<K::Scope>() == TypeId::of::<kube::core::NamespaceResourceScope>();
        Self {
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
            namespaced,
            ..Self::default()
        }
    }

    /// Adds a `status` subresource.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// let spec = CustomResourceSpec::namespaced("g.io", "v1", "K", "ks").with_status_subresource();
    /// assert!(spec.status_subresource);
    /// ```
    pub fn with_status_subresource(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    /// Adds a `scale` subresource (`kubectl scale`, autoscalers).
    ///
    /// ```
    /// # use informer_testing::{CustomResourceSpec, ScaleSubresource};
    /// let spec = CustomResourceSpec::namespaced("g.io", "v1", "K", "ks")
    ///     .with_scale_subresource(ScaleSubresource::new(".spec.replicas", ".status.replicas"));
    /// assert!(spec.scale.is_some());
    /// ```
    pub fn with_scale_subresource(mut self, scale: ScaleSubresource) -> Self {
        self.scale = Some(scale);
        self
    }

    /// Sets the short names advertised in discovery.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// let spec = CustomResourceSpec::namespaced("g.io", "v1", "K", "ks").with_short_names(["k"]);
    /// assert_eq!(spec.short_names, ["k"]);
    /// ```
    pub fn with_short_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.short_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// `group/version`.
    ///
    /// ```
    /// # use informer_testing::CustomResourceSpec;
    /// assert_eq!(CustomResourceSpec::namespaced("g.io", "v1", "K", "ks").api_version(), "g.io/v1");
    /// ```
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// The `apiextensions.k8s.io/v1` CustomResourceDefinition that declares the type: one
    /// served and stored version, a schema that keeps every field
    /// (`x-kubernetes-preserve-unknown-fields`, so objects are stored as sent), the `status`
    /// and `scale` subresources if the spec has them, and its short names. The test server
    /// serves a spec by creating this CRD; a real API server serves it the same way.
    ///
    /// ```
    /// use informer_testing::CustomResourceSpec;
    /// let crd = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
    ///     .with_status_subresource()
    ///     .to_crd();
    /// assert_eq!(crd["metadata"]["name"], "widgets.example.com");
    /// assert_eq!(crd["spec"]["scope"], "Namespaced");
    /// assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    /// assert!(crd["spec"]["versions"][0]["subresources"]["status"].is_object());
    /// ```
    pub fn to_crd(&self) -> Value {
        let mut version = json!({
            "name": self.version,
            "served": true,
            "storage": true,
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
            }},
        });
        if self.status_subresource {
            version["subresources"]["status"] = json!({});
        }
        if let Some(scale) = &self.scale {
            let mut subresource = json!({
                "specReplicasPath": scale.spec_replicas_path,
                "statusReplicasPath": scale.status_replicas_path,
            });
            if let Some(selector) = &scale.label_selector_path {
                subresource["labelSelectorPath"] = json!(selector);
            }
            version["subresources"]["scale"] = subresource;
        }
        let mut names = json!({
            "plural": self.plural,
            "singular": self.kind.to_ascii_lowercase(),
            "kind": self.kind,
            "listKind": format!("{}List", self.kind),
        });
        if !self.short_names.is_empty() {
            names["shortNames"] = json!(self.short_names);
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{}.{}", self.plural, self.group)},
            "spec": {
                "group": self.group,
                "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
                "names": names,
                "versions": [version],
            },
        })
    }
}

/// One served resource type.
#[derive(Clone, Debug)]
pub(crate) struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// Where the `scale` subresource reads and writes, if the type has one.
    pub scale: Option<ScaleSubresource>,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Extra supported field selectors beyond `metadata.name`/`metadata.namespace`,
    /// with the value used when the field is absent.
    pub fields: Vec<(&'static str, &'static str)>,
    /// A custom resource version's `selectableFields`, as field labels (`spec.color` for
    /// the JSON path `.spec.color`): supported in field selectors, an absent field's value
    /// being `""`.
    pub selectable_fields: Vec<String>,
    /// Whether DELETE returns the object (Pods, Services, ServiceAccounts, StorageClasses)
    /// rather than a `Status`.
    pub returns_deleted_object: bool,
    /// Whether the server keeps `metadata.generation` (workloads, pods, custom resources):
    /// 1 on create, one more on every change outside metadata and status.
    pub tracks_generation: bool,
    pub custom: bool,
    /// `listKind` (`<Kind>List` for built-in types).
    pub list_kind: String,
    /// The version objects are stored in: the CRD's storage version (the served one for
    /// built-in types). Objects read through another version get its `apiVersion`.
    pub storage_version: String,
    /// The structural schema of this version of a custom resource.
    pub schema: Option<Arc<Schema>>,
    /// Of the storage version's type as a write through another version sees it (its
    /// `schema` that version's): the storage version's schema, which prunes and defaults
    /// what is stored once it is validated.
    pub stored_schema: Option<Arc<Schema>>,
    /// This version's `openAPIV3Schema` as its CRD gives it (published in OpenAPI v3).
    pub openapi_schema: Option<Arc<Value>>,
    /// `additionalPrinterColumns` of a custom resource version (Table output).
    pub printer_columns: Vec<PrinterColumn>,
    /// The CustomResourceDefinition that serves the type.
    pub crd: Option<String>,
    /// The first revision watches of the type can start after: the revision the type started
    /// being served at (the real server's watch cache starts then).
    pub served_since: u64,
    /// The CRD is being deleted: no new objects.
    pub terminating: bool,
    /// The `Warning` every request of this version of a custom resource gets: its
    /// `deprecationWarning`, or the default one, when the version is `deprecated`.
    pub deprecation_warning: Option<String>,
}

/// An `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PrinterColumn {
    pub name: String,
    /// `type`: integer, number, string, boolean or date.
    pub kind: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

impl ResourceType {
    fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
            singular: kind.to_ascii_lowercase(),
            namespaced,
            status_subresource: false,
            scale: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            fields: Vec::new(),
            selectable_fields: Vec::new(),
            returns_deleted_object: false,
            tracks_generation: false,
            custom: false,
            list_kind: format!("{kind}List"),
            storage_version: version.to_string(),
            schema: None,
            openapi_schema: None,
            stored_schema: None,
            printer_columns: Vec::new(),
            crd: None,
            served_since: 0,
            terminating: false,
            deprecation_warning: None,
        }
    }

    fn status(mut self) -> Self {
        self.status_subresource = true;
        self
    }

    fn short(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    fn all_category(mut self) -> Self {
        self.categories = vec!["all".to_string()];
        self
    }

    /// In the `api-extensions` category (`kubectl get api-extensions`), as the kinds that
    /// extend the API are: CustomResourceDefinitions and the admission configurations.
    fn api_extensions_category(mut self) -> Self {
        self.categories = vec!["api-extensions".to_string()];
        self
    }

    /// A workload's `scale`: `.spec.replicas`, `.status.replicas`, and the selector (from
    /// `.spec.selector`, a `LabelSelector` object turned into its string form).
    fn workload_scale(mut self) -> Self {
        self.scale = Some(
            ScaleSubresource::new(".spec.replicas", ".status.replicas")
                .with_label_selector_path(".spec.selector"),
        );
        self
    }

    fn generation(mut self) -> Self {
        self.tracks_generation = true;
        self
    }

    /// DELETE answers with the object, as the types whose registry sets
    /// `ReturnDeletedObject: true` (Pods, Services, ServiceAccounts, StorageClasses).
    fn returns_deleted(mut self) -> Self {
        self.returns_deleted_object = true;
        self
    }

    fn fields(mut self, fields: &[(&'static str, &'static str)]) -> Self {
        self.fields = fields.to_vec();
        self
    }

    /// `v1` or `group/version`.
    /// The type as Go's `GroupVersionKind.String` prints it: `/v1, Kind=ConfigMap` for the
    /// core group (the slash stays), `apps/v1, Kind=Deployment`.
    pub(crate) fn group_version_kind(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }

    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The `apiVersion` objects are stored with.
    pub(crate) fn storage_api_version(&self) -> String {
        if self.group.is_empty() {
            self.storage_version.clone()
        } else {
            format!("{}/{}", self.group, self.storage_version)
        }
    }

    /// The same type as its storage version serves it (itself when this is the storage
    /// version): the store keeps every version's objects in the storage version.
    pub(crate) fn storage(self: &Arc<Self>, registry: &Registry) -> Arc<ResourceType> {
        if let Some((group, version)) = self.stored_as() {
            return registry
                .by_path(group, version, &self.plural)
                .unwrap_or_else(|| self.clone());
        }
        if self.version == self.storage_version {
            return self.clone();
        }
        registry
            .by_path(&self.group, &self.storage_version, &self.plural)
            .unwrap_or_else(|| self.clone())
    }

    /// A stored object as this version serves it: its `apiVersion` set to this version's
    /// (custom resources convert with the `None` strategy: nothing else changes).
    pub(crate) fn present(&self, object: &Object) -> Object {
        if super::events::is_view(self) {
            return match object.get("apiVersion").and_then(Value::as_str) {
                Some("v1") => Object::new(super::events::from_core(object)),
                _ => object.clone(),
            };
        }
        if super::hpa_v1::is_view(self) {
            return match object.get("apiVersion").and_then(Value::as_str) {
                Some("autoscaling/v2") => Object::new(super::hpa_v1::from_v2(object)),
                _ => object.clone(),
            };
        }
        if object.get("apiVersion").and_then(Value::as_str) == Some(self.api_version().as_str()) {
            return object.clone();
        }
        // Stored in another version (before the storage version changed, or served through
        // a version that is not the storage one): converted, then pruned and defaulted by
        // this version's schema, as a custom resource is on every read.
        let mut value = object.as_ref().clone();
        if let Value::Object(map) = &mut value {
            map.insert("apiVersion".into(), Value::String(self.api_version()));
        }
        if self.custom
            && let Some(schema) = &self.schema
        {
            schema.prune(&mut value);
            schema.apply_defaults(&mut value);
        }
        Object::new(value)
    }

    /// Sets an object's `apiVersion` to the storage version's, if it is this version's.
    pub(crate) fn to_storage(&self, object: &mut Value) {
        if super::events::is_view(self) {
            super::events::rename_to_core(object);
            return;
        }
        if super::hpa_v1::is_view(self) {
            *object = super::hpa_v1::to_v2(object);
            return;
        }
        if self.version == self.storage_version {
            return;
        }
        if object.get("apiVersion").and_then(Value::as_str) == Some(self.api_version().as_str())
            && let Value::Object(map) = object
        {
            map.insert(
                "apiVersion".into(),
                Value::String(self.storage_api_version()),
            );
        }
    }

    /// How server-side apply sees objects of the type.
    pub(crate) fn shape(&self) -> Shape<'_> {
        match &self.schema {
            Some(schema) => Shape::Schema(schema),
            None if self.custom => Shape::Deduced,
            None => Shape::builtin(&self.api_version(), &self.kind),
        }
    }

    /// Whether an update (PUT) of a missing object creates it, as the type's registry
    /// strategy says (`AllowCreateOnUpdate`): Services, Endpoints, EndpointSlices,
    /// LimitRanges, Events, Leases and the RBAC kinds; no custom resource.
    pub(crate) fn creates_on_update(&self) -> bool {
        !self.custom
            && matches!(
                (self.group.as_str(), self.kind.as_str()),
                ("", "Service" | "Endpoints" | "LimitRange" | "Event")
                    | ("events.k8s.io", "Event")
                    | ("discovery.k8s.io", "EndpointSlice")
                    | ("coordination.k8s.io", "Lease")
                    | (
                        "rbac.authorization.k8s.io",
                        "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
                    )
            )
    }

    /// `Kind` for the core group, `Kind.group` otherwise (`Widget.example.com`).
    pub(crate) fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// `plural` for the core group, `plural.group` otherwise (`widgets.example.com`).
    pub(crate) fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The storage key of the resource (`group/plural`).
    pub(crate) fn key(&self) -> ResourceKey {
        let group = self
            .stored_as()
            .map_or(self.group.as_str(), |(group, _)| group);
        ResourceKey(Arc::from(format!("{group}/{}", self.plural)))
    }

    /// The group and version of the built-in type whose objects this type serves converted
    /// field by field (events.k8s.io/v1 Events are core v1 Events, autoscaling/v1
    /// HorizontalPodAutoscalers autoscaling/v2 ones), if it is such a view.
    pub(crate) fn stored_as(&self) -> Option<(&'static str, &'static str)> {
        if super::events::is_view(self) {
            Some(("", "v1"))
        } else if super::hpa_v1::is_view(self) {
            Some(("autoscaling", "v2"))
        } else {
            None
        }
    }

    /// Whether a field selector field is supported. A cluster-scoped custom resource has no
    /// `metadata.namespace` field (apiextensions' `ConvertFieldLabel`); built-in types all
    /// accept it.
    pub(crate) fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || field == "metadata.namespace" && (self.namespaced || !self.custom)
            || self.fields.iter().any(|(f, _)| *f == field)
            || self.selectable_fields.iter().any(|f| f == field)
    }

    /// The string value of a selectable field of an object.
    pub(crate) fn field_value(&self, object: &Value, field: &str) -> String {
        let default = self
            .fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, d)| *d)
            .unwrap_or("");
        // Field labels that are not the JSON path of their value.
        let (path, fallback) = match super::events::stored_field_path(self, field) {
            Some((path, fallback)) => (path, fallback),
            None => match field {
                "status.successful" => ("status.succeeded".to_string(), None),
                field => (field.to_string(), None),
            },
        };
        if let Some(fallback) = fallback {
            let value = self.field_value(object, &path);
            if value.is_empty() {
                return self.field_value(object, fallback);
            }
            return value;
        }
        let mut current = object;
        for part in path.split('.') {
            match current.get(part) {
                Some(next) => current = next,
                None => return default.to_string(),
            }
        }
        match current {
            Value::String(s) => s.clone(),
            Value::Null => default.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            other => other.to_string(),
        }
    }
}

/// Identifies a resource's storage (`group/plural`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ResourceKey(Arc<str>);

impl ResourceKey {
    /// The storage of a built-in type that is stored as itself (`group/plural`).
    pub(crate) fn of(group: &str, plural: &str) -> Self {
        Self(Arc::from(format!("{group}/{plural}")))
    }
}

/// The API group of the admission configurations.
pub(crate) const ADMISSION: &str = "admissionregistration.k8s.io";

/// All resource types the server serves.
#[derive(Clone, Debug)]
pub(crate) struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    /// The built-in types: core v1 Pods, ConfigMaps, Secrets, Services, Namespaces, Events,
    /// ServiceAccounts, PersistentVolumeClaims, Nodes, Endpoints, ReplicationControllers,
    /// PersistentVolumes, ResourceQuotas, LimitRanges, PodTemplates; apps/v1 Deployments,
    /// ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions; batch/v1 Jobs, CronJobs;
    /// coordination.k8s.io/v1 Leases; rbac.authorization.k8s.io/v1 Roles, RoleBindings,
    /// ClusterRoles, ClusterRoleBindings; networking.k8s.io/v1 Ingresses, IngressClasses,
    /// NetworkPolicies; policy/v1 PodDisruptionBudgets; discovery.k8s.io/v1 EndpointSlices;
    /// autoscaling/v2 HorizontalPodAutoscalers, and autoscaling/v1 ones (the v2 ones,
    /// converted: [`super::hpa_v1`]); storage.k8s.io/v1 StorageClasses; scheduling.k8s.io/v1
    /// PriorityClasses; events.k8s.io/v1 Events (the core v1 Events, converted:
    /// [`super::events`]); admissionregistration.k8s.io/v1 ValidatingWebhookConfigurations,
    /// MutatingWebhookConfigurations, ValidatingAdmissionPolicies and their bindings (stored
    /// and validated, never called or evaluated).
    pub(crate) fn builtin() -> Self {
        let pod_fields = [
            ("spec.nodeName", ""),
            ("spec.restartPolicy", ""),
            ("spec.schedulerName", ""),
            ("spec.serviceAccountName", ""),
            ("spec.hostNetwork", "false"),
            ("status.phase", ""),
            ("status.podIP", ""),
            ("status.nominatedNodeName", ""),
        ];
        let event_fields = [
            ("involvedObject.kind", ""),
            ("involvedObject.namespace", ""),
            ("involvedObject.name", ""),
            ("involvedObject.uid", ""),
            ("involvedObject.apiVersion", ""),
            ("involvedObject.resourceVersion", ""),
            ("involvedObject.fieldPath", ""),
            ("reason", ""),
            ("reportingComponent", ""),
            ("source", ""),
            ("type", ""),
        ];
        let mut pods = ResourceType::builtin("", "v1", "Pod", "pods", true)
            .status()
            .short(&["po"])
            .all_category()
            .generation()
            .fields(&pod_fields);
        pods.returns_deleted_object = true;
        let types = vec![
            pods,
            ResourceType::builtin("", "v1", "ConfigMap", "configmaps", true).short(&["cm"]),
            ResourceType::builtin("", "v1", "Secret", "secrets", true).fields(&[("type", "")]),
            ResourceType::builtin("", "v1", "Service", "services", true)
                .status()
                .returns_deleted()
                .short(&["svc"])
                .all_category()
                .fields(&[("spec.clusterIP", ""), ("spec.type", "")]),
            ResourceType::builtin("", "v1", "Namespace", "namespaces", false)
                .status()
                .short(&["ns"])
                .fields(&[("status.phase", "")]),
            ResourceType::builtin("", "v1", "Event", "events", true)
                .short(&["ev"])
                .fields(&event_fields),
            ResourceType::builtin("apps", "v1", "Deployment", "deployments", true)
                .status()
                .short(&["deploy"])
                .all_category()
                .generation()
                .workload_scale(),
            ResourceType::builtin("apps", "v1", "ReplicaSet", "replicasets", true)
                .status()
                .short(&["rs"])
                .all_category()
                .generation()
                .workload_scale()
                .fields(&[("status.replicas", "0")]),
            ResourceType::builtin("apps", "v1", "StatefulSet", "statefulsets", true)
                .status()
                .short(&["sts"])
                .all_category()
                .generation()
                .workload_scale(),
            ResourceType::builtin("coordination.k8s.io", "v1", "Lease", "leases", true),
            ResourceType::builtin("", "v1", "ServiceAccount", "serviceaccounts", true)
                .returns_deleted()
                .short(&["sa"]),
            ResourceType::builtin(
                "",
                "v1",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                true,
            )
            .status()
            .short(&["pvc"]),
            ResourceType::builtin("", "v1", "Node", "nodes", false)
                .status()
                .short(&["no"])
                .fields(&[("spec.unschedulable", "false")]),
            ResourceType::builtin("apps", "v1", "DaemonSet", "daemonsets", true)
                .status()
                .short(&["ds"])
                .all_category()
                .generation(),
            ResourceType::builtin("batch", "v1", "Job", "jobs", true)
                .status()
                .all_category()
                .generation()
                .fields(&[("status.successful", "0")]),
            ResourceType::builtin("batch", "v1", "CronJob", "cronjobs", true)
                .status()
                .short(&["cj"])
                .all_category()
                .generation(),
            ResourceType::builtin("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
            ResourceType::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "RoleBinding",
                "rolebindings",
                true,
            ),
            ResourceType::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                false,
            ),
            ResourceType::builtin(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
                false,
            ),
            ResourceType::builtin("networking.k8s.io", "v1", "Ingress", "ingresses", true)
                .status()
                .short(&["ing"])
                .generation(),
            ResourceType::builtin(
                "policy",
                "v1",
                "PodDisruptionBudget",
                "poddisruptionbudgets",
                true,
            )
            .status()
            .short(&["pdb"])
            .generation(),
            ResourceType::builtin("", "v1", "Endpoints", "endpoints", true).short(&["ep"]),
            ResourceType::builtin(
                "",
                "v1",
                "ReplicationController",
                "replicationcontrollers",
                true,
            )
            .status()
            .short(&["rc"])
            .all_category()
            .generation()
            .workload_scale()
            .fields(&[("status.replicas", "0")]),
            ResourceType::builtin("", "v1", "PersistentVolume", "persistentvolumes", false)
                .status()
                .short(&["pv"]),
            ResourceType::builtin("", "v1", "ResourceQuota", "resourcequotas", true)
                .status()
                .short(&["quota"]),
            ResourceType::builtin("", "v1", "LimitRange", "limitranges", true).short(&["limits"]),
            ResourceType::builtin("", "v1", "PodTemplate", "podtemplates", true).generation(),
            ResourceType::builtin(
                "discovery.k8s.io",
                "v1",
                "EndpointSlice",
                "endpointslices",
                true,
            )
            .generation(),
            ResourceType::builtin(
                "networking.k8s.io",
                "v1",
                "NetworkPolicy",
                "networkpolicies",
                true,
            )
            .short(&["netpol"])
            .generation(),
            ResourceType::builtin(
                "networking.k8s.io",
                "v1",
                "IngressClass",
                "ingressclasses",
                false,
            )
            .generation(),
            ResourceType::builtin(
                "autoscaling",
                "v2",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
                true,
            )
            .status()
            .short(&["hpa"])
            .all_category()
            .generation(),
            ResourceType::builtin(
                "autoscaling",
                "v1",
                "HorizontalPodAutoscaler",
                "horizontalpodautoscalers",
                true,
            )
            .status()
            .short(&["hpa"])
            .all_category()
            .generation(),
            ResourceType::builtin(
                "storage.k8s.io",
                "v1",
                "StorageClass",
                "storageclasses",
                false,
            )
            .returns_deleted()
            .short(&["sc"]),
            ResourceType::builtin(
                "scheduling.k8s.io",
                "v1",
                "PriorityClass",
                "priorityclasses",
                false,
            )
            .short(&["pc"]),
            ResourceType::builtin(
                "apps",
                "v1",
                "ControllerRevision",
                "controllerrevisions",
                true,
            ),
            ResourceType::builtin(super::events::GROUP, "v1", "Event", "events", true)
                .short(&["ev"])
                .fields(&super::events::FIELDS),
            ResourceType::builtin(
                ADMISSION,
                "v1",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
                false,
            )
            .api_extensions_category()
            .generation(),
            ResourceType::builtin(
                ADMISSION,
                "v1",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
                false,
            )
            .api_extensions_category()
            .generation(),
            ResourceType::builtin(
                ADMISSION,
                "v1",
                "ValidatingAdmissionPolicy",
                "validatingadmissionpolicies",
                false,
            )
            .status()
            .api_extensions_category()
            .generation(),
            ResourceType::builtin(
                ADMISSION,
                "v1",
                "ValidatingAdmissionPolicyBinding",
                "validatingadmissionpolicybindings",
                false,
            )
            .api_extensions_category()
            .generation(),
            super::crd::definition_type(),
            ResourceType::builtin(
                super::apiservices::GROUP,
                "v1",
                "APIService",
                "apiservices",
                false,
            )
            .status()
            .api_extensions_category(),
            ResourceType::builtin(
                super::certificates::GROUP,
                "v1",
                super::certificates::KIND,
                "certificatesigningrequests",
                false,
            )
            .status()
            .short(&["csr"])
            .fields(&[("spec.signerName", "")]),
        ];
        Self {
            types: types.into_iter().map(Arc::new).collect(),
        }
    }

    /// Serves the types of a CustomResourceDefinition (one per served version), replacing
    /// what it served before. A type another CRD or a built-in type already serves at the
    /// same group, version and plural is not replaced.
    pub(crate) fn install(&mut self, crd: &str, types: Vec<ResourceType>) {
        self.types.retain(|t| t.crd.as_deref() != Some(crd));
        for t in types {
            if self.by_path(&t.group, &t.version, &t.plural).is_none() {
                self.types.push(Arc::new(t));
            }
        }
    }

    /// Stops serving the types of a CustomResourceDefinition.
    pub(crate) fn uninstall(&mut self, crd: &str) {
        self.types.retain(|t| t.crd.as_deref() != Some(crd));
    }

    /// The types a CustomResourceDefinition serves now.
    pub(crate) fn of_crd(&self, crd: &str) -> Vec<Arc<ResourceType>> {
        self.types
            .iter()
            .filter(|t| t.crd.as_deref() == Some(crd))
            .cloned()
            .collect()
    }

    /// The built-in types and `widgets.example.com/v1` (namespaced, `Widget`), for unit tests.
    #[cfg(test)]
    pub(crate) fn with_widgets() -> Self {
        let mut registry = Self::builtin();
        registry
            .register(&CustomResourceSpec::namespaced(
                "example.com",
                "v1",
                "Widget",
                "widgets",
            ))
            .expect("Widget registers");
        registry
    }

    /// Serves a custom resource type as its CRD declares it, for unit tests that need a
    /// registry without a server.
    #[cfg(test)]
    pub(crate) fn register(&mut self, spec: &CustomResourceSpec) -> Result<(), String> {
        let mut crd = spec.to_crd();
        super::crd::apply_defaults(&mut crd);
        super::crd::prepare_create(&mut crd);
        let errors = super::crd::validation::validate(&crd, None);
        if !errors.is_empty() {
            let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
            return Err(errors.join(", "));
        }
        let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
        let types = super::crd::served_types(&crd, 0).map_err(|e| e.to_string())?;
        self.install(&name, types);
        Ok(())
    }

    /// All types.
    pub(crate) fn types(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    /// The type served at `group/version/plural`.
    pub(crate) fn by_path(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    /// The type for an object's `apiVersion` and `kind`.
    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .cloned()
    }

    /// Whether a group/version is served.
    pub(crate) fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.types
            .iter()
            .any(|t| t.group == group && t.version == version)
    }

    /// Whether `plural` is a namespaced resource of `group/version`.
    pub(crate) fn is_namespaced_plural(&self, group: &str, version: &str, plural: &str) -> bool {
        self.by_path(group, version, plural)
            .is_some_and(|t| t.namespaced)
    }
}

#[cfg(test)]
mod tests;
