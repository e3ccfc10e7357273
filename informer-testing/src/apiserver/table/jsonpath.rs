//! Kubernetes' JSONPath (client-go's `util/jsonpath`), as the API server evaluates a custom
//! resource's `additionalPrinterColumns`: fields (`.a`, `['a']`, escaped dots), `*`,
//! recursive descent (`..a`), indexes and slices (`[0]`, `[-1]`, `[1:3]`, `[::2]`), unions
//! (`[0,2]`, `['a','b']`) and filters (`[?(@.type=="Ready")]`, `[?(@.x)]`, with `==`, `!=`,
//! `<`, `>`, `<=`, `>=` on strings, integers, floats and booleans as Go's templates compare
//! them). Missing keys are allowed (`AllowMissingKeys(true)`): they give no value, not an
//! error. Errors (an index out of range, a comparison of different types, a filter over a
//! map) end the evaluation, and the API server then leaves the cell empty.

use serde_json::Value;

use super::super::go_json::unstructured_type;

#[cfg(test)]
mod tests;

/// A parsed path: the steps applied in turn to the list of values so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `.name`: the value of a map's key; other values give nothing. An empty name (`.`)
    /// keeps the values as they are.
    Field(String),
    /// `.*` or `[*]` on a map: its values; `[*]` on a list is the slice `[:]`.
    Wildcard,
    /// `..`: every value below (and including) each value that has children.
    Recursive,
    /// `[start:end:step]`, or one index.
    Slice(SliceParams),
    /// `[a,b]`: each branch applied to the same values, the results one after the other.
    Union(Vec<JsonPath>),
    Filter(Box<Filter>),
    /// A literal in a filter operand.
    Literal(Literal),
}

/// client-go's `ParamsEntry` triple: a part absent from the text is unknown, except the end
/// of a single index, which is derived as `start + 1`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SliceParams {
    start: Option<i64>,
    end: Option<i64>,
    end_derived: bool,
    step: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: JsonPath,
    op: Op,
    right: JsonPath,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Exists,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl JsonPath {
    /// Parses a column's `jsonPath` (`.status.replicas`), with or without the braces of a
    /// template (`{.status.replicas}`).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let text = match text.strip_prefix('{') {
            Some(rest) => rest
                .strip_suffix('}')
                .ok_or_else(|| "unclosed action".to_string())?,
            None => text,
        };
        Parser { text, pos: 0 }.action()
    }

    /// The values the path finds in `root`, in client-go's order (a map's keys sorted).
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Result<Vec<&'a Value>, String> {
        self.eval(vec![root])
    }

    fn eval<'a>(&self, mut values: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
        for step in &self.steps {
            values = step.eval(values)?;
        }
        Ok(values)
    }
}

impl Step {
    fn eval<'a>(&self, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
        match self {
            // `.` alone (or before `[`) names the values themselves.
            Step::Field(name) if name.is_empty() => Ok(input),
            Step::Field(name) => Ok(input
                .into_iter()
                .filter_map(|v| v.as_object().and_then(|m| m.get(name)))
                .collect()),
            Step::Wildcard => Ok(input
                .into_iter()
                .flat_map(|v| -> Box<dyn Iterator<Item = &'a Value>> {
                    match v {
                        Value::Object(m) => Box::new(m.values()),
                        Value::Array(items) => Box::new(items.iter()),
                        _ => Box::new(std::iter::empty()),
                    }
                })
                .collect()),
            Step::Recursive => {
                let mut out = Vec::new();
                for value in input {
                    descend(value, &mut out);
                }
                Ok(out)
            }
            Step::Slice(params) => {
                let mut out = Vec::new();
                for value in input {
                    if value.is_null() {
                        continue;
                    }
                    let Value::Array(items) = value else {
                        return Err(format!(
                            "{} is not array or slice",
                            unstructured_type(value)
                        ));
                    };
                    out.extend(params.select(items)?);
                }
                Ok(out)
            }
            Step::Union(branches) => {
                let mut out = Vec::new();
                for branch in branches {
                    out.extend(branch.eval(input.clone())?);
                }
                Ok(out)
            }
            Step::Filter(filter) => filter.eval(input),
            // A literal is what it is, whatever the values before it (client-go's text,
            // int, float and bool nodes); it only stands alone in a filter's operand.
            Step::Literal(_) => Err("a literal is only allowed in a filter".into()),
        }
    }
}

