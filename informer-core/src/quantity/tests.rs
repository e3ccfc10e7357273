//! Ported from apimachinery's `pkg/api/resource/quantity_test.go` (`TestQuantityParse`,
//! `TestQuantityString`, `TestQuantityParseEmit`, `TestParseQuantityString`,
//! `TestJSONWhitespace`, `TestNewSet`, `TestMilliNewSet`, ...).

use serde_json::json;

use super::*;

/// Go's `decQuantity(i, exponent, format)`: `i × 10^exponent`.
fn dec(value: i128, exponent: i64, format: Format) -> Quantity {
    Quantity {
        negative: value < 0,
        digits: trimmed(&values(value.unsigned_abs().to_string().as_bytes())),
        exponent,
        format,
        kept: None,
    }
}

/// A quantity's value as (negative, digits without trailing zeros, exponent), to compare.
fn value_of(q: &Quantity) -> (bool, Vec<u8>, i64) {
    let mut digits = q.digits.clone();
    let mut exponent = q.exponent;
    while digits.last() == Some(&0) {
        digits.pop();
        exponent += 1;
    }
    if digits.is_empty() {
        return (false, digits, 0);
    }
    (q.negative, digits, exponent)
}

fn negated(q: &Quantity) -> Quantity {
    Quantity {
        negative: !q.negative && !q.is_zero(),
        ..q.clone()
    }
}

/// What Go writes for the quantity written `text`.
fn emit(text: &str) -> String {
    Quantity::parse(text)
        .unwrap_or_else(|| panic!("{text} parses"))
        .to_string()
}

use Format::{BinarySi, DecimalExponent, DecimalSi};

#[test]
fn parse_quantity_string_splits_sign_value_numerator_denominator_and_suffix() {
    let table: [(&str, bool, &str, &str, &str, &str); 6] = [
        ("0.025Ti", true, "0.025", "0", "025", "Ti"),
        ("1.025Ti", true, "1.025", "1", "025", "Ti"),
        ("-1.025Ti", false, "-1.025", "1", "025", "Ti"),
        (".", true, ".", "0", "", ""),
        ("-.", false, "-.", "0", "", ""),
        ("1E-3", true, "1", "1", "", "E-3"),
    ];
    for (input, positive, value, num, denom, suffix) in table {
        let parts = split(input.as_bytes()).unwrap_or_else(|| panic!("{input}"));
        assert_eq!(parts.positive, positive, "{input}");
        assert_eq!(parts.value, value.as_bytes(), "{input}");
        assert_eq!(parts.num, num.as_bytes(), "{input}");
        assert_eq!(parts.denom, denom.as_bytes(), "{input}");
        assert_eq!(parts.suffix, suffix.as_bytes(), "{input}");
    }
}

