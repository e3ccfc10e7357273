//! CRD and custom resource rules a differential run against the real API server found the
//! in-process server breaking; the same checks run on the real server in
//! `tests/real_server/crd_differential.rs`.

#[path = "../crd_rules/cases.rs"]
mod cases;

use super::common::server;

macro_rules! on_the_test_server {
    ($($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            cases::$name(&server().await.client()).await;
        }
    )*};
}

// The same list as `tests/real_server/crd_differential.rs`.
on_the_test_server!(
    selectable_fields_filter_lists,
    missing_object_update_is_not_found_and_status_owns_no_metadata,
    crd_schema_rules,
    crd_version_rules,
    custom_resource_value_rules,
    custom_resource_request_rules,
    status_and_list_rules,
    null_defaults_are_none,
    integer_multiple_of_rules,
    junctor_rules,
    items_array_is_forbidden,
);
