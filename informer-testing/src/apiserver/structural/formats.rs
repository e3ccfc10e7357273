//! The string formats custom resources are checked against, as kube-openapi's `strfmt.Default`
//! registry checks them (`k8s.io/kube-openapi/pkg/validation/strfmt`), limited to the formats
//! apiextensions-apiserver keeps in a CRD schema (`supportedVersionedFormats` in
//! `apiextensions-apiserver/pkg/apiserver/validation/formats.go`; others are dropped, so any
//! string passes). Format names are compared without their dashes (`date-time` is
//! `datetime`), as go-openapi normalises them.

use std::sync::LazyLock;

use regex::Regex;

/// The string formats a CRD schema keeps (normalised, without dashes): the formats of
/// Kubernetes 1.0 and `k8s-short-name`/`k8s-long-name` (1.34). `quantity` is kept but no
/// validator is registered for it, so it checks nothing.
const SUPPORTED: [&str; 27] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "quantity",
    "k8sshortname",
    "k8slongname",
];

/// `GetUnrecognizedFormats` of one schema node: whether `format` on a node of type `kind` is
/// one the real server does not know (it warns `unrecognized format "<format>"` on a CRD
/// write and ignores the format).
pub(crate) fn unrecognized(kind: &str, format: &str) -> bool {
    if format.is_empty() {
        return false;
    }
    match kind {
        "" | "string" => !SUPPORTED.contains(&format.replace('-', "").as_str()),
        "integer" => !matches!(format, "int32" | "int64"),
        "number" => !matches!(format, "float" | "double"),
        _ => true,
    }
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a valid regular expression")
}

/// Whether `text` is a valid `format` string; formats without a validator pass.
pub(crate) fn valid(format: &str, text: &str) -> bool {
    static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
        regex(
            r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
        )
    });
    static UUID: LazyLock<[Regex; 4]> = LazyLock::new(|| {
        [
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        ]
        .map(regex)
    });
    static OTHERS: LazyLock<[Regex; 5]> = LazyLock::new(|| {
        [
            // creditcard, after dropping every non-digit
            r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
            // ssn
            r"^\d{3}[- ]?\d{2}[- ]?\d{4}$",
            // hexcolor
            r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$",
            // rgbcolor
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            // byte (base64)
            r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$",
        ]
        .map(regex)
    });
    static SHORT_NAME: LazyLock<Regex> = LazyLock::new(|| regex("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
    static LONG_NAME: LazyLock<Regex> = LazyLock::new(|| {
        regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
    });
    let [credit_card, ssn, hex_color, rgb_color, base64] = &*OTHERS;
    match format.replace('-', "").as_str() {
        "bsonobjectid" => text.len() == 24 && text.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(text),
        "email" => is_email(text),
        "hostname" => {
            HOSTNAME.is_match(text)
                && text.len() <= 255
                && text.split('.').all(|part| part.len() <= 63)
        }
        "ipv4" => parse_ip_sloppy(text) && text.contains('.'),
        "ipv6" => text.parse::<std::net::Ipv6Addr>().is_ok() && text.contains(':'),
        "cidr" => is_cidr(text),
        "mac" => is_mac(text),
        "uuid" => UUID[0].is_match(text),
        "uuid3" => UUID[1].is_match(text),
        "uuid4" => UUID[2].is_match(text),
        "uuid5" => UUID[3].is_match(text),
        "isbn" => is_isbn10(text) || is_isbn13(text),
        "isbn10" => is_isbn10(text),
        "isbn13" => is_isbn13(text),
        "creditcard" => {
            let digits: String = text.chars().filter(char::is_ascii_digit).collect();
            credit_card.is_match(&digits) && luhn(&digits)
        }
        "ssn" => text.len() == 11 && ssn.is_match(text),
        "hexcolor" => hex_color.is_match(text),
        "rgbcolor" => rgb_color.is_match(text),
        "byte" => base64.is_match(text),
        "date" => is_date(text),
        "datetime" => is_date_time(text),
        "duration" => is_duration(text),
        "k8sshortname" => text.len() <= 63 && SHORT_NAME.is_match(text),
        "k8slongname" => text.len() <= 253 && LONG_NAME.is_match(text),
        // password, quantity, and the formats the schema would have dropped
        _ => true,
    }
}

/// Go's `time.Parse("2006-01-02", s)`: four-digit year, two-digit month and day, a real date.
fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && text.parse::<jiff::civil::Date>().is_ok()
}

