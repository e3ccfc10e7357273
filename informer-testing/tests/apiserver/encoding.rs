//! Request bodies in JSON, YAML and Kubernetes protobuf; response formats by `Accept`
//! (406 when none can be served); `fieldValidation`; percent-encoded paths; creates the
//! server refuses as a cluster does (missing namespace, unserved type).

use informer_testing::CustomResourceSpec;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::core::ObjectMeta;
use serde_json::{Value, json};

use super::common::{RawResponse, raw, server, status, within};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/testdata/protobuf/{name}.pb", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(path).expect("fixture")
}

async fn post_protobuf(
    server: &informer_testing::TestApiServer,
    path: &str,
    body: &[u8],
) -> RawResponse {
    raw(
        server,
        "POST",
        path,
        &[
            ("Content-Type", PROTOBUF),
            (
                "Accept",
                "application/vnd.kubernetes.protobuf,application/json",
            ),
        ],
        body,
    )
    .await
}

#[tokio::test]
async fn protobuf_bodies_kubectl_sends_create_objects() {
    let server = server().await;
    for (name, path) in [
        ("namespace", "/api/v1/namespaces"),
        ("configmap", "/api/v1/namespaces/default/configmaps"),
        ("secret", "/api/v1/namespaces/default/secrets"),
        ("deployment", "/apis/apps/v1/namespaces/default/deployments"),
        (
            "deployment-zero",
            "/apis/apps/v1/namespaces/default/deployments",
        ),
        ("service", "/api/v1/namespaces/default/services"),
    ] {
        let response = post_protobuf(&server, path, &fixture(name)).await;
        assert_eq!(
            response.status,
            201,
            "{name}: {}",
            String::from_utf8_lossy(&response.body)
        );
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert!(response.json()["metadata"]["uid"].is_string(), "{name}");
    }
    let client = server.client();
    within(Api::<Namespace>::all(client.clone()).get("foo"))
        .await
        .unwrap();
    let settings = within(Api::<ConfigMap>::default_namespaced(client.clone()).get("settings"))
        .await
        .unwrap();
    assert_eq!(settings.data.unwrap()["mode"], "fast");
    let secret = within(Api::<Secret>::default_namespaced(client.clone()).get("credentials"))
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["password"].0, b"s3cr3t!");
    let deployments = Api::<Deployment>::default_namespaced(client.clone());
    let web = within(deployments.get("web")).await.unwrap();
    let spec = web.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(
        spec.template.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx:1.27")
    );
    let idle = within(deployments.get("idle")).await.unwrap();
    assert_eq!(
        idle.spec.unwrap().replicas,
        Some(0),
        "a zero pointer is kept"
    );
    let service = within(Api::<Service>::default_namespaced(client).get("frontend"))
        .await
        .unwrap();
    let ports = service.spec.unwrap().ports.unwrap();
    assert_eq!(
        serde_json::to_value(&ports[1].target_port).unwrap(),
        json!("https")
    );
}

#[tokio::test]
async fn protobuf_the_server_cannot_read_is_refused_not_dropped() {
    let server = server().await;
    // The namespace body with one more field (number 99) appended to the object.
    let mut body = fixture("namespace");
    // Envelope layout: k8s\0, then field 2 (raw) of runtime.Unknown holds the object;
    // rather than re-encode, use a body whose object is one unknown field.
    body.truncate(4);
    let object = [0x9a, 0x06, 0x01, b'x']; // field 99, length 1
    let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"Namespace"].concat();
    let unknown = [
        &[0x0a, type_meta.len() as u8][..],
        &type_meta,
        &[0x12, object.len() as u8],
        &object,
    ]
    .concat();
    body.extend_from_slice(&unknown);
    post_protobuf(&server, "/api/v1/namespaces", &body)
        .await
        .assert_status(400, "BadRequest");

    let widget_meta = [
        &[0x0a, 0x0e][..],
        b"example.com/v1",
        &[0x12, 0x06],
        b"Widget",
    ]
    .concat();
    let widget = [
        &b"k8s\0"[..],
        &[0x0a, widget_meta.len() as u8],
        &widget_meta,
        &[0x12, 0x00],
    ]
    .concat();
    let response = post_protobuf(&server, "/api/v1/namespaces", &widget).await;
    response.assert_status(415, "UnsupportedMediaType");
    post_protobuf(&server, "/api/v1/namespaces", b"not protobuf")
        .await
        .assert_status(400, "BadRequest");
}

