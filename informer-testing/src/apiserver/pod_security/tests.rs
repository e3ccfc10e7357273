use serde_json::json;

use super::*;

/// What `check` forbids of a pod with `spec` (and `meta`): `(reason, detail)`.
fn forbidden_by(check: CheckFn, meta: Value, spec: Value) -> Option<(String, String)> {
    check(&meta, &spec).map(|f| (f.reason, f.detail))
}

#[track_caller]
fn assert_forbids(check: CheckFn, spec: Value, reason: &str, detail: &str) {
    assert_eq!(
        forbidden_by(check, json!({}), spec),
        Some((reason.to_string(), detail.to_string()))
    );
}

#[track_caller]
fn assert_allows(check: CheckFn, spec: Value) {
    assert_eq!(forbidden_by(check, json!({}), spec), None);
}

/// Asserts `check` allows `spec` once `field` is set to `value` (an exemption).
#[track_caller]
fn assert_exempts(check: CheckFn, mut spec: Value, field: &str, value: Value) {
    spec[field] = value;
    assert_allows(check, spec);
}

fn namespace(labels: Value) -> Value {
    json!({"metadata": {"name": "team", "labels": labels}})
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "team"}, "spec": spec})
}

/// A pod the restricted level allows.
fn restricted_spec() -> Value {
    json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{
            "name": "app",
            "image": "nginx",
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"]},
            },
        }],
    })
}

#[test]
fn checks_run_baseline_then_restricted_each_sorted_by_id() {
    for level in [Level::Baseline, Level::Restricted] {
        let ids: Vec<&str> = CHECKS
            .iter()
            .filter(|c| c.level == level)
            .map(|c| c.id)
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        assert_eq!(ids, sorted);
    }
    let levels: Vec<Level> = CHECKS.iter().map(|c| c.level).collect();
    assert!(levels.is_sorted());
}

#[test]
fn app_armor_profile() {
    assert_allows(
        super::app_armor_profile,
        json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
               "containers": [{"name": "a", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}]}),
    );
    assert_forbids(
        super::app_armor_profile,
        json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
               "containers": [{"name": "a", "securityContext": {"appArmorProfile": {"type": "Unconfined"}}}]}),
        "forbidden AppArmor profile",
        r#"pod and container "a" must not set AppArmor profile type to "Unconfined""#,
    );
    let meta = json!({"annotations": {
        "container.apparmor.security.beta.kubernetes.io/b": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/a": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/mine",
    }});
    assert_eq!(
        forbidden_by(super::app_armor_profile, meta, json!({})),
        Some((
            "forbidden AppArmor profile".to_string(),
            r#"annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/b="unconfined"""#.to_string()
        ))
    );
}

#[test]
fn capabilities_baseline() {
    assert_allows(
        super::capabilities_baseline,
        json!({"containers": [{"name": "a", "securityContext": {"capabilities": {"add": ["CHOWN", "NET_BIND_SERVICE"]}}}]}),
    );
    assert_forbids(
        super::capabilities_baseline,
        json!({"containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["NET_RAW", "CHOWN"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}},
        ]}),
        "non-default capabilities",
        r#"containers "a", "b" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add"#,
    );
}

#[test]
fn host_namespaces() {
    assert_allows(super::host_namespaces, json!({"hostNetwork": false}));
    assert_forbids(
        super::host_namespaces,
        json!({"hostPID": true, "hostNetwork": true, "hostIPC": true}),
        "host namespaces",
        "hostIPC, hostNetwork, hostPID",
    );
}

#[test]
fn host_path_volumes() {
    assert_allows(
        super::host_path_volumes,
        json!({"volumes": [{"name": "e", "emptyDir": {}}]}),
    );
    assert_forbids(
        super::host_path_volumes,
        json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "hostPath": {"path": "/etc"}}]}),
        "hostPath volumes",
        r#"volumes "a", "b""#,
    );
}

#[test]
fn host_ports() {
    assert_allows(
        super::host_ports,
        json!({"containers": [{"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 0}]}]}),
    );
    assert_forbids(
        super::host_ports,
        json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 10000}]}]}),
        "hostPort",
        r#"container "a" uses hostPorts 10000, 8080"#,
    );
}

