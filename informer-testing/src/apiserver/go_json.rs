//! The syntax errors of Go's `encoding/json`, as kube-apiserver words them: its scanner
//! (`encoding/json/scanner.go`), which `json.Unmarshal` runs over a whole document before
//! decoding it, so the first syntax error is what a client sees (`invalid character 'o' in
//! literal null (expecting 'u')`, `unexpected end of JSON input`).

/// Where the scanner is: what the next byte may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// In a `\u` escape, with this many hex digits still to come.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// In a literal (`true`, `false`, `null`), at this byte of it.
    Literal(&'static [u8], usize),
}

/// What the scanner is inside of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's JSON whitespace.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// A byte as Go's scanner quotes it in an error (`quoteChar`): `'x'`, `'\''`, `'"'`,
/// `'\n'`, `'\x81'`.
pub(crate) fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => r#"'"'"#.to_string(),
        b'\n' => r"'\n'".to_string(),
        b'\r' => r"'\r'".to_string(),
        b'\t' => r"'\t'".to_string(),
        0x07 => r"'\a'".to_string(),
        0x08 => r"'\b'".to_string(),
        0x0c => r"'\f'".to_string(),
        0x0b => r"'\v'".to_string(),
        b'\\' => r"'\\'".to_string(),
        0x20..=0x7e => format!("'{}'", c as char),
        _ => format!(r"'\x{c:02x}'"),
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

/// The error Go's `json.Unmarshal` reports for a document that is not valid JSON, or
/// `None` when it is.
pub(crate) fn syntax_error(data: &[u8]) -> Option<String> {
    let mut step = Step::BeginValue;
    let mut stack: Vec<Parse> = Vec::new();
    for &c in data {
        step = match next(step, &mut stack, c) {
            Ok(step) => step,
            Err(message) => return Some(message),
        };
    }
    // The end of the input (`scanner.eof`): Go feeds the scanner a space, which ends a
    // number or fails an unfinished literal; then only a complete value may end there.
    match next(step, &mut stack, b' ') {
        Err(message) => Some(message),
        Ok(Step::EndTop) => None,
        Ok(_) => Some("unexpected end of JSON input".to_string()),
    }
}

/// One byte of the scanner's state machine.
fn next(step: Step, stack: &mut Vec<Parse>, c: u8) -> Result<Step, String> {
    match step {
        Step::BeginValueOrEmpty => {
            if is_space(c) {
                Ok(step)
            } else if c == b']' {
                end_value(stack, c)
            } else {
                begin_value(stack, c)
            }
        }
        Step::BeginValue => begin_value(stack, c),
        Step::BeginStringOrEmpty => {
            if is_space(c) {
                Ok(step)
            } else if c == b'}' {
                stack.pop();
                Ok(Step::EndValue)
            } else {
                begin_string(c)
            }
        }
        Step::BeginString => begin_string(c),
        Step::EndValue => end_value(stack, c),
        Step::EndTop => {
            if is_space(c) {
                Ok(step)
            } else {
                Err(invalid(c, "after top-level value"))
            }
        }
        Step::InString => match c {
            b'"' => Ok(Step::EndValue),
            b'\\' => Ok(Step::InStringEsc),
            c if c < 0x20 => Err(invalid(c, "in string literal")),
            _ => Ok(step),
        },
        Step::InStringEsc => match c {
            b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Ok(Step::InString),
            b'u' => Ok(Step::InStringEscU(4)),
            _ => Err(invalid(c, "in string escape code")),
        },
        Step::InStringEscU(left) => {
            if c.is_ascii_hexdigit() {
                Ok(if left == 1 {
                    Step::InString
                } else {
                    Step::InStringEscU(left - 1)
                })
            } else {
                Err(invalid(c, r"in \u hexadecimal character escape"))
            }
        }
        Step::Neg => match c {
            b'0' => Ok(Step::Zero),
            b'1'..=b'9' => Ok(Step::One),
            _ => Err(invalid(c, "in numeric literal")),
        },
        Step::One if c.is_ascii_digit() => Ok(Step::One),
        Step::One | Step::Zero => match c {
            b'.' => Ok(Step::Dot),
            b'e' | b'E' => Ok(Step::E),
            _ => end_value(stack, c),
        },
        Step::Dot => {
            if c.is_ascii_digit() {
                Ok(Step::Dot0)
            } else {
                Err(invalid(c, "after decimal point in numeric literal"))
            }
        }
        Step::Dot0 => match c {
            c if c.is_ascii_digit() => Ok(Step::Dot0),
            b'e' | b'E' => Ok(Step::E),
            _ => end_value(stack, c),
        },
        Step::E if c == b'+' || c == b'-' => Ok(Step::ESign),
        Step::E | Step::ESign => {
            if c.is_ascii_digit() {
                Ok(Step::E0)
            } else {
                Err(invalid(c, "in exponent of numeric literal"))
            }
        }
        Step::E0 if c.is_ascii_digit() => Ok(Step::E0),
        Step::E0 => end_value(stack, c),
        Step::Literal(word, at) => {
            if c != word[at] {
                let word_text = String::from_utf8_lossy(word);
                return Err(invalid(
                    c,
                    &format!(
                        "in literal {word_text} (expecting {})",
                        quote_char(word[at])
                    ),
                ));
            }
            Ok(if at + 1 == word.len() {
                Step::EndValue
            } else {
                Step::Literal(word, at + 1)
            })
        }
    }
}