/// `TestQuantityParse`: each input's value and format, then the same negated and with `+`.
#[test]
fn quantities_parse_to_their_value_and_format() {
    let max = dec(i128::from(i64::MAX), 0, BinarySi);
    let table = [
        ("0", dec(0, 0, DecimalSi)),
        ("0n", dec(0, 0, DecimalSi)),
        ("0u", dec(0, 0, DecimalSi)),
        ("0m", dec(0, 0, DecimalSi)),
        ("0Ki", dec(0, 0, BinarySi)),
        ("0k", dec(0, 0, DecimalSi)),
        ("0Mi", dec(0, 0, BinarySi)),
        ("0M", dec(0, 0, DecimalSi)),
        ("0Gi", dec(0, 0, BinarySi)),
        ("0G", dec(0, 0, DecimalSi)),
        ("0Ti", dec(0, 0, BinarySi)),
        ("0T", dec(0, 0, DecimalSi)),
        // Quantity less numbers are allowed
        ("1", dec(1, 0, DecimalSi)),
        // Binary suffixes
        ("1Ki", dec(1024, 0, BinarySi)),
        ("8Ki", dec(8 * 1024, 0, BinarySi)),
        ("7Mi", dec(7 << 20, 0, BinarySi)),
        ("6Gi", dec(6 << 30, 0, BinarySi)),
        ("5Ti", dec(5 << 40, 0, BinarySi)),
        ("4Pi", dec(4 << 50, 0, BinarySi)),
        ("3Ei", dec(3 << 60, 0, BinarySi)),
        ("10Ti", dec(10 << 40, 0, BinarySi)),
        ("100Ti", dec(100 << 40, 0, BinarySi)),
        // Decimal suffixes
        ("5n", dec(5, -9, DecimalSi)),
        ("4u", dec(4, -6, DecimalSi)),
        ("3m", dec(3, -3, DecimalSi)),
        ("9", dec(9, 0, DecimalSi)),
        ("8k", dec(8, 3, DecimalSi)),
        ("50k", dec(5, 4, DecimalSi)),
        ("7M", dec(7, 6, DecimalSi)),
        ("6G", dec(6, 9, DecimalSi)),
        ("5T", dec(5, 12, DecimalSi)),
        ("40T", dec(4, 13, DecimalSi)),
        ("300T", dec(3, 14, DecimalSi)),
        ("2P", dec(2, 15, DecimalSi)),
        ("1E", dec(1, 18, DecimalSi)),
        // Decimal exponents
        ("1E-3", dec(1, -3, DecimalExponent)),
        ("1e3", dec(1, 3, DecimalExponent)),
        ("1E6", dec(1, 6, DecimalExponent)),
        ("1e9", dec(1, 9, DecimalExponent)),
        ("1E12", dec(1, 12, DecimalExponent)),
        ("1e15", dec(1, 15, DecimalExponent)),
        ("1E18", dec(1, 18, DecimalExponent)),
        // Nonstandard but still parsable
        ("1e14", dec(1, 14, DecimalExponent)),
        ("1e13", dec(1, 13, DecimalExponent)),
        ("1e3", dec(1, 3, DecimalExponent)),
        ("100.035k", dec(100035, 0, DecimalSi)),
        // Things that look like floating point
        ("0.001", dec(1, -3, DecimalSi)),
        ("0.0005k", dec(5, -1, DecimalSi)),
        ("0.005", dec(5, -3, DecimalSi)),
        ("0.05", dec(5, -2, DecimalSi)),
        ("0.5", dec(5, -1, DecimalSi)),
        ("0.00050k", dec(5, -1, DecimalSi)),
        ("0.00500", dec(5, -3, DecimalSi)),
        ("0.05000", dec(5, -2, DecimalSi)),
        ("0.50000", dec(5, -1, DecimalSi)),
        ("0.5e0", dec(5, -1, DecimalExponent)),
        ("0.5e-1", dec(5, -2, DecimalExponent)),
        ("0.5e-2", dec(5, -3, DecimalExponent)),
        ("10.035M", dec(10035, 3, DecimalSi)),
        ("1.2e3", dec(12, 2, DecimalExponent)),
        ("1.3E+6", dec(13, 5, DecimalExponent)),
        ("1.40e9", dec(14, 8, DecimalExponent)),
        ("1.53E12", dec(153, 10, DecimalExponent)),
        ("1.6e15", dec(16, 14, DecimalExponent)),
        ("1.7E18", dec(17, 17, DecimalExponent)),
        ("9.01", dec(901, -2, DecimalSi)),
        ("8.1k", dec(81, 2, DecimalSi)),
        ("7.123456M", dec(7123456, 0, DecimalSi)),
        ("6.987654321G", dec(6987654321, 0, DecimalSi)),
        ("5.444T", dec(5444, 9, DecimalSi)),
        ("40.1T", dec(401, 11, DecimalSi)),
        ("300.2T", dec(3002, 11, DecimalSi)),
        ("2.5P", dec(25, 14, DecimalSi)),
        ("1.01E", dec(101, 16, DecimalSi)),
        // Things that saturate/round
        ("3.001n", dec(4, -9, DecimalSi)),
        ("1.1E-9", dec(2, -9, DecimalExponent)),
        ("0.0000000001", dec(1, -9, DecimalSi)),
        ("0.0000000005", dec(1, -9, DecimalSi)),
        ("0.00000000050", dec(1, -9, DecimalSi)),
        ("0.5e-9", dec(1, -9, DecimalExponent)),
        ("0.9n", dec(1, -9, DecimalSi)),
        ("0.00000012345", dec(124, -9, DecimalSi)),
        ("0.00000012354", dec(124, -9, DecimalSi)),
        ("9Ei", max.clone()),
        ("9223372036854775807Ki", max),
        ("12E", dec(12, 18, DecimalSi)),
        // We'll accept fractional binary stuff, too.
        ("100.035Ki", dec(10243584, -2, BinarySi)),
        ("0.5Mi", dec(524288, 0, BinarySi)),
        ("0.05Gi", dec(536870912, -1, BinarySi)),
        ("0.025Ti", dec(274877906944, -1, BinarySi)),
        // Things written by trolls
        ("0.000000000001Ki", dec(2, -9, DecimalSi)), // rounds up, changes format
        (".001", dec(1, -3, DecimalSi)),
        (".0001k", dec(100, -3, DecimalSi)),
        ("1.", dec(1, 0, DecimalSi)),
        ("1.G", dec(1, 9, DecimalSi)),
    ];
    for (input, expected) in &table {
        for (text, expected) in [
            (input.to_string(), expected.clone()),
            (format!("-{input}"), negated(expected)),
            (format!("+{input}"), expected.clone()),
        ] {
            let got = Quantity::parse(&text).unwrap_or_else(|| panic!("{text} parses"));
            assert_eq!(value_of(&got), value_of(&expected), "{text}");
            assert_eq!(got.format, expected.format, "{text}");
        }
    }
}

