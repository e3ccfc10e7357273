use serde_json::{Value, json};

use super::{
    admit_create, admit_priority, admit_priority_class, qos_class, quantity_nanos, status_on_create,
};

fn pod(containers: Value) -> Value {
    json!({"spec": {"containers": containers}})
}

fn resources(requests: Value, limits: Value) -> Value {
    json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
}

#[test]
fn quantities_parse_to_nano_units() {
    let n = |s: &str| quantity_nanos(&json!(s));
    assert_eq!(n("1"), Some(1_000_000_000));
    assert_eq!(n("250m"), Some(250_000_000));
    assert_eq!(n("0.25"), n("250m"));
    assert_eq!(n("1Ki"), Some(1024 * 1_000_000_000));
    assert_eq!(n("1.5Gi"), n("1610612736"));
    assert_eq!(n("1G"), n("1e9"));
    assert_eq!(n("1E"), n("1e18"));
    assert_eq!(n("2E3"), n("2k"));
    assert_eq!(n("1n"), Some(1));
    assert_eq!(n("-1m"), Some(-1_000_000));
    assert_eq!(quantity_nanos(&json!(2)), n("2"));
    assert_eq!(quantity_nanos(&json!(0.5)), n("500m"));
}

#[test]
fn a_quantity_finer_than_a_nano_unit_rounds_up() {
    assert_eq!(quantity_nanos(&json!("0.0000000001")), Some(1));
    assert_eq!(quantity_nanos(&json!("1.0000000001")), Some(1_000_000_001));
}

#[test]
fn malformed_quantities_do_not_parse() {
    for bad in ["", "m", "1.2.3", "1Q", "abc", "1 Gi", "1ee3"] {
        assert_eq!(quantity_nanos(&json!(bad)), None, "{bad:?}");
    }
    assert_eq!(quantity_nanos(&json!(true)), None);
}

#[test]
fn a_pod_with_no_requests_or_limits_is_best_effort() {
    assert_eq!(qos_class(&pod(json!([{"name": "c"}]))), "BestEffort");
    let zero = resources(json!({"cpu": "0"}), json!({"memory": "0"}));
    assert_eq!(qos_class(&pod(json!([zero]))), "BestEffort");
    let other = resources(json!({"ephemeral-storage": "1Gi"}), json!({}));
    assert_eq!(qos_class(&pod(json!([other]))), "BestEffort");
}

#[test]
fn a_pod_whose_containers_limit_cpu_and_memory_at_their_requests_is_guaranteed() {
    let both = json!({"cpu": "500m", "memory": "128Mi"});
    let c = resources(both.clone(), both.clone());
    assert_eq!(qos_class(&pod(json!([c.clone(), c]))), "Guaranteed");
    let same_value = resources(
        json!({"cpu": "0.5", "memory": "134217728"}),
        json!({"cpu": "500m", "memory": "128Mi"}),
    );
    assert_eq!(qos_class(&pod(json!([same_value]))), "Guaranteed");
}

#[test]
fn a_pod_with_a_container_missing_a_limit_or_requesting_less_is_burstable() {
    let both = json!({"cpu": "500m", "memory": "128Mi"});
    let guaranteed = resources(both.clone(), both.clone());
    let cpu_only = resources(json!({"cpu": "1"}), json!({"cpu": "1"}));
    assert_eq!(
        qos_class(&pod(json!([guaranteed.clone(), cpu_only]))),
        "Burstable"
    );
    let less = resources(json!({"cpu": "250m", "memory": "128Mi"}), both);
    assert_eq!(qos_class(&pod(json!([less]))), "Burstable");
    let requests_only = resources(json!({"memory": "1Gi"}), json!({}));
    assert_eq!(qos_class(&pod(json!([requests_only]))), "Burstable");
    let mut with_init = pod(json!([guaranteed]));
    with_init["spec"]["initContainers"] = json!([{"name": "init"}]);
    assert_eq!(qos_class(&with_init), "Burstable");
}

#[test]
fn pod_level_resources_decide_the_class_when_set() {
    let mut p = pod(json!([{"name": "c"}]));
    let both = json!({"cpu": "1", "memory": "1Gi"});
    p["spec"]["resources"] = json!({"requests": both, "limits": both});
    assert_eq!(qos_class(&p), "Guaranteed");
}