/// client-go's `evalRecursive`: a value with children (a non-empty map, list or string)
/// comes first, then what is below it; strings are kept (a field of them gives nothing, an
/// index of them fails), scalars only show up as children.
fn descend<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
    match value {
        Value::Object(m) if !m.is_empty() => {
            out.push(value);
            for child in m.values() {
                descend(child, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            out.push(value);
            for child in items {
                descend(child, out);
            }
        }
        Value::String(s) if !s.is_empty() => out.push(value),
        _ => {}
    }
}

impl SliceParams {
    /// client-go's `evalArray` for one list.
    fn select<'a>(&self, items: &'a [Value]) -> Result<Vec<&'a Value>, String> {
        let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
        let mut start = self.start.unwrap_or(0);
        if start < 0 {
            start += len;
        }
        let mut end = self.end.unwrap_or(len);
        if end < 0 || (end == 0 && self.end_derived) {
            end += len;
        }
        if start == end {
            return Ok(Vec::new());
        }
        if start >= len || start < 0 {
            return Err(format!(
                "array index out of bounds: index {start}, length {len}"
            ));
        }
        if end > len || end < 0 {
            return Err(format!(
                "array index out of bounds: index {}, length {len}",
                end - 1
            ));
        }
        if start > end {
            return Err(format!(
                "starting index {start} is greater than ending index {end}"
            ));
        }
        let step = match self.step {
            Some(step) if step <= 0 => return Err("step must be > 0".into()),
            Some(step) => usize::try_from(step).unwrap_or(usize::MAX),
            None => 1,
        };
        // `start` and `end` are within `0..=len` here.
        let (start, end) = (start as usize, end as usize);
        Ok(items[start..end].iter().step_by(step).collect())
    }
}

impl Filter {
    /// client-go's `evalFilter`: the items of each list for which the comparison holds.
    fn eval<'a>(&self, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
        let mut out = Vec::new();
        for value in input {
            let Value::Array(items) = value else {
                return Err(format!(
                    "{} is not array or slice and cannot be filtered",
                    unstructured_type(value)
                ));
            };
            for item in items {
                let lefts = self.left.operand(item);
                if self.op == Op::Exists {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        out.push(item);
                    }
                    continue;
                }
                let left = match one(lefts?)? {
                    Some(left) => left,
                    None => continue,
                };
                let right = match one(self.right.operand(item)?)? {
                    Some(right) => right,
                    None => continue,
                };
                if compare(self.op, &left, &right)? {
                    out.push(item);
                }
            }
        }
        Ok(out)
    }
}

/// The only value of an operand, none, or client-go's error for several.
fn one(values: Vec<Operand>) -> Result<Option<Operand>, String> {
    if values.len() > 1 {
        return Err("can only compare one element at a time".into());
    }
    Ok(values.into_iter().next())
}

/// A filter operand's value: a JSON value found in the item, or a literal.
#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Json(Value),
    Literal(Literal),
}

impl JsonPath {
    /// An operand evaluated against one item: a literal alone is itself.
    fn operand(&self, item: &Value) -> Result<Vec<Operand>, String> {
        if let [Step::Literal(literal)] = self.steps.as_slice() {
            return Ok(vec![Operand::Literal(literal.clone())]);
        }
        Ok(self
            .eval(vec![item])?
            .into_iter()
            .map(|v| Operand::Json(v.clone()))
            .collect())
    }
}

/// The kinds Go's template comparisons tell apart (`basicKind`).
#[derive(Debug, PartialEq)]
enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(&'a str),
}

fn basic(operand: &Operand) -> Result<Basic<'_>, String> {
    const BAD_TYPE: &str = "invalid type for comparison";
    Ok(match operand {
        Operand::Literal(Literal::Str(s)) => Basic::Str(s),
        Operand::Literal(Literal::Int(i)) => Basic::Int(*i),
        Operand::Literal(Literal::Float(f)) => Basic::Float(*f),
        Operand::Literal(Literal::Bool(b)) => Basic::Bool(*b),
        // An unstructured object holds integers as int64 and other numbers as float64.
        Operand::Json(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Basic::Int(i),
            (None, Some(u)) => Basic::Uint(u),
            _ => Basic::Float(n.as_f64().ok_or(BAD_TYPE)?),
        },
        Operand::Json(Value::String(s)) => Basic::Str(s),
        Operand::Json(Value::Bool(b)) => Basic::Bool(*b),
        Operand::Json(_) => return Err(BAD_TYPE.into()),
    })
}

