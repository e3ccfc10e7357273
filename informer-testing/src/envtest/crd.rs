//! CustomResourceDefinitions: one made from a [`CustomResourceSpec`], and what is needed to
//! wait until a created one is served.

use serde_json::Value;

use crate::CustomResourceSpec;

/// The `apiextensions.k8s.io/v1` CustomResourceDefinition that declares `spec`
/// ([`CustomResourceSpec::to_crd`]): one served and stored version, a schema that keeps every
/// field (`x-kubernetes-preserve-unknown-fields`, so objects are stored as sent), the `status`
/// and `scale` subresources if the spec has them, and its short names. The same CRD serves
/// the type on the in-process [`TestApiServer`](crate::TestApiServer) (through
/// [`custom_resource`](crate::TestApiServerBuilder::custom_resource)) and on a real API
/// server (through [`EnvTestBuilder::custom_resource`](super::EnvTestBuilder::custom_resource)).
///
/// ```
/// use informer_testing::CustomResourceSpec;
/// use informer_testing::envtest::custom_resource_definition;
/// let spec = CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
///     .with_status_subresource();
/// let crd = custom_resource_definition(&spec);
/// assert_eq!(crd["metadata"]["name"], "widgets.example.com");
/// assert_eq!(crd["spec"]["scope"], "Namespaced");
/// assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
/// assert!(crd["spec"]["versions"][0]["subresources"]["status"].is_object());
/// ```
pub fn custom_resource_definition(spec: &CustomResourceSpec) -> Value {
    spec.to_crd()
}

/// What a created CRD must serve before it counts as installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Served {
    /// `metadata.name`, e.g. `widgets.example.com`.
    pub name: String,
    /// The collection path of every served version, e.g. `/apis/example.com/v1/widgets`.
    pub collections: Vec<String>,
}

impl Served {
    /// Reads a CRD object; `Err` says which field is missing.
    pub fn of(crd: &Value) -> Result<Self, String> {
        let text = |pointer: &str| {
            crd.pointer(pointer)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("{pointer} is missing"))
        };
        let name = text("/metadata/name")?.to_string();
        let group = text("/spec/group")?;
        let plural = text("/spec/names/plural")?;
        let versions = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .ok_or("/spec/versions is missing")?;
        let collections: Vec<String> = versions
            .iter()
            .filter(|v| v["served"].as_bool().unwrap_or(false))
            .filter_map(|v| v["name"].as_str())
            .map(|version| format!("/apis/{group}/{version}/{plural}"))
            .collect();
        if collections.is_empty() {
            return Err("no version is served".into());
        }
        Ok(Self { name, collections })
    }

    /// The path of the CRD object itself.
    pub fn crd_path(&self) -> String {
        format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{}",
            self.name
        )
    }
}

/// Whether a CRD's `Established` condition is `True`.
pub(crate) fn is_established(crd: &Value) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}