#[test]
fn a_new_pod_starts_pending_with_its_qos_class() {
    assert_eq!(
        status_on_create(&pod(json!([{"name": "c"}]))),
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

#[test]
fn a_new_pod_with_scheduling_gates_is_not_scheduled_because_gated() {
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["schedulingGates"] = json!([{"name": "example.com/wait"}]);
    let status = status_on_create(&p);
    let condition = &status["conditions"][0];
    assert_eq!(condition["type"], "PodScheduled");
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "SchedulingGated");
    assert!(condition["lastTransitionTime"].is_string());
}

fn class(name: &str, value: i64, policy: &str) -> Value {
    json!({"metadata": {"name": name}, "value": value, "preemptionPolicy": policy})
}

fn classes(name: &str) -> Option<Value> {
    match name {
        "batch-low" => Some(class("batch-low", 100, "Never")),
        "system-node-critical" => Some(class(name, 2_000_001_000, "PreemptLowerPriority")),
        _ => None,
    }
}

#[test]
fn priority_admission_gives_a_pod_without_a_class_priority_zero_and_the_default_preemption() {
    let mut p = pod(json!([{"name": "c"}]));
    admit_priority(&mut p, classes, None).unwrap();
    assert_eq!(p["spec"]["priority"], 0);
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    assert!(p["spec"].get("priorityClassName").is_none());
}

#[test]
fn priority_admission_gives_a_pod_its_class_value_and_preemption_policy() {
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["priorityClassName"] = json!("batch-low");
    admit_priority(&mut p, classes, None).unwrap();
    assert_eq!(p["spec"]["priority"], 100);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
}

#[test]
fn priority_admission_gives_a_pod_without_a_class_the_global_default_and_its_name() {
    let mut p = pod(json!([{"name": "c"}]));
    admit_priority(&mut p, classes, Some(class("everyday", 7, "Never"))).unwrap();
    assert_eq!(p["spec"]["priorityClassName"], "everyday");
    assert_eq!(p["spec"]["priority"], 7);
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
}

#[test]
fn priority_admission_refuses_a_class_that_does_not_exist() {
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["priorityClassName"] = json!("nope");
    assert_eq!(
        admit_priority(&mut p, classes, None).unwrap_err(),
        "no PriorityClass with name nope was found"
    );
}

#[test]
fn priority_admission_refuses_a_priority_or_policy_that_is_not_the_classes() {
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["priorityClassName"] = json!("system-node-critical");
    p["spec"]["priority"] = json!(5);
    assert_eq!(
        admit_priority(&mut p, classes, None).unwrap_err(),
        "the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 2000001000 from the given PriorityClass name"
    );
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["priorityClassName"] = json!("system-node-critical");
    p["spec"]["preemptionPolicy"] = json!("Never");
    assert_eq!(
        admit_priority(&mut p, classes, None).unwrap_err(),
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
    );
    // The class's own values may be sent.
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["priorityClassName"] = json!("batch-low");
    p["spec"]["priority"] = json!(100);
    p["spec"]["preemptionPolicy"] = json!("Never");
    admit_priority(&mut p, classes, None).unwrap();
}

#[test]
fn only_one_priority_class_may_be_the_global_default() {
    let default = json!({"metadata": {"name": "b"}, "value": 1, "globalDefault": true});
    assert_eq!(
        admit_priority_class(&default, Some("a")).unwrap_err(),
        "PriorityClass a is already marked as default. Only one default can exist"
    );
    admit_priority_class(&default, None).unwrap();
    let plain = json!({"metadata": {"name": "b"}, "value": 1});
    admit_priority_class(&plain, Some("a")).unwrap();
}

#[test]
fn admission_tolerates_unready_and_unreachable_nodes_for_five_minutes() {
    let mut p = pod(json!([{"name": "c"}]));
    admit_create(&mut p);
    assert_eq!(
        p["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
}

#[test]
fn admission_keeps_a_pods_own_tolerations_of_those_nodes() {
    let own = json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10});
    let mut p = pod(json!([{"name": "c"}]));
    p["spec"]["tolerations"] = json!([own]);
    admit_create(&mut p);
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0], own);
    assert_eq!(tolerations[1]["key"], "node.kubernetes.io/not-ready");

    let mut everything = pod(json!([{"name": "c"}]));
    everything["spec"]["tolerations"] = json!([{"operator": "Exists"}]);
    admit_create(&mut everything);
    assert_eq!(
        everything["spec"]["tolerations"].as_array().unwrap().len(),
        1
    );
}
