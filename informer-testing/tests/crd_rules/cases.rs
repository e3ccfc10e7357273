//! Rules of CRDs and custom resources found by a differential run against the real API
//! server, as checks that take any server's client: `tests/apiserver/crd_differential.rs`
//! runs them on the in-process server, `tests/real_server/crd_differential.rs` on the real
//! one, so both are held to the same answers.

use std::time::Duration;

/// Calls `$on!` with every case's name: both runners take their list from here, so a case
/// cannot run on one server only.
macro_rules! every_case {
    ($on:ident) => {
        $on!(
            selectable_fields_filter_lists,
            missing_object_update_is_not_found_and_status_owns_no_metadata,
            crd_schema_rules,
            crd_version_rules,
            custom_resource_value_rules,
            custom_resource_request_rules,
            status_and_list_rules,
            null_defaults_are_none,
            integer_multiple_of_rules,
            integer_bound_rules,
            junctor_rules,
            numeric_type_and_format_rules,
            items_array_is_forbidden,
            malformed_body_rules,
            method_query_and_path_rules,
            large_answers_are_gzipped,
        );
    };
}

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
    // `spec.versions` prints as `json.Marshal` of the internal versions: Go's field names,
    // every field, `null` for what is unset and for what all versions share (which the
    // conversion moves up to the spec).
    let mut body = crd("sv1s", "Sv1", spec_schema(json!({})));
    body["spec"]["versions"][0]["storage"] = json!(false);
    let message = refused(client, body).await;
    assert!(message.contains("spec.versions: Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must have exactly one version marked as storage version"), "{message}");
    let mut body = crd(
        "sv2s",
        "Sv2",
        spec_schema(json!({"size": {"type": "number", "maximum": 2.5, "default": 1}})),
    );
    let first = &mut body["spec"]["versions"][0];
    first["storage"] = json!(false);
    first["deprecated"] = json!(true);
    first["deprecationWarning"] = json!("v1 & <v2>");
    first["subresources"] = json!({"status": {}});
    first["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}]);
    let versions = body["spec"]["versions"].as_array_mut().unwrap();
    versions.push(json!({"name": "v2", "served": true, "storage": false,
        "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "additionalProperties": {"type": "string", "enum": ["a", "b"]}},
            "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}}}}}));
    let message = refused(client, body).await;
    let v1_schema = r#"{"OpenAPIV3Schema":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":{"spec":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":{"size":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"number","Nullable":false,"Format":"","Title":"","Default":1,"Maximum":2.5,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}},"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null},"status":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":{"ready":{"ID":"","Schema":"","Ref":null,"Description":"","Type":"boolean","Nullable":false,"Format":"","Title":"","Default":null,"Maximum":null,"ExclusiveMaximum":false,"Minimum":null,"ExclusiveMinimum":false,"MaxLength":null,"MinLength":null,"Pattern":"","MaxItems":null,"MinItems":null,"UniqueItems":false,"MultipleOf":null,"Enum":null,"MaxProperties":null,"MinProperties":null,"Required":null,"Items":null,"AllOf":null,"OneOf":null,"AnyOf":null,"Not":null,"Properties":null,"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}},"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}},"AdditionalProperties":null,"PatternProperties":null,"Dependencies":null,"AdditionalItems":null,"Definitions":null,"ExternalDocs":null,"Example":null,"XPreserveUnknownFields":null,"XEmbeddedResource":false,"XIntOrString":false,"XListMapKeys":null,"XListType":null,"XMapType":null,"XValidations":null}}"#;
    let expected = format!(
        "spec.versions: Invalid value: [{{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":true,\"DeprecationWarning\":\"v1 \\u0026 \\u003cv2\\u003e\",\"Schema\":{v1_schema},\"Subresources\":{{\"Status\":{{}},\"Scale\":null}},\"AdditionalPrinterColumns\":[{{\"Name\":\"Size\",\"Type\":\"integer\",\"Format\":\"\",\"Description\":\"\",\"Priority\":1,\"JSONPath\":\".spec.size\"}}],\"SelectableFields\":null}},{{\"Name\":\"v2\","
    );
    assert!(message.contains(&expected), "{message}");
}

/// Sends a request with extra headers; returns the status code, the `Warning` headers' texts
/// and the JSON body (`Value::Null` when it is not JSON, a watch's lines included).
async fn send_with(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Vec<String>, Value) {
    let mut request = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .expect("a request");
    let response = client.send(request).await.expect("an answer");
    let status = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|v| {
            // `299 - "<text>"`
            let text = v.trim_start_matches("299 - ");
            serde_json::from_str::<String>(text).unwrap_or_else(|_| text.to_string())
        })
        .collect();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// Waits until a CRD's type is served.
async fn served(client: &kube::Client, plural: &str) {
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

/// A CRD for the value rules below: formats, an embedded resource, a scale subresource.
fn value_rules_crd() -> Value {
    let mut version = spec_schema(json!({
        "email": {"type": "string", "format": "email"},
        "uuid": {"type": "string", "format": "uuid"},
        "mac": {"type": "string", "format": "mac"},
        "duration": {"type": "string", "format": "duration"},
        "when": {"type": "string", "format": "date-time"},
        "short": {"type": "string", "format": "k8s-short-name"},
        "replicas": {"type": "integer", "minimum": 0},
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                     "x-kubernetes-preserve-unknown-fields": true}
    }));
    version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["replicas"] =
        json!({"type": "integer"});
    version["subresources"] = json!({"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
    crd("vrules", "Vrule", version)
}

fn vrule(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "rules.example.com/v1", "kind": "Vrule",
           "metadata": {"name": name}, "spec": spec})
}

const VRULES: &str = "/apis/rules.example.com/v1/namespaces/default/vrules";

async fn create_refused(client: &kube::Client, body: Value) -> (u16, String) {
    let (status, answer) = send(client, "POST", VRULES, "application/json", Some(body)).await;
    (status, answer["message"].as_str().unwrap_or("").to_string())
}

/// String formats (kube-openapi's `strfmt` registry), embedded resources' type fields and
/// metadata, finalizer names and their warnings, and a custom resource's `Scale` set to a
/// negative count.
pub async fn custom_resource_value_rules(client: &kube::Client) {
    install(client, value_rules_crd(), "vrules").await;
    // Formats: each refused value names its format.
    for (field, value) in [
        ("email", "nope"),
        ("uuid", "123"),
        ("mac", "01:23:45"),
        ("duration", "soon"),
        ("when", "2024-01-01"),
        ("short", "Not_Short"),
    ] {
        let format = value_rules_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            ["properties"]["spec"]["properties"][field]["format"]
            .as_str()
            .unwrap()
            .to_string();
        let (status, message) =
            create_refused(client, vrule(&format!("f-{field}"), json!({field: value}))).await;
        assert_eq!(status, 422, "{field}: {message}");
        assert!(
            message.ends_with(&format!(
                "spec.{field}: Invalid value: {value:?}: spec.{field} in body must be of type {format}: {value:?}"
            )),
            "{message}"
        );
    }
    let good = json!({"email": "Ann <ann@example.com>", "uuid": "A987FBC9-4BED-3078-CF07-9141BA07C9F3",
                      "mac": "01-23-45-67-89-ab", "duration": "5 days", "when": "2024-01-01T10:00:00Z",
                      "short": "web-1"});
    let (status, answer) = send(
        client,
        "POST",
        VRULES,
        "application/json",
        Some(vrule("good", good)),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    // Embedded resources: metadata checked as any object's; metadata of the wrong type is a
    // decoding error.
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a b": "c"}}});
    let (status, message) =
        create_refused(client, vrule("e1", json!({"template": template}))).await;
    assert_eq!(status, 422, "{message}");
    assert!(
        message.contains("spec.template.metadata.labels: Invalid value: \"a b\": name part must consist of alphanumeric characters"),
        "{message}"
    );
    let template = json!({"apiVersion": "v1", "metadata": {}});
    let (status, message) =
        create_refused(client, vrule("e2", json!({"template": template}))).await;
    assert_eq!(
        (status, message.as_str()),
        (
            422,
            "Vrule.rules.example.com \"e2\" is invalid: spec.template.kind: Required value"
        )
    );
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": "x"});
    let (status, message) =
        create_refused(client, vrule("e3", json!({"template": template}))).await;
    assert_eq!(
        (status, message.as_str()),
        (
            400,
            "Vrule in version \"v1\" cannot be handled as a Vrule: spec.template.metadata: Invalid value: \"x\": json: cannot unmarshal string into Go value of type v1.ObjectMeta"
        )
    );
    // Finalizers: qualified names, refused otherwise; a name without a domain is taken with
    // a warning.
    let mut body = vrule("fin1", json!({}));
    body["metadata"]["finalizers"] = json!(["bad finalizer", "example.com/ok"]);
    let (status, message) = create_refused(client, body).await;
    assert_eq!(status, 422, "{message}");
    assert!(
        message.ends_with("metadata.finalizers: Invalid value: \"bad finalizer\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        "{message}"
    );
    let mut body = vrule("fin2", json!({}));
    body["metadata"]["finalizers"] = json!(["nodomain", "my.domain", "orphan", "example.com/ok"]);
    let json_type = [("content-type", "application/json")];
    let (status, warnings, answer) =
        send_with(client, "POST", VRULES, &json_type, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(
        warnings,
        [
            "metadata.finalizers: \"my.domain\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
            "metadata.finalizers: \"nodomain\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
        ]
    );
    // An update warns about the finalizers it adds only.
    let patch = json!({"metadata": {"finalizers": ["nodomain", "my.domain", "orphan", "example.com/ok", "added"]}});
    let merge = [("content-type", "application/merge-patch+json")];
    let (status, warnings, answer) = send_with(
        client,
        "PATCH",
        &format!("{VRULES}/fin2"),
        &merge,
        Some(patch),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        warnings,
        [
            "metadata.finalizers: \"added\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        ]
    );
    let (status, _, answer) = send_with(
        client,
        "PATCH",
        &format!("{VRULES}/fin2"),
        &merge,
        Some(json!({"metadata": {"finalizers": null}})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // A custom resource's Scale is not validated; the resource is, with its new count.
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                       "metadata": {"name": "good", "namespace": "default"}, "spec": {"replicas": -1}});
    let (status, answer) = send(
        client,
        "PUT",
        &format!("{VRULES}/good/scale"),
        "application/json",
        Some(scale),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(
        answer["message"],
        "Vrule.rules.example.com \"good\" is invalid: [spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0, .spec.replicas: Invalid value: -1: should be a non-negative integer]"
    );
}

/// Requests the real server answers in ways easy to get wrong: a strict merge patch with an
/// unknown field (422 on the patched object), the deprecated `/watch/` paths, an unknown
/// `includeObject`, metadata asked as one object of a list, and the warning for a format a
/// CRD uses that the server does not know.
pub async fn custom_resource_request_rules(client: &kube::Client) {
    let mut version = spec_schema(json!({"size": {"type": "integer"},
                                         "price": {"type": "string", "format": "money"}}));
    version["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    let json_type = [("content-type", "application/json")];
    let (status, warnings, answer) = send_with(
        client,
        "POST",
        CRDS,
        &json_type,
        Some(crd("rrules", "Rrule", version)),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(warnings, ["unrecognized format \"money\""]);
    served(client, "rrules").await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/rrules";
    let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Rrule",
                      "metadata": {"name": "r1", "labels": {"w": "x"}}, "spec": {"size": 1}});
    let (status, answer) = send(client, "POST", collection, "application/json", Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    // Strict merge patch: the 422 holds the whole patched object.
    let merge = [("content-type", "application/merge-patch+json")];
    let (status, _, answer) = send_with(
        client,
        "PATCH",
        &format!("{collection}/r1?fieldValidation=Strict"),
        &merge,
        Some(json!({"spec": {"zzz": 1}})),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    let cause = &answer["details"]["causes"][0];
    assert_eq!(cause["field"], "patch", "{answer}");
    let message = cause["message"].as_str().unwrap();
    assert!(
        message.starts_with("Invalid value: \"{\\\"apiVersion\\\":\\\"rules.example.com/v1\\\",\\\"kind\\\":\\\"Rrule\\\",\\\"metadata\\\":{")
            && message.ends_with("\\\"spec\\\":{\\\"size\\\":1,\\\"zzz\\\":1}}\": strict decoding error: unknown field \"spec.zzz\""),
        "{message}"
    );
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with(" \"\" is invalid: patch: Invalid value: ")
    );
    // The deprecated watch path watches the collection.
    let (status, _, _) = send_with(
        client,
        "GET",
        "/apis/rules.example.com/v1/watch/namespaces/default/rrules?labelSelector=w&resourceVersion=0&timeoutSeconds=1",
        &[],
        None,
    )
    .await;
    assert_eq!(status, 200);
    // Tables: `includeObject` must be one of the three.
    let table = [("accept", "application/json;as=Table;g=meta.k8s.io;v=v1")];
    let (status, _, answer) = send_with(
        client,
        "GET",
        &format!("{collection}?includeObject=Bogus"),
        &table,
        None,
    )
    .await;
    assert_eq!(
        (status, answer["message"].as_str()),
        (
            400,
            Some(
                "Unable to convert to Table as requested: includeObject: Invalid value: \"Bogus\": must be 'Metadata', 'Object', 'None', or empty"
            )
        )
    );
    // Metadata: a list is a PartialObjectMetadataList, an object a PartialObjectMetadata.
    let one = [(
        "accept",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )];
    let (status, _, answer) = send_with(client, "GET", collection, &one, None).await;
    assert_eq!(
        (status, answer["message"].as_str()),
        (
            406,
            Some(
                "you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)"
            )
        )
    );
    let (status, _, answer) =
        send_with(client, "GET", &format!("{collection}/r1"), &one, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["kind"], "PartialObjectMetadata");
}

/// Status writes and lists: a CRD's status strategy stores any `storedVersions` (a storage
/// migrator trims them); a custom resource's status is checked against the schema of
/// `status`, paths in the message relative to it; a bad `generateName` is reported at
/// `metadata.generateName` before the generated name; a metadata-only list leaves out an
/// empty `continue`; an undeclared subresource is a 404 for the object.
pub async fn status_and_list_rules(client: &kube::Client) {
    let mut version = spec_schema(json!({"size": {"type": "integer"}}));
    version["subresources"] = json!({"status": {}});
    install(client, crd("srules", "Srule", version), "srules").await;
    let (status, answer) = send(
        client,
        "PATCH",
        &format!("{CRDS}/srules.rules.example.com/status"),
        "application/merge-patch+json",
        Some(json!({"status": {"storedVersions": ["v9"]}})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["status"]["storedVersions"],
        json!(["v9"]),
        "{answer}"
    );
    let collection = "/apis/rules.example.com/v1/namespaces/default/srules";
    for name in ["s1", "s2", "s3"] {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Srule",
                          "metadata": {"name": name, "labels": {"l": "x"}}, "spec": {"size": 1}});
        let (status, answer) =
            send(client, "POST", collection, "application/json", Some(body)).await;
        assert_eq!(status, 201, "{answer}");
    }
    let (status, answer) = send(
        client,
        "PATCH",
        &format!("{collection}/s1/status"),
        "application/merge-patch+json",
        Some(json!({"status": {"ready": "yes"}})),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().ends_with(
            "is invalid: status.ready: Invalid value: \"string\": ready in body must be of type boolean: \"string\""
        ),
        "{answer}"
    );
    let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Srule",
                      "metadata": {"generateName": "Bad_"}});
    let (status, answer) = send(client, "POST", collection, "application/json", Some(body)).await;
    assert_eq!(status, 422, "{answer}");
    let causes: Vec<&str> = answer["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        causes,
        ["metadata.generateName", "metadata.name"],
        "{answer}"
    );
    let metadata = [(
        "accept",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )];
    let (status, _, list) = send_with(
        client,
        "GET",
        &format!("{collection}?labelSelector=l"),
        &metadata,
        None,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert!(list["metadata"].get("continue").is_none(), "{list}");
    // A subresource the CRD does not declare: the object is not found.
    let (status, answer) = send(
        client,
        "GET",
        &format!("{collection}/s1/bogus"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(
        (status, answer["message"].as_str(), &answer["details"]),
        (
            404,
            Some("srules.rules.example.com \"s1\" not found"),
            &json!({"name": "s1", "group": "rules.example.com", "kind": "srules"})
        ),
        "{answer}"
    );
}

/// A `default: null` (under `nullable`) is no default: the stored CRD leaves it out and a
/// custom resource without the field is not given a `null`.
pub async fn null_defaults_are_none(client: &kube::Client) {
    install(
        client,
        crd(
            "nulls",
            "Null",
            spec_schema(json!({"s": {"type": "string", "nullable": true, "default": null}})),
        ),
        "nulls",
    )
    .await;
    let (status, stored) = send(
        client,
        "GET",
        &format!("{CRDS}/nulls.rules.example.com"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(status, 200, "{stored}");
    let s = &stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["s"];
    assert_eq!(s, &json!({"type": "string", "nullable": true}), "{stored}");
    let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Null",
                      "metadata": {"name": "n1"}, "spec": {}});
    let (status, created) = send(
        client,
        "POST",
        "/apis/rules.example.com/v1/namespaces/default/nulls",
        "application/json",
        Some(body),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["spec"], json!({}), "{created}");
}

/// kube-openapi checks an integer value against `multipleOf` cut to an integer: under
/// `0.5` (cut to 0) every integer is refused, under `1.5` (cut to 1) every integer passes;
/// a fractional value is checked against the factor itself.
pub async fn integer_multiple_of_rules(client: &kube::Client) {
    install(
        client,
        crd(
            "mults",
            "Mult",
            spec_schema(json!({
                "half": {"type": "number", "multipleOf": 0.5},
                "oneandahalf": {"type": "number", "multipleOf": 1.5}})),
        ),
        "mults",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/mults";
    let create = |name: &str, spec: Value| {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Mult",
                          "metadata": {"name": name}, "spec": spec});
        send(client, "POST", collection, "application/json", Some(body))
    };
    let (status, answer) = create("m1", json!({"half": 0})).await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().ends_with(
            "spec.half: Invalid value: 0: factor MultipleOf declared for spec.half must be positive: 0"
        ),
        "{answer}"
    );
    let (status, answer) = create("m2", json!({"half": 1.5, "oneandahalf": 2})).await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = create("m3", json!({"oneandahalf": 2.5})).await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .ends_with("spec.oneandahalf: Invalid value: 2.5: spec.oneandahalf in body should be a multiple of 1.5"),
        "{answer}"
    );
}

/// kube-openapi checks that a number and each of its bounds (`multipleOf`, `minimum`,
/// `maximum`) fit the schema's type and format, with an error naming no field (`<nil>` on a
/// custom resource, the `default` on a CRD) and the path at the end (empty for a default);
/// a bound that fits is applied to an integer value cut to an integer. `enum` is not checked.
pub async fn integer_bound_rules(client: &kube::Client) {
    let size = |i: usize, schema: Value| {
        crd(
            &format!("ib{i}s"),
            &format!("Ib{i}"),
            spec_schema(json!({"size": schema})),
        )
    };
    let range = |what: &str| format!("{AT}[size].default: Invalid value: \"\": {what} in ");
    for (i, schema, expected) in [
        (
            1,
            json!({"type": "integer", "maximum": 2.5, "default": 1}),
            range("Maximum boundary value must be of type integer (default format)"),
        ),
        (
            2,
            json!({"type": "integer", "maximum": 2.5, "exclusiveMaximum": true, "default": 2}),
            range("Maximum boundary value must be of type integer (default format)"),
        ),
        (
            3,
            json!({"type": "integer", "minimum": -2.5, "exclusiveMinimum": true, "default": -2}),
            range("Minimum boundary value must be of type integer (default format)"),
        ),
        (
            4,
            json!({"type": "integer", "multipleOf": 2.5, "default": 5}),
            range("MultipleOf value must be of type integer (default format)"),
        ),
        (
            5,
            json!({"type": "integer", "format": "int32", "maximum": 3e9, "default": 1}),
            range("Maximum boundary value must be of type integer with format int32"),
        ),
        (
            6,
            json!({"type": "number", "format": "float", "maximum": 1e39, "default": 1}),
            range("Maximum boundary value must be of type number with format float"),
        ),
        (
            7,
            json!({"type": "integer", "format": "int32", "default": 3_000_000_000u64}),
            range("Checked value must be of type integer with format int32"),
        ),
        (
            8,
            json!({"type": "integer", "maximum": 2.5, "default": 3}),
            format!(
                "[{}, {AT}[size].default: Invalid value: 3:  in body should be less than or equal to 2.5]",
                range("Maximum boundary value must be of type integer (default format)")
            ),
        ),
        (
            9,
            json!({"type": "integer", "minimum": 0.5, "default": 0}),
            format!(
                "[{}, {AT}[size].default: Invalid value: 0:  in body should be greater than or equal to 0.5]",
                range("Minimum boundary value must be of type integer (default format)")
            ),
        ),
        (
            10,
            json!({"type": "integer", "default": 2.5}),
            format!(
                "[{AT}[size].default: Invalid value: \"number\":  in body must be of type integer: \"number\", {}]",
                range("Checked value must be of type integer (default format)")
            ),
        ),
        (
            11,
            json!({"type": "object", "properties": {"a": {"type": "integer", "maximum": 2.5}}, "default": {"a": 3}}),
            format!(
                "[{}a, {AT}[size].default.a: Invalid value: 3: a in body should be less than or equal to 2.5]",
                range("Maximum boundary value must be of type integer (default format)")
            ),
        ),
    ] {
        let message = refused(client, size(i, schema)).await;
        assert!(message.ends_with(&expected), "{message}");
    }
    // Accepted: `minimum: 0.5` cut to `0` for the integer `0`; `enum` values of any type.
    install(
        client,
        size(12, json!({"type": "number", "minimum": 0.5, "default": 0})),
        "ib12s",
    )
    .await;
    install(
        client,
        size(
            13,
            json!({"type": "integer", "enum": [1.5, 2], "default": 2}),
        ),
        "ib13s",
    )
    .await;
    install(
        client,
        crd(
            "ibcrs",
            "Ibcr",
            spec_schema(json!({
                "a": {"type": "integer", "format": "int32"},
                "b": {"type": "number", "minimum": 0.5},
                "c": {"type": "integer", "maximum": 2.5},
                "d": {"type": "integer"}})),
        ),
        "ibcrs",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/ibcrs";
    let create = |name: &str, spec: Value| {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Ibcr",
                          "metadata": {"name": name}, "spec": spec});
        send(client, "POST", collection, "application/json", Some(body))
    };
    let (status, answer) = create("i0", json!({"b": 0})).await;
    assert_eq!(status, 201, "{answer}");
    for (name, spec, expected) in [
        (
            "i1",
            json!({"a": 3_000_000_000u64}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": Checked value must be of type integer with format int32 in spec.a", "reason": "FieldValueInvalid"}]),
        ),
        (
            "i2",
            json!({"c": 3}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": Maximum boundary value must be of type integer (default format) in spec.c", "reason": "FieldValueInvalid"},
                   {"field": "spec.c", "message": "Invalid value: 3: spec.c in body should be less than or equal to 2.5", "reason": "FieldValueInvalid"}]),
        ),
        (
            "i3",
            json!({"d": 2.5}),
            json!([{"field": "spec.d", "message": "Invalid value: \"number\": spec.d in body must be of type integer: \"number\"", "reason": "FieldValueTypeInvalid"},
                   {"field": "<nil>", "message": "Invalid value: \"\": Checked value must be of type integer (default format) in spec.d", "reason": "FieldValueInvalid"}]),
        ),
    ] {
        let (status, answer) = create(name, spec).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["details"]["causes"], expected, "{answer}");
    }
}

