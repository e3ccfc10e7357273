//! The checks of `tests/crd_rules/cases.rs` on the real server (the in-process server runs
//! them in `tests/apiserver/crd_differential.rs`).

#[path = "../crd_rules/cases.rs"]
mod cases;

use informer_testing::envtest::EnvTest;

macro_rules! on_the_real_server {
    ($($name:ident),*) => {$(
        #[tokio::test]
        async fn $name() {
            let Some(real) = EnvTest::start_or_skip().await else { return };
            cases::$name(&real.client()).await;
        }
    )*};
}

on_the_real_server!(
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
    items_array_is_forbidden
);
