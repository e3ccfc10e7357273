//! The resource types the server knows: built-in ones and registered custom resources.

use std::any::TypeId;
use std::sync::Arc;

use serde_json::Value;

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

    fn validate(&self) -> Result<(), String> {
        let check = |path: &str, under: &[&str]| {
            let valid = path.starts_with('.')
                && path[1..].split('.').all(|p| !p.is_empty())
                && under.iter().any(|u| path.starts_with(&format!(".{u}.")));
            if valid {
                Ok(())
            } else {
                Err(format!(
                    "scale path {path:?} must be a JSON path under .{}",
                    under.join(" or .")
                ))
            }
        };
        check(&self.spec_replicas_path, &["spec"])?;
        check(&self.status_replicas_path, &["status"])?;
        if let Some(path) = &self.label_selector_path {
            check(path, &["spec", "status"])?;
        }
        Ok(())
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

    pub(crate) fn validate(&self) -> Result<(), String> {
        let dns_label = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        if !dns_label(&self.group) || !self.group.contains('.') {
            return Err(format!(
                "group {:?} must be a non-empty DNS name containing a dot",
                self.group
            ));
        }
        if !dns_label(&self.version) || self.version.contains('.') {
            return Err(format!("version {:?} is not a valid version", self.version));
        }
        if !dns_label(&self.plural) || self.plural.contains('.') {
            return Err(format!(
                "plural {:?} must be a lower-case DNS label",
                self.plural
            ));
        }
        if self.kind.is_empty() || !self.kind.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(format!("kind {:?} must be alphanumeric", self.kind));
        }
        if let Some(scale) = &self.scale {
            scale.validate()?;
        }
        Ok(())
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
    /// Whether DELETE returns the object (pods, custom resources) rather than a `Status`.
    pub returns_deleted_object: bool,
    /// Whether the server keeps `metadata.generation` (workloads, pods, custom resources):
    /// 1 on create, one more on every change outside metadata and status.
    pub tracks_generation: bool,
    pub custom: bool,
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
            returns_deleted_object: false,
            tracks_generation: false,
            custom: false,
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

    fn fields(mut self, fields: &[(&'static str, &'static str)]) -> Self {
        self.fields = fields.to_vec();
        self
    }

    pub(crate) fn from_custom(spec: &CustomResourceSpec) -> Self {
        Self {
            group: spec.group.clone(),
            version: spec.version.clone(),
            kind: spec.kind.clone(),
            plural: spec.plural.clone(),
            singular: spec.kind.to_ascii_lowercase(),
            namespaced: spec.namespaced,
            status_subresource: spec.status_subresource,
            scale: spec.scale.clone(),
            short_names: spec.short_names.clone(),
            categories: Vec::new(),
            fields: Vec::new(),
            returns_deleted_object: true,
            tracks_generation: true,
            custom: true,
        }
    }

    /// `v1` or `group/version`.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The storage key of the resource (`group/plural`).
    pub(crate) fn key(&self) -> ResourceKey {
        ResourceKey(Arc::from(format!("{}/{}", self.group, self.plural)))
    }

    /// Whether a field selector field is supported.
    pub(crate) fn supports_field(&self, field: &str) -> bool {
        field == "metadata.name"
            || field == "metadata.namespace"
            || self.fields.iter().any(|(f, _)| *f == field)
    }

    /// The string value of a selectable field of an object.
    pub(crate) fn field_value(&self, object: &Value, field: &str) -> String {
        let default = self
            .fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, d)| *d)
            .unwrap_or("");
        let mut current = object;
        for part in field.split('.') {
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

/// All resource types the server serves.
#[derive(Clone, Debug)]
pub(crate) struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    /// The built-in types: core v1 Pods, ConfigMaps, Secrets, Services,
    /// Namespaces, Events; apps/v1 Deployments, ReplicaSets, StatefulSets;
    /// coordination.k8s.io/v1 Leases.
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
                .short(&["svc"])
                .all_category(),
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
        ];
        Self {
            types: types.into_iter().map(Arc::new).collect(),
        }
    }

    /// Adds (or replaces) a custom resource type.
    pub(crate) fn register(&mut self, spec: &CustomResourceSpec) -> Result<(), String> {
        spec.validate()?;
        if let Some(existing) = self
            .types
            .iter()
            .find(|t| t.group == spec.group && t.plural == spec.plural)
            && !existing.custom
        {
            return Err(format!(
                "{}.{} is a built-in resource",
                spec.plural, spec.group
            ));
        }
        self.types
            .retain(|t| !(t.group == spec.group && t.plural == spec.plural));
        self.types.push(Arc::new(ResourceType::from_custom(spec)));
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_lookup() {
        let registry = Registry::builtin();
        let pods = registry.by_path("", "v1", "pods").unwrap();
        assert_eq!(pods.kind, "Pod");
        assert!(pods.namespaced && pods.status_subresource);
        assert_eq!(
            registry.by_kind("apps/v1", "Deployment").unwrap().plural,
            "deployments"
        );
        assert_eq!(
            registry
                .by_kind("coordination.k8s.io/v1", "Lease")
                .unwrap()
                .plural,
            "leases"
        );
        assert!(!registry.by_path("", "v1", "namespaces").unwrap().namespaced);
        assert!(registry.by_path("apps", "v2", "deployments").is_none());
    }

    #[test]
    fn custom_resources_validate_and_register() {
        let mut registry = Registry::builtin();
        let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets");
        registry.register(&spec).unwrap();
        assert!(
            registry
                .by_path("example.com", "v1", "widgets")
                .unwrap()
                .custom
        );
        assert!(registry.serves_group_version("example.com", "v1"));
        assert!(
            registry
                .register(&CustomResourceSpec::namespaced(
                    "apps",
                    "v1",
                    "X",
                    "deployments"
                ))
                .is_err()
        );
        assert!(
            registry
                .register(&CustomResourceSpec::namespaced(
                    "example.com",
                    "v1",
                    "W",
                    "Widgets"
                ))
                .is_err()
        );
        assert!(
            registry
                .register(&CustomResourceSpec::namespaced("", "v1", "W", "ws"))
                .is_err()
        );
    }

    #[test]
    fn field_values() {
        let registry = Registry::builtin();
        let pods = registry.by_path("", "v1", "pods").unwrap();
        let pod = json!({"metadata": {"name": "a"}, "spec": {"nodeName": "n1"}});
        assert_eq!(pods.field_value(&pod, "spec.nodeName"), "n1");
        assert_eq!(pods.field_value(&pod, "spec.hostNetwork"), "false");
        assert_eq!(pods.field_value(&pod, "status.phase"), "");
        assert!(pods.supports_field("spec.nodeName"));
        assert!(!pods.supports_field("spec.bogus"));
    }
}