#[test]
fn malformed_quantities_do_not_parse() {
    for text in [
        "", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
        // trailing whitespace is forbidden (JSON values are trimmed before)
        " 1", "1 ",
    ] {
        assert_eq!(Quantity::parse(text), None, "{text:?}");
    }
}

/// `TestQuantityString`: the canonical text of a value; it parses back keeping its text,
/// and an alternate spelling parses to a quantity that prints canonically.
#[test]
fn quantities_print_in_canonical_form() {
    let table = [
        (dec(1 << 30, 0, BinarySi), "1Gi", "1024Mi"),
        (dec(300 << 20, 0, BinarySi), "300Mi", "307200Ki"),
        (dec(6 * 1024, 0, BinarySi), "6Ki", ""),
        (dec(1001 << 30, 0, BinarySi), "1001Gi", "1025024Mi"),
        (dec(1 << 40, 0, BinarySi), "1Ti", "1024Gi"),
        (dec(5, 0, BinarySi), "5", "5000m"),
        (dec(500, -3, BinarySi), "500m", "0.5"),
        (dec(1, 9, DecimalSi), "1G", "1000M"),
        (dec(1000, 6, DecimalSi), "1G", "0.001T"),
        (dec(1000000, 3, DecimalSi), "1G", ""),
        (dec(1000000000, 0, DecimalSi), "1G", ""),
        (dec(1, -3, DecimalSi), "1m", "1000u"),
        (dec(80, -3, DecimalSi), "80m", ""),
        (dec(1080, -3, DecimalSi), "1080m", "1.08"),
        (dec(108, -2, DecimalSi), "1080m", "1080000000n"),
        (dec(10800, -4, DecimalSi), "1080m", ""),
        (dec(300, 6, DecimalSi), "300M", ""),
        (dec(1, 12, DecimalSi), "1T", ""),
        (dec(1, 18, DecimalSi), "1E", ""),
        (dec(1, 21, DecimalSi), "1e21", "1000E"),
        (dec(5, 21, DecimalSi), "5e21", "5000E"),
        (dec(1, 24, DecimalSi), "1e24", "1000000E"),
        (dec(1234567, 6, DecimalSi), "1234567M", ""),
        (dec(1234567, -3, BinarySi), "1234567m", ""),
        (dec(3, 3, DecimalSi), "3k", ""),
        (dec(1025, 0, BinarySi), "1025", ""),
        (dec(0, 0, DecimalSi), "0", ""),
        (dec(0, 0, BinarySi), "0", ""),
        (dec(1, 9, DecimalExponent), "1e9", ".001e12"),
        (dec(1, -3, DecimalExponent), "1e-3", "0.001e0"),
        (dec(1, -9, DecimalExponent), "1e-9", "1000e-12"),
        (dec(80, -3, DecimalExponent), "80e-3", ""),
        (dec(300, 6, DecimalExponent), "300e6", ""),
        (dec(1, 12, DecimalExponent), "1e12", ""),
        (dec(1, 3, DecimalExponent), "1e3", ""),
        (dec(3, 3, DecimalExponent), "3e3", ""),
        (dec(3, 3, DecimalSi), "3k", ""),
        (dec(0, 0, DecimalExponent), "0", "00"),
        (dec(1, -9, DecimalSi), "1n", ""),
        (dec(80, -9, DecimalSi), "80n", ""),
        (dec(1080, -9, DecimalSi), "1080n", ""),
        (dec(108, -8, DecimalSi), "1080n", ""),
        (dec(10800, -10, DecimalSi), "1080n", ""),
        (dec(1, -6, DecimalSi), "1u", ""),
        (dec(80, -6, DecimalSi), "80u", ""),
        (dec(1080, -6, DecimalSi), "1080u", ""),
    ];
    for (value, expected, alternate) in &table {
        assert_eq!(value.canonical(), *expected, "{value:?}");
        let parsed = Quantity::parse(expected).unwrap();
        assert_eq!(
            parsed.kept.as_deref(),
            Some(*expected),
            "{expected}: the canonical text is kept"
        );
        if !alternate.is_empty() {
            let parsed = Quantity::parse(alternate).unwrap();
            assert_eq!(parsed.kept, None, "{alternate}: not canonical");
            assert_eq!(parsed.to_string(), *expected, "{alternate}");
        }
        if !value.is_zero() {
            assert_eq!(negated(value).canonical(), format!("-{expected}"));
        }
    }
}

