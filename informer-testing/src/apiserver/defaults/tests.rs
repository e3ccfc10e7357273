use serde_json::{Value, json};

use super::*;
use crate::apiserver::resource::Registry;

fn defaulted(group: &str, plural: &str, object: Value) -> Value {
    defaulted_by(apply, group, plural, object)
}

/// `object` of the v1 type `group`/`plural` with `defaults` applied.
fn defaulted_by(
    defaults: fn(&ResourceType, &mut Value),
    group: &str,
    plural: &str,
    mut object: Value,
) -> Value {
    let resource = Registry::builtin().by_path(group, "v1", plural).unwrap();
    defaults(&resource, &mut object);
    object
}

#[test]
fn a_pod_gets_the_pod_spec_and_container_defaults() {
    let pod = defaulted(
        "",
        "pods",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "nginx:1.27", "imagePullPolicy": "Never"}]}}),
    );
    let spec = &pod["spec"];
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["enableServiceLinks"], true);
    let a = &spec["containers"][0];
    assert_eq!(a["imagePullPolicy"], "Always", "no tag means latest");
    assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(a["terminationMessagePolicy"], "File");
    assert_eq!(a["resources"], json!({}));
    assert_eq!(a["ports"][0]["protocol"], "TCP");
    assert_eq!(
        spec["containers"][1]["imagePullPolicy"], "Never",
        "a value given is kept"
    );
}

#[test]
fn the_pull_policy_follows_the_image_tag() {
    for (image, policy) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("registry.local:5000/team/app", "Always"),
        ("registry.local:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:0123", "IfNotPresent"),
        ("nginx:latest@sha256:0123", "Always"),
    ] {
        assert_eq!(pull_policy(image), policy, "{image}");
    }
}

#[test]
fn a_pod_requests_what_it_limits_but_a_template_does_not() {
    let container = json!({"name": "a", "image": "x:1",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}});
    let pod = defaulted(
        "",
        "pods",
        json!({"spec": {"containers": [container.clone()]}}),
    );
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    let deployment = defaulted(
        "apps",
        "deployments",
        json!({"spec": {"template": {"spec": {"containers": [container]}}}}),
    );
    let template = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        template["containers"][0]["resources"]["requests"],
        json!({"cpu": "500m"})
    );
    assert!(
        template.get("enableServiceLinks").is_none(),
        "a Pod's own default"
    );
}

