use serde_json::{Value, json};

use super::super::{OMIT_ZERO, Schema};

fn normalized(message: &str, mut object: Value) -> Value {
    Schema::builtin().normalize(message, &mut object);
    object
}

const CONFIG_MAP: &str = "k8s.io.api.core.v1.ConfigMap";
const DEPLOYMENT: &str = "k8s.io.api.apps.v1.Deployment";
const POD: &str = "k8s.io.api.core.v1.Pod";

#[test]
fn empty_omitempty_maps_are_left_out() {
    let object = normalized(
        CONFIG_MAP,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {}, "labels": {}},
            "data": {}, "binaryData": {}
        }),
    );
    assert_eq!(
        object,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    );
}

#[test]
fn non_empty_maps_are_kept_with_their_empty_values() {
    let object = json!({
        "metadata": {"name": "c", "annotations": {"a": ""}},
        "data": {"k": ""}
    });
    assert_eq!(normalized(CONFIG_MAP, object.clone()), object);
}

#[test]
fn empty_omitempty_lists_are_left_out_at_any_depth() {
    let object = normalized(
        DEPLOYMENT,
        json!({
            "metadata": {"name": "d", "finalizers": []},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}, "matchExpressions": []},
                "template": {
                    "metadata": {"annotations": {}, "labels": {"app": "d"}},
                    "spec": {
                        "nodeSelector": {},
                        "tolerations": [],
                        "containers": [{
                            "name": "app", "image": "nginx",
                            "env": [], "args": [], "command": [], "ports": [],
                            "volumeMounts": [{"name": "v", "mountPath": "/v"}]
                        }]
                    }
                }
            }
        }),
    );
    assert_eq!(
        object,
        json!({
            "metadata": {"name": "d"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {
                        "containers": [{
                            "name": "app", "image": "nginx",
                            "volumeMounts": [{"name": "v", "mountPath": "/v"}]
                        }]
                    }
                }
            }
        })
    );
}

#[test]
fn lists_not_tagged_omitempty_keep_their_empty_value() {
    // rbac's `Rules []PolicyRule json:"rules"`: `[]` stays, absent stays absent.
    let role = "k8s.io.api.rbac.v1.Role";
    let object = json!({"metadata": {"name": "r"}, "rules": []});
    assert_eq!(normalized(role, object.clone()), object);
    let object = json!({"metadata": {"name": "r"}});
    assert_eq!(normalized(role, object.clone()), object);
    // A pod's containers (`json:"containers"`) too.
    let object = json!({"spec": {"containers": []}});
    assert_eq!(normalized(POD, object.clone()), object);
}

#[test]
fn null_omitempty_lists_and_maps_are_left_out() {
    let object = normalized(
        CONFIG_MAP,
        json!({"metadata": {"name": "c", "annotations": null}, "data": null}),
    );
    assert_eq!(object, json!({"metadata": {"name": "c"}}));
}

#[test]
fn zero_omitempty_scalars_are_left_out() {
    let object = normalized(
        POD,
        json!({
            "metadata": {"name": "p", "namespace": "", "generateName": ""},
            "spec": {
                "hostNetwork": false, "nodeName": "",
                "containers": [{"name": "app", "stdin": false, "tty": true, "image": ""}]
            }
        }),
    );
    assert_eq!(
        object,
        json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "app", "tty": true}]}
        })
    );
}

#[test]
fn pointer_fields_keep_their_zero_values() {
    let object = json!({"spec": {"replicas": 0, "paused": true}});
    assert_eq!(normalized(DEPLOYMENT, object.clone()), object);
    let object = json!({"immutable": false});
    assert_eq!(normalized(CONFIG_MAP, object.clone()), object);
}

#[test]
fn fields_of_inline_messages_follow_their_own_tags() {
    // A volume's source is inline (`VolumeSource json:",inline"`).
    let object = normalized(
        POD,
        json!({"spec": {"containers": [], "volumes": [
            {"name": "c", "configMap": {"name": "x", "items": []}},
            {"name": "e", "emptyDir": {}}
        ]}}),
    );
    assert_eq!(
        object,
        json!({"spec": {"containers": [], "volumes": [
            {"name": "c", "configMap": {"name": "x"}},
            {"name": "e", "emptyDir": {}}
        ]}})
    );
}

