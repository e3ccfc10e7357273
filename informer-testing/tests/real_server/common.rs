//! Helpers shared by the real-server tests.

use informer_testing::CustomResourceSpec;
use informer_testing::envtest::{EnvTest, EnvTestBuilder};
use kube::core::{ApiResource, GroupVersionKind};

/// The custom resource both servers serve: namespaced, with a status subresource.
pub fn widget_spec() -> CustomResourceSpec {
    CustomResourceSpec::namespaced("example.com", "v1", "Widget", "widgets")
        .with_status_subresource()
        .with_short_names(["wd"])
}

/// `Widget` as a kube `ApiResource`.
pub fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    )
}

/// A real server serving `Widget`, or `None` (the reason printed) without the binaries.
pub async fn real_server(builder: EnvTestBuilder) -> Option<EnvTest> {
    builder.custom_resource(widget_spec()).start_or_skip().await
}