#[test]
fn host_probes_and_host_lifecycle() {
    assert_allows(
        super::host_probes_and_host_lifecycle,
        json!({"containers": [{"name": "a", "livenessProbe": {"httpGet": {"port": 80}}}]}),
    );
    assert_forbids(
        super::host_probes_and_host_lifecycle,
        json!({"containers": [
            {"name": "b", "livenessProbe": {"httpGet": {"port": 80, "host": "10.0.0.1"}}},
            {"name": "a", "lifecycle": {"preStop": {"tcpSocket": {"port": 80, "host": "evil.example"}}}},
        ]}),
        "probe or lifecycle host",
        r#"containers "a", "b" use probe or lifecycle hosts "10.0.0.1", "evil.example""#,
    );
}

#[test]
fn privileged() {
    assert_allows(
        super::privileged,
        json!({"containers": [{"name": "a", "securityContext": {"privileged": false}}]}),
    );
    assert_forbids(
        super::privileged,
        json!({"initContainers": [{"name": "init", "securityContext": {"privileged": true}}],
               "containers": [{"name": "a", "securityContext": {"privileged": true}}]}),
        "privileged",
        r#"containers "init", "a" must not set securityContext.privileged=true"#,
    );
}

#[test]
fn proc_mount_baseline() {
    let unmasked =
        json!({"containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]});
    assert_forbids(
        super::proc_mount_baseline,
        unmasked.clone(),
        "procMount",
        r#"container "a" must not set securityContext.procMount to "Unmasked""#,
    );
    assert_exempts(
        super::proc_mount_baseline,
        unmasked,
        "hostUsers",
        json!(false),
    );
}

#[test]
fn proc_mount_restricted() {
    assert_allows(
        super::proc_mount,
        json!({"containers": [{"name": "a", "securityContext": {"procMount": "Default"}}]}),
    );
    assert_forbids(
        super::proc_mount,
        json!({"hostUsers": false, "containers": [{"name": "a", "securityContext": {"procMount": "Unmasked"}}]}),
        "procMount",
        r#"container "a" must not set securityContext.procMount to "Unmasked""#,
    );
}

#[test]
fn se_linux_options() {
    assert_allows(
        super::se_linux_options,
        json!({"securityContext": {"seLinuxOptions": {"type": "container_engine_t", "level": "s0"}}}),
    );
    assert_forbids(
        super::se_linux_options,
        json!({"securityContext": {"seLinuxOptions": {"type": "foo", "user": "u"}},
               "containers": [{"name": "a", "securityContext": {"seLinuxOptions": {"type": "bar", "role": "r"}}}]}),
        "seLinuxOptions",
        r#"pod and container "a" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#,
    );
    assert_forbids(
        super::se_linux_options,
        json!({"securityContext": {"seLinuxOptions": {"user": "u"}}}),
        "seLinuxOptions",
        "pod set forbidden securityContext.seLinuxOptions: user may not be set",
    );
}

#[test]
fn seccomp_profile_baseline() {
    assert_allows(
        super::seccomp_profile_baseline,
        json!({"containers": [{"name": "a"}]}),
    );
    assert_forbids(
        super::seccomp_profile_baseline,
        json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}},
               "containers": [{"name": "a", "securityContext": {"seccompProfile": {"type": "Unconfined"}}},
                              {"name": "b", "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}]}),
        "seccompProfile",
        r#"pod and container "a" must not set securityContext.seccompProfile.type to "Unconfined""#,
    );
}

#[test]
fn sysctls() {
    assert_allows(
        super::sysctls,
        json!({"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"}]}}),
    );
    assert_forbids(
        super::sysctls,
        json!({"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_syncookies", "value": "1"}, {"name": "vm.swappiness", "value": "1"}]}}),
        "forbidden sysctls",
        "kernel.msgmax, vm.swappiness",
    );
}

