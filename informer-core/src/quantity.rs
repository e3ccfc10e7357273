//! Kubernetes resource quantities (`k8s.io/apimachinery/pkg/api/resource.Quantity`) in the
//! canonical form an API server stores: a write decodes each quantity (`ParseQuantity`) and
//! the stored object holds `Quantity.String()`, so `"0.5"` is stored as `"500m"`, `"1024Mi"`
//! as `"1Gi"` and the JSON number `1073741824` as the string `"1073741824"`. A controller
//! comparing what it wants with what the server holds compares canonical forms.
//!
//! ```
//! use informer_core::quantity::canonical;
//!
//! assert_eq!(canonical("0.5").as_deref(), Some("500m"));
//! assert_eq!(canonical("1024Mi").as_deref(), Some("1Gi"));
//! assert_eq!(canonical("1.5Gi").as_deref(), Some("1536Mi"));
//! assert_eq!(canonical("two"), None);
//! ```
//!
//! The rules, as `quantity.go` and `amount.go` have them:
//!
//! - the suffix sets the format: `Ki`..`Ei` binary SI, `n`..`E` (and none) decimal SI,
//!   `e<n>`/`E<n>` decimal exponent; the format is kept;
//! - the value is exact down to nano-units; finer values are rounded up (away from zero);
//!   binary SI values are capped at 2^63 - 1, and one between 0 and 1 becomes decimal SI;
//! - decimal forms print the mantissa without trailing zeros, with an exponent that is a
//!   multiple of 3 (`1080m`, `1G`, `80e-3`); an exponent decimal SI has no suffix for
//!   (beyond `E`) is written as an exponent (`1e21`, as current apimachinery does);
//! - binary SI prints the largest binary suffix that divides the value exactly (`300Mi`),
//!   and falls back to decimal SI for values below 1024 in magnitude or with a fraction;
//! - zero is `0`, whatever the format;
//! - a text already in its canonical form (as the parser's fast path recognizes it) is kept
//!   as written, sign included (`+1`, `1E3` stay so).
//!
//! Numbers are kept as decimal digits and an exponent, so no size overflows and no large
//! power of ten is ever built. One difference with Go: a JSON number reaches this module
//! as `serde_json` prints it (`1e3` sent as a number reads `1000.0`), not as sent.

use serde_json::Value;

/// How a quantity prints, from the suffix it was written with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (12 × 2^20).
    BinarySi,
    /// `12M` (12 × 10^6).
    DecimalSi,
}

/// A parsed quantity: `±digits × 10^exponent` in a format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Quantity {
    negative: bool,
    /// Decimal digits (0-9), most significant first, no leading zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
    format: Format,
    /// The text as written, when Go keeps it (it is in canonical form).
    kept: Option<String>,
}

/// Go's `maxInt64Factors`: the digits the int64 fast path takes.
const MAX_INT64_FACTORS: i64 = 18;
/// `Nano`: the finest scale a quantity keeps.
const NANO: i64 = -9;
/// `math.MaxInt64`, the cap of binary SI values.
const MAX_INT64: &[u8] = b"9223372036854775807";

/// Why Go's `ParseQuantity` refuses `text` (surrounding spaces ignored), in its words
/// (`ErrFormatWrong`, `ErrSuffix`, `ErrNumeric`); `None` if it parses.
///
/// ```
/// use informer_core::quantity::parse_error;
///
/// assert_eq!(parse_error("500m"), None);
/// assert_eq!(parse_error("5iK"), Some("unable to parse quantity's suffix"));
/// assert!(parse_error("abc").unwrap().starts_with("quantities must match"));
/// ```
pub fn parse_error(text: &str) -> Option<&'static str> {
    let text = text.trim();
    if Quantity::parse(text).is_some() {
        return None;
    }
    Some(match split(text.as_bytes()) {
        None => FORMAT_WRONG,
        Some(parts) if interpret(parts.suffix).is_none() => "unable to parse quantity's suffix",
        Some(_) => "unable to parse quantity's numeric part",
    })
}