/// `TestQuantityParseEmit`, and the same negated.
#[test]
fn parsed_quantities_emit_their_canonical_form() {
    let table = [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
    ];
    for (input, expected) in table {
        assert_eq!(emit(input), expected, "{input}");
        assert_eq!(
            emit(&format!("-{input}")),
            format!("-{expected}"),
            "-{input}"
        );
    }
}

/// `TestQuantityParseZero`, `TestQuantityCanocicalizeZero`: zero is `0`, whatever the suffix.
#[test]
fn zero_is_written_0() {
    for text in [
        "0", "00", "0.0", "-0", "+0", "0Ki", "0m", "0e3", "0.000n", ".",
    ] {
        assert_eq!(emit(text), "0", "{text}");
    }
}

/// `TestNewSet`, `TestMilliNewSet`, `TestNewScaledSet`: values built in code print so.
#[test]
fn new_quantities_print_in_their_format() {
    let table = [
        (dec(1, 0, DecimalSi), "1"),
        (dec(1000, 0, DecimalSi), "1k"),
        (dec(1234000, 0, DecimalSi), "1234k"),
        (dec(1024, 0, BinarySi), "1Ki"),
        (dec(1000000, 0, DecimalExponent), "1e6"),
        (dec(1024 * 1024, 0, BinarySi), "1Mi"),
        (dec(1, -3, DecimalSi), "1m"),
        (dec(1000, -3, DecimalSi), "1"),
        (dec(1234000, -3, DecimalSi), "1234"),
        (dec(1024, -3, BinarySi), "1024m"),
        (dec(1000000, -3, DecimalExponent), "1e3"),
        (dec(1024 * 1024, -3, BinarySi), "1048576m"),
        (dec(1, -9, DecimalSi), "1n"),
        (dec(1000, -9, DecimalSi), "1u"),
        (dec(1000, -6, DecimalSi), "1m"),
        (dec(1000, -3, DecimalSi), "1"),
        (dec(1000, 0, DecimalSi), "1k"),
    ];
    for (value, expected) in table {
        assert_eq!(value.canonical(), expected, "{value:?}");
    }
}

/// What a real server stores for the quantities clients commonly send.
#[test]
fn common_resource_quantities_are_written_canonically() {
    for (input, expected) in [
        ("500m", "500m"),
        ("0.5", "500m"),
        ("0.25", "250m"),
        ("1.5", "1500m"),
        ("2", "2"),
        ("100m", "100m"),
        ("1000m", "1"),
        ("128Mi", "128Mi"),
        ("1024Mi", "1Gi"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1073741824", "1073741824"),
        ("1000", "1k"),
        ("1e3", "1e3"),
        ("1E3", "1E3"),
        ("+1", "+1"),
        ("2000000", "2M"),
        ("12e6", "12e6"),
        ("1.5e3", "1500"),
        ("10Gi", "10Gi"),
        ("8Gi", "8Gi"),
        ("1Ki", "1Ki"),
        ("1024", "1024"),
        ("1024Ki", "1Mi"),
        ("1.1Ki", "1126400m"),
    ] {
        assert_eq!(emit(input), expected, "{input}");
    }
}

/// `TestJSONWhitespace`, and JSON numbers: Go writes every quantity as a string.
#[test]
fn json_quantities_are_trimmed_and_written_as_strings() {
    for (value, expected) in [
        (json!(" 1"), "1"),
        (json!("1 "), "1"),
        (json!(1), "1"),
        (json!(10), "10"),
        (json!(-1), "-1"),
        (json!(1073741824), "1073741824"),
        (json!(0.5), "500m"),
        (json!(1.5), "1500m"),
        (json!("1024Mi"), "1Gi"),
    ] {
        assert_eq!(canonical_json(&value).as_deref(), Some(expected), "{value}");
    }
    for value in [json!("x"), json!(true), json!(null), json!({}), json!([])] {
        assert_eq!(canonical_json(&value), None, "{value}");
    }
}

/// Huge exponents neither overflow nor build huge numbers.
#[test]
fn extreme_exponents_stay_cheap() {
    assert_eq!(emit("1e999999999"), "1e999999999");
    assert_eq!(emit("1.5e999999998"), "150e999999996");
    assert_eq!(emit("1e-999999999"), "1e-9");
    assert_eq!(
        emit("123456789012345678901234567890"),
        "123456789012345678901234567890"
    );
    assert_eq!(emit("99999999999999999999Ki"), "9223372036854775807");
}
