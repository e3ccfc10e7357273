use serde_json::json;

use super::*;

#[test]
fn the_builtin_table_parses_and_is_closed() {
    let schema = Schema::parse(BUILTIN).expect("the generated table parses");
    for kind in [
        "Pod",
        "ConfigMap",
        "Secret",
        "Service",
        "Namespace",
        "Event",
    ] {
        assert!(schema.message_name_for("v1", kind).is_some(), "{kind}");
    }
    for kind in ["Deployment", "ReplicaSet", "StatefulSet"] {
        assert!(schema.message_name_for("apps/v1", kind).is_some(), "{kind}");
    }
    assert_eq!(
        schema
            .message_name_for("coordination.k8s.io/v1", "Lease")
            .as_deref(),
        Some("k8s.io.api.coordination.v1.Lease")
    );
    assert_eq!(
        schema
            .message_name_for("autoscaling/v1", "Scale")
            .as_deref(),
        Some("k8s.io.api.autoscaling.v1.Scale")
    );
    assert!(
        schema
            .message_name_for("example.com/v1", "Widget")
            .is_none()
    );
    assert!(schema.message(UNKNOWN).is_some());
}

#[test]
fn fields_carry_numbers_json_names_and_kinds() {
    let schema = Schema::builtin();
    let meta = schema
        .message("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    let generation = meta.by_number(7).unwrap();
    assert_eq!(
        (generation.json.as_str(), generation.kind),
        ("generation", Kind::Int64)
    );
    let labels = meta.by_number(11).unwrap();
    assert_eq!(labels.cardinality, Cardinality::Map);
    let spec = schema.message("k8s.io.api.core.v1.PodSpec").unwrap();
    let host_ipc = spec.fields.iter().find(|f| f.json == "hostIPC").unwrap();
    assert_eq!(host_ipc.kind, Kind::Bool);
    let containers = spec.fields.iter().find(|f| f.json == "containers").unwrap();
    assert!(containers.required);
}

#[test]
fn malformed_tables_are_errors() {
    assert!(Schema::parse("  1 name opt string").is_err());
    assert!(Schema::parse("message a.B\n  x name opt string").is_err());
    assert!(Schema::parse("message a.B\n  1 name opt nonsense").is_err());
    assert!(Schema::parse("message a.B\n  1 c opt message a.Missing").is_err());
}

#[test]
fn unknown_fields_are_pruned_and_reported_with_their_paths() {
    let schema = Schema::builtin();
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"any": "thing"}, "bogus": 1},
        "spec": {
            "containers": [{"name": "app", "imagex": "nginx", "resources": {"limits": {"cpu": "1"}}}],
            "volumes": [{"name": "v", "emptyDir": {}, "nope": true}]
        },
        "extra": {}
    });
    let unknown = schema.prune_unknown("k8s.io.api.core.v1.Pod", &mut pod, false);
    assert_eq!(
        unknown,
        [
            "extra",
            "metadata.bogus",
            "spec.containers[0].imagex",
            "spec.volumes[0].nope"
        ]
    );
    assert!(pod.get("extra").is_none());
    assert_eq!(
        pod["spec"]["volumes"][0]["emptyDir"],
        json!({}),
        "inline fields are known"
    );
    assert_eq!(
        pod["metadata"]["labels"]["any"], "thing",
        "map keys are data"
    );
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        "1"
    );
}

#[test]
fn patch_directives_are_known_only_when_allowed() {
    let schema = Schema::builtin();
    let patch = json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "a", "$patch": "delete"}]}});
    let mut allowed = patch.clone();
    assert!(
        schema
            .prune_unknown("k8s.io.api.core.v1.Pod", &mut allowed, true)
            .is_empty()
    );
    let mut refused = patch;
    assert_eq!(
        schema.prune_unknown("k8s.io.api.core.v1.Pod", &mut refused, false),
        [
            "spec.$setElementOrder/containers",
            "spec.containers[0].$patch"
        ]
    );
}

#[test]
fn the_omit_zero_table_marks_non_pointer_omitempty_scalars_only() {
    let schema = Schema::parse(BUILTIN)
        .and_then(|schema| schema.with_omit_zero(OMIT_ZERO))
        .expect("the generated tables parse and agree");
    let field = |message: &str, json: &str| {
        let message = schema.message(message).expect("message");
        assert!(message.go_tags);
        message
            .fields
            .iter()
            .find(|f| f.json == json)
            .expect("field")
            .omit_zero
    };
    assert!(field("k8s.io.api.core.v1.Container", "stdin"));
    assert!(field("k8s.io.api.apps.v1.DeploymentSpec", "paused"));
    assert!(field(
        "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "generation"
    ));
    // Pointers: their zeros mean something.
    assert!(!field("k8s.io.api.apps.v1.DeploymentSpec", "replicas"));
    assert!(!field("k8s.io.api.core.v1.ConfigMap", "immutable"));
    // Not omitempty: always written.
    assert!(!field("k8s.io.api.apps.v1.ReplicaSetStatus", "replicas"));
    assert!(!field("k8s.io.api.core.v1.Container", "name"));
}

#[test]
fn an_omit_zero_table_naming_what_the_schema_lacks_is_an_error() {
    let schema = || Schema::parse("message a.B\n  1 name opt string").unwrap();
    assert!(schema().with_omit_zero("a.B name").is_ok());
    assert!(schema().with_omit_zero("a.C name").is_err());
    assert!(schema().with_omit_zero("a.B other").is_err());
}
