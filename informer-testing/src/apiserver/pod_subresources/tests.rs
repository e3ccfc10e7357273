use serde_json::json;

use super::*;

fn pod(containers: &[&str], init: &[&str], node: Option<&str>) -> Value {
    let list = |names: &[&str]| names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>();
    json!({
        "metadata": {"name": "web"},
        "spec": {"containers": list(containers), "initContainers": list(init), "nodeName": node},
        "status": {"phase": "Pending", "conditions": []},
    })
}

#[test]
fn the_only_container_is_the_default() {
    assert_eq!(container(&pod(&["app"], &[], None), None).unwrap(), "app");
}

#[test]
fn several_containers_need_a_name_and_the_error_lists_them_init_containers_first() {
    let err = container(&pod(&["app", "sidecar"], &["setup"], None), None).unwrap_err();
    assert_eq!(err.code(), 400);
    assert_eq!(
        err.message(),
        "a container name must be specified for pod web, choose one of: [setup app sidecar]"
    );
}

#[test]
fn a_container_the_pod_does_not_have_is_a_bad_request() {
    let err = container(&pod(&["app"], &[], None), Some("db")).unwrap_err();
    assert_eq!(err.message(), "container db is not valid for pod web");
    assert_eq!(
        container(&pod(&["app"], &["setup"], None), Some("setup")).unwrap(),
        "setup"
    );
}

#[test]
fn tail_lines_and_limit_bytes_cut_the_log() {
    let text = "one\ntwo\nthree\n";
    assert_eq!(log_text(text, None, None), text);
    assert_eq!(log_text(text, Some(2), None), "two\nthree\n");
    assert_eq!(log_text(text, Some(10), None), text);
    assert_eq!(log_text(text, Some(0), None), "");
    assert_eq!(log_text("one\ntwo", Some(1), None), "two");
    assert_eq!(log_text(text, Some(2), Some(5)), "two\nt");
    assert_eq!(log_text("é", None, Some(1)), "", "never half a character");
}

#[test]
fn streams_need_a_host_and_then_a_kubelet() {
    let err = stream_error(&pod(&["app"], &[], None));
    assert_eq!(
        (err.code(), err.message()),
        (400, "pod web does not have a host assigned")
    );
    assert_eq!(
        stream_error(&pod(&["app"], &[], Some("node-1"))).code(),
        500
    );
}

#[test]
fn a_binding_sets_the_node_and_the_scheduled_condition() {
    let bound = bind(
        &pod(&["app"], &[], None),
        &json!({"target": {"kind": "Node", "name": "node-1"}}),
    )
    .unwrap();
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(bound["status"]["conditions"][0]["status"], "True");
}

#[test]
fn a_pod_bound_already_or_being_deleted_is_a_conflict() {
    let binding = json!({"target": {"name": "node-2"}});
    let err = bind(&pod(&["app"], &[], Some("node-1")), &binding).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
    );
    let mut deleting = pod(&["app"], &[], None);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(bind(&deleting, &binding).unwrap_err().code(), 409);
    assert_eq!(
        bind(&pod(&["app"], &[], None), &json!({}))
            .unwrap_err()
            .code(),
        422
    );
}
