//! CRD validation rules (`x-kubernetes-validations`) on both servers: one script of CRD and
//! custom resource writes runs against the real API server and the in-process
//! `TestApiServer`, and their answers (status code, reason, message and causes) must be the
//! same. Warnings are compared too (ratcheting). Run with `--nocapture` to read both.

use std::time::Duration;

use http_body_util::BodyExt;
use informer_testing::TestApiServer;
use informer_testing::envtest::EnvTest;
use kube::client::Body;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const RULERS: &str = "/apis/example.com/v1/namespaces/default/rulers";

/// The CRD of `Ruler`, whose schema carries rules of every kind the tests check.
pub fn ruler_crd() -> Value {
    let schema = ruler_schema();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "rulers.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "rulers", "singular": "ruler", "kind": "Ruler", "listKind": "RulerList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

fn ruler_schema() -> Value {
    let spec = ruler_spec_schema();
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('r')", "message": "name must start with r"}
        ],
        "properties": {"spec": spec}
    })
}

fn ruler_spec_schema() -> Value {
    let properties = ruler_spec_properties();
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas",
             "message": "minReplicas must not exceed maxReplicas"},
            {"rule": "!has(self.mode) || self.mode != 'locked' || self.maxReplicas == 1",
             "messageExpression": "'mode ' + self.mode + ' allows 1 replica'",
             "reason": "FieldValueForbidden", "fieldPath": ".maxReplicas"},
            {"rule": "!has(self.mode) || self.mode != 'strict' || self.limits.cpu > 0"},
            {"rule": "!has(self.name__dash__prefix) || self.name__dash__prefix.startsWith('x')",
             "reason": "FieldValueRequired", "fieldPath": "['name-prefix']", "message": "prefix must start with x"}
        ],
        "properties": properties
    })
}

fn ruler_spec_properties() -> Value {
    json!({
        "class": {"type": "string", "maxLength": 16,
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "class is immutable"}]},
        "owner": {"type": "string", "maxLength": 16,
            "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || oldSelf.value() == self",
                "optionalOldSelf": true, "message": "owner cannot change"}]},
        "minReplicas": {"type": "integer"},
        "maxReplicas": {"type": "integer"},
        "mode": {"type": "string", "maxLength": 16},
        "name-prefix": {"type": "string", "maxLength": 16},
        "ratio": {"type": "number",
            "x-kubernetes-validations": [{"rule": "self < 1.5 && self == double(int(self * 2.0)) / 2.0"}]},
        "size": {"x-kubernetes-int-or-string": true,
            "x-kubernetes-validations": [{"rule": "type(self) == int ? self > 0 : self.endsWith('%')"}]},
        "limits": {"type": "object", "properties": {"cpu": {"type": "integer"}}},
        "ports": {
            "type": "array", "maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "x-kubernetes-validations": [{"rule": "self.map(p, p.port).isSorted()", "message": "ports must be sorted"}],
            "items": {"type": "object", "required": ["name"],
                "x-kubernetes-validations": [
                    {"rule": "self.port > 0 && self.port < 65536", "message": "port out of range"},
                    {"rule": "self.port == oldSelf.port", "message": "a named port keeps its number"}
                ],
                "properties": {"name": {"type": "string", "maxLength": 16}, "port": {"type": "integer"}}}
        },
        "tags": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 16,
            "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$')"}]}},
        "labels": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string", "maxLength": 16,
            "x-kubernetes-validations": [{"rule": "self.lowerAscii() == self", "message": "lower case only"}]}}
    })
}

/// A CRD whose only rule is `rule` (with `extra` merged into it), on `spec.list` items when
/// `on_items`, else on `spec`.
pub fn bad_crd(name: &str, rule: Value, on_items: bool) -> Value {
    let spec = if on_items {
        json!({"type": "object", "properties": {"list": {"type": "array", "maxItems": 4,
            "items": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}},
                      "x-kubernetes-validations": [rule]}}}})
    } else {
        json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}},
               "x-kubernetes-validations": [rule]})
    };
    let plural = format!("{}s", name.to_lowercase());
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": name, "listKind": format!("{name}List")},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]
        }
    })
}