/// `anyOf`, `oneOf` and `not` failures as kube-openapi reports them: a cause with no field
/// (`<nil>`) quoting the path, then (`anyOf`, `oneOf` with none valid) the first branch's
/// errors.
pub async fn junctor_rules(client: &kube::Client) {
    install(
        client,
        crd(
            "juncs",
            "Junc",
            spec_schema(json!({
                "any": {"type": "string", "anyOf": [{"maxLength": 2}, {"pattern": "^z"}]},
                "one": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
                "notv": {"type": "string", "not": {"enum": ["bad"]}}})),
        ),
        "juncs",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/juncs";
    for (spec, expected) in [
        (
            json!({"any": "abc"}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": \"spec.any\" must validate at least one schema (anyOf)", "reason": "FieldValueInvalid"},
                   {"field": "spec.any", "message": "Too long: may not be more than 2 bytes", "reason": "FieldValueTooLong"}]),
        ),
        (
            json!({"one": {}}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found none valid", "reason": "FieldValueInvalid"},
                   {"field": "spec.one.a", "message": "Required value", "reason": "FieldValueRequired"}]),
        ),
        (
            json!({"one": {"a": "1", "b": "2"}}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives", "reason": "FieldValueInvalid"}]),
        ),
        (
            json!({"notv": "bad"}),
            json!([{"field": "<nil>", "message": "Invalid value: \"\": \"spec.notv\" must not validate the schema (not)", "reason": "FieldValueInvalid"}]),
        ),
    ] {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Junc",
                          "metadata": {"name": "j"}, "spec": spec});
        let (status, answer) =
            send(client, "POST", collection, "application/json", Some(body)).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["details"]["causes"], expected, "{answer}");
    }
}