/// strfmt's `IsDateTime`: a date, `t` (any case), then `hh:mm:ss[.frac](z|±hh:mm)`.
fn is_date_time(text: &str) -> bool {
    static TIME: LazyLock<Regex> = LazyLock::new(|| {
        regex(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
    });
    if text.len() < 4 {
        return false;
    }
    let lower = text.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    TIME.captures(parts[1])
        .is_some_and(|m| &m[1] <= "23" && &m[2] <= "59" && &m[3] <= "59")
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, or else any `<digits><unit>` with a
/// unit such as `d`, `days`, `hr`, `min`, `sec` (Scala's duration syntax).
fn is_duration(text: &str) -> bool {
    static MATCHER: LazyLock<Regex> = LazyLock::new(|| regex(r"((\d+)\s*([A-Za-zµ]+))"));
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    if go_parse_duration(text) {
        return true;
    }
    let mut ok = false;
    for m in MATCHER.captures_iter(text) {
        if m[2].parse::<i32>().is_err() {
            return false;
        }
        let unit = m[3].trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || unit == variant.to_lowercase() {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+`, or `0`, within ±2^63 ns.
fn go_parse_duration(text: &str) -> bool {
    let mut s = text.strip_prefix(['-', '+']).unwrap_or(text);
    if s == "0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let mut total = 0f64;
    while !s.is_empty() {
        let int_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (int, rest) = s.split_at(int_end);
        let (frac, rest) = match rest.strip_prefix('.') {
            Some(after) => {
                let end = after
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after.len());
                after.split_at(end)
            }
            None => ("", rest),
        };
        if int.is_empty() && frac.is_empty() {
            return false;
        }
        let unit_end = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (unit, rest) = rest.split_at(unit_end);
        let scale = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return false,
        };
        let value: f64 = format!("{}.{}", if int.is_empty() { "0" } else { int }, frac)
            .trim_end_matches('.')
            .parse()
            .unwrap_or(f64::INFINITY);
        total += value * scale;
        s = rest;
    }
    total <= 9.223_372_036_854_776e18
}

/// `netutils.ParseIPSloppy`: an IPv4 address whose parts may have leading zeros, or IPv6.
fn parse_ip_sloppy(text: &str) -> bool {
    let sloppy_v4 = |s: &str| {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() == 4
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && p.trim_start_matches('0').len() <= 3
                    && p.parse::<u32>().is_ok_and(|n| n <= 255)
            })
    };
    if sloppy_v4(text) {
        return true;
    }
    if let Some((head, tail)) = text.rsplit_once(':')
        && tail.contains('.')
    {
        // An IPv6 address ending in an IPv4 one, which may have leading zeros too.
        return sloppy_v4(tail)
            && format!("{head}:0.0.0.0")
                .parse::<std::net::Ipv6Addr>()
                .is_ok();
    }
    text.parse::<std::net::Ipv6Addr>().is_ok()
}

/// `netutils.ParseCIDRSloppy`: an address, `/`, and a prefix length within its bits.
fn is_cidr(text: &str) -> bool {
    let Some((ip, bits)) = text.split_once('/') else {
        return false;
    };
    let max = if ip.contains(':') { 128 } else { 32 };
    parse_ip_sloppy(ip)
        && !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|n| n <= max)
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:..`/`xx-xx-..`, or as `xxxx.xxxx.xxxx`.
fn is_mac(text: &str) -> bool {
    let hex =
        |group: &str, n: usize| group.len() == n && group.bytes().all(|b| b.is_ascii_hexdigit());
    for (separator, width, counts) in [
        (':', 2, [6, 8, 20]),
        ('-', 2, [6, 8, 20]),
        ('.', 4, [3, 4, 10]),
    ] {
        let groups: Vec<&str> = text.split(separator).collect();
        if groups.len() > 1 {
            return counts.contains(&groups.len()) && groups.iter().all(|g| hex(g, width));
        }
    }
    false
}

fn is_isbn10(text: &str) -> bool {
    let s: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'-')
        .collect();
    if s.len() != 10 || !s[..9].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let last = match s[9] {
        b'X' => 10,
        b if b.is_ascii_digit() => u32::from(b - b'0'),
        _ => return false,
    };
    let sum: u32 = s[..9]
        .iter()
        .enumerate()
        .map(|(i, b)| (i as u32 + 1) * u32::from(b - b'0'))
        .sum();
    (sum + 10 * last).is_multiple_of(11)
}

fn is_isbn13(text: &str) -> bool {
    let s: Vec<u8> = text
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && *b != b'-')
        .collect();
    if s.len() != 13 || !s.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = s[..12]
        .iter()
        .enumerate()
        .map(|(i, b)| [1, 3][i % 2] * u32::from(b - b'0'))
        .sum();
    u32::from(s[12] - b'0') == (10 - sum % 10) % 10
}

fn luhn(digits: &str) -> bool {
    let mut sum = 0;
    for (i, b) in digits.bytes().rev().enumerate() {
        let mut n = u32::from(b - b'0');
        if i % 2 == 1 {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
    }
    sum.is_multiple_of(10)
}

/// Go's `net/mail.ParseAddress` (and a non-empty address): `local@domain`, or a display name
/// and `<local@domain>`. The local part and the domain are dot-atoms (or a quoted string, a
/// domain literal); non-ASCII letters count as atom characters, as Go's parser lets them.
fn is_email(text: &str) -> bool {
    let text = text.trim_matches([' ', '\t']);
    let address = match text.strip_suffix('>') {
        Some(rest) => match rest.rfind('<') {
            Some(open) => {
                let name = rest[..open].trim_matches([' ', '\t']);
                let name_ok = name.is_empty()
                    || name.starts_with('"') && name.ends_with('"') && name.len() >= 2
                    || name
                        .split([' ', '\t'])
                        .filter(|w| !w.is_empty())
                        .all(|w| dot_atom(w) || w.split('.').all(|p| p.chars().all(atext)));
                if !name_ok {
                    return false;
                }
                &rest[open + 1..]
            }
            None => return false,
        },
        None => text,
    };
    let Some(at) = address.rfind('@') else {
        return false;
    };
    let (local, domain) = (&address[..at], &address[at + 1..]);
    let local_ok = dot_atom(local)
        || local.len() >= 2
            && local.starts_with('"')
            && local.ends_with('"')
            && !local[1..local.len() - 1].contains(['"', '\r', '\n']);
    let domain_ok = dot_atom(domain)
        || domain.starts_with('[')
            && domain.ends_with(']')
            && !domain[1..domain.len() - 1].contains(['[', ']', '\\']);
    local_ok && domain_ok
}

/// RFC 5322 `atext`, and any non-ASCII character.
fn atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

fn dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|part| !part.is_empty() && part.chars().all(atext))
}

/// Go's `url.ParseRequestURI`: `*`, an absolute path, or `scheme:` and then either an
/// opaque part or `//authority` with a valid host; no control characters, `%` escapes
/// well formed.
fn is_request_uri(text: &str) -> bool {
    if text.is_empty() || text.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if text == "*" {
        return true;
    }
    let escapes_ok = |s: &str| {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                    && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
                {
                    return false;
                }
                i += 3;
            } else {
                i += 1;
            }
        }
        true
    };
    // The scheme: a letter, then letters, digits, `+`, `-`, `.`, up to the first `:`.
    let mut rest = text;
    let mut scheme = "";
    for (i, c) in text.char_indices() {
        match c {
            'a'..='z' | 'A'..='Z' => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            ':' if i == 0 => return false, // missing protocol scheme
            ':' => {
                scheme = &text[..i];
                rest = &text[i + 1..];
                break;
            }
            _ => break,
        }
    }
    let rest = match rest.split_once('?') {
        Some((before, _)) => before,
        None => rest,
    };
    if !rest.starts_with('/') {
        // Opaque (`mailto:x`), or a relative reference a request may not use.
        return !scheme.is_empty();
    }
    let path = if !scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        let host = match authority.rfind('@') {
            Some(at) => {
                let userinfo = &authority[..at];
                if !userinfo
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
                    || !escapes_ok(userinfo)
                {
                    return false;
                }
                &authority[at + 1..]
            }
            None => authority,
        };
        if !valid_host(host) {
            return false;
        }
        &after[end..]
    } else {
        rest
    };
    escapes_ok(path)
}