#[tokio::test]
async fn yaml_bodies_and_yaml_responses() {
    let server = server().await;
    let yaml =
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: \"1\"\n";
    let response = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[
            ("Content-Type", "application/yaml"),
            ("Accept", "application/yaml"),
        ],
        yaml,
    )
    .await;
    assert_eq!(
        response.status,
        201,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.header("content-type"), Some("application/yaml"));
    let text = String::from_utf8(response.body).unwrap();
    assert!(text.contains("name: from-yaml"), "{text}");
    assert!(!text.trim_start().starts_with('{'), "{text}");
    let stored = server
        .get_json("v1", "ConfigMap", Some("default"), "from-yaml")
        .unwrap();
    assert_eq!(stored["data"]["a"], "1");
}

#[tokio::test]
async fn accept_headers_the_server_cannot_serve_get_406() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/configmaps";
    for (accept, code) in [
        (PROTOBUF, 406),
        ("text/html", 406),
        ("application/vnd.kubernetes.protobuf, application/json", 200),
        ("*/*", 200),
        ("application/yaml", 200),
    ] {
        let response = raw(&server, "GET", path, &[("Accept", accept)], b"").await;
        assert_eq!(response.status, code, "{accept}");
        if code == 406 {
            response.assert_status(406, "NotAcceptable");
        }
    }
    // A watch in YAML: refused by the watch's stream negotiation, in YAML (the format the
    // request's Accept chose), as kube-apiserver's `NegotiateOutputMediaTypeStream`.
    let response = raw(
        &server,
        "GET",
        &format!("{path}?watch=true"),
        &[("Accept", "application/yaml")],
        b"",
    )
    .await;
    assert_eq!(response.status, 406);
    assert_eq!(response.header("content-type"), Some("application/yaml"));
    let status: serde_json::Value = serde_saphyr::from_slice(&response.body).unwrap();
    assert_eq!(status["reason"], "NotAcceptable");
    assert_eq!(
        status["message"],
        "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    raw(
        &server,
        "POST",
        path,
        &[("Content-Type", "application/xml")],
        b"<configmap/>",
    )
    .await
    .assert_status(415, "UnsupportedMediaType");
}

#[tokio::test]
async fn metadata_only_clients_get_partial_object_metadata() {
    let server = server().await;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some("settings".into());
    config_map.data = Some([("a".to_string(), "1".to_string())].into());
    within(config_maps.create(&PostParams::default(), &config_map))
        .await
        .unwrap();
    let list = within(config_maps.list_metadata(&ListParams::default()))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("settings"));
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/settings",
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )],
        b"",
    )
    .await;
    let object = response.json();
    assert_eq!(object["kind"], "PartialObjectMetadata");
    assert!(object.get("data").is_none());
}

fn strict_body() -> &'static [u8] {
    br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "name": "c"}, "datax": {"a": "1"}}"#
}

#[tokio::test]
async fn field_validation_strict_warn_and_ignore() {
    let server = server().await;
    let path = "/api/v1/namespaces/default/configmaps";
    let strict = raw(
        &server,
        "POST",
        &format!("{path}?fieldValidation=Strict"),
        &[],
        strict_body(),
    )
    .await;
    strict.assert_status(400, "BadRequest");
    assert_eq!(
        strict.json()["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datax\", duplicate field \"metadata.name\""
    );

    let warn = raw(&server, "POST", path, &[], strict_body()).await;
    assert_eq!(warn.status, 201);
    let warnings: Vec<&str> = warn
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("warning"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"datax\"""#,
            r#"299 - "duplicate field \"metadata.name\"""#
        ]
    );
    let stored = server
        .get_json("v1", "ConfigMap", Some("default"), "c")
        .unwrap();
    assert!(stored.get("datax").is_none(), "unknown fields are dropped");

    let body = String::from_utf8_lossy(strict_body()).replace("\"c\"", "\"d\"");
    let ignore = raw(
        &server,
        "POST",
        &format!("{path}?fieldValidation=Ignore"),
        &[],
        body.as_bytes(),
    )
    .await;
    assert_eq!(ignore.status, 201);
    assert!(ignore.header("warning").is_none());

    // As the real server: an unknown directive is an invalid CreateOptions.
    raw(
        &server,
        "POST",
        &format!("{path}?fieldValidation=Loose"),
        &[],
        body.as_bytes(),
    )
    .await
    .assert_status(422, "Invalid");
}

