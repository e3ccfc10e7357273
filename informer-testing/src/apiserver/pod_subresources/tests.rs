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
    let node = json!({"metadata": {"name": "node-1"}});
    let err = stream_error(&pod(&["app"], &[], None), Ok(&node));
    assert_eq!(
        (err.code(), err.message()),
        (400, "pod web does not have a host assigned")
    );
    let on_node = pod(&["app"], &[], Some("node-1"));
    // As the node proxy answers for a Node without addresses.
    let err = stream_error(&on_node, Ok(&node));
    assert_eq!(
        (err.code(), err.message()),
        (500, "no preferred addresses found; known addresses: []")
    );
    let addressed = json!({"metadata": {"name": "node-1"}, "status": {
        "addresses": [{"type": "InternalIP", "address": "10.0.0.7"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}});
    let err = stream_error(&on_node, Ok(&addressed));
    assert_eq!(
        (err.code(), err.message()),
        (
            500,
            "error dialing backend: dial tcp 10.0.0.7:10250: connect: connection refused"
        )
    );
    let gone = stream_error(&on_node, Err(ApiError::not_found("nodes", "node-1")));
    assert_eq!(gone.code(), 404);
}

#[test]
fn a_binding_sets_the_node_and_the_scheduled_condition() {
    let bound = bind(
        &pod(&["app"], &[], None),
        &json!({"target": {"kind": "Node", "name": "node-1"}}),
        true,
    )
    .unwrap();
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(bound["status"]["conditions"][0]["type"], "PodScheduled");
    assert_eq!(bound["status"]["conditions"][0]["status"], "True");
}

#[test]
fn a_pod_bound_already_or_being_deleted_is_a_conflict() {
    let binding = json!({"target": {"name": "node-2"}});
    let err = bind(&pod(&["app"], &[], Some("node-1")), &binding, true).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-1\""
    );
    let mut deleting = pod(&["app"], &[], None);
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(bind(&deleting, &binding, true).unwrap_err().code(), 409);
}

/// `setPodNodeAndMetadata`: a gated Pod is refused; the Binding's annotations and labels
/// are copied over the Pod's; the nominated node is cleared; an existing `PodScheduled`
/// condition is replaced where it is.
#[test]
fn a_binding_refuses_gated_pods_and_copies_its_metadata() {
    let mut gated = pod(&["app"], &[], None);
    gated["spec"]["schedulingGates"] = json!([{"name": "wait"}]);
    let binding = json!({
        "metadata": {"annotations": {"a": "1"}, "labels": {"zone": "z1", "app": "new"}},
        "target": {"name": "node-1"},
    });
    assert_eq!(
        bind(&gated, &binding, true).unwrap_err().message(),
        "Operation cannot be fulfilled on pods/binding \"web\": pod web has non-empty .spec.schedulingGates"
    );
    let mut waiting = pod(&["app"], &[], None);
    waiting["metadata"]["labels"] = json!({"app": "old", "tier": "web"});
    waiting["status"]["nominatedNodeName"] = json!("node-9");
    waiting["status"]["conditions"] = json!([
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
        {"type": "Ready", "status": "False"},
    ]);
    let bound = bind(&waiting, &binding, true).unwrap();
    assert_eq!(bound["metadata"]["annotations"], json!({"a": "1"}));
    assert_eq!(
        bound["metadata"]["labels"],
        json!({"app": "new", "tier": "web", "zone": "z1"})
    );
    assert!(bound["status"].get("nominatedNodeName").is_none());
    let conditions = bound["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions[0]["type"], "PodScheduled");
    assert_eq!(conditions[0]["status"], "True");
    assert!(conditions[0].get("reason").is_none());
    assert_eq!(conditions[1]["type"], "Ready");
}

/// The subresource keeps the posted `uid` and `resourceVersion` as preconditions (the
/// storage's words in a 409 on `pods`); the legacy resource wipes them.
#[test]
fn a_bindings_uid_and_resource_version_are_preconditions_of_the_subresource_only() {
    let mut current = pod(&["app"], &[], None);
    current["metadata"]["namespace"] = json!("default");
    current["metadata"]["uid"] = json!("u1");
    current["metadata"]["resourceVersion"] = json!("7");
    let stale = json!({"metadata": {"uid": "u0", "resourceVersion": "6"}, "target": {"name": "n"}});
    let err = bind(&current, &stale, true).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        "Operation cannot be fulfilled on pods \"web\": StorageError: invalid object, Code: 4, Key: /registry/pods/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: u0, UID in object meta: u1"
    );
    let old_version = json!({"metadata": {"resourceVersion": "6"}, "target": {"name": "n"}});
    assert!(
        bind(&current, &old_version, true)
            .unwrap_err()
            .message()
            .ends_with("Precondition failed: ResourceVersion in precondition: 6, ResourceVersion in object meta: 7")
    );
    assert!(bind(&current, &stale, false).is_ok());
}

