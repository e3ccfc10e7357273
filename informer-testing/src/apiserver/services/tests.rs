use serde_json::json;

use super::*;

fn service(spec: Value) -> Value {
    json!({"metadata": {"name": "s"}, "spec": spec})
}

#[test]
fn a_service_gets_the_lowest_free_cluster_ip_and_single_stack_ipv4() {
    let taken = [service(
        json!({"clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.11"]}),
    )];
    let mut new = service(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
    allocate(Allocated::of(&taken), None, &mut new).unwrap();
    assert_eq!(new["spec"]["clusterIP"], "10.96.0.12");
    assert_eq!(new["spec"]["clusterIPs"], json!(["10.96.0.12"]));
    assert_eq!(new["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(new["spec"]["ipFamilyPolicy"], "SingleStack");
    assert!(new["spec"]["ports"][0].get("nodePort").is_none());
}

#[test]
fn node_port_and_load_balancer_services_get_free_node_ports() {
    let taken = [service(
        json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000}]}),
    )];
    let mut new = service(json!({"type": "NodePort",
        "ports": [{"port": 80}, {"port": 443, "nodePort": 31443}]}));
    allocate(Allocated::of(&taken), None, &mut new).unwrap();
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30001);
    assert_eq!(new["spec"]["ports"][1]["nodePort"], 31443);
    let mut lb = service(
        json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
        "ports": [{"port": 80}]}),
    );
    allocate(Allocated::default(), None, &mut lb).unwrap();
    assert!(lb["spec"]["ports"][0].get("nodePort").is_none());
}

#[test]
fn an_address_or_port_another_service_holds_is_invalid() {
    let taken = [service(json!({"clusterIP": "10.96.0.50",
        "type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}))];
    let mut new = service(json!({"clusterIP": "10.96.0.50", "type": "NodePort",
        "ports": [{"port": 80, "nodePort": 30080}]}));
    let errors = allocate(Allocated::of(&taken), None, &mut new).unwrap_err();
    let text = format!("{errors:?}");
    assert!(text.contains("spec.clusterIP"), "{text}");
    assert!(text.contains("spec.ports[0].nodePort"), "{text}");
    assert!(text.contains("already allocated"), "{text}");
}

#[test]
fn headless_and_external_name_services_get_no_address() {
    let mut headless = service(json!({"clusterIP": "None"}));
    allocate(Allocated::default(), None, &mut headless).unwrap();
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let mut external = service(json!({"type": "ExternalName", "externalName": "example.com"}));
    allocate(Allocated::default(), None, &mut external).unwrap();
    assert!(external["spec"].get("clusterIP").is_none());
}

#[test]
fn an_update_that_leaves_out_what_was_allocated_keeps_it() {
    let old = service(json!({"type": "NodePort", "clusterIP": "10.96.0.77",
        "clusterIPs": ["10.96.0.77"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30123}]}));
    let mut new = service(json!({"type": "NodePort",
        "ports": [{"port": 80, "protocol": "TCP"}, {"port": 8080, "protocol": "TCP"}]}));
    allocate(Allocated::default(), Some(&old), &mut new).unwrap();
    assert_eq!(new["spec"]["clusterIP"], "10.96.0.77");
    assert_eq!(new["spec"]["ports"][0]["nodePort"], 30123);
    assert_eq!(new["spec"]["ports"][1]["nodePort"], 30000);
}

#[test]
fn a_cluster_ip_may_not_change_once_set() {
    let old = service(json!({"type": "ClusterIP", "clusterIP": "10.96.0.11",
        "clusterIPs": ["10.96.0.11"], "ports": [{"port": 80}]}));
    // Changing `clusterIP` alone changes `clusterIPs[0]` too, which may not change.
    let mut moved = service(json!({"type": "ClusterIP", "clusterIP": "10.96.0.99",
        "clusterIPs": ["10.96.0.11"], "ports": [{"port": 80}]}));
    let errors = allocate(Allocated::default(), Some(&old), &mut moved).unwrap_err();
    assert_eq!(
        errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.99\"}: may not change once set"]
    );
    let mut both = service(json!({"clusterIP": "10.96.0.98", "clusterIPs": ["10.96.0.98"]}));
    assert!(allocate(Allocated::default(), Some(&old), &mut both).is_err());
    // Leaving it out keeps it; an ExternalName Service has none to keep.
    let mut kept = service(json!({"type": "ClusterIP", "ports": [{"port": 81}]}));
    allocate(Allocated::default(), Some(&old), &mut kept).unwrap();
    assert_eq!(kept["spec"]["clusterIPs"], json!(["10.96.0.11"]));
    let mut external = service(json!({"type": "ExternalName", "externalName": "example.com"}));
    allocate(Allocated::default(), Some(&old), &mut external).unwrap();
}