/// The causes of a 422 as a set: the real server lists the field errors of an object in no
/// fixed order (the schema's properties are a Go map), the in-process server sorts them.
fn cause_set(answer: &Value) -> Vec<String> {
    let mut causes: Vec<String> = answer["details"]["causes"]
        .as_array()
        .map(|causes| causes.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    causes.sort();
    causes
}

/// kube-openapi's type validator (`validate/type.go`) on numbers, as apiextensions-apiserver
/// runs it: the format first, for a value that is neither a string nor an array (`1.5` in an
/// `int32` field is a `float64` of the wrong format, `true` or an object has no format: `""`),
/// then the type, a whole float (`3.0`, `1e3`) passing an integer field and an integer a
/// number field; an integer past int64 is a float; formats the server does not support for
/// the type (`uint32`, a boolean's) are dropped; an array passes a string field with a
/// format. A status error naming no field is reported at `status`.
pub async fn numeric_type_and_format_rules(client: &kube::Client) {
    let mut version = spec_schema(json!({
        "i32": {"type": "integer", "format": "int32"},
        "i64": {"type": "integer", "format": "int64"},
        "int": {"type": "integer"},
        "u32": {"type": "integer", "format": "uint32"},
        "flt": {"type": "number", "format": "float"},
        "dbl": {"type": "number", "format": "double"},
        "str": {"type": "string"},
        "when": {"type": "string", "format": "date-time"},
        "flag": {"type": "boolean", "format": "int32"},
        "port": {"x-kubernetes-int-or-string": true}}));
    version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["observedGeneration"] =
        json!({"type": "integer", "format": "int64"});
    version["subresources"] = json!({"status": {}});
    install(client, crd("numfmts", "Numfmt", version), "numfmts").await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/numfmts";
    let create = |name: String, spec: String| {
        let body = format!(
            r#"{{"apiVersion":"rules.example.com/v1","kind":"Numfmt","metadata":{{"name":"{name}"}},"spec":{spec}}}"#
        );
        async move {
            send_raw(
                client,
                "POST",
                collection,
                Some("application/json"),
                body.as_bytes(),
            )
            .await
        }
    };
    let type_invalid = |field: &str, found: &str, detail: &str| {
        json!({"field": format!("spec.{field}"), "reason": "FieldValueTypeInvalid",
               "message": format!("Invalid value: \"{found}\": spec.{field} in body must be of type {detail}: \"{found}\"")})
    };
    let checked = |field: &str, format: &str| {
        json!({"field": "<nil>", "reason": "FieldValueInvalid",
               "message": format!("Invalid value: \"\": Checked value must be of type integer {format} in spec.{field}")})
    };
    let int32 = "with format int32";
    let cases: Vec<(&str, &str, Vec<Value>)> = vec![
        (
            "i32",
            "1.5",
            vec![
                type_invalid("i32", "float64", "int32"),
                checked("i32", int32),
            ],
        ),
        (
            "i64",
            "1.5",
            vec![
                type_invalid("i64", "float64", "int64"),
                checked("i64", "with format int64"),
            ],
        ),
        (
            "int",
            "1.5",
            vec![
                type_invalid("int", "number", "integer"),
                checked("int", "(default format)"),
            ],
        ),
        (
            "i32",
            "\"5\"",
            vec![type_invalid("i32", "string", "integer")],
        ),
        ("i32", "true", vec![type_invalid("i32", "", "int32")]),
        ("i32", "{\"a\":1}", vec![type_invalid("i32", "", "int32")]),
        ("i32", "[1]", vec![type_invalid("i32", "array", "integer")]),
        ("i32", "3.0", vec![]),
        ("i32", "1e3", vec![]),
        ("i32", "3000000000", vec![checked("i32", int32)]),
        ("i32", "1.0000000001", vec![checked("i32", int32)]),
        (
            "i32",
            "0.9999999999",
            vec![
                type_invalid("i32", "float64", "int32"),
                checked("i32", int32),
            ],
        ),
        (
            "i64",
            "9007199254740993.0",
            vec![type_invalid("i64", "float64", "int64")],
        ),
        (
            "int",
            "10000000000000000000",
            vec![
                type_invalid("int", "number", "integer"),
                checked("int", "(default format)"),
            ],
        ),
        (
            "u32",
            "1.5",
            vec![
                type_invalid("u32", "number", "integer"),
                checked("u32", "(default format)"),
            ],
        ),
        ("u32", "-1", vec![]),
        ("flt", "3", vec![]),
        ("dbl", "3", vec![]),
        ("flt", "1.5", vec![]),
        ("flt", "true", vec![type_invalid("flt", "", "float")]),
        ("dbl", "{}", vec![type_invalid("dbl", "", "double")]),
        (
            "dbl",
            "\"5\"",
            vec![type_invalid("dbl", "string", "number")],
        ),
        ("str", "3", vec![type_invalid("str", "integer", "string")]),
        (
            "when",
            "3",
            vec![type_invalid("when", "int64", "date-time")],
        ),
        (
            "when",
            "1.5",
            vec![type_invalid("when", "float64", "date-time")],
        ),
        ("when", "true", vec![type_invalid("when", "", "date-time")]),
        ("when", "[1]", vec![]),
        (
            "flag",
            "3",
            vec![type_invalid("flag", "integer", "boolean")],
        ),
        ("port", "1.0000000001", vec![]),
        (
            "port",
            "1.5",
            vec![type_invalid("port", "number", "integer,string")],
        ),
    ];
    for (i, (field, value, expected)) in cases.into_iter().enumerate() {
        let (status, answer) = create(format!("n{i}"), format!(r#"{{"{field}":{value}}}"#)).await;
        if expected.is_empty() {
            assert_eq!(status, 201, "{field}: {value}: {answer}");
            continue;
        }
        assert_eq!(status, 422, "{field}: {value}: {answer}");
        let mut expected: Vec<String> = expected.iter().map(Value::to_string).collect();
        expected.sort();
        assert_eq!(cause_set(&answer), expected, "{field}: {value}: {answer}");
    }
    // Several fields at once: the same causes, in an order the real server does not fix.
    let (status, answer) = create(
        "several".to_string(),
        r#"{"i32":1.5,"i64":true,"str":3}"#.to_string(),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    let mut expected: Vec<String> = [
        type_invalid("i32", "float64", "int32"),
        checked("i32", int32),
        type_invalid("i64", "", "int64"),
        type_invalid("str", "integer", "string"),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    expected.sort();
    assert_eq!(cause_set(&answer), expected, "{answer}");
    // Through the status subresource: paths relative to `status`, a cause naming no field
    // at `status`.
    let (status, answer) = create("st".to_string(), "{}".to_string()).await;
    assert_eq!(status, 201, "{answer}");
    let (status, answer) = send(
        client,
        "PATCH",
        &format!("{collection}/st/status"),
        "application/merge-patch+json",
        Some(json!({"status": {"observedGeneration": 1.5}})),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    let mut expected: Vec<String> = [
        json!({"field": "status.observedGeneration", "reason": "FieldValueTypeInvalid",
               "message": "Invalid value: \"float64\": observedGeneration in body must be of type int64: \"float64\""}),
        json!({"field": "status", "reason": "FieldValueInvalid",
               "message": "Invalid value: \"\": Checked value must be of type integer with format int64 in observedGeneration"}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    expected.sort();
    assert_eq!(cause_set(&answer), expected, "{answer}");
}

/// `items` given as a list of schemas: forbidden, and the only cause (the schema cannot be
/// made structural, so its structural checks are not reported).
pub async fn items_array_is_forbidden(client: &kube::Client) {
    let message = refused(
        client,
        crd(
            "ias",
            "Ia",
            spec_schema(json!({"l": {"type": "array", "items": [{"type": "string"}]}})),
        ),
    )
    .await;
    assert!(
        message.ends_with(&format!(
            "is invalid: {AT}[l].items: Forbidden: items must be a schema object and not an array"
        )),
        "{message}"
    );
}

/// Sends a request with raw bytes for a body (`None`: no `Content-Type`) and extra headers;
/// returns the status code and the JSON body (`null` when there is none).
async fn send_raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: &[u8],
) -> (u16, Value) {
    let mut request = http::Request::builder().method(method).uri(path);
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let request = request.body(Body::from(body.to_vec())).expect("a request");
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

/// Malformed bodies as the real server decodes them (a differential sweep of "garbage from
/// a client"): metadata of the wrong Go type is a 400, not stored; a name may have a label
/// of more than 63 bytes; bytes that are not UTF-8 and lone surrogate escapes become U+FFFD;
/// an integer beyond int64 is a float, `1.0` an integer; a YAML body's first document is
/// the object; empty bodies, bodies that are no object and unsupported media types are
/// refused with the decoders' words; names and values are quoted as Go's `%q` quotes them.
pub async fn malformed_body_rules(client: &kube::Client) {
    install(
        client,
        crd(
            "scraps",
            "Scrap",
            spec_schema(json!({"size": {"type": "integer"}, "text": {"type": "string"}})),
        ),
        "scraps",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/scraps";
    let scrap = |name: &str, metadata: Value| {
        let mut object = json!({"apiVersion": "rules.example.com/v1", "kind": "Scrap",
                                "metadata": {"name": name}, "spec": {"size": 1}});
        if !metadata.is_null() {
            object["metadata"] = metadata;
        }
        object
    };
    let post = |body: Value| async move {
        send(client, "POST", collection, "application/json", Some(body)).await
    };
    let raw = |content_type: &'static str, body: Vec<u8>| async move {
        send_raw(client, "POST", collection, Some(content_type), &body).await
    };
    let message = |answer: &Value| answer["message"].as_str().unwrap_or("").to_string();

    let (status, answer) = post(scrap("s", json!({"name": "lab", "labels": "a=b"}))).await;
    assert_eq!(
        (status, message(&answer)),
        (400, "Scrap in version \"v1\" cannot be handled as a Scrap: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string".to_string())
    );
    let (status, answer) = post(scrap("s", json!("x"))).await;
    assert_eq!(
        (status, message(&answer)),
        (400, "Scrap in version \"v1\" cannot be handled as a Scrap: json: cannot unmarshal string into Go value of type v1.ObjectMeta".to_string())
    );
    let (status, answer) = post(scrap("s", json!({"name": 5}))).await;
    assert_eq!(
        (status, message(&answer)),
        (400, "Scrap in version \"v1\" cannot be handled as a Scrap: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string".to_string())
    );
    let (status, answer) = post(scrap(&"a".repeat(64), Value::Null)).await;
    assert_eq!(status, 201, "a 64-byte label in a subdomain name: {answer}");
    let (status, answer) = post(scrap("a\u{0}b", Value::Null)).await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        message(&answer).starts_with(
            "Scrap.rules.example.com \"a\\x00b\" is invalid: metadata.name: Invalid value: \"a\\x00b\": "
        ),
        "{answer}"
    );

    // Bodies that are no object, or whose kind is no string.
    let (status, answer) = raw("application/json", b"[]".to_vec()).await;
    assert_eq!(
        (status, message(&answer)),
        (400, "the object provided is unrecognized (must be of type Scrap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b5d)".to_string())
    );
    let (status, answer) = raw(
        "application/json",
        br#"{"apiVersion":"rules.example.com/v1","kind":5}"#.to_vec(),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (400, "the object provided is unrecognized (must be of type Scrap): couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({\"apiVersion\":\"rules.example.c ...)".to_string())
    );
    let (status, answer) = raw("application/yaml", Vec::new()).await;
    assert_eq!(
        (status, message(&answer)),
        (400, "the object provided is unrecognized (must be of type Scrap): Object 'Kind' is missing in '' (<empty>)".to_string())
    );

    // Strings as Go decodes them.
    let (status, answer) = raw(
        "application/json",
        b"{\"apiVersion\":\"rules.example.com/v1\",\"kind\":\"Scrap\",\"metadata\":{\"name\":\"u8\"},\"spec\":{\"text\":\"\xff\xfe\"}}".to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["spec"]["text"], "\u{fffd}\u{fffd}");
    let (status, answer) = raw(
        "application/json",
        br#"{"apiVersion":"rules.example.com/v1","kind":"Scrap","metadata":{"name":"sur"},"spec":{"text":"\ud800x"}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["spec"]["text"], "\u{fffd}x");

    // Numbers as an Unstructured holds them.
    let (status, answer) = raw(
        "application/json",
        br#"{"apiVersion":"rules.example.com/v1","kind":"Scrap","metadata":{"name":"big"},"spec":{"size":9223372036854775808}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 422, "an integer beyond int64 is a float: {answer}");
    let (status, answer) = raw(
        "application/json",
        br#"{"apiVersion":"rules.example.com/v1","kind":"Scrap","metadata":{"name":"one"},"spec":{"size":1.0}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{answer}");
    assert!(
        answer["spec"]["size"].is_i64(),
        "1.0 comes back 1: {answer}"
    );

    // YAML: the first document is the object.
    let (status, answer) = raw(
        "application/yaml",
        b"apiVersion: rules.example.com/v1\nkind: Scrap\nmetadata:\n  name: y1\n---\napiVersion: rules.example.com/v1\nkind: Scrap\nmetadata:\n  name: y2\n".to_vec(),
    )
    .await;
    assert_eq!(
        (status, answer["metadata"]["name"].as_str()),
        (201, Some("y1")),
        "{answer}"
    );
    let (status, _) = send(
        client,
        "GET",
        &format!("{collection}/y2"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(status, 404);

    // Empty patches, and media types the handlers do not take.
    let object = format!("{collection}/one");
    let (status, answer) = send_raw(
        client,
        "PATCH",
        &object,
        Some("application/merge-patch+json"),
        b"",
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (
            400,
            "error decoding patch: unexpected end of JSON input".to_string()
        )
    );
    let (status, answer) = send_raw(
        client,
        "PATCH",
        &format!("{object}?fieldManager=m"),
        Some("application/apply-patch+yaml"),
        b"",
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (400, "invalid object type: /, Kind=".to_string())
    );
    let patch_types = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";
    for content_type in [
        Some("application/strategic-merge-patch+json"),
        Some("application/json"),
        None,
    ] {
        let (status, answer) = send_raw(client, "PATCH", &object, content_type, b"").await;
        assert_eq!(
            (status, message(&answer)),
            (415, patch_types.to_string()),
            "{content_type:?}"
        );
    }
    let (status, answer) = raw("text/plain", b"{}".to_vec()).await;
    assert_eq!(
        (status, message(&answer)),
        (415, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf".to_string())
    );

    // Options: every dryRun value is checked, an empty one too; values quoted as `%q`.
    let (status, answer) = send(
        client,
        "POST",
        &format!("{collection}?dryRun="),
        "application/json",
        Some(scrap("dry", Value::Null)),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (422, "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"\"]: supported values: \"All\"".to_string())
    );
    let (status, answer) = send(
        client,
        "POST",
        &format!("{collection}?fieldManager=a%01b"),
        "application/json",
        Some(scrap("fm", Value::Null)),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (422, "CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\x01b\": invalid character U+0001 (at position 1)".to_string())
    );
}

/// Methods, paths and query parameters the real server takes its own way: the CRD handler
/// serves HEAD as GET, creates on a POST that names an object, refuses a PUT or PATCH of
/// the collection (400) and any other method (405 with an empty verb); a DELETE reads its
/// options from the body or, without one, from the query (a malformed
/// `gracePeriodSeconds` is a 400), and refuses a body of another kind; `/healthz` answers
/// any method but not `/healthz/`; an empty path segment is no path; a query pair with a
/// malformed escape is dropped.
pub async fn method_query_and_path_rules(client: &kube::Client) {
    install(
        client,
        crd(
            "bins",
            "Bin",
            spec_schema(json!({"size": {"type": "integer"}})),
        ),
        "bins",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/bins";
    let bin = |name: &str| {
        json!({"apiVersion": "rules.example.com/v1", "kind": "Bin",
                                  "metadata": {"name": name}, "spec": {"size": 1}})
    };
    for name in ["b1", "b2", "b3"] {
        let (status, answer) = send(
            client,
            "POST",
            collection,
            "application/json",
            Some(bin(name)),
        )
        .await;
        assert_eq!(status, 201, "{answer}");
    }
    let object = format!("{collection}/b1");
    let message = |answer: &Value| answer["message"].as_str().unwrap_or("").to_string();

    assert_eq!(
        send(client, "HEAD", &object, "application/json", None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(client, "HEAD", collection, "application/json", None)
            .await
            .0,
        200
    );
    for method in ["PUT", "PATCH"] {
        let (status, answer) = send(
            client,
            method,
            collection,
            "application/merge-patch+json",
            Some(bin("b1")),
        )
        .await;
        assert_eq!(
            (status, message(&answer)),
            (400, "name must be provided".to_string()),
            "{method}"
        );
    }
    let (status, answer) = send(
        client,
        "POST",
        &format!("{collection}/p1"),
        "application/json",
        Some(bin("p2")),
    )
    .await;
    assert_eq!(
        (status, answer["metadata"]["name"].as_str()),
        (201, Some("p2")),
        "a POST naming an object creates the body's: {answer}"
    );
    for method in ["PROPFIND", "OPTIONS", "TRACE"] {
        let (status, answer) = send(client, method, &object, "application/json", None).await;
        assert_eq!(
            (status, message(&answer), &answer["details"]),
            (
                405,
                " is not supported on resources of kind \"bins.rules.example.com\"".to_string(),
                &json!({"group": "rules.example.com", "kind": "bins"})
            ),
            "{method}"
        );
    }

    // DELETE options.
    let (status, answer) = send(
        client,
        "DELETE",
        &format!("{object}?gracePeriodSeconds=abc"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (
            400,
            "strconv.ParseInt: parsing \"abc\": invalid syntax".to_string()
        )
    );
    let (status, answer) = send(
        client,
        "DELETE",
        &object,
        "application/json",
        Some(json!({"kind": "Pod", "apiVersion": "v1"})),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (400, "no kind \"Pod\" is registered for version \"v1\" in scheme \"k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme/register.go:27\"".to_string())
    );
    let (status, answer) = send(
        client,
        "DELETE",
        &object,
        "application/json",
        Some(json!({"dryRun": ["Garbage"]})),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (422, "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Garbage\"]: supported values: \"All\"".to_string())
    );
    assert_eq!(
        send(client, "GET", &object, "application/json", None)
            .await
            .0,
        200
    );
    // With a body, the query's options are not read: this is no dry run.
    let (status, answer) = send(
        client,
        "DELETE",
        &format!("{collection}/b2?dryRun=All"),
        "application/json",
        Some(json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"})),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        send(
            client,
            "GET",
            &format!("{collection}/b2"),
            "application/json",
            None
        )
        .await
        .0,
        404
    );

    // A deletecollection reads and validates its list options first.
    let (status, answer) = send(
        client,
        "DELETE",
        &format!("{collection}?limit=abc"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (
            400,
            "strconv.ParseInt: parsing \"abc\": invalid syntax".to_string()
        )
    );
    // A name that is no path segment.
    for (path, why) in [
        (format!("{collection}/."), "\".\": may not be '.'"),
        (format!("{collection}/.."), "\"..\": may not be '..'"),
        (
            format!("{collection}/a%25b"),
            "\"a%b\": may not contain '%'",
        ),
    ] {
        for method in ["GET", "DELETE"] {
            let (status, answer) = send(client, method, &path, "application/json", None).await;
            assert_eq!(
                (status, message(&answer)),
                (400, format!("Name parameter invalid: {why}")),
                "{method} {path}"
            );
        }
    }
    // No such patch type as `application/apply-patch+json`.
    let (status, answer) = send(
        client,
        "PATCH",
        &format!("{object}?fieldManager=m"),
        "application/apply-patch+json",
        Some(bin("b1")),
    )
    .await;
    assert_eq!(status, 415, "{answer}");

    // Generic endpoints and paths.
    let (status, answer) = send(
        client,
        "POST",
        "/version",
        "application/json",
        Some(json!({})),
    )
    .await;
    assert_eq!(
        (status, message(&answer)),
        (
            405,
            "the server does not allow this method on the requested resource".to_string()
        )
    );
    assert_eq!(
        send(client, "DELETE", "/healthz", "application/json", None)
            .await
            .0,
        200
    );
    assert_eq!(
        send(client, "GET", "/healthz/", "application/json", None)
            .await
            .0,
        404
    );
    for path in [
        "/apis//rules.example.com/v1/namespaces/default/bins/b1".to_string(),
        format!("{collection}//b1"),
    ] {
        assert_eq!(
            send(client, "GET", &path, "application/json", None).await.0,
            404,
            "{path}"
        );
    }
    let (status, list) = send(
        client,
        "GET",
        &format!("{collection}?labelSelector=%zz"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(
        (status, list["items"].as_array().map(Vec::len)),
        (200, Some(3)),
        "the malformed pair is dropped: {list}"
    );
}

/// Response compression: an answer of more than 128 KiB to a client whose `Accept-Encoding`
/// has `gzip` comes gzipped (`Content-Encoding: gzip`), a smaller one as is.
pub async fn large_answers_are_gzipped(client: &kube::Client) {
    install(
        client,
        crd(
            "bales",
            "Bale",
            spec_schema(json!({"size": {"type": "integer"}})),
        ),
        "bales",
    )
    .await;
    let collection = "/apis/rules.example.com/v1/namespaces/default/bales";
    for name in ["a", "b", "c"] {
        let body = json!({"apiVersion": "rules.example.com/v1", "kind": "Bale",
                          "metadata": {"name": name, "annotations": {"a": "x".repeat(60_000)}}});
        let (status, answer) =
            send(client, "POST", collection, "application/json", Some(body)).await;
        assert_eq!(status, 201, "{answer}");
    }
    let get = |path: String| async move {
        let request = http::Request::get(path)
            .header("accept-encoding", "gzip")
            .body(Body::from(Vec::new()))
            .expect("a request");
        let response = client.send(request).await.expect("an answer");
        let encoding = response
            .headers()
            .get("content-encoding")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        (encoding, bytes)
    };
    let gunzip = |bytes: &[u8]| {
        use std::io::Read as _;
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut text)
            .expect("a gzip member of JSON text");
        text
    };
    let (encoding, bytes) = get(collection.to_string()).await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    let list: Value = serde_json::from_str(&gunzip(&bytes)).expect("a JSON list");
    assert_eq!(
        list["items"].as_array().map(Vec::len),
        Some(3),
        "{}",
        list["kind"]
    );
    // Indented, then gzipped: what the client unpacks is the indented list.
    let (encoding, bytes) = get(format!("{collection}?pretty=true")).await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    let text = gunzip(&bytes);
    assert!(text.starts_with("{\n  \""), "{}", &text[..40]);
    let list: Value = serde_json::from_str(&text).expect("an indented JSON list");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3));
    let (encoding, bytes) = get(format!("{collection}/a")).await;
    assert_eq!(encoding, None, "60 KB is under the threshold");
    assert_eq!(bytes[0], b'{');
}
