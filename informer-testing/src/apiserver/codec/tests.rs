use http::HeaderValue;
use serde_json::json;

use super::*;
use crate::apiserver::resource::Registry;

fn headers(name: header::HeaderName, value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(name, HeaderValue::from_str(value).unwrap());
    headers
}

fn accept(value: &str, route: Route) -> Result<Output, u16> {
    negotiate(&headers(header::ACCEPT, value), route).map_err(|e| e.code())
}

#[test]
fn json_bodies_report_duplicate_fields_and_keep_the_last() {
    let body = decode_json(
        br#"{"metadata": {"name": "a", "name": "b"}, "spec": {"x": [{"k": 1, "k": 2}]}}"#,
    )
    .unwrap();
    assert_eq!(body.value["metadata"]["name"], "b");
    assert_eq!(body.duplicates, ["metadata.name", "spec.x[0].k"]);
    assert!(decode_json(b"{} {}").is_err(), "trailing data");
    assert!(decode_json(b"  ").is_err());
}

#[test]
fn yaml_bodies_are_read_like_json() {
    let body = decode_yaml(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\ndata:\n  1: one\n  t: true\n").unwrap();
    assert_eq!(body.value["metadata"]["name"], "b");
    assert_eq!(
        body.value["data"]["1"], "one",
        "non-string keys become strings"
    );
    assert_eq!(body.value["data"]["t"], true);
    assert_eq!(body.duplicates, ["metadata.name"]);
    assert!(decode_yaml(b"a: [").is_err());
}

#[test]
fn content_types_pick_the_decoder() {
    let yaml = headers(header::CONTENT_TYPE, "application/yaml");
    assert_eq!(
        decode_object(&yaml, b"a: 1").unwrap().value,
        json!({"a": 1})
    );
    let json_type = headers(header::CONTENT_TYPE, "application/json; charset=utf-8");
    assert_eq!(
        decode_object(&json_type, b"{\"a\": 1}").unwrap().value,
        json!({"a": 1})
    );
    assert_eq!(
        decode_object(&HeaderMap::new(), b"{}").unwrap().value,
        json!({})
    );
    let xml = headers(header::CONTENT_TYPE, "application/xml");
    assert_eq!(decode_object(&xml, b"<a/>").unwrap_err().code(), 415);
    let protobuf = headers(header::CONTENT_TYPE, "application/vnd.kubernetes.protobuf");
    assert_eq!(
        decode_object(&protobuf, b"k8s\0\x0a").unwrap_err().code(),
        400
    );
}

#[test]
fn accept_picks_the_first_servable_range() {
    assert_eq!(
        accept(
            "application/vnd.kubernetes.protobuf,application/json",
            Route::Other
        ),
        Ok(Output::Json)
    );
    assert_eq!(accept("application/yaml", Route::Read), Ok(Output::Yaml));
    assert_eq!(accept("application/yaml", Route::Watch), Err(406));
    assert_eq!(accept("*/*", Route::Other), Ok(Output::Json));
    assert_eq!(
        accept("application/vnd.kubernetes.protobuf", Route::Read),
        Err(406)
    );
    assert_eq!(accept("text/html", Route::Other), Err(406));
    assert_eq!(
        accept("application/json;q=0.5, application/yaml", Route::Read),
        Ok(Output::Yaml)
    );
    assert_eq!(
        accept("application/yaml;q=0, application/json", Route::Read),
        Ok(Output::Json)
    );
    assert_eq!(
        accept(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            Route::Read
        ),
        Ok(Output::Table)
    );
    assert_eq!(
        accept(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            Route::Other
        ),
        Ok(Output::Json)
    );
    assert_eq!(
        accept(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
            Route::Read
        ),
        Ok(Output::Metadata)
    );
    assert_eq!(
        accept(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
            Route::Other
        ),
        Ok(Output::Json)
    );
    // `/api` and `/apis` serve aggregated discovery v2 (v2beta1, gone from 1.36, falls
    // through to the plain document), and no Table.
    assert_eq!(
        accept(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
            Route::Discovery
        ),
        Ok(Output::AggregatedDiscovery)
    );
    assert_eq!(
        accept(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
            Route::Discovery
        ),
        Ok(Output::Json)
    );
    assert_eq!(
        accept(
            "application/json;as=Table;g=meta.k8s.io;v=v1,application/json",
            Route::Discovery
        ),
        Ok(Output::Json)
    );
    assert_eq!(
        negotiate(&HeaderMap::new(), Route::Read).unwrap(),
        Output::Json
    );
    assert_eq!(
        accept("application/json;stream=watch", Route::Watch),
        Ok(Output::Json)
    );
}

#[test]
fn field_validation_directives() {
    assert_eq!(
        FieldValidation::parse(None, "CreateOptions").unwrap(),
        FieldValidation::Warn
    );
    assert_eq!(
        FieldValidation::parse(Some("Strict"), "CreateOptions").unwrap(),
        FieldValidation::Strict
    );
    let unsupported = FieldValidation::parse(Some("strict"), "PatchOptions").unwrap_err();
    assert_eq!(unsupported.code(), 422);
    assert_eq!(
        unsupported.message(),
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
    let pods = Registry::builtin().by_path("", "v1", "pods").unwrap();
    let fresh = || {
        decode_json(br#"{"metadata": {"name": "a", "name": "a"}, "spec": {"bogus": 1}}"#).unwrap()
    };
    let mut body = fresh();
    assert!(
        check_fields(&pods, &mut body, FieldValidation::Ignore, BodyKind::Object)
            .unwrap()
            .is_empty()
    );
    assert!(
        body.value["spec"].get("bogus").is_none(),
        "unknown fields are dropped"
    );
    let warnings =
        check_fields(&pods, &mut fresh(), FieldValidation::Warn, BodyKind::Object).unwrap();
    assert_eq!(
        warnings,
        [
            "unknown field \"spec.bogus\"",
            "duplicate field \"metadata.name\""
        ]
    );
    let err = check_fields(
        &pods,
        &mut fresh(),
        FieldValidation::Strict,
        BodyKind::Object,
    )
    .unwrap_err();
    assert_eq!(err.code(), 400);
    assert_eq!(
        err.message(),
        "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.bogus\", duplicate field \"metadata.name\""
    );
}

#[test]
fn custom_resources_are_not_checked() {
    let registry = Registry::with_widgets();
    let widgets = registry.by_path("example.com", "v1", "widgets").unwrap();
    let mut body = decode_json(br#"{"anything": 1}"#).unwrap();
    assert!(
        check_fields(
            &widgets,
            &mut body,
            FieldValidation::Strict,
            BodyKind::Object
        )
        .unwrap()
        .is_empty()
    );
    assert_eq!(body.value["anything"], 1);
}

#[test]
fn yaml_output_is_yaml() {
    let (bytes, content_type) = encode(&json!({"a": [1, "x"]}), Output::Yaml);
    assert_eq!(content_type, "application/yaml");
    let back = decode_yaml(&bytes).unwrap();
    assert_eq!(back.value, json!({"a": [1, "x"]}));
}

#[test]
fn items_of_a_built_in_list_carry_no_kind_or_api_version() {
    let configmaps = Registry::builtin().by_path("", "v1", "configmaps").unwrap();
    let objects = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
               "data": {"kind": "x", "k\"i,n}d": "{\"kind\":[1]}", "apiVersion": ""}}),
        json!({"kind": "ConfigMap", "apiVersion": "v1"}),
        json!({"metadata": {"name": "no-type-meta"}}),
        json!({}),
        json!({"apiVersion": "v1", "a": [1, {"b": [2.5, null, true]}], "kind": "ConfigMap", "z": ""}),
    ];
    for object in objects {
        let mut expected = object.clone();
        expected
            .as_object_mut()
            .unwrap()
            .retain(|key, _| key != "apiVersion" && key != "kind");
        assert_eq!(list_item(&configmaps, &object), expected);
        let json = serde_json::to_vec(&object).unwrap();
        let mut out = b"[".to_vec();
        write_list_item(&mut out, &configmaps, &object, &json);
        assert_eq!(out[1..], serde_json::to_vec(&expected).unwrap(), "{object}");
    }
    // Not an object as `serde_json` writes one: serialized again from the value.
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}});
    for json in [
        &br#"{"apiVersion":"v1", "kind":"ConfigMap"}"#[..],
        b"{\"a\":1",
        b"[]",
        b"",
    ] {
        let mut out = Vec::new();
        write_list_item(&mut out, &configmaps, &object, json);
        assert_eq!(
            out,
            br#"{"data":{"a":"b"}}"#,
            "{}",
            String::from_utf8_lossy(json)
        );
    }
}

#[test]
fn items_of_a_custom_resource_list_keep_their_kind() {
    let registry = Registry::with_widgets();
    let widgets = registry.by_path("example.com", "v1", "widgets").unwrap();
    let object =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}});
    assert_eq!(list_item(&widgets, &object), object);
    let json = serde_json::to_vec(&object).unwrap();
    let mut out = Vec::new();
    write_list_item(&mut out, &widgets, &object, &json);
    assert_eq!(out, json);
}