#[tokio::test]
async fn percent_encoded_paths_are_decoded() {
    let server = server().await;
    server
        .create_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"}}))
        .unwrap();
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/config%6Daps/settings",
        &[],
        b"",
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["metadata"]["name"], "settings");
    raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/se%zztings",
        &[],
        b"",
    )
    .await
    .assert_status(400, "BadRequest");
}

#[tokio::test]
async fn creates_in_missing_namespaces_are_not_found() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "nope");
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("c".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let err = status(
        within(api.create(&PostParams::default(), &config_map))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "namespaces \"nope\" not found");
    let details = err.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("nope", "namespaces")
    );
}

#[tokio::test]
async fn creates_of_types_the_server_does_not_serve_are_not_found() {
    let server = server().await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &resource);
    let widget = DynamicObject::new("w", &resource).data(json!({"spec": {}}));
    let err = status(
        within(api.create(&PostParams::default(), &widget))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    // Once registered, the same request works.
    server
        .register_custom_resource(CustomResourceSpec::namespaced(
            "example.com",
            "v1",
            "Widget",
            "widgets",
        ))
        .unwrap();
    within(api.create(&PostParams::default(), &widget))
        .await
        .unwrap();
    let _: Value = json!(null);
}

#[tokio::test]
async fn refusals_of_accept_headers_are_worded_as_kube_apiserver_words_them() {
    let server = super::common::server_with_widgets().await;
    let message = |response: &RawResponse| {
        response.assert_status(406, "NotAcceptable");
        response.json()["message"].as_str().unwrap().to_string()
    };
    // A built-in type: go-restful refuses the request before any handler, offering every
    // media type of the group's web service, with empty details.
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("Accept", "text/html")],
        b"",
    )
    .await;
    assert_eq!(
        message(&response),
        "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    );
    assert_eq!(response.json()["details"], json!({}));
    // A custom resource: apiextensions-apiserver's negotiation (protobuf listed, though
    // custom resources never have it).
    for path in [
        "/apis/example.com/v1/namespaces/default/widgets",
        "/apis/example.com/v1/namespaces/default/widgets?watch=1",
    ] {
        let response = raw(&server, "GET", path, &[("Accept", "text/html")], b"").await;
        assert_eq!(
            message(&response),
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            "{path}"
        );
    }
}

#[tokio::test]
async fn errors_come_in_yaml_to_a_client_that_asks_for_yaml() {
    // kube-apiserver writes a failed request's Status in the negotiated format
    // (`ErrorNegotiated`).
    let server = server().await;
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/missing",
        &[("Accept", "application/yaml")],
        b"",
    )
    .await;
    assert_eq!(response.status, 404);
    assert_eq!(response.header("content-type"), Some("application/yaml"));
    let status: Value = serde_saphyr::from_slice(&response.body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["message"], "configmaps \"missing\" not found");
    // JSON to everyone else.
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/missing",
        &[("Accept", "application/json, application/yaml")],
        b"",
    )
    .await;
    response.assert_status(404, "NotFound");
}

