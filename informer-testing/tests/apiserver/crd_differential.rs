//! CRD and custom resource rules a differential run against the real API server found the
//! in-process server breaking; the same checks run on the real server in
//! `tests/real_server/crd_differential.rs`.

#[path = "../crd_rules/cases.rs"]
mod cases;

use super::common::server;

#[tokio::test]
async fn selectable_fields_filter_lists() {
    cases::selectable_fields_filter_lists(&server().await.client()).await;
}

#[tokio::test]
async fn missing_object_update_is_not_found_and_status_owns_no_metadata() {
    cases::missing_object_update_is_not_found_and_status_owns_no_metadata(&server().await.client())
        .await;
}

#[tokio::test]
async fn crd_schema_rules() {
    cases::crd_schema_rules(&server().await.client()).await;
}

#[tokio::test]
async fn crd_version_rules() {
    cases::crd_version_rules(&server().await.client()).await;
}

#[tokio::test]
async fn custom_resource_value_rules() {
    cases::custom_resource_value_rules(&server().await.client()).await;
}

#[tokio::test]
async fn custom_resource_request_rules() {
    cases::custom_resource_request_rules(&server().await.client()).await;
}
