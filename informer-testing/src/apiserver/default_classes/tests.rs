use super::*;

fn class(name: &str, created: &str, default: Option<&str>) -> Value {
    let mut class = json!({"metadata": {"name": name, "creationTimestamp": created}});
    if let Some(annotation) = default {
        class["metadata"]["annotations"] = json!({annotation: "true"});
    }
    class
}

#[test]
fn a_claim_without_a_class_gets_the_newest_default_class() {
    let classes = [
        class(
            "old",
            "2026-01-01T00:00:00Z",
            Some(DEFAULT_STORAGE_CLASS[0]),
        ),
        class(
            "new",
            "2026-02-01T00:00:00Z",
            Some(DEFAULT_STORAGE_CLASS[1]),
        ),
        class("newest", "2026-03-01T00:00:00Z", None),
    ];
    let mut claim = json!({"spec": {}});
    default_storage_class(&mut claim, classes.iter());
    assert_eq!(claim["spec"]["storageClassName"], "new");
}

#[test]
fn default_classes_created_in_the_same_second_are_chosen_by_name() {
    let classes = [
        class("b", "2026-01-01T00:00:00Z", Some(DEFAULT_STORAGE_CLASS[0])),
        class("a", "2026-01-01T00:00:00Z", Some(DEFAULT_STORAGE_CLASS[0])),
    ];
    let mut claim = json!({"spec": {}});
    default_storage_class(&mut claim, classes.iter());
    assert_eq!(claim["spec"]["storageClassName"], "a");
}

#[test]
fn a_claim_that_names_a_class_or_none_keeps_it() {
    let classes = [class(
        "std",
        "2026-01-01T00:00:00Z",
        Some(DEFAULT_STORAGE_CLASS[0]),
    )];
    for given in [json!("fast"), json!("")] {
        let mut claim = json!({"spec": {"storageClassName": given.clone()}});
        default_storage_class(&mut claim, classes.iter());
        assert_eq!(claim["spec"]["storageClassName"], given);
    }
}

#[test]
fn without_a_default_class_a_claim_stays_without_one() {
    let classes = [class("std", "2026-01-01T00:00:00Z", None)];
    let mut claim = json!({"spec": {}});
    default_storage_class(&mut claim, classes.iter());
    assert!(claim["spec"].get("storageClassName").is_none());
}

#[test]
fn an_ingress_gets_the_default_class_unless_it_names_one_or_has_the_old_annotation() {
    let classes = [class(
        "nginx",
        "2026-01-01T00:00:00Z",
        Some(DEFAULT_INGRESS_CLASS[0]),
    )];
    let mut bare = json!({"metadata": {"name": "web"}, "spec": {}});
    default_ingress_class(&mut bare, classes.iter());
    assert_eq!(bare["spec"]["ingressClassName"], "nginx");
    let mut named = json!({"spec": {"ingressClassName": "traefik"}});
    default_ingress_class(&mut named, classes.iter());
    assert_eq!(named["spec"]["ingressClassName"], "traefik");
    let mut annotated = json!({
        "metadata": {"annotations": {INGRESS_CLASS_ANNOTATION: "traefik"}},
        "spec": {},
    });
    default_ingress_class(&mut annotated, classes.iter());
    assert!(annotated["spec"].get("ingressClassName").is_none());
}

#[test]
fn a_new_node_is_tainted_not_ready_once() {
    let mut node = json!({"metadata": {"name": "n1"}});
    taint_new_node(&mut node);
    assert_eq!(
        node["spec"]["taints"],
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );
    taint_new_node(&mut node);
    assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 1);
    let mut tainted =
        json!({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}});
    taint_new_node(&mut tainted);
    assert_eq!(tainted["spec"]["taints"].as_array().unwrap().len(), 2);
}