#[test]
fn probes_volumes_and_field_refs_get_their_defaults() {
    let pod = defaulted(
        "",
        "pods",
        json!({"spec": {
            "containers": [{"name": "a", "image": "x:1",
                "livenessProbe": {"httpGet": {"port": 8080}},
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}],
            "volumes": [{"name": "scratch"}, {"name": "cm", "configMap": {"name": "c"}}]}}),
    );
    let a = &pod["spec"]["containers"][0];
    assert_eq!(
        a["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"},
            "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(a["readinessProbe"]["periodSeconds"], 5);
    assert_eq!(a["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(pod["spec"]["volumes"][0]["emptyDir"], json!({}));
    assert_eq!(pod["spec"]["volumes"][1]["configMap"]["defaultMode"], 420);
}

#[test]
fn host_network_pods_get_host_ports() {
    let pod = defaulted(
        "",
        "pods",
        json!({"spec": {"hostNetwork": true, "containers": [
            {"name": "a", "image": "x:1", "ports": [{"containerPort": 9100}]}]}}),
    );
    assert_eq!(pod["spec"]["containers"][0]["ports"][0]["hostPort"], 9100);
}

#[test]
fn a_deployment_gets_its_strategy_limits_and_template_defaults() {
    let deployment = defaulted(
        "apps",
        "deployments",
        json!({"spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}),
    );
    let spec = &deployment["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
}

#[test]
fn a_recreate_deployment_and_zero_replicas_are_left_as_they_are() {
    let deployment = defaulted(
        "apps",
        "deployments",
        json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(deployment["spec"]["replicas"], 0);
    assert_eq!(deployment["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn a_stateful_set_gets_its_policies_and_claim_template_defaults() {
    let set = defaulted(
        "apps",
        "statefulsets",
        json!({"spec": {"serviceName": "db",
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"]}}],
            "template": {"spec": {"containers": [{"name": "db", "image": "postgres"}]}}}}),
    );
    let spec = &set["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(spec["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        spec["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        spec["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(
        spec["volumeClaimTemplates"][0]["spec"]["volumeMode"],
        "Filesystem"
    );
    assert_eq!(
        spec["volumeClaimTemplates"][0]["status"]["phase"],
        "Pending"
    );
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
}

#[test]
fn a_service_gets_its_type_affinity_ports_and_traffic_policies() {
    let service = defaulted(
        "",
        "services",
        json!({"spec": {"selector": {"app": "web"},
            "ports": [{"port": 80}, {"port": 443, "targetPort": "https", "protocol": "TCP"}]}}),
    );
    let spec = &service["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert!(spec.get("externalTrafficPolicy").is_none());
    assert_eq!(
        spec["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );
    assert_eq!(spec["ports"][1]["targetPort"], "https");

    let service = defaulted(
        "",
        "services",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 80}]}}),
    );
    let spec = &service["spec"];
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
    assert_eq!(
        spec["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10_800}})
    );
}

#[test]
fn a_secret_is_opaque_unless_typed_and_other_kinds_are_untouched() {
    assert_eq!(
        defaulted("", "secrets", json!({"data": {}}))["type"],
        "Opaque"
    );
    assert_eq!(
        defaulted("", "secrets", json!({"type": "kubernetes.io/tls"}))["type"],
        "kubernetes.io/tls"
    );
    let config_map = json!({"metadata": {"name": "c"}, "data": {"a": "b"}});
    assert_eq!(defaulted("", "configmaps", config_map.clone()), config_map);
}

#[test]
fn a_secrets_string_data_is_merged_into_its_data_and_not_kept() {
    let secret = defaulted(
        "",
        "secrets",
        json!({"data": {"user": "b2xk", "other": "eA=="}, "stringData": {"user": "admin", "token": "t"}}),
    );
    assert!(secret.get("stringData").is_none());
    assert_eq!(
        secret["data"],
        json!({"user": "YWRtaW4=", "other": "eA==", "token": "dA=="})
    );
    let refused = defaulted("", "secrets", json!({"stringData": {"n": 1}}));
    assert_eq!(
        refused["stringData"],
        json!({"n": 1}),
        "left for validation"
    );
}

#[test]
fn defaulting_twice_changes_nothing_more() {
    let once = defaulted(
        "apps",
        "statefulsets",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}),
    );
    assert_eq!(defaulted("apps", "statefulsets", once.clone()), once);
}

#[test]
fn a_job_takes_its_templates_labels_when_it_has_none() {
    let job = defaulted(
        "batch",
        "jobs",
        json!({"metadata": {"name": "j"},
            "spec": {"template": {"metadata": {"labels": {"app": "batch"}}, "spec": {}}}}),
    );
    assert_eq!(job["metadata"]["labels"], json!({"app": "batch"}));
    let labelled = defaulted(
        "batch",
        "jobs",
        json!({"metadata": {"name": "j", "labels": {"own": "x"}},
            "spec": {"template": {"metadata": {"labels": {"app": "batch"}}, "spec": {}}}}),
    );
    assert_eq!(labelled["metadata"]["labels"], json!({"own": "x"}));
}

#[test]
fn a_job_with_parallelism_only_gets_no_completions_and_one_per_index_the_largest_backoff() {
    let job = defaulted(
        "batch",
        "jobs",
        json!({"metadata": {"name": "j"}, "spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
            "podFailurePolicy": {"rules": []}}}),
    );
    let spec = &job["spec"];
    assert!(spec.get("completions").is_none());
    assert_eq!(spec["parallelism"], 3);
    assert_eq!(spec["backoffLimit"], i64::from(i32::MAX));
    assert_eq!(spec["podReplacementPolicy"], "Failed");
}

#[test]
fn templates_lose_a_null_creation_timestamp() {
    let deployment = defaulted(
        "apps",
        "deployments",
        json!({"metadata": {"name": "d"}, "spec": {"template": {
            "metadata": {"creationTimestamp": null, "labels": {"app": "d"}}, "spec": {}}}}),
    );
    assert_eq!(
        deployment["spec"]["template"]["metadata"],
        json!({"labels": {"app": "d"}})
    );
    let cron = defaulted(
        "batch",
        "cronjobs",
        json!({"metadata": {"name": "c"}, "spec": {"jobTemplate": {
            "metadata": {"creationTimestamp": null},
            "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {}}}}}}),
    );
    assert_eq!(cron["spec"]["jobTemplate"]["metadata"], json!({}));
    assert_eq!(
        cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"],
        json!({})
    );
    assert_eq!(cron["spec"]["suspend"], false);
}

fn more_defaulted(group: &str, plural: &str, object: Value) -> Value {
    defaulted_by(apply_more_kinds, group, plural, object)
}

#[test]
fn a_nodes_pod_cidr_and_pod_cidrs_are_kept_in_step() {
    let single = more_defaulted("", "nodes", json!({"spec": {"podCIDR": "10.244.0.0/24"}}));
    assert_eq!(
        single["spec"],
        json!({"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]})
    );
    let listed = more_defaulted(
        "",
        "nodes",
        json!({"spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.244.0.0/24", "fd00::/64"]}}),
    );
    assert_eq!(listed["spec"]["podCIDR"], "10.244.0.0/24");
    let neither = more_defaulted("", "nodes", json!({"spec": {"unschedulable": true}}));
    assert_eq!(neither["spec"], json!({"unschedulable": true}));
}

#[test]
fn webhooks_get_their_defaults() {
    let config = more_defaulted(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        json!({"webhooks": [{"name": "m.example.com", "timeoutSeconds": 5,
            "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"operations": ["CREATE"]}]}]}),
    );
    let hook = &config["webhooks"][0];
    assert_eq!(hook["timeoutSeconds"], 5);
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);
    assert_eq!(hook["rules"][0]["scope"], "*");
}