/// `BindingREST.Create`'s own checks: the URL's name (400), `ValidatePodBinding` as a plain
/// error (500, no reason), the legacy resource's empty name (400).
#[test]
fn a_binding_is_checked_before_the_pod_is_read() {
    let named = |name: &str, target: Value| json!({"metadata": {"name": name}, "target": target});
    let err = check_binding(&named("b", json!({"name": "n"})), Some("a")).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (400, "name in URL does not match name in Binding object")
    );
    let err = check_binding(&named("a", json!({})), Some("a")).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (500, "target.name: Required value")
    );
    assert_eq!(err.reason(), StatusReason::Unknown);
    let err = check_binding(&named("a", json!({"kind": "Pod"})), Some("a")).unwrap_err();
    assert_eq!(
        err.message(),
        "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]"
    );
    let err = check_binding(&json!({"target": {"name": "n"}}), None).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (400, "Name parameter required.")
    );
    assert!(check_binding(&named("a", json!({"kind": "Node", "name": "n"})), None).is_ok());
}

/// The `PodTopologyLabels` plugin copies the Node's `topology.k8s.io` zone and region, never
/// over the Binding's own.
#[test]
fn the_nodes_topology_labels_are_added_to_a_binding() {
    let node = json!({"metadata": {"labels": {
        "topology.k8s.io/zone": "z1", "topology.k8s.io/region": "r1", "other": "x",
    }}});
    let mut binding = json!({
        "metadata": {"labels": {"topology.k8s.io/region": "mine"}},
        "target": {"kind": "Node", "name": "n"},
    });
    add_topology_labels(&mut binding, Some(&node));
    assert_eq!(
        binding["metadata"]["labels"],
        json!({"topology.k8s.io/zone": "z1", "topology.k8s.io/region": "mine"})
    );
    let mut untyped = json!({"target": {"name": "n"}});
    add_topology_labels(&mut untyped, Some(&node));
    assert!(untyped.get("metadata").is_none());
}

#[test]
fn proxy_ids_split_as_utilnet_splits_them() {
    assert_eq!(split_scheme_name_port("web"), Some(("", "web", "")));
    assert_eq!(split_scheme_name_port("web:80"), Some(("", "web", "80")));
    assert_eq!(
        split_scheme_name_port("https:web:443"),
        Some(("https", "web", "443"))
    );
    assert_eq!(split_scheme_name_port("ftp:web:21"), None);
    assert_eq!(split_scheme_name_port("a:b:c:d"), None);
    assert_eq!(split_scheme_name_port(":80"), None);
}

/// A Pod without a global unicast IP is refused; with one, the dial fails (503); the port is
/// the one asked, else the first container port.
#[test]
fn a_pod_proxy_needs_an_address_and_then_a_network() {
    let mut web = pod(&["app"], &[], None);
    let err = pod_proxy_error(&web, "");
    assert_eq!((err.code(), err.message()), (400, "address not allowed"));
    web["status"]["podIP"] = json!("127.0.0.1");
    assert_eq!(pod_proxy_error(&web, "").code(), 400);
    web["status"]["podIP"] = json!("10.244.0.5");
    web["spec"]["containers"][0]["ports"] = json!([{"containerPort": 8080}]);
    let err = pod_proxy_error(&web, "");
    assert_eq!(err.code(), 503);
    assert_eq!(err.reason(), StatusReason::ServiceUnavailable);
    assert!(
        err.message()
            .starts_with("error trying to reach service: dial tcp 10.244.0.5:8080:"),
        "{}",
        err.message()
    );
    assert!(
        pod_proxy_error(&web, "9090")
            .message()
            .contains("10.244.0.5:9090")
    );
}

/// A Service's port number must be one of its ports; its Endpoints must exist and serve the
/// port's name.
#[test]
fn a_service_proxy_needs_its_port_and_endpoints() {
    let service =
        json!({"metadata": {"name": "web"}, "spec": {"ports": [{"name": "http", "port": 80}]}});
    let err = service_proxy_error(&service, None, "81");
    assert_eq!(
        (err.code(), err.message()),
        (503, "no service port 81 found for service \"web\"")
    );
    let err = service_proxy_error(&service, None, "80");
    assert_eq!(
        (err.code(), err.message()),
        (404, "endpoints \"web\" not found")
    );
    let empty = json!({"metadata": {"name": "web"}});
    assert_eq!(
        service_proxy_error(&service, Some(&empty), "80").message(),
        "no endpoints available for service \"web\""
    );
    let endpoints = json!({"subsets": [{
        "addresses": [{"ip": "10.244.0.5"}],
        "ports": [{"name": "http", "port": 8080}],
    }]});
    assert!(
        service_proxy_error(&service, Some(&endpoints), "80")
            .message()
            .starts_with("error trying to reach service: dial tcp 10.244.0.5:8080:")
    );
    // Unnamed: the port name is empty, which the `http` port is not.
    assert_eq!(
        service_proxy_error(&service, Some(&endpoints), "").code(),
        503
    );
    assert!(
        service_proxy_error(&service, Some(&endpoints), "")
            .message()
            .starts_with("no endpoints available")
    );
}

#[test]
fn a_node_proxy_needs_an_address() {
    let mut node = json!({"metadata": {"name": "n1"}});
    let err = node_proxy_error(&node, "");
    assert_eq!(
        (err.code(), err.message()),
        (500, "no preferred addresses found; known addresses: []")
    );
    node["status"] = json!({"addresses": [{"type": "InternalIP", "address": "10.0.0.7"}]});
    assert!(
        node_proxy_error(&node, "")
            .message()
            .contains("dial tcp 10.0.0.7:10250:")
    );
    node["status"]["addresses"][0]["address"] = json!("127.0.0.1");
    assert_eq!(node_proxy_error(&node, "").message(), "address not allowed");
}
