//! Label and field selectors, parsed and matched as the API server does.
//!
//! Label selectors are parsed as `k8s.io/apimachinery/pkg/labels` parses them (its lexer and
//! parser ported, so that a malformed selector is refused with its words): equality `a=b`,
//! `a==b`, `a!=b`; set-based `a in (x,y)`, `a notin (x)`; existence `a`, `!a`; and the
//! numeric comparisons `a>1`, `a<1` (the label's value read as an integer). Keys are
//! qualified names, values label values, as `NewRequirement` validates them. Field
//! selectors support `=`, `==` and `!=` with `\`-escaping of `,`, `=` and `\` in values.

use serde_json::Value;

use super::status::go_quote;
use super::validation::{label_value_messages, qualified_name_messages};

/// A parsed and validated label selector; the empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Exists,
    DoesNotExist,
    Equals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    End,
    Identifier,
    DoesNotExist,
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    GreaterThan,
    LessThan,
    Open,
    Close,
    Comma,
}

fn keyword(text: &str) -> Option<Token> {
    Some(match text {
        ")" => Token::Close,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::Open,
        _ => return None,
    })
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// The lexer's tokens with their literals, ending with `End`.
fn lex(input: &str) -> Vec<(Token, String)> {
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
        }
        if i >= bytes.len() {
            tokens.push((Token::End, String::new()));
            return tokens;
        }
        let start = i;
        if is_special(bytes[i]) {
            // The longest run of symbols that is a token (`!=`, `==`), one symbol at least.
            let mut last = None;
            while i < bytes.len() && is_special(bytes[i]) {
                match keyword(&input[start..=i]) {
                    Some(token) => last = Some((token, i + 1)),
                    None if last.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            let (token, end) = last.unwrap_or((Token::Identifier, i));
            i = end;
            tokens.push((token, input[start..end].to_string()));
        } else {
            while i < bytes.len()
                && !is_special(bytes[i])
                && !matches!(bytes[i], b' ' | b'\t' | b'\r' | b'\n')
            {
                i += 1;
            }
            let text = &input[start..i];
            let token = keyword(text).unwrap_or(Token::Identifier);
            tokens.push((token, text.to_string()));
        }
    }
}

struct Parser {
    tokens: Vec<(Token, String)>,
    position: usize,
}

/// Where a token is read: in values, `in` and `notin` are identifiers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

impl Parser {
    fn peek(&self, context: Context) -> (Token, String) {
        let (token, literal) = self.tokens[self.position.min(self.tokens.len() - 1)].clone();
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            token => (token, literal),
        }
    }

    fn next(&mut self, context: Context) -> (Token, String) {
        let item = self.peek(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.peek(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.next(Context::Values);
                    match token {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (after, literal) = self.peek(Context::Values);
                            if !matches!(after, Token::Identifier | Token::DoesNotExist) {
                                return Err(format!(
                                    "found '{literal}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_inferred_operator()?;
        let (operator, values) = match operator {
            Some(operator) => (operator, Vec::new()),
            None => {
                let operator = self.operator()?;
                let values = match operator {
                    Operator::In | Operator::NotIn => self.values()?,
                    _ => self.exact_value()?,
                };
                (operator, values)
            }
        };
        new_requirement(key, operator, values)
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let (mut token, mut literal) = self.next(Context::Values);
        let mut operator = None;
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.next(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let problems = qualified_name_messages(&literal);
        if !problems.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: {}: {}",
                go_quote(&literal),
                problems.join("; ")
            ));
        }
        let (after, _) = self.peek(Context::Values);
        if operator.is_none() && matches!(after, Token::End | Token::Comma) {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.next(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    /// `(a,b)`: a set (sorted, deduplicated, `""` for empty members).
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.next(Context::Values);
        if token != Token::Open {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.peek(Context::Values);
        let mut set = match token {
            Token::Identifier | Token::Comma => {
                let set = self.identifiers()?;
                if self.next(Context::Values).0 != Token::Close {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                set
            }
            Token::Close => {
                self.next(Context::Values);
                vec![String::new()]
            }
            _ => {
                return Err(format!(
                    "found '{literal}', expected: ',', ')' or identifier"
                ));
            }
        };
        set.sort();
        set.dedup();
        Ok(set)
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut set: Vec<String> = Vec::new();
        loop {
            let (token, literal) = self.next(Context::Values);
            match token {
                Token::Identifier => {
                    set.push(literal);
                    let (after, literal) = self.peek(Context::Values);
                    match after {
                        Token::Comma => continue,
                        Token::Close => return Ok(set),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.push(String::new());
                    }
                    match self.peek(Context::Values).0 {
                        Token::Close => {
                            set.push(String::new());
                            return Ok(set);
                        }
                        Token::Comma => {
                            self.next(Context::Values);
                            set.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.peek(Context::Values);
        if matches!(token, Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.next(Context::Values);
        if token == Token::Identifier {
            Ok(vec![literal])
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// `NewRequirement`'s checks of the values, its errors aggregated as Go aggregates them.
fn new_requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errors: Vec<String> = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(format!(
                    "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                    go_quote(value)
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = label_value_messages(value);
        if !problems.is_empty() {
            errors.push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(value),
                problems.join("; ")
            ));
        }
    }
    errors.dedup();
    match errors.as_slice() {
        [] => Ok(Requirement {
            key,
            operator,
            values,
        }),
        [one] => Err(one.clone()),
        many => Err(format!("[{}]", many.join(", "))),
    }
}

impl LabelSelector {
    /// Parses a `labelSelector` query parameter and validates its keys and values.
    pub(crate) fn parse(input: &str) -> Result<Self, String> {
        let mut parser = Parser {
            tokens: lex(input),
            position: 0,
        };
        Ok(Self {
            requirements: parser.parse()?,
        })
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

    /// Whether a label set, given as a lookup function, matches (`Requirement.Matches`:
    /// `>` and `<` need the label and both sides integers).
    pub(crate) fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let value = label(&r.key);
            let contains = |v: &str| r.values.iter().any(|x| x == v);
            match r.operator {
                Operator::Exists => value.is_some(),
                Operator::DoesNotExist => value.is_none(),
                Operator::Equals | Operator::In => value.is_some_and(contains),
                Operator::NotEquals | Operator::NotIn => !value.is_some_and(contains),
                Operator::GreaterThan | Operator::LessThan => {
                    let (Some(Ok(have)), Some(Ok(want))) = (
                        value.map(str::parse::<i64>),
                        r.values.first().map(|v| v.parse::<i64>()),
                    ) else {
                        return false;
                    };
                    if r.operator == Operator::GreaterThan {
                        have > want
                    } else {
                        have < want
                    }
                }
            }
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
