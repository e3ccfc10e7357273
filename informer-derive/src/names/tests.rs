use super::*;

#[test]
fn accessor_names_are_snake_case_plurals() {
    let cases = [
        ("Deployment", "deployments"),
        ("ReplicaSet", "replica_sets"),
        ("Pod", "pods"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "network_policies"),
        ("Gateway", "gateways"),
        ("Endpoints", "endpoints"),
        ("CSIDriver", "csi_drivers"),
        ("HorizontalPodAutoscaler", "horizontal_pod_autoscalers"),
        ("ConfigMap", "config_maps"),
    ];
    for (ty, accessor) in cases {
        assert_eq!(plural(&snake_case(ty)), accessor, "{ty}");
    }
}

#[test]
fn index_type_names_are_camel_case() {
    assert_eq!(camel_case("by_owner"), "ByOwner");
    assert_eq!(camel_case("pods_by_node_name"), "PodsByNodeName");
}

#[test]
fn typos_get_a_suggestion_and_unrelated_words_do_not() {
    let known = ["workers", "resync", "namespace", "owns", "watches"];
    assert_eq!(did_you_mean("worker", &known), Some("workers"));
    assert_eq!(did_you_mean("resycn", &known), Some("resync"));
    assert_eq!(did_you_mean("namespce", &known), Some("namespace"));
    assert_eq!(did_you_mean("colour", &known), None);
}

#[test]
fn a_swap_of_two_neighbouring_letters_is_one_typo() {
    let known = ["for", "owns", "status", "index"];
    assert_eq!(did_you_mean("fro", &known), Some("for"));
    assert_eq!(did_you_mean("stauts", &known), Some("status"));
    assert_eq!(did_you_mean("idnex", &known), Some("index"));
    assert_eq!(did_you_mean("ofr", &known), Some("for"));
    assert_eq!(did_you_mean("xyz", &known), None);
}
