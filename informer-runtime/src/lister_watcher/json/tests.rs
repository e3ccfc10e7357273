use super::*;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

fn nested(levels: usize) -> Vec<u8> {
    format!("{}{}", "[".repeat(levels), "]".repeat(levels)).into_bytes()
}

fn nested_objects(levels: usize) -> Vec<u8> {
    format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels)).into_bytes()
}

#[test]
fn decoded_vectors_have_no_spare_capacity() {
    let containers: Vec<_> = (0..5).map(|i| format!(r#"{{"name":"c{i}"}}"#)).collect();
    let mut json = format!(
        r#"{{"metadata":{{"name":"p"}},"spec":{{"containers":[{}]}}}}"#,
        containers.join(",")
    )
    .into_bytes();
    let pod: Pod = decode_json(&mut json).unwrap();
    let containers = pod.spec.unwrap().containers;
    assert_eq!(containers.len(), 5);
    assert_eq!(containers.capacity(), 5);
}

#[test]
fn decodes_what_serde_json_decodes() {
    let text = r#"{"metadata":{"name":"p","namespace":"ns","labels":{"a":"b"},
            "annotations":{"escaped":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00"}},
            "spec":{"containers":[{"name":"c","ports":[{"containerPort":8080}],
            "resources":{"limits":{"cpu":"500m"}}}],"priority":-3},
            "status":{"phase":"Running"}}"#;
    let expected: Pod = serde_json::from_str(text).unwrap();
    let decoded: Pod = decode_json(&mut text.as_bytes().to_vec()).unwrap();
    assert_eq!(decoded, expected);
}

#[test]
fn nesting_up_to_the_limit_is_decoded() {
    let value: Value = decode_json(&mut nested(MAX_DEPTH)).unwrap();
    assert!(value.is_array());
    let value: Value = decode_json(&mut nested_objects(MAX_DEPTH)).unwrap();
    assert!(value.is_object());
}

#[test]
fn nesting_beyond_the_limit_is_an_error_not_a_stack_overflow() {
    for levels in [MAX_DEPTH + 1, 100_000] {
        for mut json in [nested(levels), nested_objects(levels)] {
            let err = decode_json::<Value>(&mut json).unwrap_err();
            assert!(err.to_string().contains("nested more than"), "{err}");
        }
    }
    // Deep inside a large document, behind many siblings.
    let mut wide = format!(
        r#"{{"a":[{}],"b":{}0{}}}"#,
        vec!["1"; 500].join(","),
        "[".repeat(MAX_DEPTH + 5),
        "]".repeat(MAX_DEPTH + 5)
    )
    .into_bytes();
    assert!(decode_json::<Value>(&mut wide).is_err());
}

#[test]
fn malformed_or_mistyped_input_is_an_error() {
    for bad in [
        &b""[..],
        b"{",
        b"{\"metadata\":",
        b"nul",
        b"[1,]",
        b"{\"a\" 1}",
    ] {
        assert!(decode_json::<Value>(&mut bad.to_vec()).is_err(), "{bad:?}");
    }
    let mut wrong = br#"{"metadata":{"name":7}}"#.to_vec();
    assert!(decode_json::<Pod>(&mut wrong).is_err());
}

#[test]
fn a_watch_line_is_an_event_or_a_bare_status() {
    let mut decoder = JsonDecoder::new();
    let mut line =
        br#"{"type":"ADDED","object":{"metadata":{"name":"p"},"spec":{"containers":[]}}}"#.to_vec();
    match decoder.decode_watch_line::<Pod>(&mut line).unwrap() {
        Ok(WatchEvent::Added(pod)) => assert_eq!(pod.metadata.name.as_deref(), Some("p")),
        other => panic!("{other:?}"),
    }
    let mut line = br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old","status":"Failure"}}"#.to_vec();
    match decoder.decode_watch_line::<Pod>(&mut line).unwrap() {
        Ok(WatchEvent::Error(status)) => assert_eq!(status.code, 410),
        other => panic!("{other:?}"),
    }
    let mut line = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"gone","reason":"Expired","code":410}"#.to_vec();
    match decoder.decode_watch_line::<Pod>(&mut line).unwrap() {
        Err(status) => assert_eq!((status.code, status.reason.as_str()), (410, "Expired")),
        other => panic!("{other:?}"),
    }
    for bad in [
        &br#"{"kind":"Pod","object":{}}"#[..],
        br#"{"type":"ADDED","object":{"metadata":7}}"#,
        b"[]",
    ] {
        assert!(
            decoder.decode_watch_line::<Pod>(&mut bad.to_vec()).is_err(),
            "{bad:?}"
        );
    }
}

const MANAGED: &str = r#"[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]"#;

fn config_map(name: &str) -> String {
    format!(
        r#"{{"kind":"ConfigMap","metadata":{{"name":"{name}","managedFields":{MANAGED},"labels":{{"x":"y"}}}},"data":{{"a":"1"}}}}"#
    )
}

#[test]
fn managed_fields_are_skipped_only_when_asked() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let mut kept = JsonDecoder::new();
    let mut skipping = JsonDecoder::new().skip_managed_fields(true);
    let cm: ConfigMap = kept.decode(&mut config_map("a").into_bytes()).unwrap();
    assert_eq!(cm.metadata.managed_fields.map(|m| m.len()), Some(1));
    let cm: ConfigMap = skipping.decode(&mut config_map("a").into_bytes()).unwrap();
    assert!(cm.metadata.managed_fields.is_none());
    // Everything else is as decoded with them.
    let expected = ConfigMap {
        metadata: kube::core::ObjectMeta {
            managed_fields: None,
            ..cm.metadata.clone()
        },
        ..serde_json::from_str(&config_map("a")).unwrap()
    };
    assert_eq!(cm, expected);
    assert_eq!(cm.metadata.labels.unwrap()["x"], "y");

    let list = format!(
        r#"{{"metadata":{{"resourceVersion":"3"}},"items":[{},{},{}]}}"#,
        config_map("a"),
        config_map("b"),
        config_map("c")
    );
    let decoded = skipping
        .decode_list::<ConfigMap>(&mut list.clone().into_bytes())
        .unwrap();
    let names: Vec<_> = decoded
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(
        decoded
            .items
            .iter()
            .all(|c| c.metadata.managed_fields.is_none())
    );
    let decoded = kept
        .decode_list::<ConfigMap>(&mut list.into_bytes())
        .unwrap();
    assert!(
        decoded
            .items
            .iter()
            .all(|c| c.metadata.managed_fields.is_some())
    );

    let mut line = format!(r#"{{"type":"MODIFIED","object":{}}}"#, config_map("e")).into_bytes();
    match skipping.decode_watch_line::<ConfigMap>(&mut line).unwrap() {
        Ok(WatchEvent::Modified(cm)) => {
            assert_eq!(cm.metadata.name.as_deref(), Some("e"));
            assert!(cm.metadata.managed_fields.is_none());
        }
        other => panic!("{other:?}"),
    }
    // Objects without managed fields, or without metadata, are left alone.
    let cm: ConfigMap = skipping
        .decode(&mut br#"{"data":{"k":"v"}}"#.to_vec())
        .unwrap();
    assert_eq!(cm.data.unwrap()["k"], "v");
}

#[test]
fn one_decoder_decodes_documents_of_any_size_in_turn() {
    let mut decoder = JsonDecoder::new();
    for n in [1usize, 1000, 3, 50_000, 2] {
        let mut json = serde_json::to_vec(&vec![7u8; n]).unwrap();
        let v: Vec<u8> = decoder.decode(&mut json).unwrap();
        assert_eq!(v.len(), n);
    }
}

#[test]
fn a_type_mismatch_names_the_object_it_is_in() {
    #[derive(Debug, serde::Deserialize)]
    struct Requests {
        #[allow(dead_code, reason = "decoded only to fail")]
        cpu: f64,
    }
    #[derive(Debug, serde::Deserialize)]
    struct View {
        #[allow(dead_code, reason = "decoded only to fail")]
        spec: Requests,
    }
    let mut json =
        br#"{"metadata":{"namespace":"shop","name":"web-1"},"spec":{"cpu":"500m"}}"#.to_vec();
    let err = JsonDecoder::new().decode::<View>(&mut json).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("cannot decode "), "{text}");
    assert!(text.contains("View shop/web-1: "), "{text}");
    let mut json = br#"{"metadata":{"name":"node-1"},"spec":{"cpu":true}}"#.to_vec();
    let err = JsonDecoder::new().decode::<View>(&mut json).unwrap_err();
    assert!(err.to_string().contains("View node-1: "), "{err}");
}