#[test]
fn quantities_are_written_canonically() {
    let object = normalized(
        POD,
        json!({"spec": {"containers": [{
            "name": "app",
            "resources": {
                "limits": {"cpu": "0.5", "memory": "1024Mi"},
                "requests": {"cpu": 1, "memory": 1073741824, "ephemeral-storage": " 2Gi "}
            }
        }], "overhead": {"cpu": "1000m"}}}),
    );
    assert_eq!(
        object["spec"]["containers"][0]["resources"],
        json!({
            "limits": {"cpu": "500m", "memory": "1Gi"},
            "requests": {"cpu": "1", "memory": "1073741824", "ephemeral-storage": "2Gi"}
        })
    );
    assert_eq!(object["spec"]["overhead"], json!({"cpu": "1"}));
}

#[test]
fn quantities_of_every_kind_that_has_them_are_canonical() {
    let claim = normalized(
        "k8s.io.api.core.v1.PersistentVolumeClaim",
        json!({"spec": {"resources": {"requests": {"storage": "1024Mi"}}}}),
    );
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    let quota = normalized(
        "k8s.io.api.core.v1.ResourceQuota",
        json!({"spec": {"hard": {"pods": "10", "requests.cpu": "2000m"}}}),
    );
    assert_eq!(
        quota["spec"]["hard"],
        json!({"pods": "10", "requests.cpu": "2"})
    );
    let limits = normalized(
        "k8s.io.api.core.v1.LimitRange",
        json!({"spec": {"limits": [{"type": "Container", "default": {"cpu": "0.25"}}]}}),
    );
    assert_eq!(limits["spec"]["limits"][0]["default"]["cpu"], "250m");
    let node = normalized(
        "k8s.io.api.core.v1.Node",
        json!({"status": {"capacity": {"memory": "2048Ki"}, "allocatable": {"cpu": 4}}}),
    );
    assert_eq!(node["status"]["capacity"]["memory"], "2Mi");
    assert_eq!(node["status"]["allocatable"]["cpu"], "4");
}

#[test]
fn values_that_do_not_decode_are_left_alone() {
    let object = json!({
        "metadata": {"annotations": "not a map"},
        "spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}
    });
    assert_eq!(normalized(POD, object.clone()), object);
}

#[test]
fn messages_without_go_tags_lose_nothing() {
    let schema = Schema::parse("message a.B\n  1 items rep string\n  2 labels map string")
        .unwrap()
        .with_omit_zero("")
        .unwrap();
    let mut object = json!({"items": [], "labels": {}});
    schema.normalize("a.B", &mut object);
    assert_eq!(object, json!({"items": [], "labels": {}}));
    let schema = Schema::parse("message a.B\n  1 items rep string\n  2 labels map string")
        .unwrap()
        .with_omit_zero("a.B labels")
        .unwrap();
    schema.normalize("a.B", &mut object);
    assert_eq!(object, json!({"items": []}));
}

#[test]
fn the_omit_zero_table_lists_omitempty_lists_and_maps() {
    let schema = Schema::builtin();
    let omitted = |message: &str, json: &str| {
        schema
            .message(message)
            .and_then(|m| m.fields.iter().find(|f| f.json == json))
            .unwrap_or_else(|| panic!("{message}.{json}"))
            .omit_zero
    };
    let meta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    assert!(omitted(meta, "annotations"));
    assert!(omitted(meta, "finalizers"));
    assert!(omitted("k8s.io.api.core.v1.Container", "env"));
    assert!(omitted("k8s.io.api.core.v1.PodSpec", "nodeSelector"));
    assert!(omitted(CONFIG_MAP, "data"));
    assert!(!omitted("k8s.io.api.rbac.v1.Role", "rules"));
    assert!(!omitted("k8s.io.api.core.v1.PodSpec", "containers"));
    assert!(OMIT_ZERO.contains("k8s.io.api.core.v1.ConfigMap data binaryData"));
}

#[test]
fn times_are_written_in_utc_to_the_second_and_micro_times_to_the_microsecond() {
    let lease = normalized(
        "k8s.io.api.coordination.v1.Lease",
        json!({"spec": {
            "renewTime": "2024-01-01T00:00:00Z",
            "acquireTime": "2024-01-01T02:00:00.5+02:00",
            "holderIdentity": "a",
        }}),
    );
    assert_eq!(lease["spec"]["renewTime"], "2024-01-01T00:00:00.000000Z");
    assert_eq!(lease["spec"]["acquireTime"], "2024-01-01T00:00:00.500000Z");
    let pod = normalized(
        POD,
        json!({"status": {
            "startTime": "2024-01-01T10:00:00.999+02:00",
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2024-01-01T00:00:01.123456789Z"}],
        }}),
    );
    assert_eq!(pod["status"]["startTime"], "2024-01-01T08:00:00Z");
    assert_eq!(
        pod["status"]["conditions"][0]["lastTransitionTime"],
        "2024-01-01T00:00:01Z"
    );
}
