use serde_json::{Value, json};

use super::*;

fn fixture(name: &str) -> (Value, Value) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/protobuf/");
    let pb = std::fs::read(format!("{dir}{name}.pb")).unwrap();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(format!("{dir}{name}.json")).unwrap()).unwrap();
    (
        decode(&pb).unwrap_or_else(|e| panic!("{name}: {e}")),
        expected,
    )
}

#[test]
fn kubectl_create_bodies_decode_to_the_json_kubectl_would_send() {
    for name in [
        "namespace",
        "configmap",
        "secret",
        "deployment",
        "deployment-zero",
        "service",
    ] {
        let (decoded, expected) = fixture(name);
        assert_eq!(decoded, expected, "{name}");
    }
}

#[test]
fn zeros_of_non_pointer_omitempty_fields_are_left_out_as_go_json_leaves_them_out() {
    let (decoded, _) = fixture("deployment");
    let container = &decoded["spec"]["template"]["spec"]["containers"][0];
    for field in ["stdin", "stdinOnce", "tty"] {
        assert!(container.get(field).is_none(), "{field}: {container}");
    }
    for field in ["paused", "minReadySeconds"] {
        assert!(decoded["spec"].get(field).is_none(), "{field}");
    }
    assert!(
        decoded["spec"]["template"]["metadata"]
            .get("generation")
            .is_none()
    );
}

#[test]
fn zero_replicas_survive_as_a_set_pointer() {
    let (decoded, _) = fixture("deployment-zero");
    assert_eq!(decoded["spec"]["replicas"], 0);
}

#[test]
fn empty_optional_strings_are_left_out_but_map_values_are_kept() {
    let (decoded, _) = fixture("configmap");
    assert!(decoded["metadata"].get("namespace").is_none());
    assert!(decoded["metadata"].get("generateName").is_none());
    assert_eq!(decoded["data"]["empty"], "");
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn bytes_field(number: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3 | 2, &mut out);
    varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn varint_field(number: u64, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    varint(number << 3, &mut out);
    varint(value, &mut out);
    out
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [
        bytes_field(1, api_version.as_bytes()),
        bytes_field(2, kind.as_bytes()),
    ]
    .concat();
    let unknown = [bytes_field(1, &type_meta), bytes_field(2, raw)].concat();
    [MAGIC.as_slice(), &unknown].concat()
}

/// An Event (core/v1) with the given extra fields after a metadata name.
fn event(extra: &[Vec<u8>]) -> Result<Value, DecodeError> {
    let meta = bytes_field(1, &bytes_field(1, b"e"));
    let raw = [vec![meta], extra.to_vec()].concat().concat();
    decode(&envelope("v1", "Event", &raw))
}

#[test]
fn times_become_rfc_3339_strings() {
    let time = [varint_field(1, 1_700_000_000), varint_field(2, 5_000)].concat();
    // firstTimestamp (6) is a Time, eventTime (10) a MicroTime.
    let decoded = event(&[bytes_field(6, &time), bytes_field(10, &time)]).unwrap();
    assert_eq!(decoded["firstTimestamp"], "2023-11-14T22:13:20Z");
    assert_eq!(decoded["eventTime"], "2023-11-14T22:13:20.000005Z");
    let empty = event(&[bytes_field(6, &[])]).unwrap();
    assert_eq!(empty["firstTimestamp"], Value::Null);
}

#[test]
fn int_or_string_quantity_and_raw_json() {
    let schema = Schema::builtin();
    let int = [varint_field(1, 0), varint_field(2, 8080)].concat();
    let text = [varint_field(1, 1), bytes_field(3, b"http")].concat();
    assert_eq!(special(schema::INT_OR_STRING, &int).unwrap(), json!(8080));
    assert_eq!(
        special(schema::INT_OR_STRING, &text).unwrap(),
        json!("http")
    );
    assert!(special(schema::INT_OR_STRING, &varint_field(1, 7)).is_err());
    assert_eq!(
        special(schema::QUANTITY, &bytes_field(1, b"500m")).unwrap(),
        json!("500m")
    );
    assert_eq!(
        special(schema::RAW_EXTENSION, &bytes_field(1, br#"{"a":1}"#)).unwrap(),
        json!({"a": 1})
    );
    assert!(special(schema::RAW_EXTENSION, &bytes_field(1, b"\x00")).is_err());
    assert!(
        schema.message(schema::QUANTITY).is_none(),
        "special messages are leaves"
    );
}

#[test]
fn durations_print_as_go_does() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500), "1.5µs");
    assert_eq!(go_duration(2_000_000), "2ms");
    assert_eq!(go_duration(90_000_000_000), "1m30s");
    assert_eq!(go_duration(3_723_500_000_000), "1h2m3.5s");
    assert_eq!(go_duration(-1_000_000_000), "-1s");
    assert_eq!(
        special(schema::DURATION, &varint_field(1, 5_000_000_000)).unwrap(),
        json!("5s")
    );
}

#[test]
fn unknown_field_numbers_are_errors_not_dropped() {
    let err = event(&[bytes_field(99, b"x")]).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Malformed(
            "unknown field number 99 in message k8s.io.api.core.v1.Event".into()
        )
    );
}

#[test]
fn malformed_bodies_are_errors() {
    assert!(decode(b"{}").is_err(), "no magic");
    assert!(decode(b"k8s\0\x0a\xff").is_err(), "truncated length");
    assert!(
        decode(&envelope("v1", "Event", &[0x0a])).is_err(),
        "truncated field"
    );
    // reason (7) is a string: a varint is the wrong wire type.
    assert!(event(&[varint_field(7, 1)]).is_err());
    assert!(
        event(&[bytes_field(7, &[0xff, 0xfe])]).is_err(),
        "invalid UTF-8"
    );
    assert!(decode(b"k8s\0\x0b").is_err(), "group wire type");
}

#[test]
fn types_without_a_schema_are_unsupported() {
    let err = decode(&envelope("example.com/v1", "Widget", b"")).unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnsupportedType {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        }
    );
}

#[test]
fn deep_nesting_is_bounded() {
    // metadata.ownerReferences... is not recursive; RawExtension is a leaf: build depth by
    // nesting Unknown's typeMeta far past the limit in a message that allows it.
    let mut bytes = Vec::new();
    for _ in 0..(MAX_DEPTH + 2) {
        bytes = bytes_field(1, &bytes);
    }
    assert!(decode_message(Schema::builtin(), schema::UNKNOWN, &bytes, MAX_DEPTH + 1).is_err());
}
