//! Label and field selectors, parsed and matched as the API server does.
//!
//! Label selectors are parsed by [`informer_core::selector::parse_label_selector`], the
//! workspace's one parser (equality `a=b`, `a==b`, `a!=b`; set-based `a in (x,y)`,
//! `a notin (x)`; existence `a`, `!a`). On top of it the server checks what the real one
//! validates: label keys (an optional DNS-subdomain prefix and a name part of at most 63
//! alphanumerics, `-`, `_`, `.`) and values. Field selectors support `=`, `==` and `!=`
//! with `\`-escaping of `,`, `=` and `\` in values.

use informer_core::selector::parse_label_selector;
use kube::core::Expression;
use serde_json::Value;

use super::validation::{is_dns_subdomain, is_qualified_name_part};

/// A parsed and validated label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Expression>,
}

fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Err(format!(
            "invalid label key \"{key}\": prefix must be a DNS subdomain"
        ));
    }
    if !is_qualified_name_part(name) {
        return Err(format!(
            "invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn validate_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_qualified_name_part(value) {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: \"{value}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn validate(expression: &Expression) -> Result<(), String> {
    let (key, values): (&str, Vec<&str>) = match expression {
        Expression::In(key, set) | Expression::NotIn(key, set) => {
            (key, set.iter().map(String::as_str).collect())
        }
        Expression::Equal(key, value) | Expression::NotEqual(key, value) => {
            (key, vec![value.as_str()])
        }
        Expression::Exists(key) | Expression::DoesNotExist(key) => (key, Vec::new()),
    };
    validate_label_key(key)?;
    values.into_iter().try_for_each(validate_label_value)
}

impl LabelSelector {
    /// Parses a `labelSelector` query parameter and validates its keys and values.
    pub(crate) fn parse(input: &str) -> Result<Self, String> {
        let selector =
            parse_label_selector(input).map_err(|e| format!("unable to parse requirement: {e}"))?;
        let requirements: Vec<Expression> = selector.into_iter().collect();
        for requirement in &requirements {
            validate(requirement).map_err(|e| format!("unable to parse requirement: {e}"))?;
        }
        Ok(Self { requirements })
    }

    /// Whether the selector has no requirements.
    pub(crate) fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object (with a `metadata.labels` map) matches.
    pub(crate) fn matches_object(&self, object: &Value) -> bool {
        if self.requirements.is_empty() {
            return true;
        }
        let labels = object.pointer("/metadata/labels");
        self.matches(|key| labels.and_then(|l| l.get(key)).and_then(Value::as_str))
    }

    /// Whether a label set, given as a lookup function, matches (the semantics of
    /// `kube::core::SelectorExt::matches`, without building a map per object).
    pub(crate) fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Expression::Exists(key) => label(key).is_some(),
                Expression::DoesNotExist(key) => label(key).is_none(),
                Expression::Equal(key, v) => label(key) == Some(v.as_str()),
                Expression::NotEqual(key, v) => label(key) != Some(v.as_str()),
                Expression::In(key, set) => label(key).is_some_and(|v| set.contains(v)),
                Expression::NotIn(key, set) => !label(key).is_some_and(|v| set.contains(v)),
            })
    }
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector {
    terms: Vec<FieldTerm>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

/// Splits on an unescaped `sep`, keeping escapes in place.
fn split_unescaped(input: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&input[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&input[start..]);
    parts
}

fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: unterminated escape".to_string()),
            }
        } else if c == ',' || c == '=' {
            return Err(format!("invalid field selector: unescaped '{c}' in value"));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses a `fieldSelector` query parameter.
    pub(crate) fn parse(input: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self { terms });
        }
        for part in split_unescaped(input, ',') {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, false)
            } else {
                return Err(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                ));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(format!("invalid selector: '{input}'; empty field name"));
            }
            terms.push(FieldTerm {
                field: field.to_string(),
                value: unescape(value)?,
                negated,
            });
        }
        Ok(Self { terms })
    }

    /// Whether the selector has no terms.
    pub(crate) fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The field names the selector refers to.
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Whether an object matches, given a function that reads a field's string value.
    pub(crate) fn matches(&self, field: impl Fn(&str) -> String) -> bool {
        self.terms
            .iter()
            .all(|t| (field(&t.field) == t.value) != t.negated)
    }
}

#[cfg(test)]
mod tests;
