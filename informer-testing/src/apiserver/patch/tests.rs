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
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(target["metadata"]["labels"], json!({"b": "2", "c": "3"}));
    // Upstream's order: the patch's elements first, the server's others after them.
    assert_eq!(target["metadata"]["finalizers"], json!(["y", "x"]));
    let containers = target["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 3);
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
    );
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "name": "http", "protocol": "TCP"}])
    );
    assert_eq!(containers[1]["name"], "new");
    assert_eq!(containers[2]["name"], "sidecar");
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
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
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
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(target["metadata"]["labels"], json!({"z": "9"}));

    let mut target = pod();
    let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only"}]}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(target["spec"]["containers"], json!([{"name": "only"}]));

    let mut target = pod();
    let patch = json!({"metadata": {"labels": {"$patch": "delete"}}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    // As upstream: the map is emptied, not removed (an `omitempty` map then reads back
    // without it, a struct as `{}`).
    assert_eq!(target["metadata"]["labels"], json!({}));
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
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"],
        json!([{"name": "c"}, {"name": "b"}, {"name": "a"}])
    );
}

#[test]
fn strategic_merge_patch_rejects_garbage() {
    let mut target = pod();
    assert!(strategic_merge_patch("Pod", &mut target, &json!([1])).is_err());
    assert!(strategic_merge_patch("Pod", &mut target, &json!({"$patch": "explode"})).is_err());
    let patch = json!({"spec": {"containers": [{"image": "no-name"}]}});
    assert!(strategic_merge_patch("Pod", &mut target, &patch).is_err());
}

#[test]
fn service_ports_merge_on_port() {
    let mut target = json!({"spec": {"ports": [{"port": 80, "name": "http"}]}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}});
    strategic_merge_patch("Service", &mut target, &patch).unwrap();
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
    strategic_merge_patch("Node", &mut status, &patch).unwrap();
    assert_eq!(
        status["status"]["podIPs"],
        json!([{"ip": "fd00::1"}, {"ip": "10.0.0.1"}])
    );
    assert_eq!(
        status["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "10.1.0.2"},
            {"type": "Hostname", "address": "n1"}])
    );
    let mut node = json!({"spec": {"podCIDRs": ["10.244.0.0/24"]}});
    strategic_merge_patch(
        "Node",
        &mut node,
        &json!({"spec": {"podCIDRs": ["fd00::/64"]}}),
    )
    .unwrap();
    assert_eq!(
        node["spec"]["podCIDRs"],
        json!(["fd00::/64", "10.244.0.0/24"])
    );
    let mut account = json!({"secrets": [{"name": "a"}]});
    strategic_merge_patch(
        "ServiceAccount",
        &mut account,
        &json!({"secrets": [{"name": "b"}]}),
    )
    .unwrap();
    assert_eq!(account["secrets"], json!([{"name": "b"}, {"name": "a"}]));
    let mut gated = json!({"spec": {"schedulingGates": [{"name": "a"}, {"name": "b"}]}});
    let ungate = json!({"spec": {"schedulingGates": [{"name": "a", "$patch": "delete"}]}});
    strategic_merge_patch("Pod", &mut gated, &ungate).unwrap();
    assert_eq!(gated["spec"]["schedulingGates"], json!([{"name": "b"}]));

    // Readiness gates and an Endpoints subset's addresses carry no merge tag: replaced.
    let mut gates = json!({"spec": {"readinessGates": [{"conditionType": "a"}]}});
    let patch = json!({"spec": {"readinessGates": [{"conditionType": "b"}]}});
    strategic_merge_patch("Pod", &mut gates, &patch).unwrap();
    assert_eq!(
        gates["spec"]["readinessGates"],
        json!([{"conditionType": "b"}])
    );
    let mut subset = json!({"addresses": [{"ip": "10.0.0.1"}]});
    strategic_merge_patch(
        "Endpoints",
        &mut subset,
        &json!({"addresses": [{"ip": "10.0.0.2"}]}),
    )
    .unwrap();
    assert_eq!(subset["addresses"], json!([{"ip": "10.0.0.2"}]));
}

#[test]
fn an_empty_patch_list_leaves_a_merging_list_as_it_is() {
    let mut target = pod();
    let before = target.clone();
    let patch = json!({"metadata": {"finalizers": []}, "spec": {"containers": []}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(target, before);
    // A list that does not merge is replaced, empty or not.
    let patch = json!({"spec": {"tolerations": []}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(target["spec"]["tolerations"], json!([]));
}

#[test]
fn merged_lists_put_the_patchs_elements_first_and_keep_the_servers_places() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}, {"name": "x"}, {"name": "b"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
        "containers": [{"name": "b", "image": "new"}],
    }});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"],
        json!([{"name": "a"}, {"name": "x"}, {"name": "b", "image": "new"}])
    );
    let mut target = json!({"spec": {"containers": [{"name": "app"}]}});
    let patch = json!({"spec": {"containers": [{"name": "sidecar"}]}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"],
        json!([{"name": "sidecar"}, {"name": "app"}])
    );
}

