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
        ["spec.clusterIPs[0]: Invalid value: [\"10.96.0.99\"]: may not change once set"]
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

/// `dropTypeDependentFields`: a NodePort or LoadBalancer Service turned ClusterIP loses its
/// node ports, traffic policy and load balancer fields; one turned ExternalName loses its
/// cluster IPs and families too. What the update itself changed stays.
#[test]
fn an_update_to_another_type_drops_what_only_the_old_type_used() {
    let node_port = service(json!({"type": "LoadBalancer", "clusterIP": "10.96.0.77",
        "clusterIPs": ["10.96.0.77"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
        "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": true,
        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30123}]}));
    let mut old = node_port.clone();
    old["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}});
    let mut cluster_ip = node_port.clone();
    cluster_ip["spec"]["type"] = json!("ClusterIP");
    cluster_ip["status"] = old["status"].clone();
    prepare_update(&old, &mut cluster_ip);
    allocate(Allocated::default(), Some(&old), &mut cluster_ip).unwrap();
    assert_eq!(
        cluster_ip["spec"],
        json!({"type": "ClusterIP", "clusterIP": "10.96.0.77", "clusterIPs": ["10.96.0.77"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"port": 80, "protocol": "TCP"}]})
    );
    assert_eq!(cluster_ip["status"], json!({"loadBalancer": {}}));

    let mut external = node_port.clone();
    external["spec"]["type"] = json!("ExternalName");
    external["spec"]["externalName"] = json!("example.com");
    prepare_update(&old, &mut external);
    allocate(Allocated::default(), Some(&old), &mut external).unwrap();
    assert_eq!(
        external["spec"],
        json!({"type": "ExternalName", "externalName": "example.com",
            "ports": [{"port": 80, "protocol": "TCP"}]})
    );

    // A node port the update adds is the update's own: validation judges it.
    let mut changed = node_port.clone();
    changed["spec"]["type"] = json!("ClusterIP");
    changed["spec"]["ports"][0]["nodePort"] = json!(30999);
    prepare_update(&old, &mut changed);
    allocate(Allocated::default(), Some(&old), &mut changed).unwrap();
    assert_eq!(changed["spec"]["ports"][0]["nodePort"], 30999);

    // A ClusterIP Service replaced without node ports gets none from its NodePort past.
    let mut replaced =
        service(json!({"type": "ClusterIP", "ports": [{"port": 80, "protocol": "TCP"}]}));
    prepare_update(&old, &mut replaced);
    allocate(Allocated::default(), Some(&old), &mut replaced).unwrap();
    assert!(replaced["spec"]["ports"][0].get("nodePort").is_none());
    assert_eq!(replaced["spec"]["clusterIP"], "10.96.0.77");
}