/// `url.parseHost`: a bracketed IPv6 address and an optional `:port`, or a name of
/// characters a host may hold, with an optional `:port` of digits.
fn valid_host(host: &str) -> bool {
    let port_ok = |port: &str| port.is_empty() || port.bytes().all(|b| b.is_ascii_digit());
    if let Some(inner) = host.strip_prefix('[') {
        let Some(close) = inner.find(']') else {
            return false;
        };
        let after = &inner[close + 1..];
        return match after.strip_prefix(':') {
            Some(port) => port_ok(port),
            None => after.is_empty(),
        };
    }
    let (name, port) = match host.rfind(':') {
        Some(colon) => (&host[..colon], &host[colon + 1..]),
        None => (host, ""),
    };
    port_ok(port)
        && name.chars().all(|c| {
            !c.is_ascii() || c.is_ascii_alphanumeric() || "-_.~!$&'()*+,;=:[]<>\"%".contains(c)
        })
}

/// The `unrecognized format "<format>"` warnings of a CRD write (`WarningsOnCreate`, and on
/// update those not in the old CRD already): one per schema node with a format the server
/// does not know. Versions with the same schema are one schema to the real server (it keeps
/// it once, as `spec.validation`), so their formats are warned about once.
pub(crate) fn crd_warnings(
    old: Option<&serde_json::Value>,
    new: &serde_json::Value,
) -> Vec<String> {
    let before = old.map(crd_unrecognized).unwrap_or_default();
    crd_unrecognized(new)
        .into_iter()
        .filter(|format| !before.contains(format))
        .map(|format| format!("unrecognized format {format:?}"))
        .collect()
}

