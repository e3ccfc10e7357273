use serde_json::json;

use super::holds;

#[test]
fn fields_only_the_server_or_others_set_do_not_matter() {
    let actual = json!({
        "metadata": {"name": "a", "uid": "1", "resourceVersion": "7", "labels": {"x": "1", "y": "2"}},
        "data": {"k": "v"},
    });
    let desired = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}});
    assert!(holds(&actual, &desired));
}

#[test]
fn a_changed_or_missing_value_does_not_hold() {
    let actual = json!({"data": {"k": "v"}});
    assert!(!holds(&actual, &json!({"data": {"k": "w"}})));
    assert!(!holds(&actual, &json!({"data": {"other": "v"}})));
    assert!(!holds(&actual, &json!({"spec": {"replicas": 2}})));
}

#[test]
fn zero_values_hold_where_the_server_left_them_out() {
    let actual = json!({"spec": {"replicas": 1}});
    let desired = json!({
        "spec": {"replicas": 1, "paused": false, "minReadySeconds": 0, "selector": {}, "volumes": [], "note": "", "x": null}
    });
    assert!(holds(&actual, &desired));
    assert!(!holds(&actual, &json!({"spec": {"paused": true}})));
}

#[test]
fn list_items_hold_element_by_element_and_lengths_must_match() {
    let actual = json!({"containers": [
        {"name": "web", "image": "nginx", "terminationMessagePath": "/dev/termination-log"},
    ]});
    assert!(holds(
        &actual,
        &json!({"containers": [{"name": "web", "image": "nginx"}]})
    ));
    assert!(!holds(
        &actual,
        &json!({"containers": [{"name": "web", "image": "nginx:2"}]})
    ));
    assert!(!holds(&actual, &json!({"containers": []})));
    assert!(!holds(
        &actual,
        &json!({"containers": [{"name": "web"}, {"name": "sidecar"}]})
    ));
}

#[test]
fn numbers_compare_by_value() {
    assert!(holds(&json!({"n": 1}), &json!({"n": 1.0})));
    assert!(!holds(&json!({"n": 1}), &json!({"n": 2})));
}

#[test]
fn a_zero_value_does_not_hold_against_a_set_one() {
    assert!(!holds(
        &json!({"data": {"k": "v"}}),
        &json!({"data": {"k": ""}})
    ));
    assert!(!holds(&json!({"replicas": 3}), &json!({"replicas": 0})));
}

#[test]
fn quantities_hold_in_the_servers_canonical_form() {
    let actual = json!({"spec": {"containers": [{"resources": {
        "limits": {"cpu": "500m", "memory": "1Gi"},
        "requests": {"cpu": "2", "memory": "1073741824", "ephemeral-storage": "1k"}
    }}], "volumes": [{"emptyDir": {"sizeLimit": "1Mi"}}]}});
    let desired = json!({"spec": {"containers": [{"resources": {
        "limits": {"cpu": "0.5", "memory": "1024Mi"},
        "requests": {"cpu": 2, "memory": 1_073_741_824_u64, "ephemeral-storage": 1000}
    }}], "volumes": [{"emptyDir": {"sizeLimit": "1024Ki"}}]}});
    assert!(holds(&actual, &desired));
    let more = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "0.6"}}}]}});
    assert!(!holds(&actual, &more), "a different quantity does not hold");
    // A custom resource's quantities are stored as written: only the same text holds.
    let custom = json!({"spec": {"limits": {"version": "1.10"}}});
    assert!(!holds(
        &custom,
        &json!({"spec": {"limits": {"version": "1.1"}}})
    ));
    assert!(holds(
        &custom,
        &json!({"spec": {"limits": {"version": "1.10"}}})
    ));
}

#[test]
fn strings_elsewhere_compare_as_written() {
    let actual = json!({"metadata": {"labels": {"size": "1k"}}, "data": {"limit": "500m"}});
    assert!(!holds(
        &actual,
        &json!({"metadata": {"labels": {"size": "1000"}}})
    ));
    assert!(!holds(&actual, &json!({"data": {"limit": "0.5"}})));
}