/// Go's template `eq` / `lt` (client-go's fork): values of one basic kind compare, integers
/// of either sign compare with each other, anything else is an error.
fn compare(op: Op, left: &Operand, right: &Operand) -> Result<bool, String> {
    use std::cmp::Ordering;
    const INCOMPATIBLE: &str = "incompatible types for comparison";
    let (l, r) = (basic(left)?, basic(right)?);
    let ordering = match (&l, &r) {
        (Basic::Bool(a), Basic::Bool(b)) => {
            return match op {
                Op::Eq => Ok(a == b),
                Op::Ne => Ok(a != b),
                _ => Err("invalid type for comparison".into()),
            };
        }
        (Basic::Int(a), Basic::Int(b)) => a.cmp(b),
        (Basic::Uint(a), Basic::Uint(b)) => a.cmp(b),
        (Basic::Int(a), Basic::Uint(b)) => i128::from(*a).cmp(&i128::from(*b)),
        (Basic::Uint(a), Basic::Int(b)) => i128::from(*a).cmp(&i128::from(*b)),
        (Basic::Float(a), Basic::Float(b)) => match a.partial_cmp(b) {
            Some(ordering) => ordering,
            // NaN: unequal to everything, and neither less nor greater.
            None => return Ok(op == Op::Ne),
        },
        (Basic::Str(a), Basic::Str(b)) => a.cmp(b),
        _ => return Err(INCOMPATIBLE.into()),
    };
    Ok(match op {
        Op::Eq => ordering == Ordering::Equal,
        Op::Ne => ordering != Ordering::Equal,
        Op::Lt => ordering == Ordering::Less,
        Op::Gt => ordering == Ordering::Greater,
        Op::Le => ordering != Ordering::Greater,
        Op::Ge => ordering != Ordering::Less,
        Op::Exists => unreachable!("an existence filter compares nothing"),
    })
}

/// client-go's `isTerminator`: what ends a field name.
fn is_terminator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
}