pub fn ruler(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Ruler",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The valid spec every update step starts from.
pub fn good_spec() -> Value {
    json!({"class": "gold", "owner": "ann", "minReplicas": 1, "maxReplicas": 3,
           "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
           "tags": ["a", "b"], "size": "50%", "ratio": 0.5, "labels": {"team": "red"}})
}

/// One request and the part of its answer both servers must agree on.
pub async fn send(client: &kube::Client, method: &str, path: &str, body: Option<Value>) -> Value {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Body::from(
            body.map(|b| serde_json::to_vec(&b).unwrap())
                .unwrap_or_default(),
        ))
        .unwrap();
    let response = client.send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let warnings: Vec<String> = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if (200..300).contains(&code) {
        return json!({"code": code, "warnings": warnings});
    }
    let mut causes = body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    causes.sort_by_key(|c| c.to_string());
    json!({"code": code, "reason": body["reason"], "message": body["message"],
           "causes": causes, "warnings": warnings})
}

async fn established(client: &kube::Client, name: &str) {
    for _ in 0..100 {
        let crd = send_get(client, &format!("{CRDS}/{name}")).await;
        let conditions = crd["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
        {
            // The type's handler may lag behind the condition on the real server.
            for _ in 0..100 {
                if send(client, "GET", RULERS, None).await["code"] == 200 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{name} was not established");
}

async fn send_get(client: &kube::Client, path: &str) -> Value {
    let request = http::Request::get(path).body(Vec::new()).unwrap();
    client
        .request::<Value>(request)
        .await
        .unwrap_or(Value::Null)
}

/// Updates `name` to `spec` (a read, then a replace with its resourceVersion).
async fn update(client: &kube::Client, name: &str, spec: Value) -> Value {
    let mut object = send_get(client, &format!("{RULERS}/{name}")).await;
    object["spec"] = spec;
    send(client, "PUT", &format!("{RULERS}/{name}"), Some(object)).await
}

/// The script: every step's name and answer.
pub async fn scenario(client: &kube::Client) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let create = |name: &str, spec: Value| ruler(name, spec);
    let created = send(client, "POST", CRDS, Some(ruler_crd())).await;
    assert_eq!(created["code"], 201, "the CRD is created: {created:#}");
    out.push(("create the CRD", created));
    established(client, "rulers.example.com").await;
    let with = |patch: Value| {
        let mut spec = good_spec();
        for (k, v) in patch.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    };
    let steps: Vec<(&'static str, Value)> = vec![
        ("valid", create("r1", good_spec())),
        (
            "cross-field rule",
            create("r2", with(json!({"minReplicas": 5}))),
        ),
        (
            "messageExpression, reason and fieldPath",
            create("r3", with(json!({"mode": "locked"}))),
        ),
        (
            "evaluation error",
            create("r4", with(json!({"mode": "strict"}))),
        ),
        (
            "escaped property, message and reason",
            create("r5", with(json!({"name-prefix": "y"}))),
        ),
        (
            "rule on map-list items",
            create("r6", with(json!({"ports": [{"name": "a", "port": 70000}]}))),
        ),
        (
            "rule on a list",
            create(
                "r7",
                with(json!({"ports": [{"name": "b", "port": 90}, {"name": "a", "port": 80}]})),
            ),
        ),
        (
            "rule on atomic-list items",
            create("r8", with(json!({"tags": ["ok", "Bad"]}))),
        ),
        (
            "rule on map values",
            create("r9", with(json!({"labels": {"team": "Red"}}))),
        ),
        ("int-or-string int", create("r10", with(json!({"size": 0})))),
        (
            "int-or-string string",
            create("r11", with(json!({"size": "5"}))),
        ),
        ("number as double", create("r12", with(json!({"ratio": 1})))),
        ("rule at the root", create("x13", good_spec())),
        (
            "schema errors block rules",
            create("r14", with(json!({"minReplicas": "one", "maxReplicas": 0}))),
        ),
        // The unknown field's warning goes with the refusal (it is found as the body is
        // decoded, before validation).
        (
            "an unknown field of an object a rule refuses",
            create("r15", with(json!({"minReplicas": 5, "bogus": 1}))),
        ),
    ];
    for (name, object) in steps {
        out.push((name, send(client, "POST", RULERS, Some(object)).await));
    }
    out.push((
        "update: immutable field",
        update(client, "r1", with(json!({"class": "silver"}))).await,
    ));
    out.push((
        "update: transition rule on a map-list item",
        update(
            client,
            "r1",
            with(json!({"ports": [{"name": "http", "port": 81}, {"name": "https", "port": 443}]})),
        )
        .await,
    ));
    out.push(("update: new map-list item", update(client, "r1",
        with(json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}, {"name": "z", "port": 8080}]}))).await));
    out.push((
        "update: optionalOldSelf",
        update(client, "r1", with(json!({"owner": "bob"}))).await,
    ));
    out.push(("update: unchanged", update(client, "r1", good_spec()).await));
    // A field set on update only: `self == oldSelf` does not run without an old value.
    let mut without_class = good_spec();
    without_class.as_object_mut().unwrap().remove("class");
    out.push((
        "create without class",
        send(client, "POST", RULERS, Some(create("r20", without_class))).await,
    ));
    out.push((
        "update: class set",
        update(client, "r20", good_spec()).await,
    ));
    // Ratcheting: a rule added later holds only for values that change (those that do not
    // are warned about), and so does a schema made stricter (silently).
    let crd_path = format!("{CRDS}/rulers.example.com");
    let mut crd = send_get(client, &crd_path).await;
    let properties = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    properties["minReplicas"]["x-kubernetes-validations"] =
        json!([{"rule": "self >= 2", "message": "at least 2"}]);
    properties["owner"]["maxLength"] = json!(2);
    properties["labels"]["additionalProperties"]["maxLength"] = json!(3);
    let replaced = send(client, "PUT", &crd_path, Some(crd)).await;
    assert_eq!(replaced["code"], 200, "the CRD is updated: {replaced:#}");
    let probe = format!("{RULERS}?dryRun=All");
    let mut rule_served = false;
    for _ in 0..100 {
        if send(client, "POST", &probe, Some(create("r30", good_spec()))).await["code"] == 422 {
            rule_served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(rule_served, "the new rule is enforced");
    out.push((
        "ratcheting: unchanged field under a new rule",
        update(client, "r1", with(json!({"tags": ["c"]}))).await,
    ));
    out.push((
        "ratcheting: changed field under a new rule",
        update(client, "r1", with(json!({"minReplicas": 0}))).await,
    ));
    out.push((
        "ratcheting: changed map value under a stricter schema",
        update(client, "r1", with(json!({"labels": {"team": "blue"}}))).await,
    ));
    let bad = [
        (
            "compile error",
            bad_crd("Syntax", json!({"rule": "self.a =="}), false),
        ),
        ("empty rule", bad_crd("Empty", json!({"rule": ""}), false)),
        (
            "transition rule under an atomic list",
            bad_crd("Atomic", json!({"rule": "self.a == oldSelf.a"}), true),
        ),
        (
            "unsupported reason",
            bad_crd("Reason", json!({"rule": "true", "reason": "Nope"}), false),
        ),
        (
            "invalid fieldPath",
            bad_crd("Path", json!({"rule": "true", "fieldPath": ".b"}), false),
        ),
        (
            "messageExpression compile error",
            bad_crd(
                "Message",
                json!({"rule": "true", "messageExpression": "'a' +"}),
                false,
            ),
        ),
    ];
    for (name, crd) in bad {
        out.push((name, send(client, "POST", CRDS, Some(crd)).await));
    }
    out
}

#[tokio::test]
async fn cel_rules_answer_as_the_real_server_does() {
    let Some(env) = EnvTest::start_or_skip().await else {
        return;
    };
    let fake = TestApiServer::start()
        .await
        .expect("the test server starts");
    let real_answers = scenario(&env.client()).await;
    let fake_answers = scenario(&fake.client()).await;
    let mut differences = Vec::new();
    for ((step, real), (_, fake)) in real_answers.iter().zip(&fake_answers) {
        println!("== {step}\nreal: {real:#}\nfake: {fake:#}");
        if real != fake {
            differences.push(*step);
        }
    }
    assert!(
        differences.is_empty(),
        "the servers differ at: {differences:?}"
    );
}