#[test]
fn windows_host_process() {
    assert_forbids(
        super::windows_host_process,
        json!({"securityContext": {"windowsOptions": {"hostProcess": true}},
               "containers": [{"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}}]}),
        "hostProcess",
        r#"pod and container "a" must not set securityContext.windowsOptions.hostProcess=true"#,
    );
    assert_allows(
        super::windows_host_process,
        json!({"securityContext": {"windowsOptions": {"hostProcess": false}}}),
    );
}

#[test]
fn allow_privilege_escalation() {
    let spec = json!({"containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {"allowPrivilegeEscalation": true}},
        {"name": "c", "securityContext": {"allowPrivilegeEscalation": false}},
    ]});
    assert_forbids(
        super::allow_privilege_escalation,
        spec.clone(),
        "allowPrivilegeEscalation != false",
        r#"containers "a", "b" must set securityContext.allowPrivilegeEscalation=false"#,
    );
    assert_exempts(
        super::allow_privilege_escalation,
        spec,
        "os",
        json!({"name": "windows"}),
    );
}

#[test]
fn capabilities_restricted() {
    let spec = json!({"containers": [
        {"name": "a"},
        {"name": "b", "securityContext": {"capabilities": {"drop": ["NET_RAW"]}}},
        {"name": "c", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["FOO", "NET_BIND_SERVICE"]}}},
        {"name": "d", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["BAR"]}}},
        {"name": "e", "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}},
    ]});
    assert_forbids(
        super::capabilities_restricted,
        spec.clone(),
        "unrestricted capabilities",
        r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "c", "d" must not include "BAR", "FOO" in securityContext.capabilities.add"#,
    );
    assert_exempts(
        super::capabilities_restricted,
        spec,
        "os",
        json!({"name": "windows"}),
    );
}

#[test]
fn restricted_volumes() {
    assert_allows(
        super::restricted_volumes,
        json!({"volumes": [{"name": "a", "configMap": {"name": "c"}}, {"name": "b", "image": {"reference": "x"}}, {"name": "c", "projected": {"sources": []}}]}),
    );
    assert_forbids(
        super::restricted_volumes,
        json!({"volumes": [{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "emptyDir": {}}, {"name": "c", "nfs": {"server": "s", "path": "/"}}, {"name": "d"}]}),
        "restricted volume types",
        r#"volumes "a", "c", "d" use restricted volume types "hostPath", "nfs", "unknown""#,
    );
}

#[test]
fn run_as_non_root() {
    assert_forbids(
        super::run_as_non_root,
        json!({"containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsNonRoot": true}}]}),
        "runAsNonRoot != true",
        r#"pod or container "a" must set securityContext.runAsNonRoot=true"#,
    );
    assert_forbids(
        super::run_as_non_root,
        json!({"securityContext": {"runAsNonRoot": false}, "containers": [{"name": "a", "securityContext": {"runAsNonRoot": false}}, {"name": "b"}]}),
        "runAsNonRoot != true",
        r#"pod and container "a" must not set securityContext.runAsNonRoot=false"#,
    );
    assert_allows(
        super::run_as_non_root,
        json!({"securityContext": {"runAsNonRoot": true}, "containers": [{"name": "a"}]}),
    );
    assert_allows(
        super::run_as_non_root,
        json!({"hostUsers": false, "containers": [{"name": "a"}]}),
    );
}

#[test]
fn run_as_user() {
    assert_forbids(
        super::run_as_user,
        json!({"securityContext": {"runAsUser": 0}, "containers": [{"name": "a", "securityContext": {"runAsUser": 0}}, {"name": "b", "securityContext": {"runAsUser": 1000}}]}),
        "runAsUser=0",
        r#"pod and container "a" must not set runAsUser=0"#,
    );
    assert_allows(
        super::run_as_user,
        json!({"hostUsers": false, "securityContext": {"runAsUser": 0}}),
    );
}

