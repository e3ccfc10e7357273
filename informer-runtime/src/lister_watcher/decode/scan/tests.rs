use super::*;

/// Feeds `text` to a scanner in chunks of `chunk` bytes, dropping what it has scanned as a
/// caller does; returns the items and fields found, as text.
fn scan(text: &str, chunk: usize) -> Result<Vec<String>, DecodeError> {
    let mut scanner = ListScanner::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    for piece in text.as_bytes().chunks(chunk) {
        buf.extend_from_slice(piece);
        while let Some(token) = scanner.next(&buf)? {
            out.push(match token {
                Token::Item(r) => format!("item {}", String::from_utf8_lossy(&buf[r])),
                Token::Field(f, r) => format!("{f:?} {}", String::from_utf8_lossy(&buf[r])),
            });
        }
        let done = scanner.keep_from();
        buf.drain(..done);
        scanner.shift(done);
    }
    scanner.finish(&buf)?;
    Ok(out)
}

/// The same at every chunk size from one byte to the whole text.
fn scan_any(text: &str) -> Vec<String> {
    let whole = scan(text, text.len().max(1)).unwrap();
    for chunk in 1..text.len() {
        assert_eq!(scan(text, chunk).unwrap(), whole, "chunks of {chunk}");
    }
    whole
}

#[test]
fn items_and_head_fields_are_found_whatever_the_chunks() {
    let text = r#" {"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"x"},
        "items":[{"metadata":{"name":"a"}} , {"spec":{"c":[{"x":[1,{}]}]}}]} "#;
    assert_eq!(
        scan_any(text),
        [
            r#"Kind "PodList""#,
            r#"ApiVersion "v1""#,
            r#"Metadata {"resourceVersion":"7","continue":"x"}"#,
            r#"item {"metadata":{"name":"a"}}"#,
            r#"item {"spec":{"c":[{"x":[1,{}]}]}}"#,
        ]
    );
}

#[test]
fn braces_quotes_and_escapes_inside_strings_do_not_end_an_item() {
    let text = r#"{"items":[{"a":"}{ \"} ]\\","b":"\\"},{"c":"\u007d"}]}"#;
    assert_eq!(
        scan_any(text),
        [
            r#"item {"a":"}{ \"} ]\\","b":"\\"}"#,
            r#"item {"c":"\u007d"}"#
        ]
    );
}

#[test]
fn other_fields_are_skipped_wherever_they_are() {
    let text =
        r#"{"x":[1,[2,"]"],{"y":"}"}],"items":[],"n":-1.5e3,"t":true,"z":null,"metadata":{}}"#;
    assert_eq!(scan_any(text), ["Metadata {}"]);
}

#[test]
fn empty_and_null_items_are_no_items() {
    assert!(scan_any(r#"{"items":[]}"#).is_empty());
    assert!(scan_any(r#"{"items":null,"kind":"List"}"#) == [r#"Kind "List""#]);
    assert!(scan_any("{}").is_empty());
}

#[test]
fn what_is_not_a_list_response_is_an_error() {
    for bad in [
        "[]",
        r#"{"items":[1]}"#,
        r#"{"items":[{}] "#,
        r#"{"items":[{} {}]}"#,
        r#"{"a" 1}"#,
        r#"{"a":1 "b":2}"#,
        r#"{7:1}"#,
        r#"{"items":[]}{}"#,
    ] {
        assert!(scan(bad, bad.len()).is_err(), "{bad}");
    }
}

#[test]
fn a_response_cut_short_is_an_error() {
    let text = r#"{"metadata":{},"items":[{"a":"b"},{"c":"d"}]}"#;
    for end in 0..text.len() {
        assert!(scan(&text[..end], 3).is_err(), "cut at {end}");
    }
}