/// Go's `ErrFormatWrong`.
const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// The canonical form of quantity `text` (surrounding spaces ignored), as an API server
/// stores it; `None` if Go's `ParseQuantity` refuses it.
///
/// ```
/// assert_eq!(informer_core::quantity::canonical(" 100m ").as_deref(), Some("100m"));
/// assert_eq!(informer_core::quantity::canonical("1e3").as_deref(), Some("1e3"));
/// assert_eq!(informer_core::quantity::canonical("1000").as_deref(), Some("1k"));
/// ```
pub fn canonical(text: &str) -> Option<String> {
    Quantity::parse(text.trim()).map(|q| q.to_string())
}

/// The canonical text for a JSON quantity value (a string or a number), `None` if it is not
/// one Go decodes.
///
/// ```
/// use serde_json::json;
/// use informer_core::quantity::canonical_json;
///
/// assert_eq!(canonical_json(&json!(1073741824)).as_deref(), Some("1073741824"));
/// assert_eq!(canonical_json(&json!("0.5")).as_deref(), Some("500m"));
/// assert_eq!(canonical_json(&json!(true)), None);
/// ```
pub fn canonical_json(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => canonical(text),
        Value::Number(n) => canonical(&n.to_string()),
        _ => None,
    }
}

/// The parts `parseQuantityString` splits a quantity into.
struct Parts<'a> {
    positive: bool,
    /// Sign, digits and fraction as written (leading zeros included).
    value: &'a [u8],
    /// Whole digits without leading zeros (`"0"` if none).
    num: &'a [u8],
    /// Fraction digits.
    denom: &'a [u8],
    suffix: &'a [u8],
}

/// Go's `parseQuantityString`: `None` where it reports `ErrFormatWrong`.
fn split(s: &[u8]) -> Option<Parts<'_>> {
    let end = s.len();
    let mut pos = 0;
    let mut positive = true;
    match s.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    let whole = |value, num, denom| Parts {
        positive,
        value,
        num,
        denom,
        suffix: b"",
    };
    // Leading zeros.
    while pos < end && s[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Some(whole(b"0", b"0", b""));
    }
    // The numerator.
    let start = pos;
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Some(whole(s, &s[start..], b""));
    }
    let num: &[u8] = if pos == start { b"0" } else { &s[start..pos] };
    // The denominator.
    let mut denom: &[u8] = b"";
    if s[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && s[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos >= end {
            return Some(whole(s, num, &s[start..]));
        }
        denom = &s[start..pos];
    }
    let value = &s[..pos];
    // The suffix: letters, then an optional sign and digits.
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&s[pos]) {
        pos += 1;
    }
    if pos < end && matches!(s[pos], b'-' | b'+') {
        pos += 1;
    }
    while pos < end && s[pos].is_ascii_digit() {
        pos += 1;
    }
    (pos >= end).then_some(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Go's suffixer `interpret`: the base, exponent and format of a suffix.
fn interpret(suffix: &[u8]) -> Option<(u32, i64, Format)> {
    let decimal = |exponent| Some((10, exponent, Format::DecimalSi));
    let binary = |exponent| Some((2, exponent, Format::BinarySi));
    match suffix {
        b"" => decimal(0),
        b"n" => decimal(-9),
        b"u" => decimal(-6),
        b"m" => decimal(-3),
        b"k" => decimal(3),
        b"M" => decimal(6),
        b"G" => decimal(9),
        b"T" => decimal(12),
        b"P" => decimal(15),
        b"E" => decimal(18),
        b"Ki" => binary(10),
        b"Mi" => binary(20),
        b"Gi" => binary(30),
        b"Ti" => binary(40),
        b"Pi" => binary(50),
        b"Ei" => binary(60),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            // `strconv.ParseInt(_, 10, 64)`, then `int32(...)`.
            let parsed: i64 = std::str::from_utf8(rest).ok()?.parse().ok()?;
            Some((10, i64::from(parsed as i32), Format::DecimalExponent))
        }
        _ => None,
    }
}

