use super::*;

#[test]
fn valid_documents_have_no_error() {
    for document in [
        "{}",
        " [ ] ",
        r#"{"a": [1, -2.5e+3, true, false, null, "x\u00e9\n"], "b": {}}"#,
        "0",
        "-0.5E7",
        r#""s""#,
    ] {
        assert_eq!(syntax_error(document.as_bytes()), None, "{document}");
    }
}

#[test]
fn errors_are_worded_as_gos_scanner_words_them() {
    for (document, error) in [
        ("", "unexpected end of JSON input"),
        ("  ", "unexpected end of JSON input"),
        ("{", "unexpected end of JSON input"),
        (r#"{"a""#, "unexpected end of JSON input"),
        (r#""abc"#, "unexpected end of JSON input"),
        (
            "{not json",
            "invalid character 'n' looking for beginning of object key string",
        ),
        (
            "not-a-token",
            "invalid character 'o' in literal null (expecting 'u')",
        ),
        (
            "nul",
            "invalid character ' ' in literal null (expecting 'l')",
        ),
        (
            "tru",
            "invalid character ' ' in literal true (expecting 'e')",
        ),
        ("-", "invalid character ' ' in numeric literal"),
        (
            "1.",
            "invalid character ' ' after decimal point in numeric literal",
        ),
        ("1e", "invalid character ' ' in exponent of numeric literal"),
        ("01", "invalid character '1' after top-level value"),
        ("{} x", "invalid character 'x' after top-level value"),
        (r#"{"a" 1}"#, "invalid character '1' after object key"),
        (
            r#"{"a":1 "b"}"#,
            "invalid character '\"' after object key:value pair",
        ),
        ("[1 2]", "invalid character '2' after array element"),
        (
            "[1,]",
            "invalid character ']' looking for beginning of value",
        ),
        ("\"a\tb\"", r"invalid character '\t' in string literal"),
        (r#""\x""#, "invalid character 'x' in string escape code"),
        (
            r#""\u12g4""#,
            r"invalid character 'g' in \u hexadecimal character escape",
        ),
        (
            "'a'",
            r"invalid character '\'' looking for beginning of value",
        ),
        (
            "\u{81}",
            r"invalid character '\xc2' looking for beginning of value",
        ),
    ] {
        assert_eq!(
            syntax_error(document.as_bytes()).as_deref(),
            Some(error),
            "{document:?}"
        );
    }
}

#[test]
fn bodies_are_summarized_as_kube_apiserver_summarizes_them() {
    assert_eq!(summarize(b""), "<empty>");
    assert_eq!(summarize(b"{not json"), "{not json");
    let mut long = vec![b'{'];
    long.extend([b'x'; 30]);
    assert_eq!(summarize(&long), format!("{{{} ...", "x".repeat(29)));
    // Anything but an object is quoted in hex (`hex.EncodeToString`).
    assert_eq!(summarize(b"\"str\""), "2273747222");
    assert_eq!(summarize(&[b'x'; 31]), format!("{} ...", "78".repeat(30)));
}

#[test]
fn json_that_is_not_an_object_has_no_type_meta() {
    assert_eq!(
        no_type_meta(&serde_json::json!([1])),
        "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
    );
    assert_eq!(
        no_type_meta(&serde_json::Value::Null),
        "Object 'Kind' is missing in 'null'"
    );
}

#[test]
fn values_are_marshalled_as_go_marshals_an_interface() {
    for (f, text) in [
        (5.0, "5"),
        (0.5, "0.5"),
        (-2.25, "-2.25"),
        (1e21, "1e+21"),
        (1.5e-7, "1.5e-7"),
        (1e20, "100000000000000000000"),
        (0.0, "0"),
    ] {
        assert_eq!(float(f), text, "{f}");
    }
    assert_eq!(
        marshal(&serde_json::json!({"b": [1, 2.0, "x<y"], "a": {"d": null, "c": true}})),
        r#"{"a":{"c":true,"d":null},"b":[1,2,"x\u003cy"]}"#
    );
}
