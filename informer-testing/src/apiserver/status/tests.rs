use super::*;

#[test]
fn qualified_resources_put_their_group_in_the_details() {
    let status = ApiError::not_found("widgets.example.com", "w").to_status();
    assert_eq!(status["message"], "widgets.example.com \"w\" not found");
    assert_eq!(
        status["details"],
        json!({"name": "w", "kind": "widgets", "group": "example.com"})
    );
}

#[test]
fn errors_without_a_reason_have_no_reason_field() {
    let status = ApiError::new(StatusReason::Unknown, "boom").to_status();
    assert_eq!(status["code"], 500);
    assert!(status.get("reason").is_none());
}

#[test]
fn invalid_messages_list_each_distinct_error_once() {
    let twice = FieldError::forbidden("a", "no");
    let err = ApiError::invalid_fields("Pod", "p", vec![twice.clone(), twice]);
    assert_eq!(err.message(), "Pod \"p\" is invalid: a: Forbidden: no");
    assert_eq!(
        err.to_status()["details"]["causes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(err.to_status()["details"].get("name").is_some());
    let unnamed = ApiError::invalid_fields("PatchOptions.meta.k8s.io", "", vec![]);
    assert!(unnamed.to_status()["details"].get("name").is_none());
}

#[test]
fn status_shape_matches_the_api_server() {
    let status = ApiError::not_found("pods", "web").to_status();
    assert_eq!(
        status,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "pods \"web\" not found",
            "reason": "NotFound",
            "details": {"name": "web", "kind": "pods"},
            "code": 404
        })
    );
}

#[test]
fn too_many_requests_carries_retry_after() {
    let err = ApiError::too_many_requests(Duration::from_secs(2));
    assert_eq!(err.code(), 429);
    assert_eq!(err.to_status()["details"]["retryAfterSeconds"], 2);
}
