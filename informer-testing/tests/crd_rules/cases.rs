//! Rules of CRDs and custom resources found by a differential run against the real API
//! server, as checks that take any server's client: `tests/apiserver/crd_differential.rs`
//! runs them on the in-process server, `tests/real_server/crd_differential.rs` on the real
//! one, so both are held to the same answers.

use std::time::Duration;

use http_body_util::BodyExt;
use kube::client::Body;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Sends a request; returns the status code and the JSON body.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .expect("a request");
    let response = client.send(request).await.expect("an answer");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn crd(plural: &str, kind: &str, version: Value) -> Value {
    let mut v = json!({"name": "v1", "served": true, "storage": true});
    v.as_object_mut()
        .unwrap()
        .extend(version.as_object().unwrap().clone());
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.rules.example.com")},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind}, "versions": [v]}
    })
}

fn spec_schema(properties: Value) -> Value {
    json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": properties},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}}})
}

/// Creates a CRD and waits until its type is served.
async fn install(client: &kube::Client, body: Value, plural: &str) {
    let (status, answer) = send(client, "POST", CRDS, "application/json", Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    let collection = format!("/apis/rules.example.com/v1/namespaces/default/{plural}");
    for _ in 0..300 {
        if send(client, "GET", &collection, "application/json", None)
            .await
            .0
            == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{plural} was not served within 30 s");
}

/// The message of a refused CRD.
async fn refused(client: &kube::Client, body: Value) -> String {
    let (status, answer) = send(client, "POST", CRDS, "application/json", Some(body)).await;
    assert_eq!(status, 422, "{answer}");
    answer["message"].as_str().unwrap_or("").to_string()
}

const AT: &str = "spec.validation.openAPIV3Schema.properties[spec].properties";

/// A field selector on a `selectableFields` path filters lists and watches.
pub async fn selectable_fields_filter_lists(client: &kube::Client) {
    let version = spec_schema(json!({"color": {"type": "string"}}));
    let mut version = version.as_object().unwrap().clone();
    version.insert(
        "selectableFields".into(),
        json!([{"jsonPath": ".spec.color"}]),
    );
    install(
        client,
        crd("paints", "Paint", Value::Object(version)),
        "paints",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/paints";
    for (name, color) in [("a", "red"), ("b", "blue")] {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Paint",
                          "metadata": {"name": name}, "spec": {"color": color}});
        assert_eq!(
            send(client, "POST", collection, "application/json", Some(body))
                .await
                .0,
            201
        );
    }
    let (status, list) = send(
        client,
        "GET",
        &format!("{collection}?fieldSelector=spec.color%3Dred"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a"]);
    let (status, answer) = send(
        client,
        "GET",
        &format!("{collection}?fieldSelector=spec.size%3D1"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(
        (status, answer["message"].as_str()),
        (400, Some("field label not supported: spec.size"))
    );
}

/// An update of a missing custom resource is a 404, with or without a resourceVersion; a
/// status write owns no metadata fields.
pub async fn missing_object_update_is_not_found_and_status_owns_no_metadata(client: &kube::Client) {
    install(
        client,
        crd("lamps", "Lamp", {
            let mut v = spec_schema(json!({"on": {"type": "boolean"}}));
            v["subresources"] = json!({"status": {}});
            v
        }),
        "lamps",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/lamps";
    let lamp = |name: &str| json!({"apiVersion": "rules.example.com/v1", "kind": "Lamp", "metadata": {"name": name}, "spec": {"on": true}});
    let (status, answer) = send(
        client,
        "PUT",
        &format!("{collection}/gone"),
        "application/json",
        Some(lamp("gone")),
    )
    .await;
    assert_eq!(
        (status, answer["reason"].as_str()),
        (404, Some("NotFound")),
        "{answer}"
    );
    assert_eq!(
        send(
            client,
            "POST",
            collection,
            "application/json",
            Some(lamp("l1"))
        )
        .await
        .0,
        201
    );
    let (status, answer) = send(
        client,
        "PUT",
        &format!("{collection}/l1"),
        "application/json",
        Some(lamp("l1")),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    let patch = json!({"metadata": {"labels": {"from": "status"}}, "status": {"ready": true}});
    let (status, object) = send(
        client,
        "PATCH",
        &format!("{collection}/l1/status?fieldManager=st"),
        "application/merge-patch+json",
        Some(patch),
    )
    .await;
    assert_eq!(status, 200, "{object}");
    assert!(object["metadata"]["labels"].is_null(), "{object}");
    let entry = object["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "st")
        .cloned()
        .unwrap();
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
}

/// Schema rules of CRDs: defaults valid against their schema, value validations only under
/// junctors (but the int-or-string `anyOf`), map list keys required or defaulted, set lists
/// of atomic objects, metadata restricting only name and generateName.
pub async fn crd_schema_rules(client: &kube::Client) {
    let message = refused(
        client,
        crd(
            "d1s",
            "D1",
            spec_schema(json!({"size": {"type": "integer", "default": "x"}})),
        ),
    )
    .await;
    assert!(message.ends_with(&format!("{AT}[size].default: Invalid value: \"string\":  in body must be of type integer: \"string\"")), "{message}");
    let message = refused(client, crd("d2s", "D2", spec_schema(json!({"o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}}})))).await;
    assert!(message.ends_with(&format!("{AT}[o].default: Invalid value: {{\"a\":\"x\",\"b\":\"y\"}}: must not have unknown fields")), "{message}");
    let message = refused(
        client,
        crd(
            "j1s",
            "J1",
            spec_schema(json!({"p": {"type": "string", "anyOf": [{"type": "string"}]}})),
        ),
    )
    .await;
    assert!(
        message.ends_with(&format!(
            "{AT}[p].anyOf[0].type: Forbidden: must be empty to be structural"
        )),
        "{message}"
    );
    let message = refused(client, crd("m1s", "M1", spec_schema(json!({"l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object", "properties": {"k": {"type": "string"}}}}})))).await;
    assert!(message.ends_with(&format!("{AT}[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property")), "{message}");
    let message = refused(client, crd("s1s", "S1", spec_schema(json!({"l": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}})))).await;
    assert!(message.ends_with(&format!("{AT}[l].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set")), "{message}");
    let metadata = json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}}});
    let message = refused(client, crd("md1s", "Md1", metadata)).await;
    assert!(message.ends_with("spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"), "{message}");
    // Accepted: the int-or-string pattern, and a type beside x-kubernetes-int-or-string.
    install(client, crd("ios", "Ios", spec_schema(json!({
        "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "b": {"type": "string", "x-kubernetes-int-or-string": true}}))), "ios").await;
}

/// CRD rules outside the schema: selectable fields, printer columns (reported under `spec.`
/// when every version has the same), conversion and `preserveUnknownFields`.
pub async fn crd_version_rules(client: &kube::Client) {
    let mut version = spec_schema(json!({"o": {"type": "object"}}));
    version["selectableFields"] = json!([{"jsonPath": ".spec.o"}, {"jsonPath": ".spec.nope"}]);
    let message = refused(client, crd("sf1s", "Sf1", version)).await;
    assert!(message.contains("spec.selectableFields[0].jsonPath: Invalid value: \".spec.o\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."), "{message}");
    assert!(message.contains("spec.selectableFields[1].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field"), "{message}");
    let mut version = spec_schema(json!({}));
    version["additionalPrinterColumns"] =
        json!([{"name": "S", "type": "float", "format": "money", "jsonPath": "spec.size"}]);
    let message = refused(client, crd("pc1s", "Pc1", version)).await;
    assert!(message.ends_with("[spec.additionalPrinterColumns[0].type: Invalid value: \"float\": must be one of boolean,date,integer,number,string, spec.additionalPrinterColumns[0].format: Invalid value: \"money\": must be one of byte,date,date-time,double,float,int32,int64,password, spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.size\": must be a simple json path starting with .]"), "{message}");
    let mut body = crd("cv1s", "Cv1", spec_schema(json!({})));
    body["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let message = refused(client, body).await;
    assert!(message.ends_with("[spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook, spec.conversion.conversionReviewVersions: Required value]"), "{message}");
    let mut body = crd("pu1s", "Pu1", spec_schema(json!({})));
    body["spec"]["preserveUnknownFields"] = json!(true);
    let message = refused(client, body).await;
    assert!(message.ends_with("spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"), "{message}");
}
