use super::*;
use serde_json::json;

#[test]
fn content_types() {
    assert_eq!(
        PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
        Some(PatchKind::Merge)
    );
    assert_eq!(
        PatchKind::from_content_type("application/strategic-merge-patch+json"),
        Some(PatchKind::Strategic)
    );
    assert_eq!(
        PatchKind::from_content_type("application/json-patch+json"),
        Some(PatchKind::Json)
    );
    assert_eq!(
        PatchKind::from_content_type("application/apply-patch+yaml"),
        Some(PatchKind::Apply)
    );
    assert_eq!(PatchKind::from_content_type("application/json"), None);
}

#[test]
fn merge_patch_follows_rfc_7386() {
    // Examples from RFC 7386 appendix A.
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
        (json!({"a": "b"}), json!(["c"]), json!(["c"])),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!([1, 2]),
            json!({"a": "b", "c": null}),
            json!({"a": "b"}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (mut target, patch, expected) in cases {
        merge_patch(&mut target, &patch);
        assert_eq!(target, expected, "patch {patch}");
    }
}

fn pod() -> Value {
    json!({
        "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80, "name": "http"}]},
                {"name": "sidecar", "image": "side:1"}
            ],
            "tolerations": [{"key": "t1"}]
        }
    })
}

#[test]
fn strategic_merge_patch_merges_lists_by_key() {
    let mut target = pod();
    let patch = json!({
        "metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["y"]},
        "spec": {
            "containers": [
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "new", "image": "new:1"}
            ],
            "tolerations": [{"key": "t2"}]
        }
    });
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(target["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    assert_eq!(target["metadata"]["finalizers"], json!(["x", "y"]));
    let containers = target["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 3);
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
    );
    assert_eq!(containers[1]["name"], "sidecar");
    assert_eq!(containers[2]["name"], "new");
    // Lists without a merge key replace.
    assert_eq!(target["spec"]["tolerations"], json!([{"key": "t2"}]));
}

#[test]
fn strategic_merge_patch_directives() {
    let mut target = pod();
    let patch = json!({
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]},
        "spec": {
            "containers": [{"name": "sidecar", "$patch": "delete"}],
            "$setElementOrder/containers": [{"name": "app"}]
        }
    });
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(target["metadata"]["finalizers"], json!([]));
    let names: Vec<_> = target["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].clone())
        .collect();
    assert_eq!(names, [json!("app")]);

    let mut target = pod();
    let patch = json!({"metadata": {"labels": {"$patch": "replace", "z": "9"}}});
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(target["metadata"]["labels"], json!({"z": "9"}));

    let mut target = pod();
    let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only"}]}});
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(target["spec"]["containers"], json!([{"name": "only"}]));

    let mut target = pod();
    let patch = json!({"metadata": {"labels": {"$patch": "delete"}}});
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert!(target["metadata"].get("labels").is_none());
}

#[test]
fn strategic_merge_patch_set_element_order() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({
        "spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}],
            "containers": [{"name": "c"}]
        }
    });
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"],
        json!([{"name": "c"}, {"name": "b"}, {"name": "a"}])
    );
}

#[test]
fn strategic_merge_patch_rejects_garbage() {
    let mut target = pod();
    assert!(strategic_merge_patch(&mut target, &json!([1])).is_err());
    assert!(strategic_merge_patch(&mut target, &json!({"$patch": "explode"})).is_err());
    let patch = json!({"spec": {"containers": [{"image": "no-name"}]}});
    assert!(strategic_merge_patch(&mut target, &patch).is_err());
}

#[test]
fn service_ports_merge_on_port() {
    let mut target = json!({"spec": {"ports": [{"port": 80, "name": "http"}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    strategic_merge_patch(&mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["ports"],
        json!([{"port": 80, "name": "http", "targetPort": 8080}, {"port": 443}])
    );
}

#[test]
fn strategic_merge_patch_merges_the_lists_go_tags_merge_and_replaces_the_rest() {
    // PodStatus' `podIPs` and `hostIPs` merge on `ip`, a Node's `addresses` on `type`, its
    // `podCIDRs` as a set; a ServiceAccount's `secrets` and a Pod's `schedulingGates` on
    // `name`.
    let mut status = json!({"status": {
        "podIPs": [{"ip": "10.0.0.1"}],
        "addresses": [{"type": "InternalIP", "address": "10.1.0.1"},
            {"type": "Hostname", "address": "n1"}]}});
    let patch = json!({"status": {
        "podIPs": [{"ip": "fd00::1"}],
        "addresses": [{"type": "InternalIP", "address": "10.1.0.2"}]}});
    strategic_merge_patch(&mut status, &patch).unwrap();
    assert_eq!(
        status["status"]["podIPs"],
        json!([{"ip": "10.0.0.1"}, {"ip": "fd00::1"}])
    );
    assert_eq!(
        status["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "10.1.0.2"},
            {"type": "Hostname", "address": "n1"}])
    );
    let mut node = json!({"spec": {"podCIDRs": ["10.244.0.0/24"]}});
    strategic_merge_patch(&mut node, &json!({"spec": {"podCIDRs": ["fd00::/64"]}})).unwrap();
    assert_eq!(
        node["spec"]["podCIDRs"],
        json!(["10.244.0.0/24", "fd00::/64"])
    );
    let mut account = json!({"secrets": [{"name": "a"}]});
    strategic_merge_patch(&mut account, &json!({"secrets": [{"name": "b"}]})).unwrap();
    assert_eq!(account["secrets"], json!([{"name": "a"}, {"name": "b"}]));
    let mut gated = json!({"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}});
    let ungate = json!({"spec": {"schedulingGates": [{"name": "a", "$patch": "delete"}]}});
    strategic_merge_patch(&mut gated, &ungate).unwrap();
    assert_eq!(gated["spec"]["schedulingGates"], json!([{"name": "b"}]));

    // Readiness gates and an Endpoints subset's addresses carry no merge tag: replaced.
    let mut gates = json!({"spec": {"readinessGates": [{"conditionType": "a"}]}});
    let patch = json!({"spec": {"readinessGates": [{"conditionType": "b"}]}});
    strategic_merge_patch(&mut gates, &patch).unwrap();
    assert_eq!(
        gates["spec"]["readinessGates"],
        json!([{"conditionType": "b"}])
    );
    let mut subset = json!({"addresses": [{"ip": "10.0.0.1"}]});
    strategic_merge_patch(&mut subset, &json!({"addresses": [{"ip": "10.0.0.2"}]})).unwrap();
    assert_eq!(subset["addresses"], json!([{"ip": "10.0.0.2"}]));
}