fn begin_value(stack: &mut Vec<Parse>, c: u8) -> Result<Step, String> {
    match c {
        c if is_space(c) => Ok(Step::BeginValue),
        b'{' => {
            stack.push(Parse::ObjectKey);
            Ok(Step::BeginStringOrEmpty)
        }
        b'[' => {
            stack.push(Parse::ArrayValue);
            Ok(Step::BeginValueOrEmpty)
        }
        b'"' => Ok(Step::InString),
        b'-' => Ok(Step::Neg),
        b'0' => Ok(Step::Zero),
        b'1'..=b'9' => Ok(Step::One),
        b't' => Ok(Step::Literal(b"true", 1)),
        b'f' => Ok(Step::Literal(b"false", 1)),
        b'n' => Ok(Step::Literal(b"null", 1)),
        _ => Err(invalid(c, "looking for beginning of value")),
    }
}

fn begin_string(c: u8) -> Result<Step, String> {
    match c {
        c if is_space(c) => Ok(Step::BeginString),
        b'"' => Ok(Step::InString),
        _ => Err(invalid(c, "looking for beginning of object key string")),
    }
}

fn end_value(stack: &mut Vec<Parse>, c: u8) -> Result<Step, String> {
    let Some(top) = stack.last_mut() else {
        return if is_space(c) {
            Ok(Step::EndTop)
        } else {
            Err(invalid(c, "after top-level value"))
        };
    };
    if is_space(c) {
        return Ok(Step::EndValue);
    }
    match (*top, c) {
        (Parse::ObjectKey, b':') => {
            *top = Parse::ObjectValue;
            Ok(Step::BeginValue)
        }
        (Parse::ObjectKey, _) => Err(invalid(c, "after object key")),
        (Parse::ObjectValue, b',') => {
            *top = Parse::ObjectKey;
            Ok(Step::BeginString)
        }
        (Parse::ObjectValue, b'}') | (Parse::ArrayValue, b']') => {
            stack.pop();
            Ok(Step::EndValue)
        }
        (Parse::ObjectValue, _) => Err(invalid(c, "after object key:value pair")),
        (Parse::ArrayValue, b',') => Ok(Step::BeginValue),
        (Parse::ArrayValue, _) => Err(invalid(c, "after array element")),
    }
}

/// The start of a request body as kube-apiserver quotes it in a decoding error
/// (`summarizeData`: at most 30 bytes, then ` ...`; as text if it starts an object, in hex
/// otherwise).
pub(crate) fn summarize(data: &[u8]) -> String {
    let (start, more) = match data.len() > 30 {
        true => (&data[..30], " ..."),
        false => (data, ""),
    };
    match data {
        [] => "<empty>".to_string(),
        [0x1f, 0x8b, ..] => "<gzipped>".to_string(),
        [b'{', ..] => format!("{}{more}", String::from_utf8_lossy(start)),
        _ => {
            let hex: String = start.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// Why Go's decoder finds no `apiVersion` and `kind` in JSON that is not an object (the
/// `TypeMeta` it reads first is a struct).
pub(crate) fn no_type_meta(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let found = match value {
        Value::Null => return "Object 'Kind' is missing in 'null'".to_string(),
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    format!(
        "couldn't get version/kind; json parse error: json: cannot unmarshal {found} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}"
    )
}

/// A JSON string as Go's `encoding/json` writes it: HTML characters (`<`, `>`, `&`) and the
/// line separators U+2028 and U+2029 escaped.
pub(crate) fn go_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in serde_json::Value::String(text.to_string())
        .to_string()
        .chars()
    {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A float64 as Go's `encoding/json` writes it: the shortest decimal that reads back, in
/// exponent form below 1e-6 and from 1e21 (`0.5`, `5`, `1e-7`, `1e+21`).
pub(crate) fn float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                format!("{mantissa}e+{exponent}")
            }
            _ => text,
        }
    } else {
        format!("{f}")
    }
}

/// The Go type of a JSON value decoded into an `Unstructured` (`int64` for an integer,
/// `float64` for any other number), as `%T` prints it and client-go's errors name it.
pub(crate) fn unstructured_type(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `json.Marshal` of a decoded JSON value (an `interface{}`): maps with their keys sorted,
/// numbers as the float64s they decode to, strings with Go's escapes.
pub(crate) fn marshal(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(text) => go_string(text),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), float),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(marshal).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => map_with(map, marshal),
        other => other.to_string(),
    }
}

/// A JSON object as `json.Marshal` writes a Go map: keys sorted, each value as `item` writes
/// it.
pub(crate) fn map_with(
    map: &serde_json::Map<String, serde_json::Value>,
    item: impl Fn(&serde_json::Value) -> String,
) -> String {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let fields: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{}:{}", go_string(k), item(&map[k])))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A valid JSON document as Go's `json.MarshalIndent(v, "", "  ")` writes it (the
/// `json.Indent` pass over the compact encoding): a newline and two spaces a level after each
/// `{`, `[` and `,`, a space after each `:`, empty objects and arrays kept as `{}` and `[]`,
/// strings untouched, no whitespace at either end.
pub(crate) fn indent(compact: &[u8]) -> Vec<u8> {
    fn newline(out: &mut Vec<u8>, depth: usize) {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    }
    let mut out = Vec::with_capacity(compact.len() * 2);
    let (mut in_string, mut escaped, mut open, mut depth) = (false, false, false, 0usize);
    for &c in compact {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        if is_space(c) {
            continue;
        }
        if open && c != b'}' && c != b']' {
            open = false;
            depth += 1;
            newline(&mut out, depth);
        }
        match c {
            b'{' | b'[' => {
                open = true;
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            b'}' | b']' => {
                if open {
                    open = false;
                } else {
                    depth = depth.saturating_sub(1);
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            b'"' => {
                in_string = true;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
