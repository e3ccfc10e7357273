//! CRD validation rules (`x-kubernetes-validations`) through a real `kube::Client`: each test
//! is named after the rule it checks, and expects the exact answer the real API server gives
//! (`tests/real_server/cel_rules.rs` runs the same requests against both).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

use super::common::{server, status};
use informer_testing::TestApiServer;

/// A `Ruler` CRD whose `spec` schema is `spec` (one version, so its problems are reported at
/// `spec.validation.openAPIV3Schema`, as upstream does).
fn crd(spec: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rulers.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "rulers", "kind": "Ruler"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]
        }
    }))
    .expect("a CRD")
}

async fn serve(spec: Value) -> (TestApiServer, Api<DynamicObject>) {
    let server = server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    crds.create(&PostParams::default(), &crd(spec))
        .await
        .expect("the CRD is created");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Ruler"),
        "rulers",
    );
    let api = Api::namespaced_with(server.client(), "default", &resource);
    (server, api)
}

fn ruler(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Ruler",
        "metadata": {"name": name}, "spec": spec}))
    .expect("a Ruler")
}

/// The 422's message and its causes (field, reason, message) of a refused write.
fn refusal(result: Result<DynamicObject, kube::Error>) -> (String, Vec<(String, String, String)>) {
    let status = status(result.expect_err("the write is refused"));
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let causes = status
        .details
        .map(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.field, c.reason, c.message))
        .collect();
    (status.message, causes)
}

async fn replace(
    api: &Api<DynamicObject>,
    name: &str,
    spec: Value,
) -> Result<DynamicObject, kube::Error> {
    let mut object = api.get(name).await.expect("the object");
    object.data["spec"] = spec;
    api.replace(name, &PostParams::default(), &object).await
}

#[tokio::test]
async fn transition_rule_self_equals_old_self_makes_a_field_immutable() {
    let (_server, api) = serve(json!({"type": "object", "properties": {
        "class": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "class is immutable"}]},
        "size": {"type": "integer"}}}))
    .await;
    let pp = PostParams::default();
    // Not checked on create, nor when the field is first set by an update.
    api.create(&pp, &ruler("r1", json!({"size": 1})))
        .await
        .unwrap();
    replace(&api, "r1", json!({"class": "gold", "size": 1}))
        .await
        .unwrap();
    replace(&api, "r1", json!({"class": "gold", "size": 2}))
        .await
        .unwrap();
    let (message, causes) =
        refusal(replace(&api, "r1", json!({"class": "silver", "size": 2})).await);
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: spec.class: Invalid value: \"silver\": class is immutable"
    );
    assert_eq!(
        causes,
        [(
            "spec.class".to_string(),
            "FieldValueInvalid".to_string(),
            "Invalid value: \"silver\": class is immutable".to_string()
        )]
    );
}

#[tokio::test]
async fn cross_field_rule_min_replicas_at_most_max_replicas() {
    let (_server, api) = serve(json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must not exceed maxReplicas"}],
        "properties": {"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}}))
    .await;
    let pp = PostParams::default();
    api.create(
        &pp,
        &ruler("r1", json!({"minReplicas": 1, "maxReplicas": 3})),
    )
    .await
    .unwrap();
    let (message, _) = refusal(
        api.create(
            &pp,
            &ruler("r2", json!({"minReplicas": 5, "maxReplicas": 3})),
        )
        .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r2\" is invalid: spec: Invalid value: minReplicas must not exceed maxReplicas"
    );
    // A rule that cannot be evaluated is reported with the rule.
    let (message, _) = refusal(
        api.create(&pp, &ruler("r3", json!({"minReplicas": 5})))
            .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r3\" is invalid: spec: Invalid value: \"object\": no such key: maxReplicas evaluating rule: minReplicas must not exceed maxReplicas"
    );
}

#[tokio::test]
async fn message_expression_reason_and_field_path_of_a_locked_mode_rule() {
    let (_server, api) = serve(json!({"type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.mode) || self.mode != 'locked' || self.maxReplicas == 1",
             "messageExpression": "'mode ' + self.mode + ' allows 1 replica'",
             "reason": "FieldValueForbidden", "fieldPath": ".maxReplicas"},
            {"rule": "!has(self.name__dash__prefix) || self.name__dash__prefix.startsWith('x')",
             "reason": "FieldValueRequired", "fieldPath": "['name-prefix']",
             "message": "prefix must start with x"}],
        "properties": {"mode": {"type": "string"}, "maxReplicas": {"type": "integer"},
            "name-prefix": {"type": "string"}}}))
    .await;
    let pp = PostParams::default();
    let (message, causes) = refusal(
        api.create(
            &pp,
            &ruler(
                "r1",
                json!({"mode": "locked", "maxReplicas": 3, "name-prefix": "y"}),
            ),
        )
        .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: [spec.maxReplicas: Forbidden: mode locked allows 1 replica, spec.name-prefix: Required value: prefix must start with x]"
    );
    assert_eq!(
        causes,
        [
            (
                "spec.maxReplicas".to_string(),
                "FieldValueForbidden".to_string(),
                "Forbidden: mode locked allows 1 replica".to_string()
            ),
            (
                "spec.name-prefix".to_string(),
                "FieldValueRequired".to_string(),
                "Required value: prefix must start with x".to_string()
            )
        ]
    );
}