/// client-go's parser, for the inside of one action.
struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn action(mut self) -> Result<JsonPath, String> {
        let mut steps = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                // The current object (`@`) or the root (`$`) is where the path starts.
                c if c.is_whitespace() || c == '@' || c == '$' => self.pos += c.len_utf8(),
                '.' if self.rest().starts_with("..") => {
                    if steps.last() == Some(&Step::Recursive) {
                        return Err("invalid multiple recursive descent".into());
                    }
                    self.pos += 2;
                    steps.push(Step::Recursive);
                    // `..name` is a field; `..[0]` goes on as usual.
                    if self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        steps.push(self.field());
                    }
                }
                '.' => {
                    self.pos += 1;
                    steps.push(self.field());
                }
                '[' if self.rest().starts_with("[?(") => steps.push(self.filter()?),
                '[' => steps.push(self.bracket()?),
                '"' | '\'' => steps.push(Step::Literal(Literal::Str(self.quoted(c)?))),
                c if c == '+' || c == '-' || c.is_ascii_digit() => steps.push(self.number()?),
                c if c.is_alphanumeric() || c == '_' => steps.push(self.identifier()?),
                other => return Err(format!("unrecognized character in action: {other:?}")),
            }
        }
        Ok(JsonPath { steps })
    }

    /// A field name after `.`, up to an unescaped terminator; `\` escapes the next character.
    fn field(&mut self) -> Step {
        let mut name = String::new();
        let mut chars = self.rest().char_indices();
        let mut consumed = self.rest().len();
        while let Some((i, c)) = chars.next() {
            if c == '\\' {
                if let Some((_, escaped)) = chars.next() {
                    name.push(escaped);
                }
                continue;
            }
            if is_terminator(c) {
                consumed = i;
                break;
            }
            name.push(c);
        }
        self.pos += consumed;
        if name == "*" {
            Step::Wildcard
        } else {
            Step::Field(name)
        }
    }

    fn number(&mut self) -> Result<Step, String> {
        let rest = self.rest();
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            let sign = i == 0 && (c == '+' || c == '-');
            if !(sign || c == '.' || c.is_ascii_digit()) {
                break;
            }
            end = i + c.len_utf8();
        }
        let text = &rest[..end];
        self.pos += end;
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Step::Literal(Literal::Int(i)));
        }
        text.parse::<f64>()
            .map(|f| Step::Literal(Literal::Float(f)))
            .map_err(|_| format!("cannot parse number {text}"))
    }

    fn identifier(&mut self) -> Result<Step, String> {
        let rest = self.rest();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..end];
        self.pos += end;
        match word {
            "true" => Ok(Step::Literal(Literal::Bool(true))),
            "false" => Ok(Step::Literal(Literal::Bool(false))),
            other => Err(format!("unrecognized identifier {other}")),
        }
    }

    /// A quoted string, with Go's escapes (`\"`, `\\`, `\n`, `\t`, ...).
    fn quoted(&mut self, quote: char) -> Result<String, String> {
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                },
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                c => out.push(c),
            }
        }
        Err("unterminated quoted string".into())
    }

    /// `[...]` that is not a filter: a union, a quoted key, `*`, an index or a slice.
    fn bracket(&mut self) -> Result<Step, String> {
        let close = self
            .rest()
            .find(']')
            .ok_or_else(|| "unterminated array".to_string())?;
        let inside = &self.rest()[1..close];
        self.pos += close + 1;
        let inside = if inside == "*" { ":" } else { inside };
        let parts: Vec<&str> = inside.split(',').collect();
        if parts.len() > 1 {
            let branches = parts
                .iter()
                .map(|part| {
                    let part = part.trim_matches(' ');
                    let branch = format!("[{part}]");
                    Parser {
                        text: &branch,
                        pos: 0,
                    }
                    .action()
                })
                .collect::<Result<_, _>>()?;
            return Ok(Step::Union(branches));
        }
        // `['key']` is `.key`, parsed as such (so `['a.b']` is `.a.b`, as in client-go).
        if let Some(key) = inside
            .strip_prefix('\'')
            .and_then(|k| k.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            let dotted = format!(".{key}");
            let path = Parser {
                text: &dotted,
                pos: 0,
            }
            .action()?;
            return Ok(Step::Union(vec![path]));
        }
        slice(inside).ok_or_else(|| format!("invalid array index {inside}"))
    }

    /// `[?(left op right)]` or `[?(path)]`; quotes may hold `)`.
    fn filter(&mut self) -> Result<Step, String> {
        let body_start = self.pos + "[?(".len();
        let mut quote: Option<char> = None;
        let mut prev = '\0';
        let mut body_end = None;
        for (i, c) in self.text[body_start..].char_indices() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q && prev != '\\' => quote = None,
                (None, ')') => {
                    body_end = Some(body_start + i);
                    break;
                }
                _ => {}
            }
            prev = c;
        }
        let body_end = body_end.ok_or_else(|| "unterminated filter".to_string())?;
        if !self.text[body_end + 1..].starts_with(']') {
            return Err("unclosed array expect ]".into());
        }
        let body = &self.text[body_start..body_end];
        self.pos = body_end + 2;
        let parse = |text: &str| Parser { text, pos: 0 }.action();
        // client-go's `^([^!<>=]+)([!<>=]+)(.+?)$`.
        let Some(op_start) = body.find(['!', '<', '>', '=']) else {
            return Ok(Step::Filter(Box::new(Filter {
                left: parse(body)?,
                op: Op::Exists,
                right: JsonPath { steps: Vec::new() },
            })));
        };
        let op_len = body[op_start..]
            .find(|c: char| !matches!(c, '!' | '<' | '>' | '='))
            .unwrap_or(body.len() - op_start);
        let (left, op, right) = (
            &body[..op_start],
            &body[op_start..op_start + op_len],
            &body[op_start + op_len..],
        );
        if left.is_empty() || right.is_empty() {
            return Err(format!("invalid filter {body}"));
        }
        let op = match op {
            "==" => Op::Eq,
            "!=" => Op::Ne,
            "<" => Op::Lt,
            ">" => Op::Gt,
            "<=" => Op::Le,
            ">=" => Op::Ge,
            other => return Err(format!("unrecognized filter operator {other}")),
        };
        Ok(Step::Filter(Box::new(Filter {
            left: parse(left)?,
            op,
            right: parse(right)?,
        })))
    }
}

/// client-go's `^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$` and its parameters.
fn slice(text: &str) -> Option<Step> {
    let mut parts = text.splitn(3, ':');
    let number = |s: &str| -> Option<Option<i64>> {
        let digits = s.strip_prefix('-').unwrap_or(s);
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        if digits.is_empty() {
            return if s.is_empty() { Some(None) } else { None };
        }
        s.parse().ok().map(Some)
    };
    let start = number(parts.next()?)?;
    let (end, end_derived) = match parts.next() {
        Some(end) => (number(end)?, false),
        None => (Some(start.unwrap_or(0) + 1), true),
    };
    let step = match parts.next() {
        Some(step) => number(step)?,
        None => None,
    };
    Some(Step::Slice(SliceParams {
        start,
        end,
        end_derived,
        step,
    }))
}
