//! The identity of a shared informer.

use std::any::TypeId;
use std::fmt;

use kube::Resource;

/// What an informer watches besides its resource type: a namespace and selectors.
///
/// Empty strings count as "not set", so `Some("")` and `None` name the same informer.
///
/// ```
/// use informer_runtime::factory::InformerParams;
///
/// let p = InformerParams::namespaced("shop").labels("app=web").fields("status.phase=Running");
/// assert_eq!(p.namespace.as_deref(), Some("shop"));
/// assert_eq!(InformerParams::all(), InformerParams::default());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerParams {
    /// The namespace to watch; `None`: every namespace (or a cluster-scoped resource).
    pub namespace: Option<String>,
    /// A label selector (`app=web,tier in (front)`), passed to the server.
    pub label_selector: Option<String>,
    /// A field selector (`status.phase=Running`), passed to the server.
    pub field_selector: Option<String>,
}

impl InformerParams {
    /// Every namespace, no selector.
    pub fn all() -> Self {
        Self::default()
    }

    /// One namespace, no selector.
    pub fn namespaced(namespace: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            ..Self::default()
        }
    }

    /// Sets the label selector.
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Sets the field selector.
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    fn normalized(&self) -> Self {
        fn norm(s: &Option<String>) -> Option<String> {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        }
        Self {
            namespace: norm(&self.namespace),
            label_selector: norm(&self.label_selector),
            field_selector: norm(&self.field_selector),
        }
    }
}

/// The identity under which an [`InformerFactory`](super::InformerFactory) shares an
/// informer: the Rust object type, the API resource (group, version, plural — which tells
/// apart the `ApiResource`s of `DynamicObject` informers) and the [`InformerParams`].
///
/// It prints as `plural.version.group` (core group: `plural.version`), then the namespace
/// and selectors, for logs and [`NotSynced`](super::NotSynced) reports.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InformerId {
    type_id: TypeId,
    type_name: &'static str,
    group: String,
    version: String,
    kind: String,
    plural: String,
    params: InformerParams,
}

impl InformerId {
    pub(crate) fn new<K: Resource + 'static>(
        dyntype: &K::DynamicType,
        params: &InformerParams,
    ) -> Self {
        Self {
            type_id: TypeId::of::<K>(),
            type_name: std::any::type_name::<K>(),
            group: K::group(dyntype).into_owned(),
            version: K::version(dyntype).into_owned(),
            kind: K::kind(dyntype).into_owned(),
            plural: K::plural(dyntype).into_owned(),
            params: params.normalized(),
        }
    }

    /// The namespace and selectors.
    pub fn params(&self) -> &InformerParams {
        &self.params
    }

    /// The resource's kind (`Pod`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The resource's API group (`""` for the core group).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The resource's API version (`v1`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The resource's plural name (`pods`).
    pub fn plural(&self) -> &str {
        &self.plural
    }

    /// The Rust type the informer caches.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl fmt::Display for InformerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.plural, self.version)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if self.type_name.contains("PartialObjectMeta") {
            f.write_str(" (metadata only)")?;
        }
        match &self.params.namespace {
            Some(ns) => write!(f, " in namespace {ns}")?,
            None => f.write_str(" in all namespaces")?,
        }
        if let Some(l) = &self.params.label_selector {
            write!(f, ", labels {l:?}")?;
        }
        if let Some(s) = &self.params.field_selector {
            write!(f, ", fields {s:?}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for InformerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InformerId({self})")
    }
}