/// Digits without leading zeros.
fn trimmed(digits: &[u8]) -> Vec<u8> {
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    digits[first..].to_vec()
}

/// `digits × factor`.
fn multiply(digits: &[u8], factor: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(digits.len() + 20);
    let mut carry: u128 = 0;
    for &d in digits.iter().rev() {
        let product = u128::from(d) * u128::from(factor) + carry;
        out.push((product % 10) as u8);
        carry = product / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    trimmed(&out)
}

/// `digits + 1`.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, 1);
}

/// Compares two digit strings without leading zeros.
fn compare(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// ASCII digits as values.
fn values(ascii: &[u8]) -> Vec<u8> {
    ascii.iter().map(|c| c - b'0').collect()
}

impl Quantity {
    /// Go's `ParseQuantity` (the text already trimmed); `None` where it fails.
    pub(crate) fn parse(text: &str) -> Option<Quantity> {
        if text.is_empty() {
            return None;
        }
        if text == "0" {
            return Some(Quantity {
                negative: false,
                digits: Vec::new(),
                exponent: 0,
                format: Format::DecimalSi,
                kept: Some(text.into()),
            });
        }
        let parts = split(text.as_bytes())?;
        let (base, exponent, format) = interpret(parts.suffix)?;
        let (num, denom) = (parts.num.len() as i64, parts.denom.len() as i64);

        // The int64 fast path, which alone keeps the text as written.
        let (mut scale, precision, shift) = match format {
            Format::DecimalExponent | Format::DecimalSi => {
                (exponent, MAX_INT64_FACTORS - (num + denom), 0)
            }
            Format::BinarySi if exponent >= 0 && denom == 0 => {
                (0, 15 - num - exponent * 3 / 10 - 1, exponent)
            }
            Format::BinarySi => (0, -1, 0),
        };
        if precision >= 0 {
            scale -= denom;
            if scale >= NANO {
                let shifted = [parts.num, parts.denom].concat();
                let value: i64 = std::str::from_utf8(&shifted).ok()?.parse().ok()?;
                if let Some(result) = value.checked_mul(1i64 << shift) {
                    let canonical = match format {
                        Format::BinarySi => exponent % 10 == 0 && value & 0x07 != 0,
                        _ => scale % 3 == 0 && !shifted.ends_with(b"000") && shifted[0] != b'0',
                    };
                    return Some(Quantity {
                        negative: !parts.positive && result != 0,
                        digits: trimmed(&values(result.to_string().as_bytes())),
                        exponent: scale,
                        format,
                        kept: canonical.then(|| text.to_string()),
                    });
                }
            }
        }

        // The `inf.Dec` path.
        let value = parts
            .value
            .strip_prefix(b"-")
            .or_else(|| parts.value.strip_prefix(b"+"))
            .unwrap_or(parts.value);
        let (whole, fraction) = match value.iter().position(|&c| c == b'.') {
            Some(dot) => (&value[..dot], &value[dot + 1..]),
            None => (value, &b""[..]),
        };
        let mut digits = trimmed(&values(&[whole, fraction].concat()));
        let mut exponent_10 = -(fraction.len() as i64);
        match base {
            10 => exponent_10 += exponent,
            _ => digits = multiply(&digits, 1u64 << exponent),
        }
        let mut format = format;
        if !digits.is_empty() {
            // Rounded up to nano-units.
            if exponent_10 < NANO {
                let dropped = usize::try_from(NANO - exponent_10).unwrap_or(usize::MAX);
                if dropped >= digits.len() {
                    digits = vec![1];
                } else {
                    let kept = digits.len() - dropped;
                    let inexact = digits[kept..].iter().any(|&d| d != 0);
                    digits.truncate(kept);
                    if inexact {
                        increment(&mut digits);
                    }
                }
                exponent_10 = NANO;
            }
            if format == Format::BinarySi {
                let (integer, fraction) = integer_part(&digits, exponent_10);
                let max = values(MAX_INT64);
                let over = match compare(&integer, &max) {
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Equal => fraction,
                    std::cmp::Ordering::Less => false,
                };
                if over {
                    digits = max;
                    exponent_10 = 0;
                } else if integer.is_empty() {
                    // Between 0 and 1.
                    format = Format::DecimalSi;
                }
            }
        }
        Some(Quantity {
            negative: !parts.positive && !digits.is_empty(),
            digits,
            exponent: exponent_10,
            format,
            kept: None,
        })
    }

    /// Whether the value is zero.
    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Go's `CanonicalizeBytes`: the canonical text (ignoring the kept text).
    pub(crate) fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let sign = if self.negative { "-" } else { "" };
        if self.format == Format::BinarySi {
            let (integer, fraction) = integer_part(&self.digits, self.exponent);
            let small = compare(&integer, &[1, 0, 2, 4]).is_lt();
            // `integer` fits 2^63 here (the parser caps binary SI values).
            let whole = integer
                .iter()
                .try_fold(0u128, |n, &d| n.checked_mul(10)?.checked_add(u128::from(d)));
            if let (false, false, Some(mut n)) = (small, fraction, whole) {
                let mut times = 0;
                while n >= 1024 && n % 1024 == 0 {
                    n /= 1024;
                    times += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                    .get(times)
                    .copied()
                    .unwrap_or("");
                return format!("{sign}{n}{suffix}");
            }
        }
        // Decimal: no trailing zeros, then an exponent that is a multiple of 3.
        let mut digits = self.digits.clone();
        let mut exponent = self.exponent;
        while digits.len() > 1 && digits.last() == Some(&0) {
            digits.pop();
            exponent += 1;
        }
        while exponent % 3 != 0 {
            digits.push(0);
            exponent -= 1;
        }
        let number: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
        let si = match exponent {
            -9 => Some("n"),
            -6 => Some("u"),
            -3 => Some("m"),
            0 => Some(""),
            3 => Some("k"),
            6 => Some("M"),
            9 => Some("G"),
            12 => Some("T"),
            15 => Some("P"),
            18 => Some("E"),
            _ => None,
        };
        let suffix = match (self.format, si) {
            (Format::DecimalSi | Format::BinarySi, Some(si)) => si.to_string(),
            (_, _) if exponent == 0 => String::new(),
            _ => format!("e{}", exponent as i32),
        };
        format!("{sign}{number}{suffix}")
    }
}

impl std::fmt::Display for Quantity {
    /// Go's `String()` and `MarshalJSON`: the text as written if kept, else canonical.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kept {
            Some(text) => f.write_str(text),
            None => f.write_str(&self.canonical()),
        }
    }
}

/// The integer part of `digits × 10^exponent` (no leading zeros; empty for zero) and
/// whether a fraction is left. Only for exponents a binary SI value can have (a huge
/// positive one is treated as past any cap).
fn integer_part(digits: &[u8], exponent: i64) -> (Vec<u8>, bool) {
    if exponent >= 0 {
        let zeros = usize::try_from(exponent.min(40)).unwrap_or(40);
        let mut integer = digits.to_vec();
        integer.extend(std::iter::repeat_n(0, zeros));
        return (trimmed(&integer), false);
    }
    let cut = usize::try_from(-exponent).unwrap_or(usize::MAX);
    if cut >= digits.len() {
        return (Vec::new(), digits.iter().any(|&d| d != 0));
    }
    let kept = digits.len() - cut;
    (
        trimmed(&digits[..kept]),
        digits[kept..].iter().any(|&d| d != 0),
    )
}

#[cfg(test)]
mod tests;