#[tokio::test]
async fn bodies_that_are_not_json_are_refused_in_kube_apiservers_words() {
    let server = super::common::server_with_widgets().await;
    let message = async |method: &str, path: &str, content_type: &str, body: &str| {
        let response = raw(
            &server,
            method,
            path,
            &[("Content-Type", content_type)],
            body.as_bytes(),
        )
        .await;
        response.assert_status(400, "BadRequest");
        response.json()["message"].as_str().unwrap().to_string()
    };
    let config_maps = "/api/v1/namespaces/default/configmaps";
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    // Objects: `transformDecodeError`, with Go's JSON scanner error and the body's start.
    assert_eq!(
        message("POST", config_maps, "application/json", "{not json").await,
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)"
    );
    assert_eq!(
        message("POST", widgets, "application/json", "").await,
        "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"
    );
    assert_eq!(
        message(
            "PUT",
            &format!("{widgets}/w"),
            "application/json",
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},}"#
        )
        .await,
        r#"the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: invalid character '}' looking for beginning of object key string ({"apiVersion":"example.com/v1" ...)"#
    );
    // JSON that is no object, and an object of another kind: the decoder's words.
    assert_eq!(
        message("POST", config_maps, "application/json", "\"str\"").await,
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (2273747222)"
    );
    for (kind, why) in [
        (
            "Secret",
            "converting (v1.Secret) to (core.ConfigMap): unknown conversion",
        ),
        (
            "Gizmo",
            "no kind \"Gizmo\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
        ),
    ] {
        let body = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "s"}});
        assert_eq!(
            message("POST", config_maps, "application/json", &body.to_string()).await,
            format!("{kind} in version \"v1\" cannot be handled as a ConfigMap: {why}")
        );
    }
    server
        .create_json(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}))
        .unwrap();
    let config_map = format!("{config_maps}/c");
    // Patches are JSON, never YAML: a merge patch is decoded strictly (`error decoding
    // patch: ...`), or by json-patch's MergePatch when unknown fields are ignored.
    assert_eq!(
        message(
            "PATCH",
            &config_map,
            "application/merge-patch+json",
            "data: {a: b}"
        )
        .await,
        "error decoding patch: invalid character 'd' looking for beginning of value"
    );
    assert_eq!(
        message(
            "PATCH",
            &format!("{config_map}?fieldValidation=Ignore"),
            "application/merge-patch+json",
            "data: {a: b}"
        )
        .await,
        "Invalid JSON Patch"
    );
    // A strategic merge patch: the decoder's error alone.
    assert_eq!(
        message(
            "PATCH",
            &config_map,
            "application/strategic-merge-patch+json",
            "{\"data\":"
        )
        .await,
        "unexpected end of JSON input"
    );
    // A JSON patch: strictly decoded, or by jsonpatch.DecodePatch.
    assert_eq!(
        message(
            "PATCH",
            &config_map,
            "application/json-patch+json",
            "[{op: add}]"
        )
        .await,
        "error decoding patch: invalid character 'o' looking for beginning of object key string"
    );
    assert_eq!(
        message(
            "PATCH",
            &format!("{config_map}?fieldValidation=Ignore"),
            "application/json-patch+json",
            "[{op: add}]"
        )
        .await,
        "invalid character 'o' looking for beginning of object key string"
    );
}

/// A strategic merge patch that is not a JSON object: `strategicPatchObject`
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`) decodes it into a
/// `map[string]interface{}` and answers the decoder's error as a 400, whatever the field
/// validation (`kubectl patch -p notjson` sends the YAML string `"notjson"`); `null` decodes
/// into an empty map and changes nothing.
#[tokio::test]
async fn strategic_merge_patches_that_are_not_objects_are_bad_requests() {
    let server = server().await;
    let created = raw(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("Content-Type", "application/json")],
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"1"}}"#,
    )
    .await;
    assert_eq!(created.status, 201);
    let patch = async |query: &str, body: &str| {
        raw(
            &server,
            "PATCH",
            &format!("/api/v1/namespaces/default/configmaps/c{query}"),
            &[("Content-Type", "application/strategic-merge-patch+json")],
            body.as_bytes(),
        )
        .await
    };
    for (query, body, go_type) in [
        ("", "\"notjson\"", "string"),
        ("?fieldValidation=Ignore", "[]", "array"),
        ("?fieldValidation=Strict", "7", "number"),
        ("", "true", "bool"),
    ] {
        let response = patch(query, body).await;
        response.assert_status(400, "BadRequest");
        assert_eq!(
            response.json()["message"],
            format!(
                "json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"
            )
        );
    }
    let response = patch("", "null").await;
    assert_eq!(
        response.status,
        200,
        "{}",
        String::from_utf8_lossy(&response.body)
    );
    assert_eq!(response.json()["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn every_answer_names_its_audit_id_and_is_not_cached() {
    let server = server().await;
    let mut ids = Vec::new();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps/missing",
        "/version",
    ] {
        let response = raw(&server, "GET", path, &[], b"").await;
        assert_eq!(
            response.header("cache-control"),
            Some("no-cache, private"),
            "{path}"
        );
        let id = response.header("audit-id").expect("an Audit-Id").to_owned();
        assert_eq!(id.len(), 36, "a UUID: {id}");
        ids.push(id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 3, "one per request");
    // A client's own Audit-ID is kept.
    let response = raw(
        &server,
        "GET",
        "/api/v1/namespaces",
        &[("Audit-ID", "trace-42")],
        b"",
    )
    .await;
    assert_eq!(response.header("audit-id"), Some("trace-42"));
}