#[test]
fn lists_of_the_same_name_merge_only_where_their_type_says() {
    // A ServiceAccount's imagePullSecrets replace; a pod spec's merge.
    let mut account = json!({"imagePullSecrets": [{"name": "a"}]});
    let patch = json!({"imagePullSecrets": [{"name": "b"}]});
    strategic_merge_patch("ServiceAccount", &mut account, &patch).unwrap();
    assert_eq!(account["imagePullSecrets"], json!([{"name": "b"}]));
    let mut pod = json!({"spec": {"imagePullSecrets": [{"name": "a"}]}});
    strategic_merge_patch("Pod", &mut pod, &json!({"spec": patch})).unwrap();
    assert_eq!(
        pod["spec"]["imagePullSecrets"],
        json!([{"name": "b"}, {"name": "a"}])
    );
    // Only a container's and a Service spec's ports merge.
    let mut slice = json!({"ports": [{"port": 80}]});
    let patch = json!({"ports": [{"port": 443}]});
    strategic_merge_patch("EndpointSlice", &mut slice, &patch).unwrap();
    assert_eq!(slice["ports"], json!([{"port": 443}]));
    let mut policy = json!({"status": {"conditions": [{"type": "A"}]}});
    let patch = json!({"status": {"conditions": [{"type": "B"}]}});
    strategic_merge_patch("ValidatingAdmissionPolicy", &mut policy, &patch).unwrap();
    assert_eq!(policy["status"]["conditions"], json!([{"type": "B"}]));
}

#[test]
fn a_new_value_loses_the_maps_that_carry_a_patch_directive() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}]}});
    let patch = json!({"spec": {
        "volumes": [{"name": "v", "$patch": "delete"}, {"name": "w", "emptyDir": {"x": null}}],
    }});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["volumes"],
        json!([{"name": "w", "emptyDir": {}}])
    );
    // A new list element is taken as sent, its directives aside.
    let patch = json!({"spec": {"containers": [{"name": "n", "env": [{"name": "E", "$patch": "delete"}]}]}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"][0],
        json!({"name": "n", "env": [{"name": "E"}]})
    );
}

#[test]
fn malformed_directives_are_answered_as_the_patch_handler_answers_them() {
    let mut target = json!({"spec": {"strategy": {"type": "RollingUpdate"}}});
    let before = target.clone();
    for patch in [
        json!({"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {}}}}),
    ] {
        assert_eq!(
            strategic_merge_patch("Deployment", &mut target, &patch),
            Err(SmpError::BadRequest("invalid patch format of retainKeys"))
        );
    }
    let patch = json!({"spec": {"$setElementOrder/containers": "x"}});
    assert_eq!(
        strategic_merge_patch("Deployment", &mut target, &patch),
        Err(SmpError::Internal(
            "expected a []interface {}, but received a string".into()
        ))
    );
    let patch = json!({"spec": {"containers": [{"image": "q"}]}});
    let mut pod = json!({"spec": {"containers": [{"name": "a"}]}});
    assert_eq!(
        strategic_merge_patch("Pod", &mut pod, &patch),
        Err(SmpError::Internal(
            "map: map[image:q] does not contain declared merge key: name".into()
        ))
    );
    // A refused patch changes nothing.
    assert_eq!(target, before);
    // A deletion list that is not a list is ignored.
    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}});
    let mut object = json!({"metadata": {"finalizers": ["x"]}});
    strategic_merge_patch("Pod", &mut object, &patch).unwrap();
    assert_eq!(object["metadata"]["finalizers"], json!(["x"]));
}

#[test]
fn a_replace_in_a_merging_list_keeps_the_patchs_order_and_drops_its_directives() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
    let patch = json!({"spec": {"containers": [
        {"$patch": "replace"},
        {"name": "c", "resources": {"$patch": "replace", "limits": {"cpu": "1"}}},
        {"name": "b"},
        {"name": "a"},
    ]}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"],
        json!([{"name": "c", "resources": {"limits": {"cpu": "1"}}}, {"name": "b"}, {"name": "a"}])
    );
}

#[test]
fn kubectl_applys_order_sees_the_merges_deletions_and_appends_as_go_does() {
    // Live [d, sidecar, c]; kubectl apply replaces c by a (the sidecar is not in the
    // manifest): upstream's order list aliases the merged slice, so a takes c's place.
    let mut target =
        json!({"spec": {"containers": [{"name": "d"}, {"name": "sidecar"}, {"name": "c"}]}});
    let patch = json!({"spec": {
        "$setElementOrder/containers": [{"name": "d"}, {"name": "a"}],
        "containers": [{"name": "a", "image": "a"}, {"name": "c", "$patch": "delete"}],
    }});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    let names: Vec<&str> = target["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["d", "sidecar", "a"]);
}

#[test]
fn an_element_order_of_lists_empty_on_both_sides_is_refused_as_upstream_does() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}]}});
    let patch = json!({"spec": {"ports": [], "$setElementOrder/ports": []}});
    assert_eq!(
        strategic_merge_patch("Service", &mut target, &patch),
        Err(SmpError::Internal(
            "no elements in any of the given slices".into()
        ))
    );
    let patch =
        json!({"spec": {"containers": null, "$setElementOrder/containers": [{"name": "a"}]}});
    assert_eq!(
        strategic_merge_patch("Pod", &mut target, &patch),
        Err(SmpError::Internal(
            "expected a []interface {}, but received a %!s(<nil>)".into()
        ))
    );
}

#[test]
fn a_new_list_elements_nulls_are_kept_for_decoding() {
    let mut target = json!({"spec": {"containers": [{"name": "a"}]}});
    let patch =
        json!({"spec": {"containers": [{"name": "b", "resources": {"limits": {"cpu": null}}}]}});
    strategic_merge_patch("Pod", &mut target, &patch).unwrap();
    assert_eq!(
        target["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": null}})
    );
}