#[test]
fn seccomp_profile_restricted() {
    assert_forbids(
        super::seccomp_profile_restricted,
        json!({"containers": [{"name": "a"}, {"name": "b", "securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}}}]}),
        "seccompProfile",
        r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
    );
    assert_forbids(
        super::seccomp_profile_restricted,
        json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}, "containers": [{"name": "a"}]}),
        "seccompProfile",
        r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#,
    );
    assert_allows(
        super::seccomp_profile_restricted,
        json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}, "containers": [{"name": "a"}]}),
    );
    assert_allows(
        super::seccomp_profile_restricted,
        json!({"os": {"name": "windows"}, "containers": [{"name": "a"}]}),
    );
}

#[test]
fn restricted_replaces_the_baseline_checks_it_overrides() {
    let spec = json!({
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        "containers": [{"name": "nginx", "image": "nginx", "securityContext": {"privileged": true}}],
    });
    let detail = forbidden_detail(&evaluate(Level::Restricted, &json!({}), &spec));
    assert_eq!(
        detail,
        concat!(
            r#"privileged (container "nginx" must not set securityContext.privileged=true), "#,
            r#"allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"restricted volume types (volume "host" uses restricted volume type "hostPath"), "#,
            r#"runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )
    );
    let baseline = forbidden_detail(&evaluate(Level::Baseline, &json!({}), &spec));
    assert_eq!(
        baseline,
        r#"hostPath volumes (volume "host"), privileged (container "nginx" must not set securityContext.privileged=true)"#
    );
    assert!(evaluate(Level::Privileged, &json!({}), &spec).is_empty());
    assert!(evaluate(Level::Restricted, &json!({}), &restricted_spec()).is_empty());
}

#[test]
fn policy_reads_the_labels_and_falls_back_on_invalid_ones() {
    let (policy, errors) = super::policy(Some(&namespace(json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.30",
        "pod-security.kubernetes.io/warn": "restricted",
    }))));
    assert!(errors.is_empty());
    assert_eq!(policy.enforce.to_string(), "baseline:v1.30");
    assert_eq!(policy.warn.to_string(), "restricted:latest");
    assert_eq!(policy.audit.to_string(), "privileged:latest");

    let (policy, errors) = super::policy(Some(&namespace(json!({
        "pod-security.kubernetes.io/enforce": "strict",
        "pod-security.kubernetes.io/warn": "strict",
        "pod-security.kubernetes.io/audit-version": "v1.05",
    }))));
    assert_eq!(policy.enforce.level, Level::Restricted);
    assert_eq!(policy.warn.level, Level::Privileged);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#,
            r#"metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "v1.05": must be "latest" or "v1.x""#,
            r#"metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: "strict": must be one of privileged, baseline, restricted"#,
        ]
    );
    assert_eq!(parse_version("v1.0"), Ok(Some(0)));
    assert_eq!(parse_version("v1.35"), Ok(Some(35)));
    assert_eq!(parse_version("v2.1"), Err(()));
    assert_eq!(parse_version("v1."), Err(()));
}

#[test]
fn admit_pod_enforces_then_warns() {
    let restricted = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let privileged = pod(
        "web",
        json!({"containers": [{"name": "app", "image": "nginx", "securityContext": {"privileged": true}}]}),
    );
    let denied = admit_pod(Some(&restricted), None, &privileged).unwrap_err();
    assert!(
        denied.starts_with(r#"violates PodSecurity "restricted:latest": privileged (container "app" must not set securityContext.privileged=true), allowPrivilegeEscalation != false"#),
        "{denied}"
    );
    assert_eq!(
        admit_pod(Some(&restricted), None, &pod("ok", restricted_spec())),
        Ok(vec![])
    );
    let warn = namespace(json!({
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
        "pod-security.kubernetes.io/warn-version": "v1.30",
    }));
    let plain = pod(
        "plain",
        json!({"containers": [{"name": "app", "image": "nginx"}]}),
    );
    let warnings = admit_pod(Some(&warn), None, &plain).unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with(
            r#"would violate PodSecurity "restricted:v1.30": allowPrivilegeEscalation != false"#
        ),
        "{warnings:?}"
    );
    // No labels: privileged, nothing checked.
    assert_eq!(admit_pod(None, None, &privileged), Ok(vec![]));
    assert_eq!(
        admit_pod(Some(&namespace(json!({}))), None, &privileged),
        Ok(vec![])
    );
}