fn crd_unrecognized(crd: &serde_json::Value) -> Vec<String> {
    let schemas: Vec<&serde_json::Value> = crd
        .pointer("/spec/versions")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    let shared = schemas.windows(2).all(|pair| pair[0] == pair[1]);
    let mut found = Vec::new();
    for schema in schemas.iter().take(if shared { 1 } else { schemas.len() }) {
        walk_formats(schema, &mut found);
    }
    found
}

/// `SchemaHas`'s walk: the node, `items`, `allOf`, `anyOf`, `oneOf`, `not`, `properties`,
/// `additionalProperties`.
fn walk_formats(schema: &serde_json::Value, found: &mut Vec<String>) {
    let text = |key: &str| {
        schema
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    if unrecognized(text("type"), text("format")) {
        found.push(text("format").to_string());
    }
    match schema.get("items") {
        Some(serde_json::Value::Array(list)) => list.iter().for_each(|s| walk_formats(s, found)),
        Some(item) => walk_formats(item, found),
        None => {}
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = schema.get(key).and_then(serde_json::Value::as_array) {
            list.iter().for_each(|s| walk_formats(s, found));
        }
    }
    if let Some(not) = schema.get("not") {
        walk_formats(not, found);
    }
    if let Some(properties) = schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
    {
        properties.values().for_each(|s| walk_formats(s, found));
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        walk_formats(additional, found);
    }
}