#[tokio::test]
async fn rules_on_list_items_port_in_range_and_named_port_keeps_its_number() {
    let (_server, api) = serve(json!({"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [{"rule": "self.map(p, p.port).isSorted()", "message": "ports must be sorted"}],
            "items": {"type": "object", "required": ["name"],
                "x-kubernetes-validations": [
                    {"rule": "self.port > 0 && self.port < 65536", "message": "port out of range"},
                    {"rule": "self.port == oldSelf.port", "message": "a named port keeps its number"}],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "tags": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}}}}))
    .await;
    let pp = PostParams::default();
    let (message, _) = refusal(
        api.create(
            &pp,
            &ruler(
                "r0",
                json!({"ports": [{"name": "a", "port": 70000}], "tags": ["ok", "Bad"]}),
            ),
        )
        .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r0\" is invalid: [spec.ports[0]: Invalid value: port out of range, spec.tags[1]: Invalid value: \"Bad\": failed rule: self.matches('^[a-z]+$')]"
    );
    let (message, _) = refusal(
        api.create(
            &pp,
            &ruler(
                "r0",
                json!({"ports": [{"name": "b", "port": 90}, {"name": "a", "port": 80}]}),
            ),
        )
        .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r0\" is invalid: spec.ports: Invalid value: ports must be sorted"
    );
    let ports = json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}]);
    api.create(&pp, &ruler("r1", json!({"ports": ports})))
        .await
        .unwrap();
    // Items are matched by their keys; a new item has no old value.
    replace(
        &api,
        "r1",
        json!({"ports": [{"name": "http", "port": 80},
        {"name": "https", "port": 443}, {"name": "z", "port": 8080}]}),
    )
    .await
    .unwrap();
    let (message, _) = refusal(
        replace(
            &api,
            "r1",
            json!({"ports": [{"name": "http", "port": 81}, {"name": "https", "port": 443}]}),
        )
        .await,
    );
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: spec.ports[0]: Invalid value: a named port keeps its number"
    );
}

#[tokio::test]
async fn optional_old_self_owner_and_ratcheting_of_unchanged_values() {
    let (_server, api) = serve(json!({"type": "object", "properties": {
        "owner": {"type": "string", "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() ? oldSelf.value() == self : self == 'ann'",
            "optionalOldSelf": true, "message": "owner cannot change"}]},
        "size": {"x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": "type(self) == int ? self > 0 : self.endsWith('%')"}]}}}))
    .await;
    let pp = PostParams::default();
    let (message, _) = refusal(api.create(&pp, &ruler("r1", json!({"owner": "bob"}))).await);
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: spec.owner: Invalid value: \"bob\": owner cannot change"
    );
    let (message, _) = refusal(api.create(&pp, &ruler("r1", json!({"size": 0}))).await);
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: spec.size: Invalid value: 0: failed rule: type(self) == int ? self > 0 : self.endsWith('%')"
    );
    api.create(&pp, &ruler("r1", json!({"owner": "ann", "size": "5%"})))
        .await
        .unwrap();
    let (message, _) = refusal(replace(&api, "r1", json!({"owner": "bob", "size": "5%"})).await);
    assert_eq!(
        message,
        "Ruler.example.com \"r1\" is invalid: spec.owner: Invalid value: \"bob\": owner cannot change"
    );
}

#[tokio::test]
async fn a_crd_whose_rule_does_not_compile_is_refused() {
    let server = server().await;
    let crds: Api<CustomResourceDefinition> = Api::all(server.client());
    let err = crds
        .create(
            &PostParams::default(),
            &crd(
                json!({"type": "object", "properties": {"a": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.a =="}]}),
            ),
        )
        .await
        .expect_err("the CRD is refused");
    let refused = status(err);
    assert_eq!((refused.code, refused.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        refused.message,
        "CustomResourceDefinition.apiextensions.k8s.io \"rulers.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.a ==\n | .........^"
    );
    let err = crds
        .create(
            &PostParams::default(),
            &crd(
                json!({"type": "object", "properties": {"list": {"type": "array",
                "items": {"type": "object", "properties": {"a": {"type": "string"}},
                    "x-kubernetes-validations": [{"rule": "self.a == oldSelf.a"}]}}}}),
            ),
        )
        .await
        .expect_err("the CRD is refused");
    assert_eq!(
        status(err).message,
        "CustomResourceDefinition.apiextensions.k8s.io \"rulers.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations[0].rule: Invalid value: \"self.a == oldSelf.a\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[list]"
    );
}