#[test]
fn significant_pod_update() {
    let restricted = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    let old = pod(
        "web",
        json!({"containers": [{"name": "app", "image": "nginx"}]}),
    );
    // A label changed: not evaluated.
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(
        admit_pod(Some(&restricted), Some(&old), &relabelled),
        Ok(vec![])
    );
    // The image changed: evaluated.
    let mut new_image = old.clone();
    new_image["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert!(admit_pod(Some(&restricted), Some(&old), &new_image).is_err());
    // An ephemeral container added: evaluated.
    let mut debugged = old.clone();
    debugged["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    assert!(super::significant_pod_update(&debugged, &old));
    assert!(!super::significant_pod_update(&debugged, &debugged));
    // A container's seccomp annotation changed: evaluated.
    let mut annotated = old.clone();
    annotated["metadata"]["annotations"] =
        json!({"container.seccomp.security.alpha.kubernetes.io/app": "unconfined"});
    assert!(super::significant_pod_update(&annotated, &old));
}

#[test]
fn admit_pod_controller_warns_for_templates() {
    let ns = namespace(json!({"pod-security.kubernetes.io/warn": "baseline"}));
    let template = json!({"spec": {"hostNetwork": true, "containers": [{"name": "app"}]}});
    let deployment = json!({"spec": {"template": template}});
    assert_eq!(
        admit_pod_controller(Some(&ns), "apps", "deployments", &deployment),
        [r#"would violate PodSecurity "baseline:latest": host namespaces (hostNetwork)"#]
    );
    let cronjob = json!({"spec": {"jobTemplate": {"spec": {"template": template}}}});
    assert_eq!(
        admit_pod_controller(Some(&ns), "batch", "cronjobs", &cronjob).len(),
        1
    );
    assert!(admit_pod_controller(Some(&ns), "", "configmaps", &deployment).is_empty());
    assert!(
        admit_pod_controller(
            Some(&ns),
            "",
            "replicationcontrollers",
            &json!({"spec": {}})
        )
        .is_empty()
    );
    let enforce_only = namespace(json!({"pod-security.kubernetes.io/enforce": "restricted"}));
    assert!(
        admit_pod_controller(Some(&enforce_only), "apps", "deployments", &deployment).is_empty()
    );
}

#[test]
fn namespace_label_errors() {
    let bad = namespace(json!({"pod-security.kubernetes.io/enforce": "bogus"}));
    assert_eq!(super::namespace_label_errors(None, &bad).len(), 1);
    // The same invalid labels as before: allowed.
    assert!(super::namespace_label_errors(Some(&bad), &bad).is_empty());
    let good = namespace(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
    assert_eq!(super::namespace_label_errors(Some(&good), &bad).len(), 1);
    assert!(super::namespace_label_errors(Some(&bad), &good).is_empty());
}

#[test]
fn namespace_warnings_name_the_pods_that_break_a_raised_level() {
    let old = namespace(json!({}));
    let new = namespace(json!({"pod-security.kubernetes.io/enforce": "baseline"}));
    let host = json!({"hostNetwork": true, "containers": [{"name": "app"}]});
    let pods = [
        pod("c", host.clone()),
        pod("a", host.clone()),
        pod("b", host),
        pod(
            "p",
            json!({"containers": [{"name": "app", "securityContext": {"privileged": true}}]}),
        ),
        pod("fine", json!({"containers": [{"name": "app"}]})),
    ];
    let pods: Vec<&Value> = pods.iter().collect();
    assert_eq!(
        namespace_warnings(&old, &new, &pods),
        [
            r#"existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest""#,
            "a (and 2 other pods): host namespaces",
            "p: privileged",
        ]
    );
    // Relaxed, unchanged, or privileged: nothing checked.
    assert!(namespace_warnings(&new, &old, &pods).is_empty());
    assert!(namespace_warnings(&new, &new, &pods).is_empty());
    let pinned = namespace(
        json!({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
    );
    assert_eq!(namespace_warnings(&new, &pinned, &pods).len(), 3);
}
